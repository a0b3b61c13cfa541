//! Running an experiment: sessions of rounds over the cells that match their host, one
//! trial at a time per host, each recorded durably before that host's next trial begins.
//!
//! Cells are grouped by host (the `host` factor, else the local machine); hosts run in
//! parallel, each in its own thread, and one writer — the calling thread — appends every
//! record to the one log and drives the progress display. A host's session gathers its
//! facts, detects its environment levels, and schedules the cells that match and still
//! need trials: in rounds visiting every unfinished cell once in a seeded random order
//! (interleaved), or cell after cell (sequential). Hooks follow hyperfine: `setup` once
//! per cell per session, `prepare` and `conclude` around each trial, `cleanup` once per
//! cell at the end. Failures are data: they are recorded and the run goes on, until a
//! cell fails `max_failures` times in a session. An unreachable host is reported and
//! the other hosts carry on.

pub mod cells;
pub mod exec;
pub mod facts;
pub mod progress;
pub mod ssh;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, PoisonError, mpsc};
use std::time::Duration;

use indexmap::IndexMap;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use crate::parse::Recipe;
use crate::plan::render::{Builtins, Commands, render};
use crate::plan::{Cell, Plan};
use crate::spec::{Experiment, Order, Repetitions, parse_duration};
use crate::store::{
    Appender, CellProblem, Event, MetricInfo, SCHEMA, SessionRecord, Status, Store, StoreError, TrialRecord,
};
use crate::template::Templates;
use crate::vocab::{Better, MeanKind};
use cells::{CellProgress, Rule, levels_map};
use exec::{Execution, Executor, Job};
use progress::{Progress, TrialLine};

/// Failures per cell per session before the cell is abandoned, unless `max_failures` says.
pub const DEFAULT_MAX_FAILURES: u32 = 3;

/// The host name of the machine running margin.
pub const LOCAL_HOST: &str = "local";

/// How to run, beyond what the experiment file says.
#[derive(Debug, Clone, Default)]
pub struct Settings {
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
}

/// What a run did, over all its hosts.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// One session per host.
    pub sessions: Vec<String>,
    pub seed: u64,
    pub ok: u32,
    pub failed: u32,
    pub timed_out: u32,
    pub parse_errors: u32,
    pub warmups: u32,
    /// Cells given up after too many failures (label, last error).
    pub abandoned: Vec<(String, String)>,
    /// Cells whose `cleanup` failed (label, why).
    pub cleanup_failed: Vec<(String, String)>,
    /// Cells that cannot run now (label, reason): another boot, another host, a host down.
    pub pending: Vec<(String, String)>,
    /// Hosts that could not be reached or dropped the connection (host, error).
    pub host_errors: Vec<(String, String)>,
    /// Cells that have all their trials (this run or before).
    pub complete: usize,
    pub cells: usize,
    /// Records of other cell ids (the commands changed since), kept but not used.
    pub set_aside: usize,
    pub interrupted: bool,
    pub store: PathBuf,
}

impl Outcome {
    /// Whether anything failed: decides exit code 1.
    pub fn has_failures(&self) -> bool {
        self.failed + self.timed_out + self.parse_errors > 0
            || !self.abandoned.is_empty()
            || !self.cleanup_failed.is_empty()
            || !self.host_errors.is_empty()
    }
}

/// Why a run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

impl RunError {
    pub fn is_disk_full(&self) -> bool {
        match self {
            RunError::Store(e) => e.is_disk_full(),
            RunError::Io { source, .. } => source.kind() == std::io::ErrorKind::StorageFull,
        }
    }
}

/// The repetitions rule after `--repetitions`.
pub fn repetitions(plan: &Plan, settings: &Settings) -> Repetitions {
    settings.repetitions.map(Repetitions::Fixed).unwrap_or_else(|| plan.repetitions.clone())
}

/// The host a cell runs on: its `host` level, or the local machine.
pub fn host_of<'a>(plan: &'a Plan, cell: &'a Cell) -> &'a str {
    plan.levels(cell).find(|(k, _)| *k == "host").map_or(LOCAL_HOST, |(_, v)| v.text.as_str())
}

/// What host threads tell the thread that writes the session log and the progress.
enum Msg {
    Ready(Box<Ready>),
    Done(Box<Done>),
}

/// What the progress display shows, in the order it happened.
enum Shown {
    Trial(Finished),
    /// A line of its own (a hook failure, an abandoned cell).
    Note(String),
    /// A cell has all its trials, or was abandoned.
    CellEnded,
}

/// A finished trial, for the progress display.
struct Finished {
    label: String,
    repetition: u32,
    warmup: bool,
    status: &'static str,
    wall: f64,
    detail: Option<String>,
}

/// A host, connected, its facts gathered: its session record and what it will run.
struct Ready {
    session: SessionRecord,
    pending: Vec<(String, String)>,
    todo: usize,
    min: u64,
    max: u64,
}

