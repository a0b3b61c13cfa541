//! A process group: the one way margin starts, times out, kills and reaps a process.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use super::registry::Running;
use super::{MAX_OUTPUT, OUTPUT_CHECK, reap, spawn};

/// A command started in a process group of its own (its pid is the group's id), listed
/// in [`RUNNING`](super::registry::RUNNING) until dropped: the one way margin starts,
/// times out, kills and reaps a process.
pub(super) struct ProcessGroup {
    pub(super) pgid: Pid,
    /// A descriptor that becomes readable when the process ends, when its start gave one
    /// ([`spawn::start`]'s `clone`); else [`reap::ended_within`] opens one each time.
    pub(super) pidfd: Option<std::os::fd::OwnedFd>,
    /// Kept unwaited: [`ProcessGroup::wait`] reaps it itself, with its resource usage (none
    /// for a command started by [`spawn::start`]).
    _child: Option<std::process::Child>,
    _running: Running,
    start: Instant,
}

/// How a group's first process ended.
pub(super) struct Ended {
    pub(super) status: std::process::ExitStatus,
    /// Whether the timeout passed first, and the group was killed.
    pub(super) timed_out: bool,
    pub(super) wall: Duration,
    /// CPU time of the process and everything it waited for, in seconds.
    pub(super) user: f64,
    pub(super) system: f64,
    /// Bytes written, `ru_oublock` × 512.
    pub(super) written: f64,
    /// It printed more than [`MAX_OUTPUT`], and the whole group was killed.
    pub(super) printed_too_much: bool,
}

impl ProcessGroup {
    /// Start `command` in a new process group: a timeout then kills everything it started,
    /// and the terminal's Ctrl-C reaches margin alone.
    pub(super) fn spawn(command: &mut Command) -> std::io::Result<Self> {
        command.process_group(0);
        let start = Instant::now();
        let child = command.spawn()?;
        let pgid = Pid::from_raw(child.id() as i32);
        Ok(ProcessGroup {
            pgid,
            pidfd: None,
            _child: Some(child),
            _running: Running::new(pgid.as_raw()),
            start,
        })
    }

    /// [`ProcessGroup::spawn`] of a prepared command (`spawn.rs`'s way: no environment copied
    /// per start), its stdout and stderr going to the two files, stdin empty.
    pub(super) fn start(
        prepared: &spawn::PreparedCommand,
        stdout: &std::fs::File,
        stderr: &std::fs::File,
    ) -> std::io::Result<Self> {
        let start = Instant::now();
        let started = spawn::start(prepared, stdout, stderr)?;
        let pgid = started.pid;
        Ok(ProcessGroup {
            pgid,
            pidfd: started.pidfd,
            _child: None,
            _running: Running::new(pgid.as_raw()),
            start,
        })
    }

    /// Wait for the process to end, or until `timeout` has passed or its `outputs`
    /// together hold more than [`MAX_OUTPUT`], and the whole group is killed; reap it. What
    /// it started may still run in the group afterwards (a hook's monitor, ssh's master
    /// connection), unless it was killed.
    pub(super) fn wait(
        &mut self,
        timeout: Option<Duration>,
        outputs: &[&std::fs::File],
    ) -> std::io::Result<Ended> {
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
    pub(super) fn kill(&self) -> bool {
        killpg(self.pgid, Signal::SIGKILL).is_ok()
    }
}
