use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

pub(super) use super::spawn::{open_pidfd, reap};

/// Wait until `pid` has ended, leaving it unreaped; `false` when `limit` passed first.
/// `pidfd`, when given, is `pid`'s (from its start); else one is opened for the wait.
pub(super) fn ended_within(pid: Pid, pidfd: Option<&OwnedFd>, limit: Option<Duration>) -> io::Result<bool> {
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
