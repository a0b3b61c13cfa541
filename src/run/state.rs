//! What a run's threads share (the plan, the trial log, the stop flag, what the display
//! has yet to show) and what each host's thread and each of its cells carry in a session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use indexmap::IndexMap;

use super::exec::{Executor, StartedService, Target};
use super::{GaveUp, HostError, RunError, RunOptions, Stopping};
use crate::parse::Recipe;
use crate::plan::render::{Commands, ServiceCommands};
use crate::plan::{Cell, Plan};
use crate::spec::Experiment;
use crate::store::{Appender, CellProgress, ProgressByCell, Store};
use template::Templates;

/// What the progress display shows, in the order it happened.
pub(crate) enum Shown {
    Trial(Finished),
    /// A line of its own (a hook failure, an abandoned cell).
    Note(String),
    /// A cell has all its trials, or was abandoned.
    CellEnded,
}

/// A finished trial, for the progress display.
pub(crate) struct Finished {
    pub(crate) label: String,
    pub(crate) repetition: u32,
    pub(crate) warmup: bool,
    pub(crate) status: &'static str,
    pub(crate) wall: f64,
    pub(crate) detail: Option<String>,
}

/// Trials of one host's session, by how they ended.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) ok: u32,
    pub(crate) failed: u32,
    pub(crate) timed_out: u32,
    pub(crate) parse_errors: u32,
    pub(crate) warmups: u32,
}

/// What every host's thread shares.
pub(crate) struct Shared<'a> {
    pub(crate) exp: &'a Experiment,
    pub(crate) plan: &'a Plan,
    pub(crate) store: &'a Store,
    pub(crate) options: &'a RunOptions,
    pub(crate) rule: &'a dyn Stopping,
    /// Every cell's progress, for a rule that looks at other cells (`until: verdict`:
    /// a comparison's cells may run on other hosts); empty otherwise.
    pub(crate) board: Mutex<ProgressByCell>,
    pub(crate) recipe: Recipe,
    pub(crate) templates: Templates,
    /// Whether a cell's commands are rendered anew for every trial (`plan::render::renders_per_trial`).
    pub(crate) renders_per_trial: bool,
    /// What is read of the machine around each trial (`monitor:`), from the spec once.
    pub(crate) monitor: super::telemetry::Monitor,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_failures: u32,
    pub(crate) seed: u64,
    pub(crate) interrupt: &'a AtomicBool,
    /// The trial log. Each host's thread appends its own records, so that a trial's
    /// record is durable before the next trial starts without a hand-off between threads.
    pub(crate) log: Mutex<Appender>,
    /// Set when a log cannot be written: every host stops.
    pub(crate) stop: AtomicBool,
    /// The first error that stops the run.
    pub(crate) failure: Mutex<Option<RunError>>,
    /// Trials finished and notes since the progress display last looked, in order.
    /// Collected rather than sent: waking the display's thread after every trial costs a
    /// tenth of a millisecond.
    pub(crate) shown: Mutex<Vec<Shown>>,
}

