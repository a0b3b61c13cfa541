//! The stopping rule: whether a cell has enough trials — a fixed count, the margin of
//! error of its watched metrics within the target (adaptive), or every comparison it
//! takes part in resolved at its latest look (`until: verdict`). `run` asks it through
//! its `Stopping` trait; `plan`, `status` and `calibrate` ask it directly.

use std::collections::HashMap;

use crate::analyze::comparisons::{CellComparison, plan_comparisons};
use crate::parse::Recipe;
use crate::plan::Plan;
use crate::run::BootLook;
use crate::spec::{Experiment, Repetitions};
use crate::store::{CellProgress, ProgressByCell};
use stats::StatsSettings;
use stats::interval::relative_margin;
use stats::observations::Observations;
use stats::verdict::{VerdictKind, trial_verdict};
use vocab::ENGINE_METRICS;

/// The repetitions rule of one experiment, with the metrics the adaptive rule watches.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub repetitions: Repetitions,
    pub confidence: f64,
    /// The engine's metrics whose margin of error must meet the target: those the
    /// experiment names, or `wall_time` when nothing else is measured (the CPU times are
    /// too coarse for short trials to be watched by default).
    watched_engine: Vec<String>,
    /// Whether every parsed metric is watched too.
    reads_output: bool,
    /// `until: verdict`: the plan's comparisons and when to look at them.
    verdict: Option<VerdictRule>,
    /// Adaptive boots: the experiment and plan their looks analyse.
    boots: Option<Box<(Experiment, Plan)>>,
}

/// What `until: verdict` needs, built once from the plan.
#[derive(Debug, Clone)]
struct VerdictRule {
    comparisons: Vec<CellComparison>,
    /// The comparisons each cell takes part in (indices into `comparisons`).
    of_cell: HashMap<usize, Vec<usize>>,
    /// The report's analysis settings, its intervals at the looks' 1 − α/K.
    settings: StatsSettings,
    /// The trial counts looked at, ascending.
    looks: Vec<u32>,
}

impl Rule {
    pub(crate) fn new(exp: &Experiment, plan: &Plan, repetitions: Repetitions) -> Self {
        let named: Vec<String> = exp
            .spec
            .metrics
            .keys()
            .map(|k| k.value.clone())
            .filter(|k| ENGINE_METRICS.contains(&k.as_str()))
            .collect();
        let reads_output = Recipe::from_spec(&exp.spec).map(|r| r.reads_output()).unwrap_or(false);
        let watched_engine =
            if reads_output || !named.is_empty() { named } else { vec!["wall_time".to_string()] };
        // the report's intervals, which the stopping rule must make narrow enough
        let confidence = crate::analyze::settings::interval_confidence(
            crate::analyze::settings::nominal_confidence(&exp.spec),
            &repetitions,
        );
        let verdict = matches!(repetitions, Repetitions::Verdict { .. }).then(|| {
            let comparisons = plan_comparisons(exp, plan);
            let mut of_cell: HashMap<usize, Vec<usize>> = HashMap::new();
            for (c, comparison) in comparisons.iter().enumerate() {
                for &(_, cell) in comparison.base.iter().chain(&comparison.other) {
                    let list = of_cell.entry(cell).or_default();
                    if !list.contains(&c) {
                        list.push(c);
                    }
                }
            }
            // the report's settings: their intervals are at the looks' 1 − α/K already
            let settings = crate::analyze::settings::settings(&exp.spec);
            VerdictRule { comparisons, of_cell, settings, looks: repetitions.looks() }
        });
        let boots = (!crate::analyze::settings::boot_looks(&exp.spec).is_empty())
            .then(|| Box::new((exp.clone(), plan.clone())));
        Rule { repetitions, confidence, watched_engine, reads_output, verdict, boots }
    }

    /// Adaptive boots, at a look (`analyze::boot_rule::look`, with futility); `Open`
    /// without adaptive boots.
    pub(crate) fn look_across_boots(&self, snapshot: &crate::store::Snapshot, max: u32) -> BootLook {
        self.boots.as_ref().map_or(BootLook::Open, |b| {
            let factor = crate::analyze::boot_rule::FUTILITY_FACTOR;
            crate::analyze::boot_rule::look(&b.0, &b.1, snapshot, max, Some(factor))
        })
    }

    /// Adaptive boots: trials per further boot (`analyze::boot_rule::further_trials`).
    pub(crate) fn trials_per_boot(&self, snapshot: &crate::store::Snapshot, boot_cost: f64) -> Option<u32> {
        let b = self.boots.as_ref()?;
        crate::analyze::boot_rule::further_trials(&b.0, &b.1, snapshot, boot_cost)
    }

