//! The unit a comparison's trials vary by: each session's boot, or the session itself,
//! and the count of those units behind each side of a comparison.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::super::analysed::Analysed;
use crate::store::{BOOT_ID, Event, Name, Names, Snapshot, Trials};
use crate::summary::Replication;
use stats::components::Components;

/// The unit each session's trials vary by between levels: its boot when it recorded
/// one (two runs in one boot are one unit), else the session itself (each import is one).
pub(crate) struct Units<'a> {
    /// The unit of each session, by its name's number (`None` for a name that is not a
    /// trial's session): looked up by place for every value of every comparison, where
    /// hashing the session's id each time cost a few per cent of a large report.
    of_name: Vec<Option<&'a str>>,
    names: &'a Names,
    /// Whether every session named a boot.
    all_boots: bool,
}

impl<'a> Units<'a> {
    /// The sessions the trials name, each once, in the order first named.
    pub(crate) fn sessions_of(trials: &Trials) -> Vec<Name> {
        let mut seen = vec![false; trials.names.len()];
        let mut sessions = Vec::new();
        for &session in &trials.session {
            if !std::mem::replace(&mut seen[session.index()], true) {
                sessions.push(session);
            }
        }
        sessions
    }

    /// The units of the `sessions` the trials name ([`Units::sessions_of`]): the
    /// snapshot's names and sessions are read, not its trial columns.
    pub(crate) fn new(snapshot: &'a Snapshot, sessions: &[Name]) -> Self {
        let mut by_session = HashMap::new();
        let mut all_boots = true;
        for s in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
            match s.facts.get(BOOT_ID) {
                Some(boot) => {
                    by_session.insert(s.session.as_str(), boot.as_str());
                }
                None => all_boots = false,
            }
        }
        let trials = &snapshot.trials;
        let mut of_name = vec![None; trials.names.len()];
        for &session in sessions {
            of_name[session.index()].get_or_insert_with(|| {
                let id = trials.names.get(session);
                by_session.get(id).copied().unwrap_or(id)
            });
        }
        Units { of_name, names: &trials.names, all_boots }
    }

    fn of(&self, session: Name) -> &'a str {
        // every trial's session has its unit; another name is its own
        self.of_name.get(session.index()).copied().flatten().unwrap_or_else(|| self.names.get(session))
    }

    /// The units of a cell's trials, each once: whether two cells share one is all an
    /// unpaired comparison asks of them before it knows its design (their values are
    /// wanted only when they share none).
    pub(super) fn of_cell(&self, cell: &Analysed) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = Vec::new();
        let mut last = None;
        for &session in cell.group.rows.sessions.iter().take(cell.all.len()) {
            if last == Some(session) {
                continue;
            }
            last = Some(session);
            let unit = self.of(session);
            if !out.contains(&unit) {
                out.push(unit);
            }
        }
        out
    }

    /// Each unit's values of a cell (all its trials, or those kept), in first-seen order,
    /// on the analysis scale.
    pub(super) fn values(&self, cell: &Analysed, kept: bool) -> IndexMap<&'a str, Vec<f64>> {
        let aside = &cell.analysis.outliers.set_aside;
        // a cell's units are few (its sessions' boots): found in a short list, each
        // value's mostly the one before's, and hashed once each at the end
        let mut out: Vec<(&'a str, Vec<f64>)> = Vec::new();
        let mut last = usize::MAX;
        for (i, (&v, &session)) in cell.all.analysed().iter().zip(&cell.group.rows.sessions).enumerate() {
            if kept && aside.binary_search(&i).is_ok() {
                continue;
            }
            let unit = self.of(session);
            if out.get(last).is_none_or(|(u, _)| *u != unit) {
                last = match out.iter().position(|(u, _)| *u == unit) {
                    Some(k) => k,
                    None => {
                        out.push((unit, Vec::new()));
                        out.len() - 1
                    }
                };
            }
            out[last].1.push(v);
        }
        out.into_iter().collect()
    }

    /// The boots (or sessions) behind a comparison between disjoint ones: how many each
    /// side has (`sides`: unit → its trials), how many trials they hold, and each side's
    /// variance components.
    pub(super) fn replication(
        &self,
        sides: &[&IndexMap<&str, Vec<f64>>; 2],
        (baseline_components, level_components): (Option<Components>, Option<Components>),
    ) -> Replication {
        let sizes = sides.iter().flat_map(|s| s.values().map(Vec::len));
        Replication {
            unit: if self.all_boots { "boot" } else { "session" },
            baseline_units: sides[0].len(),
            level_units: sides[1].len(),
            trials_per_unit: (sizes.clone().max().unwrap_or(0), sizes.min().unwrap_or(0)),
            baseline_components,
            level_components,
            advice: None,
        }
    }
}
