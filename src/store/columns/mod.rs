//! `runs.columns/`: the trial log's columns ([`Trials`]) kept beside it as Parquet, so
//! that a reader parses only the lines appended since, and so that pandas, DuckDB, R or
//! Spark read the trials without parsing the log (docs/store.md, "The columns beside the
//! log").
//!
//! Derived, never a second source of truth. The folder holds parts, each the columns of a
//! run of consecutive trials in four Parquet files (`trials/`, `metrics/`, `telemetry/`,
//! `ids/`, written by polars ([`frames`]) and read back ([`tables`])), and `_manifest.json`, which lists the
//! parts in log order with each file's length and blake3 hash, says which bytes of the log
//! they cover, and holds what is not a column (the names, the metrics' descriptions, the
//! failures, the parsers' warnings). The parts are used only while the log is the same
//! file (device and inode: `reparse` and `--fresh` give the log a new one), at least that
//! long, the first and last 64 KiB of the covered bytes hash as they did, and every file
//! hashes as the manifest says; the manifest is checked against its own hash. Anything
//! else — another log, a damaged or truncated file, another version of this format — and
//! the folder is ignored: the log is read whole and the columns written anew.
//!
//! When trials were appended, the lines after the parts become a part of their own (the
//! parts before are not rewritten) and the manifest is written anew beside and renamed
//! into place, so a reader sees the old parts or the new, never half; beyond
//! [`MAX_PARTS`] the parts are written again as one. Files no manifest names are removed
//! when a manifest is written. Nothing is made durable: a power cut that damages the
//! folder costs one full read (the hashes tell).

use std::fs::{self, File, Metadata};
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::derived::{bad, edges, replace};
use super::record::MetricInfo;
use super::trials::{Needed, Trials};

mod frames;
mod tables;

/// The version of the folder's layout (the manifest's `format`).
const FORMAT: u32 = 6;
/// The manifest's name in the folder.
/// (`_` first: a Parquet dataset reader such as pyarrow's passes over it.)
const MANIFEST: &str = "_manifest.json";
/// The most parts a manifest lists: one more and they are written again as one.
pub(super) const MAX_PARTS: usize = 8;

/// The columns of the log's first `end` bytes.
#[derive(Debug)]
pub(super) struct Covered {
    pub trials: Trials,
    /// Where the covered part ends: just past the newline of its last record.
    pub end: u64,
    /// How many lines it holds (the next line is number `lines + 1`).
    pub lines: usize,
    /// What reading it said of its lines (a torn record), with their line numbers.
    pub warnings: Vec<(usize, String)>,
    /// Which columns were read ([`Needed`]).
    pub needed: Needed,
    /// The parts they were read from, which a write of more trials extends.
    pub parts: Parts,
}

/// The parts a manifest lists, in log order.
#[derive(Debug, Clone, Default)]
pub(super) struct Parts(Vec<Part>);

impl Parts {
    /// How many trials they hold.
    fn trials(&self) -> usize {
        self.0.iter().map(|p| p.trials).sum()
    }
}

/// One part: the columns of consecutive trials, in four files.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Part {
    /// How many trials, metric values (rows of `metrics`) and secondary values (rows of
    /// `telemetry`) it holds.
    trials: usize,
    rows: usize,
    values: usize,
    /// Its `trials`, `metrics`, `telemetry` and `ids` files, in that order.
    files: [FileSum; 4],
}

/// A file of a part: its name in the folder, length and blake3 hash (hex).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileSum {
    name: String,
    len: u64,
    blake3: String,
}

/// What tells that the log is the one the parts were read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Identity {
    dev: u64,
    ino: u64,
    /// The bytes the parts cover, and the lines.
    end: u64,
    lines: u64,
    /// blake3 (hex) of the first and of the last 64 KiB of the covered bytes.
    head: String,
    tail: String,
}

/// `_manifest.json`, after the first line (the blake3 hash, hex, of the rest).
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    log: Identity,
    /// Every name the columns hold, in the order of the trial columns' numbers: the
    /// values of every text column (Parquet dictionaries, polars' `Enum`) of every part
    /// are the first names of this list.
    names: Vec<String>,
    parts: Vec<Part>,
    /// What reading the covered lines said of them (torn records): line and text.
    said: Vec<(usize, String)>,
    /// Each metric (its name's number) with its description, in order of first report.
    metrics: Vec<(u32, Option<MetricInfo>)>,
    /// The trials that yielded no metrics.
    failed: Vec<FailedTrial>,
    /// The parsers' warnings, each with how many trials said it.
    warnings: Vec<(String, usize)>,
    /// Each distinct list of secondary names (their numbers), in the trials' `telemetry_shape` order.
    shapes: Vec<Vec<u32>>,
    /// The tools' flags: trial, and the flag's name.
    flags: Vec<(usize, u32)>,
}

