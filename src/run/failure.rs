//! Where a run can end, a host's session stop, or a cell be given up, each a type: the
//! run's own errors ([`RunError`]: it stops), a host's ([`HostError`]: its cells wait,
//! the other hosts go on), a cell's ([`GaveUp`]: abandoned for the session, the others go
//! on). Their text is what `margin run`, the session log and the report say.

use std::io;
use std::path::PathBuf;

use super::facts::SysrootError;
use super::process::CaptureError;
use crate::parse::extract::ExtractorError;
use crate::store::StoreError;

/// Why a run stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file of the run (a raw output, the telemetry) could not be read or written.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: io::Error },
    /// A trial's command could not be run through its host's executor.
    #[error("cannot run `{command}`: {source}")]
    Command { command: String, source: io::Error },
    /// A gang member's timed command could not be run through its executor.
    #[error("cannot run `{command}` on `{member}`: {source}")]
    MemberCommand { command: String, member: String, source: io::Error },
    /// The private directory for ssh's sockets could not be made.
    #[error("ssh control directory: {0}")]
    ControlDir(#[source] io::Error),
    /// `MARGIN_SYSROOT` is set to something that is not a folder.
    #[error("facts: {0}")]
    Sysroot(#[source] SysrootError),
    /// A metric's extractor in the experiment file does not compile.
    #[error("metric `{metric}`: {source}")]
    Recipe { metric: String, source: ExtractorError },
    /// Processes a killed run left running survived SIGKILL.
    #[error(
        "processes a killed run left running (pid {}): they are still there 10 s after SIGKILL; end \
         them, then run again",
        pids_text(pids)
    )]
    OrphansLeft { pids: Vec<i32> },
    /// A host with a boot recipe that margin cannot reach over ssh.
    #[error("host `{host}`: a host with `boot:` needs `ssh:`")]
    BootWithoutSsh { host: String },
    /// A host with a boot recipe that is the machine margin runs on.
    #[error(
        "host `{host}`: it is the machine margin runs on (the same boot_id): margin never reboots the \
         machine it runs on; run margin on another machine that reaches this one over ssh"
    )]
    BootsItself { host: String },
}

impl RunError {
    pub fn is_disk_full(&self) -> bool {
        match self {
            RunError::Store(e) => e.is_disk_full(),
            RunError::File { source, .. }
            | RunError::Command { source, .. }
            | RunError::MemberCommand { source, .. }
            | RunError::ControlDir(source) => source.kind() == io::ErrorKind::StorageFull,
            RunError::Sysroot(_)
            | RunError::Recipe { .. }
            | RunError::OrphansLeft { .. }
            | RunError::BootWithoutSsh { .. }
            | RunError::BootsItself { .. } => false,
        }
    }

    /// A file of the run that could not be read or written.
    pub(crate) fn file(path: &std::path::Path, source: io::Error) -> Self {
        RunError::File { path: path.to_path_buf(), source }
    }
}

fn pids_text(pids: &[i32]) -> String {
    pids.iter().map(i32::to_string).collect::<Vec<_>>().join(", ")
}

/// Why a host's session stopped: its cells wait for the next run, the other hosts go on.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// It did not answer at the session's start.
    #[error("host `{host}` unreachable: {why}")]
    Unreachable { host: String, why: String },
    /// A cell's workdir could not be made on it (an ssh host: it is the host's fault).
    #[error("host `{host}`: cannot create the workdir: {error}")]
    Workdir { host: String, error: WorkdirError },
    /// A gang's cell's workdirs could not be made on a member that is not this machine.
    #[error("gang `{gang}`: cannot create the workdirs: {error}")]
    GangWorkdirs { gang: String, error: WorkdirError },
    /// The connection dropped under a command (as its executor says it).
    #[error("{0}")]
    Lost(String),
    /// Its boots failed `max_failed` times (`last`: `; the last: …`, or nothing).
    #[error(
        "host `{host}`: {failed} {} failed (`max_failed: {max_failed}`){last}; fix the host and run again",
        if *failed == 1 { "boot" } else { "boots" }
    )]
    BootsFailed { host: String, failed: u32, max_failed: u32, last: String },
}

/// Why a workdir could not be made: on this machine, on an ssh host, or on a gang's member.
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error(transparent)]
    Local(#[from] io::Error),
    #[error(transparent)]
    Host(#[from] CaptureError),
    #[error("member `{member}`: {error}")]
    Member { member: String, error: Box<WorkdirError> },
}

/// Why a cell was given up for the session (abandoned): the other cells go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GaveUp {
    /// Its workdir could not be made on this machine.
    #[error("cannot create the workdir: {0}")]
    Workdir(String),
    /// Its commands did not render.
    #[error("{0}")]
    Render(String),
    /// Its `setup` failed (a gang's: on a member, or the members' commands did not render).
    #[error("{0}")]
    Setup(String),
    /// `max_failures` of its trials failed in the session.
    #[error("{}; the last: {last}", failures_text(*failures))]
    Failures { failures: u32, last: String },
    /// The first cells of the session all failed the same way, `first` their first
    /// failure after `trials` trials: the file is wrong, not the cells (`cell::Streak`).
    #[error("{}", crate::reason::stopped(first, *trials))]
    SameWay { first: String, trials: u32 },
}

fn failures_text(failures: u32) -> String {
    if failures == 1 { "1 failure".to_string() } else { format!("{failures} failures") }
}