/// A host's end.
struct Done {
    end: SessionRecord,
    counts: Counts,
    abandoned: Vec<(String, String)>,
    cleanup_failed: Vec<(String, String)>,
    pending: Vec<(String, String)>,
    complete: usize,
    host_error: Option<(String, String)>,
    interrupted: bool,
    error: Option<RunError>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    ok: u32,
    failed: u32,
    timed_out: u32,
    parse_errors: u32,
    warmups: u32,
}

/// A host's cells: (index into the plan's cells, cell, progress so far).
type HostCells<'a> = Vec<(usize, &'a Cell, CellProgress)>;

/// One cell during a session.
struct CellState<'p> {
    /// Index into [`Plan::cells`].
    index: usize,
    cell: &'p Cell,
    label: String,
    levels: IndexMap<String, String>,
    progress: CellProgress,
    workdir: Option<String>,
    warmups_left: u32,
    failures: u32,
    done: bool,
    abandoned: Option<String>,
    /// Why this session's `cleanup` of the cell failed.
    cleanup_failed: Option<String>,
}

/// What every host's thread shares.
struct Shared<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    store: &'a Store,
    settings: &'a Settings,
    rule: Rule,
    /// Every cell's progress, for a rule that looks at other cells (`until: verdict`:
    /// a comparison's cells may run on other hosts); empty otherwise.
    board: Mutex<cells::Board>,
    recipe: Recipe,
    templates: Templates,
    timeout: Option<Duration>,
    max_failures: u32,
    seed: u64,
    interrupt: &'a AtomicBool,
    /// The trial log. Each host's thread appends its own records, so that a trial's
    /// record is durable before the next trial starts without a hand-off between threads.
    log: Mutex<Appender>,
    /// Set when a log cannot be written: every host stops.
    stop: AtomicBool,
    /// The first error that stops the run.
    failure: Mutex<Option<RunError>>,
    /// Trials finished and notes since the progress display last looked, in order.
    /// Collected rather than sent: waking the display's thread after every trial costs a
    /// tenth of a millisecond.
    shown: Mutex<Vec<Shown>>,
}

impl Shared<'_> {
    /// The progress of every cell, for the repetitions rule.
    fn board(&self) -> std::sync::MutexGuard<'_, cells::Board> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stop every host; the first error is the one reported.
    fn fail(&self, e: RunError) {
        self.stop.store(true, Ordering::SeqCst);
        self.failure.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(e);
    }
}

/// One host's session.
struct HostRun<'a> {
    shared: &'a Shared<'a>,
    executor: &'a dyn Executor,
    session: String,
    tx: mpsc::Sender<Msg>,
    counts: Counts,
    host_error: Option<String>,
    interrupted: bool,
}

