//! The calibration of the answers beyond the verdicts, in tables of their own: does a
//! single value from the same distribution lie inside the 95 % prediction interval of
//! the other side 95 % of the time (docs/statistics.md, A single number against measured
//! runs), and does the effect pooled over contexts keep its coverage, with Welch's test
//! of "the effect differs" at α, when the true effect is the same in every context
//! (docs/statistics.md, Effects across the matrix)?
//!
//! Like the scenarios of the main table, every simulated experiment is an experiment
//! file, its trials written into an in-memory store and analysed by
//! [`statistics`], the analysis the report is built on; the rates are read from the
//! summary's `prediction` and `effects`.

use rand::SeedableRng;
use rand_pcg::Pcg64;
use serde::Serialize;

use super::scenario::Shape;
use super::simulate::{BLOCK_SD_LOG, WORK, draw, experiment_seed, standard_normal};
use super::{ALPHA, CalibrateError, Goal, MIN_COVERAGE, Options, Rate};
use crate::analyze::{MemoryStore, statistics};
use stats::pool::pool;
use stats::prediction::Place;
use vocab::{Better, MeanKind};

/// The within-cell CV of every check.
const CV: f64 = 0.05;
/// The true ratios of the effect checks: the same in every context.
pub const EFFECT_TRUTHS: [f64; 2] = [1.0, 1.1];

/// What one check simulates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CheckKind {
    /// Level b has one trial, level a `n`, all from one distribution.
    Prediction { n: u32, shape: Shape, mean: MeanKind },
    /// `contexts` levels of a second factor whose true centres differ (log-normal, sd
    /// 0.3 of the log); in each, a and b have `n` trials, b's centre the truth × a's;
    /// `unequal`: the CV is 2 % in every other context and 8 % in the rest.
    Effects { contexts: u32, n: u32, unequal: bool },
}

/// One check of the answers' tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// Unique; `--scenario` matches it as it matches the scenarios.
    pub name: String,
    pub kind: CheckKind,
    /// `outliers: { method: none }` instead of margin's default rule (named `…-none`):
    /// what the rule costs the check.
    pub outliers_none: bool,
}

/// Every check, in table order.
pub fn checks() -> Vec<Check> {
    let mut out = Vec::new();
    for (shape, mean, label) in [
        (Shape::Normal, MeanKind::Arithmetic, "normal"),
        (Shape::LogNormal, MeanKind::Arithmetic, "lognormal"),
        (Shape::Normal, MeanKind::Harmonic, "rate"),
    ] {
        for n in [3, 5, 10] {
            out.push(Check {
                name: format!("single-n{n}-cv5-{label}"),
                kind: CheckKind::Prediction { n, shape, mean },
                outliers_none: false,
            });
        }
    }
    for n in [3, 5] {
        for contexts in [2, 3, 5, 8] {
            out.push(Check {
                name: format!("effects-k{contexts}-n{n}-cv5"),
                kind: CheckKind::Effects { contexts, n, unequal: false },
                outliers_none: false,
            });
        }
    }
    for contexts in [3, 5, 8] {
        out.push(Check {
            name: format!("effects-k{contexts}-n5-cv2to8"),
            kind: CheckKind::Effects { contexts, n: 5, unequal: true },
            outliers_none: false,
        });
    }
    // What the default outlier rule costs the test of whether an effect differs, where
    // it is furthest above α (docs/statistics.md, Effects across the matrix).
    for n in [3, 5] {
        out.push(Check {
            name: format!("effects-k8-n{n}-cv5-none"),
            kind: CheckKind::Effects { contexts: 8, n, unequal: false },
            outliers_none: true,
        });
    }
    out
}

/// One check's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    pub name: String,
    pub description: String,
    pub check: Check,
    /// Experiments simulated per truth.
    pub experiments: u64,
    /// Experiments that gave no prediction or no pooled effect (should be 0).
    pub not_analysed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_analysed_why: Option<String>,
    /// Prediction: the single value inside the interval. Effects: the pooled interval
    /// covers the true ratio, at each of [`EFFECT_TRUTHS`].
    pub coverage: Vec<Rate>,
    /// Effects: "the effect differs" said at a true effect equal in every context, at
    /// each of [`EFFECT_TRUTHS`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub false_differs: Vec<Rate>,
    /// Effects, the alternatives not reported, for the record: the fixed-effect interval's
    /// coverage and Cochran's χ² test's "differs", at each of [`EFFECT_TRUTHS`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fixed_coverage: Vec<Rate>,
    /// … and Hartung–Knapp's over the contexts' own random-effects weights.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub own_coverage: Vec<Rate>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub q_false_differs: Vec<Rate>,
    /// Effects: the pooled interval's width in log units, averaged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_log_width: Option<f64>,
    pub misses: Vec<String>,
}

