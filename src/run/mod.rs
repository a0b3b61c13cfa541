//! Running an experiment: sessions of rounds over the cells that match their host, one
//! trial at a time per host, each recorded durably before that host's next trial begins.
//!
//! The jobs, one file each, from the top: [`session`] runs every host's session and
//! writes the session log and the progress; [`host`] is one host's thread (connect,
//! facts, the cells it will run, its session record); [`schedule`] decides which cell
//! runs next (interleaved rounds in a seeded random order, or cell after cell) and when a
//! cell is done; [`cell`] opens and closes a cell (workdir, `setup`, `cleanup`, giving up
//! after `max_failures`); [`service`] keeps the services the cells use running (started,
//! ready, alive, stopped); [`trial`] runs one trial (`prepare`, the command, `conclude`,
//! the raw output saved, the record appended); [`workdir`] names the scratch folders.
//! Trials run through an [`exec::Executor`] (this machine, or [`ssh`]); [`process`] is
//! how a command is spawned, timed out, killed and reaped; [`display`] shows the run as
//! it goes.
//!
//! Hooks follow hyperfine: `setup` once per cell per session, `prepare` and `conclude`
//! around each trial, `cleanup` once per cell per session, after its last trial. Failures are data: they are
//! recorded and the run goes on, until a cell fails `max_failures` times in a session. An
//! unreachable host is reported and the other hosts carry on.

pub(crate) mod boot;
mod cell;
pub mod display;
pub(crate) mod exec;
pub mod facts;
mod failure;
#[cfg(test)]
mod fake;
pub(crate) mod gang;
mod host;
pub(crate) mod import;
mod orphans;
pub mod process;
mod schedule;
mod service;
mod session;
pub(crate) mod ssh;
mod state;
pub(crate) mod telemetry;
#[cfg(test)]
mod tests;
mod trial;
pub(crate) mod workdir;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use display::Progress;
pub use failure::{GaveUp, HostError, RunError, WorkdirError};

use crate::plan::{LOCAL_HOST, Plan};
use crate::spec::{Experiment, Repetitions};
use crate::store::{CellProgress, ProgressByCell, Store};

/// A run: what it runs (the experiment, its plan), where it records (the store), how
/// (the options, the stopping rule), and the flag Ctrl-C sets. The boot loop runs each
/// boot's session with options and a rule of its own (`Run { options, ..run }`).
#[derive(Clone, Copy)]
pub struct Run<'a> {
    pub exp: &'a Experiment,
    pub plan: &'a Plan,
    pub store: &'a Store,
    pub options: &'a RunOptions,
    pub rule: &'a dyn Stopping,
    pub interrupt: &'a AtomicBool,
}

/// Run the cells of the plan that still need trials: those of hosts with a boot recipe
/// boot by boot ([`boot`]), the others in one session ([`session`]).
pub fn run(run: &Run<'_>, ui: &mut dyn Progress) -> Result<Outcome, RunError> {
    let mut booted = crate::plan::boots::booted_hosts(run.exp, run.plan);
    if let Some(only) = &run.options.host {
        booted.retain(|h| h == only);
    }
    // a boot's own session (`boots_left`) is one session
    if booted.is_empty() || run.options.boots_left.is_some() {
        return session::run(run, ui);
    }
    boot::by_boot(run, ui, booted)
}

