//! Where each cell stands, from the store: trials recorded, successful measurements, and
//! whether the repetitions rule (fixed, or adaptive on the margin of error) is met.
//! `run`, `plan` and `status` all decide "done" here.

use std::collections::HashMap;

use indexmap::IndexMap;

use crate::analyze::stats::relative_margin;
use crate::analyze::{MeanKind, Sample};
use crate::parse::{ENGINE_METRICS, Recipe};
use crate::plan::{Cell, Plan};
use crate::spec::{Experiment, Repetitions};
use crate::store::{Name, TrialRecord, Trials};

/// One cell's record so far.
#[derive(Debug, Clone, Default)]
pub struct CellProgress {
    /// Every record of the cell, warm-ups and failures included: the next trial's
    /// repetition number is `attempts + 1`.
    pub attempts: u32,
    /// Successful measurements (not warm-ups): metric → values in trial order.
    pub values: IndexMap<String, Vec<f64>>,
    pub kinds: HashMap<String, MeanKind>,
    pub ok: u32,
    /// Mean wall time of a trial, for estimates.
    pub mean_wall: Option<f64>,
    wall_sum: f64,
    wall_n: u32,
}

impl CellProgress {
    /// Count a record of this cell just written.
    pub fn add_record(&mut self, r: &TrialRecord) {
        let metrics = r.metrics.iter().map(|(name, &value)| {
            (name.as_str(), value, r.metric_info.get(name).map(|i| i.mean).unwrap_or_default())
        });
        self.add(r.repetition, r.status.is_measurement() && !r.warmup, metrics, r.wall_time);
    }

    /// Count one record: its repetition, whether it is a measurement (not a warm-up),
    /// its metrics and its wall time.
    fn add<'m>(
        &mut self,
        repetition: u32,
        measured: bool,
        metrics: impl Iterator<Item = (&'m str, f64, MeanKind)>,
        wall_time: f64,
    ) {
        self.attempts = self.attempts.max(repetition);
        if measured {
            self.ok += 1;
            // Looked up before inserting: the name is copied once per cell, not once per
            // trial (a store may hold a million trials).
            for (name, value, kind) in metrics {
                match self.values.get_mut(name) {
                    Some(values) => values.push(value),
                    None => {
                        self.values.insert(name.to_owned(), vec![value]);
                    }
                }
                match self.kinds.get_mut(name) {
                    Some(known) => *known = kind,
                    None => {
                        self.kinds.insert(name.to_owned(), kind);
                    }
                }
            }
        }
        if wall_time.is_finite() && wall_time > 0.0 {
            self.wall_sum += wall_time;
            self.wall_n += 1;
            self.mean_wall = Some(self.wall_sum / f64::from(self.wall_n));
        }
    }
}

/// The repetitions rule of one experiment, with the metrics the adaptive rule watches.
#[derive(Debug, Clone)]
pub struct Rule {
    pub repetitions: Repetitions,
    pub confidence: f64,
    /// The engine's metrics whose margin of error must meet the target: those the
    /// experiment names, or `wall_time` when nothing else is measured (the CPU times are
    /// too coarse for short trials to be watched by default).
    watched_engine: Vec<String>,
    /// Whether every parsed metric is watched too.
    reads_output: bool,
}

impl Rule {
    pub fn new(exp: &Experiment, repetitions: Repetitions) -> Self {
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
        let confidence = crate::analyze::interval_confidence(
            crate::analyze::summary::nominal_confidence(&exp.spec),
            matches!(repetitions, Repetitions::Adaptive { .. }),
        );
        Rule { repetitions, confidence, watched_engine, reads_output }
    }

    /// Trials still to run at least (fixed: exactly; adaptive: up to `min`).
    pub fn remaining(&self, p: &CellProgress) -> (u32, u32) {
        let (min, max) = self.repetitions.bounds();
        if self.is_done(p) {
            return (0, 0);
        }
        (min.saturating_sub(p.ok).max(1), max.saturating_sub(p.ok))
    }

    /// Whether the cell needs no more trials.
    pub fn is_done(&self, p: &CellProgress) -> bool {
        match self.repetitions {
            Repetitions::Fixed(n) => p.ok >= n,
            Repetitions::Adaptive { min, max, target } => {
                p.ok >= max
                    || (p.ok >= min && self.margins(p).iter().all(|(_, m)| m.is_some_and(|m| m <= target.0)))
            }
        }
    }

