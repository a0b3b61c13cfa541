//! Running a process: one shell command at a time, in its own process group, with its
//! output going straight to files, a monotonic wall clock and the CPU time it used.
//!
//! The child gets its own process group so that a timeout can kill everything it started
//! (a `sh -c` grandchild would otherwise survive and keep running), and so that the
//! terminal's Ctrl-C reaches margin alone: the trial under way finishes and is recorded.
//!
//! Every command — a trial, a hook, a probe, a fact, an ssh call — goes through one
//! [`Group`]: started with std's `Command` in a process group of its own, registered for
//! a second Ctrl-C, waited for up to its timeout, killed with its whole group when the
//! timeout passes, and reaped with `wait4`, which gives the CPU time of that one child and
//! what it waited for — not of every child margin reaped meanwhile, such as the ssh
//! clients of other hosts' trials. (duct would copy the whole environment into every
//! command, which costs more per trial than the rest of margin's overhead, and its pipes
//! stay open as long as a grandchild holds them.) Output goes to in-memory files, never
//! pipes, so that a grandchild left running cannot block the wait either.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// One command to run: what, in which folder, where its output goes, with which
/// environment and time limit.
#[derive(Debug, Clone)]
pub struct Invocation<'a> {
    pub command: &'a str,
    pub dir: &'a str,
    pub stdout: &'a Path,
    pub stderr: &'a Path,
    pub timeout: Option<Duration>,
    /// Make the output files durable (`fdatasync`) before returning.
    pub sync: bool,
    /// Kill whatever the command left running in its process group when it ends: a
    /// trial's `run` (nothing of a trial may run on into the next), not a hook (a
    /// `prepare` may start a monitor that `conclude` stops).
    pub end_group: bool,
    /// Variables added to the command's environment: the values it refers to.
    pub env: &'a [(String, String)],
}

/// How the command ended (the default: not yet at all — no status, nothing said).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Execution {
    /// The exit code, when the shell exited by itself.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub wall: Duration,
    /// CPU time of the command and everything it waited for, in seconds.
    pub user: Option<f64>,
    pub system: Option<f64>,
    /// Bytes the command and everything it waited for wrote to storage, as the kernel
    /// accounts them (`ru_oublock`, 512-byte blocks, counted when a page is dirtied, less
    /// what was truncated before writeback; getrusage(2)); `None` where not measured
    /// (a remote command's rusage is the ssh client's).
    pub written: Option<f64>,
    /// The host could not be reached or the connection broke (ssh's exit 255): not a
    /// benchmark result.
    pub host_error: Option<String>,
    /// Why the command could not be started at all (its workdir is gone, …): a failed
    /// trial, not a reason to stop the run.
    pub not_started: Option<String>,
    /// It ended leaving processes running in its group, and they were killed
    /// ([`Invocation::end_group`]).
    pub left_running: bool,
    /// Why margin stopped it before it ended by itself, other than its timeout: it
    /// printed more than [`MAX_OUTPUT`].
    pub stopped: Option<String>,
    /// Bytes of its output margin saved to the raw files (stdout and stderr together),
    /// where margin saved them itself; 0 otherwise.
    pub saved: u64,
}

impl Execution {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && self.stopped.is_none()
    }

    /// "exit code 3", "killed by signal 9", "timed out after 2 s".
    pub fn describe(&self) -> String {
        if let Some(why) = self.not_started.as_ref().or(self.stopped.as_ref()) {
            return why.clone();
        }
        if self.timed_out {
            return format!("timed out after {:.3} s", self.wall.as_secs_f64());
        }
        match (self.exit_code, self.signal) {
            // the shell's own codes (POSIX, Command Search and Execution): commands run
            // through `sh -c`, so these are what a missing benchmark looks like
            (Some(127), _) => {
                "exit code 127, the shell's for a command not found: is it installed there?".to_string()
            }
            (Some(126), _) => "exit code 126, the shell's for a command found but not executable".to_string(),
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            (None, None) => "ended without an exit status".to_string(),
        }
    }
}

/// The process groups of the commands running now (trials and hooks): a second Ctrl-C
/// ends them with margin rather than leaving them running on their own.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Set by [`kill_running`]: margin is ending at once, and a command that ends from now on
/// was killed by it, not by itself.
static ABORTING: AtomicBool = AtomicBool::new(false);

/// The most a command may print, stdout and stderr together: its output is held in
/// memory until it ends, so a trial whose output never ends would otherwise take the
/// machine's memory (docs/store.md, Guarantees). Past it, the command is stopped with its
/// process group and fails with the reason; what it printed up to then is kept.
pub const MAX_OUTPUT: u64 = 256 << 20;

/// How often the output of a running command is measured against [`MAX_OUTPUT`].
const OUTPUT_CHECK: Duration = Duration::from_millis(50);

/// Commands that stop what runs elsewhere (a service on an ssh host), by id: run by
/// [`kill_running`], since killing the local ssh client leaves the remote command running.
static ON_ABORT: Mutex<Vec<(u64, Vec<String>)>> = Mutex::new(Vec::new());

/// A command in [`ON_ABORT`] while this lives.
pub(crate) struct OnAbort(u64);

impl OnAbort {
    pub(crate) fn new(argv: Vec<String>) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::SeqCst);
        ON_ABORT.lock().unwrap_or_else(PoisonError::into_inner).push((id, argv));
        OnAbort(id)
    }
}

impl Drop for OnAbort {
    fn drop(&mut self) {
        ON_ABORT.lock().unwrap_or_else(PoisonError::into_inner).retain(|(id, _)| *id != self.0);
    }
}

/// Kill every command margin is running, each with its whole process group; then stop
/// what runs elsewhere ([`OnAbort`]).
pub fn kill_running() {
    // before the kill: a host thread that sees its trial end must know margin ended it
    ABORTING.store(true, Ordering::SeqCst);
    for &pgid in RUNNING.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
    let stops: Vec<Vec<String>> = ON_ABORT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(_, argv)| argv.clone())
        .collect();
    let dir = std::env::temp_dir();
    for argv in stops {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let _ = capture_argv(&argv, &dir, Duration::from_secs(10));
    }
}

/// Whether [`kill_running`] has been called: what ends now is no result to record.
pub fn aborting() -> bool {
    ABORTING.load(Ordering::SeqCst)
}

/// A process group in [`RUNNING`] while this lives.
struct Running(i32);

impl Running {
    fn new(pgid: i32) -> Self {
        RUNNING.lock().unwrap_or_else(PoisonError::into_inner).push(pgid);
        Running(pgid)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = running.iter().position(|p| *p == self.0) {
            running.swap_remove(i);
        }
    }
}

/// Shell builtins and keywords that must not be looked up as programs.
const SHELL_WORDS: &[&str] = &[
    "!", ".", ":", "[", "alias", "break", "case", "cd", "command", "continue", "echo", "eval", "exec",
    "exit", "export", "for", "function", "getopts", "hash", "if", "kill", "local", "printf", "pwd", "read",
    "readonly", "return", "select", "set", "shift", "source", "test", "times", "trap", "type", "ulimit",
    "umask", "unset", "until", "wait", "while", "{",
];

/// The argument vector of a command that needs no shell: plain words and quotes only, a
/// first word that is a program on `PATH` (not a builtin, whose behaviour may differ), no
/// variables, globs, redirections, escapes or separators. Running it directly spares the
/// `sh` start-up on every trial, as `hyperfine -N` does; anything else goes to `sh -c`.
fn direct_argv(command: &str) -> Option<Vec<String>> {
    let plain = |c: char| c.is_ascii_alphanumeric() || " -_./=:,+@%^'\"".contains(c);
    if !command.chars().all(plain) || command.contains('\\') {
        return None;
    }
    let argv = shlex::split(command)?;
    let first = argv.first()?;
    if first.contains('=') || SHELL_WORDS.contains(&first.as_str()) {
        return None;
    }
    // resolved here, so the spawn does not try every PATH entry in turn
    let program = if first.contains('/') { first.clone() } else { on_path(first)? };
    // A relative path (`./bench.sh`, or a relative PATH entry) is the shell's to resolve,
    // from the workdir the trial runs in, as it would be for any other command.
    if Path::new(&program).is_relative() {
        return None;
    }
    let mut argv = argv;
    argv[0] = program;
    Some(argv)
}