/// The checks `filters` select, by the rule of [`super::select`].
pub fn select(filters: &[String]) -> Vec<Check> {
    checks()
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| super::matches(&c.name, f)))
        .collect()
}

impl Check {
    pub fn describe(&self) -> String {
        match self.kind {
            CheckKind::Prediction { n, shape, mean } => format!(
                "one trial of b against {n} of a, CV 5 %, {}{}",
                shape.label(),
                if mean == MeanKind::Harmonic { ", rate, harmonic mean" } else { "" }
            ),
            CheckKind::Effects { contexts, n, unequal } => format!(
                "{contexts} contexts × {n} trials per level, CV {}, normal, the same true effect in every \
                 context{}",
                if unequal { "2 % and 8 % by turns" } else { "5 %" },
                if self.outliers_none { ", outliers: none" } else { "" }
            ),
        }
    }

    fn yaml(&self) -> String {
        let (unit, better, mean) = self.metric();
        let mut y = String::from("name: calibrate\nmatrix:\n  v: [a, b]\n");
        if let CheckKind::Effects { contexts, .. } = self.kind {
            let names: Vec<String> = (1..=contexts).map(|c| format!("c{c}")).collect();
            y.push_str(&format!("  ctx: [{}]\n", names.join(", ")));
        }
        let better = if better == Better::Higher { "higher" } else { "lower" };
        let mean = if mean == MeanKind::Harmonic { "harmonic" } else { "arithmetic" };
        y.push_str(&format!(
            "run: \"true\"\nmetrics:\n  value: {{ regex: '([0-9.]+)', unit: {unit}, better: {better}, mean: {mean} }}\n\
             analysis:\n  compare:\n    - {{ factor: v, baseline: a }}\n"
        ));
        if self.outliers_none {
            y.push_str("  outliers: { method: none }\n");
        }
        y
    }

    fn metric(&self) -> (&'static str, Better, MeanKind) {
        match self.kind {
            CheckKind::Prediction { mean: MeanKind::Harmonic, .. } => {
                ("MB/s", Better::Higher, MeanKind::Harmonic)
            }
            _ => ("s", Better::Lower, MeanKind::Arithmetic),
        }
    }
}

/// What one simulated experiment gave.
#[derive(Debug, Clone, Copy, Default)]
struct AnswerSeen {
    /// The reported interval covers the truth (prediction: the single value lies inside).
    covered: bool,
    /// "The effect differs" (Welch's test).
    differs: bool,
    /// ln(high / low) of the reported interval.
    width: f64,
    /// The fixed-effect interval, and Hartung–Knapp over the contexts' own weights, cover
    /// the truth; Cochran's χ² test says "differs".
    fixed_covered: bool,
    own_covered: bool,
    q_differs: bool,
}

type Seen = Result<AnswerSeen, String>;

