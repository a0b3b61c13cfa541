//! Workdirs: each cell's scratch folder for one session, how it is named, where it lives,
//! and the removal of those that killed runs left behind.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::store::{Event, SessionRecord, Store};
use vocab::CellId;

/// The name of a cell's workdir in one session: `<cell id>-<the session id's last 8
/// digits>`. Fresh for each session, so that a kept one (`--keep-workdir`) or one left by
/// a run that was killed is never handed to the next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkdirName(String);

/// Digits of the session id a workdir name ends with.
const SESSION_DIGITS: usize = 8;

impl WorkdirName {
    pub(crate) fn new(cell: CellId, session: &str) -> Self {
        WorkdirName(format!("{cell}-{}", session_tag(session)))
    }

    /// The name `--dry-run` shows: the session it belongs to has no id yet.
    pub(crate) fn placeholder(cell: CellId) -> Self {
        WorkdirName(format!("{cell}-SESSION"))
    }

    /// The workdir of a gang's member (`gang.rs`): `<cell id>@<host>-<session tag>`, so
    /// that members on one machine get one each, and a killed run's are found as any.
    pub(crate) fn member(&self, host: &str) -> Self {
        match self.0.rsplit_once('-') {
            Some((cell, tag)) => WorkdirName(format!("{cell}@{host}-{tag}")),
            None => WorkdirName(format!("{}@{host}", self.0)),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// Where the workdir of this name is on a remote host, relative to its home.
    pub(crate) fn remote(&self, experiment: &str) -> String {
        format!("margin-work/{experiment}/{}", self.0)
    }
}

/// The end of a session id that names its workdirs.
fn session_tag(session: &str) -> &str {
    session.get(session.len().saturating_sub(SESSION_DIGITS)..).unwrap_or(session)
}

/// The session tag a folder name under `work/` ends with, if it is a workdir's name.
fn tag_of(name: &str) -> Option<&str> {
    name.rsplit_once('-').map(|(_, tag)| tag)
}

/// Where this machine's workdirs are: the store's `work/`.
pub(crate) fn local_root(store: &Store) -> PathBuf {
    store.dir.join("work")
}

/// Workdirs on this machine of sessions that started and never ended (a run killed, or
/// stopped by a second Ctrl-C): scratch nobody asked to keep, which no later session
/// would use (each makes its own). Those of runs given `--keep-workdir` are kept, killed
/// or not. Called with the store locked, with the session log read under the lock.
pub(crate) fn remove_stale(store: &Store, sessions: &[SessionRecord]) -> Vec<PathBuf> {
    let work = local_root(store);
    let Ok(entries) = std::fs::read_dir(&work) else { return Vec::new() };
    let ended: HashSet<&str> =
        sessions.iter().filter(|s| s.event == Event::End).map(|s| s.session.as_str()).collect();
    let killed: HashSet<&str> = sessions
        .iter()
        .filter(|s| s.event == Event::Start && s.host == crate::plan::LOCAL_HOST && !s.keep_workdir)
        .filter(|s| !ended.contains(s.session.as_str()))
        .map(|s| session_tag(&s.session))
        .collect();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(tag) = tag_of(&name) else { continue };
        if killed.contains(tag) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    // `work/` itself goes too once empty, as at the end of a cell: a run with nothing left
    // to do after a killed one would otherwise leave it
    let _ = std::fs::remove_dir(&work);
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name a session gives a workdir is the one the removal of stale workdirs reads
    /// back: a change to one side alone would leave killed runs' scratch forever.
    #[test]
    fn a_workdir_name_carries_its_sessions_tag() {
        let session = "0190f3c2-7b1e-7c4a-9d2e-1234abcd5678";
        let name = WorkdirName::new(CellId(0xff), session);
        assert_eq!(name.as_str(), "00000000000000ff-abcd5678");
        assert_eq!(tag_of(name.as_str()), Some(session_tag(session)));
        assert_eq!(name.remote("e"), "margin-work/e/00000000000000ff-abcd5678");
        assert_eq!(WorkdirName::placeholder(CellId(1)).as_str(), "0000000000000001-SESSION");
    }
}