/// Where `program` is on `PATH`. Remembered per program for the life of the process:
/// looking it up costs a `stat` per `PATH` entry, and a run starts the same program a
/// thousand times.
fn on_path(program: &str) -> Option<String> {
    static FOUND: Mutex<Option<HashMap<String, Option<String>>>> = Mutex::new(None);
    let mut found = FOUND.lock().unwrap_or_else(PoisonError::into_inner);
    let found = found.get_or_insert_with(HashMap::new);
    if let Some(known) = found.get(program) {
        return known.clone();
    }
    let paths = std::env::var_os("PATH")?;
    let path = std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .and_then(|p| p.to_str().map(str::to_owned));
    found.insert(program.to_owned(), path.clone());
    path
}

/// Run `invocation.command` (under `sh -c` unless it needs no shell); stdin is empty, stdout
/// and stderr go to the files.
pub fn execute(invocation: &Invocation<'_>) -> std::io::Result<Execution> {
    execute_as(invocation, direct_argv(invocation.command))
}

/// [`execute`] of `direct` (the command's own argument vector), or under `sh -c`.
fn execute_as(invocation: &Invocation<'_>, direct: Option<Vec<String>>) -> std::io::Result<Execution> {
    let prepared = spawn::prepared(invocation, direct.is_some(), || match &direct {
        Some(argv) => argv.clone(),
        None => vec!["sh".to_string(), "-c".to_string(), invocation.command.to_string()],
    });
    match prepared {
        Ok(prepared) => execute_prepared(&prepared, invocation, direct.is_some()),
        Err(e) => Ok(Execution {
            not_started: Some(format!("could not start in {}: {e}", invocation.dir)),
            ..Execution::default()
        }),
    }
}

/// Run a prepared command as an [`Invocation`] says: its output files and limit (its
/// folder and environment are in `prepared`); `direct` when it is the command's own
/// argument vector, not `sh -c`'s.
fn execute_prepared(
    prepared: &spawn::Prepared,
    invocation: &Invocation<'_>,
    direct: bool,
) -> std::io::Result<Execution> {
    use std::os::unix::process::ExitStatusExt;

    // The output goes to anonymous in-memory files first: most trials of a short command
    // print nothing, and creating two files per trial costs more than running `true`.
    let stdout = memory_file("margin-stdout")?;
    let stderr = memory_file("margin-stderr")?;
    let mut group = match Group::start(prepared, &stdout, &stderr) {
        Ok(group) => group,
        // A program the kernel will not run (a script without `#!`): the shell runs it. A
        // program removed since it was found on PATH: the shell says so (127), as a failed
        // trial. (No look for it before each start: a `statx` a trial.)
        Err(e) if direct && matches!(e.raw_os_error(), Some(libc::ENOEXEC | libc::ENOENT)) => {
            return execute_as(invocation, None);
        }
        Err(e) => {
            return Ok(Execution {
                not_started: Some(format!("could not start in {}: {e}", invocation.dir)),
                ..Execution::default()
            });
        }
    };
    let ended = group.wait(invocation.timeout, &[&stdout, &stderr])?;
    // Success means some process of the group was still there. (The group's id cannot
    // have gone to another process meanwhile: pids are handed out in turn, and the
    // whole range would have to go round in these microseconds.)
    let left_running = invocation.end_group && !ended.timed_out && group.kill();
    drop(group);
    let saved = [
        persist(stdout, invocation.stdout, invocation.sync)?,
        persist(stderr, invocation.stderr, invocation.sync)?,
    ];
    let created = saved.iter().any(|n| *n > 0);
    // the new files' names too, before the record that points at them (fdatasync of the
    // record over laid-ahead zeros no longer commits the file system's journal)
    if created
        && invocation.sync
        && let Some(dir) = invocation.stdout.parent()
    {
        crate::store::sync_dir(dir)?;
    }
    Ok(Execution {
        exit_code: ended.status.code(),
        signal: ended.status.signal(),
        timed_out: ended.timed_out,
        wall: ended.wall,
        user: Some(ended.user),
        system: Some(ended.system),
        written: Some(ended.written),
        host_error: None,
        not_started: None,
        left_running,
        stopped: ended.printed_too_much.then(|| {
            format!("stopped after printing more than {} MiB (stdout and stderr)", MAX_OUTPUT >> 20)
        }),
        saved: saved.iter().sum(),
    })
}

/// A program started as margin starts every local command ([`spawn`]), and nothing more
/// of margin's work: what `examples/durable_floor.rs` times as its `clone` floor, to tell
/// the start's cost from the rest of what margin does between two trials.
pub struct Starter(std::rc::Rc<spawn::Prepared>);

impl Starter {
    /// `argv`'s program (a path, or a name on `PATH`), to run in `dir` with `env` added.
    pub fn new(argv: &[String], dir: &str, env: &[(String, String)]) -> std::io::Result<Starter> {
        Ok(Starter(std::rc::Rc::new(spawn::Prepared::new(argv, dir, env)?)))
    }

    /// Start it, stdout and stderr into the files, and wait for it: how it ended.
    pub fn run(
        &self,
        stdout: &std::fs::File,
        stderr: &std::fs::File,
    ) -> std::io::Result<std::process::ExitStatus> {
        let started = spawn::start(&self.0, stdout, stderr)?;
        Ok(reap::reap(started.pid)?.status)
    }
}

/// A long-lived command (a service, docs/experiment-file.md): started in a process group
/// of its own like any command, listed for a second Ctrl-C, its output going straight to
/// its raw files as it runs; stopped with its whole group, reaped, and its output made
/// durable. Dropped unstopped (an error, a panic), it is killed.
pub(crate) struct Background {
    group: Option<Group>,
    files: [(std::fs::File, std::path::PathBuf); 2],
    /// How it ended, once seen.
    ended: Option<String>,
}

/// "exit code 1", "killed by signal 9".
fn status_text(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => "ended without an exit status".to_string(),
    }
}

/// Start `invocation.command` (under `sh -c` unless it needs no shell) and leave it
/// running (its timeout is not used).
pub(crate) fn start(invocation: &Invocation<'_>) -> std::io::Result<Background> {
    let direct = direct_argv(invocation.command).filter(|argv| Path::new(&argv[0]).is_file());
    match &direct {
        Some(argv) => start_argv(&argv.iter().map(String::as_str).collect::<Vec<_>>(), invocation),
        None => start_argv(&["sh", "-c", invocation.command], invocation),
    }
}