/// Simulates and analyses one experiment of `check` at true ratio `truth`.
fn experiment(check: &Check, empty: &MemoryStore, truth: f64, seed: u64) -> Seen {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut store = empty.clone();
    store.session("s1", "sim", &[("kernel", "sim")]);
    match check.kind {
        CheckKind::Prediction { n, shape, mean } => {
            let one = |rng: &mut Pcg64| {
                let centre = if mean == MeanKind::Harmonic { 1.0 } else { 10.0 };
                let x = draw(shape, centre, CV * centre, rng);
                if mean == MeanKind::Harmonic { WORK / x } else { x }
            };
            for _ in 0..n {
                let x = one(&mut rng);
                store.trial(&[("v", "a")], &[("value", x)]);
            }
            let x = one(&mut rng);
            store.trial(&[("v", "b")], &[("value", x)]);
            let summary = statistics(&store.exp, &store.plan, &store.snapshot).map_err(|e| e.to_string())?;
            let p = summary
                .comparisons
                .first()
                .and_then(|c| c.prediction.as_ref())
                .ok_or_else(|| "no prediction".to_owned())?;
            Ok(AnswerSeen { covered: p.place == Place::Inside, ..AnswerSeen::default() })
        }
        CheckKind::Effects { contexts, n, unequal } => {
            for c in 1..=contexts {
                let ctx = format!("c{c}");
                let centre = 10.0 * (BLOCK_SD_LOG * standard_normal(&mut rng)).exp();
                let cv = match (unequal, c % 2) {
                    (false, _) => CV,
                    (true, 1) => 0.02,
                    (true, _) => 0.08,
                };
                for _ in 0..n {
                    for (level, mean) in [("a", centre), ("b", centre * truth)] {
                        let x = draw(Shape::Normal, mean, cv * mean, &mut rng);
                        store.trial(&[("v", level), ("ctx", &ctx)], &[("value", x)]);
                    }
                }
            }
            let summary = statistics(&store.exp, &store.plan, &store.snapshot).map_err(|e| e.to_string())?;
            let e = summary.effects.first().ok_or_else(|| "no pooled effect".to_owned())?;
            if e.contexts != contexts as usize {
                return Err(format!("{} of {contexts} contexts pooled", e.contexts));
            }
            // the alternatives, from the same log-ratios the summary pooled
            let ratios: Vec<_> = summary.comparisons.iter().filter_map(|c| c.log_ratio).collect();
            let pooled = pool(&ratios, summary.settings.confidence).ok_or("no pool")?;
            Ok(AnswerSeen {
                covered: e.ci_low <= truth && truth <= e.ci_high,
                differs: e.differs,
                width: (e.ci_high / e.ci_low).ln(),
                fixed_covered: pooled.fixed_low <= truth && truth <= pooled.fixed_high,
                own_covered: pooled.own_low <= truth && truth <= pooled.own_high,
                q_differs: pooled.q_p < ALPHA,
            })
        }
    }
}

/// Simulates every experiment of one check, truth by truth, on every core.
pub fn run_check(check: &Check, options: &Options) -> Result<CheckResult, CalibrateError> {
    let empty = {
        let mut s = MemoryStore::load("experiments/calibrate.yaml", &check.yaml())
            .map_err(|source| CalibrateError::Experiment { what: format!("check {}", check.name), source })?;
        let (unit, better, mean) = check.metric();
        s.metric("value", unit, better, mean);
        s
    };
    let truths: &[f64] = match check.kind {
        CheckKind::Prediction { .. } => &[1.0],
        CheckKind::Effects { .. } => &EFFECT_TRUTHS,
    };
    let mut coverage = Vec::new();
    let mut false_differs = Vec::new();
    let (mut fixed_coverage, mut own_coverage, mut q_false_differs) = (Vec::new(), Vec::new(), Vec::new());
    let (mut not_analysed, mut why, mut width, mut widths) = (0, None, 0.0, 0u64);
    for (t, &truth) in truths.iter().enumerate() {
        let seen: Vec<Seen> = super::in_parallel_map(options.experiments, |i| {
            experiment(check, &empty, truth, experiment_seed(options.seed, &check.name, t, i))
        });
        let ok: Vec<AnswerSeen> = seen.iter().filter_map(|s| s.as_ref().ok().copied()).collect();
        not_analysed += seen.len() - ok.len();
        if why.is_none() {
            why = seen.iter().find_map(|s| s.as_ref().err().cloned());
        }
        let of = ok.len() as u64;
        coverage.push(Rate::new(
            ok.iter().filter(|s| s.covered).count() as u64,
            of,
            Some(Goal::AtLeast { level: MIN_COVERAGE }),
        ));
        if let CheckKind::Effects { .. } = check.kind {
            let count = |f: fn(&AnswerSeen) -> bool| ok.iter().filter(|s| f(s)).count() as u64;
            false_differs.push(Rate::new(count(|s| s.differs), of, Some(Goal::AtMost { alpha: ALPHA })));
            fixed_coverage.push(Rate::new(count(|s| s.fixed_covered), of, None));
            own_coverage.push(Rate::new(count(|s| s.own_covered), of, None));
            q_false_differs.push(Rate::new(count(|s| s.q_differs), of, None));
            width += ok.iter().map(|s| s.width).sum::<f64>();
            widths += of;
        }
    }
    let mut misses = Vec::new();
    for (r, truth) in coverage.iter().zip(truths) {
        if r.misses {
            misses.push(format!("coverage {:+}%", ((truth - 1.0) * 100.0).round()));
        }
    }
    for (r, truth) in false_differs.iter().zip(truths) {
        if r.misses {
            misses.push(format!("false differs {:+}%", ((truth - 1.0) * 100.0).round()));
        }
    }
    if not_analysed > 0 {
        misses.push("not analysed".to_owned());
    }
    Ok(CheckResult {
        name: check.name.clone(),
        description: check.describe(),
        check: check.clone(),
        experiments: options.experiments,
        not_analysed: not_analysed as u64,
        not_analysed_why: why,
        coverage,
        false_differs,
        mean_log_width: (widths > 0).then(|| width / widths as f64),
        fixed_coverage,
        own_coverage,
        q_false_differs,
        misses,
    })
}

