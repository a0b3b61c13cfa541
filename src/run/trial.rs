//! One trial: `prepare`, the command, `conclude`; the raw output saved before it is
//! parsed, then the record appended and made durable before the host's next trial.

use std::path::Path;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use super::exec::{Executor, Target};
use super::process::{self, Execution, Invocation};
use super::state::{CellState, Finished, HostRun, Shared, Shown};
use super::telemetry::{self, Monitor, Snapshots};
use super::{HostError, RunError};
use crate::parse::{Parsed, Recipe};
use crate::plan::render::{Builtins, Commands, render};
use crate::store::{MetricInfo, RawPaths, Status, Telemetry, TrialRecord};
use vocab::{Better, MeanKind};

/// What a trial left in the log.
pub(crate) enum Recorded {
    /// A measurement (or a warm-up that would have been one).
    Measurement,
    /// A failed trial, with why.
    Failure(String),
    /// No record: the host is gone or the log cannot be written.
    Nothing,
}

/// How a trial's commands went: to a record (whatever it says), or stopped with no
/// benchmark result to record.
enum Executed {
    /// The record says how the trial ended.
    Recorded,
    /// The writer could not store a record (it holds the error).
    StoreStopped,
    /// The host is gone (`HostRun::host_error` says why).
    HostGone,
}

pub(crate) fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// The last lines of a file, for a failure message.
pub(super) fn tail(path: &Path, lines: usize) -> String {
    let text = process::read_raw(path).unwrap_or_default();
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
pub(super) fn failure_text(what: &str, e: &Execution, stderr: &Path) -> String {
    let tail = tail(stderr, 5);
    if tail.is_empty() {
        format!("{what}: {}", e.describe())
    } else {
        format!("{what}: {}: {tail}", e.describe())
    }
}

/// A hook to run: its name (`setup`, `prepare`, …), its command, the key of its raw files
/// (`raw/<key>.<name>.out`, `.err`), its directory and environment, and the gang member it
/// runs on (named in its failure).
pub(super) struct Hook<'a> {
    pub(super) name: &'a str,
    pub(super) command: &'a str,
    pub(super) key: &'a str,
    pub(super) dir: &'a str,
    pub(super) env: &'a [(String, String)],
    pub(super) member: Option<&'a str>,
}

/// Why a hook failed, and whether because its host is gone (not the cell's fault).
pub(super) struct HookFailure {
    pub(super) why: String,
    pub(super) host_gone: bool,
}

/// Run a hook on `executor` with its output saved under `raw/` (every hook of a trial, a
/// cell or a gang's member; docs/experiment-file.md, Hooks and order).
pub(super) fn run_hook(executor: &dyn Executor, sh: &Shared<'_>, hook: &Hook<'_>) -> Result<(), HookFailure> {
    let raw = sh.store.raw_dir();
    let (name, key) = (hook.name, hook.key);
    let (out, err) = (raw.join(format!("{key}.{name}.out")), raw.join(format!("{key}.{name}.err")));
    let invocation = Invocation {
        command: hook.command,
        dir: hook.dir,
        stdout: &out,
        stderr: &err,
        timeout: sh.timeout,
        sync: false,
        end_group: false,
        env: hook.env,
    };
    let who = hook.member.map(|m| format!("host `{m}`: ")).unwrap_or_default();
    let failed = |why: String| HookFailure { why, host_gone: false };
    match executor.execute(&invocation, &Monitor::OFF).map(|(e, _)| e) {
        Ok(e) if e.host_error.is_some() => {
            Err(HookFailure { why: e.host_error.unwrap_or_default(), host_gone: true })
        }
        Ok(e) if e.succeeded() => Ok(()),
        Ok(e) => Err(failed(failure_text(&format!("{who}`{name}` failed"), &e, &err))),
        Err(e) => Err(failed(format!("{who}`{name}` could not start: {e}"))),
    }
}