/// [`start`] of a program and its arguments (`invocation.command` is not used).
pub(crate) fn start_argv(argv: &[&str], invocation: &Invocation<'_>) -> std::io::Result<Background> {
    let (program, args) = argv.split_first().ok_or_else(|| std::io::Error::other("nothing to run"))?;
    let mut command = Command::new(program);
    command.args(args);
    let open = |path: &Path| {
        std::fs::File::create(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    };
    let (out, err) = (open(invocation.stdout)?, open(invocation.stderr)?);
    command
        .envs(invocation.env.iter().map(|(k, v)| (k, v)))
        .current_dir(invocation.dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(err.try_clone()?);
    dies_with_margin(&mut command);
    let group = Group::spawn(&mut command)?;
    Ok(Background {
        group: Some(group),
        files: [(out, invocation.stdout.to_path_buf()), (err, invocation.stderr.to_path_buf())],
        ended: None,
    })
}

impl Background {
    /// `None` while it runs; how it ended once it has (it is reaped then, and what it
    /// left in its group killed).
    pub(crate) fn ended(&mut self) -> Option<String> {
        if let Some(group) = &self.group
            && reap::ended_within(group.pgid, group.pidfd.as_ref(), Some(Duration::ZERO)).unwrap_or(true)
        {
            let group = self.group.take()?;
            let status = reap::reap(group.pgid).map(|r| status_text(r.status));
            group.kill();
            self.ended = Some(status.unwrap_or_else(|e| format!("ended ({e})")));
        }
        self.ended.clone()
    }

    /// Stop it: SIGTERM to its whole group, SIGKILL after `grace`; reaped; its output
    /// made durable. How it ended (`killed by signal 15` when it obeyed).
    pub(crate) fn stop(&mut self, grace: Duration) -> std::io::Result<String> {
        if self.ended().is_none()
            && let Some(group) = self.group.take()
        {
            let _ = killpg(group.pgid, Signal::SIGTERM);
            if !reap::ended_within(group.pgid, group.pidfd.as_ref(), Some(grace)).unwrap_or(false) {
                let _ = killpg(group.pgid, Signal::SIGKILL);
            }
            let status = reap::reap(group.pgid).map(|r| status_text(r.status))?;
            // what it started that outlived it
            group.kill();
            self.ended = Some(status);
        }
        for (file, _) in &self.files {
            file.sync_data()?;
        }
        if let Some(dir) = self.files[0].1.parent() {
            crate::store::sync_dir(dir)?;
        }
        Ok(self.ended.clone().unwrap_or_default())
    }

    /// The files its output goes to (stdout, stderr).
    pub(crate) fn paths(&self) -> [&Path; 2] {
        [&self.files[0].1, &self.files[1].1]
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(group) = self.group.take() {
            let _ = killpg(group.pgid, Signal::SIGKILL);
            let _ = reap::reap(group.pgid);
        }
    }
}

/// Have the kernel kill a long-lived command when the thread that started it ends, even
/// when margin itself is killed (SIGKILL leaves no chance to stop it).
#[allow(unsafe_code)]
fn dies_with_margin(command: &mut Command) {
    // SAFETY: the closure runs in the child between fork and exec, and only makes one
    // system call (prctl), which is async-signal-safe; it allocates nothing.
    unsafe {
        command.pre_exec(|| nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from));
    }
}

/// A command started in a process group of its own (its pid is the group's id), listed
/// in [`RUNNING`] until dropped: the one way margin starts, times out, kills and reaps a
/// process.
struct Group {
    pgid: Pid,
    /// A descriptor that becomes readable when the process ends, when its start gave one
    /// ([`spawn::start`]'s `clone`); else [`reap::ended_within`] opens one each time.
    pidfd: Option<std::os::fd::OwnedFd>,
    /// Kept unwaited: [`Group::wait`] reaps it itself, with its resource usage (none
    /// for a command started by [`spawn::start`]).
    _child: Option<std::process::Child>,
    _running: Running,
    start: Instant,
}

/// How a group's first process ended.
struct Ended {
    status: std::process::ExitStatus,
    /// Whether the timeout passed first, and the group was killed.
    timed_out: bool,
    wall: Duration,
    /// CPU time of the process and everything it waited for, in seconds.
    user: f64,
    system: f64,
    /// Bytes written, `ru_oublock` × 512.
    written: f64,
    /// It printed more than [`MAX_OUTPUT`], and the whole group was killed.
    printed_too_much: bool,
}

impl Group {
    /// Start `command` in a new process group: a timeout then kills everything it started,
    /// and the terminal's Ctrl-C reaches margin alone.
    fn spawn(command: &mut Command) -> std::io::Result<Self> {
        command.process_group(0);
        let start = Instant::now();
        let child = command.spawn()?;
        let pgid = Pid::from_raw(child.id() as i32);
        Ok(Group { pgid, pidfd: None, _child: Some(child), _running: Running::new(pgid.as_raw()), start })
    }

    /// [`Group::spawn`] of a prepared command (`spawn.rs`'s way: no environment copied
    /// per start), its stdout and stderr going to the two files, stdin empty.
    fn start(
        prepared: &spawn::Prepared,
        stdout: &std::fs::File,
        stderr: &std::fs::File,
    ) -> std::io::Result<Self> {
        let start = Instant::now();
        let started = spawn::start(prepared, stdout, stderr)?;
        let pgid = started.pid;
        Ok(Group { pgid, pidfd: started.pidfd, _child: None, _running: Running::new(pgid.as_raw()), start })
    }

    /// Wait for the process to end, or until `timeout` has passed or its `outputs`
    /// together hold more than [`MAX_OUTPUT`], and the whole group is killed; reap it. What
    /// it started may still run in the group afterwards (a hook's monitor, ssh's master
    /// connection), unless it was killed.
    fn wait(&mut self, timeout: Option<Duration>, outputs: &[&std::fs::File]) -> std::io::Result<Ended> {
        let pgid = self.pgid;
        let deadline = timeout.map(|t| self.start + t);
        let (mut timed_out, mut printed_too_much) = (false, false);
        let printed = || outputs.iter().map(|f| f.metadata().map_or(0, |m| m.len())).sum::<u64>();
        let waited = (|| loop {
            // a look at the output every OUTPUT_CHECK; the end itself is seen at once
            let left = deadline.map_or(OUTPUT_CHECK, |d| d.saturating_duration_since(Instant::now()));
            if reap::ended_within(pgid, self.pidfd.as_ref(), Some(left.min(OUTPUT_CHECK)))? {
                return Ok(self.start.elapsed());
            }
            timed_out = deadline.is_some_and(|d| Instant::now() >= d);
            printed_too_much = !timed_out && printed() > MAX_OUTPUT;
            if timed_out || printed_too_much {
                // the whole group: sh and whatever it started
                let _ = killpg(pgid, Signal::SIGKILL);
                reap::ended_within(pgid, None, None)?;
                return Ok(self.start.elapsed());
            }
        })();
        let wall = match waited {
            Ok(wall) => wall,
            Err(e) => {
                // nothing of it may run on unseen: end it, reap it, then say what failed
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = reap::reap(pgid);
                return Err(e);
            }
        };
        let ended = reap::reap(pgid)?;
        if timed_out || printed_too_much {
            // a grandchild that outlived the shell between the kill and the wait
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        Ok(Ended {
            status: ended.status,
            timed_out,
            wall,
            user: ended.user,
            system: ended.system,
            written: ended.written,
            printed_too_much,
        })
    }

    /// Kill what is left of the group; whether anything was.
    fn kill(&self) -> bool {
        killpg(self.pgid, Signal::SIGKILL).is_ok()
    }
}

/// An anonymous file in memory that a child can write to like any file (no pipe: a
/// grandchild left running cannot block the wait).
fn memory_file(name: &str) -> std::io::Result<std::fs::File> {
    let fd = nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)?;
    Ok(std::fs::File::from(fd))
}

/// Keep what a command printed: copied to `path` (made durable when `sync`) unless it
/// printed nothing — an absent raw file is an empty output. How many bytes were kept (0:
/// no file was created).
fn persist(mut memory: std::fs::File, path: &Path, sync: bool) -> std::io::Result<u64> {
    use std::io::{Seek, SeekFrom};
    let len = memory.metadata()?.len();
    if len == 0 {
        return Ok(0);
    }
    memory.seek(SeekFrom::Start(0))?;
    // A full disk names the file it could not write; the kind stays, so callers still
    // tell a full disk from other errors.
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut file = std::fs::File::create(path).map_err(named)?;
    let copied = std::io::copy(&mut memory, &mut file).map_err(named)?;
    if sync {
        file.sync_data().map_err(named)?;
    }
    Ok(copied)
}

/// Read a raw output file; an absent one is an empty output.
pub fn read_raw(path: &Path) -> std::io::Result<String> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// Run a short command and capture its trimmed stdout (facts, probes); `None` when it
/// fails, times out or prints nothing.
pub fn capture(command: &str, dir: &Path, timeout: Duration) -> Option<String> {
    capture_argv(&["sh", "-c", command], dir, timeout).ok()
}

/// Run a program and capture its trimmed stdout; `Err` holds why not (the end of
/// stderr, or the exit status). What it leaves running in its group is left alone (ssh's
/// master connection serves the next calls).
pub fn capture_argv(argv: &[&str], dir: &Path, timeout: Duration) -> Result<String, String> {
    use std::io::{Read, Seek, SeekFrom};
    let (program, args) = argv.split_first().ok_or("nothing to run")?;
    let cannot = |e: std::io::Error| format!("cannot start {program}: {e}");
    let mut stdout = memory_file("margin-capture-stdout").map_err(cannot)?;
    let mut stderr = memory_file("margin-capture-stderr").map_err(cannot)?;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().map_err(cannot)?)
        .stderr(stderr.try_clone().map_err(cannot)?);
    let mut group = Group::spawn(&mut command).map_err(cannot)?;
    drop(command); // the parent's copies of the output files' descriptors
    let ended = group.wait(Some(timeout), &[&stdout, &stderr]).map_err(|e| e.to_string())?;
    drop(group);
    if ended.timed_out {
        return Err(format!("no answer within {} s", timeout.as_secs()));
    }
    if ended.printed_too_much {
        return Err(format!("it printed more than {} MiB", MAX_OUTPUT >> 20));
    }
    let read = |file: &mut std::fs::File| {
        let mut bytes = Vec::new();
        let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_end(&mut bytes));
        String::from_utf8_lossy(&bytes).into_owned()
    };
    if !ended.status.success() {
        let err = read(&mut stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        let status = ended.status.code().map_or("a signal".to_string(), |c| format!("exit code {c}"));
        return Err(if last.is_empty() { status } else { format!("{status}: {last}") });
    }
    let text = read(&mut stdout).trim().to_string();
    if text.is_empty() { Err("no output".to_string()) } else { Ok(text) }
}

