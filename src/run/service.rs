//! Services (docs/experiment-file.md, services): long-lived commands on a host for the
//! trials of the cells that use them — started before a cell's first trial and ready
//! within `ready_timeout`, checked before every trial, stopped and reaped once no
//! unfinished cell of the session needs them, and at the session's end whatever happened.
//!
//! From its first service's start to its last one's stop, a host's thread holds the turns
//! (`state::Machine`) of its own machine and of the machines of every service its cells
//! use: no other host's trial runs there. They are taken together, in the order of the
//! machines' names, by a thread that holds none, so two hosts that serve each other cannot
//! wait for each other forever; and since they cover every service of the session, the
//! services of interleaved cells (a netserver on each target) run side by side instead of
//! restarting at every trial.

use std::time::{Duration, Instant};

use super::process::Invocation;
use super::state::{CellState, HostRun, Up};
use super::telemetry::Monitor;
use super::{machine_of, trial};
use crate::plan::render::ServiceCommands;
use crate::spec::parse_duration;

/// How long `ready` may take to succeed, unless `ready_timeout` says.
pub(crate) const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30);
/// Without `ready`, a service is taken as ready when it still runs after this long.
const SETTLE: Duration = Duration::from_millis(200);
/// The limit on one `alive` check.
const ALIVE_TIMEOUT: Duration = Duration::from_secs(10);

