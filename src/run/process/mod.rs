//! Running a process: one shell command at a time, in its own process group, with its
//! output going straight to files, a monotonic wall clock and the CPU time it used.
//!
//! The child gets its own process group so that a timeout can kill everything it started
//! (a `sh -c` grandchild would otherwise survive and keep running), and so that the
//! terminal's Ctrl-C reaches margin alone: the trial under way finishes and is recorded.
//!
//! Every command — a trial, a hook, a probe, a fact, an ssh call — goes through one
//! [`ProcessGroup`]: started with std's `Command` in a process group of its own, registered
//! for a second Ctrl-C, waited for up to its timeout, killed with its whole group when the
//! timeout passes, and reaped with `wait4`, which gives the CPU time of that one child and
//! what it waited for — not of every child margin reaped meanwhile, such as the ssh clients
//! of other hosts' trials. (duct would copy the whole environment into every command, which
//! costs more per trial than the rest of margin's overhead, and its pipes stay open as long
//! as a grandchild holds them.) Output goes to in-memory files, never pipes, so that a
//! grandchild left running cannot block the wait either.

mod background;
mod capture;
mod group;

/// Waiting for one child: until it ends (exactly when, through a pidfd, with or without
/// a limit), then reaping it with its own resource usage. std and nix do not offer
/// `wait4`'s usage or `pidfd_open`: those two calls are in [`spawn`]'s file (re-exported
/// here), the one file of margin allowed such code, each call with the reason it is sound.
mod reap;
mod registry;

/// Starting a command from a form of it built once ([`spawn::PreparedCommand`]): std's
/// `Command` copies margin's whole environment into a new one at every start as soon as one
/// variable is added (the store's marker always is), 15–25 µs a start here, as much as the
/// rest of margin's work between two trials. The command gets what std would
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
mod spawn;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

pub(crate) use background::{Background, start, start_argv};
pub use capture::{CaptureError, ShellError, capture, capture_argv, read_raw, run_argv};
use capture::{memory_file, persist};
use group::ProcessGroup;
pub(crate) use registry::OnAbort;
pub use registry::{aborting, kill_running, watch_signals};

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

/// The most a command may print, stdout and stderr together: its output is held in
/// memory until it ends, so a trial whose output never ends would otherwise take the
/// machine's memory (docs/store.md, Guarantees). Past it, the command is stopped with its
/// process group and fails with the reason; what it printed up to then is kept.
pub const MAX_OUTPUT: u64 = 256 << 20;

/// How often the output of a running command is measured against [`MAX_OUTPUT`].
const OUTPUT_CHECK: Duration = Duration::from_millis(50);

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

/// Keep what margin inherited from its parent beyond stdin, stdout and stderr from every
/// command it runs (close-on-exec): called once, first thing, by the binary. How many
/// descriptors were marked.
pub fn keep_inherited_descriptors() -> std::io::Result<usize> {
    spawn::inherited_close_on_exec()
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
    prepared: &spawn::PreparedCommand,
    invocation: &Invocation<'_>,
    direct: bool,
) -> std::io::Result<Execution> {
    use std::os::unix::process::ExitStatusExt;

    // The output goes to anonymous in-memory files first: most trials of a short command
    // print nothing, and creating two files per trial costs more than running `true`.
    let stdout = memory_file("margin-stdout")?;
    let stderr = memory_file("margin-stderr")?;
    let mut group = match ProcessGroup::start(prepared, &stdout, &stderr) {
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
pub struct Starter(std::rc::Rc<spawn::PreparedCommand>);

impl Starter {
    /// `argv`'s program (a path, or a name on `PATH`), to run in `dir` with `env` added.
    pub fn new(argv: &[String], dir: &str, env: &[(String, String)]) -> std::io::Result<Starter> {
        Ok(Starter(std::rc::Rc::new(spawn::PreparedCommand::new(argv, dir, env)?)))
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
