//! Executors: where trials run (this machine, or a host over ssh), behind one trait, so
//! that the scheduler depends on what an executor does and not on how; and a gang, its
//! members' executors (their trials run in gang.rs), beside the trait: a host's session
//! runs on a [`Target`], one executor or a gang.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use super::WorkdirError;
use super::facts::{self, Source};
use super::process::{self, Execution, Invocation};
use super::telemetry::{LocalCounters, Monitor, Snapshots};
use super::workdir::WorkdirName;
use crate::store::Store;

/// Where trials run: the local machine, or a host over ssh. One trial at a time each.
/// A gang is no executor: it runs its commands on its members' ([`Target::Gang`]).
pub(crate) trait Executor: Send + Sync {
    /// The host's name (`local`, or its key under `hosts:`).
    fn host(&self) -> &str;
    /// Whether the host is the machine margin runs on.
    fn is_local(&self) -> bool;
    /// Whether the host can be reached; `Err` says why not.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// End the connection, if there is one.
    fn close(&self) {}
    /// Create the cell's scratch directory on the host; its absolute path.
    fn create_workdir(&self, experiment: &str, name: &WorkdirName) -> Result<String, WorkdirError>;
    fn remove_workdir(&self, path: &str);
    /// Run a command, the host's counters read right before and right after it
    /// (`telemetry.rs`); no snapshots when nothing was read (`Monitor::OFF`, or an
    /// executor without telemetry).
    fn execute(
        &self,
        invocation: &Invocation<'_>,
        monitor: &Monitor,
    ) -> std::io::Result<(Execution, Option<Snapshots>)>;

    /// A gang member's timed command started together with the others' (`gang.rs`): `go`
    /// is called once, when the executor is ready to start it at once (it waits at the
    /// gang's barrier, and says whether to start at all); then as [`Executor::execute`],
    /// with when the command started, as close to it as the executor can tell (on an ssh
    /// host, the host's own clock right before it). `None` when `go` said no and nothing
    /// ran.
    fn execute_together(
        &self,
        invocation: &Invocation<'_>,
        monitor: &Monitor,
        go: &dyn Fn() -> bool,
    ) -> std::io::Result<Option<(Execution, Option<Snapshots>, std::time::SystemTime)>> {
        if !go() {
            return Ok(None);
        }
        let started = std::time::SystemTime::now();
        let (e, snapshots) = self.execute(invocation, monitor)?;
        Ok(Some((e, snapshots, started)))
    }

    /// End what a killed run of this store left running on the host (src/run/orphans.rs
    /// does it for this machine): `pid command` of each, or why the host could not say.
    fn end_left(&self) -> Result<Vec<String>, process::CaptureError> {
        Ok(Vec::new())
    }

    /// Start a long-lived command (a service) and leave it running; its output goes to
    /// the invocation's files as it runs.
    fn start(&self, invocation: &Invocation<'_>) -> Result<Box<dyn StartedService>, StartError> {
        let _ = invocation;
        Err(StartError::NoServices { host: self.host().to_string() })
    }
    /// Facts are read through the executor, so they describe the host trials run on.
    fn facts(&self) -> &dyn Source;
}

/// Why a service could not be started.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The executor runs no services (a test's).
    #[error("host `{host}` cannot run services")]
    NoServices { host: String },
}

/// Where a host's session runs its commands: one executor, or a gang's members together.
pub(crate) enum Target {
    One(Box<dyn Executor>),
    Gang(GangExecutor),
}

impl Target {
    /// The host's name, or the gang's.
    pub(crate) fn host(&self) -> &str {
        match self {
            Target::One(one) => one.host(),
            Target::Gang(gang) => gang.host(),
        }
    }

    /// Whether it can be reached (a gang: every member); `Err` says why not.
    pub(crate) fn check(&self) -> Result<(), String> {
        match self {
            Target::One(one) => one.check(),
            Target::Gang(gang) => gang.check(),
        }
    }

    /// End the connections.
    pub(crate) fn close(&self) {
        match self {
            Target::One(one) => one.close(),
            Target::Gang(gang) => gang.close(),
        }
    }

