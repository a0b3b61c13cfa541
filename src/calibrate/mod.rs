//! The calibration suite (`margin calibrate`): does margin keep the error rates it
//! states? Experiments with a known truth are simulated scenario by scenario — few
//! trials, skewed, heavy-tailed, contaminated and quantised values, paired designs,
//! rates, sessions that shift their trials, adaptive repetitions — written into an
//! in-memory store and analysed by [`statistics`](crate::analyze::statistics), the
//! analysis the report's summary is built on (every cell, comparison and verdict; not the
//! warnings about how trials ran, which no verdict reads); adaptive repetitions stop by the runner's own rule
//! ([`crate::analyze::stopping::Rule::is_done`]). Per scenario it counts how often a difference
//! is claimed where there is none, how often the interval of the ratio covers the truth,
//! and how often a true change of 10 % and 20 % is found, each with its standard error,
//! against the goals of docs/statistics.md.
//!
//! Everything is determined by the seed: each experiment has its own generator, seeded
//! from the seed, the scenario's name, the truth and its index.

pub mod answers;
pub mod bisect;
pub mod chain;
pub mod drift;
mod error;
pub mod order;
pub mod regimes;
pub mod runs;
pub mod scenario;
pub mod series;
pub mod simulate;
pub mod table;

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

pub use error::CalibrateError;
pub use scenario::{Layout, OutlierSetting, Scenario, Shape, TrialsPerCell};
pub use simulate::{PreparedScenario, SimCell, SimOutcome, Simulated, experiment_seed, simulate, true_ratio};
use stats::runs::{RunsNeeded, runs_needed};
use stats::verdict::VerdictKind;

/// The true ratios simulated: no change, +10 %, +20 %.
pub const TRUTHS: [f64; 3] = [1.0, 1.1, 1.2];
/// The nominal error rate of margin's default 95 % intervals.
pub const ALPHA: f64 = 0.05;
/// The coverage an interval must reach (docs/statistics.md, Calibration).
pub const MIN_COVERAGE: f64 = 0.94;
/// Adaptive repetitions may take at most this many times the fixed n that reaches the
/// target (docs/statistics.md, Calibration).
pub const ADAPTIVE_N_FACTOR: f64 = 1.15;
/// The default number of experiments per scenario and truth: the full suite in about
/// five minutes on two cores, in a release build, with a standard error of 0.34 % on a
/// false-claim rate of 5 % (the goal's tolerance, α + 2 SE, is then 5.7 %).
pub const DEFAULT_EXPERIMENTS: u64 = 4000;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Experiments per scenario and truth.
    pub experiments: u64,
    pub seed: u64,
    /// Run the scenarios whose name contains one of these (all when empty).
    pub filters: Vec<String>,
}

/// A count out of a number of experiments, with its uncertainty and goal.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub hits: u64,
    pub of: u64,
    pub rate: f64,
    /// Binomial standard error √(p(1 − p)/n) of the estimate.
    pub se: f64,
    /// Wilson's 95 % interval.
    pub wilson_low: f64,
    pub wilson_high: f64,
    /// What the rate should be, if anything.
    pub goal: Option<Goal>,
    /// The rate is worse than its goal beyond chance: a false-claim rate more than 3
    /// standard errors above α (docs/statistics.md, Calibration, on why 3).
    pub misses: bool,
    /// A false-claim rate 2–3 standard errors above α: among the table's hundreds of
    /// rates a few land here by chance alone; a re-run with more experiments tells.
    pub doubtful: bool,
}

/// What a rate should be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Goal {
    /// A false-claim rate: missed when above α + 3 standard errors (at α), doubtful
    /// between 2 and 3.
    AtMost { alpha: f64 },
    /// A coverage: missed when below.
    AtLeast { level: f64 },
    /// Never: missed on the first claim (one session per level: the between-session
    /// variation is unmeasured).
    Never,
}

