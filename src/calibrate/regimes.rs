//! The regime test's own calibration (docs/statistics.md, Two regimes in a cell): how
//! often a cell of one unimodal shape is called two regimes (the goal: at most 1 % at
//! every n), and how often a mixture of two regimes is found, by share and separation.
//!
//! Each simulated cell goes through [`analyze_cell`], the function every cell of a report
//! is analysed by, and its `regimes` is read: nothing is re-implemented.

use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{draw, experiment_seed, unit_open};
use super::{Goal, Options, Rate};
use stats::cell::analyze_cell;
use stats::observations::Observations;
use stats::regimes::{BEFORE_ALPHA, MIN_GROUP, decided_by_before};
use stats::{StatsError, StatsSettings};
use vocab::MeanKind;

/// The most false alarms a unimodal shape may raise (docs/statistics.md).
pub const FALSE_ALARMS: f64 = 0.01;
/// The cells' sizes of the false-alarm table.
pub const NULL_NS: [usize; 5] = [5, 10, 20, 30, 60];
/// The cells' sizes of the power table.
pub const POWER_NS: [usize; 3] = [10, 20, 30];
/// The upper regime's share of trials (each trial lands in it with this chance).
pub const SHARES: [f64; 3] = [0.1, 0.3, 0.5];
/// The distance between the regimes' means, in sds of each regime.
pub const SEPARATIONS: [f64; 4] = [2.0, 4.0, 6.0, 10.0];
/// The mean and CV of the simulated values (the mixtures' lower regime).
const MEAN: f64 = 100.0;
const CV: f64 = 0.05;

/// One unimodal shape of the false-alarm table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NullShape {
    pub name: &'static str,
    /// `None`: uniform, flat over mean ± √3 sd.
    #[serde(skip)]
    pub shape: Option<Shape>,
    /// The sd as a fraction of the mean.
    pub cv: f64,
}

/// The shapes: those the issue names (normal, log-normal, t₃), a flat one (a jitter spread
/// evenly, the hardest: its halves leave a quarter of the spread within them) and those
/// benchmarks print (whole numbers; one far value in every cell, an outlier, not a regime).
pub fn nulls() -> Vec<NullShape> {
    vec![
        NullShape { name: "normal cv5", shape: Some(Shape::Normal), cv: 0.05 },
        NullShape { name: "normal cv25", shape: Some(Shape::Normal), cv: 0.25 },
        NullShape { name: "log-normal cv50", shape: Some(Shape::LogNormal), cv: 0.5 },
        NullShape { name: "t(3) cv5", shape: Some(Shape::StudentT3), cv: 0.05 },
        NullShape { name: "uniform cv5", shape: None, cv: 0.05 },
        NullShape { name: "quantised 100 ± 1", shape: Some(Shape::Quantised), cv: 0.01 },
        NullShape { name: "one far value", shape: Some(Shape::Contaminated { share: 1.0 }), cv: 0.05 },
    ]
}

/// What the suite measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegimesResult {
    /// Per shape, the share of cells called two regimes at each of [`NULL_NS`].
    pub false_alarms: Vec<NullRow>,
    /// Per share and separation, the share of mixtures found at each of [`POWER_NS`].
    pub power: Vec<PowerRow>,
    /// The test of the trial before ([`decided_by_before`]): per number of kinds of trial
    /// before, the share of cells whose regimes do not depend on it that it calls decided,
    /// at each of [`NULL_NS`]; and per fidelity, the share of cells whose trial before
    /// decides the regime that it finds, at each of [`POWER_NS`].
    pub before_false_alarms: Vec<BeforeRow>,
    pub before_power: Vec<BeforeRow>,
    pub misses: Vec<String>,
}