    /// The relative margin of error of each watched metric (`None`: not computable).
    pub fn margins(&self, p: &CellProgress) -> Vec<(String, Option<f64>)> {
        p.values
            .iter()
            .filter(|(name, _)| {
                if ENGINE_METRICS.contains(&name.as_str()) {
                    self.watched_engine.contains(name)
                } else {
                    self.reads_output
                }
            })
            .map(|(name, values)| {
                let kind = p.kinds.get(name).copied().unwrap_or_default();
                let margin =
                    Sample::new(values, kind).ok().and_then(|s| relative_margin(&s, self.confidence));
                (name.clone(), margin)
            })
            .collect()
    }
}

/// The progress of every cell of the plan, from the records (records of other cell ids
/// are not counted: they belong to an older version of the commands).
/// Only cells with records get an entry: a plan of a million cells and an empty store
/// costs nothing here.
pub fn progress(plan: &Plan, trials: &Trials) -> (HashMap<usize, CellProgress>, usize) {
    if trials.is_empty() {
        return (HashMap::new(), 0);
    }
    let cells = trials.cells_in(plan);
    // By metric name number first: hashing each row's metric name would cost more than
    // the rest of reading the log.
    // each metric's values, and the mean its latest record asked for
    type Values = Vec<(Name, Vec<f64>, MeanKind)>;
    let mut by_cell: HashMap<usize, (CellProgress, Values)> = HashMap::new();
    let mut set_aside = 0;
    for i in 0..trials.len() {
        let Some(cell) = cells.get(&trials.cell[i]) else {
            set_aside += 1;
            continue;
        };
        let (progress, values) = by_cell.entry(*cell).or_default();
        let measured = trials.status[i].is_measurement() && !trials.warmup[i];
        progress.add(trials.repetition[i], measured, std::iter::empty(), trials.wall_time[i]);
        if measured {
            for row in trials.rows(i) {
                let (metric, kind) = (trials.metric[row], trials.mean[row]);
                match values.iter_mut().find(|(m, ..)| *m == metric) {
                    Some((_, v, k)) => {
                        v.push(trials.value[row]);
                        *k = kind;
                    }
                    None => values.push((metric, vec![trials.value[row]], kind)),
                }
            }
        }
    }
    let out = by_cell
        .into_iter()
        .map(|(cell, (mut progress, values))| {
            for (metric, v, kind) in values {
                let name = trials.names.get(metric);
                progress.kinds.insert(name.to_owned(), kind);
                progress.values.insert(name.to_owned(), v);
            }
            (cell, progress)
        })
        .collect();
    (out, set_aside)
}

/// `bs=4k sync=none` for a cell, as records store the levels.
pub fn levels_map(plan: &Plan, cell: &Cell) -> IndexMap<String, String> {
    plan.levels(cell).map(|(k, v)| (k.to_string(), v.text.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::fixture::Fixture;
    use crate::parse::Better;
    use crate::store::Status;

    /// The mean a cell's margin is judged by is the one its own latest record asked for,
    /// not that of the first record in the log (a stale cell's, say).
    #[test]
    fn each_cell_is_judged_by_the_mean_its_latest_record_asked_for() {
        let mut f =
            Fixture::new("experiments/e.yaml", "matrix:\n  bs: [1k, 4k]\nrun: \"true\"\nrepetitions: 3\n");
        f.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic);
        f.record("00000000000000ff".into(), &[("bs", "1k")], &[("rate", 1.0)], Status::Ok);
        f.metric("rate", "B/s", Better::Higher, MeanKind::Harmonic);
        f.trial(&[("bs", "1k")], &[("rate", 2.0)]).trial(&[("bs", "1k")], &[("rate", 4.0)]);
        let (progress, stale) = progress(&f.plan, &f.loaded.trials);
        assert_eq!(stale, 1);
        let cell = f.plan.cells.iter().position(|c| f.plan.label(c) == "bs=1k").unwrap();
        let p = &progress[&cell];
        assert_eq!((p.ok, p.attempts), (2, 2));
        assert_eq!(p.values["rate"], [2.0, 4.0]);
        assert_eq!(p.kinds["rate"], MeanKind::Harmonic);
    }
}
