//! The change points of a series, calibrated (docs/statistics.md, Change points in a
//! series): how often a series without change gets a change point (the goal: at most 1 %
//! of series, family-wise over the series), and how often a step of a known size — in
//! units of the per-level margin of error — is found, placed at the right level, and
//! covered by its interval.
//!
//! A simulated series has 10, 30 or 100 levels. Its units are the trials of one session
//! (10 a level), or each level's boots of its own (3 a level, 5 trials each, each boot
//! shifting its trials by a normal offset as large as their own sd), each boot one unit,
//! its trials' mean, as [`stats::units::unit_means`] makes it. Every series goes through
//! [`stats::series::find_changes`], the function the report will call.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{draw, experiment_seed, standard_normal};
use super::{Goal, MIN_COVERAGE, Options, Rate};
use stats::dist::t_quantile;
use stats::observations::Observations;
use stats::outliers::OutlierRule;
use stats::series::{BOUND_SHARE, FALSE_CHANGES, SeriesSettings, find_changes, kept};
use stats::units::unit_means;
use vocab::MeanKind;

/// The series' length of the chain's rows ([`super::chain`]), in levels.
pub const LEVELS: usize = 30;
/// The confirmation's false-claim goal in the chain's table: `until: verdict` at α = 5 %.
pub const CONFIRM_ALPHA: f64 = 0.05;
/// The series' lengths, in levels.
pub const LENGTHS: [usize; 3] = [10, 30, 100];
/// The trials' CV within a session.
const CV: f64 = 0.05;
/// A change is found when a change point lies within this many levels of it.
const NEAR: usize = 2;
/// The share of steps of 2 × the per-level margin of error to find, and to place exactly
/// (of those found).
pub const MIN_FOUND: f64 = 0.90;

/// How a level's units are measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Units {
    /// The levels' trials in one session, each trial a unit.
    Session { trials: usize },
    /// Each level in boots of its own, each boot a unit (its trials' mean); each boot
    /// shifts its trials by a normal offset of sd `between` × the trials' sd.
    Boots { boots: usize, trials: usize, between: f64 },
    /// As `Boots`, but each trial passed as a unit: what not to do, shown for why.
    BootsTrialsAsUnits { boots: usize, trials: usize, between: f64 },
}

impl Units {
    pub(super) fn label(&self) -> String {
        match *self {
            Units::Session { trials } => format!("one session, {trials} trials a level"),
            Units::Boots { boots, trials, between } => {
                format!("{boots} boots a level × {trials} trials, between {between} × within; boots as units")
            }
            Units::BootsTrialsAsUnits { boots, trials, between } => format!(
                "{boots} boots a level × {trials} trials, between {between} × within; trials as units (wrong)"
            ),
        }
    }

    /// The per-level margin of error relative to the mean, as the report gives it for a
    /// cell of the level's units: t(0.975, u − 1) · σ_unit / √u.
    pub fn margin(&self) -> f64 {
        let (units, sd) = match *self {
            Units::Session { trials } => (trials, CV),
            Units::Boots { boots, trials, between }
            | Units::BootsTrialsAsUnits { boots, trials, between } => {
                (boots, CV * (between * between + 1.0 / trials as f64).sqrt())
            }
        };
        t_quantile(0.975, (units - 1) as f64).unwrap_or(f64::NAN) * sd / (units as f64).sqrt()
    }

    /// One level's units at true mean `mean`: its trials less those margin's default
    /// outlier rule sets aside from the level's cell ([`kept`]), as the report's cells keep
    /// them; across boots each boot's mean of its trials kept.
    pub(super) fn draw(&self, shape: Shape, mean: f64, rng: &mut Pcg64) -> Vec<f64> {
        let rule = OutlierRule::default();
        let keep = |values: &[f64]| -> Vec<f64> {
            Observations::new(values, MeanKind::Arithmetic)
                .and_then(|o| kept(&o, &rule))
                .map(|o| o.values().to_vec())
                .expect("finite simulated values")
        };
        match *self {
            Units::Session { trials } => {
                keep(&(0..trials).map(|_| draw(shape, mean, CV * mean, rng)).collect::<Vec<_>>())
            }
            Units::Boots { boots, trials, between }
            | Units::BootsTrialsAsUnits { boots, trials, between } => {
                let mut boot_of = Vec::with_capacity(boots * trials);
                let mut values = Vec::with_capacity(boots * trials);
                for boot in 0..boots {
                    let centre = mean + between * CV * mean * standard_normal(rng);
                    for _ in 0..trials {
                        boot_of.push(boot);
                        values.push(draw(shape, centre, CV * mean, rng));
                    }
                }
                let kept_values = keep(&values);
                if matches!(self, Units::BootsTrialsAsUnits { .. }) {
                    return kept_values;
                }
                // the kept values are the level's in their order, less those set aside
                let mut groups: Vec<Vec<f64>> = vec![Vec::new(); boots];
                let mut next = kept_values.iter().peekable();
                for (value, boot) in values.iter().zip(&boot_of) {
                    if next.peek().is_some_and(|&&k| k.to_bits() == value.to_bits()) {
                        groups[*boot].push(*value);
                        next.next();
                    }
                }
                groups.retain(|g| !g.is_empty());
                unit_means(&groups, MeanKind::Arithmetic).map(|o| o.values().to_vec()).unwrap_or_default()
            }
        }
    }
}