    /// End what a killed run left running there ([`Executor::end_left`]).
    pub(crate) fn end_left(&self) -> Result<Vec<String>, process::CaptureError> {
        match self {
            Target::One(one) => one.end_left(),
            Target::Gang(gang) => gang.end_left(),
        }
    }

    /// The facts of the host (a gang: its first member's).
    pub(crate) fn facts(&self) -> &dyn Source {
        match self {
            Target::One(one) => one.facts(),
            Target::Gang(gang) => gang.facts(),
        }
    }

    /// The executor, unless it is a gang (which runs no services).
    pub(crate) fn one(&self) -> Option<&dyn Executor> {
        match self {
            Target::One(one) => Some(one.as_ref()),
            Target::Gang(_) => None,
        }
    }
}

/// A service started by [`Executor::start`].
pub(crate) trait StartedService: Send {
    /// `None` while it runs; how it ended once it has.
    fn ended(&mut self) -> Option<String>;
    /// Stop it with everything it started, reap it, make its output durable; how it ended.
    fn stop(&mut self) -> std::io::Result<String>;
}

/// Seconds a service has to end after SIGTERM before it is killed.
pub(crate) const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

impl StartedService for process::Background {
    fn ended(&mut self) -> Option<String> {
        process::Background::ended(self)
    }

    fn stop(&mut self) -> std::io::Result<String> {
        process::Background::stop(self, STOP_GRACE)
    }
}

/// The machine margin runs on; workdirs under the store's `work/`.
pub(crate) struct LocalExecutor {
    workroot: PathBuf,
    source: facts::Local,
    /// The store every command carries in its environment, so that what a killed run
    /// left running is found and ended by the next (src/run/orphans.rs).
    marker: (String, String),
    /// The counter files, opened at the first trial and kept open for the run.
    counters: LocalCounters,
}

impl LocalExecutor {
    pub(crate) fn new(store: &Store) -> Self {
        LocalExecutor {
            workroot: super::workdir::local_root(store),
            source: facts::Local::new(&store.dir),
            marker: (super::orphans::MARKER.to_string(), super::orphans::marker_value(&store.dir)),
            counters: LocalCounters::default(),
        }
    }
}

impl LocalExecutor {
    /// The invocation's environment with the store's marker: every command this
    /// executor starts carries it (src/run/orphans.rs).
    fn marked(&self, invocation: &Invocation<'_>) -> Vec<(String, String)> {
        let mut env = Vec::with_capacity(invocation.env.len() + 1);
        env.extend_from_slice(invocation.env);
        env.push(self.marker.clone());
        env
    }
}

impl Executor for LocalExecutor {
    fn host(&self) -> &str {
        crate::plan::LOCAL_HOST
    }

    fn is_local(&self) -> bool {
        true
    }

    fn create_workdir(&self, _experiment: &str, name: &WorkdirName) -> Result<String, WorkdirError> {
        let dir = self.workroot.join(name.as_str());
        std::fs::create_dir_all(&self.workroot)?;
        std::fs::create_dir(&dir)?; // new: a folder of that name is not scratch
        Ok(dir.to_string_lossy().into_owned())
    }

    fn remove_workdir(&self, path: &str) {
        let _ = std::fs::remove_dir_all(path);
        // the `work/` folder goes too once the last cell's is gone
        let _ = std::fs::remove_dir(&self.workroot);
    }

    fn execute(
        &self,
        invocation: &Invocation<'_>,
        monitor: &Monitor,
    ) -> std::io::Result<(Execution, Option<Snapshots>)> {
        let env = self.marked(invocation);
        let invocation = Invocation { env: &env, ..invocation.clone() };
        if monitor.is_off() {
            return Ok((process::execute(&invocation)?, None));
        }
        let before = self.counters.snapshot(monitor);
        let e = process::execute(&invocation)?;
        let after = self.counters.snapshot(monitor);
        Ok((e, Some(Snapshots { before, after })))
    }

    fn start(&self, invocation: &Invocation<'_>) -> Result<Box<dyn StartedService>, StartError> {
        let env = self.marked(invocation);
        Ok(Box::new(process::start(&Invocation { env: &env, ..invocation.clone() })?))
    }