#[derive(Debug, Serialize, Deserialize)]
struct FailedTrial {
    trial: usize,
    id: String,
    exit_code: Option<i32>,
    error: Option<String>,
    started_at: Option<String>,
}

/// `runs.columns` beside `runs.ndjson`: a folder.
pub(super) fn path_for(log: &Path) -> PathBuf {
    log.with_extension("columns")
}

/// The columns kept for `log`, when they are those of its first bytes.
///
/// The manifest is read and checked first; then the parts' files, each against its hash,
/// on every core. `needed` says of the length the columns cover which of them are read
/// ([`Needed`]): for a cell's progress ([`Trials::keep_progress_columns`]) or a report
/// ([`Trials::keep_report_columns`]) the others are left empty, their Parquet columns not
/// read (a report's failed trials keep their ids, from the manifest).
pub(super) fn read(
    dir: &Path,
    log: &File,
    meta: &Metadata,
    needed: impl FnOnce(u64) -> Needed,
) -> Option<Covered> {
    let manifest = read_manifest(dir)?;
    let id = &manifest.log;
    // a line takes a byte at least
    if manifest.format != FORMAT
        || id.dev != meta.dev()
        || id.ino != meta.ino()
        || id.end > meta.len()
        || id.lines > id.end
        || manifest.parts.len() > MAX_PARTS
    {
        return None;
    }
    let (head, tail) = edges(log, id.end).ok()?;
    if hex(&head.into()) != id.head || hex(&tail.into()) != id.tail {
        return None;
    }
    let needed = needed(id.end);
    let trials = tables::decode(dir, &manifest, needed).ok()?;
    let lines = usize::try_from(id.lines).ok()?;
    consistent(&trials, needed).then(|| Covered {
        trials,
        end: manifest.log.end,
        lines,
        warnings: manifest.said,
        needed,
        parts: Parts(manifest.parts),
    })
}

/// The manifest in `dir`, when it is whole: its first line the hash of the rest.
fn read_manifest(dir: &Path) -> Option<Manifest> {
    let text = fs::read(dir.join(MANIFEST)).ok()?;
    let at = text.iter().position(|&b| b == b'\n')?;
    let (sum, body) = (&text[..at], &text[at + 1..]);
    if sum != hex(&blake3::hash(body)).as_bytes() {
        return None;
    }
    serde_json::from_slice(body).ok()
}