pub(super) const SESSION: Units = Units::Session { trials: 10 };
pub(super) const BOOTS: Units = Units::Boots { boots: 3, trials: 5, between: 1.0 };
const WRONG: Units = Units::BootsTrialsAsUnits { boots: 3, trials: 5, between: 1.0 };

const SHAPES: [(&str, Shape); 3] =
    [("normal", Shape::Normal), ("log-normal", Shape::LogNormal), ("t(3)", Shape::StudentT3)];

/// Where the series steps, in units of the per-level margin of error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// No change.
    None,
    /// Up by `size` margins, after a level drawn at random with 2 or more on each side.
    Step { size: f64 },
    /// Up by `size` margins after the first level.
    Edge { size: f64 },
    /// Up by `size` margins and back down later, each segment of 2 or more levels (and a
    /// tenth of the series).
    UpAndBack { size: f64 },
}

impl Change {
    pub(super) fn label(&self) -> String {
        match *self {
            Change::None => "no change".to_owned(),
            Change::Step { size } => format!("step of {size} × margin"),
            Change::Edge { size } => format!("step of {size} × margin after the first level"),
            Change::UpAndBack { size } => format!("up {size} × margin and back"),
        }
    }

    /// The levels' true means, and the true steps: (first level after it, ratio).
    pub(super) fn truth(&self, levels: usize, margin: f64, rng: &mut Pcg64) -> (Vec<f64>, Vec<(usize, f64)>) {
        let base = 100.0;
        let mut means = vec![base; levels];
        let steps = match *self {
            Change::None => Vec::new(),
            Change::Step { size } => vec![(rng.random_range(2..=levels - 2), 1.0 + size * margin)],
            Change::Edge { size } => vec![(1, 1.0 + size * margin)],
            Change::UpAndBack { size } => {
                let gap = 2.max(levels / 10);
                let first = rng.random_range(gap..=levels - 2 * gap);
                let second = rng.random_range(first + gap..=levels - gap);
                let r = 1.0 + size * margin;
                vec![(first, r), (second, 1.0 / r)]
            }
        };
        let mut level = base;
        let mut next = steps.iter().peekable();
        for (i, m) in means.iter_mut().enumerate() {
            if let Some(&&(at, r)) = next.peek()
                && at == i
            {
                level *= r;
                next.next();
            }
            *m = level;
        }
        (means, steps)
    }
}

/// Counts over the series of one row and length.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    series: u64,
    /// Series with some change point (the null rows' false alarms).
    any: u64,
    /// True steps, those with a change point within [`NEAR`] levels, those with one at
    /// their level, and those of the latter whose interval holds the true ratio.
    steps: u64,
    found: u64,
    exact: u64,
    covered: u64,
    /// Series with a change point farther than [`NEAR`] levels from every true step.
    extra: u64,
    /// Series the search refused (none should be).
    failed: u64,
}

impl Tally {
    fn merge(mut self, o: Tally) -> Tally {
        self.series += o.series;
        self.any += o.any;
        self.steps += o.steps;
        self.found += o.found;
        self.exact += o.exact;
        self.covered += o.covered;
        self.extra += o.extra;
        self.failed += o.failed;
        self
    }
}

