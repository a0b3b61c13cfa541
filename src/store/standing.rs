//! `runs.progress`: where each cell stands ([`Standing`]: the progress the stopping rule
//! weighs, and the counts `margin status` shows), kept beside the trial log so that
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

use std::collections::HashMap;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::derived::{
    Decoder, Encoder, bad, edges, mean_code, mean_of, open_derived, read_whole, write_derived,
};
use super::progress::{CellProgress, progress};
use super::record::Status;
use super::trials::Trials;
use crate::plan::Plan;

/// What the file starts with; the last digit is the version of the layout below.
const MAGIC: &[u8; 16] = b"margin-standing1";

/// Where the cells of a plan stand, from the whole trial log: what `margin status` and
/// `margin plan` need of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Standing {
    /// The progress of the cells that have records, by index into [`Plan::cells`]
    /// ([`progress`]).
    pub progress: HashMap<usize, CellProgress>,
    /// Records of cells the plan no longer has.
    pub set_aside: usize,
    /// Measurements (not warm-ups), failed trials and imported ones, of every cell.
    pub measured: usize,
    pub failed: usize,
    pub imported: usize,
    /// When the last trial started, µs since the epoch.
    pub last_started: Option<i64>,
    /// What reading the trial log said of its lines (a torn record).
    pub warnings: Vec<String>,
}

impl Standing {
    /// The standing of `plan`'s cells in `trials`, with the warnings reading them gave.
    pub fn of(plan: &Plan, trials: &Trials, warnings: Vec<String>) -> Standing {
        let (progress, set_aside) = progress(plan, trials);
        let mut standing = Standing { progress, set_aside, warnings, ..Standing::default() };
        standing.count(trials);
        standing
    }

    /// This standing extended by the records after those it was made of (`tail`), as
    /// [`Standing::of`] all of them would be.
    pub(super) fn extend(&mut self, plan: &Plan, tail: &Trials) {
        super::progress::extend(&mut self.progress, &mut self.set_aside, plan, tail);
        self.count(tail);
    }

    /// Adds the measurements, failures and imports of `trials`, and their latest start.
    fn count(&mut self, trials: &Trials) {
        self.measured +=
            (0..trials.len()).filter(|&t| trials.status[t].is_measurement() && !trials.warmup[t]).count();
        self.failed += trials.failed.len();
        self.imported += trials.status.iter().filter(|&&s| s == Status::Imported).count();
        self.last_started = self.last_started.max(trials.started.iter().filter_map(|s| s.get()).max());
    }
}

/// `runs.progress` beside `runs.ndjson`.
pub(super) fn path_for(log: &Path) -> PathBuf {
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

/// The standing kept for `log` and `plan`, when the log is what it was then, or that
/// and whole lines after it, and where its text ended then: `text` is where it ends now
/// ([`super::written_end`]).
pub(super) fn read(
    path: &Path,
    log: &File,
    meta: &Metadata,
    text: u64,
    plan: &Plan,
) -> Option<(Standing, u64)> {
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
    let standing = decode(&mut r, plan.cells.len()).ok()?;
    read_whole(r, &sum).then_some((standing, end))
}

/// Keep `standing` as that of `plan` in `log`'s text, which ends at `text`: written
/// beside, renamed over the old file. Errors are the caller's to ignore.
pub(super) fn write(
    path: &Path,
    log: &File,
    meta: &Metadata,
    text: u64,
    plan: &Plan,
    standing: &Standing,
) -> io::Result<()> {
    let (head, tail) = edges(log, text)?;
    write_derived(path, MAGIC, |w| {
        for n in [meta.dev(), meta.ino(), text] {
            w.u64(n)?;
        }
        w.bytes(&head)?;
        w.bytes(&tail)?;
        w.bytes(&plan_key(plan))?;
        encode(w, standing)
    })
}

fn encode(w: &mut Encoder, s: &Standing) -> io::Result<()> {
    for n in [s.set_aside, s.measured, s.failed, s.imported] {
        w.len(n)?;
    }
    w.optional(s.last_started, |w, t| w.u64(t as u64))?;
    w.list(&s.warnings, |w, text| w.text(text))?;
    // in the plan's order, so that the same standing is the same bytes
    let mut cells: Vec<(&usize, &CellProgress)> = s.progress.iter().collect();
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

fn decode(r: &mut Decoder, cells: usize) -> io::Result<Standing> {
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
    let progress: HashMap<usize, CellProgress> = progress.into_iter().collect();
    if progress.len() != n {
        return Err(bad());
    }
    Ok(Standing { progress, set_aside, measured, failed, imported, last_started, warnings })
}
