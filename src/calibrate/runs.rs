//! The runs as a level, calibrated (docs/statistics.md, Runs as a level): K labelled runs
//! of one comparison (a: baseline, b: the level), each run shifting both levels alike by a
//! period of its own and, where the runs truly differ, the effect too (a between-run sd
//! τ of the log-ratio around the true mean effect). Each experiment is written into an
//! in-memory store, its runs found by [`labelled`] and compared and pooled by [`across`],
//! what the report and `margin history` run. Measured: how often a difference of the mean
//! effect is claimed where there is none, how often the pooled interval covers the mean
//! effect, how often "depends on the run" is said, and how often "holds in all runs".

use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{draw, experiment_seed, standard_normal};
use super::{ALPHA, Goal, MIN_COVERAGE, Options, Rate};
use crate::analyze::MemoryStore;
use crate::analyze::runs::{across, labelled};
use crate::summary::across_runs::RunsAnswer;
use vocab::{Better, MeanKind};

/// Trials per level in each run, and their CV.
const TRIALS: u32 = 5;
const CV: f64 = 0.05;
/// How much a run's period shifts both levels (sd of the log): large, as the lab saw.
const PERIOD_SD: f64 = 0.1;
/// The runs of each check, the between-run sds τ of the effect (of the log-ratio), and
/// the true mean effects.
const RUNS: [u32; 3] = [2, 3, 5];
const TAUS: [f64; 2] = [0.0, 0.05];
pub const TRUTHS: [f64; 2] = [1.0, 1.1];

const YAML: &str = "name: calibrate\nmatrix:\n  v: [a, b]\nrun: \"true\"\nmetrics:\n  value: { regex: '([0-9.]+)', \
                    unit: s, better: lower }\nanalysis:\n  compare:\n    - { factor: v, baseline: a }\n";

/// One check's rates, truth by truth (in the order of [`TRUTHS`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunsRow {
    pub name: String,
    pub runs: u32,
    pub tau: f64,
    /// The pooled interval holds the true mean effect.
    pub coverage: Vec<Rate>,
    /// "depends on the run" said.
    pub depends: Vec<Rate>,
    /// "holds in all runs" said.
    pub holds: Vec<Rate>,
    /// At a true 0: a difference of the mean effect claimed (holds, or pooled with an
    /// interval that excludes no change).
    pub false_claims: Rate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunsResult {
    pub rows: Vec<RunsRow>,
    pub misses: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    pooled: bool,
    covered: bool,
    depends: bool,
    holds: bool,
    claimed: bool,
}

/// One experiment: `runs` labelled runs, each its period and its own effect.
fn one(empty: &MemoryStore, runs: u32, tau: f64, truth: f64, seed: u64) -> Result<Seen, String> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut store = empty.clone();
    for run in 1..=runs {
        store.session(&format!("s{run}"), "sim", &[("kernel", "sim")]);
        if let Some(s) = store.snapshot.sessions.last_mut() {
            s.label = Some(format!("run{run}"));
        }
        let period = 10.0 * (PERIOD_SD * standard_normal(&mut rng)).exp();
        let effect = truth * (tau * standard_normal(&mut rng)).exp();
        for _ in 0..TRIALS {
            for (level, mean) in [("a", period), ("b", period * effect)] {
                let x = draw(Shape::Normal, mean, CV * mean, &mut rng);
                store.trial(&[("v", level)], &[("value", x)]);
            }
        }
    }
    let (spans, trials) = labelled(&store.exp, &store.plan, &store.records, &store.snapshot.sessions);
    let names: Vec<String> = spans.iter().map(|s| s.name.clone()).collect();
    let settings = crate::analyze::settings::settings(&store.exp.spec);
    let c = across(&trials, &names, &settings).into_iter().next().ok_or("no comparison across the runs")?;
    let interval = c.ci_low.zip(c.ci_high);
    let excludes = interval.is_some_and(|(l, h)| l > 1.0 || h < 1.0);
    Ok(Seen {
        pooled: interval.is_some(),
        covered: interval.is_some_and(|(l, h)| l <= truth && truth <= h),
        depends: c.answer == RunsAnswer::DependsOnTheRun,
        holds: c.answer == RunsAnswer::Holds,
        claimed: c.answer == RunsAnswer::Holds || (c.answer == RunsAnswer::Pooled && excludes),
    })
}

