//! Running an experiment: sessions of rounds over the cells that match this host, one
//! trial at a time, each recorded durably before the next begins.
//!
//! A session gathers the host's facts, detects its environment levels, and schedules the
//! cells that match and still need trials: in rounds visiting every unfinished cell once
//! in a seeded random order (interleaved), or cell after cell (sequential). Hooks follow
//! hyperfine: `setup` once per cell per session, `prepare` and `conclude` around each
//! trial, `cleanup` once per cell at the end. Failures are data: they are recorded and
//! the run goes on, until a cell fails `max_failures` times in a session.

pub mod cells;
pub mod exec;
pub mod facts;
pub mod progress;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indexmap::IndexMap;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use crate::parse::{Better, MeanKind, Recipe};
use crate::plan::render::{Builtins, Commands, render};
use crate::plan::{Cell, Plan};
use crate::spec::{Experiment, Order, Repetitions, parse_duration};
use crate::store::{
    Appender, Event, MetricInfo, SCHEMA, SessionRecord, Status, Store, StoreError, TrialRecord,
};
use crate::template::Templates;
use cells::{CellProgress, Rule, levels_map};
use exec::{Execution, Job};
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
}

/// What a session did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub session: String,
    pub seed: u64,
    pub ok: u32,
    pub failed: u32,
    pub timed_out: u32,
    pub parse_errors: u32,
    pub warmups: u32,
    /// Cells given up after too many failures (label, last error).
    pub abandoned: Vec<(String, String)>,
    /// Cells that cannot run on this host (label, reason).
    pub pending: Vec<(String, String)>,
    /// Cells that have all their trials (this session or before).
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
        self.failed + self.timed_out + self.parse_errors > 0 || !self.abandoned.is_empty()
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
            RunError::Io { source, .. } => source.raw_os_error() == Some(28),
        }
    }
}

/// The repetitions rule after `--repetitions`.
pub fn repetitions(plan: &Plan, settings: &Settings) -> Repetitions {
    settings.repetitions.map(Repetitions::Fixed).unwrap_or_else(|| plan.repetitions.clone())
}

/// One cell during a session.
struct CellState<'p> {
    cell: &'p Cell,
    label: String,
    levels: IndexMap<String, String>,
    progress: CellProgress,
    workdir: PathBuf,
    started: bool,
    warmups_left: u32,
    failures: u32,
    done: bool,
    abandoned: Option<String>,
}

struct Session<'a> {
    exp: &'a Experiment,
    plan: &'a Plan,
    store: &'a Store,
    settings: &'a Settings,
    rule: Rule,
    recipe: Recipe,
    templates: Templates,
    trials: Appender,
    session: String,
    timeout: Option<Duration>,
    max_failures: u32,
    interrupt: &'a AtomicBool,
    ui: &'a mut dyn Progress,
    outcome: Outcome,
}

