//! A scripted executor for the scheduler's tests (hyperfine's `MockExecutor` is the
//! model): each command gets the exit code and wall time its script says, writes the
//! output it says, and is recorded, with the workdirs made and removed, in call order.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::WorkdirError;
use super::exec::Executor;
use super::facts::Source;
use super::process::{Execution, Invocation};
use super::telemetry::{Monitor, Snapshots};
use super::workdir::WorkdirName;

/// How a scripted command ends.
#[derive(Debug, Clone)]
pub(crate) struct Scripted {
    pub(crate) exit_code: i32,
    pub(crate) wall: Duration,
    pub(crate) stdout: String,
}

impl Scripted {
    pub(crate) fn ok(wall_ms: u64) -> Self {
        Scripted { exit_code: 0, wall: Duration::from_millis(wall_ms), stdout: String::new() }
    }

    pub(crate) fn exit(code: i32) -> Self {
        Scripted { exit_code: code, ..Scripted::ok(1) }
    }
}

/// What the scheduler asked the executor to do, in order.
pub(crate) type Calls = Arc<Mutex<Vec<String>>>;

type Script = Box<dyn Fn(&str) -> Scripted + Send + Sync>;

/// A host that runs nothing: commands end as `script` says.
pub(crate) struct FakeExecutor {
    host: String,
    script: Script,
    calls: Calls,
}

impl FakeExecutor {
    pub(crate) fn new(
        host: &str,
        calls: &Calls,
        script: impl Fn(&str) -> Scripted + Send + Sync + 'static,
    ) -> Self {
        FakeExecutor { host: host.to_string(), script: Box::new(script), calls: Arc::clone(calls) }
    }

    fn call(&self, what: String) {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).push(what);
    }
}

impl Executor for FakeExecutor {
    fn host(&self) -> &str {
        &self.host
    }

    /// A fake stands for this machine.
    fn is_local(&self) -> bool {
        true
    }

    fn create_workdir(&self, _experiment: &str, name: &WorkdirName) -> Result<String, WorkdirError> {
        self.call(format!("mkdir {}", name.as_str()));
        Ok(format!("/fake/{}", name.as_str()))
    }

    fn remove_workdir(&self, path: &str) {
        self.call(format!("rmdir {path}"));
    }

    fn execute(
        &self,
        invocation: &Invocation<'_>,
        _monitor: &Monitor,
    ) -> std::io::Result<(Execution, Option<Snapshots>)> {
        self.call(invocation.command.to_string());
        let s = (self.script)(invocation.command);
        if !s.stdout.is_empty() {
            std::fs::write(invocation.stdout, &s.stdout)?;
        }
        let e = Execution {
            exit_code: Some(s.exit_code),
            signal: None,
            timed_out: false,
            wall: s.wall,
            user: Some(0.0),
            system: Some(0.0),
            written: None,
            host_error: None,
            not_started: None,
            left_running: false,
            stopped: None,
            saved: s.stdout.len() as u64,
        };
        Ok((e, None))
    }

    fn facts(&self) -> &dyn Source {
        self
    }
}

/// A host with no facts to tell.
impl Source for FakeExecutor {
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