/// Run the cells of `plan` that match their host and still need trials.
pub fn run(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    settings: &Settings,
    interrupt: &AtomicBool,
    ui: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    facts::check_sysroot().map_err(|e| RunError::Io { what: "facts".into(), source: e })?;
    let _lock = store.lock("run")?;
    for dir in remove_stale_workdirs(store)? {
        ui.note(&format!("removed {}: the workdir of a run that was killed", dir.display()));
    }
    if settings.fresh {
        for moved in store.move_aside()? {
            ui.note(&format!("--fresh: the old log is now {}", moved.display()));
        }
    }
    // the store keeps the file it is run with, so it can be reported on without it
    store.keep_experiment(exp)?;
    let loaded = store.load_locked()?;
    for w in &loaded.warnings {
        ui.note(&format!("warning: {w}"));
    }
    let recipe = Recipe::from_spec(&exp.spec).map_err(|(name, e)| RunError::Io {
        what: format!("metric `{name}`"),
        source: std::io::Error::other(e.to_string()),
    })?;
    let (mut progress, set_aside) = cells::progress(plan, &loaded.trials);
    let rule = Rule::new(exp, plan, repetitions(plan, settings));
    let board = if rule.needs_board() { progress.clone() } else { cells::Board::new() };
    let shared = Shared {
        exp,
        plan,
        store,
        settings,
        rule,
        board: Mutex::new(board),
        recipe,
        templates: crate::plan::render::templates(exp),
        timeout: exp.spec.timeout.as_ref().and_then(|t| parse_duration(&t.value).ok()),
        max_failures: exp.spec.max_failures.unwrap_or(DEFAULT_MAX_FAILURES),
        seed: settings.seed.or(exp.spec.seed).unwrap_or_else(rand::random),
        interrupt,
        log: Mutex::new(store.trials()?),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
        shown: Mutex::new(Vec::new()),
    };
    let mut outcome = Outcome {
        seed: shared.seed,
        cells: plan.cells.len(),
        set_aside,
        store: store.dir.clone(),
        ..Outcome::default()
    };

    // Cells by host, hosts in the order they first appear.
    let mut groups: Vec<(&str, HostCells<'_>)> = Vec::new();
    for (i, cell) in plan.cells.iter().enumerate() {
        let progress = progress.remove(&i).unwrap_or_default();
        let host = host_of(plan, cell);
        if settings.host.as_deref().is_some_and(|only| only != host) {
            if shared.rule.is_done(i, &progress, &shared.board()) {
                outcome.complete += 1;
            } else {
                outcome
                    .pending
                    .push((plan.label(cell), format!("runs on host `{host}`, not selected (--host)")));
            }
            continue;
        }
        match groups.iter_mut().find(|(h, _)| *h == host) {
            Some((_, cells)) => cells.push((i, cell, progress)),
            None => groups.push((host, vec![(i, cell, progress)])),
        }
    }
    // ssh's multiplexing sockets, only when some host is remote
    let control = match groups.iter().any(|(host, _)| ssh_entry(exp, host).is_some()) {
        true => Some(ControlDir::new().map_err(|e| io(Path::new("ssh control directory"), e))?),
        false => None,
    };
    let executors: Vec<Box<dyn Executor>> = groups
        .iter()
        .map(|(host, _)| executor(exp, store, host, control.as_ref().map(ControlDir::path)))
        .collect();

    let mut sessions = store.sessions()?;
    let barrier = Barrier::new(groups.len() + 1);
    let (tx, rx) = mpsc::channel::<Msg>();
    std::thread::scope(|scope| {
        for ((_, cells), executor) in groups.into_iter().zip(&executors) {
            let (tx, shared, barrier) = (tx.clone(), &shared, &barrier);
            scope.spawn(move || {
                let mut h = HostRun {
                    shared,
                    executor: executor.as_ref(),
                    session: uuid::Uuid::now_v7().to_string(),
                    tx,
                    counts: Counts::default(),
                    host_error: None,
                    interrupted: false,
                };
                h.session(cells, barrier);
            });
        }
        drop(tx);
        let (mut ready, mut todo, mut min, mut max) = (0, 0, 0u64, 0u64);
        let hosts = executors.len();
        if hosts == 0 {
            barrier.wait();
        }
        let show = |ui: &mut dyn Progress| {
            let shown = std::mem::take(&mut *shared.shown.lock().unwrap_or_else(PoisonError::into_inner));
            for s in &shown {
                match s {
                    Shown::Trial(f) => ui.trial(&TrialLine {
                        label: &f.label,
                        repetition: f.repetition,
                        warmup: f.warmup,
                        status: f.status,
                        wall: f.wall,
                        detail: f.detail.as_deref(),
                    }),
                    Shown::Note(text) => ui.note(text),
                    Shown::CellEnded => ui.cell_ended(),
                }
            }
        };
        loop {
            // What the hosts did before a message was sent is shown before it.
            let msg = match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(msg) => msg,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    show(ui);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    show(ui);
                    break;
                }
            };
            show(ui);
            match msg {
                Msg::Ready(r) => {
                    if let Err(e) = sessions.append(&r.session) {
                        shared.fail(e.into());
                    }
                    outcome.sessions.push(r.session.session.clone());
                    outcome.pending.extend(r.pending);
                    (todo, min, max) = (todo + r.todo, min + r.min, max + r.max);
                    ready += 1;
                    if ready == hosts {
                        ui.start(todo, min, max);
                        barrier.wait();
                    }
                }
                Msg::Done(d) => {
                    // After a full disk this may fail too; the trial log is what matters.
                    let _ = sessions.append(&d.end);
                    let c = d.counts;
                    outcome.ok += c.ok;
                    outcome.failed += c.failed;
                    outcome.timed_out += c.timed_out;
                    outcome.parse_errors += c.parse_errors;
                    outcome.warmups += c.warmups;
                    outcome.abandoned.extend(d.abandoned);
                    outcome.cleanup_failed.extend(d.cleanup_failed);
                    outcome.pending.extend(d.pending);
                    outcome.complete += d.complete;
                    outcome.host_errors.extend(d.host_error);
                    outcome.interrupted |= d.interrupted;
                    if let Some(e) = d.error {
                        shared.fail(e);
                    }
                }
            }
        }
    });
    ui.finish();
    for e in &executors {
        e.close();
    }
    match shared.failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(e) => Err(e),
        None => Ok(outcome),
    }
}

/// The `hosts:` entry of a host reached over ssh, and its destination.
fn ssh_entry<'e>(exp: &'e Experiment, host: &str) -> Option<(&'e crate::spec::Host, &'e str)> {
    let (_, entry) = exp.spec.hosts.iter().find(|(name, _)| name.value == host)?;
    entry.value.ssh.as_ref().map(|ssh| (&entry.value, ssh.value.as_str()))
}