/// Run the cells of `plan` that match this host and still need trials.
pub fn run(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    settings: &Settings,
    interrupt: &AtomicBool,
    ui: &mut dyn Progress,
) -> Result<Outcome, RunError> {
    let _lock = store.lock()?;
    if settings.fresh {
        for moved in store.move_aside()? {
            ui.note(&format!("--fresh: the old log is now {}", moved.display()));
        }
    }
    let loaded = store.load()?;
    for w in &loaded.warnings {
        ui.note(&format!("warning: {w}"));
    }
    let workroot = store.dir.join("work");
    std::fs::create_dir_all(&workroot).map_err(|e| io(&workroot, e))?;
    let source = facts::Local::new(&workroot);
    let host_facts = facts::gather(&source);
    let detected = facts::detect(exp, &host_facts, &source);

    let rule = Rule::new(exp, repetitions(plan, settings));
    let (progress, set_aside) = cells::progress(plan, &loaded.trials);
    let warmup = plan.warmup;
    let mut outcome = Outcome {
        session: uuid::Uuid::now_v7().to_string(),
        seed: settings.seed.or(exp.spec.seed).unwrap_or_else(rand::random),
        cells: plan.cells.len(),
        set_aside,
        store: store.dir.clone(),
        ..Outcome::default()
    };
    let mut states = Vec::new();
    for (cell, progress) in plan.cells.iter().zip(progress) {
        let label = plan.label(cell);
        if let Some(reason) =
            remote_host(exp, plan, cell).or_else(|| facts::pending_reason(&detected, plan.levels(cell)))
        {
            if !rule.is_done(&progress) {
                outcome.pending.push((label, reason));
            } else {
                outcome.complete += 1;
            }
            continue;
        }
        let done = rule.is_done(&progress);
        outcome.complete += usize::from(done);
        states.push(CellState {
            cell,
            levels: levels_map(plan, cell),
            label,
            progress,
            workdir: workroot.join(cell.id.to_string()),
            started: false,
            warmups_left: warmup,
            failures: 0,
            done,
            abandoned: None,
        });
    }

    let mut sessions = store.sessions()?;
    let spec_hash = blake3::hash(exp.source.as_bytes()).to_hex().to_string();
    let mut record = SessionRecord {
        schema: SCHEMA,
        session: outcome.session.clone(),
        event: Event::Start,
        at: now(),
        host: LOCAL_HOST.to_string(),
        experiment: exp.name.clone(),
        margin_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: outcome.seed,
        spec_hash,
        facts: host_facts,
        environment: detected.levels.clone(),
        abandoned: Vec::new(),
        outcome: None,
    };
    sessions.append(&record)?;

    let recipe = Recipe::from_spec(&exp.spec).map_err(|(name, e)| RunError::Io {
        what: format!("metric `{name}`"),
        source: std::io::Error::other(e.to_string()),
    })?;
    let mut s = Session {
        exp,
        plan,
        store,
        settings,
        timeout: exp.spec.timeout.as_ref().and_then(|t| parse_duration(&t.value).ok()),
        max_failures: exp.spec.max_failures.unwrap_or(DEFAULT_MAX_FAILURES),
        rule,
        recipe,
        templates: crate::plan::render::templates(exp),
        trials: store.trials()?,
        session: outcome.session.clone(),
        interrupt,
        ui,
        outcome,
    };
    let result = s.rounds(&mut states);
    // Whatever happened, close the cells that were opened: cleanup hooks, workdirs.
    for st in states.iter_mut().filter(|st| st.started) {
        s.finish_cell(st);
    }
    s.ui.finish();
    // only removes it when every cell's scratch directory is gone
    let _ = std::fs::remove_dir(&workroot);
    let mut outcome = s.outcome;
    outcome.complete += states.iter().filter(|st| st.done && st.progress.ok > 0).count();
    outcome.complete = outcome.complete.min(outcome.cells);
    outcome.abandoned = states
        .iter()
        .filter_map(|st| st.abandoned.as_ref().map(|why| (st.label.clone(), why.clone())))
        .collect();
    record.event = Event::End;
    record.at = now();
    record.facts = IndexMap::new();
    record.environment = IndexMap::new();
    record.abandoned =
        states.iter().filter(|st| st.abandoned.is_some()).map(|st| st.cell.id.to_string()).collect();
    record.outcome = Some(match &result {
        Err(e) => format!("stopped: {e}"),
        Ok(()) if outcome.interrupted => "interrupted".to_string(),
        Ok(()) => "completed".to_string(),
    });
    // After a full disk this may fail too; the trial log is what matters and it loads.
    let ended = sessions.append(&record);
    result?;
    ended?;
    Ok(outcome)
}

