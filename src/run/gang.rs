//! Gangs (docs/experiment-file.md, gangs; docs/design.md §6.11): one trial on several
//! hosts at once. The gang's thread holds every member's machine (their turns taken
//! together, in name order, as services take theirs), prepares each member, then a
//! [`Barrier`] releases the timed commands together. Each member's output is saved under
//! `raw/<trial>@<host>.out` before it is parsed into `metric@host`; the record adds the
//! aggregates the gang declares and, among its secondary metrics, the measured start skew
//! (the last member's start minus the first's). A member that fails fails the trial.

use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use indexmap::IndexMap;

use super::exec::{Executor, GangExecutor};
use super::process::{self, Execution, Invocation};
use super::state::{CellState, HostRun, Places, Turn};
use super::telemetry::{self, Snapshots};
pub(crate) use super::trial::record_sample;
use super::trial::{Hook, Recorded, failure_text, record_engine, run_hook};
use super::workdir::WorkdirName;
use super::{GaveUp, HostError, RunError};
use crate::parse::Recipe;
use crate::plan::render::{Builtins, Commands, render};
use crate::spec::{Experiment, Gang};
use crate::store::{MetricInfo, RawPaths, Status, Telemetry, TrialRecord};
use vocab::GANG_SKEW;

/// What one member did in a gang's trial.
struct MemberEnd {
    /// Why its `prepare` failed.
    prepare: Option<String>,
    /// The timed command, when it ran: how it ended, the counters, when it started.
    ran: Option<std::io::Result<(Execution, Option<Snapshots>, SystemTime)>>,
    /// Why its `conclude` failed.
    conclude: Option<String>,
}

/// What a member runs in one trial.
struct MemberJob<'a> {
    executor: &'a dyn Executor,
    host: &'a str,
    commands: &'a Commands,
    workdir: &'a str,
    /// `<trial>@<host>`: the key of its raw files.
    key: String,
    out: PathBuf,
    err: PathBuf,
    raw: RawPaths,
}