    /// Whether the rule looks at other cells than the one it decides on (`until:
    /// verdict`): callers then keep a [`ProgressByCell`] of every cell's progress.
    pub(crate) fn needs_board(&self) -> bool {
        self.verdict.is_some()
    }

    /// Trials of cell `cell` (progress `p`; the other cells' in `others`) still to run at least
    /// (fixed: exactly; adaptive: up to `min`), and at most.
    pub(crate) fn remaining(&self, cell: usize, p: &CellProgress, others: &ProgressByCell) -> (u32, u32) {
        let (min, max) = self.repetitions.bounds();
        if self.is_done(cell, p, others) {
            return (0, 0);
        }
        (min.saturating_sub(p.ok).max(1), max.saturating_sub(p.ok))
    }

    /// Whether cell `cell`, with progress `p`, needs no more trials. Only `until:
    /// verdict` reads the other cells' progress, `others` (an empty one does otherwise).
    pub(crate) fn is_done(&self, cell: usize, p: &CellProgress, others: &ProgressByCell) -> bool {
        match self.repetitions {
            Repetitions::Fixed(n) => p.ok >= n,
            Repetitions::Adaptive { min, max, target } => {
                p.ok >= max
                    || (p.ok >= min && self.margins(p).iter().all(|(_, m)| m.is_some_and(|m| m <= target.0)))
            }
            Repetitions::Verdict { min, max } => {
                p.ok >= max || (p.ok >= min && self.comparisons_resolved(cell, p, others))
            }
        }
    }

    /// `until: verdict`: whether every comparison the cell takes part in is resolved at
    /// its latest look; a cell in none follows `min`.
    fn comparisons_resolved(&self, cell: usize, p: &CellProgress, others: &ProgressByCell) -> bool {
        let Some(v) = &self.verdict else { return false };
        let get = |i: usize| if i == cell { Some(p) } else { others.get(&i) };
        v.of_cell.get(&cell).is_none_or(|list| list.iter().all(|&c| self.resolved(&v.comparisons[c], &get)))
    }

    /// The latest look a comparison has reached: the largest count of the schedule that
    /// every one of its cells has (the smaller side's trials), if any.
    pub(crate) fn latest_look<'p>(
        &self,
        comparison: &CellComparison,
        get: &impl Fn(usize) -> Option<&'p CellProgress>,
    ) -> Option<u32> {
        let v = self.verdict.as_ref()?;
        let n = comparison
            .base
            .iter()
            .chain(&comparison.other)
            .map(|&(_, c)| get(c).map_or(0, |p| p.ok))
            .min()?;
        v.looks.iter().rev().copied().find(|&look| look <= n)
    }

    /// Whether a comparison is resolved at its latest look: for every watched metric, its
    /// interval (the report's, at 1 − α/K) lies wholly beyond ±δ or wholly within it.
    /// Judged on the first `look` trials of each cell, so that each look is one fixed
    /// set of data however often it is asked about, and the cells that go on (for
    /// another comparison) do not make it a further look. Never across boots: there the
    /// report compares boots, and one boot per level claims nothing.
    pub(crate) fn resolved<'p>(
        &self,
        comparison: &'p CellComparison,
        get: &impl Fn(usize) -> Option<&'p CellProgress>,
    ) -> bool {
        let Some(v) = &self.verdict else { return false };
        if comparison.across_boots {
            return false;
        }
        let Some(look) = self.latest_look(comparison, get) else { return false };
        let look = look as usize;
        let Some(first) = comparison.base.first().and_then(|&(_, c)| get(c)) else { return false };
        let metrics: Vec<&String> = first.values.keys().filter(|name| self.watches(name)).collect();
        if metrics.is_empty() {
            return false;
        }
        metrics.into_iter().all(|metric| {
            let kind = first.kinds.get(metric).copied().unwrap_or_default();
            let side = |cells: &'p [(Option<String>, usize)]| -> Option<Vec<(Option<&'p str>, &'p [f64])>> {
                cells
                    .iter()
                    .map(|(block, c)| {
                        let values = get(*c)?.values.get(metric.as_str())?;
                        (values.len() >= look).then(|| (block.as_deref(), &values[..look]))
                    })
                    .collect()
            };
            let (Some(base), Some(other)) = (side(&comparison.base), side(&comparison.other)) else {
                return false;
            };
            matches!(
                trial_verdict(&base, &other, kind, comparison.paired, &v.settings),
                Ok(VerdictKind::Significant | VerdictKind::WithinBand | VerdictKind::NoMeaningfulDifference)
            )
        })
    }

    /// Whether the rule watches a metric: the named engine metrics (or the wall time),
    /// and every parsed one.
    fn watches(&self, name: &str) -> bool {
        if ENGINE_METRICS.contains(&name) {
            self.watched_engine.iter().any(|w| w == name)
        } else {
            self.reads_output
        }
    }

    /// The relative margin of error of each watched metric (`None`: not computable).
    pub(crate) fn margins(&self, p: &CellProgress) -> Vec<(String, Option<f64>)> {
        p.values
            .iter()
            .filter(|(name, _)| self.watches(name))
            .map(|(name, values)| {
                let kind = p.kinds.get(name).copied().unwrap_or_default();
                let margin =
                    Observations::new(values, kind).ok().and_then(|s| relative_margin(&s, self.confidence));
                (name.clone(), margin)
            })
            .collect()
    }
}

