//! A command's output: in-memory files, kept to the raw files, read back; short
//! commands whose stdout is captured (facts, probes).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{MAX_OUTPUT, ProcessGroup};

/// An anonymous file in memory that a child can write to like any file (no pipe: a
/// grandchild left running cannot block the wait).
pub(super) fn memory_file(name: &str) -> std::io::Result<std::fs::File> {
    let fd = nix::sys::memfd::memfd_create(name, nix::sys::memfd::MFdFlags::MFD_CLOEXEC)?;
    Ok(std::fs::File::from(fd))
}

/// Keep what a command printed: copied to `path` (made durable when `sync`) unless it
/// printed nothing — an absent raw file is an empty output. How many bytes were kept (0:
/// no file was created).
pub(super) fn persist(mut memory: std::fs::File, path: &Path, sync: bool) -> std::io::Result<u64> {
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

/// Why a short command gave no output to use. Its callers tell an ssh that lost its
/// connection (a host rebooting under it) from a command that failed by the variant; each
/// says itself as a boot record, a host's failure or a probe shows it.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("nothing to run")]
    NothingToRun,
    #[error("cannot start {program}: {source}")]
    Start { program: String, source: std::io::Error },
    /// Waiting for it failed.
    #[error(transparent)]
    Wait(std::io::Error),
    #[error("no answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
    #[error("it printed more than {} MiB", MAX_OUTPUT >> 20)]
    TooMuch,
    /// It ended with an exit code other than 0 (`None`: killed by a signal), and the last
    /// line of its stderr (empty when it printed none).
    #[error("{}", failed(*code, last))]
    Failed { code: Option<i32>, last: String },
    /// Over a host's long-lived shell (`run::ssh`): the command's exit status did not come
    /// back, and the last line of its stderr.
    #[error("{}", with_last("its exit status was lost", last))]
    StatusLost { last: String },
    /// Over a host's long-lived shell: the shell ended under the command.
    #[error("{}", with_last("the remote shell ended", last))]
    ShellEnded { last: String },
    /// Over a host's long-lived shell: no shell could be started.
    #[error(transparent)]
    Shell(ShellError),
    /// It succeeded and printed nothing, where its output was the point.
    #[error("no output")]
    NoOutput,
}

/// Why a host's long-lived shell (`run::ssh`) could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// ssh could not be started.
    #[error(transparent)]
    Spawn(#[from] std::io::Error),
    #[error("ssh started without its pipes")]
    NoPipes,
    /// Its setup could not be written to it.
    #[error("the remote shell did not start")]
    NotStarted,
    #[error("the remote shell did not answer within {} s", .0.as_secs())]
    NoAnswer(Duration),
    /// It ended before it was ready; the last line of its stderr.
    #[error("{0}")]
    Said(String),
    /// It ended before it was ready, saying nothing; how (`shell::End`).
    #[error("the remote shell did not start ({0})")]
    Ended(String),
}

/// `exit code 3: the last line of stderr`, `a signal`.
fn failed(code: Option<i32>, last: &str) -> String {
    with_last(&code.map_or("a signal".to_string(), |c| format!("exit code {c}")), last)
}

/// How it ended, then the last line of its stderr when there was one.
fn with_last(status: &str, last: &str) -> String {
    if last.is_empty() { status.to_owned() } else { format!("{status}: {last}") }
}

/// Run a program and capture its trimmed stdout; `Err` holds why not (the end of
/// stderr, or the exit status). What it leaves running in its group is left alone (ssh's
/// master connection serves the next calls).
pub fn capture_argv(argv: &[&str], dir: &Path, timeout: Duration) -> Result<String, CaptureError> {
    let text = run_argv(argv, dir, timeout, &[])?;
    if text.is_empty() { Err(CaptureError::NoOutput) } else { Ok(text) }
}

/// [`capture_argv`] with `env` added to the program's environment, and an empty output
/// a success like any other (a boot's `restart`, which prints nothing when it works).
pub fn run_argv(
    argv: &[&str],
    dir: &Path,
    timeout: Duration,
    env: &[(String, String)],
) -> Result<String, CaptureError> {
    use std::io::{Read, Seek, SeekFrom};
    let (program, args) = argv.split_first().ok_or(CaptureError::NothingToRun)?;
    let cannot = |source: std::io::Error| CaptureError::Start { program: (*program).to_owned(), source };
    let mut stdout = memory_file("margin-capture-stdout").map_err(cannot)?;
    let mut stderr = memory_file("margin-capture-stderr").map_err(cannot)?;
    let mut command = Command::new(program);
    command
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout.try_clone().map_err(cannot)?)
        .stderr(stderr.try_clone().map_err(cannot)?);
    let mut group = ProcessGroup::spawn(&mut command).map_err(cannot)?;
    drop(command); // the parent's copies of the output files' descriptors
    let ended = group.wait(Some(timeout), &[&stdout, &stderr]).map_err(CaptureError::Wait)?;
    drop(group);
    if ended.timed_out {
        return Err(CaptureError::NoAnswer(timeout));
    }
    if ended.printed_too_much {
        return Err(CaptureError::TooMuch);
    }
    let read = |file: &mut std::fs::File| {
        let mut bytes = Vec::new();
        let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_end(&mut bytes));
        String::from_utf8_lossy(&bytes).into_owned()
    };
    if !ended.status.success() {
        let err = read(&mut stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(CaptureError::Failed { code: ended.status.code(), last: last.to_owned() });
    }
    Ok(read(&mut stdout).trim().to_string())
}
