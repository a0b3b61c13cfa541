//! The order test's own calibration (docs/statistics.md, Order within a round): how often
//! a session whose trials do not depend on their place in their round is said to (the
//! goal: at most 1 % at every size, also when the session drifts in time), and how often
//! an effect of the place is found.
//!
//! A simulated session is the drift test's ([`super::drift`]): `cells` cells in rounds,
//! each round in a fresh random order; its trials go through
//! [`stats::drift::test_places`] by place, as `margin report` takes them, and the
//! session is flagged at p < 1 %, the level of a session of one metric.

use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::drift::{Change, RatesRow, placed_session};
use super::scenario::Shape;
use super::simulate::experiment_seed;
use super::{Goal, Options, Rate};
use crate::analyze::drift::FALSE_ALARMS;
use stats::drift::{Point, test_places};

/// The sessions' sizes: (cells, rounds). One cell has one place: nothing to test.
pub const SIZES: [(usize, usize); 4] = [(4, 5), (4, 15), (20, 10), (20, 300)];
/// The sizes of the power table.
pub const POWER_SIZES: [(usize, usize); 3] = [(4, 5), (4, 15), (20, 10)];

/// How a trial's value depends on its place in its round, in sds of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OrderEffect {
    /// The first trial of each round up by `sd` (a cache the round's start leaves cold).
    First { sd: f64 },
    /// Up by `sd` from the first place to the last, linearly.
    Places { sd: f64 },
}

impl OrderEffect {
    /// The shift of a trial at `place` (from 1) of a round of `cells`.
    fn at(self, place: usize, cells: usize) -> f64 {
        match self {
            OrderEffect::First { sd } => {
                if place == 1 {
                    sd
                } else {
                    0.0
                }
            }
            OrderEffect::Places { sd } => sd * (place - 1) as f64 / (cells - 1).max(1) as f64,
        }
    }
}

pub const EFFECTS: [OrderEffect; 4] = [
    OrderEffect::First { sd: 1.0 },
    OrderEffect::First { sd: 2.0 },
    OrderEffect::Places { sd: 1.0 },
    OrderEffect::Places { sd: 2.0 },
];

/// What the suite measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OrderResult {
    pub false_alarms: Vec<RatesRow>,
    pub power: Vec<RatesRow>,
    pub misses: Vec<String>,
}

/// How many of `options.experiments` sessions made by `make` the test flags.
fn count(name: &str, options: &Options, make: impl Fn(&mut Pcg64) -> Vec<(u32, Point)> + Sync) -> Rate {
    use rayon::prelude::*;
    let hits: u64 = (0..options.experiments)
        .into_par_iter()
        .map(|i| {
            let seed = experiment_seed(options.seed, name, 0, i);
            let mut rng = Pcg64::seed_from_u64(seed);
            let mut trials = make(&mut rng);
            // by place, each place's trials in the order they ran
            trials.sort_by_key(|(place, _)| *place);
            let (places, points): (Vec<u32>, Vec<Point>) = trials.into_iter().unzip();
            u64::from(test_places(&points, &places, seed ^ 0x0de7).is_some_and(|d| d.p_value < FALSE_ALARMS))
        })
        .sum();
    Rate::new(hits, options.experiments, None)
}

/// Runs both tables.
pub fn run(options: &Options) -> OrderResult {
    let nulls: [(&str, Shape, Option<Change>); 5] = [
        ("normal", Shape::Normal, None),
        ("log-normal", Shape::LogNormal, None),
        ("t(3)", Shape::StudentT3, None),
        ("quantised", Shape::Quantised, None),
        ("normal, a 2 sd trend in time", Shape::Normal, Some(Change::Trend { sd: 2.0 })),
    ];
    let mut misses = Vec::new();
    let mut false_alarms = Vec::new();
    for (label, shape, change) in nulls {
        let mut rates = Vec::new();
        for (cells, rounds) in SIZES {
            let name = format!("order-null-{label}-{cells}x{rounds}");
            let r =
                count(&name, options, |rng| placed_session(cells, rounds, shape, change, |_, _| 0.0, rng));
            let r = Rate::new(r.hits, r.of, Some(Goal::AtMost { alpha: FALSE_ALARMS }));
            if r.misses {
                misses.push(format!("{label} at {cells} cells × {rounds}"));
            }
            rates.push((cells, rounds, r));
        }
        false_alarms.push(RatesRow { what: label.to_owned(), rates });
    }
    let mut power = Vec::new();
    for effect in EFFECTS {
        let what = match effect {
            OrderEffect::First { sd } => format!("first of each round {sd} sd higher"),
            OrderEffect::Places { sd } => format!("{sd} sd from the first place to the last"),
        };
        let rates = POWER_SIZES
            .iter()
            .map(|&(cells, rounds)| {
                let name = format!("order-{what}-{cells}x{rounds}");
                let r = count(&name, options, |rng| {
                    placed_session(
                        cells,
                        rounds,
                        Shape::Normal,
                        None,
                        |place, cells| effect.at(place, cells),
                        rng,
                    )
                });
                (cells, rounds, r)
            })
            .collect();
        power.push(RatesRow { what, rates });
    }
    OrderResult { false_alarms, power, misses }
}

/// The two tables, in Markdown.
pub fn tables(result: &OrderResult, experiments: u64) -> String {
    let mut out = format!(
        "\nOrder within a round: {experiments} simulated sessions per row and size (cells × rounds, \
         interleaved), each tested as margin report tests one metric's session.\nFalse alarms (%, ± one SE) \
         on sessions whose trials do not depend on their place; ✗ above {} % + 3 SE.\n\n",
        FALSE_ALARMS * 100.0
    );
    out.push_str(&super::drift::markdown(&result.false_alarms, &SIZES, "shape"));
    out.push_str("\nPower (%, ± one SE), normal trials of CV 5 %:\n\n");
    out.push_str(&super::drift::markdown(&result.power, &POWER_SIZES, "effect"));
    if !result.misses.is_empty() {
        out.push_str(&format!("\nMissed: {}\n", result.misses.join("; ")));
    }
    out
}
