//! Warnings about the `run` command of every analysed cell as it ran: `dd` without a
//! sync flag, and a test file small enough for the page cache of the machines its
//! sessions ran on (or of unknown memory, for imported trials) — unless the tool synced
//! its writes before it ended, or the disks' telemetry shows they reached the disk.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use rayon::prelude::*;

use super::list;
use super::tools::{Tool, tools};
use crate::analyze::analysed::Analysed;
use crate::analyze::table::Rows;
use crate::plan::Plan;
use crate::plan::render::{Builtins, render};
use crate::spec::Experiment;
use crate::store::{Event, Name, Snapshot};
use crate::summary::{Warning, WarningKind};
use template::Templates;

/// A test file must be at least this many times the host's memory for the page cache
/// not to hold it.
const MEMORY_FACTOR: u64 = 2;

/// Warnings about the rendered `run` command of every analysed cell: `dd` without a sync
/// flag, and test files small enough for the page cache. `written` is the least a
/// cell's trials are known to have written to its disks themselves, when telemetry
/// knows it of every trial ([`crate::analyze::telemetry::CellsTelemetry::least_written`]).
pub(crate) fn command_warnings(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    analysed: &[Analysed],
    written: &(dyn Fn(usize) -> Option<f64> + Sync),
) -> Vec<Warning> {
    let memory = session_memory(snapshot);
    // Each cell's hosts and sessions by their names' numbers first (a few, mostly the
    // value before's): a set of their texts built from every value of every group cost
    // more than the commands' rendering at 10⁶ trials. A cell's groups of the same trials
    // share their rows, and are looked at once.
    let mut numbers: BTreeMap<usize, (Vec<Name>, Vec<Name>)> = BTreeMap::new();
    let mut seen: Option<&Arc<Rows>> = None;
    let add = |names: &mut Vec<Name>, n: Name| {
        if names.last() != Some(&n) && !names.contains(&n) {
            names.push(n);
        }
    };
    for a in analysed {
        if seen.is_some_and(|rows| Arc::ptr_eq(rows, &a.group.rows)) {
            continue;
        }
        seen = Some(&a.group.rows);
        let (hosts, sessions) = numbers.entry(a.group.cell).or_default();
        a.group.rows.hosts.iter().for_each(|&h| add(hosts, h));
        a.group.rows.sessions.iter().for_each(|&s| add(sessions, s));
    }
    let name = |n: Name| snapshot.trials.names.get(n);
    let cells: BTreeMap<usize, (BTreeSet<&str>, Vec<&str>)> = numbers
        .into_iter()
        .map(|(cell, (hosts, sessions))| {
            (cell, (hosts.into_iter().map(name).collect(), sessions.into_iter().map(name).collect()))
        })
        .collect();
    // the experiment's templates compiled once, not once for each cell
    let templates = crate::plan::render::templates(exp);
    let findings: Vec<(Option<String>, Option<String>, Option<String>)> = cells
        .par_iter()
        .map(|(&index, (hosts, sessions))| {
            let cell = &plan.cells[index];
            let host = hosts.first().copied().unwrap_or("local");
            // A command that does not render ran nowhere either; nothing to say about it.
            let Some(run) = render_run(&templates, exp, plan, index, host) else {
                return (None, None, None);
            };
            let label = plan.label(cell);
            let mut unsynced = None;
            let mut small = None;
            let mut unknown = None;
            for tool in tools(&run) {
                if let Tool::Dd { synced: false, .. } = tool {
                    unsynced = Some(label.clone());
                }
                let Some(size) = tool.file_size() else { continue };
                if tool.synced() || written(index).is_some_and(|w| w >= size as f64) {
                    continue;
                }
                // the largest memory among the cell's own sessions: a host booted with
                // less (a dom0's `dom0_mem`) caches less
                let Some(&(host, mem)) =
                    sessions.iter().filter_map(|s| memory.get(*s)).max_by_key(|(_, m)| *m)
                else {
                    // Imported trials carry no facts: say what the check would need.
                    unknown = Some(format!(
                        "{label}: {} writes {} on {} (cached by a host with more than {} of memory)",
                        tool.name(),
                        gib(size),
                        hosts.iter().copied().collect::<Vec<_>>().join(", "),
                        gib(size / MEMORY_FACTOR)
                    ));
                    continue;
                };
                if size < MEMORY_FACTOR * mem {
                    small = Some(format!(
                        "{label}: {} writes {} on {host} with {} of memory",
                        tool.name(),
                        gib(size),
                        gib(mem)
                    ));
                }
            }
            (unsynced, small, unknown)
        })
        .collect();
    let unsynced: Vec<String> = findings.iter().filter_map(|f| f.0.clone()).collect();
    let small: Vec<String> = findings.iter().filter_map(|f| f.1.clone()).collect();
    let unknown: Vec<String> = findings.iter().filter_map(|f| f.2.clone()).collect();
    let mut warnings = Vec::new();
    if !unsynced.is_empty() {
        warnings.push(Warning::new(
            WarningKind::DdWithoutSync,
            format!(
                "dd writes without conv=fdatasync, conv=fsync or oflag=direct, so it times the page cache, \
                 not the disk: {}",
                list(&unsynced)
            ),
        ));
    }
    if !small.is_empty() {
        warnings.push(Warning::new(
            WarningKind::SmallTestFile,
            format!(
                "the test file is smaller than {MEMORY_FACTOR}× the host's memory, so the page cache can hold it: {}",
                list(&small)
            ),
        ));
    }
    if !unknown.is_empty() {
        warnings.push(Warning::new(
            WarningKind::MemoryUnknown,
            format!(
                "no session recorded the host's memory (imported trials carry no facts), so whether the \
                 page cache could hold the test file is unknown; it can unless the file is at least \
                 {MEMORY_FACTOR}× the memory: {}",
                list(&unknown)
            ),
        ));
    }
    warnings
}

