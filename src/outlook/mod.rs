//! What a run would do and what is left, from a plan and the store, without running a
//! trial: each cell's progress, whether it runs on this host, an estimate of the time
//! left, and which cells the last runs gave up on. `plan`, `status`, `report` and
//! `--dry-run` ask here, each with the snapshot of the store it loaded; `table.rs` and
//! `json.rs` write `margin plan`'s outline of it, `dry_run.rs` what `--dry-run` shows.

pub(crate) mod dry_run;
pub(crate) mod json;
pub(crate) mod table;

use std::collections::HashMap;

use crate::analyze::stopping::Rule;
use crate::plan::{Cell, LOCAL_HOST, Plan, host_of};
use crate::run::{RunError, RunOptions, facts, machines_of, repetitions, ssh_entry};
use crate::spec::{Experiment, Repetitions};
use crate::store::{CellProgress, Event, ProblemKind, ProgressByCell, SessionRecord, Snapshot};
use crate::summary::Pending;

/// For `plan` and `status`: each cell's progress, whether it runs here, and an estimate.
#[derive(Debug, Clone)]
pub(crate) struct CellOutlook {
    /// Successful measurements so far.
    pub(crate) ok: u32,
    /// Every record so far (the next trial's repetition is this + 1).
    pub(crate) attempts: u32,
    /// Trials still to run, fewest and most.
    pub(crate) remaining: (u32, u32),
    pub(crate) done: bool,
    /// Why it cannot run on this host, if it cannot.
    pub(crate) pending: Option<String>,
    /// Seconds the remaining trials should take, from earlier trials' wall times.
    pub(crate) estimate: Option<(f64, f64)>,
}

/// Where the plan stands on this host, cell by cell.
#[derive(Debug, Clone)]
pub(crate) struct Outlook {
    /// One per cell of the plan, in its order.
    pub(crate) cells: Vec<CellOutlook>,
    /// Records of cell ids the plan no longer has (its commands changed since), kept but
    /// not counted.
    pub(crate) set_aside: usize,
}

/// Where every cell of the plan stands on this host, from `snapshot`.
pub(crate) fn outlook(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    options: &RunOptions,
) -> Result<Outlook, RunError> {
    // a fixed number of repetitions reads each cell's counts, not its values
    let values = !matches!(repetitions(plan, options), Repetitions::Fixed(_));
    let (progress, set_aside) = crate::store::progress_labelled(
        plan,
        &snapshot.trials,
        &snapshot.sessions,
        options.label.as_deref(),
        values,
    );
    outlook_of(exp, plan, progress, set_aside, options)
}

/// [`outlook`] from the cells' progress (a store's [`crate::store::Progress`]), for
/// commands that need no more of the trials.
pub(crate) fn outlook_of(
    exp: &Experiment,
    plan: &Plan,
    progress: ProgressByCell,
    set_aside: usize,
    options: &RunOptions,
) -> Result<Outlook, RunError> {
    facts::check_sysroot().map_err(RunError::Sysroot)?;
    let dir = std::env::temp_dir();
    let source = facts::Local::new(&dir);
    let detected = facts::detect(exp, &facts::gather(&source), &source);
    let rule = Rule::new(exp, plan, repetitions(plan, options));
    let known: Vec<f64> = progress.values().filter_map(|p| p.mean_wall).collect();
    let overall = (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64);
    let warmup = f64::from(plan.warmup);
    let none = CellProgress::default();
    let board = &progress;
    let out = plan
        .cells
        .iter()
        .enumerate()
        .map(|(i, cell)| {
            let progress = progress.get(&i).unwrap_or(&none);
            let done = rule.is_done(i, progress, board);
            let (lo, hi) = rule.remaining(i, progress, board);
            let per = progress.mean_wall.or(overall);
            let warm = if done { 0.0 } else { warmup };
            let estimate = per.map(|t| ((f64::from(lo) + warm) * t, (f64::from(hi) + warm) * t));
            let pending = if done {
                None
            } else if let Some(remote) = remote_host(exp, plan, cell) {
                Some(remote)
            } else {
                facts::pending_reason(&detected, plan.levels(cell))
            };
            CellOutlook {
                ok: progress.ok,
                attempts: progress.attempts,
                remaining: (lo, hi),
                done,
                pending,
                estimate,
            }
        })
        .collect();
    Ok(Outlook { cells: out, set_aside })
}

