//! One host's thread: connect, gather the host's facts and detect its environment, pick
//! the cells that match and still need trials, run them, and tell the writer the session's
//! start and end. Also which executor a host gets.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Barrier, mpsc};

use indexmap::IndexMap;

use super::exec::{Executor, GangExecutor, LocalExecutor, Target};
use super::state::{CellState, Counts, HostRun};
use super::trial::now;
use super::{Abandoned, CleanupFailed, HostError, HostFailure, Pending, RunError, facts, ssh, ssh_entry};
use crate::plan::Cell;
use crate::spec::Experiment;
use crate::store::{CellProblem, CellProgress, Event, ProblemKind, SessionRecord, Store, levels_map};

/// What host threads tell the thread that writes the session log and the progress.
pub(crate) enum Msg {
    Ready(Box<Ready>),
    Done(Box<Done>),
}

/// A host, connected, its facts gathered: its session record and what it will run.
pub(crate) struct Ready {
    pub(crate) session: SessionRecord,
    pub(crate) pending: Vec<Pending>,
    pub(crate) todo: usize,
    pub(crate) min: u64,
    pub(crate) max: u64,
}

/// A host's end.
pub(crate) struct Done {
    pub(crate) end: SessionRecord,
    pub(crate) counts: Counts,
    pub(crate) abandoned: Vec<Abandoned>,
    pub(crate) cleanup_failed: Vec<CleanupFailed>,
    pub(crate) pending: Vec<Pending>,
    pub(crate) complete: usize,
    pub(crate) host_error: Option<HostFailure>,
    pub(crate) interrupted: bool,
    pub(crate) error: Option<RunError>,
}

/// A host's cells: (index into the plan's cells, cell, progress so far).
pub(crate) type HostCells<'a> = Vec<(usize, &'a Cell, CellProgress)>;

/// Where a host's session runs: its gang's members, or its executor ([`executor`]).
pub(crate) fn target(exp: &Experiment, store: &Store, host: &str, control: Option<&Path>) -> Target {
    match exp.spec.gang(host) {
        Some(gang) => {
            let members = gang
                .members()
                .into_iter()
                .map(|m| (m.to_string(), executor(exp, store, m, control)))
                .collect();
            Target::Gang(GangExecutor::new(host, members))
        }
        None => Target::One(executor(exp, store, host, control)),
    }
}

/// The executor of a host: local, or ssh when its `hosts:` entry says so.
pub(crate) fn executor(
    exp: &Experiment,
    store: &Store,
    host: &str,
    control: Option<&Path>,
) -> Box<dyn Executor> {
    match (ssh_entry(exp, host), control) {
        (Some((entry, destination)), Some(control)) => {
            Box::new(ssh::Ssh::new(host, entry, destination, control).marked(&store.dir))
        }
        _ => Box::new(LocalExecutor::new(store)),
    }
}

/// A private directory for ssh's multiplexing sockets, removed at the end. Short, under
/// the temp dir: a socket path may not exceed about 100 bytes.
pub(crate) struct ControlDir(PathBuf);

