//! Where each cell stands, from its trial records: how many were recorded, how many
//! are measurements, their values and wall times. A fold over the trial log; whether
//! that is enough trials is the stopping rule's to say (`analyze::stopping`). [`mod@file`]
//! keeps the whole trial log's [`Progress`] beside it, in `runs.progress`.

pub(super) mod file;

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;

use super::names::Name;
use super::record::{Event, SessionRecord, Status, TrialRecord};
use super::trials::Trials;
use crate::plan::{Cell, Plan};
use vocab::MeanKind;

/// One cell's record so far.
#[derive(Debug, Clone, Default, PartialEq)]
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
    pub(super) wall_sum: f64,
    pub(super) wall_n: u32,
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
    pub(crate) fn add<'m>(
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

/// The progress of the cells that have records, by index into [`Plan::cells`].
pub type ProgressByCell = HashMap<usize, CellProgress>;

/// Where the cells of a plan stand, from the whole trial log: what `margin status` and
/// `margin plan` need of it (kept in `runs.progress`: [`mod@file`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The progress of the cells that have records ([`progress`]).
    pub cells: ProgressByCell,
    /// Records of cells the plan no longer has.
    pub set_aside: usize,
    /// Measurements (not warm-ups), failed trials and imported ones, of every cell.
    pub measured: usize,
    pub failed: usize,
    pub imported: usize,
    /// When the last trial started, µs since the epoch.
    pub last_started: Option<i64>,
    /// What reading the trial log said of its lines (a torn record).
    pub warnings: Vec<String>,
}

impl Progress {
    /// The progress of `plan`'s cells in `trials`, with the warnings reading them gave.
    pub fn of(plan: &Plan, trials: &Trials, warnings: Vec<String>) -> Progress {
        let (cells, set_aside) = progress(plan, trials);
        let mut progress = Progress { cells, set_aside, warnings, ..Progress::default() };
        progress.count(trials);
        progress
    }

    /// This progress extended by the records after those it was made of (`tail`), as
    /// [`Progress::of`] all of them would be.
    pub(super) fn extend(&mut self, plan: &Plan, tail: &Trials) {
        extend(&mut self.cells, &mut self.set_aside, plan, tail);
        self.count(tail);
    }

    /// Adds the measurements, failures and imports of `trials`, and their latest start.
    fn count(&mut self, trials: &Trials) {
        self.measured +=
            (0..trials.len()).filter(|&t| trials.status[t].is_measurement() && !trials.warmup[t]).count();
        self.failed += trials.failed.len();
        self.imported += trials.status.iter().filter(|&&s| s == Status::Imported).count();
        self.last_started = self.last_started.max(trials.started.iter().filter_map(|s| s.get()).max());
    }
}

/// The progress of every cell of the plan, from the records (records of other cell ids
/// are not counted: they belong to an older version of the commands).
/// Only cells with records get an entry: a plan of a million cells and an empty store
/// costs nothing here.
pub fn progress(plan: &Plan, trials: &Trials) -> (ProgressByCell, usize) {
    progress_where(plan, trials, |_| true, true)
}

/// The progress of a run given `label` (`margin run --label v2`), else [`progress`]:
/// only the measurements of the sessions given that label count, so that each label gets
/// its repetitions in the same store (docs/compare.md, Labels); every record still counts
/// as an attempt, so that repetition numbers stay unique in a cell. Without `values`, each
/// cell's progress holds its counts and wall times but not its values (a fixed number of
/// repetitions never reads them; at 10⁷ trials they are a hundred megabytes).
pub fn progress_labelled(
    plan: &Plan,
    trials: &Trials,
    sessions: &[SessionRecord],
    label: Option<&str>,
    values: bool,
) -> (ProgressByCell, usize) {
    let Some(label) = label else { return progress_where(plan, trials, |_| true, values) };
    let labelled: HashSet<Name> = sessions
        .iter()
        .filter(|s| s.event == Event::Start && s.label.as_deref() == Some(label))
        .filter_map(|s| trials.names.find(&s.session))
        .collect();
    progress_where(plan, trials, |i| labelled.contains(&trials.session[i]), values)
}

