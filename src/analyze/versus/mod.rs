//! `margin compare`'s analysis: two stores, or two selections of one store (by run label,
//! session or date), set side by side by the report's own analysis — the same Welch and
//! Fieller intervals, Holm adjustment and verdicts (docs/statistics.md) — a row per cell
//! and metric, the candidate against the baseline; cells whose commands differ are listed
//! as not comparable, and so are the differences between the two sides' machines. With
//! `--fail-on`, a gate for CI (docs/design.md §4, Exit codes).
//!
//! [`select`] keeps the trials of a side, [`versus`](versus()) analyses the two as one experiment
//! into a [`Versus`], [`facts`] lists how the machines differ and [`gate`] what
//! trips `--fail-on`. The command (`cmd::compare`) loads the sides and prints.

mod facts;
mod gate;
pub(crate) mod select;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::plan::{Cell, Plan};
use crate::spec::{Compare, Experiment, Located};
use crate::store::{Event, SessionRecord, Snapshot, Store, TrialRecord, Trials};
use crate::summary::Summary;
use crate::summary::versus::{BASELINE, CANDIDATE, FailOn, NotComparable, SideInfo, Versus};
use select::Selection;
use vocab::{CellId, Scalar};

use super::{AnalyzeError, summarize_owned};

/// Why a side cannot be read as asked, or the two cannot be analysed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VersusError {
    /// `label=…` names a label no session of the store has.
    #[error(
        "{}: no session has the label `{label}`; its labels: {}\nhint: `margin run FILE --label {label}` \
         records one",
        store.display(),
        list(known)
    )]
    NoLabel { store: PathBuf, label: String, known: Vec<String> },
    /// `session=…` is the start of no session id.
    #[error("{}: no session of the store has an id starting `{id}`; its sessions: {}", store.display(), list(known))]
    NoSession { store: PathBuf, id: String, known: Vec<String> },
    /// `session=…` is the start of more than one session id.
    #[error(
        "{}: more than one session of the store has an id starting `{id}`; its sessions: {}",
        store.display(),
        list(known)
    )]
    AmbiguousSession { store: PathBuf, id: String, known: Vec<String> },
    /// The side's trials (those its selection keeps) hold no measured trial.
    #[error(
        "{}: the trials{} hold no measurement (only warm-ups or failures, or none)",
        store.display(),
        selection.as_ref().map_or_else(String::new, |s| format!(" selected by `{s}`"))
    )]
    NoMeasurement { store: PathBuf, selection: Option<String> },
    /// The two sides as one experiment cannot be analysed.
    #[error("{experiment}: the report: {source}")]
    Analyze { experiment: String, source: AnalyzeError },
}

/// Names that exist, for an error: `a, b`, or `none`.
fn list(known: &[String]) -> String {
    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
}

/// The name of the factor the two sides are levels of, in the analysis and its table.
const SIDE: &str = "side";

/// One side as read: its experiment, its store, and the records selected.
pub(crate) struct Side {
    pub(crate) exp: Experiment,
    pub(crate) store: Store,
    selection: Option<Selection>,
    records: Vec<TrialRecord>,
    sessions: Vec<SessionRecord>,
}

impl Side {
    /// The side of `store`'s `records` and `sessions` that `selection` keeps (every one
    /// without), with the sessions its trials ran in; an error when it keeps no measured
    /// trial.
    pub(crate) fn new(
        exp: Experiment,
        store: Store,
        selection: Option<&Selection>,
        records: Vec<TrialRecord>,
        sessions: Vec<SessionRecord>,
    ) -> Result<Side, VersusError> {
        let records = match selection {
            None => records,
            Some(sel) => select::select(&store.dir, sel, records, &sessions)?,
        };
        if !records.iter().any(|r| r.status.is_measurement() && !r.warmup) {
            let selection = selection.map(ToString::to_string);
            return Err(VersusError::NoMeasurement { store: store.dir.clone(), selection });
        }
        let used: BTreeSet<&str> = records.iter().map(|r| r.session.as_str()).collect();
        let sessions = sessions.iter().filter(|s| used.contains(s.session.as_str())).cloned().collect();
        Ok(Side { exp, store, selection: selection.cloned(), records, sessions })
    }

    /// What the output says of this side: where it is, what was selected, its sessions,
    /// their labels and its measured trials.
    fn info(&self) -> SideInfo {
        let measured = |r: &&TrialRecord| r.status.is_measurement() && !r.warmup;
        let mut labels: Vec<String> = Vec::new();
        for label in self.sessions.iter().filter_map(|x| x.label.as_ref()) {
            if !labels.contains(label) {
                labels.push(label.clone());
            }
        }
        SideInfo {
            experiment: self.exp.name.clone(),
            experiment_file: self.exp.path.display().to_string(),
            store: self.store.dir.display().to_string(),
            selection: self.selection.as_ref().map(ToString::to_string),
            sessions: self
                .sessions
                .iter()
                .filter(|x| x.event == Event::Start)
                .map(|x| x.session.clone())
                .collect(),
            labels,
            trials: self.records.iter().filter(measured).count(),
        }
    }
}