impl Rate {
    pub fn new(hits: u64, of: u64, goal: Option<Goal>) -> Rate {
        let n = of as f64;
        let rate = if of == 0 { f64::NAN } else { hits as f64 / n };
        let se = (rate * (1.0 - rate) / n).sqrt();
        let (wilson_low, wilson_high) = wilson(hits, of);
        // the excess over α in standard errors at α (the null's own spread)
        let excess = match goal {
            Some(Goal::AtMost { alpha }) if of > 0 => (rate - alpha) / (alpha * (1.0 - alpha) / n).sqrt(),
            _ => f64::NEG_INFINITY,
        };
        let misses = match goal {
            _ if of == 0 => false,
            Some(Goal::AtMost { .. }) => excess > MISS_SE,
            Some(Goal::AtLeast { level }) => rate < level,
            Some(Goal::Never) => hits > 0,
            None => false,
        };
        let doubtful = !misses && excess > DOUBT_SE;
        Rate { hits, of, rate, se, wilson_low, wilson_high, goal, misses, doubtful }
    }

    /// The mark after the rate in a table: ` ✗` missed, ` ?` doubtful, else nothing.
    pub fn mark(&self) -> &'static str {
        if self.misses {
            " ✗"
        } else if self.doubtful {
            " ?"
        } else {
            ""
        }
    }
}

/// A false-claim rate misses its goal when it lies this many standard errors above α.
/// The suite checks about 170 false-claim rates; were every one exactly at α, one-sided
/// 2 SE would mark about 4 of them by chance alone, 3 SE about 0.2 (docs/statistics.md,
/// Calibration).
pub const MISS_SE: f64 = 3.0;
/// Between this and [`MISS_SE`] standard errors above α a rate is doubtful: worth a
/// re-run with more experiments and another seed.
pub const DOUBT_SE: f64 = 2.0;