/// [`progress`] counting as measurements only the records `counts` keeps; with their
/// `values` or without.
fn progress_where(
    plan: &Plan,
    trials: &Trials,
    counts: impl Fn(usize) -> bool + Sync,
    values: bool,
) -> (ProgressByCell, usize) {
    use rayon::prelude::*;
    if trials.is_empty() {
        return (HashMap::new(), 0);
    }
    // Cell by cell, on every core, each cell's trials in log order (`Trials::by_cell`). By
    // metric name number first: hashing each row's metric name would cost more than the
    // rest of reading the log.
    let by_cell = trials.by_cell(plan);
    let measured = |i: usize| trials.status[i].is_measurement() && !trials.warmup[i] && counts(i);
    let out = (0..by_cell.len())
        .into_par_iter()
        .map(|k| {
            let (cell, these) = by_cell.get(k);
            let mut progress = CellProgress::default();
            fold(&mut progress, trials, these, measured, values);
            (cell, progress)
        })
        .collect();
    (out, by_cell.outside)
}

/// Adds the records of `trials` — those after the ones `cells` and its count of records
/// set aside were made of — to them: as [`progress`] of all the records would have them.
fn extend(cells: &mut ProgressByCell, set_aside: &mut usize, plan: &Plan, trials: &Trials) {
    let by_cell = trials.by_cell(plan);
    let measured = |i: usize| trials.status[i].is_measurement() && !trials.warmup[i];
    for k in 0..by_cell.len() {
        let (cell, these) = by_cell.get(k);
        fold(cells.entry(cell).or_default(), trials, these, measured, true);
    }
    *set_aside += by_cell.outside;
}

/// Adds a cell's trials `these` (indices into `trials`, in log order) to its `progress`:
/// their count and wall times, and the values of those `measured` when `values`.
fn fold(
    progress: &mut CellProgress,
    trials: &Trials,
    these: &[u32],
    measured: impl Fn(usize) -> bool,
    values: bool,
) {
    // What each trial is, read first in a loop of its own: a cell's trials lie far
    // apart in the columns, and a loop that only reads lets the processor have many
    // of its cache misses under way at once.
    let what: Vec<(bool, u32, f64, std::ops::Range<usize>)> = these
        .iter()
        .map(|&t| {
            let i = t as usize;
            (measured(i), trials.repetition[i], trials.wall_time[i], trials.rows(i))
        })
        .collect();
    // each metric's values, and the mean its latest record asked for; a list made
    // the size it will be rather than grown, copied at every doubling
    let room = what.iter().filter(|(measured, ..)| *measured).count();
    let mut kept: Vec<(Name, Vec<f64>, MeanKind)> = Vec::new();
    for (measured, repetition, wall_time, rows) in what {
        progress.add(repetition, measured, std::iter::empty(), wall_time);
        if !measured || !values {
            continue;
        }
        for row in rows {
            let (metric, kind) = (trials.metric[row], trials.mean[row]);
            match kept.iter_mut().find(|(m, ..)| *m == metric) {
                Some((_, v, k)) => {
                    v.push(trials.value[row]);
                    *k = kind;
                }
                None => {
                    let mut v = Vec::with_capacity(room);
                    v.push(trials.value[row]);
                    kept.push((metric, v, kind));
                }
            }
        }
    }
    for (metric, v, kind) in kept {
        let name = trials.names.get(metric);
        progress.kinds.insert(name.to_owned(), kind);
        match progress.values.get_mut(name) {
            Some(earlier) => earlier.extend(v),
            None => {
                progress.values.insert(name.to_owned(), v);
            }
        }
    }
}

/// `bs=4k sync=none` for a cell, as records store the levels.
pub fn levels_map(plan: &Plan, cell: &Cell) -> IndexMap<String, String> {
    plan.levels(cell).map(|(k, v)| (k.to_string(), v.text.clone())).collect()
}
