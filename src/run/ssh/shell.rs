//! The host's long-lived remote shell ([`Shell`]): opened once, one exchange per command.

use std::path::Path;
use std::time::Duration;

use crate::run::process::{self, ShellError};

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
/// the subshell exactly as a one-shot ssh command does it
/// ([`remote_command`](super::marks::remote_command)). It carries no marker of its own
/// (the next run's `end_left` must not end a shell of its own); when margin dies, its
/// stdin closes, and it exits after the command under way (which carries the marker).
pub(super) struct Shell {
    pub(super) child: std::process::Child,
    stdin: std::process::ChildStdin,
    out: std::process::ChildStdout,
    err: std::process::ChildStderr,
}

/// How an exchange with the shell ended.
#[derive(Debug, PartialEq)]
pub(super) enum End {
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
pub(super) struct Exchange {
    pub(super) out: Vec<u8>,
    pub(super) err: Vec<u8>,
    pub(super) end: End,
}

/// The first lines the remote shell runs: its own folder, for the statuses, in memory
/// where the host has a place for it (under /tmp on the disk a benchmark writes, the
/// status written between two trials waited for that disk's writeback: seconds with dirty
/// limits set, and the next trial then started with the cache flushed), removed when the
/// shell exits, also when its client is killed and the hang-up or a broken pipe ends it.
/// A shell killed outright (SIGKILL) leaves its folder: the folder holds the shell's pid,
/// and each new shell first removes the folders whose shell is gone (`kill -0` fails; one
/// of another user's is not removable, and is left).
fn setup_script(id: u64) -> String {
    format!(
        "for B in \"$XDG_RUNTIME_DIR\" /dev/shm \"${{TMPDIR:-/tmp}}\"; do [ -n \"$B\" ] && [ -d \"$B\" ] && [ -w \"$B\" ] && break; done; \
         for D in \"$B\"/margin-shell-*; do [ -f \"$D/pid\" ] && {{ read P < \"$D/pid\"; }} 2>/dev/null && [ -n \"$P\" ] && ! kill -0 \"$P\" 2>/dev/null && rm -rf \"$D\"; done; \
         T=\"$B/margin-shell-{id:016x}\"; unset B D P; mkdir -m 700 \"$T\" && trap 'rm -rf \"$T\"' EXIT && echo $$ > \"$T/pid\" || exit 1; \
         trap 'exit 129' HUP; trap 'exit 141' PIPE; trap 'exit 143' TERM\n"
    )
}

impl Shell {
    /// `ssh … 'exec sh'`, in a process group of its own; ready once it has answered.
    pub(super) fn open(argv: &[&str], local_dir: &Path) -> Result<Shell, ShellError> {
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
            return Err(ShellError::NoPipes);
        };
        let mut shell = Shell { child, stdin, out, err };
        let setup = setup_script(rand::random::<u64>());
        use std::io::Write;
        if shell.stdin.write_all(setup.as_bytes()).is_err() {
            shell.end();
            return Err(ShellError::NotStarted);
        }
        let said = shell.exchange("true", Some(std::time::Instant::now() + SHELL_READY));
        match said.end {
            End::Code(0) => Ok(shell),
            end => {
                let text = String::from_utf8_lossy(&said.err);
                let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                Err(match end {
                    End::TimedOut => ShellError::NoAnswer(SHELL_READY),
                    _ if !last.is_empty() => ShellError::Said(last.to_string()),
                    end => ShellError::Ended(format!("{end:?}")),
                })
            }
        }
    }

    /// Run `script` (one or more lines of sh) in a subshell of the shell, its stdin empty;
    /// what it printed and how it ended. After anything but `End::Code` the shell is gone.
    pub(super) fn exchange(&mut self, script: &str, deadline: Option<std::time::Instant>) -> Exchange {
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
    pub(super) fn is_idle(&mut self) -> bool {
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
    pub(super) fn close(mut self) {
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

#[cfg(test)]
mod tests {
    use super::setup_script;

    /// The setup removes the folders of shells that are gone (a pid no process has), keeps
    /// a live shell's and one without a pid (an older margin's), writes its own pid, and
    /// its folder is gone when it exits.
    #[test]
    fn a_new_shell_removes_the_folders_of_shells_killed_outright() {
        let dir = tempfile::tempdir().unwrap();
        let folder = |name: &str, pid: Option<u32>| {
            let d = dir.path().join(format!("margin-shell-{name}"));
            std::fs::create_dir(&d).unwrap();
            if let Some(pid) = pid {
                std::fs::write(d.join("pid"), format!("{pid}\n")).unwrap();
            }
            d
        };
        let mut gone = std::process::Command::new("true").spawn().unwrap();
        let dead = gone.id();
        gone.wait().unwrap();
        let stale = folder("00000000000000aa", Some(dead));
        let live = folder("00000000000000bb", Some(std::process::id()));
        let old = folder("00000000000000cc", None);
        let script = format!("{}echo \"$T\"; cat \"$T/pid\"; echo $$\n", setup_script(0xdd));
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .env("XDG_RUNTIME_DIR", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let own = dir.path().join("margin-shell-00000000000000dd");
        assert_eq!(lines, [own.to_str().unwrap(), lines[2], lines[2]], "{text}");
        assert!(!stale.exists(), "the folder of a shell that is gone stays");
        assert!(live.exists() && old.exists(), "a live shell's folder, or one without a pid, was removed");
        assert!(!own.exists(), "the shell's own folder outlives it");
    }
}
