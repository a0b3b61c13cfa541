//! The ssh executor: trials on a remote host through the system OpenSSH client.
//!
//! `BatchMode` (never a password prompt), one multiplexed connection per host
//! (`ControlMaster`, a socket in a private directory), `~/.ssh/config` respected, and the
//! host entry's port, user, identity and options. Time limits are enforced on the remote
//! side with `timeout -k`, since killing the local ssh would leave the remote command
//! running. ssh's own failure (exit 255) is a host error, not a benchmark result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use super::exec::{Executor, Started};
use super::facts::Source;
use super::process::{self, Execution, Invocation};
use super::telemetry::{END, MARK, Monitor, Snapshots};
use super::workdir::WorkdirName;
use crate::spec::Host;

/// Seconds the remote `timeout` waits after its TERM before it KILLs.
const KILL_AFTER: u64 = 5;
/// The line the remote shell appends to stderr with the command's start and end (ns).
const WALL_MARK: &str = "margin-wall-ns";

/// What the remote shell added to a trial's stderr, taken out of it: the wall time from
/// its timing line (`None` when the host's `date` has no nanoseconds: the local time
/// stands), and the telemetry snapshots printed before the command and after that line.
/// What the tool printed stays in the file exactly as it was (an empty output is no file).
fn take_remote_marks(stderr: &Path) -> std::io::Result<(Option<Duration>, Option<Snapshots>, Option<u128>)> {
    let text = process::read_raw(stderr)?.into_bytes();
    let find = |hay: &[u8], needle: &str| hay.windows(needle.len()).position(|w| w == needle.as_bytes());
    // the snapshot before: from the very start to its end line
    let begin = format!("{MARK} before\n");
    let (before, start) = match text.starts_with(begin.as_bytes()) {
        true => match find(&text, &format!("\n{END}\n")) {
            Some(at) => (Some(String::from_utf8_lossy(&text[..at + 1]).into_owned()), at + END.len() + 2),
            None => (None, 0),
        },
        false => (None, 0),
    };
    let mark = format!("\n{WALL_MARK} ");
    let Some(at) = text[start..].windows(mark.len()).rposition(|w| w == mark.as_bytes()).map(|a| a + start)
    else {
        if start > 0 {
            rewrite(stderr, &text[start..])?;
        }
        return Ok((None, None, None));
    };
    let rest = &text[at + mark.len()..];
    let line_end = rest.iter().position(|b| *b == b'\n').map_or(rest.len(), |e| e + 1);
    let line = String::from_utf8_lossy(&rest[..line_end]).into_owned();
    let after = String::from_utf8_lossy(&rest[line_end..]).into_owned();
    let mut parts = line.split_whitespace().map(|p| p.parse::<u128>());
    let (wall, begun) = match (parts.next(), parts.next()) {
        (Some(Ok(start)), Some(Ok(end))) if end >= start => {
            (Some(Duration::from_nanos(u64::try_from(end - start).unwrap_or(u64::MAX))), Some(start))
        }
        _ => (None, None),
    };
    rewrite(stderr, &text[start..at])?;
    let snapshots = match (before, after.starts_with(&format!("{MARK} after\n"))) {
        (Some(before), true) => Some(Snapshots::parse(&format!("{before}{after}"))),
        _ => None,
    };
    Ok((wall, snapshots, begun))
}

/// Leave `kept` as the file's content; nothing kept is no file.
fn rewrite(path: &Path, kept: &[u8]) -> std::io::Result<()> {
    if kept.is_empty() { std::fs::remove_file(path) } else { std::fs::write(path, kept) }
}

/// Time for connecting and other short commands (facts, workdirs).
const SHORT: Duration = Duration::from_secs(60);

/// A host reached over ssh.
pub(crate) struct Ssh {
    name: String,
    /// Everything before the remote command: options, then the destination.
    args: Vec<String>,
    /// A local directory for the scratch of `capture` (ssh needs a working directory).
    local_dir: PathBuf,
    /// The fact files (`facts::FILES`) as one command fetched them, trimmed, those absent
    /// or empty left out; `None` when that command failed (each is then read alone).
    facts: OnceLock<Option<HashMap<String, String>>>,
    /// The store's marker (`orphans::MARKER`), in the environment of every trial and
    /// service on the host, so that the next run finds what a killed one left there.
    marker: Option<(String, String)>,
    /// The host's long-lived shell ([`Shell`]), started at its first command; gone after a
    /// command it did not see to its end, and started again for the next.
    shell: Mutex<Option<Shell>>,
}

