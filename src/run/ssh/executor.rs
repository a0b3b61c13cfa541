//! The ssh executor's [`Executor`]: trials, services, the sweep and the gang's armed start,
//! through the host's shell or an ssh command of their own.

use std::path::PathBuf;
use std::sync::PoisonError;
use std::time::Duration;

use super::marks::{ARMED, SERVICE_MARK, SWEEP, remote_command, rewrite, service_pgid, take_remote_marks};
use super::{End, KILL_AFTER, SHORT, Ssh, quote};
use crate::run::WorkdirError;
use crate::run::exec::{Executor, StartError, StartedService};
use crate::run::facts::Source;
use crate::run::process::{self, Execution, Invocation};
use crate::run::telemetry::{Monitor, Snapshots};
use crate::run::workdir::WorkdirName;

impl Executor for Ssh {
    fn host(&self) -> &str {
        &self.name
    }

    fn is_local(&self) -> bool {
        false
    }

    /// The host answers; `Err` is ssh's own message. An ssh command of its own, never
    /// the shell: it sets up the shared connection, and says whether it still works when
    /// the shell ended.
    fn check(&self) -> Result<(), String> {
        process::capture_argv(&self.argv("echo margin"), &self.local_dir, SHORT)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// End the long-lived shell, then close the shared connection (`ssh -O exit`).
    fn close(&self) {
        if let Some(shell) = self.shell.lock().unwrap_or_else(PoisonError::into_inner).take() {
            shell.close();
        }
        if let [options @ .., _, destination] = self.args.as_slice() {
            let mut argv: Vec<&str> = vec!["ssh"];
            argv.extend(options.iter().map(String::as_str));
            argv.extend(["-O", "exit", "--", destination.as_str()]);
            let _ = process::capture_argv(&argv, &self.local_dir, Duration::from_secs(10));
        }
    }

    /// `margin-work/<experiment>/<cell>` under the remote home, made absolute there.
    fn create_workdir(&self, experiment: &str, name: &WorkdirName) -> Result<String, WorkdirError> {
        let q = quote(&name.remote(experiment));
        Ok(self.capture(&format!("mkdir -p {q} && cd {q} && pwd -P"))?)
    }

    fn remove_workdir(&self, path: &str) {
        let _ = self.capture(&format!("rm -rf {} && echo removed", quote(path)));
    }

    fn execute(
        &self,
        invocation: &Invocation<'_>,
        monitor: &Monitor,
    ) -> std::io::Result<(Execution, Option<Snapshots>)> {
        self.execute_with(invocation, Some(monitor).filter(|m| !m.is_off())).map(|(e, s, _)| (e, s))
    }

    /// The service runs in the remote shell sshd started, which is a session and process
    /// group leader of its own there: it prints its pid (the group's id) first, on stderr,
    /// then becomes the command. Stopping it kills that group on the host, since ending
    /// the local ssh would leave it running.
    fn start(&self, invocation: &Invocation<'_>) -> Result<Box<dyn StartedService>, StartError> {
        let inner = quote(invocation.command);
        let env = self.env_words(invocation);
        let exec = if env.is_empty() { "exec".to_string() } else { format!("exec env {}", env.trim_end()) };
        let remote = format!(
            "cd {} && printf '{SERVICE_MARK} %s\\n' \"$$\" >&2 && {exec} sh -c {inner}",
            quote(invocation.dir)
        );
        let argv = self.argv(&remote);
        let mut local = process::start_argv(&argv, invocation)?;
        // the group's id, as soon as the remote shell has said it
        let begun = std::time::Instant::now();
        let pgid = loop {
            if let Some(pgid) = service_pgid(invocation.stderr) {
                break Some(pgid);
            }
            if local.ended().is_some() || begun.elapsed() > SHORT {
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let owned =
            |remote: String| -> Vec<String> { self.argv(&remote).into_iter().map(String::from).collect() };
        let stop = pgid.map(|pgid| {
            owned(format!(
                "kill -TERM -- -{pgid} 2>/dev/null; i=0; while kill -0 -- -{pgid} 2>/dev/null && [ $i -lt {} ]; do sleep 0.1; i=$((i+1)); done; kill -KILL -- -{pgid} 2>/dev/null; echo stopped",
                crate::run::exec::STOP_GRACE.as_secs() * 10
            ))
        });
        let abort = stop.clone().map(process::OnAbort::new);
        let check = pgid.map(|pgid| owned(format!("kill -0 {pgid} && echo running")));
        Ok(Box::new(SshStarted { local, stop, check, dir: self.local_dir.clone(), _abort: abort }))
    }

    /// The processes on the host whose environment carries this store's marker: what a
    /// run killed with `kill -9` left there (a service, a trial without `timeout`), which
    /// ending the local ssh client does not reach. Each is killed with its process group,
    /// until none is left (10 s at most).
    fn end_left(&self) -> Result<Vec<String>, process::CaptureError> {
        let Some((key, value)) = &self.marker else { return Ok(Vec::new()) };
        let wanted = quote(&format!("{key}={value}"));
        // in the host's shell: every process whose environment has the marker, killed with
        // its group, again until none is left (10 s); the script's own shell aside
        let script = SWEEP.replace("MARKER", &wanted);
        let out = self.capture(&script)?;
        let mut ended: Vec<String> = out.lines().filter(|l| *l != "margin-swept").map(String::from).collect();
        ended.dedup();
        Ok(ended)
    }

    /// Armed first (`Ssh::execute_armed`): the connection and the remote shell are up
    /// before the barrier.
    fn execute_together(
        &self,
        invocation: &Invocation<'_>,
        monitor: &Monitor,
        go: &dyn Fn() -> bool,
    ) -> std::io::Result<Option<(Execution, Option<Snapshots>, std::time::SystemTime)>> {
        let here = std::time::SystemTime::now();
        // `go` is the barrier: called exactly once, whatever fails before it
        let called = std::cell::Cell::new(false);
        let once = || {
            called.set(true);
            go()
        };
        let ran = self.execute_armed(invocation, Some(monitor).filter(|m| !m.is_off()), &once);
        if !called.get() {
            go();
        }
        let ran = ran?;
        Ok(ran.map(|(e, snapshots, begun)| {
            let started = begun
                .and_then(|ns| u64::try_from(ns).ok())
                .map_or(here, |ns| std::time::UNIX_EPOCH + Duration::from_nanos(ns));
            (e, snapshots, started)
        }))
    }

    fn facts(&self) -> &dyn Source {
        self
    }
}

impl Ssh {
    /// Run a command on the host, in its long-lived shell ([`Shell`](super::Shell)); with
    /// a monitor, its counters are printed to stderr right before the timed command and
    /// right after it, in the same subshell (no round trip of their own), and taken out of
    /// stderr again. What it printed is written to the invocation's files before anything
    /// reads it.
    fn execute_with(
        &self,
        invocation: &Invocation<'_>,
        monitor: Option<&Monitor>,
    ) -> std::io::Result<(Execution, Option<Snapshots>, Option<u128>)> {
        let script = remote_command(invocation, &self.env_words(invocation), monitor, false);
        // a generous limit beyond the remote `timeout`'s, in case the connection hangs
        let limit = invocation.timeout.map(|t| t + Duration::from_secs(KILL_AFTER + 30));
        let mut e = Execution::default();
        let begun = std::time::Instant::now();
        let said = match self.in_shell(&script, limit.map(|l| begun + l)) {
            Ok(said) => said,
            Err(why) => {
                e.host_error = Some(format!("ssh to `{}`: {why}", self.name));
                return Ok((e, None, None));
            }
        };
        e.wall = begun.elapsed();
        // the raw output first, as the command printed it (an empty output is no file)
        for (path, text) in [(invocation.stdout, &said.out), (invocation.stderr, &said.err)] {
            if !text.is_empty() {
                std::fs::write(path, text)?;
            }
        }
        match said.end {
            End::Code(code) if code >= 0 => e.exit_code = Some(code),
            End::Code(_) => {
                e.stopped = Some("the remote shell did not learn the command's exit status".into())
            }
            End::TimedOut => e.timed_out = true,
            End::TooMuch => {
                e.stopped = Some(format!(
                    "stopped after printing more than {} MiB (stdout and stderr)",
                    process::MAX_OUTPUT >> 20
                ))
            }
            End::Closed(status) => {
                // the connection is gone (the host's error), or only the shell is: the
                // command failed, and the next one gets a new shell
                let how = status.map_or("no exit status".to_string(), |s| s.to_string());
                match self.check() {
                    Err(why) => e.host_error = Some(format!("ssh to `{}`: {why}", self.name)),
                    Ok(()) => {
                        e.stopped = Some(format!(
                            "the remote shell ended before the command did (its ssh client: {how})"
                        ))
                    }
                }
            }
        }
        self.settle(invocation, e, false)
    }

    /// What the remote shell added taken out of stderr, the output made durable when
    /// asked, and `timeout`'s codes read as what they are; `client`: the exit code is the
    /// local ssh client's, whose own failure (255) is the host's error, not the command's.
    fn settle(
        &self,
        invocation: &Invocation<'_>,
        mut e: Execution,
        client: bool,
    ) -> std::io::Result<(Execution, Option<Snapshots>, Option<u128>)> {
        // CPU time of the local ssh client says nothing about the trial.
        e.user = None;
        e.system = None;
        e.written = None;
        let (wall, snapshots, begun) = take_remote_marks(invocation.stderr)?;
        if let Some(wall) = wall {
            e.wall = wall;
        }
        if invocation.sync {
            let mut created = false;
            for path in [invocation.stdout, invocation.stderr] {
                if let Ok(f) = std::fs::File::open(path) {
                    f.sync_data()?;
                    created = true;
                }
            }
            // their names too, before the record that points at them
            if created && let Some(dir) = invocation.stdout.parent() {
                crate::store::sync_dir(dir)?;
            }
        }
        match e.exit_code {
            Some(255) if client => {
                let err = process::read_raw(invocation.stderr).unwrap_or_default();
                let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("ssh failed");
                e.host_error = Some(format!("ssh to `{}`: {}", self.name, last.trim()));
            }
            // timeout's own codes: 124 after TERM, 137 after KILL
            Some(124 | 137) if invocation.timeout.is_some_and(|t| e.wall >= t) => {
                e.timed_out = true;
                e.exit_code = None;
            }
            _ => {}
        }
        Ok((e, snapshots, begun))
    }

    /// A gang member's command (`gang.rs`), armed before `go`: the remote shell is started
    /// and has read the counters, then waits on its stdin; `go` (the gang's barrier) is
    /// called once it says so, and a newline releases it — no connection to set up after
    /// the barrier, so the members start within milliseconds. `go` saying no closes stdin
    /// instead, and the command never starts.
    fn execute_armed(
        &self,
        invocation: &Invocation<'_>,
        monitor: Option<&Monitor>,
        go: &dyn Fn() -> bool,
    ) -> std::io::Result<Option<Remote>> {
        use std::io::Write;
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let remote = remote_command(invocation, &self.env_words(invocation), monitor, true);
        let argv = self.argv(&remote);
        let (out, err) =
            (std::fs::File::create(invocation.stdout)?, std::fs::File::create(invocation.stderr)?);
        let mut child = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(&self.local_dir)
            .stdin(std::process::Stdio::piped())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()?;
        let pgid = child.id();
        // a second Ctrl-C ends it with the rest (`process::kill_running`)
        let _abort =
            process::OnAbort::new(vec!["kill".into(), "-KILL".into(), "--".into(), format!("-{pgid}")]);
        let armed_at = std::time::Instant::now();
        while !std::fs::read(invocation.stderr)
            .is_ok_and(|t| t.windows(ARMED.len()).any(|w| w == ARMED.as_bytes()))
            && child.try_wait()?.is_none()
            && armed_at.elapsed() < SHORT
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let proceed = go();
        let begun = std::time::Instant::now();
        if let Some(mut stdin) = child.stdin.take()
            && proceed
        {
            let _ = stdin.write_all(b"\n");
        }
        let limit = invocation.timeout.map(|t| t + Duration::from_secs(KILL_AFTER + 30));
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if limit.is_some_and(|l| begun.elapsed() > l) {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pgid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        if !proceed {
            return Ok(None);
        }
        // margin's line is no part of what the tool printed
        let text = std::fs::read(invocation.stderr)?;
        let line = format!("{ARMED}\n");
        if let Some(at) = text.windows(line.len()).position(|w| w == line.as_bytes()) {
            let kept = [&text[..at], &text[at + line.len()..]].concat();
            rewrite(invocation.stderr, &kept)?;
        }
        let e = Execution {
            exit_code: status.code(),
            signal: status.signal(),
            wall: begun.elapsed(),
            ..Execution::default()
        };
        self.settle(invocation, e, true).map(Some)
    }
}

/// A remote command's end: how, the counters around it, and its start on the host's
/// clock (ns since the epoch).
type Remote = (Execution, Option<Snapshots>, Option<u128>);

/// A service on an ssh host: the local ssh client that runs it, and how to stop it there.
struct SshStarted {
    local: process::Background,
    /// The ssh command that ends its process group on the host.
    stop: Option<Vec<String>>,
    /// The ssh command that says whether its first process still runs there.
    check: Option<Vec<String>>,
    dir: PathBuf,
    _abort: Option<process::OnAbort>,
}

impl StartedService for SshStarted {
    /// While the remote command runs, the ssh client that started it runs too; but the
    /// client sees the end a moment later, so the host is asked as well.
    fn ended(&mut self) -> Option<String> {
        if let Some(how) = self.local.ended() {
            return Some(how);
        }
        let argv: Vec<&str> = self.check.iter().flatten().map(String::as_str).collect();
        match process::capture_argv(&argv, &self.dir, SHORT) {
            // ssh's own failure says so; otherwise the process is gone there
            Err(why @ process::CaptureError::Failed { code: Some(255), .. }) => {
                Some(format!("it could not be checked: {why}"))
            }
            Err(_) if !argv.is_empty() => Some("it no longer runs on the host".to_string()),
            _ => None,
        }
    }

    fn stop(&mut self) -> std::io::Result<String> {
        if let Some(stop) = &self.stop
            && self.local.ended().is_none()
        {
            let argv: Vec<&str> = stop.iter().map(String::as_str).collect();
            let _ = process::capture_argv(&argv, &self.dir, SHORT);
        }
        let how = self.local.stop(crate::run::exec::STOP_GRACE)?;
        // what the service printed stays as it was: margin's line goes
        let [_, stderr] = self.local.paths();
        let stderr = stderr.to_path_buf();
        if let Ok(text) = std::fs::read(&stderr)
            && text.starts_with(SERVICE_MARK.as_bytes())
        {
            let rest = text.iter().position(|b| *b == b'\n').map_or(&text[..0], |i| &text[i + 1..]);
            std::fs::write(&stderr, rest)?;
            std::fs::File::open(&stderr)?.sync_data()?;
        }
        Ok(how)
    }
}