/// Starting a command from a form of it built once ([`spawn::Prepared`]): std's `Command`
/// copies margin's whole environment into a new one at every start as soon as one
/// variable is added (the store's marker always is), 15–25 µs a start here, as much as the
/// rest of margin's work between two trials (issue 17). The command gets what std would
/// give it: the same environment in the same order (margin's, the invocation's variables
/// over it, sorted by name as std's map sorts them), its own process group, the folder,
/// SIGPIPE back to its default, an empty signal mask, stdin from `/dev/null`, stdout and
/// stderr into the two files.
///
/// It is started as glibc's `posix_spawn` starts one — `clone` with `CLONE_VM |
/// CLONE_VFORK`, the child on a stack of its own until its `execve` — less the one part
/// that costs: glibc's child sets every one of the 64 signals' disposition in turn (two
/// `rt_sigaction` each, about 45 µs a start on this machine, more than the rest of
/// margin's work between two trials), where margin's knows the few signals it has
/// handlers for ([`spawn::HANDLED`]) and sets those alone. The start also gives the
/// child's pidfd (`CLONE_PIDFD`, where pidfds can be waited on: Linux 5.3 and later),
/// which the wait uses. Where the kernel refuses that `clone` (a sandbox),
/// `posix_spawnp` starts it instead. A program the kernel will not run (a script without
/// `#!`) or no longer finds is run by `sh`, as the shell runs it ([`execute`]).
#[allow(unsafe_code)]
mod spawn {
    use std::cell::RefCell;
    use std::collections::BTreeMap;
    use std::ffi::{CString, OsString};
    use std::io;
    use std::mem::MaybeUninit;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStringExt;
    use std::rc::Rc;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, Ordering};

    use nix::unistd::Pid;

    use super::Invocation;

    /// A command as `posix_spawnp` and `execve` take it: the program, its arguments, its
    /// whole environment and its folder, as C strings; the program's path when it was
    /// found (a name looked up on `PATH` as `posix_spawnp` would), and the NUL-terminated
    /// arrays of pointers to the arguments and the variables.
    pub(super) struct Prepared {
        program: CString,
        path: Option<CString>,
        /// The arguments and the variables, which the pointers below point into.
        _argv: Vec<CString>,
        _envp: Vec<CString>,
        dir: CString,
        argv_pointers: Vec<*const libc::c_char>,
        envp_pointers: Vec<*const libc::c_char>,
    }

    /// What a [`Prepared`] was built from: a run starts the same command in the same
    /// folder with the same variables again and again.
    #[derive(PartialEq)]
    struct Key {
        command: String,
        direct: bool,
        dir: String,
        env: Vec<(String, String)>,
    }

    /// How many prepared commands a thread keeps: a trial's `prepare`, `run` and
    /// `conclude`, and a few more.
    const KEPT: usize = 8;

    std::thread_local! {
        /// The commands this thread prepared last, the latest first (each host's thread
        /// starts its own).
        static LAST: RefCell<Vec<(Key, Rc<Prepared>)>> = const { RefCell::new(Vec::new()) };
    }

    /// The prepared form of `invocation`'s command, `argv` (run directly when `direct`,
    /// else it is `sh -c`'s): one this thread built lately when it is the same.
    pub(super) fn prepared(
        invocation: &Invocation<'_>,
        direct: bool,
        argv: impl FnOnce() -> Vec<String>,
    ) -> io::Result<Rc<Prepared>> {
        LAST.with_borrow_mut(|last| {
            let same = |key: &Key| {
                key.command == invocation.command
                    && key.direct == direct
                    && key.dir == invocation.dir
                    && key.env == invocation.env
            };
            if let Some(i) = last.iter().position(|(key, _)| same(key)) {
                let kept = last.remove(i);
                let prepared = Rc::clone(&kept.1);
                last.insert(0, kept);
                return Ok(prepared);
            }
            let prepared = Rc::new(Prepared::new(&argv(), invocation.dir, invocation.env)?);
            let key = Key {
                command: invocation.command.to_string(),
                direct,
                dir: invocation.dir.to_string(),
                env: invocation.env.to_vec(),
            };
            last.truncate(KEPT - 1);
            last.insert(0, (key, Rc::clone(&prepared)));
            Ok(prepared)
        })
    }

    /// A string with a NUL in it: std's error for it.
    fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
        CString::new(bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "nul byte found in provided data"))
    }

    impl Prepared {
        pub(super) fn new(argv: &[String], dir: &str, env: &[(String, String)]) -> io::Result<Prepared> {
            let program =
                c_string(argv.first().ok_or_else(|| io::Error::other("nothing to run"))?.clone().into())?;
            let argv = argv.iter().map(|a| c_string(a.clone().into())).collect::<io::Result<_>>()?;
            // as std's `Command` builds it: margin's variables, the command's over them,
            // in the order of a map sorted by name, each `NAME=value`
            let mut vars: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
            for (k, v) in env {
                vars.insert(k.into(), v.into());
            }
            let envp = vars
                .into_iter()
                .map(|(k, v)| {
                    let mut kv = k.into_vec();
                    kv.push(b'=');
                    kv.extend(v.into_vec());
                    c_string(kv)
                })
                .collect::<io::Result<_>>()?;
            let path = match program.to_str() {
                Ok(name) if name.contains('/') => Some(program.clone()),
                Ok(name) => super::on_path(name).and_then(|p| CString::new(p).ok()),
                Err(_) => None,
            };
            // pointers to the strings' own buffers, which stay where they are as long as
            // the strings live: as long as `self`
            let pointers = |strings: &Vec<CString>| -> Vec<*const libc::c_char> {
                strings.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect()
            };
            let (argv_pointers, envp_pointers) = (pointers(&argv), pointers(&envp));
            Ok(Prepared {
                program,
                path,
                _argv: argv,
                _envp: envp,
                dir: c_string(dir.into())?,
                argv_pointers,
                envp_pointers,
            })
        }
    }

    /// `/dev/null`, opened once for every command's stdin.
    fn null() -> io::Result<&'static std::fs::File> {
        static NULL: OnceLock<std::fs::File> = OnceLock::new();
        if let Some(null) = NULL.get() {
            return Ok(null);
        }
        let file = std::fs::File::open("/dev/null")?;
        Ok(NULL.get_or_init(|| file))
    }

    /// A descriptor the child can take as 0, 1 or 2 whatever the order it takes them in:
    /// one of 0–2 itself (margin started with one of its own closed) is copied above them.
    fn above_stdio(file: &std::fs::File) -> io::Result<Option<OwnedFd>> {
        if file.as_raw_fd() > 2 { Ok(None) } else { Ok(Some(file.try_clone()?.into())) }
    }

    /// A posix_spawn* function's result: 0, or the error number.
    fn check(code: libc::c_int) -> io::Result<()> {
        if code == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(code)) }
    }

    /// The file actions, destroyed when dropped.
    struct Actions(MaybeUninit<libc::posix_spawn_file_actions_t>);

    impl Drop for Actions {
        fn drop(&mut self) {
            // SAFETY: only built by `start` after `posix_spawn_file_actions_init` succeeded.
            unsafe { libc::posix_spawn_file_actions_destroy(self.0.as_mut_ptr()) };
        }
    }

    /// The attributes, destroyed when dropped.
    struct Attributes(MaybeUninit<libc::posix_spawnattr_t>);

    impl Drop for Attributes {
        fn drop(&mut self) {
            // SAFETY: only built by `start` after `posix_spawnattr_init` succeeded.
            unsafe { libc::posix_spawnattr_destroy(self.0.as_mut_ptr()) };
        }
    }

    /// A started command: its pid (its process group's id too), and a descriptor that
    /// becomes readable when it ends, when the start gave one.
    pub(super) struct Started {
        pub(super) pid: Pid,
        pub(super) pidfd: Option<OwnedFd>,
    }

    /// Start `prepared` in a process group of its own (its pid is the group's id), stdin
    /// from `/dev/null`, stdout and stderr into the two files: by [`cloned`], or by
    /// `posix_spawnp` where that cannot.
    pub(super) fn start(
        prepared: &Prepared,
        stdout: &std::fs::File,
        stderr: &std::fs::File,
    ) -> io::Result<Started> {
        let null = null()?;
        let high = [above_stdio(null)?, above_stdio(stdout)?, above_stdio(stderr)?];
        let mut fds = [0; 3];
        for ((fd, file), high) in fds.iter_mut().zip([null, stdout, stderr]).zip(&high) {
            *fd = high.as_ref().map_or(file.as_raw_fd(), |h| h.as_raw_fd());
        }
        if let Some(path) = &prepared.path
            && !NO_CLONE.load(Ordering::Relaxed)
            && let Some(started) = cloned(prepared, path, fds)?
        {
            return Ok(started);
        }
        let pid = spawned(prepared, fds)?;
        drop(high);
        Ok(Started { pid, pidfd: None })
    }

    /// Set once the kernel has refused [`cloned`]'s `clone`: `posix_spawnp` from then on.
    static NO_CLONE: AtomicBool = AtomicBool::new(false);

    /// The signals margin has handlers for: SIGINT and SIGTERM (`margin run`'s Ctrl-C,
    /// cmd/run.rs), SIGSEGV and SIGBUS (std's guard against a stack overflow); and SIGPIPE,
    /// which margin ignores (std does) and a command gets back at its default, as std's
    /// `Command` gives it. A child started by [`cloned`] shares margin's memory until its
    /// `execve`: a handler of margin's must not run in it, so these go back to their
    /// default first. A handler added to margin must be added here; debug builds check
    /// it at every start ([`handlers_are_known`]).
    pub(super) const HANDLED: [libc::c_int; 5] =
        [libc::SIGINT, libc::SIGTERM, libc::SIGSEGV, libc::SIGBUS, libc::SIGPIPE];

    /// What the child of [`cloned`] needs, built by the parent: the child may not
    /// allocate (it shares the parent's heap, whose lock another thread may hold).
    struct ChildPlan {
        path: *const libc::c_char,
        argv: *const *const libc::c_char,
        envp: *const *const libc::c_char,
        dir: *const libc::c_char,
        /// stdin, stdout and stderr, each above 2
        fds: [libc::c_int; 3],
        default: libc::sigaction,
        empty: libc::sigset_t,
        /// Set by the child when it could not get as far as running the program: the
        /// error number (0: it ran it).
        error: libc::c_int,
        /// Set by the child when what failed was the `execve` itself (not the folder, …).
        at_exec: bool,
    }

    /// The child of [`cloned`], on its own stack, in margin's memory, margin's thread
    /// suspended until it calls `execve` or ends: its own process group, margin's
    /// handlers back to their defaults, the three descriptors, the folder, an empty
    /// signal mask (all are blocked when it starts), the program. Only async-signal-safe
    /// calls; on a failure it keeps the error number in the plan and ends.
    extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `plan` is the `ChildPlan` that `cloned` passed, alive for the whole call
        // (its thread is suspended until this child calls execve or ends); its pointers
        // are to C strings and NUL-terminated arrays that `Prepared` owns. Each call
        // below takes pointers to those or to the plan's own fields.
        unsafe {
            let plan = &mut *plan.cast::<ChildPlan>();
            let ok = libc::setpgid(0, 0) == 0
                && HANDLED.iter().all(|&sig| libc::sigaction(sig, &plan.default, std::ptr::null_mut()) == 0)
                && plan.fds.iter().zip(0..).all(|(&fd, target)| libc::dup2(fd, target) == target)
                && libc::chdir(plan.dir) == 0
                && libc::sigprocmask(libc::SIG_SETMASK, &plan.empty, std::ptr::null_mut()) == 0;
            if ok {
                libc::execve(plan.path, plan.argv, plan.envp);
            }
            plan.error = *libc::__errno_location();
            plan.at_exec = ok;
            127
        }
    }

    /// The stack [`child`] runs on: mapped once per thread (each host's thread starts its
    /// own commands), a page at its foot left unmapped so that an overflow faults rather
    /// than writes over other memory. Its thread is suspended while the child uses it.
    struct Stack {
        base: *mut libc::c_void,
        len: usize,
    }

    /// [`child`] makes a handful of calls: 64 KiB is many times what it uses (glibc's own
    /// child gets 36 KiB).
    const STACK: usize = 64 << 10;

    impl Stack {
        fn new() -> io::Result<Stack> {
            // SAFETY: sysconf reads a number; mmap asks for a new private mapping that
            // nothing else refers to, and mprotect changes only its first page.
            unsafe {
                let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).unwrap_or(4096).max(4096);
                let len = page + STACK.div_ceil(page) * page;
                let base = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                    -1,
                    0,
                );
                if base == libc::MAP_FAILED {
                    return Err(io::Error::last_os_error());
                }
                let stack = Stack { base, len };
                if libc::mprotect(base, page, libc::PROT_NONE) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(stack)
            }
        }

        /// Where the child's stack starts (it grows down): the mapping's end, page-aligned.
        fn top(&self) -> *mut libc::c_void {
            self.base.wrapping_byte_add(self.len)
        }
    }

    impl Drop for Stack {
        fn drop(&mut self) {
            // SAFETY: the mapping is this Stack's own, mapped by `new`, used by no child
            // now (a child runs only during `cloned`, which holds the borrow).
            unsafe { libc::munmap(self.base, self.len) };
        }
    }

    std::thread_local! {
        static CHILD_STACK: RefCell<Option<Stack>> = const { RefCell::new(None) };
    }

    /// Start `prepared` (the program at `path`) with `clone`, as the module says. `None`
    /// when the kernel refused the `clone` (remembered: `posix_spawnp` then starts it);
    /// the error when the child could not get as far as running the program (reaped).
    fn cloned(prepared: &Prepared, path: &CString, fds: [libc::c_int; 3]) -> io::Result<Option<Started>> {
        #[cfg(debug_assertions)]
        handlers_are_known();
        CHILD_STACK.with_borrow_mut(|stack| {
            let stack = match stack {
                Some(stack) => stack,
                None => stack.insert(Stack::new()?),
            };
            // SAFETY: sigaction and sigset_t are plain C structs of numbers and pointers,
            // for which all zeros is a value (SIG_DFL, no flags, an empty set, filled by
            // sigemptyset next).
            let (mut default, mut empty): (libc::sigaction, libc::sigset_t) =
                unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
            default.sa_sigaction = libc::SIG_DFL;
            // SAFETY: pointers to live locals of the types these functions fill.
            unsafe {
                libc::sigemptyset(&mut default.sa_mask);
                libc::sigemptyset(&mut empty);
            }
            let mut plan = ChildPlan {
                path: path.as_ptr(),
                argv: prepared.argv_pointers.as_ptr(),
                envp: prepared.envp_pointers.as_ptr(),
                dir: prepared.dir.as_ptr(),
                fds,
                default,
                empty,
                error: 0,
                at_exec: false,
            };
            let mut pidfd: libc::c_int = -1;
            let with_pidfd = if pidfds_wait() { libc::CLONE_PIDFD } else { 0 };
            let flags = libc::CLONE_VM | libc::CLONE_VFORK | with_pidfd | libc::SIGCHLD;
            // SAFETY: every signal is blocked in this thread from before the clone until
            // it returns, so no handler of margin's runs in the child before it sets them
            // back to their defaults (all but glibc's own 32 and 33, which pthread_sigmask
            // leaves open: glibc sends them with tgkill to the threads it lists, never the
            // child, and its handler ignores them otherwise). The child runs `child` on
            // `stack`, mapped for it and used by nothing else meanwhile (this thread is
            // suspended until the child's execve or end: CLONE_VFORK), with `plan`, which
            // lives on this frame past the clone; `pidfd` is where the kernel writes the
            // child's pidfd (CLONE_PIDFD). After the clone returns the child no longer uses
            // `plan`, read here by volatile loads since the child wrote it behind the
            // compiler's back.
            let (pid, clone_error, (error, at_exec)) = unsafe {
                let (mut all, mut old): (libc::sigset_t, libc::sigset_t) =
                    (std::mem::zeroed(), std::mem::zeroed());
                libc::sigfillset(&mut all);
                libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
                let pid = libc::clone(child, stack.top(), flags, (&raw mut plan).cast(), &raw mut pidfd);
                let clone_error = io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                let failed = (
                    std::ptr::read_volatile(&raw const plan.error),
                    std::ptr::read_volatile(&raw const plan.at_exec),
                );
                (pid, clone_error, failed)
            };
            if pid < 0 {
                return match clone_error.raw_os_error() {
                    Some(libc::EINVAL | libc::ENOSYS | libc::EPERM) => {
                        NO_CLONE.store(true, Ordering::Relaxed);
                        Ok(None)
                    }
                    _ => Err(clone_error),
                };
            }
            // SAFETY: with CLONE_PIDFD a successful clone wrote a new descriptor, ours
            // alone (a kernel that ignores the flag leaves -1: no descriptor).
            let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
            let pid = Pid::from_raw(pid);
            if error != 0 {
                // it has ended (the clone returned): reaped, and the error is the start's,
                // as posix_spawnp gives it; one before the `execve` (the folder gone) keeps
                // only its text, so that `execute` does not try the shell for it
                super::reap::reap(pid)?;
                let e = io::Error::from_raw_os_error(error);
                return Err(if at_exec { e } else { io::Error::new(e.kind(), e.to_string()) });
            }
            Ok(Some(Started { pid, pidfd }))
        })
    }

    /// Whether a pidfd can be waited on (Linux 5.3 and later: `pidfd_open` exists; 5.2
    /// gives one from `clone` that `poll` does not wait on, and older kernels ignore the
    /// flag). Asked once, of margin's own pid.
    fn pidfds_wait() -> bool {
        static WAIT: OnceLock<bool> = OnceLock::new();
        *WAIT.get_or_init(|| super::reap::open_pidfd(Pid::this()).is_ok())
    }

    /// That no signal outside [`HANDLED`] has a handler in margin (debug builds, at every
    /// start: what a release build's [`child`] relies on). glibc refuses to say for its
    /// own two (32 and 33).
    #[cfg(debug_assertions)]
    fn handlers_are_known() {
        for sig in 1..=libc::SIGRTMAX() {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP || HANDLED.contains(&sig) {
                continue;
            }
            // SAFETY: all zeros is a value of sigaction; the call only reads the disposition.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            let queried = unsafe { libc::sigaction(sig, std::ptr::null(), &mut action) } == 0;
            assert!(
                !queried || action.sa_sigaction == libc::SIG_DFL || action.sa_sigaction == libc::SIG_IGN,
                "signal {sig} has a handler in margin: add it to spawn::HANDLED"
            );
        }
    }

    /// Start `prepared` with `posix_spawnp`, stdin, stdout and stderr from `fds`.
    pub(super) fn spawned(prepared: &Prepared, fds: [libc::c_int; 3]) -> io::Result<Pid> {
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer handed to the posix_spawn* functions is to a live local
        // (the actions and attributes, initialised before any other use and destroyed by
        // their guards after the last), to a C string of `prepared`, or to its
        // NUL-terminated arrays of pointers to such strings (`prepared` outlives the call;
        // posix_spawnp reads them, writes none and keeps none). The descriptors are open
        // (the caller holds the files for the whole call).
        unsafe {
            let mut actions = Actions(MaybeUninit::uninit());
            check(libc::posix_spawn_file_actions_init(actions.0.as_mut_ptr()))?;
            for (fd, target) in fds.iter().zip([libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO])
            {
                check(libc::posix_spawn_file_actions_adddup2(actions.0.as_mut_ptr(), *fd, target))?;
            }
            check(libc::posix_spawn_file_actions_addchdir_np(actions.0.as_mut_ptr(), prepared.dir.as_ptr()))?;
            let mut attributes = Attributes(MaybeUninit::uninit());
            check(libc::posix_spawnattr_init(attributes.0.as_mut_ptr()))?;
            check(libc::posix_spawnattr_setpgroup(attributes.0.as_mut_ptr(), 0))?;
            // SIGPIPE back to its default, as std does (margin ignores it)
            let mut default: MaybeUninit<libc::sigset_t> = MaybeUninit::uninit();
            if libc::sigemptyset(default.as_mut_ptr()) != 0
                || libc::sigaddset(default.as_mut_ptr(), libc::SIGPIPE) != 0
            {
                return Err(io::Error::last_os_error());
            }
            check(libc::posix_spawnattr_setsigdefault(attributes.0.as_mut_ptr(), default.as_ptr()))?;
            // and no signal blocked, as std and `cloned` start it
            let mut empty: MaybeUninit<libc::sigset_t> = MaybeUninit::uninit();
            if libc::sigemptyset(empty.as_mut_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            check(libc::posix_spawnattr_setsigmask(attributes.0.as_mut_ptr(), empty.as_ptr()))?;
            let flags =
                libc::POSIX_SPAWN_SETPGROUP | libc::POSIX_SPAWN_SETSIGDEF | libc::POSIX_SPAWN_SETSIGMASK;
            check(libc::posix_spawnattr_setflags(attributes.0.as_mut_ptr(), flags as libc::c_short))?;
            check(libc::posix_spawnp(
                &mut pid,
                prepared.program.as_ptr(),
                actions.0.as_ptr(),
                attributes.0.as_ptr(),
                prepared.argv_pointers.as_ptr().cast(),
                prepared.envp_pointers.as_ptr().cast(),
            ))?;
        }
        Ok(Pid::from_raw(pid))
    }
}

