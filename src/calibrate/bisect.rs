//! The bisection's own calibration (docs/statistics.md, Bisection): series of 16, 64 and
//! 1 024 levels with one step of known size at a random place, or none, bisected by
//! [`stats::bisect::Bisection`] exactly as a command drives it — ask which level to
//! measure, measure one unit of it, record it — until it answers. Per row: how often the
//! right level is named, how often the answer excludes the truth, how often the range is
//! narrowed around it, how often a regression is claimed (on A/A: falsely), and what it
//! cost against measuring every level to the same precision.
//!
//! The unit is a trial within a session, or a boot's mean of its trials when each level
//! is booted anew (each boot shifting its trials by a normal offset). A step's size is in
//! units of E, the per-level margin of error: the half-width of the 95 % interval of a
//! level's mean from [`REFERENCE_UNITS`] units, what measuring every level would give.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{draw, experiment_seed};
use super::{Goal, Options, Rate};
use stats::bisect::{BisectSettings, Bisection, Decision, Next, Outcome, Unit};
use stats::dist::t_quantile;

/// The ranges bisected, in levels.
pub const RANGES: [usize; 3] = [16, 64, 1024];
/// The step at the first bad level, in units of E (0: none, A/A).
pub const STEPS: [f64; 4] = [0.0, 1.0, 2.0, 3.0];
/// Units per level that measuring every level takes, the precision E is quoted at.
pub const REFERENCE_UNITS: u32 = 10;
/// Trials a boot runs, when the boot is the unit.
pub const TRIALS_PER_BOOT: u32 = 5;
/// The sd of a boot's offset, in sds of a trial.
pub const BETWEEN: f64 = 1.0;
/// A trial's spread, relative to the good levels' mean of 10 s.
const CV: f64 = 0.05;
const CENTRE: f64 = 10.0;

/// The targets a user can rely on: at a step of 2 E or more in 64 levels the right level at least
/// 95 %, the answer excluding the truth at most 2 %; on A/A a regression claimed at most
/// 5 %; the cost at most 25 % of measuring all 64 levels, 3 % of all 1 024.
pub const RIGHT: f64 = 0.95;
pub const WRONG: f64 = 0.02;
pub const FALSE_REGRESSION: f64 = 0.05;
pub const COST: [(usize, f64); 2] = [(64, 0.25), (1024, 0.03)];

/// Where the levels are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Every level in one session: a unit is a trial.
    Session,
    /// Each level booted anew: a unit is a boot's mean of [`TRIALS_PER_BOOT`] trials.
    Boots,
}

impl Layout {
    fn label(self) -> &'static str {
        match self {
            Layout::Session => "session",
            Layout::Boots => "boots",
        }
    }

    /// The sd of one unit, with a trial's sd `sd`.
    fn unit_sd(self, sd: f64) -> f64 {
        match self {
            Layout::Session => sd,
            Layout::Boots => ((BETWEEN * sd).powi(2) + sd * sd / f64::from(TRIALS_PER_BOOT)).sqrt(),
        }
    }
}

/// One row of the table: a layout, a noise, a range and a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub layout: Layout,
    pub noise: &'static str,
    pub levels: usize,
    /// The step, in units of E.
    pub step: f64,
    /// E, relative to the good levels' mean; δ of the bisection is E / 2.
    pub margin_of_error: f64,
    /// The ends' comparison found a regression (on A/A: a false one).
    pub regression: Rate,
    /// Found, and the first bad level is the true one.
    pub right: Rate,
    /// Found or narrowed, and the answer excludes the true first bad level.
    pub wrong: Rate,
    /// Narrowed to a range that contains the true first bad level.
    pub narrowed: Rate,
    /// Means per bisection: levels measured, units (trials or boots), trials.
    pub levels_measured: f64,
    pub units: f64,
    pub trials: f64,
    /// Units spent over those of measuring every level with [`REFERENCE_UNITS`].
    pub cost: f64,
    /// The goals this row misses.
    pub misses: Vec<String>,
}

/// What the suite measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectResult {
    pub rows: Vec<Row>,
    pub misses: Vec<String>,
}

/// One bisection's outcome against the truth.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    regression: u64,
    right: u64,
    wrong: u64,
    narrowed: u64,
    levels: u64,
    units: u64,
}

impl Tally {
    fn merge(self, o: Tally) -> Tally {
        Tally {
            regression: self.regression + o.regression,
            right: self.right + o.right,
            wrong: self.wrong + o.wrong,
            narrowed: self.narrowed + o.narrowed,
            levels: self.levels + o.levels,
            units: self.units + o.units,
        }
    }
}

/// The bisection's settings for a unit of sd `unit_sd`: margin's defaults, δ = E / 2.
pub fn settings(layout: Layout, margin_of_error: f64) -> BisectSettings {
    let unit = match layout {
        Layout::Session => Unit::Trial,
        Layout::Boots => Unit::Boot,
    };
    BisectSettings { threshold: margin_of_error / 2.0, unit, ..BisectSettings::default() }
}

