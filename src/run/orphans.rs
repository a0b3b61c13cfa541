//! Commands a killed run left running: every command margin starts on this machine
//! carries its store in the environment ([`MARKER`]), so the next run of that store finds
//! what is still running of them, ends it with its whole process group, and waits for it
//! to be gone before the first trial (docs/store.md, Guarantees: one trial at a time per
//! machine, also after kill -9). A `kill -9` of margin does not reach its children: a
//! trial under way would otherwise run on beside the resumed run's first trial, and a
//! hook still writing into a workdir would keep it from being removed.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The environment variable naming the store a command was started for.
pub(crate) const MARKER: &str = "MARGIN_TRIAL_STORE";

/// The environment variable naming the store a command on an ssh host was started for,
/// and from which machine (`Executor::end_left` finds them there): a variable of its own,
/// so that this machine's sweep never takes a host's commands for its own, even when the
/// host is this machine (sshd on 127.0.0.1).
pub(crate) const REMOTE_MARKER: &str = "MARGIN_REMOTE_STORE";

/// [`REMOTE_MARKER`]'s value: `<this machine's hostname>:<the store's absolute path>`.
pub(crate) fn remote_marker_value(store: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    format!("{}:{}", host.trim(), marker_value(store))
}

/// How long the processes get to be gone after SIGKILL (they are normally gone in
/// microseconds; a process in uninterruptible I/O may take longer).
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// The marker's value for `store`: its absolute path.
pub(crate) fn marker_value(store: &Path) -> String {
    std::fs::canonicalize(store).unwrap_or_else(|_| store.to_path_buf()).to_string_lossy().into_owned()
}

/// A process found running for the store: its pid, process group and command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Orphan {
    pub(crate) pid: i32,
    pub(crate) pgid: i32,
    pub(crate) command: String,
}

/// The processes on this machine whose environment names `store`, margin itself aside.
pub(crate) fn find(store: &Path) -> Vec<Orphan> {
    let wanted = format!("{MARKER}={}", marker_value(store)).into_bytes();
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        // unreadable (another user's process, or gone meanwhile): not one of ours
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|var| var == wanted.as_slice()) {
            continue;
        }
        let Some((state, pgid)) = state_and_group(pid) else { continue };
        if state == 'Z' {
            continue; // already ended, waiting to be reaped by init
        }
        let command = std::fs::read(entry.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim_end().to_string())
            .unwrap_or_default();
        out.push(Orphan { pid, pgid, command });
    }
    out.sort_by_key(|o| o.pid);
    out
}

/// A process's state letter and process group, from `/proc/PID/stat` (fields 3 and 5;
/// the command name in field 2 may hold spaces and parentheses, so after its last `)`).
fn state_and_group(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

/// Ends every process left running for `store`, each with its process group, and waits
/// until none is left; what it ended. `Err` names those still there after the wait.
pub(crate) fn end(store: &Path) -> Result<Vec<Orphan>, Vec<Orphan>> {
    let found = find(store);
    let start = Instant::now();
    let mut left = found.clone();
    // A process that is exec'ing shows an empty environment for a moment, so once some
    // were found, one empty look is not enough: none is left when two looks 5 ms apart
    // find none. (A run with nothing left over, the usual case, looks once.)
    let mut empty_looks = if found.is_empty() { 1 } else { 0 };
    loop {
        empty_looks = if left.is_empty() { empty_looks + 1 } else { 0 };
        if empty_looks >= 2 {
            return Ok(found);
        }
        if start.elapsed() > GONE_WITHIN {
            return Err(left);
        }
        for orphan in &left {
            // the group (a shell and what it started), and the process if it left it
            let _ = killpg(Pid::from_raw(orphan.pgid), Signal::SIGKILL);
            let _ = nix::sys::signal::kill(Pid::from_raw(orphan.pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
        left = find(store);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real process started with the marker of a store is found, ended with the
    /// process it started, and not found again; one with another store's is left alone.
    #[test]
    fn ends_the_processes_of_its_own_store_only() {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::create_dir_all(&theirs).unwrap();
        let start = |store: &Path| {
            std::process::Command::new("sh")
                .args(["-c", "sleep 30 & sleep 30; wait"])
                .env(MARKER, marker_value(store))
                .process_group(0)
                .spawn()
                .unwrap()
        };
        let (mut a, mut b) = (start(&ours), start(&theirs));
        // the shell and its two sleeps carry the marker. Wait until both sleeps have
        // exec'd: while a child execs, its environment reads empty for a moment, so a
        // count taken then may miss it (CI saw 2 of 3 once, the count read again after
        // the wait had seen 3).
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut found = find(&ours);
        while (found.len() < 3 || found.iter().filter(|o| o.command == "sleep 30").count() < 2)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
            found = find(&ours);
        }
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|o| o.pgid == a.id() as i32), "{found:?}");
        assert!(found.iter().any(|o| o.command == "sleep 30"), "{found:?}");
        let ended = end(&ours).unwrap();
        assert_eq!(ended.len(), 3);
        let _ = a.wait();
        assert!(find(&ours).is_empty());
        assert_eq!(find(&theirs).len(), 3, "another store's processes are not touched");
        assert!(b.try_wait().unwrap().is_none());
        end(&theirs).unwrap();
        let _ = b.wait();
    }
}