/// Waiting for one child: until it ends (exactly when, through a pidfd, with or without
/// a limit), then reaping it with its own resource usage. std and nix do not offer
/// `wait4`'s usage or `pidfd_open`: with [`spawn`], the only unsafe code in margin, each
/// call with the reason it is sound.
#[allow(unsafe_code)]
mod reap {
    use std::io;
    use std::os::fd::{AsFd, FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;
    use std::time::{Duration, Instant};

    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    use nix::unistd::Pid;

    /// How a reaped child ended, and the CPU time it and what it waited for used.
    pub(super) struct Reaped {
        pub status: ExitStatus,
        pub user: f64,
        pub system: f64,
        pub written: f64,
    }

    /// Wait until `pid` has ended, leaving it unreaped; `false` when `limit` passed first.
    /// `pidfd`, when given, is `pid`'s (from its start); else one is opened for the wait.
    pub(super) fn ended_within(
        pid: Pid,
        pidfd: Option<&OwnedFd>,
        limit: Option<Duration>,
    ) -> io::Result<bool> {
        let Some(limit) = limit else {
            loop {
                match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                    Err(nix::errno::Errno::EINTR) => continue,
                    Err(e) => return Err(e.into()),
                    Ok(_) => return Ok(true),
                }
            }
        };
        let deadline = Instant::now() + limit;
        let opened;
        let fd = match pidfd {
            Some(fd) => fd,
            None => match open_pidfd(pid) {
                Ok(fd) => {
                    opened = fd;
                    &opened
                }
                // before Linux 5.3, or a sandbox that forbids it: look every millisecond
                Err(_) => return ended_by_looking(pid, deadline),
            },
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            // poll counts in milliseconds, up to about 24 days at a time: round up, so
            // the limit is never cut short
            let ms = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, PollTimeout::try_from(ms as u32).unwrap_or(PollTimeout::MAX)) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(0) if left.is_zero() => return Ok(false),
                Ok(0) => continue,
                Ok(_) => return Ok(true),
            }
        }
    }

    /// [`ended_within`] without a pidfd: whether `pid` has ended, every millisecond until
    /// `deadline` (the end is seen up to a millisecond late).
    pub(super) fn ended_by_looking(pid: Pid, deadline: Instant) -> io::Result<bool> {
        loop {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
            match waitid(Id::Pid(pid), flags) {
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(nix::sys::wait::WaitStatus::StillAlive) => {}
                Ok(_) => return Ok(true),
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A descriptor that becomes readable when `pid` ends (Linux 5.3 and later).
    pub(super) fn open_pidfd(pid: Pid) -> io::Result<OwnedFd> {
        // SAFETY: pidfd_open takes a pid and flags, touches no memory of ours, and
        // returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just opened for us, and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
    }

    /// Reap `pid`, which has ended, with its resource usage.
    pub(super) fn reap(pid: Pid) -> io::Result<Reaped> {
        let mut status: libc::c_int = 0;
        // SAFETY: rusage is a plain C struct of numbers, for which all zeros is a value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: both pointers are to live locals of the types wait4 writes.
            let r = unsafe { libc::wait4(pid.as_raw(), &mut status, 0, &mut usage) };
            if r == pid.as_raw() {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(Reaped {
            status: ExitStatus::from_raw(status),
            user: secs(usage.ru_utime),
            system: secs(usage.ru_stime),
            // getrusage(2): in 512-byte blocks whatever the file system's block size
            written: usage.ru_oublock as f64 * 512.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, timeout: Option<Duration>) -> (Execution, String, String) {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let invocation = Invocation {
            command,
            dir: dir.path().to_str().unwrap(),
            stdout: &out,
            stderr: &err,
            timeout,
            sync: true,
            end_group: true,
            env: &[],
        };
        let e = execute(&invocation).unwrap();
        (e, read_raw(&out).unwrap(), read_raw(&err).unwrap())
    }

    /// A command started from its prepared form gets what std's `Command` gives it: the
    /// same variables, in the same order, the invocation's over margin's; and again at
    /// the next start, from the form kept.
    #[test]
    fn a_command_gets_the_environment_std_would_give_it() {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![
            ("MARGIN_TEST_VARIABLE".to_string(), "a b=c".to_string()),
            ("HOME".to_string(), "/elsewhere".to_string()),
        ];
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let invocation = Invocation {
            command: "env",
            dir: dir.path().to_str().unwrap(),
            stdout: &out,
            stderr: &err,
            timeout: None,
            sync: false,
            end_group: true,
            env: &env,
        };
        let by_std = Command::new(&direct_argv("env").unwrap()[0])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir.path())
            .output()
            .unwrap();
        let by_std = String::from_utf8(by_std.stdout).unwrap();
        assert!(by_std.contains("MARGIN_TEST_VARIABLE=a b=c\n"), "{by_std}");
        for _ in 0..2 {
            let e = execute(&invocation).unwrap();
            assert!(e.succeeded(), "{e:?}");
            assert_eq!(read_raw(&out).unwrap(), by_std);
            std::fs::remove_file(&out).unwrap();
        }
    }

    #[test]
    fn output_goes_to_files_and_the_exit_code_is_kept() {
        let (e, out, err) = run("echo hello; echo oops >&2; exit 3", None);
        assert_eq!(e.exit_code, Some(3));
        assert!(!e.succeeded());
        assert_eq!(out, "hello\n");
        assert_eq!(err, "oops\n");
        assert_eq!(e.describe(), "exit code 3");
    }

    #[test]
    fn cpu_time_is_measured() {
        let (e, _, _) = run("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", None);
        assert!(e.succeeded());
        let user = e.user.unwrap();
        assert!(user > 0.01, "user {user}");
        assert!(user <= e.wall.as_secs_f64() * 1.05 + 0.01, "user {user} wall {:?}", e.wall);
    }

    /// Without a pidfd (old kernels, sandboxes), the end is seen by looking every
    /// millisecond: within the limit, and not before it comes.
    #[test]
    fn the_end_is_seen_without_a_pidfd_too() {
        let child = Command::new("sleep").arg("0.2").spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32);
        let start = Instant::now();
        assert!(!reap::ended_by_looking(pid, start + Duration::from_millis(50)).unwrap());
        assert!(start.elapsed() >= Duration::from_millis(50));
        assert!(reap::ended_by_looking(pid, start + Duration::from_secs(5)).unwrap());
        let seen = start.elapsed();
        assert!(seen >= Duration::from_millis(190) && seen < Duration::from_secs(2), "{seen:?}");
        assert!(reap::reap(pid).unwrap().status.success());
        drop(child); // reaped above
    }

    /// A trial's CPU time is its own, not that of other children margin reaps meanwhile
    /// (the ssh clients of other hosts' trials): a busy loop run and reaped in another
    /// thread while a trial sleeps leaves the trial's time near zero.
    #[test]
    fn cpu_time_is_the_trials_alone() {
        let busy = std::thread::spawn(|| {
            let status = Command::new("sh")
                .args(["-c", "sleep 0.1; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
                .status()
                .unwrap();
            assert!(status.success());
        });
        let (e, _, _) = run("sleep 0.3; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", None);
        busy.join().unwrap();
        let (user, system) = (e.user.unwrap(), e.system.unwrap());
        let (own, _, _) = run("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", None);
        let alone = own.user.unwrap() + own.system.unwrap();
        // the trial's own loop, give or take; with the other loop counted it would be twice that
        assert!(user + system < alone * 1.6 + 0.02, "user {user} system {system}; the loop alone {alone}");
        assert!(user + system > alone * 0.5, "user {user} system {system}; the loop alone {alone}");
    }

    /// The `sleep` processes still running with `marker` as their argument.
    fn sleeping(marker: &str) -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .filter(|c| c.contains(marker) && c.starts_with("sleep"))
            .collect()
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let marker = format!("{}.{}", 300 + std::process::id() % 100, std::process::id());
        let start = Instant::now();
        let (e, _, _) =
            run(&format!("sleep {marker} & sleep {marker}; echo never"), Some(Duration::from_millis(300)));
        assert!(e.timed_out);
        assert!(start.elapsed() < Duration::from_secs(5), "the wait did not hang on a grandchild");
        std::thread::sleep(Duration::from_millis(100));
        assert!(sleeping(&marker).is_empty(), "still running: {:?}", sleeping(&marker));
    }

    /// A probe that hangs is killed with everything it started, as a trial is.
    #[test]
    fn a_capture_that_times_out_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("{}.{}", 400 + std::process::id() % 100, std::process::id());
        let start = Instant::now();
        let command = format!("sleep {marker} & sleep {marker}; echo never");
        let got = capture_argv(&["sh", "-c", &command], dir.path(), Duration::from_millis(300));
        assert!(got.as_ref().is_err_and(|e| e.starts_with("no answer within")), "{got:?}");
        assert!(start.elapsed() < Duration::from_secs(5), "the wait did not hang on a grandchild");
        std::thread::sleep(Duration::from_millis(100));
        assert!(sleeping(&marker).is_empty(), "still running: {:?}", sleeping(&marker));
    }

    /// A capture that ends leaves what it started running (ssh's master connection), and
    /// does not wait for it: its output is not a pipe that the background process holds.
    #[test]
    fn a_capture_does_not_wait_for_what_it_leaves_running() {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!("{}.{}", 500 + std::process::id() % 100, std::process::id());
        let start = Instant::now();
        let command = format!("sleep {marker} & echo started");
        let got = capture_argv(&["sh", "-c", &command], dir.path(), Duration::from_secs(5));
        assert_eq!(got.as_deref(), Ok("started"));
        assert!(start.elapsed() < Duration::from_secs(3), "waited for the background sleep");
        // the background shell may not have become `sleep` yet
        let seen = Instant::now();
        while sleeping(&marker).is_empty() && seen.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(sleeping(&marker).len(), 1, "the background sleep was killed");
        for pid in std::fs::read_dir("/proc").unwrap().filter_map(|d| d.ok()?.file_name().into_string().ok())
        {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).replace('\0', " ").starts_with(&format!("sleep {marker}")) {
                let _ = nix::sys::signal::kill(Pid::from_raw(pid.parse().unwrap()), Signal::SIGKILL);
            }
        }
    }

    #[test]
    fn a_capture_says_the_exit_status_and_the_end_of_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let t = Duration::from_secs(5);
        let got =
            capture_argv(&["sh", "-c", "echo out; echo first >&2; echo last >&2; exit 3"], dir.path(), t);
        assert_eq!(got, Err("exit code 3: last".to_string()));
        assert_eq!(capture_argv(&["sh", "-c", "exit 4"], dir.path(), t), Err("exit code 4".to_string()));
        assert_eq!(capture_argv(&["sh", "-c", "kill -9 $$"], dir.path(), t), Err("a signal".to_string()));
        let missing = capture_argv(&["/no/such/program"], dir.path(), t).unwrap_err();
        assert!(missing.starts_with("cannot start /no/such/program: "), "{missing}");
        assert_eq!(capture_argv(&[], dir.path(), t), Err("nothing to run".to_string()));
    }

    #[test]
    fn a_command_killed_by_a_signal_says_which() {
        let (e, out, _) = run("echo before; kill -9 $$", None);
        assert_eq!((e.exit_code, e.signal, e.timed_out), (None, Some(9), false));
        assert_eq!(out, "before\n");
        assert_eq!(e.describe(), "killed by signal 9");
    }

    #[test]
    fn simple_commands_skip_the_shell_and_keep_their_meaning() {
        let argv = direct_argv("true").unwrap();
        assert!(argv[0].ends_with("/true") && argv.len() == 1, "{argv:?}");
        let argv = direct_argv("dd if=/dev/zero of='/tmp/a b' bs=1k count=3").unwrap();
        assert!(argv[0].ends_with("/dd"), "{argv:?}");
        assert_eq!(argv[1..], ["if=/dev/zero", "of=/tmp/a b", "bs=1k", "count=3"]);
        for shell in [
            "echo $HOME",
            "true; false",
            "a > b",
            "ls *",
            "X=1 env",
            "cd /tmp",
            "echo a\\nb",
            "printf x",
            "no-such-program-here",
            "sleep 1 &",
            // relative to the workdir, as the shell takes it
            "./bench.sh 4",
        ] {
            assert_eq!(direct_argv(shell), None, "{shell}");
        }
        let (e, out, _) = run("dd if=/dev/zero bs=3 count=1 status=none", None);
        assert!(e.succeeded());
        assert_eq!(out, "\0\0\0");
        let (e, _, err) = run("ls /no/such/dir", None);
        assert_eq!(e.exit_code, Some(2));
        assert!(err.contains("No such file"), "{err}");
    }

    /// What a trial leaves running in its process group is killed when it ends, and said.
    #[test]
    fn what_a_trial_leaves_running_is_killed() {
        let marker = format!("{}.{}", 40 + std::process::id() % 1000, 3);
        let running = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
                .filter(|c| String::from_utf8_lossy(c).contains(&format!("sleep\0{marker}")))
                .count()
        };
        let (e, out, _) = run(&format!("sleep {marker} & echo started"), None);
        assert!(e.succeeded() && e.left_running, "{e:?}");
        assert_eq!(out, "started\n");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(running(), 0, "the background sleep outlived its trial");
        let (e, _, _) = run("true", None);
        assert!(!e.left_running);
    }

    #[test]
    fn a_relative_program_is_found_in_the_workdir_as_the_shell_would() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("hello.sh");
        std::fs::write(&script, "#!/bin/sh\necho hello \"$1\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (out, err) = (dir.path().join("out"), dir.path().join("err"));
        let invocation = Invocation {
            command: "./hello.sh there",
            dir: dir.path().to_str().unwrap(),
            stdout: &out,
            stderr: &err,
            timeout: None,
            sync: false,
            end_group: true,
            env: &[],
        };
        let e = execute(&invocation).unwrap();
        assert!(e.succeeded(), "{e:?}: {}", read_raw(&err).unwrap());
        assert_eq!(read_raw(&out).unwrap(), "hello there\n");
        // not there: a failed trial (the shell's 127), not an error that stops the run
        let invocation = Invocation { command: "./missing.sh", ..invocation };
        assert_eq!(execute(&invocation).unwrap().exit_code, Some(127));
    }

    /// A script without `#!`, named by its path: the kernel will not run it, and it runs
    /// under `sh` as `posix_spawnp` and the shell run it (spawn.rs starts it again).
    #[test]
    fn a_script_without_a_shebang_runs_under_sh() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("plain.sh");
        std::fs::write(&script, "echo plain \"$1\"\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let command = format!("{} there", script.display());
        assert!(direct_argv(&command).is_some(), "started without sh: {command}");
        let (e, out, err) = run(&command, None);
        assert!(e.succeeded(), "{e:?}: {err}");
        assert_eq!(out, "plain there\n");
    }

    /// Run `test` in a thread of its own that blocks SIGUSR1: a command started from it
    /// must not inherit that (std's `Command` gives none blocked).
    fn in_a_thread_blocking_sigusr1(test: impl FnOnce() + Send + 'static) {
        std::thread::spawn(|| {
            let mut blocked = nix::sys::signal::SigSet::empty();
            blocked.add(Signal::SIGUSR1);
            blocked.thread_block().unwrap();
            test();
        })
        .join()
        .unwrap();
    }

    /// Where the kernel refuses `clone`, `posix_spawnp` starts the command, and it gets
    /// the same as by `clone`: the folder, the environment, no signal blocked (even from
    /// a thread that blocks one), its output in the files.
    #[test]
    fn the_posix_spawn_start_gives_what_the_clone_start_gives() {
        use std::os::fd::AsRawFd;
        in_a_thread_blocking_sigusr1(|| {
            let dir = tempfile::tempdir().unwrap();
            let env = [("MARGIN_TEST_VARIABLE".to_string(), "a b".to_string())];
            let null = std::fs::File::open("/dev/null").unwrap();
            // through the shell, and directly (sh itself may change the mask it passes on)
            let commands: [&[&str]; 2] = [
                &["sh", "-c", "pwd; echo \"$MARGIN_TEST_VARIABLE\""],
                &["grep", "SigBlk", "/proc/self/status"],
            ];
            let mut outputs = Vec::new();
            for by_clone in [true, false] {
                let mut output = String::new();
                for argv in commands {
                    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
                    let prepared = spawn::Prepared::new(&argv, dir.path().to_str().unwrap(), &env).unwrap();
                    let (out, err) = (memory_file("out").unwrap(), memory_file("err").unwrap());
                    let pid = if by_clone {
                        let started = spawn::start(&prepared, &out, &err).unwrap();
                        assert!(started.pidfd.is_some());
                        started.pid
                    } else {
                        spawn::spawned(&prepared, [null.as_raw_fd(), out.as_raw_fd(), err.as_raw_fd()])
                            .unwrap()
                    };
                    assert!(reap::reap(pid).unwrap().status.success());
                    let kept = dir.path().join("kept");
                    persist(out, &kept, false).unwrap();
                    output += &read_raw(&kept).unwrap();
                }
                outputs.push(output);
            }
            let expected = format!("{}\na b\nSigBlk:\t0000000000000000\n", dir.path().display());
            assert_eq!(outputs, [expected.clone(), expected]);
        });
    }

    /// A program gone since it was found fails as the shell says it (127), a failed
    /// trial, not a command that could not start.
    #[test]
    fn a_program_gone_fails_as_the_shell_says() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("gone");
        std::fs::copy(direct_argv("true").unwrap()[0].as_str(), &program).unwrap();
        let command = program.display().to_string();
        assert!(direct_argv(&command).is_some(), "started without sh: {command}");
        assert!(run(&command, None).0.succeeded());
        std::fs::remove_file(&program).unwrap();
        let (e, _, err) = run(&command, None);
        assert_eq!((e.exit_code, e.not_started), (Some(127), None), "{err}");
        assert!(err.contains("not found"), "{err}");
    }

    /// On this machine a command starts by `clone` (spawn.rs), which gives its pidfd; from
    /// a thread that blocks a signal, it gets none blocked, as std's `Command` gives it.
    #[test]
    fn a_start_by_clone_gives_the_pidfd_and_no_signal_blocked() {
        in_a_thread_blocking_sigusr1(|| {
            let dir = tempfile::tempdir().unwrap();
            let (out, err) = (memory_file("out").unwrap(), memory_file("err").unwrap());
            let prepared =
                spawn::Prepared::new(&["true".to_string()], dir.path().to_str().unwrap(), &[]).unwrap();
            let started = spawn::start(&prepared, &out, &err).unwrap();
            assert!(started.pidfd.is_some(), "started by posix_spawnp: no pidfd");
            assert!(
                reap::ended_within(started.pid, started.pidfd.as_ref(), Some(Duration::from_secs(5)))
                    .unwrap()
            );
            assert!(reap::reap(started.pid).unwrap().status.success());
            let (e, out, _) = run("grep SigBlk /proc/self/status", None);
            assert!(e.succeeded(), "{e:?}");
            assert_eq!(out, "SigBlk:\t0000000000000000\n");
        });
    }

    #[test]
    fn capture_trims_and_fails_softly() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(capture("printf '  xen \\n'", dir.path(), Duration::from_secs(5)).as_deref(), Some("xen"));
        assert_eq!(capture("exit 1", dir.path(), Duration::from_secs(5)), None);
        assert_eq!(capture("true", dir.path(), Duration::from_secs(5)), None);
        assert_eq!(capture("sleep 5", dir.path(), Duration::from_millis(100)), None);
    }
}