/// Wilson's score interval at 95 %.
pub fn wilson(hits: u64, of: u64) -> (f64, f64) {
    if of == 0 {
        return (0.0, 1.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let (n, p) = (of as f64, hits as f64 / of as f64);
    let denominator = 1.0 + Z * Z / n;
    let centre = (p + Z * Z / (2.0 * n)) / denominator;
    let half = Z * (p * (1.0 - p) / n + Z * Z / (4.0 * n * n)).sqrt() / denominator;
    // exact at the ends, where the subtraction would leave a rounding error
    let low = if hits == 0 { 0.0 } else { (centre - half).max(0.0) };
    let high = if hits == of { 1.0 } else { (centre + half).min(1.0) };
    (low, high)
}

/// The verdicts that say a difference is real, by their names in summary.json: beyond
/// the band, within it, or of a size not yet settled (`uncertain_size`, the part of the
/// old `within_band` whose interval reaches across ±δ). Matched by name so that a verdict
/// added later is not counted as a claim unless it is listed here.
pub const CLAIMING_VERDICTS: [&str; 3] = ["significant", "within_band", "uncertain_size"];

/// Whether the verdict claims a difference (one of [`CLAIMING_VERDICTS`]).
pub fn claims_difference(verdict: VerdictKind) -> bool {
    serde_json::to_value(verdict)
        .ok()
        .and_then(|v| v.as_str().map(|name| CLAIMING_VERDICTS.contains(&name)))
        .unwrap_or(false)
}

/// Counts over the experiments of one scenario at one truth.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub experiments: u64,
    /// No comparison came out (the analysis refused the data).
    pub not_analysed: u64,
    /// The interval excludes a ratio of 1.
    pub excludes_one: u64,
    /// The verdict claims a difference: `significant` or `within_band`.
    pub claims: u64,
    /// margin gave an interval of the ratio, bounded or unbounded (not: no estimate).
    pub intervals: u64,
    /// The interval covers the true ratio (an unbounded one covers everything).
    pub covers: u64,
    /// `significant` and above 1: a true increase found.
    pub found_increase: u64,
    /// Some value was set aside as an outlier.
    pub set_aside: u64,
    /// Trials and cells over the experiments analysed.
    pub trials: u64,
    pub cells: u64,
    /// Boots of both levels (across boots), over the experiments analysed.
    pub units: u64,
    /// The index of the first experiment not analysed.
    pub first_failure: Option<u64>,
}

impl Tally {
    /// Counts one experiment's outcome at true ratio `truth`.
    pub fn add(&mut self, index: u64, outcome: &Result<SimOutcome, String>, truth: f64) {
        self.experiments += 1;
        let o = match outcome {
            Ok(o) => o,
            Err(_) => {
                self.not_analysed += 1;
                self.first_failure = Some(self.first_failure.map_or(index, |f| f.min(index)));
                return;
            }
        };
        if let Some((low, high)) = o.interval {
            self.excludes_one += u64::from(low > 1.0 || high < 1.0);
            // within a relative 1e-9 of the truth: a quantised scenario's truth is a sum over
            // the rounded normal (about 1e-13 off), and a robust interval of whole numbers
            // ends exactly on ratios such as 110/100 that the truth may miss by that much
            let slack = truth * 1e-9;
            self.covers += u64::from(low <= truth + slack && truth - slack <= high);
            self.intervals += 1;
        } else if o.verdict == VerdictKind::Unbounded {
            self.covers += 1;
            self.intervals += 1;
        }
        self.claims += u64::from(claims_difference(o.verdict));
        self.found_increase +=
            u64::from(o.verdict == VerdictKind::Significant && o.interval.is_some_and(|(low, _)| low > 1.0));
        self.set_aside += u64::from(o.set_aside);
        self.trials += o.trials;
        self.cells += o.cells;
        self.units += o.units;
    }

    fn merge(mut self, other: Tally) -> Tally {
        self.experiments += other.experiments;
        self.not_analysed += other.not_analysed;
        self.excludes_one += other.excludes_one;
        self.claims += other.claims;
        self.covers += other.covers;
        self.intervals += other.intervals;
        self.found_increase += other.found_increase;
        self.set_aside += other.set_aside;
        self.trials += other.trials;
        self.cells += other.cells;
        self.units += other.units;
        self.first_failure = match (self.first_failure, other.first_failure) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }

    /// Experiments with a comparison.
    pub fn analysed(&self) -> u64 {
        self.experiments - self.not_analysed
    }
}

/// One scenario's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioResult {
    pub name: String,
    pub group: &'static str,
    pub description: String,
    pub scenario: Scenario,
    /// Experiments simulated per truth.
    pub experiments: u64,
    /// Experiments without a comparison, over all truths (should be 0).
    pub not_analysed: u64,
    /// Why the first of those was not analysed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_analysed_why: Option<String>,
    /// At a true 0 %: the interval of the ratio excludes 1.
    pub false_interval: Rate,
    /// At a true 0 %: the verdict claims a difference (`significant` or `within_band`).
    pub false_claim: Rate,
    /// Coverage of the true ratio at a true 0 %, +10 %, +20 %, among the experiments
    /// margin gave an interval for (an unbounded one covers).
    pub coverage: Vec<TruthRate>,
    /// `significant` and higher, at a true +10 % and +20 %.
    pub power: Vec<TruthRate>,
    /// Trials per cell, averaged over every experiment of every truth.
    pub mean_trials: f64,
    /// Trials per cell at each true change (0 %, +10 %, +20 %).
    pub mean_trials_by_truth: Vec<f64>,
    /// Boots per level at each true change, when the levels are compared across boots.
    pub mean_boots_by_truth: Vec<f64>,
    /// Adaptive: the fixed n that reaches the target at this CV (at least `min`), and
    /// whether the mean exceeds 1.15 × it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_trials_for_target: Option<u32>,
    pub mean_trials_misses: bool,
    /// Experiments where some value was set aside as an outlier, over every truth.
    pub set_aside: Rate,
    /// The names of the rates that miss their goal.
    pub misses: Vec<String>,
    /// The names of the rates 2–3 standard errors above their goal.
    pub doubtful: Vec<String>,
}