    fn facts(&self) -> &dyn Source {
        &self.source
    }
}

/// A gang: its members' executors, and each cell's workdirs on them. Its commands run on
/// the members, through `HostRun::gang_trial` (gang.rs).
pub(crate) struct GangExecutor {
    name: String,
    pub(crate) members: Vec<Member>,
    /// A cell's workdir as the scheduler knows it (the first member's) → every member's.
    workdirs: Mutex<HashMap<String, Vec<String>>>,
}

impl GangExecutor {
    /// `members`: each member's name under `hosts:` and its executor.
    pub(crate) fn new(name: &str, members: Vec<(String, Box<dyn Executor>)>) -> Self {
        let members = members.into_iter().map(|(name, ex)| Member { name, ex }).collect();
        GangExecutor { name: name.to_string(), members, workdirs: Mutex::new(HashMap::new()) }
    }

    /// The members' workdirs of the cell whose workdir is `lead`.
    pub(crate) fn workdirs_of(&self, lead: &str) -> Vec<String> {
        let map = self.workdirs.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(lead).cloned().unwrap_or_default()
    }
}

impl GangExecutor {
    /// The gang's name.
    pub(crate) fn host(&self) -> &str {
        &self.name
    }

    /// Whether every member is the machine margin runs on.
    pub(crate) fn is_local(&self) -> bool {
        self.members.iter().all(|m| m.ex.is_local())
    }

    /// Every member answers; `Err` names the first that does not.
    fn check(&self) -> Result<(), String> {
        for m in &self.members {
            m.ex.check().map_err(|why| format!("member `{}`: {why}", m.name))?;
        }
        Ok(())
    }

    fn close(&self) {
        for m in &self.members {
            m.ex.close();
        }
    }

    fn end_left(&self) -> Result<Vec<String>, process::CaptureError> {
        let mut ended = Vec::new();
        for m in &self.members {
            ended.extend(m.ex.end_left()?.into_iter().map(|e| format!("{e} (on `{}`)", m.name)));
        }
        Ok(ended)
    }

    /// One workdir per member (`<cell>@<host>-<session>`); the first member's names them all.
    pub(crate) fn create_workdir(
        &self,
        experiment: &str,
        name: &WorkdirName,
    ) -> Result<String, WorkdirError> {
        let mut made: Vec<String> = Vec::new();
        for m in &self.members {
            match m.ex.create_workdir(experiment, &name.member(&m.name)) {
                Ok(dir) => made.push(dir),
                Err(e) => {
                    for (m, dir) in self.members.iter().zip(&made) {
                        m.ex.remove_workdir(dir);
                    }
                    return Err(WorkdirError::Member { member: m.name.clone(), error: Box::new(e) });
                }
            }
        }
        let lead = made.first().cloned().unwrap_or_default();
        self.workdirs.lock().unwrap_or_else(PoisonError::into_inner).insert(lead.clone(), made);
        Ok(lead)
    }

    pub(crate) fn remove_workdir(&self, path: &str) {
        let dirs = self.workdirs.lock().unwrap_or_else(PoisonError::into_inner).remove(path);
        for (m, dir) in self.members.iter().zip(dirs.unwrap_or_default()) {
            m.ex.remove_workdir(&dir);
        }
    }

    /// The session's facts are its first member's.
    fn facts(&self) -> &dyn Source {
        match self.members.first() {
            Some(m) => m.ex.facts(),
            None => &NO_FACTS,
        }
    }
}

/// A gang's member: its name under `hosts:` (two hosts without `ssh` are both this
/// machine, `local`, to their executors) and its executor.
pub(crate) struct Member {
    pub(crate) name: String,
    pub(crate) ex: Box<dyn Executor>,
}

/// The facts of a gang without members (never: `check` refuses one).
struct NoFacts;
static NO_FACTS: NoFacts = NoFacts;

impl Source for NoFacts {
    fn read(&self, _path: &str) -> Option<String> {
        None
    }
    fn run(&self, _command: &str) -> Option<String> {
        None
    }
    fn is_root(&self) -> bool {
        false
    }
}