/// E relative to the mean: t(0.975, n − 1) · sd / √n of a unit, n = [`REFERENCE_UNITS`].
pub fn margin_of_error(layout: Layout) -> f64 {
    let n = f64::from(REFERENCE_UNITS);
    let t = t_quantile(0.975, n - 1.0).expect("a valid quantile");
    t * layout.unit_sd(CV * CENTRE) / n.sqrt() / CENTRE
}

/// One simulated bisection of `levels` levels, a step of `step` E at a random level.
fn bisect_once(layout: Layout, shape: Shape, levels: usize, step: f64, rng: &mut Pcg64) -> Tally {
    let e = margin_of_error(layout);
    let sd = CV * CENTRE;
    let first_bad = 1 + (rng.random::<f64>() * (levels - 1) as f64) as usize;
    let mean = |level: usize| if level >= first_bad { CENTRE * (1.0 + step * e) } else { CENTRE };
    let mut b = Bisection::new(0, levels - 1, settings(layout, e)).expect("valid settings");
    let answer = loop {
        match b.next() {
            Next::Measure(level) => {
                let value = match layout {
                    Layout::Session => draw(shape, mean(level), sd, rng),
                    Layout::Boots => {
                        let offset = draw(shape, 0.0, BETWEEN * sd, rng);
                        let m = TRIALS_PER_BOOT;
                        (0..m).map(|_| draw(shape, mean(level) + offset, sd, rng)).sum::<f64>() / f64::from(m)
                    }
                };
                b.record(level, value).expect("the level asked for, a finite value");
            }
            Next::Done(answer) => break answer,
        }
    };
    let mut t = Tally {
        regression: u64::from(b.steps().first().is_some_and(|s| s.decision == Decision::Regression)),
        levels: b.levels_measured() as u64,
        units: b.units(),
        ..Tally::default()
    };
    if let (Some(good), Some(bad)) = (answer.last_good, answer.first_bad) {
        let contains = good < first_bad && first_bad <= bad;
        match (answer.outcome, contains) {
            (Outcome::Found, true) => t.right = 1,
            (Outcome::Narrowed, true) => t.narrowed = 1,
            _ => t.wrong = 1,
        }
    }
    t
}