/// Per host, in order of appearance: (host, how it is reached, cells, done).
pub(crate) fn hosts_summary(
    exp: &Experiment,
    plan: &Plan,
    outlook: &[CellOutlook],
) -> Vec<(String, String, usize, usize)> {
    let mut out: Vec<(String, String, usize, usize)> = Vec::new();
    for (cell, o) in plan.cells.iter().zip(outlook) {
        let host = host_of(plan, cell);
        let i = match out.iter().position(|(h, ..)| h == host) {
            Some(i) => i,
            None => {
                let how = match exp.spec.gang(host) {
                    // docs/experiment-file.md, gangs
                    Some(gang) => format!(
                        "gang of {}, started together: a trial lasts as long as its slowest member",
                        gang.members().join(", ")
                    ),
                    None => ssh_entry(exp, host)
                        .map_or("this machine".to_string(), |(_, dest)| format!("ssh {dest}")),
                };
                out.push((host.to_string(), how, 0, 0));
                out.len() - 1
            }
        };
        out[i].2 += 1;
        out[i].3 += usize::from(o.done);
    }
    // Hosts of one machine take turns (`machine_of`): say which, so the plan shows why
    // their trials never overlap and why their times add up.
    // A gang holds all its members' machines (`machines_of`).
    let hosts: Vec<(String, Vec<String>)> =
        out.iter().map(|(host, ..)| (host.clone(), machines_of(exp, host))).collect();
    for (entry, (host, machines)) in out.iter_mut().zip(&hosts) {
        let others: Vec<&str> = hosts
            .iter()
            .filter(|(h, m)| h != host && m.iter().any(|m| machines.contains(m)))
            .map(|(h, _)| h.as_str())
            .collect();
        if !others.is_empty() {
            let word = if machines.len() == 1 { "machine" } else { "machines" };
            entry.1.push_str(&format!(
                "; {word} {}, taking turns with {}",
                machines.join(", "),
                others.join(", ")
            ));
        }
    }
    out
}

/// For `plan`, which connects to nothing: a cell on a remote host runs there.
fn remote_host(exp: &Experiment, plan: &Plan, cell: &Cell) -> Option<String> {
    let host = host_of(plan, cell);
    if let Some(gang) = exp.spec.gang(host) {
        let remote: Vec<String> = gang
            .members()
            .into_iter()
            .filter_map(|m| ssh_entry(exp, m).map(|(_, ssh)| format!("{m} ({ssh})")))
            .collect();
        return (!remote.is_empty()).then(|| {
            format!("runs on gang `{host}` of {}: `margin run` connects to them", remote.join(", "))
        });
    }
    let (_, ssh) = ssh_entry(exp, host)?;
    Some(format!("runs on host `{host}` ({ssh}): `margin run` connects to it"))
}

/// The cells the last run on their host abandoned, by id, with why: each host runs in a
/// session of its own, and an import runs nothing and abandons nothing.
pub(crate) fn last_abandoned(
    exp: &Experiment,
    plan: &Plan,
    sessions: &[SessionRecord],
) -> HashMap<String, String> {
    let mut last_runs: Vec<&SessionRecord> = Vec::new();
    for s in sessions.iter().rev().filter(|s| s.event == Event::End && !s.import) {
        if !last_runs.iter().any(|r| r.host == s.host) {
            last_runs.push(s);
        }
    }
    let mut out = HashMap::new();
    for cell in &plan.cells {
        let id = cell.id.to_string();
        // the session's host is the executor's: a host without ssh is this machine
        let host = host_of(plan, cell);
        let host =
            if ssh_entry(exp, host).is_some() || exp.spec.gang(host).is_some() { host } else { LOCAL_HOST };
        let Some(run) = last_runs.iter().find(|r| r.host == host && r.abandoned.contains(&id)) else {
            continue;
        };
        let why = run
            .problems
            .iter()
            .find(|p| p.cell == id && p.what == ProblemKind::Abandoned)
            .map(|p| p.why.clone());
        out.insert(id, why.unwrap_or_else(|| "too many failures".to_string()));
    }
    out
}

/// The cells of an experiment still pending on this host, from a snapshot of its store.
pub(crate) fn pending(exp: &Experiment, plan: &Plan, snapshot: &Snapshot) -> Result<Vec<Pending>, RunError> {
    let outlook = outlook(exp, plan, snapshot, &RunOptions::default())?.cells;
    let gave_up = last_abandoned(exp, plan, &snapshot.sessions);
    let pending = plan
        .cells
        .iter()
        .zip(&outlook)
        .filter(|(_, o)| !o.done)
        .map(|(cell, o)| Pending {
            cell: plan.label(cell),
            reason: o.pending.clone().unwrap_or_else(|| match (gave_up.get(&cell.id.to_string()), o.ok) {
                (Some(why), _) => {
                    format!("abandoned by the last run ({why}; see Failures): `margin run` tries it again")
                }
                (None, 0) => "not run yet: `margin run` on this host runs it".to_string(),
                (None, n) => {
                    format!("{n} trials so far, fewer than the repetitions ask: `margin run` adds the rest")
                }
            }),
        })
        .collect();
    Ok(pending)
}