impl ControlDir {
    pub(crate) fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = std::env::temp_dir().join(format!(
            "margin-ssh-{}-{:x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(ControlDir(dir))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl<'a> HostRun<'a> {
    /// The whole session of this host; always sends `Ready` then `Done`.
    pub(crate) fn session(&mut self, cells: HostCells<'a>, barrier: &Barrier, tx: &mpsc::Sender<Msg>) {
        let sh = self.shared;
        let host = self.target.host().to_string();
        let mut record = SessionRecord {
            keep_workdir: sh.options.keep_workdir,
            label: sh.options.label.clone(),
            ..SessionRecord::start(self.session.clone(), host, sh.exp, sh.seed)
        };
        let Begun { pending, mut states, complete } = self.begin(cells, &mut record);
        self.service_machines = states
            .iter()
            .flat_map(|st| st.services.iter().flatten())
            .map(|service| super::machine_of(sh.exp, &service.host))
            .collect();
        self.service_machines.sort();
        self.service_machines.dedup();
        let (min, max) = states.iter().fold((0u64, 0u64), |(lo, hi), st| {
            let (a, b) = sh.rule.remaining(st.index, &st.progress, &sh.board());
            // in a boot, its share
            let (a, b) = st.share.map_or((a, b), |share| (a.min(share), b.min(share)));
            (lo + u64::from(a), hi + u64::from(b))
        });
        let ready = Ready { session: record.clone(), pending, todo: states.len(), min, max };
        let _ = tx.send(Msg::Ready(Box::new(ready)));
        barrier.wait();

        let result = self.rounds(&mut states);
        // Whatever happened, no service outlives the session.
        self.stop_services();
        // Whatever happened, close the cells that were opened: cleanup hooks, workdirs.
        for st in states.iter_mut() {
            self.finish_cell(st);
        }
        let done = self.end(&states, result, record, complete);
        let _ = tx.send(Msg::Done(Box::new(done)));
    }

    /// Connect, gather the host's facts and detect its environment (into `record`), and
    /// take the cells that match it and still need trials; an unreachable host's cells
    /// wait.
    fn begin(&mut self, cells: HostCells<'a>, record: &mut SessionRecord) -> Begun<'a> {
        let sh = self.shared;
        let mut begun = Begun { pending: Vec::new(), states: Vec::new(), complete: 0 };
        if let Err(why) = self.target.check() {
            let why = HostError::Unreachable { host: record.host.clone(), why };
            for (index, cell, progress) in &cells {
                if sh.rule.is_done(*index, progress, &sh.board()) {
                    begun.complete += 1;
                } else {
                    begun.pending.push(Pending { label: sh.plan.label(cell), why: why.to_string() });
                }
            }
            self.host_error = Some(why);
            return begun;
        }
        let src = self.target.facts();
        record.facts = facts::gather(src);
        let detected = facts::detect(sh.exp, &record.facts, src);
        record.environment = detected.levels.clone();
        for (index, cell, progress) in cells {
            if sh.rule.is_done(index, &progress, &sh.board()) {
                begun.complete += 1;
            } else if let Some(why) = facts::pending_reason(&detected, sh.plan.levels(cell)) {
                begun.pending.push(Pending { label: sh.plan.label(cell), why });
            } else {
                begun.states.push(self.cell_state(index, cell, progress));
            }
        }
        begun
    }

    /// A cell as the session starts it.
    fn cell_state(&self, index: usize, cell: &'a Cell, progress: CellProgress) -> CellState<'a> {
        let sh = self.shared;
        let services =
            crate::plan::render::render_services(&sh.templates, sh.exp, sh.plan, cell).map_err(|e| e.value);
        // a boot's share: what is left over the boots of its levels left
        let share = sh.options.boots_left.map(|boots| {
            let (fewest, _) = sh.rule.remaining(index, &progress, &sh.board());
            fewest.div_ceil(boots.max(1)).max(1)
        });
        CellState {
            index,
            cell,
            services,
            levels: levels_map(sh.plan, cell),
            label: sh.plan.label(cell),
            progress,
            workdir: None,
            warmups_left: sh.plan.warmup,
            failures: 0,
            done: false,
            share,
            taken: 0,
            paused: false,
            abandoned: None,
            cleanup_failed: None,
            commands: None,
            member_commands: None,
        }
    }

    /// The session's end: its record (what went wrong with cells, how it ended) and what
    /// the run counts of it.
    fn end(
        &mut self,
        states: &[CellState<'_>],
        result: Result<(), RunError>,
        mut record: SessionRecord,
        complete: usize,
    ) -> Done {
        let sh = self.shared;
        let mut pending = Vec::new();
        if let Some(why) = &self.host_error {
            for st in states.iter().filter(|st| !st.done && st.abandoned.is_none()) {
                pending.push(Pending { label: st.label.clone(), why: why.to_string() });
            }
        }
        let complete = complete + states.iter().filter(|st| st.done && !st.paused).count();
        for st in states.iter().filter(|st| st.paused) {
            let trials = if st.taken == 1 { "1 trial".to_string() } else { format!("{} trials", st.taken) };
            pending.push(Pending {
                label: st.label.clone(),
                why: format!("ran its share of this boot ({trials}); later boots run the rest"),
            });
        }
        record.event = Event::End;
        record.at = now();
        record.facts = IndexMap::new();
        record.environment = IndexMap::new();
        record.abandoned =
            states.iter().filter(|st| st.abandoned.is_some()).map(|st| st.cell.id.to_string()).collect();
        record.problems = states.iter().flat_map(problems).collect();
        record.outcome = Some(match (&result, &self.host_error) {
            (Err(e), _) => format!("stopped: {e}"),
            (Ok(()), Some(why)) => format!("stopped: {why}"),
            (Ok(()), None) if self.interrupted => "interrupted".to_string(),
            (Ok(()), None) if sh.stop.load(Ordering::SeqCst) => {
                "stopped: the log could not be written".to_string()
            }
            (Ok(()), None) => "completed".to_string(),
        });
        let host = record.host.clone();
        Done {
            end: record,
            counts: self.counts,
            abandoned: states
                .iter()
                .filter_map(|st| st.abandoned.clone().map(|why| Abandoned { label: st.label.clone(), why }))
                .collect(),
            cleanup_failed: states
                .iter()
                .filter_map(|st| {
                    st.cleanup_failed.clone().map(|why| CleanupFailed { label: st.label.clone(), why })
                })
                .collect(),
            pending,
            complete,
            host_error: self.host_error.take().map(|why| HostFailure { host, why }),
            interrupted: self.interrupted,
            error: result.err(),
        }
    }
}

/// What a session starts with: the cells that wait (another environment, the host
/// unreachable), those it runs, and how many are complete already.
struct Begun<'a> {
    pending: Vec<Pending>,
    states: Vec<CellState<'a>>,
    complete: usize,
}

/// What went wrong with a cell in the session, outside its trials, for its end record.
fn problems(st: &CellState<'_>) -> impl Iterator<Item = CellProblem> {
    let problem = |what: ProblemKind, why: String| CellProblem { cell: st.cell.id.to_string(), what, why };
    let abandoned = st.abandoned.as_ref().map(|why| problem(ProblemKind::Abandoned, why.to_string()));
    let cleanup = st.cleanup_failed.as_ref().map(|why| problem(ProblemKind::CleanupFailed, why.clone()));
    abandoned.into_iter().chain(cleanup)
}
