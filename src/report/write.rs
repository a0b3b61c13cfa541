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

/// The second half: the whole file put in place, atomically.
///
/// Over a file of that name, the two are exchanged (`renameat2`'s `RENAME_EXCHANGE`)
/// and the old one, now under the temporary name, removed. A plain rename over an
/// existing file makes ext4 allocate the new file's blocks then and there, before the
/// rename returns (its `auto_da_alloc`, which keeps a renamed-over file from being empty
/// after a crash), the report's longest single wait (docs/performance.md). A report is made again from the store by `margin
/// report`; the store's own records are written durably before each next trial
/// (docs/store.md). Where the exchange is not supported, or nothing is there yet, a
/// rename.
pub(super) fn publish(partial: &Path, path: &Path) -> Result<(), ReportError> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        if renameat2(AT_FDCWD, partial, AT_FDCWD, path, RenameFlags::RENAME_EXCHANGE).is_ok() {
            // the old file: a report left beside its successor would only cost space
            let _ = fs::remove_file(partial);
            return Ok(());
        }
    }
    fs::rename(partial, path).map_err(|e| ReportError::io(path, e))
}