/// A rate at one true change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TruthRate {
    /// The true change in %, nominal (0, 10, 20).
    pub change_pct: f64,
    /// The true ratio of the analysed means.
    pub ratio: f64,
    #[serde(flatten)]
    pub rate: Rate,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub margin_version: &'static str,
    pub seed: u64,
    pub experiments: u64,
    pub alpha: f64,
    pub min_coverage: f64,
    pub scenarios: Vec<ScenarioResult>,
    /// The checks of the answers beyond the verdicts ([`answers`]), in tables of their own.
    pub answers: Vec<answers::CheckResult>,
    /// The regime test's false alarms and power ([`regimes`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regimes: Option<regimes::RegimesResult>,
    /// The drift test's false alarms and power ([`drift`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<drift::DriftResult>,
    /// The order test's false alarms and power ([`order`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order: Option<order::OrderResult>,
    /// The change points of a series: false changes, steps found ([`series`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<series::SeriesResult>,
    /// The bisection's table ([`bisect`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bisect: Option<bisect::BisectResult>,
    /// The runs as a level ([`runs`]), when selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<runs::RunsResult>,
}

/// The name the drift test's tables are selected by (`--scenario drift`).
pub const DRIFT: &str = "drift";

/// The name the order test's tables are selected by (`--scenario order`).
pub const ORDER: &str = "order";

/// The name the regime test's tables are selected by (`--scenario regimes`).
pub const REGIMES: &str = "regimes";

/// The name the series' tables are selected by (`--scenario series`).
pub const SERIES: &str = "series";
/// The name the bisection's table is selected by (`--scenario bisect`).
pub const BISECT: &str = "bisect";
/// The name the runs' table is selected by (`--scenario runs`).
pub const RUNS: &str = "runs";

/// The scenarios `filters` select (all when empty), in table order. A filter is a part of
/// the name; `^` in front anchors it to the name's start, `$` behind to its end
/// (`^n5-cv5-normal$` is that one scenario, `n5-cv5-normal` also `rate-n5-cv5-normal-none`).
pub fn select(filters: &[String]) -> Vec<Scenario> {
    scenario::all()
        .into_iter()
        .filter(|s| filters.is_empty() || filters.iter().any(|f| matches(&s.name, f)))
        .collect()
}

fn matches(name: &str, filter: &str) -> bool {
    let (start, rest) = match filter.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, filter),
    };
    let (end, part) = match rest.strip_suffix('$') {
        Some(part) => (true, part),
        None => (false, rest),
    };
    match (start, end) {
        (true, true) => name == part,
        (true, false) => name.starts_with(part),
        (false, true) => name.ends_with(part),
        (false, false) => name.contains(part),
    }
}

/// Simulates every experiment of one scenario and tallies them, truth by truth.
pub fn run_scenario(scenario: &Scenario, options: &Options) -> Result<ScenarioResult, CalibrateError> {
    let prepared = PreparedScenario::new(scenario)?;
    let mut tallies = Vec::with_capacity(TRUTHS.len());
    let mut failure = None;
    for (t, &nominal) in TRUTHS.iter().enumerate() {
        let truth = true_ratio(scenario, nominal);
        let tally = in_parallel(options.experiments, |i| {
            let sim = simulate(&prepared, nominal, experiment_seed(options.seed, &scenario.name, t, i));
            let mut tally = Tally::default();
            tally.add(i, &sim.outcome, truth);
            tally
        });
        if failure.is_none()
            && let Some(i) = tally.first_failure
        {
            let sim = simulate(&prepared, nominal, experiment_seed(options.seed, &scenario.name, t, i));
            failure = sim.outcome.err();
        }
        tallies.push((nominal, truth, tally));
    }
    Ok(summarise(scenario, options.experiments, &tallies, failure))
}