/// margin's own measures of the command (`wall_time`, and `user_time`/`system_time`
/// where the OS reports them), named `metric@host` for a gang's member.
pub(super) fn record_engine(
    recipe: &Recipe,
    record: &mut TrialRecord,
    member: Option<&str>,
    wall: f64,
    user: Option<f64>,
    system: Option<f64>,
) {
    for (name, value) in [("wall_time", Some(wall)), ("user_time", user), ("system_time", system)] {
        let Some(v) = value else { continue };
        let metric = match member {
            Some(host) => format!("{name}@{host}"),
            None => name.to_string(),
        };
        let (better, mean) = recipe.annotation(&metric);
        record.metrics.insert(metric.clone(), v);
        record.metric_info.insert(
            metric,
            MetricInfo {
                unit: "s".into(),
                better: better.unwrap_or(Better::Lower),
                mean: mean.unwrap_or(MeanKind::Arithmetic),
            },
        );
    }
}

/// A parsed output's first result into the record: its metrics (named `metric@host` for
/// a gang's member), the parser's warnings (prefixed with the member) and flags; `Err`
/// when it holds no result. A run records one result a trial: a loop inside the command
/// is said, not split (repetitions are what margin schedules and randomises).
pub(crate) fn record_sample(
    parsed: Parsed,
    member: Option<&str>,
    record: &mut TrialRecord,
) -> Result<(), String> {
    let prefix = member.map(|h| format!("host `{h}`: ")).unwrap_or_default();
    record.warnings.extend(parsed.warnings.into_iter().map(|w| format!("{prefix}{w}")));
    for f in &parsed.flags {
        let f = f.to_string();
        if !record.flags.contains(&f) {
            record.flags.push(f);
        }
    }
    let mut samples = parsed.samples.into_iter();
    let sample = samples.next().ok_or_else(|| format!("{prefix}the parser found no result in the output"))?;
    let extra = samples.count();
    if extra > 0 {
        record.warnings.push(format!(
            "{prefix}the output holds {} results; the first is recorded (use repetitions rather than a loop)",
            extra + 1
        ));
    }
    for m in sample.metrics {
        let name = match member {
            Some(host) => format!("{}@{host}", m.name),
            None => m.name,
        };
        record.metric_info.insert(
            name.clone(),
            MetricInfo { unit: m.unit.symbol().to_string(), better: m.better, mean: m.mean },
        );
        record.metrics.insert(name, m.value);
    }
    Ok(())
}

