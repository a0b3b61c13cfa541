//! A series' change point and then its confirmation, calibrated as one chain
//! (docs/statistics.md, Change points in a series, Confirmation): a simulated series is
//! searched as [`super::series`] searches it, and every change point found is confirmed
//! as `margin run FILE --confirm A,B` would: the two levels beside it measured again,
//! fresh, under `until: verdict` (in one session: `{ min: 5, max: 30 }`; across boots:
//! adaptive boots `{ min: 3, max: 12 }`), through the suite's own simulation of that
//! rule ([`simulate`]). A confirmation is *false* when the two levels' true means are
//! equal (a change point where the series has none, or one placed beside its step) and
//! it claims a difference.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::scenario::{self, Shape};
use super::series::{BOOTS, CONFIRM_ALPHA, ChainRow, Change, LEVELS, SESSION, SeriesResult, Units};
use super::simulate::{PreparedScenario, experiment_seed, simulate};
use super::{CalibrateError, Goal, Options, Rate, claims_difference};
use stats::observations::Observations;
use stats::series::{SeriesSettings, find_changes};
use vocab::MeanKind;

/// Counts over the series of one row.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    series: u64,
    /// Change points found, and confirmed.
    found: u64,
    /// Change points whose two sides truly differ, and those confirmed.
    true_sides: u64,
    true_confirmed: u64,
    /// Change points whose two sides are truly equal, and those confirmed (false).
    equal_sides: u64,
    false_confirmed: u64,
    /// Series with a false confirmation.
    series_false: u64,
    /// Confirmations the simulation could not analyse (none should be).
    failed: u64,
}

impl Tally {
    fn merge(mut self, o: Tally) -> Tally {
        self.series += o.series;
        self.found += o.found;
        self.true_sides += o.true_sides;
        self.true_confirmed += o.true_confirmed;
        self.equal_sides += o.equal_sides;
        self.false_confirmed += o.false_confirmed;
        self.series_false += o.series_false;
        self.failed += o.failed;
        self
    }
}

/// The confirmation's scenario for a series' units: the suite's `until: verdict` scenario
/// at the series' CV, or its adaptive boots with boots as far apart as the series'.
fn confirmation_scenario(units: Units) -> Result<PreparedScenario, CalibrateError> {
    let name = if units == SESSION { "verdict-cv5-normal" } else { "boots3-12-between1.0" };
    let scenario = scenario::all()
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| CalibrateError::NoMatch { filters: vec![name.to_owned()], names: Vec::new() })?;
    PreparedScenario::new(&scenario)
}

fn one(units: Units, change: Change, confirm: &PreparedScenario, rng: &mut Pcg64) -> Tally {
    let (means, _) = change.truth(LEVELS, units.margin(), rng);
    let observations: Vec<Observations> = means
        .iter()
        .map(|&m| Observations::new(&units.draw(Shape::Normal, m, rng), MeanKind::Arithmetic))
        .collect::<Result<_, _>>()
        .expect("finite simulated values");
    let mut tally = Tally { series: 1, ..Tally::default() };
    let Ok(series) = find_changes(&observations, &SeriesSettings::default()) else {
        tally.failed = 1;
        return tally;
    };
    for c in &series.change_points {
        tally.found += 1;
        let ratio = means[c.after + 1] / means[c.after];
        let outcome = simulate(confirm, ratio, rng.random()).outcome;
        let Ok(outcome) = outcome else {
            tally.failed += 1;
            continue;
        };
        let confirmed = claims_difference(outcome.verdict);
        if (ratio - 1.0).abs() < 1e-12 {
            tally.equal_sides += 1;
            tally.false_confirmed += u64::from(confirmed);
        } else {
            tally.true_sides += 1;
            tally.true_confirmed += u64::from(confirmed);
        }
    }
    tally.series_false = u64::from(tally.false_confirmed > 0);
    tally
}

/// `series` with the chain's rows, and their misses.
pub fn with_chain(mut series: SeriesResult, options: &Options) -> SeriesResult {
    match run(options) {
        Ok((rows, missed)) => {
            series.misses.extend(missed);
            series.chain = rows;
        }
        Err(e) => series.misses.push(format!("the chain not simulated: {e}")),
    }
    series
}

/// The chain's rows: series of [`LEVELS`] levels without change, and with one step of 1 ×
/// and 2 × the per-level margin of error, within a session and across boots.
fn run(options: &Options) -> Result<(Vec<ChainRow>, Vec<String>), CalibrateError> {
    use rayon::prelude::*;
    let mut rows = Vec::new();
    let mut misses = Vec::new();
    for units in [SESSION, BOOTS] {
        let confirm = confirmation_scenario(units)?;
        for change in [Change::None, Change::Step { size: 1.0 }, Change::Step { size: 2.0 }] {
            let what = format!("{}; {}", change.label(), units.label());
            let name = format!("chain-{what}");
            let t = (0..options.experiments)
                .into_par_iter()
                .map(|i| {
                    let mut rng = Pcg64::seed_from_u64(experiment_seed(options.seed, &name, 0, i));
                    one(units, change, &confirm, &mut rng)
                })
                .reduce(Tally::default, Tally::merge);
            if t.failed > 0 {
                misses.push(format!("{} series or confirmations not analysed: {what}", t.failed));
            }
            let at_most = Some(Goal::AtMost { alpha: CONFIRM_ALPHA });
            let row = ChainRow {
                units,
                change,
                levels: LEVELS,
                found_per_series: t.found as f64 / t.series.max(1) as f64,
                confirmed: Rate::new(t.true_confirmed, t.true_sides, None),
                false_confirmations: Rate::new(t.false_confirmed, t.equal_sides, at_most),
                series_false: Rate::new(t.series_false, t.series, at_most),
                what,
            };
            if row.false_confirmations.misses || row.series_false.misses {
                misses.push(format!("false confirmations: {}", row.what));
            }
            rows.push(row);
        }
    }
    Ok((rows, misses))
}
