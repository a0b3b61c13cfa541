//! What the store records besides the numbers: the trials that failed, the cells that
//! were abandoned, the facts of the machines, and how to run the experiment again.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;

use super::table::status_name;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{BOOT_ID, Event, Snapshot, Trials};
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

/// One column per host and distinct set of facts, in the order the sessions started;
/// what changes in every boot by nature ([`stable`]) neither splits a column nor marks a
/// row as differing, so the boots of one combination of levels are one column.
pub(crate) fn environment(snapshot: &Snapshot) -> Environment {
    type Stable<'s> = IndexMap<&'s str, Cow<'s, str>>;
    let mut columns: Vec<(EnvColumn, Stable<'_>)> = Vec::new();
    for session in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        let facts: Stable<'_> =
            session.facts.iter().filter_map(|(k, v)| Some((k.as_str(), stable(k, v)?))).collect();
        let boot = session.facts.get(BOOT_ID);
        match columns.iter_mut().find(|(c, f)| c.host == session.host && *f == facts) {
            Some((column, _)) => {
                column.sessions.push(session.session.clone());
                if let Some(boot) = boot.filter(|b| !column.boots.contains(b)) {
                    column.boots.push(boot.clone());
                }
            }
            None => columns.push((
                EnvColumn {
                    host: session.host.clone(),
                    sessions: vec![session.session.clone()],
                    boots: boot.into_iter().cloned().collect(),
                },
                facts,
            )),
        }
    }
    let mut keys: IndexMap<&str, ()> = IndexMap::new();
    for session in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        keys.extend(session.facts.keys().map(|k| (k.as_str(), ())));
    }
    let rows = keys
        .keys()
        .map(|&fact| {
            if fact == BOOT_ID {
                // each column's boots, the boot_id is what tells them apart
                let values = columns.iter().map(|(c, _)| (!c.boots.is_empty()).then(|| c.boots.join(", ")));
                return FactRow {
                    fact: fact.to_owned(),
                    values: values.collect(),
                    differs: false,
                    volatile: true,
                };
            }
            let values: Vec<Option<String>> =
                columns.iter().map(|(_, f)| f.get(fact).map(|v| v.clone().into_owned())).collect();
            let differs = values.iter().any(|v| *v != values[0]);
            FactRow { fact: fact.to_owned(), values, differs, volatile: false }
        })
        .collect();
    Environment { columns: columns.into_iter().map(|(c, _)| c).collect(), rows }
}

/// `xl info`'s lines that change from boot to boot (or moment to moment) by nature: the
/// memory free and shared, the claims outstanding, the clock rate calibrated at boot.
const XL_INFO_VOLATILE: [&str; 5] =
    ["free_memory", "sharing_freed_memory", "sharing_used_memory", "outstanding_claims", "cpu_mhz"];

/// A fact as the environment compares it: what stays the same from boot to boot of one
/// machine state. `None` for the boot's id, which changes in every boot; `xl info` less
/// its [`XL_INFO_VOLATILE`] lines; `xl vcpu-list` less the columns of the moment (the
/// CPU a vCPU runs on, its state, its CPU seconds), keeping each vCPU and its affinity.
fn stable<'v>(fact: &str, value: &'v str) -> Option<Cow<'v, str>> {
    match fact {
        BOOT_ID => None,
        "xl_info" => Some(Cow::Owned(
            value
                .lines()
                .filter(|l| l.split_once(':').is_none_or(|(k, _)| !XL_INFO_VOLATILE.contains(&k.trim())))
                .collect::<Vec<_>>()
                .join("\n"),
        )),
        "xl_vcpu_list" => Some(Cow::Owned(
            value
                .lines()
                .map(|l| {
                    // Name ID VCPU CPU State Time(s) Affinity…: the 4th to 6th columns go
                    let words: Vec<&str> = l.split_whitespace().collect();
                    match words.as_slice() {
                        [name, id, vcpu, _, _, _, rest @ ..] => {
                            [&[*name, *id, *vcpu][..], rest].concat().join(" ")
                        }
                        _ => words.join(" "),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n"),
        )),
        _ => Some(Cow::Borrowed(value)),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The lab's real `xl info` and `xl vcpu-list Domain-0` of two boots of one dom0_mem
    /// (reports/lab-boots, boots 3 and 4): what changes by nature goes, the rest stays,
    /// and the two boots then agree.
    #[test]
    fn what_changes_in_every_boot_is_left_out_of_the_facts_compared() {
        let info = |free: &str, mhz: &str| {
            format!(
                "host                   : margin-lab\nnr_cpus                : 2\ncpu_mhz                : {mhz}\n\
                 total_memory           : 2047\nfree_memory            : {free}\nsharing_freed_memory   : 0\n\
                 outstanding_claims     : 0\nxen_commandline        : dom0_mem=1024M,max:1024M dom0_max_vcpus=2"
            )
        };
        let (a, b) = (info("1000", "2445.429"), info("998", "2445.411"));
        let (sa, sb) = (stable("xl_info", &a).unwrap(), stable("xl_info", &b).unwrap());
        assert_eq!(sa, sb);
        assert_eq!(
            sa,
            "host                   : margin-lab\nnr_cpus                : 2\ntotal_memory           : 2047\n\
             xen_commandline        : dom0_mem=1024M,max:1024M dom0_max_vcpus=2"
        );
        let vcpus = |state: &str, time: &str| {
            format!(
                "Name                                ID  VCPU   CPU State   Time(s) Affinity (Hard / Soft)\n\
                 Domain-0                             0     0    0   {state}     {time}  all / all\n\
                 Domain-0                             0     1    1   r--     187.5  0-1 / all"
            )
        };
        let (a, b) = (vcpus("r--", "283.3"), vcpus("-b-", "210.6"));
        assert_eq!(stable("xl_vcpu_list", &a), stable("xl_vcpu_list", &b));
        assert_eq!(
            stable("xl_vcpu_list", &a).unwrap(),
            "Name ID VCPU Affinity (Hard / Soft)\nDomain-0 0 0 all / all\nDomain-0 0 1 0-1 / all"
        );
        assert_eq!(stable(BOOT_ID, "b0ada5d8-40a5-4ff0-905b-64dbec8e60f8"), None);
        assert_eq!(stable("memory", "2060390400").as_deref(), Some("2060390400"));
    }
}