fn one(units: Units, shape: Shape, change: Change, levels: usize, rng: &mut Pcg64) -> Tally {
    let (means, steps) = change.truth(levels, units.margin(), rng);
    let observations: Vec<Observations> = means
        .iter()
        .map(|&m| Observations::new(&units.draw(shape, m, rng), MeanKind::Arithmetic))
        .collect::<Result<_, _>>()
        .expect("finite simulated values");
    let Ok(series) = find_changes(&observations, &SeriesSettings::default()) else {
        return Tally { series: 1, failed: 1, ..Tally::default() };
    };
    let mut tally = Tally { series: 1, steps: steps.len() as u64, ..Tally::default() };
    tally.any = u64::from(!series.change_points.is_empty());
    for &(at, ratio) in &steps {
        // change point c.after + 1 is the first level after it
        let near = series.change_points.iter().any(|c| (c.after + 1).abs_diff(at) <= NEAR);
        tally.found += u64::from(near);
        if let Some(c) = series.change_points.iter().find(|c| c.after + 1 == at) {
            tally.exact += 1;
            tally.covered += u64::from(c.low <= ratio && ratio <= c.high);
        }
    }
    tally.extra = u64::from(
        series.change_points.iter().any(|c| steps.iter().all(|&(at, _)| (c.after + 1).abs_diff(at) > NEAR)),
    );
    tally
}

fn count(name: &str, options: &Options, units: Units, shape: Shape, change: Change, levels: usize) -> Tally {
    use rayon::prelude::*;
    (0..options.experiments)
        .into_par_iter()
        .map(|i| {
            let mut rng = Pcg64::seed_from_u64(experiment_seed(options.seed, name, 0, i));
            one(units, shape, change, levels, &mut rng)
        })
        .reduce(Tally::default, Tally::merge)
}

