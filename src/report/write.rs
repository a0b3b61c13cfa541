//! A file of the report written whole: under a temporary name of this process's own
//! beside it, then renamed into place, so that a reader never sees half of one.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::ReportError;

/// Writes through a temporary file and a rename, so a reader never sees half a report.
/// The temporary name is this process's own: several `margin report`s of one store at
/// once each rename a whole file of theirs (the last one wins), where one shared name
/// let one rename away another's file ("No such file or directory").
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    write_with(path, |out| out.write_all(bytes))
}

/// [`write_file`] of what `fill` writes, through a buffer.
fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<(), ReportError> {
    publish(&write_partial(path, fill)?, path)
}

/// The first half of [`write_with`]: `path`'s content written under this process's
/// temporary name beside it, which is returned.
pub(super) fn write_partial(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<PathBuf, ReportError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let partial = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let written = fs::File::create(&partial).and_then(|file| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        fill(&mut out)?;
        out.into_inner().map_err(std::io::IntoInnerError::into_error).map(drop)
    });
    // the file the reader asked for is the one named; the half-written one goes
    written.map_err(|e| {
        let _ = fs::remove_file(&partial);
        ReportError::io(path, e)
    })?;
    Ok(partial)
}

/// The second half: the whole file renamed into place.
pub(super) fn publish(partial: &Path, path: &Path) -> Result<(), ReportError> {
    fs::rename(partial, path).map_err(|e| ReportError::io(path, e))
}