/// The stack of each simulating thread: the main thread's 8 MiB, from which the report
/// calls [`statistics`](crate::analyze::statistics). It was 64 MiB while the analysis
/// built a polars table, whose frames in a debug build overflowed a rayon worker's
/// default 2 MiB; grouped from the trial columns, the reduced suite now runs in a debug
/// build with 2 MiB, so 8 leaves room to spare.
const STACK: usize = 8 << 20;

/// Tallies `count` experiments on a rayon pool of one worker per core ([`in_parallel_map`]).
/// Tallies are integer sums, so the result does not depend on which worker ran what.
fn in_parallel(count: u64, one: impl Fn(u64) -> Tally + Sync) -> Tally {
    in_parallel_map(count, one).into_iter().fold(Tally::default(), Tally::merge)
}

/// `one(i)` for every i below `count`, in the order of i, on a rayon pool of one worker
/// per core with [`STACK`]. Each worker takes the next experiment from a shared counter
/// until none is left, so the analysis's own parallel loops run on the worker that called
/// them (no hand-over to another pool for every cell), and a worker waiting inside one
/// never picks up a whole further experiment to nest on its stack: every worker is busy
/// with its own loop.
fn in_parallel_map<T: Send>(count: u64, one: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(count.max(1) as usize);
    let next = AtomicU64::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= count {
                return done;
            }
            done.push((i, one(i)));
        }
    };
    let mut all: Vec<(u64, T)> =
        match rayon::ThreadPoolBuilder::new().num_threads(threads).stack_size(STACK).build() {
            Ok(pool) => pool.broadcast(|_| work()).into_iter().flatten().collect(),
            // no threads to be had: do it here
            Err(_) => work(),
        };
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, t)| t).collect()
}

fn summarise(
    scenario: &Scenario,
    experiments: u64,
    tallies: &[(f64, f64, Tally)],
    why: Option<String>,
) -> ScenarioResult {
    let null = &tallies[0].2;
    let one_session = matches!(scenario.layout, Layout::Sessions { per_level: 1, .. });
    let alpha = Some(Goal::AtMost { alpha: ALPHA });
    let false_interval = Rate::new(null.excludes_one, null.analysed(), alpha);
    let false_claim =
        Rate::new(null.claims, null.analysed(), if one_session { Some(Goal::Never) } else { alpha });
    let change = |nominal: f64| ((nominal - 1.0) * 100.0).round();
    let coverage: Vec<TruthRate> = tallies
        .iter()
        .map(|&(nominal, ratio, t)| TruthRate {
            change_pct: change(nominal),
            ratio,
            rate: Rate::new(t.covers, t.intervals, Some(Goal::AtLeast { level: MIN_COVERAGE })),
        })
        .collect();
    let power: Vec<TruthRate> = tallies
        .iter()
        .filter(|(nominal, ..)| *nominal > 1.0)
        .map(|&(nominal, ratio, t)| TruthRate {
            change_pct: change(nominal),
            ratio,
            rate: Rate::new(t.found_increase, t.analysed(), None),
        })
        .collect();
    let all = tallies.iter().fold(Tally::default(), |a, (_, _, t)| a.merge(*t));
    let mean_trials = all.trials as f64 / all.cells.max(1) as f64;
    let mean_trials_by_truth: Vec<f64> =
        tallies.iter().map(|(_, _, t)| t.trials as f64 / t.cells.max(1) as f64).collect();
    // boots per level: both levels' over two per experiment
    let mean_boots_by_truth: Vec<f64> =
        tallies.iter().map(|(_, _, t)| t.units as f64 / (2 * t.analysed().max(1)) as f64).collect();
    let fixed_trials_for_target = match scenario.trials {
        TrialsPerCell::Adaptive { min, target, .. } => match runs_needed(scenario.cv, target, 1.0 - ALPHA) {
            Some(RunsNeeded::Runs(n)) => Some((n as u32).max(min)),
            _ => None,
        },
        TrialsPerCell::Fixed { .. } | TrialsPerCell::Verdict { .. } | TrialsPerCell::Boots { .. } => None,
    };
    let mean_trials_misses =
        fixed_trials_for_target.is_some_and(|n| mean_trials > ADAPTIVE_N_FACTOR * f64::from(n));
    let set_aside = Rate::new(all.set_aside, all.analysed(), None);

    let mut misses = Vec::new();
    let mut doubtful = Vec::new();
    for (r, name) in [(&false_interval, "false interval"), (&false_claim, "false claim")] {
        if r.misses {
            misses.push(name.to_owned());
        } else if r.doubtful {
            doubtful.push(name.to_owned());
        }
    }
    for c in &coverage {
        if c.rate.misses {
            misses.push(format!("coverage {:+}%", c.change_pct));
        }
    }
    if mean_trials_misses {
        misses.push("mean n".to_owned());
    }
    if all.not_analysed > 0 {
        misses.push("not analysed".to_owned());
    }
    ScenarioResult {
        name: scenario.name.clone(),
        group: scenario.group,
        description: scenario.describe(),
        scenario: scenario.clone(),
        experiments,
        not_analysed: all.not_analysed,
        not_analysed_why: why,
        false_interval,
        false_claim,
        coverage,
        power,
        mean_trials,
        mean_trials_by_truth,
        mean_boots_by_truth,
        fixed_trials_for_target,
        mean_trials_misses,
        set_aside,
        misses,
        doubtful,
    }
}