/// The cells the last run on their host abandoned, by id, with why: each host runs in a
/// session of its own, and an import runs nothing and abandons nothing.
pub fn last_abandoned(
    exp: &Experiment,
    plan: &Plan,
    sessions: &[SessionRecord],
) -> std::collections::HashMap<String, String> {
    let mut last_runs: Vec<&SessionRecord> = Vec::new();
    for s in sessions.iter().rev().filter(|s| s.event == Event::End && !s.import) {
        if !last_runs.iter().any(|r| r.host == s.host) {
            last_runs.push(s);
        }
    }
    let mut out = std::collections::HashMap::new();
    for cell in &plan.cells {
        let id = cell.id.to_string();
        // the session's host is the executor's: a host without ssh is this machine
        let host = host_of(plan, cell);
        let host = if ssh_entry(exp, host).is_some() { host } else { LOCAL_HOST };
        let Some(run) = last_runs.iter().find(|r| r.host == host && r.abandoned.contains(&id)) else {
            continue;
        };
        let why = run.problems.iter().find(|p| p.cell == id && p.what == "abandoned").map(|p| p.why.clone());
        out.insert(id, why.unwrap_or_else(|| "too many failures".to_string()));
    }
    out
}

/// Workdirs on this machine of sessions that started and never ended (a run killed, or
/// stopped by a second Ctrl-C): scratch nobody asked to keep, which no later session
/// would use (each makes its own). Those of runs given `--keep-workdir` are kept, killed
/// or not. Called with the store locked.
fn remove_stale_workdirs(store: &Store) -> Result<Vec<PathBuf>, RunError> {
    let work = store.dir.join("work");
    let Ok(entries) = std::fs::read_dir(&work) else { return Ok(Vec::new()) };
    let (sessions, _) = store.session_records()?;
    let ended: std::collections::HashSet<&str> =
        sessions.iter().filter(|s| s.event == Event::End).map(|s| s.session.as_str()).collect();
    let killed: std::collections::HashSet<&str> = sessions
        .iter()
        .filter(|s| s.event == Event::Start && s.host == LOCAL_HOST && !s.keep_workdir)
        .filter(|s| !ended.contains(s.session.as_str()))
        .filter_map(|s| s.session.get(s.session.len().saturating_sub(8)..))
        .collect();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((_, suffix)) = name.rsplit_once('-') else { continue };
        if killed.contains(suffix) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    Ok(removed)
}

/// The executor of a host: local, or ssh when its `hosts:` entry says so.
fn executor(exp: &Experiment, store: &Store, host: &str, control: Option<&Path>) -> Box<dyn Executor> {
    match (ssh_entry(exp, host), control) {
        (Some((entry, destination)), Some(control)) => {
            Box::new(ssh::Ssh::new(host, entry, destination, control))
        }
        _ => {
            let workroot = store.dir.join("work");
            Box::new(exec::Local { source: facts::Local::new(&store.dir), workroot })
        }
    }
}

/// A private directory for ssh's multiplexing sockets, removed at the end. Short, under
/// the temp dir: a socket path may not exceed about 100 bytes.
struct ControlDir(PathBuf);