/// Every check, on every core.
pub fn run(options: &Options) -> RunsResult {
    let mut empty = MemoryStore::load("experiments/calibrate.yaml", YAML).expect("the check's file is valid");
    empty.metric("value", "s", Better::Lower, MeanKind::Arithmetic);
    let (mut rows, mut misses) = (Vec::new(), Vec::new());
    for runs in RUNS {
        for tau in TAUS {
            let name = format!("runs-k{runs}-tau{}", (tau * 100.0).round());
            let (mut coverage, mut depends, mut holds) = (Vec::new(), Vec::new(), Vec::new());
            let mut false_claims = Rate::new(0, 0, None);
            for (t, &truth) in TRUTHS.iter().enumerate() {
                let seen: Vec<Result<Seen, String>> = super::in_parallel_map(options.experiments, |i| {
                    one(&empty, runs, tau, truth, experiment_seed(options.seed, &name, t, i))
                });
                let ok: Vec<Seen> = seen.iter().filter_map(|s| s.as_ref().ok().copied()).collect();
                if ok.len() < seen.len() {
                    misses.push(format!("{name}: {} experiments not analysed", seen.len() - ok.len()));
                }
                let count = |f: fn(&Seen) -> bool| ok.iter().filter(|s| f(s)).count() as u64;
                let pooled = count(|s| s.pooled);
                let goal = Some(Goal::AtLeast { level: MIN_COVERAGE });
                coverage.push(Rate::new(count(|s| s.covered), pooled, goal));
                let at_alpha = (tau == 0.0 && truth == 1.0).then_some(Goal::AtMost { alpha: ALPHA });
                depends.push(Rate::new(count(|s| s.depends), ok.len() as u64, at_alpha));
                holds.push(Rate::new(count(|s| s.holds), ok.len() as u64, None));
                if truth == 1.0 {
                    false_claims =
                        Rate::new(count(|s| s.claimed), ok.len() as u64, Some(Goal::AtMost { alpha: ALPHA }));
                }
            }
            for (what, r) in [
                ("coverage 0 %", &coverage[0]),
                ("coverage +10 %", &coverage[1]),
                ("false claims", &false_claims),
            ] {
                if r.misses {
                    misses.push(format!("{name}: {what}"));
                }
            }
            if depends[0].misses {
                misses.push(format!("{name}: depends on the run said of agreeing runs"));
            }
            rows.push(RunsRow { name, runs, tau, coverage, depends, holds, false_claims });
        }
    }
    RunsResult { rows, misses }
}

/// The table, in Markdown.
pub fn tables(result: &RunsResult, experiments: u64) -> String {
    let rate = |r: &Rate| {
        if r.of == 0 {
            return "–".to_owned();
        }
        format!("{:.1} ±{:.1}{}", r.rate * 100.0, r.se * 100.0, r.mark())
    };
    let mut out = format!(
        "\nRuns as a level: K labelled runs of one comparison, {TRIALS} trials per level in each (normal, CV 5 %), \
         each run shifting both levels by a period of its own (sd {PERIOD_SD} of the log) and, with τ > 0, the \
         effect too (sd τ of the log-ratio around the true mean effect); {experiments} experiments per truth. \
         Goals: coverage of the mean effect ≥ 94 %; false claims and \"depends\" of agreeing runs (τ = 0) at \
         most α + 3 SE.\n\n\
         | check | false: claimed 0 % | coverage 0 % | coverage +10 % | depends 0 % | depends +10 % | holds +10 % |\n\
         | --- | --: | --: | --: | --: | --: | --: |\n"
    );
    for r in &result.rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.name,
            rate(&r.false_claims),
            rate(&r.coverage[0]),
            rate(&r.coverage[1]),
            rate(&r.depends[0]),
            rate(&r.depends[1]),
            rate(&r.holds[1]),
        ));
    }
    out.push_str(
        "\nNames: runs-kK-tauT = K runs, a between-run sd of the effect of T % (0: the runs truly agree).\n",
    );
    for m in &result.misses {
        out.push_str(&format!("✗ {m}\n"));
    }
    out
}