/// What the suite measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesResult {
    /// Series without change that got a change point, by units and noise.
    pub false_changes: Vec<NullRow>,
    /// Steps found, placed, covered.
    pub steps: Vec<StepRow>,
    /// Change points found and then confirmed ([`super::chain`]).
    pub chain: Vec<ChainRow>,
    pub misses: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NullRow {
    pub units: Units,
    pub noise: &'static str,
    pub what: String,
    /// (levels, rate)
    pub rates: Vec<(usize, Rate)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRow {
    pub units: Units,
    pub noise: &'static str,
    pub change: Change,
    pub what: String,
    /// The per-level margin of error the step's size is in, as a fraction.
    pub margin: f64,
    pub rates: Vec<StepRates>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRates {
    pub levels: usize,
    /// True steps with a change point within 2 levels.
    pub found: Rate,
    /// Of those found, at their exact level.
    pub exact: Rate,
    /// Of those at their exact level, the interval holds the true ratio.
    pub coverage: Rate,
    /// Series with a change point more than 2 levels from every true step.
    pub extra: Rate,
}

/// Runs both tables.
pub fn run(options: &Options) -> SeriesResult {
    let mut misses = Vec::new();
    let mut false_changes = Vec::new();
    let mut null_rows: Vec<(Units, &str, Shape)> = Vec::new();
    for units in [SESSION, BOOTS] {
        for (label, shape) in SHAPES {
            null_rows.push((units, label, shape));
        }
    }
    null_rows.push((WRONG, "normal", Shape::Normal));
    for (units, noise, shape) in null_rows {
        let what = format!("{}, {noise}", units.label());
        let rates = LENGTHS
            .iter()
            .map(|&levels| {
                let name = format!("series-null-{what}-{levels}");
                let t = count(&name, options, units, shape, Change::None, levels);
                let goal = (units != WRONG).then_some(Goal::AtMost { alpha: FALSE_CHANGES });
                let r = Rate::new(t.any, t.series, goal);
                if t.failed > 0 {
                    misses.push(format!("{} series not analysed: {what} at {levels} levels", t.failed));
                }
                if r.misses {
                    misses.push(format!("false changes: {what} at {levels} levels"));
                }
                (levels, r)
            })
            .collect();
        false_changes.push(NullRow { units, noise, what, rates });
    }
    let mut step_rows: Vec<(Units, &str, Shape, Change)> = Vec::new();
    for units in [SESSION, BOOTS] {
        for size in [1.0, 1.5, 2.0, 3.0] {
            step_rows.push((units, "normal", Shape::Normal, Change::Step { size }));
        }
        for (label, shape) in &SHAPES[1..] {
            step_rows.push((units, label, *shape, Change::Step { size: 2.0 }));
        }
        step_rows.push((units, "normal", Shape::Normal, Change::Edge { size: 2.0 }));
        step_rows.push((units, "normal", Shape::Normal, Change::UpAndBack { size: 2.0 }));
    }
    let mut steps = Vec::new();
    for (units, noise, shape, change) in step_rows {
        let what = format!("{}; {}, {noise}", change.label(), units.label());
        let target = matches!(change, Change::Step { size } if size >= 2.0);
        let rates = LENGTHS
            .iter()
            .map(|&levels| {
                let name = format!("series-{what}-{levels}");
                let t = count(&name, options, units, shape, change, levels);
                if t.failed > 0 {
                    misses.push(format!("{} series not analysed: {what} at {levels} levels", t.failed));
                }
                let at_least = |level| target.then_some(Goal::AtLeast { level });
                let r = StepRates {
                    levels,
                    found: Rate::new(t.found, t.steps, at_least(MIN_FOUND)),
                    exact: Rate::new(t.exact, t.found, at_least(MIN_FOUND)),
                    coverage: Rate::new(t.covered, t.exact, Some(Goal::AtLeast { level: MIN_COVERAGE })),
                    extra: Rate::new(t.extra, t.series, None),
                };
                for (rate, name) in [(&r.found, "found"), (&r.exact, "exact"), (&r.coverage, "coverage")] {
                    if rate.misses {
                        misses.push(format!("{name}: {what} at {levels} levels"));
                    }
                }
                r
            })
            .collect();
        steps.push(StepRow { units, noise, change, what, margin: units.margin(), rates });
    }
    SeriesResult { false_changes, steps, chain: Vec::new(), misses }
}

/// The two tables, in Markdown.
pub fn tables(result: &SeriesResult, experiments: u64) -> String {
    let mut out = format!(
        "\nChange points in a series: {experiments} simulated series per row and length, each analysed by \
         margin's own search (binary segmentation, Bonferroni over the splits at {} %), CV {} % within a \
         session.\nFalse changes (%, ± one SE): series without change that got a change point; ✗ above {} % + 3 SE.\n\n",
        BOUND_SHARE * FALSE_CHANGES * 100.0,
        CV * 100.0,
        FALSE_CHANGES * 100.0,
    );
    out.push_str("| units | noise |");
    for l in LENGTHS {
        out.push_str(&format!(" {l} levels |"));
    }
    out.push_str("\n| --- | --- |");
    out.push_str(&" --: |".repeat(LENGTHS.len()));
    out.push('\n');
    for row in &result.false_changes {
        out.push_str(&format!("| {} | {} |", row.units.label(), row.noise));
        for (_, r) in &row.rates {
            out.push_str(&format!(" {:.2} ±{:.2}{} |", r.rate * 100.0, r.se * 100.0, r.mark()));
        }
        out.push('\n');
    }
    out.push_str(
        "\nSteps (%): found (a change point within 2 levels) / at the exact level, of those found / the \
         step's interval holds the true ratio, of those at the exact level / series with a change point \
         elsewhere. A step's size is in per-level margins of error (the margin a cell of the level's units \
         has: t(0.975, u − 1) · sd / √u; in % beside the units); ✗ below 90 % found or exact at 2 × and 3 × \
         the margin, coverage below 94 %.\n\n",
    );
    out.push_str("| change | units | noise |");
    for l in LENGTHS {
        out.push_str(&format!(" {l} levels |"));
    }
    out.push_str("\n| --- | --- | --- |");
    out.push_str(&" --: |".repeat(LENGTHS.len()));
    out.push('\n');
    let pct = |r: &Rate| {
        if r.of == 0 { "–".to_owned() } else { format!("{:.1}{}", r.rate * 100.0, r.mark()) }
    };
    for row in &result.steps {
        out.push_str(&format!(
            "| {} | {} (margin {:.1} %) | {} |",
            row.change.label(),
            row.units.label(),
            row.margin * 100.0,
            row.noise
        ));
        for r in &row.rates {
            out.push_str(&format!(
                " {} / {} / {} / {} |",
                pct(&r.found),
                pct(&r.exact),
                pct(&r.coverage),
                pct(&r.extra)
            ));
        }
        out.push('\n');
    }
    out.push_str(&chain_table(&result.chain, experiments));
    if result.misses.is_empty() {
        out.push_str("\nEvery row meets its goals.\n");
    } else {
        out.push_str(&format!("\nMissed: {}\n", result.misses.join("; ")));
    }
    out
}

/// One row of the chain's table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChainRow {
    pub units: Units,
    pub change: Change,
    pub what: String,
    pub levels: usize,
    /// Change points found per series.
    pub found_per_series: f64,
    /// Of the change points between truly different levels, those confirmed.
    pub confirmed: Rate,
    /// Of the change points between truly equal levels, those confirmed (false).
    pub false_confirmations: Rate,
    /// Series with a false confirmed change: the chain's rate.
    pub series_false: Rate,
}

/// The chain's table, in Markdown.
fn chain_table(rows: &[ChainRow], experiments: u64) -> String {
    let mut out = format!(
        "\nThe chain, a change point found and then confirmed: {experiments} simulated series of {LEVELS} \
         levels per row, each change point found confirmed by its two levels measured again under \
         `until: verdict`. Change points per series; of those between truly different levels, confirmed \
         (%); of those between truly equal levels, confirmed (false, %, ± one SE, of how many); series with \
         a false confirmed change (%, ± one SE); ✗ above {} % + 3 SE.\n\n\
         | change | units | change points per series | confirmed | false confirmations | series with a false confirmed change |\n\
         | --- | --- | --: | --: | --: | --: |\n",
        CONFIRM_ALPHA * 100.0
    );
    let pct = |r: &Rate| {
        if r.of == 0 {
            "– (of 0)".to_owned()
        } else {
            format!("{:.2} ±{:.2}{}", r.rate * 100.0, r.se * 100.0, r.mark())
        }
    };
    for row in rows {
        let confirmed = if row.confirmed.of == 0 {
            "–".to_owned()
        } else {
            format!("{:.1}", row.confirmed.rate * 100.0)
        };
        out.push_str(&format!(
            "| {} | {} | {:.3} | {confirmed} | {} (of {}) | {} |\n",
            row.change.label(),
            row.units.label(),
            row.found_per_series,
            pct(&row.false_confirmations),
            row.false_confirmations.of,
            pct(&row.series_false),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The margin a step's size is counted in: t(0.975, u − 1) · sd / √u, with the sd of a
    /// boot's mean √(between² + 1/trials) × the trials' (2.262 = t(0.975, 9); 4.303 = t(0.975, 2)).
    #[test]
    fn the_margin_is_a_cells_of_the_levels_units() {
        assert!((SESSION.margin() - 2.262_157 * 0.05 / 10f64.sqrt()).abs() < 1e-6);
        let boot_sd = 0.05 * (1.0f64 + 0.2).sqrt();
        assert!((BOOTS.margin() - 4.302_653 * boot_sd / 3f64.sqrt()).abs() < 1e-6);
    }

    /// The true means step where the truth says, and up-and-back returns to the start.
    #[test]
    fn truths_step_where_they_say() {
        let mut rng = Pcg64::seed_from_u64(5);
        for _ in 0..200 {
            let (means, steps) = Change::Step { size: 2.0 }.truth(10, 0.05, &mut rng);
            let at = steps[0].0;
            assert!((2..=8).contains(&at), "{at}");
            assert!(
                means[..at].iter().all(|&m| m == 100.0)
                    && means[at..].iter().all(|&m| (m - 110.0).abs() < 1e-9)
            );
            let (means, steps) = Change::UpAndBack { size: 1.0 }.truth(30, 0.05, &mut rng);
            let (a, b) = (steps[0].0, steps[1].0);
            assert!(a >= 3 && b >= a + 3 && b <= 27, "{steps:?}");
            assert!((means[a] - 105.0).abs() < 1e-9 && (means[29] - 100.0).abs() < 1e-9, "{means:?}");
            let (means, steps) = Change::Edge { size: 1.0 }.truth(10, 0.05, &mut rng);
            assert_eq!((steps[0].0, means[0]), (1, 100.0));
        }
    }

    /// A boot-level unit is its trials' mean; trials as units give every trial.
    #[test]
    fn boots_give_one_unit_each() {
        let mut rng = Pcg64::seed_from_u64(1);
        assert_eq!(BOOTS.draw(Shape::Normal, 100.0, &mut rng).len(), 3);
        assert_eq!(WRONG.draw(Shape::Normal, 100.0, &mut rng).len(), 15);
        assert_eq!(SESSION.draw(Shape::Normal, 100.0, &mut rng).len(), 10);
    }
}