/// Whether a cell needs more trials: the stopping rule, which the caller supplies
/// (`analyze::stopping::Rule`), so that run/ counts trials and never judges them.
pub trait Stopping: Sync {
    /// Whether the rule reads other cells' progress (`until: verdict`: a comparison's
    /// cells may run on other hosts): the run then keeps a board of every cell's.
    fn needs_board(&self) -> bool;
    /// Whether cell `cell` (an index into the plan's cells), with `progress`, is done;
    /// `board` holds the others' progress when [`Stopping::needs_board`].
    fn is_done(&self, cell: usize, progress: &CellProgress, board: &ProgressByCell) -> bool;
    /// Trials the cell still needs, fewest and most.
    fn remaining(&self, cell: usize, progress: &CellProgress, board: &ProgressByCell) -> (u32, u32);
    /// Adaptive boots, at a look: whether the trials in `snapshot` settle every
    /// comparison across boots, or show that the host's `max` blocks cannot (then no
    /// further block of boots is run), or neither.
    fn look_across_boots(&self, _snapshot: &crate::store::Snapshot, _max: u32) -> BootLook {
        BootLook::Open
    }
    /// Adaptive boots: the trials of each cell a further boot runs, a boot costing
    /// `boot_cost` trials (`None`: not yet measurable).
    fn trials_per_boot(&self, _snapshot: &crate::store::Snapshot, _boot_cost: f64) -> Option<u32> {
        None
    }
}

/// What a look of adaptive boots finds in the comparisons across boots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BootLook {
    /// Every one resolved: no more boots.
    Settled,
    /// Some not resolved, and each of those would need far more boots of each level than
    /// `max` allows (futility): `needed`, the fewest any of them needs (`None`: more than
    /// a hundred).
    Futile { needed: Option<usize> },
    /// Boot on.
    Open,
}

/// Failures per cell per session before the cell is abandoned, unless `max_failures` says.
pub const DEFAULT_MAX_FAILURES: u32 = 3;

/// How to run, beyond what the experiment file says.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Override the seed of the interleaved order.
    pub seed: Option<u64>,
    /// Override the repetitions (a fixed number), e.g. to run a quick pass in CI.
    pub repetitions: Option<u32>,
    /// Keep each cell's scratch directory instead of removing it at the end.
    pub keep_workdir: bool,
    /// Move the old logs aside before running (`--fresh`).
    pub fresh: bool,
    /// Run only the cells of this host (`--host`).
    pub host: Option<String>,
    /// The label recorded in each session of the run (`--label`), for `margin compare`.
    pub label: Option<String>,
    /// Set by the boot loop (boot.rs), not by the user: the session runs in one boot of
    /// a host's boot plan, and each cell's share of it is its remaining trials divided by
    /// this many boots of its levels left (this one included).
    pub boots_left: Option<u32>,
    /// Set by the boot loop: hosts whose cells this session leaves alone (they boot).
    pub skip_hosts: Vec<String>,
}

/// What a run did, over all its hosts.
#[derive(Debug, Default)]
pub struct Outcome {
    /// One session per host.
    pub sessions: Vec<String>,
    pub seed: u64,
    pub ok: u32,
    pub failed: u32,
    pub timed_out: u32,
    pub parse_errors: u32,
    pub warmups: u32,
    /// Cells given up for a session.
    pub abandoned: Vec<Abandoned>,
    /// Cells whose `cleanup` failed.
    pub cleanup_failed: Vec<CleanupFailed>,
    /// Cells that cannot run now: another boot, another host, a host down.
    pub pending: Vec<Pending>,
    /// Hosts that could not be reached, dropped the connection or failed their boots.
    pub host_errors: Vec<HostFailure>,
    /// Cells that have all their trials (this run or before).
    pub complete: usize,
    pub cells: usize,
    /// Records of other cell ids (the commands changed since), kept but not used.
    pub set_aside: usize,
    pub interrupted: bool,
    pub store: PathBuf,
}