/// The tables of the checks: one for the prediction interval, one for the pooled effects.
pub fn tables(results: &[CheckResult]) -> String {
    let rate = |r: &Rate| {
        if r.of == 0 {
            return "–".to_owned();
        }
        format!("{:.1} ±{:.1}{}", r.rate * 100.0, r.se * 100.0, r.mark())
    };
    let mut out = String::new();
    let single: Vec<&CheckResult> =
        results.iter().filter(|r| matches!(r.check.kind, CheckKind::Prediction { .. })).collect();
    if !single.is_empty() {
        out.push_str(
            "\nA single number against measured runs: a single value of b drawn from a's distribution lies \
             inside the 95 % prediction interval of one more trial of a (goal ≥ 94 %).\n\n\
             | check | single value inside the prediction interval |\n| --- | --: |\n",
        );
        for r in single {
            out.push_str(&format!("| {} | {} |\n", r.name, rate(&r.coverage[0])));
        }
    }
    let effects: Vec<&CheckResult> =
        results.iter().filter(|r| matches!(r.check.kind, CheckKind::Effects { .. })).collect();
    if !effects.is_empty() {
        out.push_str(
            "\nEffects across the matrix: the same true effect in every context; the pooled interval covers it \
             (goal ≥ 94 %), and \"the effect differs\" is said at most α + 3 SE of the time (? at 2–3 SE).\n\n\
             Reported: Hartung–Knapp's interval with the spread pooled over the contexts, and Welch's test; \
             for the record, not reported: Hartung–Knapp over each context's own variance (HK own), the \
             fixed-effect interval (FE) and Cochran's χ² test of Q.\n\n\
             | check | coverage 0 % | coverage +10 % | false: differs 0 % | false: differs +10 % | mean width \
             | HK own coverage 0 % | HK own coverage +10 % | FE coverage 0 % | FE coverage +10 % \
             | Q χ² false: differs 0 % | Q χ² false: differs +10 % |\n\
             | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |\n",
        );
        for r in effects {
            let width = r.mean_log_width.map_or("–".to_owned(), |w| format!("×{:.3}", w.exp()));
            let mut cells = vec![r.name.clone()];
            cells.extend(r.coverage.iter().chain(&r.false_differs).map(rate));
            cells.push(width);
            cells.extend(r.own_coverage.iter().chain(&r.fixed_coverage).chain(&r.q_false_differs).map(rate));
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    for r in results.iter().filter(|r| r.not_analysed > 0) {
        out.push_str(&format!(
            "\n{}: {} experiments not analysed: {}\n",
            r.name,
            r.not_analysed,
            r.not_analysed_why.as_deref().unwrap_or("?")
        ));
    }
    if !results.is_empty() {
        out.push_str(
            "\nNames: single-nN = N trials of a against one of b; effects-kK-nN = K contexts, N trials per cell (cv2to8: CV 2 % and 8 % in turn); \
             mean width = the pooled interval's high / low, averaged in logs.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulated experiments are what the checks say: a single trial of b, and one
    /// pooled effect over every context, read from the real analysis.
    #[test]
    fn a_few_experiments_of_each_kind_are_analysed() {
        let options = Options { experiments: 20, seed: 3, filters: Vec::new() };
        for name in ["single-n3-cv5-rate", "effects-k3-n5-cv5"] {
            let check = checks().into_iter().find(|c| c.name == name).unwrap();
            let r = run_check(&check, &options).unwrap();
            assert_eq!(r.not_analysed, 0, "{name}: {:?}", r.not_analysed_why);
            assert!(r.coverage.iter().all(|c| c.of == 20 && c.rate > 0.5), "{name}: {:?}", r.coverage);
        }
    }
}