impl ControlDir {
    fn new() -> std::io::Result<Self> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = std::env::temp_dir().join(format!(
            "margin-ssh-{}-{:x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        Ok(ControlDir(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ControlDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn io(path: &Path, source: std::io::Error) -> RunError {
    RunError::Io { what: path.display().to_string(), source }
}

/// The last lines of a file, for a failure message.
fn tail(path: &Path, lines: usize) -> String {
    let text = exec::read_raw(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = all.len().saturating_sub(lines);
    let mut out = all[start..].join("\n");
    if out.len() > 600 {
        let cut = out.floor_char_boundary(out.len() - 600);
        out = format!("…{}", &out[cut..]);
    }
    out
}

/// "exit code 1" plus the end of stderr.
fn failure_text(what: &str, e: &Execution, stderr: &Path) -> String {
    let tail = tail(stderr, 5);
    if tail.is_empty() {
        format!("{what}: {}", e.describe())
    } else {
        format!("{what}: {}: {tail}", e.describe())
    }
}

/// Why a host's trial could not go on.
enum Stop {
    /// The writer could not store a record (it holds the error).
    Store,
    /// The host is gone.
    Host,
}

impl<'a> HostRun<'a> {
    fn send(&self, msg: Msg) {
        let _ = self.tx.send(msg);
    }

    fn note(&self, text: String) {
        self.shared.shown.lock().unwrap_or_else(PoisonError::into_inner).push(Shown::Note(text));
    }

    fn halted(&mut self) -> bool {
        if self.shared.interrupt.load(Ordering::SeqCst) {
            self.interrupted = true;
        }
        self.interrupted || self.shared.stop.load(Ordering::SeqCst) || self.host_error.is_some()
    }

    /// The whole session of this host; always sends `Ready` then `Done`.
    fn session(&mut self, cells: HostCells<'a>, barrier: &Barrier) {
        let sh = self.shared;
        let host = self.executor.host().to_string();
        let mut record = SessionRecord {
            schema: SCHEMA,
            session: self.session.clone(),
            event: Event::Start,
            at: now(),
            host: host.clone(),
            experiment: sh.exp.name.clone(),
            margin_version: env!("CARGO_PKG_VERSION").to_string(),
            seed: sh.seed,
            spec_hash: blake3::hash(sh.exp.source.as_bytes()).to_hex().to_string(),
            facts: IndexMap::new(),
            environment: IndexMap::new(),
            abandoned: Vec::new(),
            problems: Vec::new(),
            keep_workdir: sh.settings.keep_workdir,
            import: false,
            outcome: None,
        };
        let mut pending = Vec::new();
        let mut states = Vec::new();
        let mut complete = 0;
        match self.executor.check() {
            Err(why) => {
                let why = format!("host `{host}` unreachable: {why}");
                for (index, cell, progress) in &cells {
                    if sh.rule.is_done(*index, progress, &sh.board()) {
                        complete += 1;
                    } else {
                        pending.push((sh.plan.label(cell), why.clone()));
                    }
                }
                self.host_error = Some(why);
            }
            Ok(()) => {
                let src = self.executor.facts();
                record.facts = facts::gather(src);
                let detected = facts::detect(sh.exp, &record.facts, src);
                record.environment = detected.levels.clone();
                for (index, cell, progress) in cells {
                    let done = sh.rule.is_done(index, &progress, &sh.board());
                    let label = sh.plan.label(cell);
                    if done {
                        complete += 1;
                        continue;
                    }
                    if let Some(reason) = facts::pending_reason(&detected, sh.plan.levels(cell)) {
                        pending.push((label, reason));
                        continue;
                    }
                    states.push(CellState {
                        index,
                        cell,
                        levels: levels_map(sh.plan, cell),
                        label,
                        progress,
                        workdir: None,
                        warmups_left: sh.plan.warmup,
                        failures: 0,
                        done: false,
                        abandoned: None,
                        cleanup_failed: None,
                    });
                }
            }
        }
        let (min, max) = states.iter().fold((0u64, 0u64), |(lo, hi), st| {
            let (a, b) = sh.rule.remaining(st.index, &st.progress, &sh.board());
            (lo + u64::from(a), hi + u64::from(b))
        });
        let ready = Ready { session: record.clone(), pending, todo: states.len(), min, max };
        self.send(Msg::Ready(Box::new(ready)));
        barrier.wait();

        let result = self.rounds(&mut states);
        // Whatever happened, close the cells that were opened: cleanup hooks, workdirs.
        for st in states.iter_mut() {
            self.finish_cell(st);
        }
        let mut late_pending = Vec::new();
        if let Some(why) = &self.host_error {
            for st in states.iter().filter(|st| !st.done && st.abandoned.is_none()) {
                late_pending.push((st.label.clone(), why.clone()));
            }
        }
        complete += states.iter().filter(|st| st.done).count();
        record.event = Event::End;
        record.at = now();
        record.facts = IndexMap::new();
        record.environment = IndexMap::new();
        record.abandoned =
            states.iter().filter(|st| st.abandoned.is_some()).map(|st| st.cell.id.to_string()).collect();
        record.problems = states
            .iter()
            .flat_map(|st| {
                let problem = |what: &str, why: &String| CellProblem {
                    cell: st.cell.id.to_string(),
                    what: what.to_string(),
                    why: why.clone(),
                };
                let abandoned = st.abandoned.as_ref().map(|why| problem("abandoned", why));
                abandoned
                    .into_iter()
                    .chain(st.cleanup_failed.as_ref().map(|why| problem("cleanup failed", why)))
            })
            .collect();
        record.outcome = Some(match (&result, &self.host_error) {
            (Err(e), _) => format!("stopped: {e}"),
            (Ok(()), Some(why)) => format!("stopped: {why}"),
            (Ok(()), None) if self.interrupted => "interrupted".to_string(),
            (Ok(()), None) if sh.stop.load(Ordering::SeqCst) => {
                "stopped: the log could not be written".to_string()
            }
            (Ok(()), None) => "completed".to_string(),
        });
        let done = Done {
            end: record,
            counts: self.counts,
            abandoned: states
                .iter()
                .filter_map(|st| st.abandoned.as_ref().map(|why| (st.label.clone(), why.clone())))
                .collect(),
            cleanup_failed: states
                .iter()
                .filter_map(|st| st.cleanup_failed.as_ref().map(|why| (st.label.clone(), why.clone())))
                .collect(),
            pending: late_pending,
            complete,
            host_error: self.host_error.clone().map(|e| (host, e)),
            interrupted: self.interrupted,
            error: result.err(),
        };
        self.send(Msg::Done(Box::new(done)));
    }

    fn rounds(&mut self, states: &mut [CellState<'a>]) -> Result<(), RunError> {
        let mut rng = Pcg64::seed_from_u64(self.shared.seed);
        let active = |states: &[CellState<'_>]| -> Vec<usize> {
            (0..states.len()).filter(|i| !states[*i].done && states[*i].abandoned.is_none()).collect()
        };
        let mut round = 0u32;
        loop {
            let mut order = active(states);
            if order.is_empty() || self.halted() {
                return Ok(());
            }
            round += 1;
            match self.shared.exp.spec.order.unwrap_or_default() {
                Order::Interleaved => {
                    order.shuffle(&mut rng);
                    for (position, i) in order.into_iter().enumerate() {
                        self.step(&mut states[i], round, position as u32 + 1)?;
                        if self.halted() {
                            return Ok(());
                        }
                    }
                    for st in states.iter_mut() {
                        self.settle(st);
                    }
                }
                Order::Sequential => {
                    for i in order {
                        let mut position = 0;
                        while !states[i].done && states[i].abandoned.is_none() {
                            position += 1;
                            self.step(&mut states[i], round, position)?;
                            self.settle(&mut states[i]);
                            if self.halted() {
                                return Ok(());
                            }
                        }
                    }
                }
            }
        }
    }

    /// Mark a cell done (and close it) when the repetitions rule is met.
    fn settle(&mut self, st: &mut CellState<'_>) {
        if !st.done
            && st.abandoned.is_none()
            && self.shared.rule.is_done(st.index, &st.progress, &self.shared.board())
        {
            st.done = true;
            self.shared.shown.lock().unwrap_or_else(PoisonError::into_inner).push(Shown::CellEnded);
            self.finish_cell(st);
        }
    }

    /// One visit of a cell: open it if needed, its warm-ups the first time, one trial.
    fn step(&mut self, st: &mut CellState<'_>, round: u32, position: u32) -> Result<(), RunError> {
        if st.workdir.is_none() {
            self.open_cell(st);
            if st.abandoned.is_some() || self.host_error.is_some() {
                return Ok(());
            }
        }
        while st.warmups_left > 0 && st.abandoned.is_none() {
            st.warmups_left -= 1;
            self.trial(st, true, round, position)?;
            if self.halted() {
                return Ok(());
            }
        }
        if st.abandoned.is_none() {
            self.trial(st, false, round, position)?;
        }
        Ok(())
    }

    fn render(&self, st: &CellState<'_>, repetition: u32) -> Result<Commands, String> {
        let sh = self.shared;
        let b = Builtins {
            workdir: st.workdir.as_deref().unwrap_or_default(),
            repetition,
            host: self.executor.host(),
        };
        render(&sh.templates, sh.exp, sh.plan, st.cell, &b).map_err(|d| d.message)
    }

    /// Create the workdir and run `setup`; a failure abandons the cell for this session.
    fn open_cell(&mut self, st: &mut CellState<'_>) {
        // fresh for each session: a kept one (`--keep-workdir`) or one left by a run that
        // was killed is never handed to the next
        let name = format!("{}-{}", st.cell.id, &self.session[self.session.len() - 8..]);
        match self.executor.create_workdir(&self.shared.exp.name, &name) {
            Ok(dir) => st.workdir = Some(dir),
            Err(e) => {
                if self.executor.host() == LOCAL_HOST {
                    self.abandon(st, format!("cannot create the workdir: {e}"));
                } else {
                    self.host_error =
                        Some(format!("host `{}`: cannot create the workdir: {e}", self.executor.host()));
                }
                return;
            }
        }
        let (setup, env) = match self.render(st, st.progress.attempts + 1) {
            Ok(c) => (c.setup, c.env),
            Err(e) => {
                self.abandon(st, e);
                return;
            }
        };
        if let Some(cmd) = setup
            && let Err(why) = self.hook(st, "setup", &cmd, &env, &format!("{}-{}", self.session, st.cell.id))
        {
            self.abandon(st, why);
        }
    }

    /// Run `cleanup` and remove the workdir (unless kept).
    fn finish_cell(&mut self, st: &mut CellState<'_>) {
        let Some(dir) = st.workdir.clone() else { return };
        if self.host_error.is_none() {
            if let Ok(Commands { cleanup: Some(cmd), env, .. }) = self.render(st, st.progress.attempts)
                && let Err(why) =
                    self.hook(st, "cleanup", &cmd, &env, &format!("{}-{}", self.session, st.cell.id))
            {
                self.note(format!("{}: {why}", st.label));
                st.cleanup_failed = Some(why);
            }
            if !self.shared.settings.keep_workdir {
                self.executor.remove_workdir(&dir);
            }
        }
        st.workdir = None;
    }

    fn abandon(&mut self, st: &mut CellState<'_>, why: String) {
        self.note(format!("{}: abandoned for this session: {why}", st.label));
        self.shared.shown.lock().unwrap_or_else(PoisonError::into_inner).push(Shown::CellEnded);
        st.abandoned = Some(why);
    }

    /// Run a hook with its output saved under `raw/`; `Err` says why it failed.
    fn hook(
        &mut self,
        st: &CellState<'_>,
        name: &str,
        command: &str,
        env: &[(String, String)],
        key: &str,
    ) -> Result<(), String> {
        let raw = self.shared.store.raw_dir();
        let out = raw.join(format!("{key}.{name}.out"));
        let err = raw.join(format!("{key}.{name}.err"));
        let dir = st.workdir.as_deref().unwrap_or(".");
        let job = Job {
            command,
            dir,
            stdout: &out,
            stderr: &err,
            timeout: self.shared.timeout,
            sync: false,
            end_group: false,
            env,
        };
        match self.executor.execute(&job) {
            Ok(e) if e.host_error.is_some() => {
                let why = e.host_error.unwrap_or_default();
                self.host_error = Some(why.clone());
                Err(why)
            }
            Ok(e) if e.succeeded() => Ok(()),
            Ok(e) => Err(failure_text(&format!("`{name}` failed"), &e, &err)),
            Err(e) => Err(format!("`{name}` could not start: {e}")),
        }
    }

    /// One trial: prepare, run, conclude; parse; have the writer append the record.
    fn trial(
        &mut self,
        st: &mut CellState<'_>,
        warmup: bool,
        round: u32,
        position: u32,
    ) -> Result<(), RunError> {
        let sh = self.shared;
        let repetition = st.progress.attempts + 1;
        let trial = uuid::Uuid::now_v7().to_string();
        let (raw, out, err) = sh.store.raw_paths(&trial);
        let mut record = TrialRecord {
            schema: SCHEMA,
            trial: trial.clone(),
            cell: st.cell.id.to_string(),
            levels: st.levels.clone(),
            repetition,
            warmup,
            host: self.executor.host().to_string(),
            session: self.session.clone(),
            round,
            position,
            started_at: Some(now()),
            status: Status::Failed,
            exit_code: None,
            metrics: IndexMap::new(),
            metric_info: IndexMap::new(),
            wall_time: 0.0,
            raw: None,
            error: None,
            warnings: Vec::new(),
            source: None,
            source_hash: None,
        };
        match self.render(st, repetition) {
            Err(e) => record.error = Some(e),
            Ok(cmds) => match self.execute(st, &cmds, &trial, &out, &err, &mut record)? {
                Ok(()) => {}
                // not a benchmark result: nothing is recorded, the host's cells wait
                Err(Stop::Host) => return Ok(()),
                Err(Stop::Store) => return Ok(()),
            },
        }
        if record.exit_code.is_some() || record.status == Status::Timeout {
            record.raw = Some(raw);
        }
        let written = sh.log.lock().unwrap_or_else(PoisonError::into_inner).append(&record);
        if let Err(e) = written {
            sh.fail(e.into());
            return Ok(()); // `halted` stops the rounds
        }
        st.progress.add_record(&record);
        if sh.rule.needs_board() {
            sh.board().insert(st.index, st.progress.clone());
        }
        let c = &mut self.counts;
        match record.status {
            Status::Ok | Status::Imported if warmup => c.warmups += 1,
            Status::Ok | Status::Imported => c.ok += 1,
            Status::Failed => c.failed += 1,
            Status::Timeout => c.timed_out += 1,
            Status::ParseError => c.parse_errors += 1,
        }
        let status = match record.status {
            Status::Ok | Status::Imported => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::ParseError => "parse error",
        };
        sh.shown.lock().unwrap_or_else(PoisonError::into_inner).push(Shown::Trial(Finished {
            label: st.label.clone(),
            repetition,
            warmup,
            status,
            wall: record.wall_time,
            detail: record.error.clone(),
        }));
        if !record.status.is_measurement() {
            st.failures += 1;
            if st.failures >= sh.max_failures {
                let failures = if st.failures == 1 {
                    "1 failure".to_string()
                } else {
                    format!("{} failures", st.failures)
                };
                let why = format!("{failures}; the last: {}", record.error.unwrap_or_default());
                self.abandon(st, why);
                self.finish_cell(st);
            }
        }
        Ok(())
    }

    fn execute(
        &mut self,
        st: &CellState<'_>,
        cmds: &Commands,
        trial: &str,
        out: &Path,
        err: &Path,
        record: &mut TrialRecord,
    ) -> Result<Result<(), Stop>, RunError> {
        let sh = self.shared;
        if let Some(prepare) = &cmds.prepare
            && let Err(why) = self.hook(st, "prepare", prepare, &cmds.env, trial)
        {
            if self.host_error.is_some() {
                return Ok(Err(Stop::Host));
            }
            record.error = Some(why);
            return Ok(Ok(()));
        }
        if sh.stop.load(Ordering::SeqCst) {
            return Ok(Err(Stop::Store));
        }
        // the raw output is made durable before the record that points at it
        let dir = st.workdir.as_deref().unwrap_or(".");
        let job = Job {
            command: &cmds.run,
            dir,
            stdout: out,
            stderr: err,
            timeout: sh.timeout,
            sync: true,
            end_group: true,
            env: &cmds.env,
        };
        let e = self
            .executor
            .execute(&job)
            .map_err(|e| RunError::Io { what: format!("cannot run `{}`", cmds.run), source: e })?;
        if let Some(why) = e.host_error {
            self.host_error = Some(why);
            return Ok(Err(Stop::Host));
        }
        let concluded = match &cmds.conclude {
            Some(conclude) => self.hook(st, "conclude", conclude, &cmds.env, trial),
            None => Ok(()),
        };
        if self.host_error.is_some() {
            return Ok(Err(Stop::Host));
        }
        if e.not_started.is_some() {
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Ok(()));
        }
        record.exit_code = e.exit_code;
        record.wall_time = e.wall.as_secs_f64();
        if e.left_running {
            record.warnings.push(
                "the run command left processes running in its process group; margin killed them, so \
                 that they do not run on into the next trial"
                    .into(),
            );
        }
        let engine =
            [("wall_time", Some(record.wall_time)), ("user_time", e.user), ("system_time", e.system)];
        for (name, value) in engine {
            if let Some(v) = value {
                record.metrics.insert(name.to_string(), v);
                let (better, mean) = sh.recipe.annotation(name);
                record.metric_info.insert(
                    name.to_string(),
                    MetricInfo {
                        unit: "s".into(),
                        better: better.unwrap_or(Better::Lower),
                        mean: mean.unwrap_or(MeanKind::Arithmetic),
                    },
                );
            }
        }
        if e.timed_out {
            record.status = Status::Timeout;
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Ok(()));
        }
        if !e.succeeded() {
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Ok(()));
        }
        if let Err(why) = concluded {
            record.error = Some(why);
            return Ok(Ok(()));
        }
        if !sh.recipe.reads_output() {
            record.status = Status::Ok;
            return Ok(Ok(()));
        }
        let stdout = exec::read_raw(out).map_err(|e| io(out, e))?;
        let stderr = exec::read_raw(err).map_err(|e| io(err, e))?;
        match sh.recipe.apply(&stdout, &stderr) {
            Err(e) => {
                record.status = Status::ParseError;
                record.error = Some(e.to_string());
            }
            Ok(parsed) => {
                record.warnings.extend(parsed.warnings);
                let mut samples = parsed.samples.into_iter();
                match samples.next() {
                    None => {
                        record.status = Status::ParseError;
                        record.error = Some("the parser found no result in the output".into());
                    }
                    Some(sample) => {
                        let extra = samples.count();
                        if extra > 0 {
                            record.warnings.push(format!(
                                "the output holds {} results; the first is recorded (use repetitions rather than a loop)",
                                extra + 1
                            ));
                        }
                        for m in sample.metrics {
                            record.metric_info.insert(
                                m.name.clone(),
                                MetricInfo {
                                    unit: m.unit.symbol().to_string(),
                                    better: m.better,
                                    mean: m.mean,
                                },
                            );
                            record.metrics.insert(m.name, m.value);
                        }
                        record.status = Status::Ok;
                    }
                }
            }
        }
        Ok(Ok(()))
    }
}

/// For `plan` and `status`: each cell's progress, whether it runs here, and an estimate.
#[derive(Debug, Clone)]
pub struct CellOutlook {
    /// Successful measurements so far.
    pub ok: u32,
    /// Every record so far (the next trial's repetition is this + 1).
    pub attempts: u32,
    /// Trials still to run, fewest and most.
    pub remaining: (u32, u32),
    pub done: bool,
    /// Why it cannot run on this host, if it cannot.
    pub pending: Option<String>,
    /// Seconds the remaining trials should take, from earlier trials' wall times.
    pub estimate: Option<(f64, f64)>,
}

/// Where every cell of the plan stands on this host.
pub fn outlook(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    settings: &Settings,
) -> Result<(Vec<CellOutlook>, crate::store::Loaded, usize), RunError> {
    facts::check_sysroot().map_err(|e| RunError::Io { what: "facts".into(), source: e })?;
    let loaded = store.load()?;
    let dir = std::env::temp_dir();
    let source = facts::Local::new(&dir);
    let detected = facts::detect(exp, &facts::gather(&source), &source);
    let rule = Rule::new(exp, plan, repetitions(plan, settings));
    let (progress, set_aside) = cells::progress(plan, &loaded.trials);
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
    Ok((out, loaded, set_aside))
}

/// Per host, in order of appearance: (host, how it is reached, cells, done).
pub fn hosts_summary(
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
                let how = ssh_entry(exp, host)
                    .map_or("this machine".to_string(), |(_, dest)| format!("ssh {dest}"));
                out.push((host.to_string(), how, 0, 0));
                out.len() - 1
            }
        };
        out[i].2 += 1;
        out[i].3 += usize::from(o.done);
    }
    out
}

/// For `plan`, which connects to nothing: a cell on a remote host runs there.
fn remote_host(exp: &Experiment, plan: &Plan, cell: &Cell) -> Option<String> {
    let host = host_of(plan, cell);
    let (_, entry) = exp.spec.hosts.iter().find(|(name, _)| name.value == host)?;
    let ssh = entry.value.ssh.as_ref()?;
    Some(format!("runs on host `{host}` ({}): `margin run` connects to it", ssh.value))
}
