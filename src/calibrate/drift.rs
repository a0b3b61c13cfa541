//! The drift test's own calibration (docs/statistics.md, Drift within a session): how
//! often a stationary session is said to drift (the goal: at most 1 % at every size), and
//! how often a step or a trend is found.
//!
//! A simulated session runs `cells` cells in rounds, each round in a fresh random order
//! (margin's interleaved order), each cell at its own scale; its trials go through
//! [`stats::drift::test`] in the order they ran, and the session is flagged at
//! p < 1 %, the level `margin report` uses for a session of one metric.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{draw, experiment_seed};
use super::{Goal, Options, Rate};
use crate::analyze::drift::FALSE_ALARMS;
use stats::drift::{Point, test};

/// The sessions' sizes: (cells, rounds).
pub const SIZES: [(usize, usize); 5] = [(1, 10), (4, 5), (4, 15), (20, 10), (20, 300)];
/// The sizes of the power table.
pub const POWER_SIZES: [(usize, usize); 3] = [(4, 5), (4, 15), (20, 10)];

/// How the session's values change with time, in sds of a trial.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// Up by `sd` from the middle trial on.
    Step { sd: f64 },
    /// Up by `sd` over the session, linearly.
    Trend { sd: f64 },
}

pub const CHANGES: [Change; 5] = [
    Change::Step { sd: 0.5 },
    Change::Step { sd: 1.0 },
    Change::Step { sd: 2.0 },
    Change::Trend { sd: 1.0 },
    Change::Trend { sd: 2.0 },
];

pub(super) const CV: f64 = 0.05;

/// What the suite measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftResult {
    pub false_alarms: Vec<RatesRow>,
    pub power: Vec<RatesRow>,
    pub misses: Vec<String>,
}

/// One row of a table of rates: what was simulated, and its rate at each size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatesRow {
    pub what: String,
    /// (cells, rounds, rate)
    pub rates: Vec<(usize, usize, Rate)>,
}

/// One session's trials in the order they ran.
fn session(cells: usize, rounds: usize, shape: Shape, change: Option<Change>, rng: &mut Pcg64) -> Vec<Point> {
    placed_session(cells, rounds, shape, change, |_, _| 0.0, rng).into_iter().map(|(_, p)| p).collect()
}

/// One session's trials in the order they ran, each with its place in its round (from
/// 1), its values shifted by `change` in time and by `by_place(place, cells)` sds.
pub(super) fn placed_session(
    cells: usize,
    rounds: usize,
    shape: Shape,
    change: Option<Change>,
    by_place: impl Fn(usize, usize) -> f64,
    rng: &mut Pcg64,
) -> Vec<(u32, Point)> {
    let n = cells * rounds;
    let mut out = Vec::with_capacity(n);
    let mut order: Vec<usize> = (0..cells).collect();
    for _ in 0..rounds {
        order.shuffle(rng);
        for (place, &cell) in order.iter().enumerate() {
            let at = out.len();
            let mean = 100.0 * (1.0 + cell as f64);
            let sd = CV * mean;
            let shift = match change {
                None => 0.0,
                Some(Change::Step { sd: d }) if at >= n / 2 => d,
                Some(Change::Step { .. }) => 0.0,
                Some(Change::Trend { sd: d }) => d * at as f64 / (n - 1).max(1) as f64,
            } + by_place(place + 1, cells);
            out.push((place as u32 + 1, Point { cell, value: draw(shape, mean + shift * sd, sd, rng) }));
        }
    }
    out
}

fn count(name: &str, options: &Options, make: impl Fn(&mut Pcg64) -> Vec<Point> + Sync) -> Rate {
    use rayon::prelude::*;
    let hits: u64 = (0..options.experiments)
        .into_par_iter()
        .map(|i| {
            let seed = experiment_seed(options.seed, name, 0, i);
            let mut rng = Pcg64::seed_from_u64(seed);
            let points = make(&mut rng);
            u64::from(test(&points, seed ^ 0x5eed).is_some_and(|d| d.p_value < FALSE_ALARMS))
        })
        .sum();
    Rate::new(hits, options.experiments, None)
}

/// Runs both tables.
pub fn run(options: &Options) -> DriftResult {
    let shapes = [
        ("normal", Shape::Normal),
        ("log-normal", Shape::LogNormal),
        ("t(3)", Shape::StudentT3),
        ("quantised", Shape::Quantised),
    ];
    let mut misses = Vec::new();
    let mut false_alarms = Vec::new();
    for (label, shape) in shapes {
        let mut rates = Vec::new();
        for (cells, rounds) in SIZES {
            let name = format!("drift-null-{label}-{cells}x{rounds}");
            let r = count(&name, options, |rng| session(cells, rounds, shape, None, rng));
            let r = Rate::new(r.hits, r.of, Some(Goal::AtMost { alpha: FALSE_ALARMS }));
            if r.misses {
                misses.push(format!("{label} at {cells} cells × {rounds}"));
            }
            rates.push((cells, rounds, r));
        }
        false_alarms.push(RatesRow { what: label.to_owned(), rates });
    }
    let mut power = Vec::new();
    for change in CHANGES {
        let what = match change {
            Change::Step { sd } => format!("step of {sd} sd half-way"),
            Change::Trend { sd } => format!("trend of {sd} sd over the session"),
        };
        let rates = POWER_SIZES
            .iter()
            .map(|&(cells, rounds)| {
                let name = format!("drift-{what}-{cells}x{rounds}");
                (
                    cells,
                    rounds,
                    count(&name, options, |rng| session(cells, rounds, Shape::Normal, Some(change), rng)),
                )
            })
            .collect();
        power.push(RatesRow { what, rates });
    }
    DriftResult { false_alarms, power, misses }
}

/// The two tables, in Markdown.
pub fn tables(result: &DriftResult, experiments: u64) -> String {
    let mut out = format!(
        "\nDrift within a session: {experiments} simulated sessions per row and size (cells × rounds, \
         interleaved), each tested as margin report tests one metric's session.\nFalse alarms (%, ± one SE) \
         on stationary sessions; ✗ above {} % + 3 SE.\n\n",
        FALSE_ALARMS * 100.0
    );
    out.push_str(&markdown(&result.false_alarms, &SIZES, "shape"));
    out.push_str("\nPower (%, ± one SE), normal trials of CV 5 %:\n\n");
    out.push_str(&markdown(&result.power, &POWER_SIZES, "change"));
    if !result.misses.is_empty() {
        out.push_str(&format!("\nMissed: {}\n", result.misses.join("; ")));
    }
    out
}

/// A table of `rows`, a column per size (cells × rounds).
pub(super) fn markdown(rows: &[RatesRow], sizes: &[(usize, usize)], first: &str) -> String {
    let mut out = format!("| {first} |");
    for (c, r) in sizes {
        out.push_str(&format!(" {c} × {r} |"));
    }
    out.push_str("\n| --- |");
    out.push_str(&" --: |".repeat(sizes.len()));
    out.push('\n');
    for row in rows {
        out.push_str(&format!("| {} |", row.what));
        for (_, _, r) in &row.rates {
            out.push_str(&format!(" {:.2} ±{:.2}{} |", r.rate * 100.0, r.se * 100.0, r.mark()));
        }
        out.push('\n');
    }
    out
}