impl Shared<'_> {
    /// The progress of every cell, for the repetitions rule.
    pub(crate) fn board(&self) -> MutexGuard<'_, ProgressByCell> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stop every host; the first error is the one reported.
    pub(crate) fn fail(&self, e: RunError) {
        self.stop.store(true, Ordering::SeqCst);
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
    }

    /// Queue something for the progress display.
    pub(crate) fn show(&self, shown: Shown) {
        self.shown.lock().unwrap_or_else(PoisonError::into_inner).push(shown);
    }

    /// What the display has yet to show, in order.
    pub(crate) fn take_shown(&self) -> Vec<Shown> {
        std::mem::take(&mut *self.shown.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One host's session, as its thread sees it.
pub(crate) struct HostRun<'a> {
    pub(crate) shared: &'a Shared<'a>,
    /// Where its commands run: one executor, or a gang's.
    pub(crate) target: &'a Target,
    /// The turn of the host's machine (`machine_of`): held while this host runs a trial
    /// or a hook, so that the hosts of one machine never run at the same time.
    pub(crate) machine: &'a Machine,
    pub(crate) places: &'a Places<'a>,
    /// The services this host's thread runs now, for the cells that use them.
    pub(crate) services: Vec<Up>,
    /// The machines held while services run: theirs and this host's (`service.rs`).
    pub(crate) held: Vec<(String, Turn<'a>)>,
    /// The machines of every service this host's cells use, taken together.
    pub(crate) service_machines: Vec<String>,
    pub(crate) session: String,
    pub(crate) counts: Counts,
    pub(crate) host_error: Option<HostError>,
    pub(crate) interrupted: bool,
}

/// The turns of one physical machine: its hosts run one trial (or hook) at a time, in
/// the order they asked — a ticket queue, because a plain mutex lets the host that just
/// finished take the machine again before a waiting one wakes, and the hosts would no
/// longer interleave. A thread that holds the machine may take it again (a service keeps
/// its machine while the trials that use it take their turns there).
#[derive(Debug, Default)]
pub(crate) struct Machine {
    tickets: Mutex<Tickets>,
    served: Condvar,
}

#[derive(Debug, Default)]
struct Tickets {
    /// The next ticket to hand out, and the ticket being served.
    next: u64,
    serving: u64,
    /// The thread being served, and how many turns it holds.
    owner: Option<std::thread::ThreadId>,
    depth: u32,
}

/// A host's turn on its machine, until dropped (by the thread that took it).
pub(crate) struct Turn<'m>(&'m Machine);

impl Machine {
    /// Wait for this machine's turn, in the order asked; at once for the thread that
    /// holds it already.
    pub(crate) fn turn(&self) -> Turn<'_> {
        let me = std::thread::current().id();
        let mut t = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        if t.owner == Some(me) {
            t.depth += 1;
            return Turn(self);
        }
        let mine = t.next;
        t.next += 1;
        while t.serving != mine {
            t = self.served.wait(t).unwrap_or_else(PoisonError::into_inner);
        }
        t.owner = Some(me);
        t.depth = 1;
        Turn(self)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut t = self.0.tickets.lock().unwrap_or_else(PoisonError::into_inner);
        t.depth = t.depth.saturating_sub(1);
        if t.depth == 0 {
            t.owner = None;
            t.serving += 1;
            // a ticket handed out and not yet served is a host waiting (under this lock):
            // no wake-up, and no system call, when none is
            if t.next > t.serving {
                self.0.served.notify_all();
            }
        }
    }
}

/// Where a run's commands can go: every host's executor and every machine's turns, by
/// name (the hosts of the cells and of the services).
pub(crate) struct Places<'a> {
    pub(crate) executors: HashMap<String, &'a dyn Executor>,
    /// By `run::machine_of`.
    pub(crate) machines: HashMap<String, Machine>,
}

impl HostRun<'_> {
    pub(crate) fn note(&self, text: String) {
        self.shared.show(Shown::Note(text));
    }

    /// Whether this host stops: interrupted, the log unwritable, or the host gone.
    pub(crate) fn halted(&mut self) -> bool {
        if self.shared.interrupt.load(Ordering::SeqCst) {
            self.interrupted = true;
        }
        self.interrupted || self.shared.stop.load(Ordering::SeqCst) || self.host_error.is_some()
    }
}

/// A service running for a host's cells (`service.rs`).
pub(crate) struct Up {
    pub(crate) commands: ServiceCommands,
    pub(crate) process: Box<dyn StartedService>,
    /// Its stderr file, relative to the store.
    pub(crate) raw: String,
}

/// One cell during a session.
pub(crate) struct CellState<'p> {
    /// Index into [`Plan::cells`].
    pub(crate) index: usize,
    pub(crate) cell: &'p Cell,
    pub(crate) label: String,
    pub(crate) levels: IndexMap<String, String>,
    pub(crate) progress: CellProgress,
    pub(crate) workdir: Option<String>,
    /// The services its trials need, rendered for it, or why they cannot be.
    pub(crate) services: Result<Vec<ServiceCommands>, String>,
    pub(crate) warmups_left: u32,
    pub(crate) failures: u32,
    pub(crate) done: bool,
    /// Trials (not warm-ups) it may take in this session: its share of a boot
    /// (`RunOptions::boots_left`); `None`: as many as the repetitions rule wants.
    pub(crate) share: Option<u32>,
    /// Trials (not warm-ups) it took in this session.
    pub(crate) taken: u32,
    /// Done with its share of this boot, not with its trials: the next boot runs more.
    pub(crate) paused: bool,
    pub(crate) abandoned: Option<GaveUp>,
    /// Why this session's `cleanup` of the cell failed.
    pub(crate) cleanup_failed: Option<String>,
    /// Its commands as rendered for its first trial in this session, for the next ones
    /// when they cannot render differently (`Shared::renders_per_trial`).
    pub(crate) commands: Option<Commands>,
    /// A gang's cell: each member's commands and workdir, cached the same way.
    pub(crate) member_commands: Option<Vec<(Commands, String)>>,
}

impl CellState<'_> {
    /// Whether the cell still takes trials in this session.
    pub(crate) fn active(&self) -> bool {
        !self.done && self.abandoned.is_none()
    }
}