/// A row of the trial before's tables: the kinds of trial before (false alarms) or the
/// chance that a trial lands in the regime its trial before decides (power).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BeforeRow {
    pub kinds: usize,
    pub fidelity: Option<f64>,
    pub rates: Vec<(usize, Rate)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NullRow {
    pub shape: &'static str,
    pub rates: Vec<(usize, Rate)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerRow {
    pub share: f64,
    pub separation_sd: f64,
    pub rates: Vec<(usize, Rate)>,
}

/// Whether [`analyze_cell`] calls these values two regimes.
fn two_regimes(values: &[f64], settings: &StatsSettings) -> Result<bool, StatsError> {
    let sample = Observations::new(values, MeanKind::Arithmetic)?;
    let analysis = analyze_cell(&sample, settings)?;
    Ok(analysis.regimes.is_some())
}

/// How many of `options.experiments` cells made by `cell` are two regimes.
fn count(
    name: &str,
    options: &Options,
    cell: impl Fn(&mut Pcg64) -> Vec<f64> + Sync,
) -> Result<Rate, StatsError> {
    use rayon::prelude::*;
    let settings = StatsSettings::default();
    let hits = (0..options.experiments)
        .into_par_iter()
        .map(|i| {
            let mut rng = Pcg64::seed_from_u64(experiment_seed(options.seed, name, 0, i));
            two_regimes(&cell(&mut rng), &settings).map(u64::from)
        })
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    Ok(Rate::new(hits, options.experiments, None))
}

/// One far value in every cell: a normal trial moved 3–10 sd up or down.
fn with_far_value(values: &mut [f64], sd: f64, rng: &mut Pcg64) {
    let distance = 3.0 + 7.0 * unit_open(rng);
    let sign = if unit_open(rng) < 0.5 { -1.0 } else { 1.0 };
    let i = ((unit_open(rng) * values.len() as f64) as usize).min(values.len() - 1);
    values[i] += sign * distance * sd;
}

/// Runs both tables.
pub fn run(options: &Options) -> Result<RegimesResult, StatsError> {
    let mut misses = Vec::new();
    let mut false_alarms = Vec::new();
    for null in nulls() {
        let mut rates = Vec::new();
        for n in NULL_NS {
            let name = format!("regimes-null-{}-n{n}", null.name);
            let sd = null.cv * MEAN;
            let mut rate = count(&name, options, |rng| {
                let one = |rng: &mut Pcg64| match null.shape {
                    Some(shape) => draw(shape, MEAN, sd, rng),
                    None => MEAN + sd * 3f64.sqrt() * (2.0 * unit_open(rng) - 1.0),
                };
                let mut values: Vec<f64> = (0..n).map(|_| one(rng)).collect();
                if let Some(Shape::Contaminated { .. }) = null.shape {
                    with_far_value(&mut values, sd, rng);
                }
                values
            })?;
            rate = Rate::new(rate.hits, rate.of, Some(Goal::AtMost { alpha: FALSE_ALARMS }));
            if rate.misses {
                misses.push(format!("{} at n = {n}", null.name));
            }
            rates.push((n, rate));
        }
        false_alarms.push(NullRow { shape: null.name, rates });
    }
    let mut power = Vec::new();
    for share in SHARES {
        for separation in SEPARATIONS {
            let mut rates = Vec::new();
            for n in POWER_NS {
                let name = format!("regimes-mix-{share}-{separation}-n{n}");
                let sd = CV * MEAN;
                let rate = count(&name, options, |rng| {
                    (0..n)
                        .map(|_| {
                            let upper = unit_open(rng) < share;
                            let mean = if upper { MEAN + separation * sd } else { MEAN };
                            draw(Shape::Normal, mean, sd, rng)
                        })
                        .collect()
                })?;
                rates.push((n, rate));
            }
            power.push(PowerRow { share, separation_sd: separation, rates });
        }
    }
    let (before_false_alarms, before_power) = before(options, &mut misses);
    Ok(RegimesResult { false_alarms, power, before_false_alarms, before_power, misses })
}

/// The kinds of trial before of the false-alarm table, and the fidelities of the power
/// table (its cells have two kinds).
pub const BEFORE_KINDS: [usize; 3] = [2, 3, 5];
pub const FIDELITIES: [f64; 3] = [0.8, 0.9, 1.0];
/// The most simulated cells per row of the trial before's tables: each is a permutation
/// test of 1999 shufflings, a thousand times the split's cost.
pub const BEFORE_EXPERIMENTS: u64 = 4000;

/// How often [`decided_by_before`] says a cell of `n` trials is decided by its trial
/// before: each trial's kind of trial before drawn evenly among `kinds`, and its regime
/// upper with chance 0.3 (`fidelity` `None`), or that of its kind (kind 0 lower, the others
/// upper) with chance `fidelity`. Each regime holds at least [`MIN_GROUP`] trials, as a
/// regime found does (a draw with fewer is drawn again).
fn count_before(name: &str, options: &Options, n: usize, kinds: usize, fidelity: Option<f64>) -> Rate {
    use rayon::prelude::*;
    let experiments = options.experiments.min(BEFORE_EXPERIMENTS);
    let hits = (0..experiments)
        .into_par_iter()
        .map(|i| {
            let mut rng = Pcg64::seed_from_u64(experiment_seed(options.seed, name, 0, i));
            loop {
                let kind: Vec<usize> =
                    (0..n).map(|_| ((unit_open(&mut rng) * kinds as f64) as usize).min(kinds - 1)).collect();
                let upper: Vec<bool> = kind
                    .iter()
                    .map(|&k| match fidelity {
                        None => unit_open(&mut rng) < 0.3,
                        Some(f) => (k > 0) == (unit_open(&mut rng) < f),
                    })
                    .collect();
                let high = upper.iter().filter(|&&u| u).count();
                if high < MIN_GROUP || n - high < MIN_GROUP {
                    continue;
                }
                let seed = experiment_seed(options.seed, name, 1, i);
                let found = decided_by_before(&upper, &kind, seed).is_some_and(|b| b.p_value <= BEFORE_ALPHA);
                break u64::from(found);
            }
        })
        .sum();
    Rate::new(hits, experiments, None)
}

/// The trial before's two tables.
fn before(options: &Options, misses: &mut Vec<String>) -> (Vec<BeforeRow>, Vec<BeforeRow>) {
    let mut nulls = Vec::new();
    for kinds in BEFORE_KINDS {
        let mut rates = Vec::new();
        for n in NULL_NS {
            let rate = count_before(&format!("before-null-k{kinds}-n{n}"), options, n, kinds, None);
            let rate = Rate::new(rate.hits, rate.of, Some(Goal::AtMost { alpha: FALSE_ALARMS }));
            if rate.misses {
                misses.push(format!("the trial before, {kinds} kinds, at n = {n}"));
            }
            rates.push((n, rate));
        }
        nulls.push(BeforeRow { kinds, fidelity: None, rates });
    }
    let mut power = Vec::new();
    for fidelity in FIDELITIES {
        let rates = POWER_NS
            .iter()
            .map(|&n| {
                (n, count_before(&format!("before-power-{fidelity}-n{n}"), options, n, 2, Some(fidelity)))
            })
            .collect();
        power.push(BeforeRow { kinds: 2, fidelity: Some(fidelity), rates });
    }
    (nulls, power)
}

fn cell(r: &Rate) -> String {
    format!("{:.2} ±{:.2}{}", r.rate * 100.0, r.se * 100.0, r.mark())
}

/// A table of rates: `heads` (each with its column's alignment) then a column per n of
/// `ns`, and a row per `rows` item (its first cells, then its rates).
fn rates_table<'a>(
    out: &mut String,
    heads: &[(&str, &str)],
    ns: &[usize],
    rows: impl IntoIterator<Item = (Vec<String>, &'a [(usize, Rate)])>,
) {
    for (head, _) in heads {
        out.push_str(&format!("| {head} "));
    }
    out.push('|');
    for n in ns {
        out.push_str(&format!(" n = {n} |"));
    }
    out.push('\n');
    for (_, align) in heads {
        out.push_str(&format!("| {align} "));
    }
    out.push('|');
    out.push_str(&" --: |".repeat(ns.len()));
    out.push('\n');
    for (first, rates) in rows {
        for text in first {
            out.push_str(&format!("| {text} "));
        }
        out.push('|');
        for (_, r) in rates {
            out.push_str(&format!(" {} |", cell(r)));
        }
        out.push('\n');
    }
}

/// The tables, in Markdown.
pub fn tables(result: &RegimesResult, experiments: u64) -> String {
    let mut out = format!(
        "\nTwo regimes in a cell: {experiments} simulated cells per row and n, each analysed by the \
         report's own cell analysis.\nFalse alarms (%, ± one SE) on one unimodal shape; ✗ above {} % + 3 SE.\n\n",
        FALSE_ALARMS * 100.0
    );
    let rows = result.false_alarms.iter().map(|row| (vec![row.shape.to_owned()], &row.rates[..]));
    rates_table(&mut out, &[("shape", "---")], &NULL_NS, rows);
    out.push_str(
        "\nPower (%, ± one SE): a normal regime (CV 5 %) and a second one d sd above it, each trial in the \
         upper with the chance given.\n\n",
    );
    let rows = result.power.iter().map(|row| {
        (vec![format!("{:.0} %", row.share * 100.0), row.separation_sd.to_string()], &row.rates[..])
    });
    rates_table(&mut out, &[("upper share", "--:"), ("d", "--:")], &POWER_NS, rows);
    out.push_str(&format!(
        "\nWhat decides a regime, the trial before (`decided_by_before`, p ≤ 1 %): {} simulated cells per \
         row and n. False alarms (%, ± one SE): the regime (upper with chance 0.3) does not depend on the \
         trial before, of 2, 3 or 5 kinds drawn evenly.\n\n",
        experiments.min(BEFORE_EXPERIMENTS)
    ));
    let rows = result.before_false_alarms.iter().map(|row| (vec![row.kinds.to_string()], &row.rates[..]));
    rates_table(&mut out, &[("kinds", "--:")], &NULL_NS, rows);
    out.push_str(
        "\nPower (%, ± one SE): two kinds of trial before, evenly; after one a trial lands in the lower \
         regime, after the other in the upper, each with the chance given.\n\n",
    );
    let rows = result
        .before_power
        .iter()
        .map(|row| (vec![format!("{:.0} %", row.fidelity.unwrap_or(0.0) * 100.0)], &row.rates[..]));
    rates_table(&mut out, &[("chance", "--:")], &POWER_NS, rows);
    if !result.misses.is_empty() {
        out.push_str(&format!("\nMissed: {}\n", result.misses.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables are made of the report's own analysis: a clear mixture is found, one
    /// normal cloud is not, and the same seed gives the same counts.
    #[test]
    fn clear_mixtures_are_found_and_the_seed_decides() {
        let options = Options { experiments: 200, seed: 5, filters: Vec::new() };
        let settings = StatsSettings::default();
        let normal = count("t-normal", &options, |rng| {
            (0..20).map(|_| draw(Shape::Normal, 100.0, 5.0, rng)).collect()
        })
        .unwrap();
        assert!(normal.hits <= 6, "{normal:?}");
        let mixed = count("t-mix", &options, |rng| {
            (0..20).map(|i| draw(Shape::Normal, if i % 2 == 0 { 100.0 } else { 150.0 }, 5.0, rng)).collect()
        })
        .unwrap();
        assert_eq!(mixed.hits, 200, "{mixed:?}");
        let again = count("t-normal", &options, |rng| {
            (0..20).map(|_| draw(Shape::Normal, 100.0, 5.0, rng)).collect()
        })
        .unwrap();
        assert_eq!(again, normal);
        assert!(two_regimes(&[1.0, 1.1, 1.0, 5.0, 5.1, 5.2], &settings).unwrap());
    }
}