/// A cell's `run` command as it ran on `host` (the workdir spelled `WORKDIR`); `None`
/// when it does not render.
fn render_run(
    templates: &Templates,
    exp: &Experiment,
    plan: &Plan,
    cell: usize,
    host: &str,
) -> Option<String> {
    let builtins = Builtins { workdir: "WORKDIR", repetition: 1, host };
    render(templates, exp, plan, &plan.cells[cell], &builtins).ok().map(|c| c.run)
}

/// [`render_run`] with templates of its own.
pub(crate) fn rendered_run(exp: &Experiment, plan: &Plan, cell: usize, host: &str) -> Option<String> {
    render_run(&Templates::new(), exp, plan, cell, host)
}

/// The host and memory each session recorded (facts key `memory`, bytes), by session id.
fn session_memory(snapshot: &Snapshot) -> HashMap<&str, (&str, u64)> {
    let sessions = snapshot.sessions.iter().filter(|s| s.event == Event::Start);
    sessions
        .filter_map(|s| {
            let bytes = s.facts.get("memory")?.trim().parse::<u64>().ok()?;
            Some((s.session.as_str(), (s.host.as_str(), bytes)))
        })
        .collect()
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cell measured on several hosts, its trials alternating between them and in
    /// sessions of their own: the page-cache check weighs the host with the most memory
    /// among the cell's, whatever its metrics and the order of its trials.
    #[test]
    fn a_test_file_is_weighed_against_the_largest_memory_of_its_cells_hosts() {
        use crate::analyze::{MemoryStore, summarize_store};
        use vocab::{Better, MeanKind};
        let yaml = "matrix:\n  n: [64, 200000]\nrun: dd if=/dev/zero of=/tmp/f bs=1M count={{ n }}\n";
        let mut m = MemoryStore::new("hosts.yaml", yaml);
        m.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic);
        for (session, host, memory) in
            [("s1", "beta", 1u64 << 30), ("s2", "alpha", 64 << 30), ("s3", "beta", 1 << 30)]
        {
            m.session(session, host, &[("memory", &memory.to_string())]);
            for _ in 0..3 {
                for n in ["64", "200000"] {
                    m.trial(&[("n", n)], &[("rate", 1e8), ("time", 0.5)]);
                }
            }
        }
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        let small: Vec<&str> = summary
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::SmallTestFile)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(small.len(), 1, "{small:?}");
        assert!(
            small[0].ends_with(": n=64: dd writes 0.06 GiB on alpha with 64.00 GiB of memory"),
            "{}",
            small[0]
        );
        assert!(!summary.warnings.iter().any(|w| w.kind == WarningKind::MemoryUnknown));
    }

    /// A host booted with less memory (a dom0's `dom0_mem`) caches less: each cell is
    /// weighed against the memory its own sessions recorded (the lab once quoted 1.92 GiB for
    /// dom0 cells whose sessions had 640 MiB), and a dd that syncs is weighed not at all.
    #[test]
    fn each_cell_is_weighed_against_its_own_sessions_memory_and_a_synced_dd_not_at_all() {
        use crate::analyze::{MemoryStore, summarize_store};
        use vocab::{Better, MeanKind};
        let small = |sync: &str| {
            let yaml = format!(
                "matrix:\n  kernel: [bare, xen]\nrun: dd if=/dev/zero of=/tmp/f bs=1M count=64 {sync}\n"
            );
            let mut m = MemoryStore::new("boots.yaml", &yaml);
            m.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic);
            for (session, kernel, memory) in [("s1", "bare", 2u64 << 30), ("s2", "xen", 640 << 20)] {
                m.session(session, "lab", &[("memory", &memory.to_string())]);
                for _ in 0..3 {
                    m.trial(&[("kernel", kernel)], &[("rate", 1e8)]);
                }
            }
            let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
            let found = summary.warnings.iter().filter(|w| w.kind == WarningKind::SmallTestFile);
            found.map(|w| w.message.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            small(""),
            ["the test file is smaller than 2× the host's memory, so the page cache can hold it: \
              kernel=bare: dd writes 0.06 GiB on lab with 2.00 GiB of memory; kernel=xen: dd writes 0.06 GiB \
              on lab with 0.62 GiB of memory"]
        );
        for sync in ["conv=fdatasync", "conv=fsync", "oflag=dsync", "oflag=direct"] {
            assert_eq!(small(sync), Vec::<String>::new(), "{sync}");
        }
    }
}