impl HostRun<'_> {
    /// Before a trial of `st`: every service it uses running (started, and ready, if it
    /// was not) and alive. `Err` says why not: the trial fails with it, and the service
    /// is stopped, to be started again for the next trial.
    pub(crate) fn ensure_services(&mut self, st: &CellState<'_>) -> Result<(), String> {
        // borrowed: cloned only for a service that has to start
        let needed = st.services.as_ref().map_err(Clone::clone)?;
        if needed.is_empty() {
            return Ok(());
        }
        // another rendering of a service this cell needs is stopped: one of a name at a time
        self.stop_where(|up| needed.iter().any(|n| n.name == up.commands.name && *n != up.commands));
        let mut machines: Vec<String> = needed.iter().map(|n| machine_of(self.shared.exp, &n.host)).collect();
        machines.extend(self.service_machines.iter().cloned());
        // a gang's trial holds its members' machines: taken here with the others
        machines.extend(super::machines_of(self.shared.exp, self.target.host()));
        machines.sort();
        machines.dedup();
        if !machines.iter().all(|m| self.held.iter().any(|(h, _)| h == m)) {
            // every turn at once, from none held (see the file's comment)
            self.stop_where(|_| true);
            self.held.clear();
            let places = self.places;
            for m in machines {
                let turn = places.machines.get(&m).map(|machine| machine.turn());
                if let Some(turn) = turn {
                    self.held.push((m, turn));
                }
            }
        }
        for commands in needed {
            let running = self.services.iter().position(|up| up.commands == *commands);
            let at = match running {
                Some(at) => at,
                None => {
                    let up = self.start_service(commands.clone())?;
                    self.services.push(up);
                    continue; // just found ready
                }
            };
            if let Err(why) = self.alive(at) {
                let mut up = self.services.remove(at);
                let _ = up.process.stop();
                return Err(why);
            }
        }
        Ok(())
    }

    /// Stop the services no unfinished cell of `states` needs; the turns go with the last.
    pub(crate) fn stop_unneeded(&mut self, states: &[CellState<'_>]) {
        if self.services.is_empty() {
            return;
        }
        let needed = |up: &Up| {
            states
                .iter()
                .filter(|st| st.active())
                .any(|st| st.services.as_ref().is_ok_and(|list| list.contains(&up.commands)))
        };
        let unneeded: Vec<bool> = self.services.iter().map(|up| !needed(up)).collect();
        let mut flags = unneeded.into_iter();
        self.stop_where(|_| flags.next().unwrap_or(false));
        if self.services.is_empty() {
            self.held.clear();
        }
    }

    /// Stop every service and give back the turns (the session's end).
    pub(crate) fn stop_services(&mut self) {
        self.stop_where(|_| true);
        self.held.clear();
    }

    /// Stop the services `which` picks, in the order they were started.
    fn stop_where(&mut self, mut which: impl FnMut(&Up) -> bool) {
        let (stop, keep): (Vec<Up>, Vec<Up>) =
            std::mem::take(&mut self.services).into_iter().partition(&mut which);
        self.services = keep;
        for mut up in stop {
            if let Err(e) = up.process.stop() {
                self.note(format!("service `{}`: could not be stopped cleanly: {e}", up.commands.name));
            }
        }
    }

    /// Start a service and wait until it is ready.
    fn start_service(&mut self, commands: ServiceCommands) -> Result<Up, String> {
        let sh = self.shared;
        let name = commands.name.clone();
        let on = self.on(&commands);
        let Some(executor) = self.places.executors.get(&commands.host).copied() else {
            return Err(format!("service `{name}`{on}: no connection to its host"));
        };
        let raw_dir = sh.store.raw_dir();
        // sorts by when it started, as trials do
        let key = format!("{}.{name}", uuid::Uuid::now_v7());
        let (out, err) =
            (raw_dir.join(format!("{key}.service.out")), raw_dir.join(format!("{key}.service.err")));
        let raw = format!("raw/{key}.service.err");
        // locally in the store folder, as probes are; on an ssh host in the login folder
        let dir = if executor.is_local() { sh.store.dir.display().to_string() } else { ".".into() };
        let invocation = Invocation {
            command: &commands.run,
            dir: &dir,
            stdout: &out,
            stderr: &err,
            timeout: None,
            sync: false,
            end_group: false,
            env: &commands.env,
        };
        let process =
            executor.start(&invocation).map_err(|e| format!("service `{name}`{on} could not start: {e}"))?;
        let mut up = Up { commands, process, raw };
        let limit = sh
            .exp
            .spec
            .services
            .iter()
            .find(|(n, _)| n.value == name)
            .and_then(|(_, s)| s.value.ready_timeout.as_ref())
            .and_then(|t| parse_duration(&t.value).ok())
            .unwrap_or(DEFAULT_READY_TIMEOUT);
        match self.wait_ready(&mut up, executor, &dir, &key, limit) {
            Ok(()) => Ok(up),
            Err(why) => {
                let _ = up.process.stop();
                Err(why)
            }
        }
    }

    /// " on host srv", or nothing for this machine.
    fn on(&self, commands: &ServiceCommands) -> String {
        match commands.host.as_str() {
            crate::plan::LOCAL_HOST => String::new(),
            host => format!(" on host `{host}`"),
        }
    }

    /// "service `server` on host `srv` ended before this trial: exit code 1; its stderr
    /// (raw/…) ends: …".
    fn ended_text(&self, up: &Up, when: &str, how: &str) -> String {
        let path = self.shared.store.dir.join(&up.raw);
        let text = super::process::read_raw(&path).unwrap_or_default();
        // margin's own line (ssh.rs) is no part of what the service said
        let said: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with(super::ssh::SERVICE_MARK))
            .collect();
        let tail = said[said.len().saturating_sub(3)..].join("\n");
        let mut text = format!("service `{}`{} ended {when}: {how}", up.commands.name, self.on(&up.commands));
        if !tail.is_empty() {
            text.push_str(&format!("; its stderr ({}) ends: {tail}", up.raw));
        }
        text
    }

    /// `ready` tried every tenth of a second until it succeeds, the service ends, or
    /// `limit` passes; without `ready`, the service still running after [`SETTLE`].
    fn wait_ready(
        &self,
        up: &mut Up,
        executor: &dyn super::exec::Executor,
        dir: &str,
        key: &str,
        limit: Duration,
    ) -> Result<(), String> {
        let begun = Instant::now();
        let Some(ready) = up.commands.ready.clone() else {
            std::thread::sleep(SETTLE);
            return match up.process.ended() {
                Some(how) => Err(self.ended_text(up, "as it started", &how)),
                None => Ok(()),
            };
        };
        let raw = self.shared.store.raw_dir();
        let (out, err) = (raw.join(format!("{key}.ready.out")), raw.join(format!("{key}.ready.err")));
        loop {
            if let Some(how) = up.process.ended() {
                return Err(self.ended_text(up, "before it was ready", &how));
            }
            let left = limit.saturating_sub(begun.elapsed());
            let invocation = Invocation {
                command: &ready,
                dir,
                stdout: &out,
                stderr: &err,
                timeout: Some(left.max(Duration::from_millis(100))),
                sync: false,
                end_group: true,
                env: &up.commands.env,
            };
            let tried = executor.execute(&invocation, &Monitor::OFF).map(|(e, _)| e);
            if matches!(&tried, Ok(e) if e.succeeded()) {
                return Ok(());
            }
            if begun.elapsed() >= limit {
                let why = match tried {
                    Ok(e) => {
                        let tail = trial::tail(&err, 3);
                        if tail.is_empty() { e.describe() } else { format!("{}: {tail}", e.describe()) }
                    }
                    Err(e) => e.to_string(),
                };
                return Err(format!(
                    "service `{}`{} was not ready within {:.1} s: its `ready` check, the last time: {why}",
                    up.commands.name,
                    self.on(&up.commands),
                    limit.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the `at`-th running service is still running and, with `alive`, answers.
    fn alive(&mut self, at: usize) -> Result<(), String> {
        let up = &mut self.services[at];
        if let Some(how) = up.process.ended() {
            let up = &self.services[at];
            return Err(self.ended_text(up, "before this trial", &how));
        }
        let Some(alive) = up.commands.alive.clone() else { return Ok(()) };
        let Some(executor) = self.places.executors.get(&up.commands.host).copied() else { return Ok(()) };
        let dir = if executor.is_local() { self.shared.store.dir.display().to_string() } else { ".".into() };
        let raw = self.shared.store.raw_dir();
        let key = up.raw.trim_start_matches("raw/").trim_end_matches(".service.err").to_string();
        // one pair of files per service, the last check's
        let (out, err) = (raw.join(format!("{key}.alive.out")), raw.join(format!("{key}.alive.err")));
        let invocation = Invocation {
            command: &alive,
            dir: &dir,
            stdout: &out,
            stderr: &err,
            timeout: Some(ALIVE_TIMEOUT),
            sync: false,
            end_group: true,
            env: &up.commands.env,
        };
        match executor.execute(&invocation, &Monitor::OFF).map(|(e, _)| e) {
            Ok(e) if e.succeeded() => Ok(()),
            Ok(e) => {
                let tail = trial::tail(&err, 3);
                let how = if tail.is_empty() { e.describe() } else { format!("{}: {tail}", e.describe()) };
                let up = &self.services[at];
                Err(format!(
                    "service `{}`{} failed its `alive` check: {how}",
                    up.commands.name,
                    self.on(&up.commands)
                ))
            }
            Err(e) => Err(format!("service `{}`: its `alive` check could not run: {e}", up.commands.name)),
        }
    }
}