/// Why a cell whose `host` level names a remote machine does not run here: this
/// margin executes trials on the local machine only (hosts without `ssh:` are local).
fn remote_host(exp: &Experiment, plan: &Plan, cell: &Cell) -> Option<String> {
    let (_, level) = plan.levels(cell).find(|(k, _)| *k == "host")?;
    let (_, host) = exp.spec.hosts.iter().find(|(name, _)| name.value == level.text)?;
    let ssh = host.value.ssh.as_ref()?;
    Some(format!(
        "runs on host `{}` ({}); trials run on the local machine only so far",
        level.text, ssh.value
    ))
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn io(path: &Path, source: std::io::Error) -> RunError {
    RunError::Io { what: path.display().to_string(), source }
}

/// The last lines of a file, for a failure message.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
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

impl Session<'_> {
    fn interrupted(&mut self) -> bool {
        if self.interrupt.load(Ordering::SeqCst) {
            self.outcome.interrupted = true;
        }
        self.outcome.interrupted
    }

    fn rounds(&mut self, states: &mut [CellState<'_>]) -> Result<(), RunError> {
        let mut rng = Pcg64::seed_from_u64(self.outcome.seed);
        let active = |states: &[CellState<'_>]| -> Vec<usize> {
            (0..states.len()).filter(|i| !states[*i].done && states[*i].abandoned.is_none()).collect()
        };
        let todo = active(states);
        let (min, max) = todo.iter().fold((0u64, 0u64), |(lo, hi), i| {
            let (a, b) = self.rule.remaining(&states[*i].progress);
            (lo + u64::from(a), hi + u64::from(b))
        });
        self.ui.start(todo.len(), min, max);
        let mut round = 0u32;
        loop {
            let mut order = active(states);
            if order.is_empty() || self.interrupted() {
                return Ok(());
            }
            round += 1;
            match self.exp.spec.order.unwrap_or_default() {
                Order::Interleaved => {
                    order.shuffle(&mut rng);
                    for (position, i) in order.into_iter().enumerate() {
                        self.step(&mut states[i], round, position as u32 + 1)?;
                        if self.interrupted() {
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
                            if self.interrupted() {
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
        if !st.done && st.abandoned.is_none() && self.rule.is_done(&st.progress) {
            st.done = true;
            self.finish_cell(st);
        }
    }

    /// One visit of a cell: open it if needed, its warm-ups the first time, one trial.
    fn step(&mut self, st: &mut CellState<'_>, round: u32, position: u32) -> Result<(), RunError> {
        if !st.started {
            self.open_cell(st);
            if st.abandoned.is_some() {
                return Ok(());
            }
        }
        while st.warmups_left > 0 && st.abandoned.is_none() {
            st.warmups_left -= 1;
            self.trial(st, true, round, position)?;
            if self.interrupted() {
                return Ok(());
            }
        }
        if st.abandoned.is_none() {
            self.trial(st, false, round, position)?;
        }
        Ok(())
    }

    fn builtins<'w>(&self, st: &'w CellState<'_>, repetition: u32) -> Builtins<'w> {
        Builtins { workdir: st.workdir.to_str().unwrap_or_default(), repetition, host: LOCAL_HOST }
    }

    fn render(&self, st: &CellState<'_>, repetition: u32) -> Result<Commands, String> {
        let b = self.builtins(st, repetition);
        render(&self.templates, self.exp, self.plan, st.cell, &b).map_err(|d| d.message)
    }

    /// Create the workdir and run `setup`; a failure abandons the cell for this session.
    fn open_cell(&mut self, st: &mut CellState<'_>) {
        st.started = true;
        if let Err(e) = std::fs::create_dir_all(&st.workdir) {
            self.abandon(st, format!("cannot create the workdir {}: {e}", st.workdir.display()));
            return;
        }
        let setup = match self.render(st, st.progress.attempts + 1) {
            Ok(c) => c.setup,
            Err(e) => {
                self.abandon(st, e);
                return;
            }
        };
        if let Some(cmd) = setup
            && let Err(why) = self.hook(st, "setup", &cmd, &format!("{}-{}", self.session, st.cell.id))
        {
            self.abandon(st, why);
        }
    }

    /// Run `cleanup` and remove the workdir (unless kept).
    fn finish_cell(&mut self, st: &mut CellState<'_>) {
        if !st.started {
            return;
        }
        st.started = false;
        if let Ok(Commands { cleanup: Some(cmd), .. }) = self.render(st, st.progress.attempts)
            && let Err(why) = self.hook(st, "cleanup", &cmd, &format!("{}-{}", self.session, st.cell.id))
        {
            self.ui.note(&format!("{}: {why}", st.label));
        }
        if !self.settings.keep_workdir && st.workdir.exists() {
            let _ = std::fs::remove_dir_all(&st.workdir);
        }
    }

    fn abandon(&mut self, st: &mut CellState<'_>, why: String) {
        self.ui.note(&format!("{}: abandoned for this session: {why}", st.label));
        st.abandoned = Some(why);
    }

    /// Run a hook with its output saved under `raw/`; `Err` says why it failed.
    fn hook(&mut self, st: &CellState<'_>, name: &str, command: &str, key: &str) -> Result<(), String> {
        let out = self.store.raw_dir().join(format!("{key}.{name}.out"));
        let err = self.store.raw_dir().join(format!("{key}.{name}.err"));
        let job =
            Job { command, dir: &st.workdir, stdout: &out, stderr: &err, timeout: self.timeout, sync: false };
        match exec::execute(&job) {
            Ok(e) if e.succeeded() => Ok(()),
            Ok(e) => Err(failure_text(&format!("`{name}` failed"), &e, &err)),
            Err(e) => Err(format!("`{name}` could not start: {e}")),
        }
    }

    /// One trial: prepare, run, conclude; parse; append the record durably.
    fn trial(
        &mut self,
        st: &mut CellState<'_>,
        warmup: bool,
        round: u32,
        position: u32,
    ) -> Result<(), RunError> {
        let repetition = st.progress.attempts + 1;
        let trial = uuid::Uuid::now_v7().to_string();
        let (raw, out, err) = self.store.raw_paths(&trial);
        let started_at = now();
        let mut record = TrialRecord {
            schema: SCHEMA,
            trial: trial.clone(),
            cell: st.cell.id.to_string(),
            levels: st.levels.clone(),
            repetition,
            warmup,
            host: LOCAL_HOST.to_string(),
            session: self.session.clone(),
            round,
            position,
            started_at,
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
            Ok(cmds) => self.execute(st, &cmds, &trial, &out, &err, &mut record)?,
        }
        if record.exit_code.is_some() || record.status == Status::Timeout {
            record.raw = Some(raw);
        }
        self.trials.append(&record)?;
        st.progress.add(&record);
        match record.status {
            Status::Ok | Status::Imported if warmup => self.outcome.warmups += 1,
            Status::Ok | Status::Imported => self.outcome.ok += 1,
            Status::Failed => self.outcome.failed += 1,
            Status::Timeout => self.outcome.timed_out += 1,
            Status::ParseError => self.outcome.parse_errors += 1,
        }
        let status = match record.status {
            Status::Ok | Status::Imported => "ok",
            Status::Failed => "failed",
            Status::Timeout => "timeout",
            Status::ParseError => "parse error",
        };
        self.ui.trial(&TrialLine {
            label: &st.label,
            repetition,
            warmup,
            status,
            wall: record.wall_time,
            detail: record.error.as_deref(),
        });
        if !record.status.is_measurement() {
            st.failures += 1;
            if st.failures >= self.max_failures {
                let why = format!("{} failures; the last: {}", st.failures, record.error.unwrap_or_default());
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
    ) -> Result<(), RunError> {
        if let Some(prepare) = &cmds.prepare
            && let Err(why) = self.hook(st, "prepare", prepare, trial)
        {
            record.error = Some(why);
            return Ok(());
        }
        // the raw output is made durable before the record that points at it
        let job = Job {
            command: &cmds.run,
            dir: &st.workdir,
            stdout: out,
            stderr: err,
            timeout: self.timeout,
            sync: true,
        };
        let e = exec::execute(&job)
            .map_err(|e| RunError::Io { what: format!("cannot run `{}`", cmds.run), source: e })?;
        let concluded = match &cmds.conclude {
            Some(conclude) => self.hook(st, "conclude", conclude, trial),
            None => Ok(()),
        };
        record.exit_code = e.exit_code;
        record.wall_time = e.wall.as_secs_f64();
        let engine =
            [("wall_time", Some(record.wall_time)), ("user_time", e.user), ("system_time", e.system)];
        for (name, value) in engine {
            if let Some(v) = value {
                record.metrics.insert(name.to_string(), v);
                let (better, mean) = self.recipe.annotation(name);
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
            return Ok(());
        }
        if !e.succeeded() {
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(());
        }
        if let Err(why) = concluded {
            record.error = Some(why);
            return Ok(());
        }
        if !self.recipe.reads_output() {
            record.status = Status::Ok;
            return Ok(());
        }
        let stdout = std::fs::read(out).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let stderr = std::fs::read(err).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        match self.recipe.apply(&stdout, &stderr) {
            Err(e) => {
                record.status = Status::ParseError;
                record.error = Some(e.to_string());
            }
            Ok(parsed) => {
                record.warnings = parsed.warnings;
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
        Ok(())
    }
}

/// For `plan` and `status`: each cell's progress, whether it runs here, and an estimate.
#[derive(Debug, Clone)]
pub struct CellOutlook {
    pub progress: CellProgress,
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
    let loaded = store.load()?;
    let dir = std::env::temp_dir();
    let source = facts::Local::new(&dir);
    let detected = facts::detect(exp, &facts::gather(&source), &source);
    let rule = Rule::new(exp, repetitions(plan, settings));
    let (progress, set_aside) = cells::progress(plan, &loaded.trials);
    let known: Vec<f64> = progress.iter().filter_map(|p| p.mean_wall).collect();
    let overall = (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64);
    let warmup = f64::from(plan.warmup);
    let out = plan
        .cells
        .iter()
        .zip(progress)
        .map(|(cell, progress)| {
            let done = rule.is_done(&progress);
            let (lo, hi) = rule.remaining(&progress);
            let per = progress.mean_wall.or(overall);
            let warm = if done { 0.0 } else { warmup };
            let estimate = per.map(|t| ((f64::from(lo) + warm) * t, (f64::from(hi) + warm) * t));
            let pending = if done {
                None
            } else {
                remote_host(exp, plan, cell).or_else(|| facts::pending_reason(&detected, plan.levels(cell)))
            };
            CellOutlook { progress, done, pending, estimate }
        })
        .collect();
    Ok((out, loaded, set_aside))
}