/// Simulates one row.
pub fn run_row(
    layout: Layout,
    (noise, shape): (&'static str, Shape),
    levels: usize,
    step: f64,
    options: &Options,
) -> Row {
    use rayon::prelude::*;
    let name = format!("bisect-{}-{noise}-{levels}-{step}", layout.label());
    let t = (0..options.experiments)
        .into_par_iter()
        .map(|i| {
            let mut rng = Pcg64::seed_from_u64(experiment_seed(options.seed, &name, 0, i));
            bisect_once(layout, shape, levels, step, &mut rng)
        })
        .reduce(Tally::default, Tally::merge);
    let n = options.experiments;
    let targeted = step >= 2.0 && levels == 64;
    let regression =
        Rate::new(t.regression, n, (step == 0.0).then_some(Goal::AtMost { alpha: FALSE_REGRESSION }));
    let right = Rate::new(t.right, n, targeted.then_some(Goal::AtLeast { level: RIGHT }));
    let wrong = Rate::new(t.wrong, n, targeted.then_some(Goal::AtMost { alpha: WRONG }));
    let narrowed = Rate::new(t.narrowed, n, None);
    let per = |x: u64| x as f64 / n.max(1) as f64;
    let units = per(t.units);
    let trials = match layout {
        Layout::Session => units,
        Layout::Boots => units * f64::from(TRIALS_PER_BOOT),
    };
    let cost = units / (levels as f64 * f64::from(REFERENCE_UNITS));
    let mut misses = Vec::new();
    for (rate, what) in [(&regression, "false regression"), (&right, "right level"), (&wrong, "wrong")] {
        if rate.misses {
            misses.push(what.to_owned());
        }
    }
    if step == 2.0
        && let Some(&(_, most)) = COST.iter().find(|(l, _)| *l == levels)
        && cost > most
    {
        misses.push("cost".to_owned());
    }
    Row {
        layout,
        noise,
        levels,
        step,
        margin_of_error: margin_of_error(layout),
        regression,
        right,
        wrong,
        narrowed,
        levels_measured: per(t.levels),
        units,
        trials,
        cost,
        misses,
    }
}

/// Runs every row.
pub fn run(options: &Options) -> BisectResult {
    let mut rows = Vec::new();
    let mut misses = Vec::new();
    for layout in [Layout::Session, Layout::Boots] {
        for noise in [("normal", Shape::Normal), ("t(3)", Shape::StudentT3)] {
            for levels in RANGES {
                for step in STEPS {
                    let row = run_row(layout, noise, levels, step, options);
                    for m in &row.misses {
                        misses.push(format!(
                            "{} {} {} levels {} E: {m}",
                            layout.label(),
                            noise.0,
                            levels,
                            step
                        ));
                    }
                    rows.push(row);
                }
            }
        }
    }
    BisectResult { rows, misses }
}

/// The table, in Markdown.
pub fn tables(result: &BisectResult, experiments: u64) -> String {
    let e = |layout| margin_of_error(layout) * 100.0;
    let mut out = format!(
        "\nBisection: {experiments} simulated bisections per row, one step of the given size (in E, the \
         per-level margin of error of {REFERENCE_UNITS} units: {:.2} % in a session, {:.2} % across boots) \
         at a random level, or none; δ = E / 2; a boot runs {TRIALS_PER_BOOT} trials, shifted by a boot \
         offset of sd {BETWEEN} × a trial's. Rates in % (± one SE); ✗ misses its goal: regression claimed on \
         A/A ≤ {} %, at ≥ 2 E in 64 levels right ≥ {} % and wrong ≤ {} %, cost ≤ 25 % of all 64 levels, \
         ≤ 3 % of all 1 024.\n\n",
        e(Layout::Session),
        e(Layout::Boots),
        FALSE_REGRESSION * 100.0,
        RIGHT * 100.0,
        WRONG * 100.0
    );
    out.push_str(
        "| unit | noise | levels | step | regression claimed | right level | wrong | narrowed, contains it | \
         levels measured | units (trials) | cost vs all levels |\n\
         | --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n",
    );
    let pct = |r: &Rate| format!("{:.1} ±{:.1}{}", r.rate * 100.0, r.se * 100.0, r.mark());
    for row in &result.rows {
        let units = match row.layout {
            Layout::Session => format!("{:.0}", row.units),
            Layout::Boots => format!("{:.0} ({:.0})", row.units, row.trials),
        };
        let cost_mark = if row.misses.iter().any(|m| m == "cost") { " ✗" } else { "" };
        let located = |r: &Rate| if row.step == 0.0 { "–".to_owned() } else { pct(r) };
        out.push_str(&format!(
            "| {} | {} | {} | {} E | {} | {} | {} | {} | {:.1} | {units} | {:.1} %{cost_mark} |\n",
            match row.layout {
                Layout::Session => "trial",
                Layout::Boots => "boot",
            },
            row.noise,
            row.levels,
            row.step,
            pct(&row.regression),
            located(&row.right),
            located(&row.wrong),
            located(&row.narrowed),
            row.levels_measured,
            row.cost * 100.0,
        ));
    }
    if !result.misses.is_empty() {
        out.push_str(&format!("\nMissed: {}\n", result.misses.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The suite's targets at a reduced size: 64 levels, a step of 2 E and none, trials
    /// in a session, 300 bisections each at a fixed seed. Tolerances are 3 SE.
    #[test]
    fn a_step_of_two_margins_in_64_levels_is_found_and_cheaply() {
        let options = Options { experiments: 300, seed: 20240613, filters: Vec::new() };
        let se = |p: f64| 3.0 * (p * (1.0 - p) / 300.0).sqrt();
        let row = run_row(Layout::Session, ("normal", Shape::Normal), 64, 2.0, &options);
        assert!(row.right.rate >= RIGHT - se(RIGHT), "right {:?}", row.right);
        assert!(row.wrong.rate <= WRONG + se(WRONG), "wrong {:?}", row.wrong);
        assert_eq!(row.right.hits + row.wrong.hits + row.narrowed.hits, row.regression.hits);
        assert!(row.cost <= 0.3, "cost {}", row.cost);
        // about log₂ 64 levels besides the ends
        assert!((7.0..=9.0).contains(&row.levels_measured), "{}", row.levels_measured);
        let aa = run_row(Layout::Session, ("normal", Shape::Normal), 64, 0.0, &options);
        assert!(aa.regression.rate <= FALSE_REGRESSION + se(FALSE_REGRESSION), "{:?}", aa.regression);
        assert_eq!(aa.right.hits + aa.narrowed.hits + aa.wrong.hits, aa.regression.hits);
        assert!((aa.levels_measured - 2.0).abs() < 0.1, "A/A measures the ends: {}", aa.levels_measured);
    }

    #[test]
    fn the_margin_of_error_is_that_of_ten_units() {
        // t(0.975, 9) = 2.262157: 5 % of 10 s over √10 trials
        assert!((margin_of_error(Layout::Session) - 2.262157 * 0.05 / 10f64.sqrt()).abs() < 1e-6);
        // a boot's mean: √(1 + 1/5) × a trial's sd
        let ratio = margin_of_error(Layout::Boots) / margin_of_error(Layout::Session);
        assert!((ratio - 1.2f64.sqrt()).abs() < 1e-12);
    }
}
