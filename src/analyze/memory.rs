//! An experiment, its plan and a store built in memory, trial by trial, without files:
//! what the tests analyse, and what `margin calibrate` fills with simulated trials to run
//! them through the same analysis as a report's ([`statistics`](super::statistics), which
//! [`summarize_owned`](super::summarize_owned) is built on).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::diag::Diagnostics;
use crate::plan::{self, Plan};
use crate::spec::{self, Experiment};
use crate::store::{MetricInfo, SessionRecord, Snapshot, Status, TrialRecord};
use vocab::{Better, MeanKind};

/// An experiment with a store held in memory, filled trial by trial. Cloning an empty one
/// is the cheap way to get many stores of one experiment (no YAML is parsed again).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    /// Shared by the clones: the experiment and its plan never change once loaded.
    pub exp: Arc<Experiment>,
    pub plan: Arc<Plan>,
    /// The records as the store would hold them (their columns in `snapshot.trials`).
    pub records: Vec<TrialRecord>,
    pub snapshot: Snapshot,
    info: IndexMap<String, MetricInfo>,
    session: String,
    host: String,
    /// The status of the trials [`MemoryStore::trial`] adds.
    status: Status,
    /// Minutes since the store's epoch: each trial starts one minute after the last.
    clock: i64,
    /// Trials recorded so far per cell id: the next one's repetition number.
    repetitions: HashMap<String, u32>,
}

/// The most cells an in-memory experiment may have.
const MAX_CELLS: usize = 1000;

impl MemoryStore {
    /// Loads the experiment from YAML text (named `path`); panics on an invalid file (the
    /// tests' text is fixed). Trials added before any [`MemoryStore::session`] belong to
    /// a session with an empty id and host, without a session record.
    #[cfg(test)]
    pub fn new(path: &str, yaml: &str) -> MemoryStore {
        MemoryStore::load(path, yaml).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// Loads one of `tests/data/report/` (as [`MemoryStore::new`]).
    #[cfg(test)]
    pub fn file(name: &str) -> MemoryStore {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        MemoryStore::new(&format!("experiments/{name}"), &text)
    }

    /// The summary of a store of two levels `a` and `b` of `v` (wall times 1.0 and 1.1,
    /// 2.0 and 2.1), compared: a comparison for tests to reshape.
    #[cfg(test)]
    pub fn two_levels_summary() -> crate::summary::Summary {
        let mut f = MemoryStore::new(
            "experiments/case.yaml",
            "matrix: { v: [a, b] }\nrun: \"true\"\nanalysis: { compare: [{ factor: v, baseline: a }] }\n",
        );
        f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
        for (level, value) in [("a", 1.0), ("a", 1.1), ("b", 2.0), ("b", 2.1)] {
            f.trial(&[("v", level)], &[("wall_time", value)]);
        }
        super::summarize_store(&f.exp, &f.plan, &f.snapshot, &[]).unwrap()
    }

    /// Loads the experiment from YAML text (named `path`), with its problems on error.
    pub fn load(path: &str, yaml: &str) -> Result<MemoryStore, Diagnostics> {
        let exp = spec::load_str(Path::new(path), yaml)?;
        let plan = plan::expand(&exp, MAX_CELLS)?;
        Ok(MemoryStore {
            exp: Arc::new(exp),
            plan: Arc::new(plan),
            records: Vec::new(),
            snapshot: Snapshot::default(),
            info: IndexMap::new(),
            session: String::new(),
            host: String::new(),
            status: Status::Ok,
            clock: 0,
            repetitions: HashMap::new(),
        })
    }

    /// Declares how a metric is recorded, as a parser would.
    pub fn metric(&mut self, name: &str, unit: &str, better: Better, mean: MeanKind) -> &mut Self {
        self.info.insert(name.to_owned(), MetricInfo { unit: unit.to_owned(), better, mean });
        self
    }

    /// Later trials are imported (`margin import`) rather than run.
    #[cfg(test)]
    pub fn importing(&mut self) -> &mut Self {
        self.status = Status::Imported;
        self
    }

    /// Starts a session on `host` with these facts; later trials belong to it.
    pub fn session(&mut self, id: &str, host: &str, facts: &[(&str, &str)]) -> &mut Self {
        self.session = id.to_owned();
        self.host = host.to_owned();
        self.snapshot.sessions.push(SessionRecord {
            at: self.now(),
            // fixed, so that what a test compares stays the same from version to version
            margin_version: "0.1.0".to_owned(),
            facts: facts.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            ..SessionRecord::start(id.to_owned(), host.to_owned(), &self.exp, 7)
        });
        self
    }

    fn now(&self) -> String {
        let t = jiff::Timestamp::from_second(1_700_000_000 + self.clock * 60).unwrap();
        t.to_string()
    }

    /// The id of the plan's cell with exactly these levels.
    pub fn cell(&self, levels: &[(&str, &str)]) -> String {
        let cell = self
            .plan
            .cells
            .iter()
            .find(|c| {
                let have: Vec<(&str, &str)> =
                    self.plan.levels(c).map(|(k, v)| (k, v.text.as_str())).collect();
                have.len() == levels.len() && levels.iter().all(|l| have.contains(l))
            })
            .unwrap_or_else(|| panic!("no cell {levels:?}"));
        cell.id.to_string()
    }

    /// Appends a measured trial of the cell `levels` with these metric values.
    pub fn trial(&mut self, levels: &[(&str, &str)], metrics: &[(&str, f64)]) -> &mut Self {
        let cell = self.cell(levels);
        self.record(cell, levels, metrics, self.status)
    }

    /// Appends a trial record of any status to any cell id.
    pub fn record(
        &mut self,
        cell: String,
        levels: &[(&str, &str)],
        metrics: &[(&str, f64)],
        status: Status,
    ) -> &mut Self {
        self.clock += 1;
        let repetition = self.repetitions.entry(cell.clone()).or_default();
        *repetition += 1;
        let repetition = *repetition;
        let metrics: IndexMap<String, f64> = metrics.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        let metric_info =
            metrics.keys().filter_map(|k| Some((k.clone(), self.info.get(k)?.clone()))).collect();
        let failed = !status.is_measurement();
        let levels = levels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let trial = format!("t{:04}", self.records.len() + 1);
        let (host, session) = (self.host.clone(), self.session.clone());
        self.records.push(TrialRecord {
            repetition,
            round: repetition,
            started_at: Some(self.now()),
            exit_code: Some(i32::from(failed)),
            metrics,
            metric_info,
            wall_time: 1.0,
            error: failed.then(|| "dd: writing to 'zero.tst': No space left on device".to_owned()),
            ..TrialRecord::new(trial, cell, levels, host, session, status)
        });
        self.snapshot.trials.push_record(self.records.last().expect("a record was just pushed"));
        self
    }
}
