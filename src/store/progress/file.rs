//! `runs.progress`: the cells' [`Progress`] (what the stopping rule weighs, and the counts
//! `margin status` shows), kept beside the trial log so that
//! `status` and `plan` read nothing of the log, nor of its columns, when it has not changed
//! since (docs/store.md, "Where the cells stand").
//!
//! Derived, like `runs.columns`, never a second source of truth: it is used only when the
//! log is the same file (device and inode), its text ends where it did when this was
//! written (the end before any zeros a run laid ahead: a run killed leaves them, and the
//! next writes its records over them without changing the file's size), its first 64 KiB
//! and the last 64 KiB of its text hash as they did, and the plan's cells are the same (the blake3
//! of their ids, in order); its own blake3 checksum covers the rest. A log that has grown
//! by one byte, another plan, a damaged file: ignored, the log is read (through its
//! columns) and the file written anew.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::super::derived::{
    Decoder, Encoder, bad, edges, mean_code, mean_of, open_derived, read_whole, write_derived,
};
use super::{CellProgress, Progress, ProgressByCell};
use crate::plan::Plan;

/// What the file starts with; the last digit is the version of the layout below. (The
/// word is the type's older name, kept: a store's files are read by later versions.)
const MAGIC: &[u8; 16] = b"margin-standing1";

/// `runs.progress` beside `runs.ndjson`.
pub(in crate::store) fn path_for(log: &Path) -> PathBuf {
    log.with_extension("progress")
}

/// The plan's cells, as the file records them: the blake3 of their ids in order.
fn plan_key(plan: &Plan) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    for cell in &plan.cells {
        hasher.update(&cell.id.0.to_le_bytes());
    }
    *hasher.finalize().as_bytes()
}

/// The progress kept for `log` and `plan`, when the log is what it was then, or that
/// and whole lines after it, and where its text ended then: `text` is where it ends now
/// ([`crate::store::append::written_end`]).
pub(in crate::store) fn read(
    path: &Path,
    log: &File,
    meta: &Metadata,
    text: u64,
    plan: &Plan,
) -> Option<(Progress, u64)> {
    let (mut r, sum) = open_derived(path, MAGIC)?;
    let (dev, ino, end) = (r.u64().ok()?, r.u64().ok()?, r.u64().ok()?);
    let (mut head, mut tail, mut key) = ([0u8; 32], [0u8; 32], [0u8; 32]);
    r.bytes(&mut head).ok()?;
    r.bytes(&mut tail).ok()?;
    r.bytes(&mut key).ok()?;
    if dev != meta.dev() || ino != meta.ino() || end > text || key != plan_key(plan) {
        return None;
    }
    // what follows a line cut short is not a line of its own
    let mut last = [0u8];
    if end < text && (end == 0 || log.read_exact_at(&mut last, end - 1).is_err() || last != *b"\n") {
        return None;
    }
    if edges(log, end).ok()? != (head, tail) {
        return None;
    }
    let progress = decode(&mut r, plan.cells.len()).ok()?;
    read_whole(r, &sum).then_some((progress, end))
}

/// Keep `progress` as that of `plan` in `log`'s text, which ends at `text`: written
/// beside, renamed over the old file. Errors are the caller's to ignore.
pub(in crate::store) fn write(
    path: &Path,
    log: &File,
    meta: &Metadata,
    text: u64,
    plan: &Plan,
    progress: &Progress,
) -> io::Result<()> {
    let (head, tail) = edges(log, text)?;
    write_derived(path, MAGIC, |w| {
        for n in [meta.dev(), meta.ino(), text] {
            w.u64(n)?;
        }
        w.bytes(&head)?;
        w.bytes(&tail)?;
        w.bytes(&plan_key(plan))?;
        encode(w, progress)
    })
}

fn encode(w: &mut Encoder, s: &Progress) -> io::Result<()> {
    for n in [s.set_aside, s.measured, s.failed, s.imported] {
        w.len(n)?;
    }
    w.optional(s.last_started, |w, t| w.u64(t as u64))?;
    w.list(&s.warnings, |w, text| w.text(text))?;
    // in the plan's order, so that the same progress is the same bytes
    let mut cells: Vec<(&usize, &CellProgress)> = s.cells.iter().collect();
    cells.sort_by_key(|(i, _)| **i);
    w.list(&cells, |w, (cell, p)| {
        w.len(**cell)?;
        w.u32(p.attempts)?;
        w.u32(p.ok)?;
        w.optional(p.mean_wall, |w, x| w.f64(x))?;
        w.f64(p.wall_sum)?;
        w.u32(p.wall_n)?;
        let values: Vec<(&String, &Vec<f64>)> = p.values.iter().collect();
        w.list(&values, |w, (metric, values)| {
            w.text(metric)?;
            w.list(values.iter(), |w, x| w.f64(*x))
        })?;
        let mut kinds: Vec<_> = p.kinds.iter().collect();
        kinds.sort_by_key(|(metric, _)| *metric);
        w.list(&kinds, |w, (metric, kind)| {
            w.text(metric)?;
            w.u8(mean_code(**kind))
        })
    })
}

fn decode(r: &mut Decoder, cells: usize) -> io::Result<Progress> {
    let (set_aside, measured, failed, imported) = (r.len()?, r.len()?, r.len()?, r.len()?);
    let last_started = r.optional(|r| Ok(r.u64()? as i64))?;
    let warnings = r.list(Decoder::text)?;
    let progress = r.list(|r| {
        let cell = r.len()?;
        if cell >= cells {
            return Err(bad());
        }
        let (attempts, ok) = (r.u32()?, r.u32()?);
        let mean_wall = r.optional(Decoder::f64)?;
        let (wall_sum, wall_n) = (r.f64()?, r.u32()?);
        let values = r.list(|r| Ok((r.text()?, r.plain(|b| f64::from_bits(u64::from_le_bytes(b)))?)))?;
        let kinds = r.list(|r| Ok((r.text()?, mean_of(r.u8()?)?)))?;
        let progress = CellProgress {
            attempts,
            values: values.into_iter().collect::<IndexMap<_, _>>(),
            kinds: kinds.into_iter().collect(),
            ok,
            mean_wall,
            wall_sum,
            wall_n,
        };
        Ok((cell, progress))
    })?;
    let n = progress.len();
    let progress: ProgressByCell = progress.into_iter().collect();
    if progress.len() != n {
        return Err(bad());
    }
    Ok(Progress { cells: progress, set_aside, measured, failed, imported, last_started, warnings })
}