/// How a gang's value of a metric is made from its members' (`aggregate:`).
pub(crate) fn aggregate(rule: &str, values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    Some(match rule {
        "sum" => values.iter().sum(),
        "mean" => values.iter().sum::<f64>() / n,
        "min" => values.iter().copied().fold(f64::INFINITY, f64::min),
        _ => values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// The members' metrics (`metric@host`, with their info) into the gang's aggregates:
/// those `aggregate:` declares, and `wall_time` as the slowest member's unless declared
/// (where the members have one: an imported trial has no wall time).
/// `Err` names a member that lacks a metric the gang aggregates.
pub(crate) fn add_aggregates(
    gang: &Gang,
    members: &[&str],
    metrics: &mut IndexMap<String, f64>,
    info: &mut IndexMap<String, MetricInfo>,
) -> Result<(), String> {
    let mut rules: Vec<(String, String)> =
        gang.aggregate.iter().map(|(m, r)| (m.value.clone(), r.value.clone())).collect();
    let timed = members.first().is_some_and(|m| metrics.contains_key(&format!("wall_time@{m}")));
    if timed && !rules.iter().any(|(m, _)| m == "wall_time") {
        rules.push(("wall_time".into(), "max".into()));
    }
    for (metric, rule) in rules {
        let mut values = Vec::with_capacity(members.len());
        for m in members {
            match metrics.get(&format!("{metric}@{m}")) {
                Some(v) => values.push(*v),
                None => {
                    return Err(format!(
                        "host `{m}` reported no `{metric}`, which gang `{}` aggregates ({rule})",
                        members.join(", ")
                    ));
                }
            }
        }
        if let (Some(value), Some(first)) = (aggregate(&rule, &values), members.first()) {
            metrics.insert(metric.clone(), value);
            if let Some(i) = info.get(&format!("{metric}@{first}")).cloned() {
                info.insert(metric, i);
            }
        }
    }
    Ok(())
}

/// One member's output parsed with the experiment's recipe into `metric@host`.
pub(crate) fn parse_member(
    recipe: &Recipe,
    host: &str,
    stdout: &str,
    stderr: &str,
    record: &mut TrialRecord,
) -> Result<(), String> {
    let parsed = recipe.apply(stdout, stderr).map_err(|e| format!("host `{host}`: {e}"))?;
    record_sample(parsed, Some(host), record)
}

/// Every machine of `host`'s members' turn, in name order, re-entrant where the thread
/// holds them already (its services').
fn member_turns<'p>(places: &'p Places<'_>, exp: &Experiment, host: &str) -> Vec<Turn<'p>> {
    super::machines_of(exp, host)
        .iter()
        .filter_map(|m| places.machines.get(m).map(|machine| machine.turn()))
        .collect()
}

impl HostRun<'_> {
    /// The members' commands for a cell, each rendered as itself (`host`, `workdir`).
    fn member_commands(
        &self,
        gang: &GangExecutor,
        st: &CellState<'_>,
        repetition: u32,
    ) -> Result<Vec<(Commands, String)>, String> {
        let sh = self.shared;
        let dirs = gang.workdirs_of(st.workdir.as_deref().unwrap_or_default());
        let mut out = Vec::with_capacity(gang.members.len());
        for (i, m) in gang.members.iter().enumerate() {
            let workdir = dirs.get(i).cloned().unwrap_or_default();
            let b = Builtins { workdir: &workdir, repetition, host: &m.name };
            let cmds = render(&sh.templates, sh.exp, sh.plan, st.cell, &b)
                .map_err(|d| format!("host `{}`: {}", m.name, d.message))?;
            out.push((cmds, workdir));
        }
        Ok(out)
    }

    /// A hook on every member in turn (`setup`, `cleanup`); `Err` says which failed.
    pub(crate) fn gang_hook(
        &mut self,
        gang: &GangExecutor,
        st: &CellState<'_>,
        name: &str,
        repetition: u32,
    ) -> Result<(), String> {
        let commands = self.member_commands(gang, st, repetition)?;
        let places = self.places;
        let _turns = member_turns(places, self.shared.exp, gang.host());
        for (m, (cmds, workdir)) in gang.members.iter().zip(&commands) {
            let command = match name {
                "setup" => &cmds.setup,
                _ => &cmds.cleanup,
            };
            let Some(command) = command else { continue };
            let key = format!("{}-{}@{}", self.session, st.cell.id, m.name);
            let hook = Hook { name, command, key: &key, dir: workdir, env: &cmds.env, member: Some(&m.name) };
            run_hook(m.ex.as_ref(), self.shared, &hook).map_err(|f| self.hook_failed(f))?;
        }
        Ok(())
    }

    /// One trial of a gang's cell: every member prepared, the timed commands released
    /// together, each member concluded; parsed, aggregated, recorded.
    pub(crate) fn gang_trial(
        &mut self,
        gang: &GangExecutor,
        st: &mut CellState<'_>,
        warmup: bool,
        round: u32,
        position: u32,
    ) -> Result<Recorded, RunError> {
        let sh = self.shared;
        let service_problem = self.ensure_services(st).err();
        // every member's machine, from before `prepare` until the record is durable
        let places = self.places;
        let turns = member_turns(places, sh.exp, gang.host());
        let repetition = st.progress.attempts + 1;
        let trial = uuid::Uuid::now_v7().to_string();
        let mut record = self.new_record(st, &trial, warmup, round, position);
        // rendered once per session unless they can render differently (as a single host's)
        if st.member_commands.is_none() || sh.renders_per_trial {
            st.member_commands =
                self.member_commands(gang, st, repetition).map_err(|e| record.error = Some(e)).ok();
        }
        match &st.member_commands {
            _ if service_problem.is_some() => record.error = service_problem,
            None => {} // they did not render: `record.error` says why
            Some(commands) => {
                let jobs: Vec<MemberJob<'_>> = gang
                    .members
                    .iter()
                    .zip(commands)
                    .map(|(m, (commands, workdir))| {
                        let key = format!("{trial}@{}", m.name);
                        let (raw, out, err) = sh.store.raw_paths(&key);
                        let host = m.name.as_str();
                        MemberJob { executor: m.ex.as_ref(), host, commands, workdir, key, out, err, raw }
                    })
                    .collect();
                let ends = self.release(&jobs);
                if sh.stop.load(Ordering::SeqCst) {
                    return Ok(Recorded::Nothing);
                }
                if let Some(why) = ends.iter().find_map(|e| match &e.ran {
                    Some(Ok((e, ..))) => e.host_error.clone(),
                    _ => None,
                }) {
                    // not a benchmark result: nothing is recorded, the gang's cells wait
                    self.host_error = Some(HostError::Lost(why));
                    return Ok(Recorded::Nothing);
                }
                if self.host_error.is_some() {
                    return Ok(Recorded::Nothing);
                }
                self.gang_record(gang, &jobs, ends, &mut record)?;
            }
        }
        let recorded = self.keep(st, record, warmup);
        drop(turns);
        Ok(recorded)
    }

    /// Prepare every member in its own thread, then release the timed commands together
    /// at a barrier, then conclude each. A member whose `prepare` failed stops them all
    /// before the barrier lets any command start.
    fn release(&mut self, jobs: &[MemberJob<'_>]) -> Vec<MemberEnd> {
        let sh = self.shared;
        let barrier = Barrier::new(jobs.len());
        let unprepared = AtomicBool::new(false);
        let monitor = &sh.monitor;
        let hook = |job: &MemberJob<'_>, name: &str, command: &str| -> Result<(), String> {
            let hook = Hook {
                name,
                command,
                key: &job.key,
                dir: job.workdir,
                env: &job.commands.env,
                member: Some(job.host),
            };
            run_hook(job.executor, sh, &hook).map_err(|f| f.why)
        };
        std::thread::scope(|scope| {
            let threads: Vec<_> = jobs
                .iter()
                .map(|job| {
                    let (barrier, unprepared, monitor, hook) = (&barrier, &unprepared, &monitor, &hook);
                    scope.spawn(move || {
                        let mut end = MemberEnd { prepare: None, ran: None, conclude: None };
                        if let Some(prepare) = &job.commands.prepare
                            && let Err(why) = hook(job, "prepare", prepare)
                        {
                            end.prepare = Some(why);
                            unprepared.store(true, Ordering::SeqCst);
                        }
                        if end.prepare.is_some() {
                            barrier.wait();
                            return end;
                        }
                        let invocation = Invocation {
                            command: &job.commands.run,
                            dir: job.workdir,
                            stdout: &job.out,
                            stderr: &job.err,
                            timeout: sh.timeout,
                            sync: true,
                            end_group: true,
                            env: &job.commands.env,
                        };
                        // every member prepared and ready: the commands start together
                        let go = || {
                            barrier.wait();
                            !unprepared.load(Ordering::SeqCst)
                        };
                        end.ran = match job.executor.execute_together(&invocation, monitor, &go) {
                            Ok(None) => return end,
                            Ok(Some(ran)) => Some(Ok(ran)),
                            Err(e) => Some(Err(e)),
                        };
                        if let Some(conclude) = &job.commands.conclude {
                            end.conclude = hook(job, "conclude", conclude).err();
                        }
                        end
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| {
                    t.join().unwrap_or(MemberEnd {
                        prepare: Some("its thread ended unexpectedly".into()),
                        ran: None,
                        conclude: None,
                    })
                })
                .collect()
        })
    }

    /// The gang's record from its members' ends: each member's engine and parsed metrics
    /// as `metric@host`, the aggregates, the start skew, the first failure's reason.
    fn gang_record(
        &self,
        gang: &GangExecutor,
        jobs: &[MemberJob<'_>],
        ends: Vec<MemberEnd>,
        record: &mut TrialRecord,
    ) -> Result<(), RunError> {
        let sh = self.shared;
        let spec = sh.exp.spec.gang(gang.host());
        let members: Vec<&str> = jobs.iter().map(|j| j.host).collect();
        let monitor = &sh.monitor;
        let mut problems: Vec<String> = Vec::new();
        let mut timed_out = false;
        let mut starts: Vec<SystemTime> = Vec::new();
        let mut secondary: IndexMap<String, f64> = IndexMap::new();
        let (relative, mut offset) = (format!("raw/{}.telemetry", record.session), None);
        let mut parse_problem: Option<String> = None;
        for (job, end) in jobs.iter().zip(ends) {
            let host = job.host;
            if let Some(why) = end.prepare {
                problems.push(why);
                continue;
            }
            let Some(ran) = end.ran else {
                // another member's `prepare` failed: this one was prepared, never started
                continue;
            };
            let (e, snapshots, started) = ran.map_err(|source| RunError::MemberCommand {
                command: job.commands.run.clone(),
                member: host.to_string(),
                source,
            })?;
            if e.not_started.is_some() {
                problems.push(failure_text(&format!("host `{host}`: the run command"), &e, &job.err));
                continue;
            }
            if record.raw.is_none() {
                record.raw = Some(job.raw.clone());
            }
            starts.push(started);
            record.exit_code = match (record.exit_code, e.exit_code) {
                (Some(0) | None, code) => code,
                (code, _) => code,
            };
            let wall = e.wall.as_secs_f64();
            record.wall_time = record.wall_time.max(wall);
            if let Some(snapshots) = snapshots {
                let path = sh.store.dir.join(&relative);
                let at = telemetry::append(&path, &snapshots.render_for(&job.key))
                    .map_err(|e| RunError::file(&path, e))?;
                offset.get_or_insert(at);
                for (name, value) in snapshots.derive() {
                    secondary.insert(format!("{name}@{host}"), value);
                }
            }
            if e.left_running {
                record.warnings.push(format!(
                    "host `{host}`: the run command left processes running in its process group; margin killed them"
                ));
            }
            record_engine(&sh.recipe, record, Some(host), wall, e.user, e.system);
            if e.timed_out {
                timed_out = true;
                problems.push(failure_text(&format!("host `{host}`: the run command"), &e, &job.err));
                continue;
            }
            if !e.succeeded() {
                problems.push(failure_text(&format!("host `{host}`: the run command"), &e, &job.err));
                continue;
            }
            if let Some(why) = end.conclude {
                problems.push(why);
                continue;
            }
            if sh.recipe.reads_output() && parse_problem.is_none() {
                let stdout = process::read_raw(&job.out).map_err(|e| RunError::file(&job.out, e))?;
                let stderr = process::read_raw(&job.err).map_err(|e| RunError::file(&job.err, e))?;
                parse_problem = parse_member(&sh.recipe, host, &stdout, &stderr, record).err();
            }
        }
        if starts.len() == jobs.len()
            && let (Some(first), Some(last)) = (starts.iter().min(), starts.iter().max())
        {
            let skew = last.duration_since(*first).map_or(0.0, |d| d.as_secs_f64());
            secondary.insert(GANG_SKEW.to_string(), skew);
        }
        if !secondary.is_empty() || !monitor.is_off() {
            record.telemetry = Some(Telemetry {
                sources: monitor.sources.iter().map(|s| s.to_string()).collect(),
                metrics: secondary,
                raw: offset.map(|_| relative.clone()),
                offset,
            });
        }
        if !problems.is_empty() {
            record.status = if timed_out { Status::Timeout } else { Status::Failed };
            record.error = Some(problems.join("; "));
            return Ok(());
        }
        if let Some(why) = parse_problem {
            record.status = Status::ParseError;
            record.error = Some(why);
            return Ok(());
        }
        match spec.map(|g| add_aggregates(g, &members, &mut record.metrics, &mut record.metric_info)) {
            Some(Err(why)) => {
                record.status = Status::ParseError;
                record.error = Some(why);
            }
            _ => record.status = Status::Ok,
        }
        Ok(())
    }

    /// A gang cell's workdirs and `setup` on every member (cell.rs routes here).
    pub(crate) fn open_gang_cell(&mut self, gang: &GangExecutor, st: &mut CellState<'_>) {
        let name = WorkdirName::new(st.cell.id, &self.session);
        match gang.create_workdir(&self.shared.exp.name, &name) {
            Ok(dir) => st.workdir = Some(dir),
            Err(e) => {
                match gang.is_local() {
                    true => self.abandon(st, GaveUp::Workdir(e.to_string())),
                    false => {
                        let gang = gang.host().to_string();
                        self.host_error = Some(HostError::GangWorkdirs { gang, error: e });
                    }
                }
                return;
            }
        }
        if let Err(why) = self.gang_hook(gang, st, "setup", st.progress.attempts + 1) {
            self.abandon(st, GaveUp::Setup(why));
        }
    }

    /// A gang cell's `cleanup` on every member, and its workdirs removed (unless kept).
    pub(crate) fn finish_gang_cell(&mut self, gang: &GangExecutor, st: &mut CellState<'_>) {
        let Some(dir) = st.workdir.clone() else { return };
        if self.host_error.is_none() {
            if let Err(why) = self.gang_hook(gang, st, "cleanup", st.progress.attempts) {
                self.note(format!("{}: {why}", st.label));
                st.cleanup_failed = Some(why);
            }
            if !self.shared.options.keep_workdir {
                gang.remove_workdir(&dir);
            }
        }
        st.workdir = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule against the same values worked out by hand.
    #[test]
    fn aggregates_combine_the_members_values() {
        let v = [120.0e6, 80.0e6, 100.0e6];
        assert_eq!(aggregate("sum", &v), Some(300.0e6));
        assert_eq!(aggregate("mean", &v), Some(100.0e6));
        assert_eq!(aggregate("min", &v), Some(80.0e6));
        assert_eq!(aggregate("max", &v), Some(120.0e6));
        assert_eq!(aggregate("sum", &[]), None);
    }
}
