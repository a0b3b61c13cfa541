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

/// Run a program and capture its trimmed stdout; `Err` holds why not (the end of
/// stderr, or the exit status). What it leaves running in its group is left alone (ssh's
/// master connection serves the next calls).
pub fn capture_argv(argv: &[&str], dir: &Path, timeout: Duration) -> Result<String, String> {
    let text = run_argv(argv, dir, timeout, &[])?;
    if text.is_empty() { Err("no output".to_string()) } else { Ok(text) }
}

/// [`capture_argv`] with `env` added to the program's environment, and an empty output
/// a success like any other (a boot's `restart`, which prints nothing when it works).
pub fn run_argv(
    argv: &[&str],
    dir: &Path,
    timeout: Duration,
    env: &[(String, String)],
) -> Result<String, String> {
    use std::io::{Read, Seek, SeekFrom};
    let (program, args) = argv.split_first().ok_or("nothing to run")?;
    let cannot = |e: std::io::Error| format!("cannot start {program}: {e}");
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
    Ok(read(&mut stdout).trim().to_string())
}