impl Ssh {
    /// `control_dir`: a private directory (mode 0700) for the multiplexing sockets.
    pub(crate) fn new(name: &str, host: &Host, destination: &str, control_dir: &Path) -> Self {
        let mut args: Vec<String> =
            ["-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPersist=120"]
                .map(String::from)
                .to_vec();
        args.push("-o".into());
        args.push(format!("ControlPath={}/%C", control_dir.display()));
        if let Some(port) = host.port {
            args.extend(["-p".into(), port.to_string()]);
        }
        if let Some(user) = &host.user {
            args.extend(["-l".into(), user.clone()]);
        }
        if let Some(identity) = &host.identity {
            args.extend(["-i".into(), expand_home(identity)]);
        }
        for option in &host.options {
            args.extend(["-o".into(), option.value.clone()]);
        }
        // A connection that died without a word (a host gone, a network cut) is noticed
        // within a minute, instead of a trial waiting on it for ever; after the host's
        // own options, since ssh keeps the first value it is given for each.
        args.extend(["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"].map(String::from));
        // after `--`: a destination is never read as an option (`check` refuses one
        // beginning with `-` as well)
        args.extend(["--".to_string(), destination.to_string()]);
        Ssh {
            name: name.to_string(),
            args,
            local_dir: control_dir.to_path_buf(),
            facts: OnceLock::new(),
            marker: None,
            shell: Mutex::new(None),
        }
    }

    /// Every command it starts carries `store`'s marker for ssh hosts
    /// (`orphans::REMOTE_MARKER`: this machine's name and the store's path).
    pub(crate) fn marked(mut self, store: &std::path::Path) -> Self {
        self.marker =
            Some((super::orphans::REMOTE_MARKER.to_string(), super::orphans::remote_marker_value(store)));
        self
    }

    /// The invocation's values and the store's marker, as `K=V ` words for the host's shell.
    fn env_words(&self, invocation: &Invocation<'_>) -> String {
        invocation.env.iter().chain(&self.marker).map(|(k, v)| format!("{k}={} ", quote(v))).collect()
    }

    fn argv<'a>(&'a self, remote: &'a str) -> Vec<&'a str> {
        let mut argv: Vec<&str> = vec!["ssh"];
        argv.extend(self.args.iter().map(String::as_str));
        argv.push(remote);
        argv
    }

    /// Run a short remote command (facts, workdirs, the sweep) in the host's shell and
    /// capture its trimmed stdout; `Err` says why not, as `process::capture_argv` does.
    /// Each of them as an ssh command of its own cost the host an sshd session and a
    /// login shell (0.16 s of CPU with a `.bashrc` that runs `pyenv init`): at 64 hosts
    /// their starts took most of the run.
    fn capture(&self, remote: &str) -> Result<String, String> {
        let said = self.in_shell(remote, Some(std::time::Instant::now() + SHORT))?;
        let last = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes);
            text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
        };
        let failed = |status: String| {
            let last = last(&said.err);
            if last.is_empty() { status } else { format!("{status}: {last}") }
        };
        match said.end {
            End::Code(0) => {
                let text = String::from_utf8_lossy(&said.out).trim().to_string();
                if text.is_empty() { Err("no output".to_string()) } else { Ok(text) }
            }
            End::Code(code) if code > 0 => Err(failed(format!("exit code {code}"))),
            End::Code(_) => Err(failed("its exit status was lost".to_string())),
            End::TimedOut => Err(format!("no answer within {} s", SHORT.as_secs())),
            End::TooMuch => Err(format!("it printed more than {} MiB", process::MAX_OUTPUT >> 20)),
            End::Closed(_) => Err(failed("the remote shell ended".to_string())),
        }
    }

    /// Run `script` in the host's long-lived shell, started first when there is none (or
    /// the last one ended, or printed between commands); `Err`: no shell could be started.
    /// The host's thread holds the shell until the command's end lines came.
    fn in_shell(&self, script: &str, deadline: Option<std::time::Instant>) -> Result<Exchange, String> {
        let mut slot = self.shell.lock().unwrap_or_else(PoisonError::into_inner);
        let shell = match slot.take().map(|mut shell| (shell.is_idle(), shell)) {
            Some((true, shell)) => shell,
            Some((false, shell)) => {
                shell.close();
                Shell::open(&self.argv("exec sh"), &self.local_dir).map_err(|e| e.to_string())?
            }
            None => Shell::open(&self.argv("exec sh"), &self.local_dir).map_err(|e| e.to_string())?,
        };
        let shell = slot.insert(shell);
        // a second Ctrl-C ends it with the rest (`process::kill_running`)
        let _abort = process::OnAbort::new(vec![
            "kill".into(),
            "-KILL".into(),
            "--".into(),
            format!("-{}", shell.child.id()),
        ]);
        let said = shell.exchange(script, deadline);
        if !matches!(said.end, End::Code(_)) {
            *slot = None; // ended: the next command starts another
        }
        Ok(said)
    }
}

fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).to_string_lossy().into_owned(),
        _ => path.to_string(),
    }
}

fn quote(s: &str) -> String {
    // a NUL cannot pass through a shell at all: dropped, and the rest quoted as usual
    let s = s.replace('\0', "");
    shlex::try_quote(&s).map(|q| q.into_owned()).unwrap_or_else(|_| "''".into())
}

impl Executor for Ssh {
    fn host(&self) -> &str {
        &self.name
    }

    /// The host answers; `Err` is ssh's own message. An ssh command of its own, never
    /// the shell: it sets up the shared connection, and says whether it still works when
    /// the shell ended.
    fn check(&self) -> Result<(), String> {
        process::capture_argv(&self.argv("echo margin"), &self.local_dir, SHORT).map(|_| ())
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
    fn create_workdir(&self, experiment: &str, name: &WorkdirName) -> std::io::Result<String> {
        let q = quote(&name.remote(experiment));
        self.capture(&format!("mkdir -p {q} && cd {q} && pwd -P")).map_err(std::io::Error::other)
    }

    fn remove_workdir(&self, path: &str) {
        let _ = self.capture(&format!("rm -rf {} && echo removed", quote(path)));
    }

    fn execute(&self, invocation: &Invocation<'_>) -> std::io::Result<Execution> {
        self.execute_with(invocation, None).map(|(e, ..)| e)
    }

    fn execute_monitored(
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
    fn start(&self, invocation: &Invocation<'_>) -> std::io::Result<Box<dyn Started>> {
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
                super::exec::STOP_GRACE.as_secs() * 10
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
    fn end_left(&self) -> Result<Vec<String>, String> {
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
    /// Run a command on the host, in its long-lived shell ([`Shell`]); with a monitor,
    /// its counters are printed to stderr right before the timed command and right after
    /// it, in the same subshell (no round trip of their own), and taken out of stderr
    /// again. What it printed is written to the invocation's files before anything reads it.
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

/// The host's side of `Ssh::end_left`; `MARKER` is replaced by the quoted `KEY=value`.
/// Each round, one `grep -z` reads every process's environment (`-l`: the files that hold
/// the marker as a whole entry); a `grep` without `-z` (`z` is then unset) reads them one
/// by one through `tr`, a process or two per process on the host — at 64 hosts on one
/// machine that was most of the run's CPU. The script's own shell is left alone.
const SWEEP: &str = r#"m=MARKER; z=; printf 'x\0' | grep -qzx x 2>/dev/null && z=1; i=0; while :; do found=; if [ -n "$z" ]; then hits=$(grep -lzxF -e "$m" /proc/[0-9]*/environ 2>/dev/null); else hits=$(for e in /proc/[0-9]*/environ; do tr '\0' '\n' < "$e" 2>/dev/null | grep -qxF -e "$m" && echo "$e"; done); fi; for e in $hits; do p=${e#/proc/}; p=${p%/environ}; [ "$p" = "$$" ] && continue; g=$(ps -o pgid= -p "$p" | tr -d ' '); c=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null); [ -n "$g" ] && kill -KILL -- "-$g" 2>/dev/null; kill -KILL "$p" 2>/dev/null; found=1; echo "$p $c"; done; [ -z "$found" ] && break; i=$((i+1)); [ $i -ge 100 ] && exit 3; sleep 0.1; done; echo margin-swept"#;

/// A remote command's end: how, the counters around it, and its start on the host's
/// clock (ns since the epoch).
type Remote = (Execution, Option<Snapshots>, Option<u128>);

/// The line a gang member's remote shell writes to stderr once it waits for the start.
const ARMED: &str = "margin-gang-armed";

/// The remote shell's command: in the workdir, the counters before (with a monitor), the
/// start time, the command under `timeout` when there is a limit, the end time and the
/// counters after. `armed`: it says so on stderr and waits for a line on stdin before
/// it takes the start time (a gang's barrier, `Ssh::execute_armed`).
fn remote_command(invocation: &Invocation<'_>, env: &str, monitor: Option<&Monitor>, armed: bool) -> String {
    // sh on the host runs the command in the workdir, under `timeout` when there is a
    // limit (it signals the command's whole process group, then kills it), and times
    // it there: the connection's own cost (a tenth of a second per command, even
    // multiplexed) must not be part of the trial.
    let inner = quote(invocation.command);
    // `env`: the values the command refers to, set in its environment there
    let limited = match invocation.timeout {
        Some(limit) => format!("{env}timeout -k {KILL_AFTER} {:.3} sh -c {inner}", limit.as_secs_f64()),
        None => format!("{env}sh -c {inner}"),
    };
    let (before, after) = match monitor {
        Some(m) => (
            // braced: a `cd` that failed must still stop the command from running
            format!("{{ {}; printf '{END}\\n' >&2; }} && ", m.remote_snapshot("before")),
            format!(" {};", m.remote_snapshot("after")),
        ),
        None => (String::new(), String::new()),
    };
    // stdin is the gang's start: the command itself gets none, as any trial
    let (wait, stdin) = match armed {
        true => (format!("printf '{ARMED}\\n' >&2 && read -r _ && "), " </dev/null"),
        false => (String::new(), ""),
    };
    format!(
        "cd {} && {before}{wait}s=$(date +%s%N) && {{ {limited}{stdin}; r=$?; e=$(date +%s%N); printf '\\n{WALL_MARK} %s %s\\n' \"$s\" \"$e\" >&2;{after} exit $r; }}",
        quote(invocation.dir)
    )
}

/// The line a remote service's shell writes first on stderr: its process group's id.
pub(super) const SERVICE_MARK: &str = "margin-service-pgid";

/// The process group a remote service's shell announced on stderr.
fn service_pgid(stderr: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(stderr).ok()?;
    let line = text.lines().next()?;
    let rest = line.strip_prefix(SERVICE_MARK)?.trim();
    if !text.contains('\n') {
        return None; // not yet the whole line
    }
    rest.parse().ok()
}

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

impl Started for SshStarted {
    /// While the remote command runs, the ssh client that started it runs too; but the
    /// client sees the end a moment later, so the host is asked as well.
    fn ended(&mut self) -> Option<String> {
        if let Some(how) = self.local.ended() {
            return Some(how);
        }
        let argv: Vec<&str> = self.check.iter().flatten().map(String::as_str).collect();
        match process::capture_argv(&argv, &self.dir, SHORT) {
            // ssh's own failure says so; otherwise the process is gone there
            Err(why) if why.starts_with("exit code 255") => Some(format!("it could not be checked: {why}")),
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
        let how = self.local.stop(super::exec::STOP_GRACE)?;
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

/// The line before each fact file's text in [`Ssh::fetch_facts`]' output.
const FACT_MARK: &str = "margin-fact";

impl Ssh {
    /// Every fact file in one remote command: each after a `margin-fact PATH` line.
    fn fetch_facts(&self) -> Option<HashMap<String, String>> {
        let paths: Vec<String> = super::facts::FILES.iter().map(|p| quote(p)).collect();
        let remote = format!(
            "for f in {}; do printf '\\n{FACT_MARK} %s\\n' \"$f\"; cat -- \"$f\" 2>/dev/null; done",
            paths.join(" ")
        );
        Some(fact_files(&self.capture(&remote).ok()?))
    }
}

/// [`Ssh::fetch_facts`]' output as path → trimmed text, the empty left out.
fn fact_files(text: &str) -> HashMap<String, String> {
    let mut files: HashMap<String, String> = HashMap::new();
    let mut current: Option<(&str, String)> = None;
    let mut keep = |current: Option<(&str, String)>| {
        if let Some((path, text)) = current
            && !text.trim().is_empty()
        {
            files.insert(path.to_string(), text.trim().to_string());
        }
    };
    for line in text.split_inclusive('\n') {
        let header = line.trim_end_matches('\n').strip_prefix(FACT_MARK).and_then(|r| r.strip_prefix(' '));
        match header.filter(|path| super::facts::FILES.contains(path)) {
            Some(path) => keep(current.replace((path, String::new()))),
            None => {
                if let Some((_, text)) = current.as_mut() {
                    text.push_str(line);
                }
            }
        }
    }
    keep(current);
    files
}

impl Source for Ssh {
    fn read(&self, path: &str) -> Option<String> {
        if super::facts::FILES.contains(&path)
            && let Some(files) = self.facts.get_or_init(|| self.fetch_facts())
        {
            return files.get(path).cloned();
        }
        self.capture(&format!("cat {}", quote(path))).ok()
    }

    fn run(&self, command: &str) -> Option<String> {
        self.capture(command).ok()
    }

    fn is_root(&self) -> bool {
        self.capture("id -u").is_ok_and(|uid| uid == "0")
    }
}

#[cfg(test)]
mod tests {
    /// The files of one round trip come apart as each `cat` alone gave them: trimmed,
    /// the absent and the empty missing, a line like a header inside a file kept.
    #[test]
    fn fact_files_come_apart_as_read_one_by_one() {
        let text = "\nmargin-fact /proc/sys/kernel/osrelease\n6.1.0-18-amd64\n\
                    \nmargin-fact /etc/os-release\nPRETTY_NAME=\"Debian\"\nmargin-fact /not/a/fact\n\
                    \nmargin-fact /proc/xen/capabilities\n\
                    \nmargin-fact /proc/cmdline\n  ro quiet \n";
        let files = super::fact_files(text);
        assert_eq!(files["/proc/sys/kernel/osrelease"], "6.1.0-18-amd64");
        assert_eq!(files["/etc/os-release"], "PRETTY_NAME=\"Debian\"\nmargin-fact /not/a/fact");
        assert_eq!(files["/proc/cmdline"], "ro quiet");
        assert!(!files.contains_key("/proc/xen/capabilities"), "empty is absent");
        assert_eq!(files.len(), 3);
    }

    /// What `quote` makes of a string, the shell reads back as that string, a NUL (which
    /// no shell argument can hold) dropped.
    #[test]
    fn quoted_text_reads_back_as_itself() {
        for text in ["plain", "a b; touch x", "it's \"q\" `x` $HOME \\", "nul\0 and ' quote", ""] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf '%s' {}", super::quote(text)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text.replace('\0', ""), "{text:?}");
        }
    }
}

/// How long a new shell has to say it is ready (the connection is already up: `check`).
const SHELL_READY: Duration = Duration::from_secs(60);

/// A long-lived shell on the host, one per host for the run (docs/design.md, Hosts over
/// ssh): `sh` started once over the host's multiplexed connection, its stdin the script
/// channel. A trial is one line of script sent to it, run in a subshell whose output goes
/// straight back over ssh's stdout and stderr, which the shell ends with a line bearing a
/// nonce of 128 random bits (and on stdout the exit status); what came before the line is
/// what the trial printed. Per trial that costs a few system calls and the subshell's
/// fork, not an ssh client and an sshd session (a channel, a fork, a login shell).
///
/// The shell is no part of the measurement: the trial is timed and its counters read in
/// the subshell exactly as a one-shot ssh command does it ([`remote_command`]). It carries
/// no marker of its own (the next run's `end_left` must not end a shell of its own);
/// when margin dies, its stdin closes, and it exits after the command under way (which
/// carries the marker).
struct Shell {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::process::ChildStdout,
    err: std::process::ChildStderr,
}

/// How an exchange with the shell ended.
#[derive(Debug, PartialEq)]
enum End {
    /// Both end lines came: the subshell's exit status (-1: it was lost).
    Code(i32),
    /// The shell or its connection ended first; the local ssh client's exit status.
    Closed(Option<std::process::ExitStatus>),
    /// The deadline passed first; the shell was ended.
    TimedOut,
    /// More than `process::MAX_OUTPUT` came; the shell was ended.
    TooMuch,
}

/// What the shell printed for one script, up to its end lines (taken off), and how it ended.
struct Exchange {
    out: Vec<u8>,
    err: Vec<u8>,
    end: End,
}

impl Shell {
    /// `ssh … 'exec sh'`, in a process group of its own; ready once it has answered.
    fn open(argv: &[&str], local_dir: &Path) -> std::io::Result<Shell> {
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let mut child = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(local_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let (Some(stdin), Some(out), Some(err)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("ssh started without its pipes"));
        };
        let mut shell = Shell { child, stdin, out, err };
        // the shell's own folder, for the statuses (removed when it exits); then a first
        // command, which says the shell is ready
        let setup = format!(
            "T=\"${{TMPDIR:-/tmp}}/margin-shell-{:016x}\"; mkdir -m 700 \"$T\" && trap 'rm -rf \"$T\"' EXIT || exit 1\n",
            rand::random::<u64>()
        );
        use std::io::Write;
        if shell.stdin.write_all(setup.as_bytes()).is_err() {
            shell.end();
            return Err(std::io::Error::other("the remote shell did not start"));
        }
        let said = shell.exchange("true", Some(std::time::Instant::now() + SHELL_READY));
        match said.end {
            End::Code(0) => Ok(shell),
            end => {
                let text = String::from_utf8_lossy(&said.err);
                let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                Err(std::io::Error::other(match end {
                    End::TimedOut => {
                        format!("the remote shell did not answer within {} s", SHELL_READY.as_secs())
                    }
                    _ if !last.is_empty() => last.to_string(),
                    end => format!("the remote shell did not start ({end:?})"),
                }))
            }
        }
    }

    /// Run `script` (one or more lines of sh) in a subshell of the shell, its stdin empty;
    /// what it printed and how it ended. After anything but `End::Code` the shell is gone.
    fn exchange(&mut self, script: &str, deadline: Option<std::time::Instant>) -> Exchange {
        use std::io::Write;
        let nonce = format!("margin-end-{:032x}", rand::random::<u128>());
        // the end lines begin with a newline: the output's last line need not end in one
        //
        // The subshell's stdout and stderr each go through a `cat` of their own, and the
        // line ends when both have ended: when every process that holds the output has
        // let it go, what it left running included — as a one-shot ssh command ends only
        // when its output does. So nothing a command leaves behind can print into the
        // next command's output. Its exit status goes through the shell's own file
        // (`$T/s`, emptied first: a status that never came reads as lost).
        let line = format!(
            ": >\"$T/s\"; {{ {{ {{ ( {script}\n) </dev/null 3>&-; echo $? >\"$T/s\"; }} | cat >&3; }} 2>&1 | cat >&2; }} 3>&1; \
             r=; read -r r <\"$T/s\"; printf '\\n{nonce} %s\\n' \"${{r:--1}}\"; printf '\\n{nonce}\\n' >&2\n"
        );
        let mut ex = Exchange { out: Vec::new(), err: Vec::new(), end: End::Closed(None) };
        if self.stdin.write_all(line.as_bytes()).and_then(|()| self.stdin.flush()).is_err() {
            ex.end = End::Closed(self.end());
            return ex;
        }
        ex.end = self.read_to_ends(&nonce, deadline, &mut ex.out, &mut ex.err);
        ex
    }

    /// Read stdout and stderr until each has its end line (taken off), the shell ends,
    /// the deadline passes or too much came.
    fn read_to_ends(
        &mut self,
        nonce: &str,
        deadline: Option<std::time::Instant>,
        out: &mut Vec<u8>,
        err: &mut Vec<u8>,
    ) -> End {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::io::Read;
        use std::os::fd::AsFd;
        let out_end = format!("\n{nonce} ");
        let err_end = format!("\n{nonce}\n");
        let (mut code, mut err_done) = (None::<i32>, false);
        let mut chunk = vec![0u8; 64 << 10];
        loop {
            if let (Some(code), true) = (code, err_done) {
                return End::Code(code);
            }
            if (out.len() + err.len()) as u64 > process::MAX_OUTPUT {
                self.end();
                return End::TooMuch;
            }
            let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                self.end();
                return End::TimedOut;
            }
            let timeout = match left {
                // poll counts in milliseconds: rounded up, so the limit is never cut short
                Some(l) => PollTimeout::try_from(l.as_micros().div_ceil(1000).min(i32::MAX as u128) as u32)
                    .unwrap_or(PollTimeout::MAX),
                None => PollTimeout::NONE,
            };
            let (out_ready, err_ready) = {
                let mut fds = [
                    PollFd::new(
                        self.out.as_fd(),
                        if code.is_none() { PollFlags::POLLIN } else { PollFlags::empty() },
                    ),
                    PollFd::new(
                        self.err.as_fd(),
                        if err_done { PollFlags::empty() } else { PollFlags::POLLIN },
                    ),
                ];
                match poll(&mut fds, timeout) {
                    Err(nix::errno::Errno::EINTR) | Ok(0) => continue,
                    Err(_) => {
                        return End::Closed(self.end());
                    }
                    Ok(_) => {
                        let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
                        (ready(&fds[0]), ready(&fds[1]))
                    }
                }
            };
            if out_ready && code.is_none() {
                match self.out.read(&mut chunk) {
                    Ok(0) | Err(_) => return End::Closed(self.end()),
                    Ok(n) => {
                        out.extend_from_slice(&chunk[..n]);
                        code = take_end_status(out, &out_end, n);
                    }
                }
            }
            if err_ready && !err_done {
                match self.err.read(&mut chunk) {
                    Ok(0) | Err(_) => return End::Closed(self.end()),
                    Ok(n) => {
                        err.extend_from_slice(&chunk[..n]);
                        let tail = err.len().saturating_sub(n + err_end.len());
                        if err[tail..].ends_with(err_end.as_bytes()) {
                            err.truncate(err.len() - err_end.len());
                            err_done = true;
                        }
                    }
                }
            }
        }
    }

    /// End the shell's local ssh client with its group, and reap it; its exit status.
    fn end(&mut self) -> Option<std::process::ExitStatus> {
        // what it already said stands: a client that has exited is only reaped
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        self.child.wait().ok()
    }

    /// Whether it still runs and has printed nothing since its last command's end lines.
    /// Output between commands comes from something a command left running that still
    /// writes to the shell's stdout or stderr: the shell is then replaced, and the writer
    /// loses its pipe (as it would when a one-shot ssh client ends), so that what it
    /// prints cannot land in the next command's output.
    fn is_idle(&mut self) -> bool {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        use std::os::fd::AsFd;
        if !matches!(self.child.try_wait(), Ok(None)) {
            return false;
        }
        let mut fds = [
            PollFd::new(self.out.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.err.as_fd(), PollFlags::POLLIN),
        ];
        matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
    }

    /// Close its stdin (the shell exits after what it runs), give it a moment, then end it.
    fn close(mut self) {
        drop(self.stdin);
        let begun = std::time::Instant::now();
        while begun.elapsed() < Duration::from_secs(2) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.child.wait();
    }
}

/// When `out` (whose last `added` bytes just came) ends with `end` (`\n<nonce> `), a
/// status and a newline: the status, the line taken off.
fn take_end_status(out: &mut Vec<u8>, end: &str, added: usize) -> Option<i32> {
    if out.last() != Some(&b'\n') {
        return None;
    }
    // the line is short: it lies within its length plus a status of the last bytes
    let from = out.len().saturating_sub(added + end.len() + 12);
    let at = out[from..].windows(end.len()).rposition(|w| w == end.as_bytes())? + from;
    let status = std::str::from_utf8(&out[at + end.len()..out.len() - 1]).ok()?.parse().ok()?;
    out.truncate(at);
    Some(status)
}
