//! Appending to a log durably: each record one line, written with a single `write` and
//! made durable (`fdatasync`) before the call returns, over zeros laid ahead of it so that
//! the file's size does not change (see [`Appender::open`]); the zeros are given back
//! when the log is closed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::read::regular_file;
use super::{StoreError, TrialRecord, sync_dir};

/// The most zeros laid ahead of the trial log's last record when it needs room: a trial
/// record is 0.5–1 KiB, so about a thousand trials per reservation.
pub(super) const TRIALS_RESERVE: u64 = 1 << 20;

/// An open log, appended to durably.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: File,
    /// Where the next record goes: just past the last line.
    pub(super) end: u64,
    /// The file's length; from `end` to here, zeros laid down ahead.
    pub(super) len: u64,
    /// The most bytes of zeros to lay ahead when the room runs out (0: none).
    reserve: u64,
    /// The line being written, kept for the next record: no allocation per trial.
    line: Vec<u8>,
}

impl Appender {
    /// Open a log to add records to. A log whose last line was torn gets a newline first,
    /// so the next record starts on a line of its own and the torn one stays readable as
    /// such. Zeros left past the last line by a run that was killed are written over.
    ///
    /// `reserve`: at most how many bytes of zeros to lay down past the end each time the
    /// log needs more room (0: the file grows with each record). A record written over zeros
    /// already on the disk leaves the file's size alone, so `fdatasync` flushes the data
    /// without an ext4 journal commit: a third less time a record (docs/performance.md, A
    /// trial).
    pub(super) fn open(path: &Path, reserve: u64) -> Result<Self, StoreError> {
        let existed = regular_file(path)?;
        let io = |e| StoreError::io(path, e);
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut end = written_end(&file, len).map_err(io)?;
        if end > 0 {
            let mut last = [0u8; 1];
            file.read_exact_at(&mut last, end - 1).map_err(io)?;
            if last[0] != b'\n' {
                file.write_all_at(b"\n", end).and_then(|()| file.sync_data()).map_err(io)?;
                end += 1;
            }
        }
        if !existed && let Some(dir) = path.parent() {
            sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        Ok(Appender { path: path.to_path_buf(), file, end, len: len.max(end), reserve, line: Vec::new() })
    }

    /// Add one record as one line, and make it durable before returning.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), StoreError> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let done = serde_json::to_writer(&mut line, record)
            .map_err(|e| StoreError::io(&self.path, e.into()))
            .and_then(|()| self.write_line(&mut line));
        self.line = line;
        done
    }

    /// [`Appender::append`] of a trial's record, its line written by
    /// [`TrialRecord::write_json`] (the same bytes) into the buffer kept for the run.
    pub fn append_trial(&mut self, record: &TrialRecord) -> Result<(), StoreError> {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        record.write_json(&mut line);
        let done = self.write_line(&mut line);
        self.line = line;
        done
    }

    /// Write `line` (a record without its newline, which is added) at the end, durably.
    fn write_line(&mut self, line: &mut Vec<u8>) -> Result<(), StoreError> {
        line.push(b'\n');
        let needed = self.end + line.len() as u64;
        if needed > self.len && self.reserve > 0 {
            // as much room as the log holds already, between 64 KiB and `reserve`: a
            // short run does not lay a megabyte, a long one lays it a thousand trials
            // at a time
            let room = self.end.clamp(self.reserve.min(64 << 10), self.reserve);
            self.lay_zeros(needed + room);
        }
        self.file
            .write_all_at(line, self.end)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| StoreError::io(&self.path, e))?;
        self.end = needed;
        self.len = self.len.max(needed);
        Ok(())
    }

    /// Write zeros from the end of the file up to `target`; they are made durable with
    /// the next record. On a full disk, stop reserving: the records that fit still go in,
    /// and the one that does not gets the error.
    fn lay_zeros(&mut self, target: u64) {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        while self.len < target {
            let n = (target - self.len).min(ZEROS.len() as u64) as usize;
            match self.file.write_at(&ZEROS[..n], self.len) {
                Ok(0) | Err(_) => {
                    self.reserve = 0;
                    return;
                }
                Ok(written) => self.len += written as u64,
            }
        }
    }
}

/// Give the reserve back when the log is closed: the file ends with its last line.
impl Drop for Appender {
    fn drop(&mut self) {
        if self.len > self.end && self.file.set_len(self.end).and_then(|()| self.file.sync_data()).is_ok() {
            self.len = self.end;
        }
    }
}

/// Where a log's text ends: zeros past it are space reserved by a run (see
/// [`Appender::open`]), not records.
pub(super) fn written_end(file: &File, len: u64) -> io::Result<u64> {
    let mut end = len;
    let mut buf = vec![0u8; 64 << 10];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let piece = &mut buf[..(end - start) as usize];
        file.read_exact_at(piece, start)?;
        match piece.iter().rposition(|b| *b != 0) {
            Some(i) => return Ok(start + i as u64 + 1),
            None => end = start,
        }
    }
    Ok(0)
}