impl Outcome {
    /// The hosts the pending cells name (`host=…` in their labels), in first-seen order.
    pub fn pending_hosts(&self) -> Vec<&str> {
        let mut hosts: Vec<&str> = Vec::new();
        for Pending { label, .. } in &self.pending {
            let host = label.split(' ').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == "host");
            if let Some((_, h)) = host.filter(|(_, h)| !hosts.contains(h)) {
                hosts.push(h);
            }
        }
        hosts
    }

    /// The pending cells grouped by what they wait for, each reason once; a reason that is
    /// a failed host's error (said above them) reads "host NAME failed (above)".
    pub fn pending_by_reason(&self) -> Vec<(String, Vec<&str>)> {
        let mut by_why: indexmap::IndexMap<&str, Vec<&str>> = indexmap::IndexMap::new();
        for Pending { label, why } in &self.pending {
            by_why.entry(why.as_str()).or_default().push(label.as_str());
        }
        let said = |why: &str| {
            let failed = self.host_errors.iter().find(|f| f.why.to_string() == why);
            failed.map_or_else(|| why.to_owned(), |f| format!("host {} failed (above)", f.host))
        };
        by_why.into_iter().map(|(why, labels)| (said(why), labels)).collect()
    }

    /// Whether anything failed: decides exit code 1.
    pub fn has_failures(&self) -> bool {
        self.failed + self.timed_out + self.parse_errors > 0
            || !self.abandoned.is_empty()
            || !self.cleanup_failed.is_empty()
            || !self.host_errors.is_empty()
    }
}

/// A cell given up for a session, by its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    pub label: String,
    pub why: GaveUp,
}

/// A cell whose `cleanup` failed, by its label, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanupFailed {
    pub label: String,
    pub why: String,
}

/// A cell that cannot run now, by its label, and what it waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub label: String,
    pub why: String,
}

/// A host whose session stopped, and why.
#[derive(Debug)]
pub struct HostFailure {
    pub host: String,
    pub why: HostError,
}

/// The repetitions rule after `--repetitions`.
pub fn repetitions(plan: &Plan, options: &RunOptions) -> Repetitions {
    options.repetitions.map(Repetitions::Fixed).unwrap_or_else(|| plan.repetitions.clone())
}

/// The physical machine a host is on (its `machine:`): the hosts of one machine take
/// turns, one trial at a time over all of them, so that they never measure each other.
/// Without `machine:`, a host without `ssh` is this machine and an ssh host is its own.
pub(crate) fn machine_of(exp: &Experiment, host: &str) -> String {
    if exp.spec.gang(host).is_some() {
        // no machine of its own: it holds its members' (`machines_of`)
        return format!("gang {host}");
    }
    match host_entry(exp, host) {
        Some(e) if e.machine.is_some() => e.machine.as_ref().map(|m| m.value.clone()).unwrap_or_default(),
        Some(e) if e.ssh.is_some() => format!("host {host}"),
        _ => LOCAL_HOST.to_string(),
    }
}

/// The machines a host's trial holds: its own, or for a gang its members', each once, in
/// the order of their names (the order every thread takes several turns in: service.rs).
pub(crate) fn machines_of(exp: &Experiment, host: &str) -> Vec<String> {
    let mut machines: Vec<String> = match exp.spec.gang(host) {
        Some(gang) => gang.members().into_iter().map(|m| machine_of(exp, m)).collect(),
        None => vec![machine_of(exp, host)],
    };
    machines.sort();
    machines.dedup();
    machines
}

/// Whether a host (or a gang's member) is reached over ssh.
pub(crate) fn reaches_ssh(exp: &Experiment, host: &str) -> bool {
    match exp.spec.gang(host) {
        Some(gang) => gang.members().into_iter().any(|m| ssh_entry(exp, m).is_some()),
        None => ssh_entry(exp, host).is_some(),
    }
}

/// The `hosts:` entry of a host reached over ssh, and its destination.
pub(crate) fn ssh_entry<'e>(exp: &'e Experiment, host: &str) -> Option<(&'e crate::spec::Host, &'e str)> {
    let entry = host_entry(exp, host)?;
    entry.ssh.as_ref().map(|ssh| (entry, ssh.value.as_str()))
}

/// The `hosts:` entry named `host`, if the experiment declares one.
fn host_entry<'e>(exp: &'e Experiment, host: &str) -> Option<&'e crate::spec::Host> {
    exp.spec.hosts.iter().find(|(name, _)| name.value == host).map(|(_, entry)| &entry.value)
}