/// Runs the selected scenarios one after the other (each on every core), calling `each`
/// with every result as it comes.
pub fn run(options: &Options, mut each: impl FnMut(&ScenarioResult)) -> Result<Report, CalibrateError> {
    let scenarios = select(&options.filters);
    let checks = answers::select(&options.filters);
    let with = |name| options.filters.is_empty() || options.filters.iter().any(|f| matches(name, f));
    let (with_regimes, with_drift, with_order) = (with(REGIMES), with(DRIFT), with(ORDER));
    let (with_series, with_bisect, with_runs) = (with(SERIES), with(BISECT), with(RUNS));
    let tables = [with_regimes, with_drift, with_order, with_series, with_bisect, with_runs];
    if scenarios.is_empty() && checks.is_empty() && !tables.contains(&true) {
        let names: Vec<String> = scenario::all()
            .into_iter()
            .map(|s| s.name)
            .chain(answers::checks().into_iter().map(|c| c.name))
            .chain([
                REGIMES.to_owned(),
                DRIFT.to_owned(),
                ORDER.to_owned(),
                SERIES.to_owned(),
                BISECT.to_owned(),
                RUNS.to_owned(),
            ])
            .collect();
        return Err(CalibrateError::NoMatch { filters: options.filters.clone(), names });
    }
    if options.experiments == 0 {
        return Err(CalibrateError::NoExperiments);
    }
    let mut results = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        let result = run_scenario(scenario, options)?;
        each(&result);
        results.push(result);
    }
    let answers = checks.iter().map(|c| answers::run_check(c, options)).collect::<Result<Vec<_>, _>>()?;
    let regimes = if with_regimes { Some(regimes::run(options)?) } else { None };
    let drift = with_drift.then(|| drift::run(options));
    let order = with_order.then(|| order::run(options));
    let series = with_series.then(|| chain::with_chain(series::run(options), options));
    let bisect = with_bisect.then(|| bisect::run(options));
    let runs = with_runs.then(|| runs::run(options));
    Ok(Report {
        margin_version: env!("CARGO_PKG_VERSION"),
        seed: options.seed,
        experiments: options.experiments,
        alpha: ALPHA,
        min_coverage: MIN_COVERAGE,
        scenarios: results,
        answers,
        regimes,
        drift,
        order,
        series,
        bisect,
        runs,
    })
}

#[cfg(test)]
mod tests;