impl HostRun<'_> {
    pub(crate) fn render(&self, st: &CellState<'_>, repetition: u32) -> Result<Commands, String> {
        let sh = self.shared;
        let b = Builtins {
            workdir: st.workdir.as_deref().unwrap_or_default(),
            repetition,
            host: self.target.host(),
        };
        render(&sh.templates, sh.exp, sh.plan, st.cell, &b).map_err(|d| d.message)
    }

    /// Run a hook with its output saved under `raw/`; `Err` says why it failed (and a
    /// host that is gone is this host's error).
    pub(crate) fn hook(
        &mut self,
        executor: &dyn Executor,
        st: &CellState<'_>,
        name: &str,
        command: &str,
        env: &[(String, String)],
        key: &str,
    ) -> Result<(), String> {
        let dir = st.workdir.as_deref().unwrap_or(".");
        let hook = Hook { name, command, key, dir, env, member: None };
        run_hook(executor, self.shared, &hook).map_err(|f| self.hook_failed(f))
    }

    /// A hook's failure as its reason; a host gone is the host's error too.
    pub(super) fn hook_failed(&mut self, failure: HookFailure) -> String {
        if failure.host_gone {
            self.host_error = Some(HostError::Lost(failure.why.clone()));
        }
        failure.why
    }

    /// One trial: prepare, run, conclude; parse; append the record; what was recorded.
    pub(crate) fn trial(
        &mut self,
        st: &mut CellState<'_>,
        warmup: bool,
        round: u32,
        position: u32,
    ) -> Result<Recorded, RunError> {
        let executor = match self.target {
            Target::One(one) => one.as_ref(),
            Target::Gang(gang) => return self.gang_trial(gang, st, warmup, round, position),
        };
        let sh = self.shared;
        // The machine's turn, from before `prepare` until the record is durable: no other
        // host of this machine runs anything meanwhile.
        // Its services first: they take their turns before this one (service.rs).
        let service_problem = self.ensure_services(st).err();
        let machine = self.machine;
        let _turn = machine.turn();
        let repetition = st.progress.attempts + 1;
        let trial = uuid::Uuid::now_v7().to_string();
        let (raw, out, err) = sh.store.raw_paths(&trial);
        let mut record = self.new_record(st, &trial, warmup, round, position);
        if st.commands.is_none() || sh.renders_per_trial {
            st.commands = self.render(st, repetition).map_err(|e| record.error = Some(e)).ok();
        }
        match &st.commands {
            _ if service_problem.is_some() => record.error = service_problem,
            None => {} // it did not render: `record.error` says why
            Some(cmds) => match self.execute(executor, st, cmds, (&raw, &out, &err), &mut record)? {
                Executed::Recorded => {}
                // not a benchmark result (the host or the store stopped): nothing is
                // recorded, the host's cells wait
                Executed::HostGone | Executed::StoreStopped => return Ok(Recorded::Nothing),
            },
        }
        Ok(self.keep(st, record, warmup))
    }

    /// A trial's record before it runs: `failed`, no metrics, started now.
    pub(super) fn new_record(
        &self,
        st: &CellState<'_>,
        trial: &str,
        warmup: bool,
        round: u32,
        position: u32,
    ) -> TrialRecord {
        TrialRecord {
            repetition: st.progress.attempts + 1,
            warmup,
            round,
            position,
            started_at: Some(now()),
            ..TrialRecord::new(
                trial.to_string(),
                st.cell.id.to_string(),
                st.levels.clone(),
                self.target.host().to_string(),
                self.session.clone(),
                Status::Failed,
            )
        }
    }

    /// Append a trial's record (durable before the host's next trial), count it into the
    /// cell's progress and the session's counts, and show it.
    pub(super) fn keep(&mut self, st: &mut CellState<'_>, record: TrialRecord, warmup: bool) -> Recorded {
        let sh = self.shared;
        // A second Ctrl-C killed the commands under way (`process::kill_running`) and
        // margin is exiting: what ended now is not the command's result. (A trial that
        // ended before the flag was set is real, and was recorded.)
        if process::aborting() {
            return Recorded::Nothing;
        }
        let written = sh.log.lock().unwrap_or_else(PoisonError::into_inner).append_trial(&record);
        if let Err(e) = written {
            sh.fail(e.into());
            return Recorded::Nothing; // `halted` stops the rounds
        }
        st.progress.add_record(&record);
        // the measured trials' number, warm-ups not counted; a failure has the number
        // of the trial that tries again
        let measured = record.status.is_measurement() && !warmup;
        let repetition = if measured { st.progress.ok } else { st.progress.ok + 1 };
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
        sh.show(Shown::Trial(Finished {
            label: st.label.clone(),
            repetition,
            warmup,
            status,
            wall: record.wall_time,
            detail: record.error.clone(),
        }));
        match record.status.is_measurement() {
            true => Recorded::Measurement,
            false => Recorded::Failure(record.error.unwrap_or_default()),
        }
    }

    /// The snapshots appended to the session's `raw/<session>.telemetry` before they are
    /// parsed (`telemetry::append`), the secondary metrics derived from them, and those
    /// `metrics:` names made main metrics (docs/design.md §6.9).
    fn keep_telemetry(
        &self,
        monitor: &Monitor,
        snapshots: &Snapshots,
        own_written: Option<f64>,
        record: &mut TrialRecord,
    ) -> Result<(), RunError> {
        let sh = self.shared;
        let relative = format!("raw/{}.telemetry", record.session);
        let path = sh.store.dir.join(&relative);
        let offset = telemetry::append(&path, &snapshots.render_for(&record.trial))
            .map_err(|e| RunError::file(&path, e))?;
        let mut metrics = snapshots.derive();
        if let Some(own) = own_written {
            metrics.insert(vocab::OWN_WRITTEN.to_string(), own);
        }
        for (name, value) in &metrics {
            if sh.exp.spec.metrics.keys().any(|k| &k.value == name) {
                let unit = vocab::telemetry_unit(name);
                let (better, mean) = sh.recipe.annotation(name);
                record.metrics.insert(name.clone(), *value);
                record.metric_info.insert(
                    name.clone(),
                    MetricInfo {
                        unit: unit.into(),
                        better: better.unwrap_or(Better::Lower),
                        mean: mean.unwrap_or(MeanKind::Arithmetic),
                    },
                );
            }
        }
        record.telemetry = Some(Telemetry {
            sources: monitor.sources.iter().map(|s| s.to_string()).collect(),
            metrics,
            raw: Some(relative),
            offset: Some(offset),
        });
        Ok(())
    }

    /// `prepare`, the command, `conclude` on `executor`; the record filled in from how they
    /// went (`files`: the raw output's paths, as the record and as the command's stdout
    /// and stderr).
    fn execute(
        &mut self,
        executor: &dyn Executor,
        st: &CellState<'_>,
        cmds: &Commands,
        (raw, out, err): (&RawPaths, &Path, &Path),
        record: &mut TrialRecord,
    ) -> Result<Executed, RunError> {
        let sh = self.shared;
        let trial = record.trial.clone();
        if let Some(prepare) = &cmds.prepare
            && let Err(why) = self.hook(executor, st, "prepare", prepare, &cmds.env, &trial)
        {
            if self.host_error.is_some() {
                return Ok(Executed::HostGone);
            }
            record.error = Some(why);
            return Ok(Executed::Recorded);
        }
        if sh.stop.load(Ordering::SeqCst) {
            return Ok(Executed::StoreStopped);
        }
        // the raw output is made durable before the record that points at it
        let dir = st.workdir.as_deref().unwrap_or(".");
        let invocation = Invocation {
            command: &cmds.run,
            dir,
            stdout: out,
            stderr: err,
            timeout: sh.timeout,
            sync: true,
            end_group: true,
            env: &cmds.env,
        };
        let monitor = &sh.monitor;
        // where margin measures both the trial's own writes and the disks' (a local
        // host): the pages already waiting to be written, for `foreign_writes`
        let local = executor.is_local() && monitor.files.contains(&"/proc/diskstats");
        let dirty = if local { telemetry::dirty_part() } else { None };
        let (e, mut snapshots) = executor
            .execute(&invocation, monitor)
            .map_err(|source| RunError::Command { command: cmds.run.clone(), source })?;
        let own = match (&mut snapshots, dirty, e.written) {
            (Some(s), Some(part), Some(written)) => {
                s.before.parts.push(part);
                // the raw output margin saved during the trial's window is the trial's too
                Some(written + e.saved as f64)
            }
            _ => None,
        };
        if let Some(why) = e.host_error {
            self.host_error = Some(HostError::Lost(why));
            return Ok(Executed::HostGone);
        }
        let concluded = match &cmds.conclude {
            Some(conclude) => self.hook(executor, st, "conclude", conclude, &cmds.env, &trial),
            None => Ok(()),
        };
        if self.host_error.is_some() {
            return Ok(Executed::HostGone);
        }
        if e.not_started.is_some() {
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Executed::Recorded);
        }
        // The command ran, so its output was saved: linked whatever the ending (an exit, a
        // timeout, a signal), since a raw output is a measurement's evidence.
        record.raw = Some(raw.clone());
        record.exit_code = e.exit_code;
        record.wall_time = e.wall.as_secs_f64();
        if let Some(snapshots) = snapshots {
            self.keep_telemetry(monitor, &snapshots, own, record)?;
        }
        if e.left_running {
            record.warnings.push(
                "the run command left processes running in its process group; margin killed them, so \
                 that they do not run on into the next trial"
                    .into(),
            );
        }
        record_engine(&sh.recipe, record, None, record.wall_time, e.user, e.system);
        if e.timed_out {
            record.status = Status::Timeout;
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Executed::Recorded);
        }
        if !e.succeeded() {
            record.error = Some(failure_text("the run command", &e, err));
            return Ok(Executed::Recorded);
        }
        if let Err(why) = concluded {
            record.error = Some(why);
            return Ok(Executed::Recorded);
        }
        if !sh.recipe.reads_output() {
            record.status = Status::Ok;
            return Ok(Executed::Recorded);
        }
        let stdout = process::read_raw(out).map_err(|e| RunError::file(out, e))?;
        let stderr = process::read_raw(err).map_err(|e| RunError::file(err, e))?;
        match sh.recipe.apply(&stdout, &stderr).map_err(|e| e.to_string()) {
            Err(why) => {
                record.status = Status::ParseError;
                record.error = Some(why);
            }
            Ok(parsed) => match record_sample(parsed, None, record) {
                Err(why) => {
                    record.status = Status::ParseError;
                    record.error = Some(why);
                }
                Ok(()) => record.status = Status::Ok,
            },
        }
        Ok(Executed::Recorded)
    }
}
