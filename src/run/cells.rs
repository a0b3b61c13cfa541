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
use crate::store::TrialRecord;

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
    /// Count one record of this cell.
    pub fn add(&mut self, r: &TrialRecord) {
        self.attempts = self.attempts.max(r.repetition);
        if r.status.is_measurement() && !r.warmup {
            self.ok += 1;
            // Looked up before inserting: the name is copied once per cell, not once per
            // trial (a store may hold a million trials).
            for (name, &value) in &r.metrics {
                let kind = r.metric_info.get(name).map(|i| i.mean).unwrap_or_default();
                match self.values.get_mut(name) {
                    Some(values) => values.push(value),
                    None => {
                        self.values.insert(name.clone(), vec![value]);
                    }
                }
                match self.kinds.get_mut(name) {
                    Some(known) => *known = kind,
                    None => {
                        self.kinds.insert(name.clone(), kind);
                    }
                }
            }
        }
        if r.wall_time.is_finite() && r.wall_time > 0.0 {
            self.wall_sum += r.wall_time;
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
        let confidence = exp.spec.analysis.confidence.as_ref().map_or(0.95, |c| c.value);
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
pub fn progress(plan: &Plan, records: &[TrialRecord]) -> (HashMap<usize, CellProgress>, usize) {
    let mut out: HashMap<usize, CellProgress> = HashMap::new();
    if records.is_empty() {
        return (out, 0);
    }
    let index: HashMap<u64, usize> = plan.cells.iter().enumerate().map(|(i, c)| (c.id.0, i)).collect();
    let mut set_aside = 0;
    for r in records {
        match u64::from_str_radix(&r.cell, 16).ok().and_then(|id| index.get(&id)) {
            Some(i) => out.entry(*i).or_default().add(r),
            None => set_aside += 1,
        }
    }
    (out, set_aside)
}

/// `bs=4k sync=none` for a cell, as records store the levels.
pub fn levels_map(plan: &Plan, cell: &Cell) -> IndexMap<String, String> {
    plan.levels(cell).map(|(k, v)| (k.to_string(), v.text.clone())).collect()
}
