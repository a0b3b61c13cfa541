//! What the store records besides the numbers: the trials that failed, the cells that
//! were abandoned, the facts of the machines, and how to run the experiment again.

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;

use super::table::status_name;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{Event, Snapshot, Trials};
use crate::summary::{CellFailure, EnvColumn, Environment, FactRow, Reproduce, SessionInfo, TrialFailure};

/// Every trial of a current cell that did not yield metrics, in the order they ran.
pub(crate) fn failures(plan: &Plan, trials: &Trials) -> Vec<TrialFailure> {
    let cells = trials.cells_in(plan);
    let names = &trials.names;
    trials
        .failed
        .iter()
        .filter_map(|f| {
            let t = f.trial;
            Some(TrialFailure {
                cell: plan.label(&plan.cells[*cells.get(&trials.cell[t])?]),
                trial: f.id.clone().unwrap_or_else(|| trials.id(t).into_owned()),
                repetition: trials.repetition[t],
                warmup: trials.warmup[t],
                host: names.get(trials.host[t]).to_owned(),
                session: names.get(trials.session[t]).to_owned(),
                started_at: f.started_at.clone(),
                status: status_name(trials.status[t]),
                exit_code: f.exit_code,
                error: f.error.clone(),
            })
        })
        .collect()
}

/// Cells a session abandoned (a failed `setup`, too many failed trials) or whose
/// `cleanup` failed, from the sessions' end records: no trial record says so. Cells that
/// are no longer in the plan are left out.
pub(crate) fn cell_failures(plan: &Plan, snapshot: &Snapshot) -> Vec<CellFailure> {
    let ends = snapshot.sessions.iter().filter(|s| s.event == Event::End && !s.problems.is_empty());
    let mut cells: Option<HashMap<String, usize>> = None;
    let mut out = Vec::new();
    for end in ends {
        let cells = cells.get_or_insert_with(|| {
            plan.cells.iter().enumerate().map(|(i, c)| (c.id.to_string(), i)).collect()
        });
        for p in &end.problems {
            let Some(&i) = cells.get(&p.cell) else { continue };
            out.push(CellFailure {
                cell: plan.label(&plan.cells[i]),
                host: end.host.clone(),
                session: end.session.clone(),
                at: end.at.clone(),
                what: p.what.clone(),
                why: p.why.clone(),
            });
        }
    }
    out
}

/// One column per host and distinct set of facts, in the order the sessions started.
pub(crate) fn environment(snapshot: &Snapshot) -> Environment {
    let mut columns: Vec<(EnvColumn, &IndexMap<String, String>)> = Vec::new();
    for session in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        match columns.iter_mut().find(|(c, facts)| c.host == session.host && **facts == session.facts) {
            Some((column, _)) => column.sessions.push(session.session.clone()),
            None => columns.push((
                EnvColumn { host: session.host.clone(), sessions: vec![session.session.clone()] },
                &session.facts,
            )),
        }
    }
    let mut keys: IndexMap<&str, ()> = IndexMap::new();
    for (_, facts) in &columns {
        keys.extend(facts.keys().map(|k| (k.as_str(), ())));
    }
    let rows = keys
        .keys()
        .map(|&fact| {
            let values: Vec<Option<String>> = columns.iter().map(|(_, f)| f.get(fact).cloned()).collect();
            let differs = values.iter().any(|v| *v != values[0]);
            FactRow { fact: fact.to_owned(), values, differs }
        })
        .collect();
    Environment { columns: columns.into_iter().map(|(c, _)| c).collect(), rows }
}

pub(crate) fn reproduce(exp: &Experiment, snapshot: &Snapshot) -> Reproduce {
    let spec_hash = blake3::hash(exp.source.as_bytes()).to_hex().to_string();
    let mut sessions: Vec<SessionInfo> = Vec::new();
    for record in &snapshot.sessions {
        match record.event {
            Event::Start => sessions.push(SessionInfo {
                session: record.session.clone(),
                host: record.host.clone(),
                started_at: record.at.clone(),
                ended_at: None,
                seed: record.seed,
                spec_hash: record.spec_hash.clone(),
                margin_version: record.margin_version.clone(),
                spec_changed: record.spec_hash != spec_hash,
                label: record.label.clone(),
            }),
            Event::End => {
                if let Some(s) = sessions.iter_mut().find(|s| s.session == record.session) {
                    s.ended_at = Some(record.at.clone());
                }
            }
        }
    }
    let file = exp.path.display().to_string();
    // The order of the last session that ran trials is the one to repeat (an import has
    // no order); without one, the spec's.
    let trials = &snapshot.trials;
    let imports: BTreeSet<&str> = (0..trials.len())
        .filter(|&t| trials.status[t] == crate::store::Status::Imported)
        .map(|t| trials.names.get(trials.session[t]))
        .collect();
    let seed = sessions
        .iter()
        .rev()
        .find(|s| !imports.contains(s.session.as_str()))
        .map(|s| s.seed)
        .or(exp.spec.seed);
    let command = match seed {
        Some(seed) => format!("margin run {file} --seed {seed}"),
        None => format!("margin run {file}"),
    };
    Reproduce {
        experiment_file: file,
        command,
        commands: exp.spec.commands().map(|(k, v)| (k.to_owned(), v.value.clone())).collect(),
        spec_hash,
        margin_version: env!("CARGO_PKG_VERSION").to_owned(),
        sessions,
    }
}