/// Keep `covered` as the columns of `log`'s first `covered.end` bytes. `before`: the
/// parts `covered`'s first trials were read from, when they were read so; the trials
/// after them become a part of their own, unless that makes more than [`MAX_PARTS`]
/// (then, and with no parts before, all are written as one part). Errors are the caller's
/// to ignore (the columns are a convenience: the next read parses the log instead).
pub(super) fn write(
    dir: &Path,
    log: &File,
    meta: &Metadata,
    covered: &Covered,
    before: &Parts,
) -> io::Result<()> {
    let t = &covered.trials;
    let (head, tail) = edges(log, covered.end)?;
    // the folder of an older margin's single file: derived, made again
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        fs::remove_file(dir)?;
    }
    fs::create_dir_all(dir)?;
    let kept = before.trials();
    let (mut parts, first) = match kept > 0 && kept <= t.len() && before.0.len() < MAX_PARTS {
        true => (before.0.clone(), kept),
        false => (Vec::new(), 0),
    };
    if first < t.len() || parts.is_empty() {
        parts.push(frames::encode(dir, t, first..t.len())?);
    }
    let manifest = Manifest {
        format: FORMAT,
        log: Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            end: covered.end,
            lines: covered.lines as u64,
            head: hex(&head.into()),
            tail: hex(&tail.into()),
        },
        names: t.names.0.items.iter().map(|s| s.to_string()).collect(),
        parts,
        said: covered.warnings.clone(),
        metrics: t.metrics.iter().map(|(n, i)| (n.index() as u32, i.clone())).collect(),
        failed: t
            .failed
            .iter()
            .map(|f| FailedTrial {
                trial: f.trial,
                id: f.id.clone().unwrap_or_else(|| t.id(f.trial).into_owned()),
                exit_code: f.exit_code,
                error: f.error.clone(),
                started_at: f.started_at.clone(),
            })
            .collect(),
        warnings: t.warnings.iter().map(|(w, n)| (w.clone(), *n)).collect(),
        shapes: t
            .secondary
            .shapes
            .items
            .iter()
            .map(|s| s.iter().map(|n| n.index() as u32).collect())
            .collect(),
        flags: t.flags.iter().map(|(trial, f)| (*trial, f.index() as u32)).collect(),
    };
    let body = serde_json::to_vec(&manifest).map_err(io::Error::other)?;
    replace(&dir.join(MANIFEST), |mut file| {
        use std::io::Write;
        file.write_all(hex(&blake3::hash(&body)).as_bytes())?;
        file.write_all(b"\n")?;
        file.write_all(&body)
    })?;
    // the files of parts no longer listed (written again as one, or by a writer that lost
    // the race to the manifest): a reader still on them falls back to the log
    let named: Vec<&str> =
        manifest.parts.iter().flat_map(|p| p.files.iter().map(|f| f.name.as_str())).collect();
    for kind in frames::KINDS {
        for entry in fs::read_dir(dir.join(kind))?.flatten() {
            let name = format!("{kind}/{}", entry.file_name().to_string_lossy());
            if name.ends_with(".parquet") && !named.contains(&name.as_str()) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// A blake3 hash as the manifest writes it: lower-case hex.
fn hex(hash: &blake3::Hash) -> String {
    hash.to_hex().to_string()
}

/// Whether the columns fit together, so that no lookup into them can fail: a folder
/// whose hashes matched was written by this code, but a reader never trusts it that far.
fn consistent(t: &Trials, needed: Needed) -> bool {
    let n = t.len();
    let progress = [t.session.len(), t.status.len(), t.warmup.len(), t.repetition.len(), t.started.len()];
    let report = [t.host.len(), t.monitored.len(), t.position.len(), t.secondary.trials()];
    // the columns not read are empty
    let read = |n: usize| if needed == Needed::Progress { 0 } else { n };
    let all = |n: usize| if needed == Needed::All { n } else { 0 };
    let same = progress.into_iter().chain([t.wall_time.len(), t.row_end.len()]).all(|len| len == n)
        && report.into_iter().all(|len| len == read(n))
        && [t.round.len(), t.ids.len()].into_iter().all(|len| len == all(n));
    let rows = t.metric.len();
    // every row a trial's: the ends in order, the last at the last row
    let ordered = |ends: &[usize], limit: usize| {
        ends.windows(2).all(|w| w[0] <= w[1]) && ends.last().copied().unwrap_or(0) == limit
    };
    let names = t.names.len();
    same && t.value.len() == rows
        && t.mean.len() == rows
        && t.unit.len() == all(rows)
        && ordered(&t.row_end, rows)
        && t.failed.iter().all(|f| f.trial < n && f.id.is_some() == (needed == Needed::Report))
        && t.flags.iter().all(|(trial, f)| *trial < n && f.index() < names)
        && t.metrics.keys().all(|m| m.index() < names)
}

/// The files of a folder, its parts' among them (what a test damages), by name.
#[cfg(test)]
pub(super) fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![dir.join(MANIFEST)];
    for kind in frames::KINDS {
        files.extend(fs::read_dir(dir.join(kind)).unwrap().flatten().map(|e| e.path()));
    }
    files.sort();
    files
}

/// The manifest of `dir` rewritten by `change` with its hash made again, as if it had
/// been written so: what a reader then refuses, it refuses by its checks of the contents.
#[cfg(test)]
pub(super) fn rewrite_manifest(dir: &Path, change: impl FnOnce(&mut serde_json::Value)) {
    let text = fs::read(dir.join(MANIFEST)).unwrap();
    let at = text.iter().position(|&b| b == b'\n').unwrap();
    let mut value: serde_json::Value = serde_json::from_slice(&text[at + 1..]).unwrap();
    change(&mut value);
    let body = serde_json::to_vec(&value).unwrap();
    let out = [hex(&blake3::hash(&body)).as_bytes(), b"\n", &body].concat();
    fs::write(dir.join(MANIFEST), out).unwrap();
}

/// An error for a folder that does not hold what its manifest says.
fn damaged<E>(_: E) -> io::Error {
    bad()
}