/// Each cell of a side's records: its levels and the cell ids its trials ran under.
type Cells = IndexMap<String, (IndexMap<String, String>, BTreeSet<String>)>;

fn cells(records: &[TrialRecord]) -> Cells {
    let mut out: Cells = IndexMap::new();
    for r in records {
        let entry = out.entry(label(&r.levels)).or_insert_with(|| (r.levels.clone(), BTreeSet::new()));
        entry.1.insert(r.cell.clone());
    }
    out
}

fn label(levels: &IndexMap<String, String>) -> String {
    levels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// The id a side's copy of a cell gets in the joint plan: the two copies must differ.
fn side_id(id: &str, side: &str) -> CellId {
    let hash = blake3::hash(format!("{id}/{side}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    CellId(u64::from_le_bytes(first))
}

/// The two sides as one experiment with a factor `side` (baseline, candidate) compared
/// within each cell, analysed by [`summarize_owned`] as a report would be; the summary
/// too, for the Markdown's table.
pub(crate) fn versus(
    base: &Side,
    cand: &Side,
    fail_on: Option<FailOn>,
) -> Result<(Versus, Summary), VersusError> {
    let (a_cells, b_cells) = (cells(&base.records), cells(&cand.records));
    let mut comparable: Vec<(&IndexMap<String, String>, &str)> = Vec::new();
    let mut not_comparable = Vec::new();
    for (label, (levels, ids)) in &a_cells {
        let Some((_, other)) = b_cells.get(label) else { continue };
        match (ids.len(), ids == other) {
            (1, true) => comparable.push((levels, ids.first().map(String::as_str).unwrap_or_default())),
            _ => not_comparable.push(NotComparable {
                cell: label.clone(),
                baseline_ids: ids.iter().cloned().collect(),
                candidate_ids: other.iter().cloned().collect(),
            }),
        }
    }
    let only = |of: &Cells, other: &Cells| -> Vec<String> {
        of.keys().filter(|k| !other.contains_key(*k)).cloned().collect()
    };

    // The joint plan: every level key in first-seen order, then the side.
    let mut keys: Vec<String> = Vec::new();
    for (levels, _) in &comparable {
        for k in levels.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let mut side_key = SIDE.to_owned();
    while keys.contains(&side_key) {
        side_key.push('_');
    }
    keys.push(side_key.clone());
    let mut plan = Plan {
        experiment: base.exp.name.clone(),
        factor_keys: keys.len(),
        keys,
        factors: Vec::new(),
        cells: Vec::new(),
        repetitions: base.exp.spec.repetitions(),
        warmup: 0,
        boots: false,
    };
    let mut ids: HashMap<(&str, &str), String> = HashMap::new();
    for (levels, id) in &comparable {
        for side in [BASELINE, CANDIDATE] {
            let mut cell_levels: Vec<(u16, Arc<Scalar>)> = levels
                .iter()
                .map(|(k, v)| {
                    (plan.keys.iter().position(|p| p == k).unwrap_or(0) as u16, Arc::new(Scalar::str(v)))
                })
                .collect();
            cell_levels.push(((plan.keys.len() - 1) as u16, Arc::new(Scalar::str(side))));
            cell_levels.sort_by_key(|(k, _)| *k);
            let cell_id = side_id(id, side);
            ids.insert((id, side), cell_id.to_string());
            plan.cells.push(Cell { id: cell_id, levels: cell_levels, added: false });
        }
    }
    let mut records = Vec::new();
    for (side, from) in [(BASELINE, base), (CANDIDATE, cand)] {
        for r in &from.records {
            let Some(id) = ids.get(&(r.cell.as_str(), side)) else { continue };
            let mut r = r.clone();
            r.cell.clone_from(id);
            r.levels.insert(side_key.clone(), side.to_owned());
            records.push(r);
        }
    }
    let snapshot = Snapshot {
        trials: Trials::from_records(&records),
        sessions: base.sessions.iter().chain(&cand.sessions).cloned().collect(),
        warnings: Vec::new(),
    };
    let mut exp = base.exp.clone();
    let at = crate::diag::Pos::default();
    exp.spec.analysis.compare = vec![Located::new(
        Compare {
            factor: Located::new(side_key.clone(), at),
            baseline: Located::new(Scalar::str(BASELINE), at),
            paired_by: None,
        },
        at,
    )];
    let ((), summary) = summarize_owned(&exp, &plan, snapshot, |_| ());
    let summary = summary.map_err(|source| VersusError::Analyze { experiment: exp.name.clone(), source })?;

    let failed = gate::tripped(&summary, fail_on);
    let output = Versus {
        baseline: base.info(),
        candidate: cand.info(),
        settings: summary.settings.clone(),
        not_comparable,
        only_baseline: only(&a_cells, &b_cells),
        only_candidate: only(&b_cells, &a_cells),
        environment_differences: facts::differences(&base.sessions, &cand.sessions),
        warnings: summary.warnings.clone(),
        fail_on,
        failed,
        comparisons: summary.comparisons.clone(),
    };
    Ok((output, summary))
}
