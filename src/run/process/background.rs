//! Long-lived commands (services): started, left running, stopped with their group.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};

use super::spawn::dies_with_margin;
use super::{Invocation, ProcessGroup, direct_argv, reap};

/// A long-lived command (a service, docs/experiment-file.md): started in a process group
/// of its own like any command, listed for a second Ctrl-C, its output going straight to
/// its raw files as it runs; stopped with its whole group, reaped, and its output made
/// durable. Dropped unstopped (an error, a panic), it is killed.
pub(crate) struct Background {
    group: Option<ProcessGroup>,
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
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "nothing to run"))?;
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
    let group = ProcessGroup::spawn(&mut command)?;
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
