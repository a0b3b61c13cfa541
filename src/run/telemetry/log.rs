//! The sessions' raw telemetry files (`raw/<session>.telemetry`): each trial's block
//! appended, made durable at most once a second, and every file closed at the end of a run.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a session's snapshots may wait in the page cache before an `fdatasync`.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// The sessions' telemetry files open for appending, with when each was last flushed.
/// With each, where its end is (the next block's offset: no `fstat` per trial).
static LOGS: Mutex<Option<HashMap<PathBuf, OpenLog>>> = Mutex::new(None);

/// A session's telemetry file: the handle, its end, when it was last flushed.
type OpenLog = (File, u64, Instant);

/// Append a trial's snapshots to its session's file (created with its folder made
/// durable); where its block starts. The text is written before it is parsed, and made
/// durable by an `fdatasync` at most once a second: each trial of a second or more is
/// durable before its record, and a thousand short trials pay one flush a second rather
/// than a second flush each, which would double what the durable record costs
/// (docs/design.md §10: the last second of snapshots can be lost with the machine).
pub(crate) fn append(path: &Path, text: &str) -> std::io::Result<u64> {
    let mut logs = LOGS.lock().unwrap_or_else(PoisonError::into_inner);
    let logs = logs.get_or_insert_with(HashMap::new);
    let (file, end, flushed) = match logs.entry(path.to_path_buf()) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(v) => {
            let created = !path.exists();
            let file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
            if created {
                file.sync_data()?;
                if let Some(dir) = path.parent() {
                    crate::store::sync_dir(dir)?;
                }
            }
            let end = file.metadata()?.len();
            v.insert((file, end, Instant::now()))
        }
    };
    let offset = *end;
    // a write cut short by a full disk leaves the end unknown: asked again next time
    if let Err(e) = file.write_all(text.as_bytes()) {
        *end = file.metadata().map_or(offset, |m| m.len());
        return Err(e);
    }
    *end += text.len() as u64;
    if flushed.elapsed() >= FLUSH_EVERY {
        file.sync_data()?;
        *flushed = Instant::now();
    }
    Ok(offset)
}

/// Flush and close every session's telemetry file (at the end of a run).
pub(crate) fn close_all() {
    let mut logs = LOGS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(logs) = logs.take() {
        for (_, (file, _, _)) in logs {
            let _ = file.sync_data();
        }
    }
}