/// The run asks analyze's stopping rule whether a cell is done.
impl crate::run::Stopping for Rule {
    fn needs_board(&self) -> bool {
        Rule::needs_board(self)
    }

    fn is_done(&self, cell: usize, progress: &CellProgress, board: &ProgressByCell) -> bool {
        Rule::is_done(self, cell, progress, board)
    }

    fn remaining(&self, cell: usize, progress: &CellProgress, board: &ProgressByCell) -> (u32, u32) {
        Rule::remaining(self, cell, progress, board)
    }

    fn look_across_boots(&self, snapshot: &crate::store::Snapshot, max: u32) -> BootLook {
        Rule::look_across_boots(self, snapshot, max)
    }

    fn trials_per_boot(&self, snapshot: &crate::store::Snapshot, boot_cost: f64) -> Option<u32> {
        Rule::trials_per_boot(self, snapshot, boot_cost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::MemoryStore;
    use crate::store::Status;
    use crate::store::progress;
    use vocab::Better;
    use vocab::MeanKind;

    /// The mean a cell's margin is judged by is the one its own latest record asked for,
    /// not that of the first record in the log (a stale cell's, say).
    #[test]
    fn each_cell_is_judged_by_the_mean_its_latest_record_asked_for() {
        let mut f = MemoryStore::new(
            "experiments/e.yaml",
            "matrix:\n  bs: [1k, 4k]\nrun: \"true\"\nrepetitions: 3\n",
        );
        f.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic);
        f.record("00000000000000ff".into(), &[("bs", "1k")], &[("rate", 1.0)], Status::Ok);
        f.metric("rate", "B/s", Better::Higher, MeanKind::Harmonic);
        f.trial(&[("bs", "1k")], &[("rate", 2.0)]).trial(&[("bs", "1k")], &[("rate", 4.0)]);
        let (progress, stale) = progress(&f.plan, &f.snapshot.trials);
        assert_eq!(stale, 1);
        let cell = f.plan.cells.iter().position(|c| f.plan.label(c) == "bs=1k").unwrap();
        let p = &progress[&cell];
        assert_eq!((p.ok, p.attempts), (2, 2));
        assert_eq!(p.values["rate"], [2.0, 4.0]);
        assert_eq!(p.kinds["rate"], MeanKind::Harmonic);
    }

    const UNTIL_VERDICT: &str = "matrix:\n  v: [a, b]\nrun: \"true\"\nmetrics:\n  value: { regex: '([0-9.]+)' }\n\
        repetitions: { min: 5, max: 30, until: verdict }\nanalysis:\n  compare:\n    - { factor: v, baseline: a }\n";

    /// A store of the `until: verdict` experiment with these values of `a` and `b`.
    fn until_verdict(a: &[f64], b: &[f64]) -> MemoryStore {
        let mut f = MemoryStore::new("experiments/e.yaml", UNTIL_VERDICT);
        f.metric("value", "s", Better::Lower, MeanKind::Arithmetic);
        for (level, values) in [("a", a), ("b", b)] {
            for &x in values {
                f.trial(&[("v", level)], &[("value", x)]);
            }
        }
        f
    }

    /// Whether each of the two cells is done, by the rule of the fixture's experiment.
    fn done(f: &MemoryStore) -> (bool, bool) {
        let rule = Rule::new(&f.exp, &f.plan, f.exp.spec.repetitions());
        let (cells, _) = progress(&f.plan, &f.snapshot.trials);
        let none = CellProgress::default();
        let of = |level: &str| {
            let cell = f.plan.cells.iter().position(|c| f.plan.label(c) == format!("v={level}")).unwrap();
            rule.is_done(cell, cells.get(&cell).unwrap_or(&none), &cells)
        };
        (of("a"), of("b"))
    }

    #[test]
    fn the_looks_are_min_then_each_half_again_then_max() {
        assert_eq!(crate::spec::look_schedule(5, 30), [5, 8, 12, 18, 27, 30]);
        assert_eq!(crate::spec::look_schedule(5, 5), [5]);
        assert_eq!(crate::spec::look_schedule(5, 6), [5, 6]);
        assert_eq!(crate::spec::look_schedule(10, 20), [10, 15, 20]);
        let r = Repetitions::Verdict { min: 5, max: 30 };
        assert_eq!(r.looks().len(), 6);
        // α = 5 % spent over the 6 looks
        let c = crate::analyze::settings::interval_confidence(0.95, &r);
        assert!((c - (1.0 - 0.05 / 6.0)).abs() < 1e-12, "{c}");
        let f = until_verdict(&[], &[]);
        assert!((Rule::new(&f.exp, &f.plan, f.exp.spec.repetitions()).confidence - c).abs() < 1e-12);
        assert!((crate::analyze::settings::settings(&f.exp.spec).confidence - c).abs() < 1e-12);
    }

    #[test]
    fn a_large_difference_stops_both_cells_at_the_first_look() {
        let a = [10.0, 10.1, 9.9, 10.05, 9.95];
        let b = [20.0, 20.2, 19.8, 20.1, 19.9];
        assert_eq!(done(&until_verdict(&a[..4], &b[..4])), (false, false), "below min");
        assert_eq!(done(&until_verdict(&a, &b)), (true, true));
        // within ±δ: resolved too (no meaningful difference)
        let same = [10.0, 10.02, 9.98, 10.01, 9.99];
        assert_eq!(done(&until_verdict(&a, &same)), (true, true));
    }

    #[test]
    fn an_unresolved_or_incomplete_comparison_does_not_stop() {
        // overlapping and wide: the interval reaches across ±δ
        let a = [9.0, 11.0, 9.0, 11.0, 10.0];
        let b = [9.5, 11.5, 9.0, 11.0, 10.5];
        assert_eq!(done(&until_verdict(&a, &b)), (false, false));
        // a large difference, but `b` has not reached the look: `a` is not judged on it
        let a = [10.0, 10.1, 9.9, 10.05, 9.95];
        let b = [20.0, 20.2, 19.8, 20.1];
        assert_eq!(done(&until_verdict(&a, &b)), (false, false));
    }

    /// Between looks the comparison is judged on the trials of its latest look, so that
    /// each look is one fixed set of data: at 7 trials the cells go on although all 7
    /// would resolve it, because its first 5 (the look) did not.
    #[test]
    fn between_looks_the_latest_look_decides() {
        let a = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 10.0];
        let b = [10.8, 11.0, 10.6, 10.9, 10.7, 10.8, 10.8];
        let f = until_verdict(&a, &b);
        let settings = crate::analyze::settings::settings(&f.exp.spec);
        let judge = |n: usize| {
            trial_verdict(&[(None, &a[..n])], &[(None, &b[..n])], MeanKind::Arithmetic, false, &settings)
                .unwrap()
        };
        assert_eq!(judge(5), VerdictKind::UncertainSize);
        assert_eq!(judge(7), VerdictKind::Significant);
        assert_eq!(done(&f), (false, false));
        let rule = Rule::new(&f.exp, &f.plan, f.exp.spec.repetitions());
        let (cells, _) = progress(&f.plan, &f.snapshot.trials);
        assert_eq!(
            rule.latest_look(&rule.verdict.as_ref().unwrap().comparisons[0], &|i| cells.get(&i)),
            Some(5)
        );
    }

    #[test]
    fn cells_in_no_comparison_follow_min_and_max_always_stops() {
        let yaml = UNTIL_VERDICT.replace("analysis:\n  compare:\n    - { factor: v, baseline: a }\n", "");
        let mut f = MemoryStore::new("experiments/e.yaml", &yaml);
        f.metric("value", "s", Better::Lower, MeanKind::Arithmetic);
        for x in [1.0, 5.0, 2.0, 9.0, 3.0] {
            f.trial(&[("v", "a")], &[("value", x)]).trial(&[("v", "b")], &[("value", x)]);
        }
        assert_eq!(done(&f), (true, true));
        let noisy: Vec<f64> = (0..30).map(|i| if i % 2 == 0 { 5.0 } else { 15.0 }).collect();
        assert_eq!(done(&until_verdict(&noisy[..29], &noisy[..29])), (false, false));
        assert_eq!(done(&until_verdict(&noisy, &noisy)), (true, true), "max");
    }
}
