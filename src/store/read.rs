//! Reading the logs: a block of lines at a time, parsed in parallel; the trial log
//! column-wise, from the columns kept beside it (`runs.columns/`) and the lines after them.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use rayon::prelude::*;
use serde::de::DeserializeOwned;

use super::columns;
use super::{Needed, StoreError, Trials};

/// The columns of the trial log are kept beside it (`runs.columns/`) once a read has parsed
/// this many bytes of lines they did not cover (and an eighth of what they did): any, so
/// that every store's trials are there for pandas or DuckDB after its first report. The
/// lines after the columns become a part of their own: a few are a small part.
pub(super) const KEEP_COLUMNS_AFTER: u64 = 0;

/// The log is read and parsed a block of about this many bytes at a time: the lines of a
/// block in parallel, and never the whole file at once (a million trials are most of a
/// gigabyte of JSON).
const BLOCK: u64 = 16 << 20;

/// Hand each block of `path`'s lines, the number of its first line and the offset of its
/// first byte to `each`. An absent log has no lines.
fn for_each_block(path: &Path, each: impl FnMut(&[&[u8]], usize, u64)) -> Result<(), StoreError> {
    if !regular_file(path)? {
        return Ok(());
    }
    let file = File::open(path).map_err(|e| StoreError::io(path, e))?;
    for_each_block_from(path, &file, 0, 1, each)
}

/// [`for_each_block`] of an open log from byte `start`, the beginning of line `first`.
fn for_each_block_from(
    path: &Path,
    mut file: &File,
    start: u64,
    mut first: usize,
    mut each: impl FnMut(&[&[u8]], usize, u64),
) -> Result<(), StoreError> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(start)).map_err(|e| StoreError::io(path, e))?;
    let mut reader = BufReader::new(file);
    let mut block = Vec::new();
    let mut offset = start;
    loop {
        block.clear();
        // A block ends at the end of a line, so that no record is cut in two.
        (&mut reader)
            .take(BLOCK)
            .read_to_end(&mut block)
            .and_then(|_| reader.read_until(b'\n', &mut block))
            .map_err(|e| StoreError::io(path, e))?;
        let read = block.len() as u64;
        // Zeros at the end are room a run laid ahead of its records, not text; the log
        // ends there (what a run writes meanwhile is for the next read).
        let room = block.last() == Some(&0);
        if room {
            block.truncate(block.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1));
        }
        if block.is_empty() {
            return Ok(());
        }
        let lines: Vec<&[u8]> = block.split(|b| *b == b'\n').collect();
        each(&lines, first, offset);
        if room {
            return Ok(());
        }
        first += lines.len() - 1;
        offset += read;
    }
}

/// Nothing to read: white space, or — while a run writes the log — a line that starts in
/// the room it lays ahead: a record it was writing as this read went by.
fn blank(line: &[u8], writing: bool) -> bool {
    (writing && line.first() == Some(&0)) || line.iter().all(u8::is_ascii_whitespace)
}

fn torn(path: &Path, line: usize, e: &serde_json::Error) -> String {
    format!(
        "{}:{line}: skipped a record that does not parse (torn by a crash or a full disk?): {e}",
        path.display()
    )
}

pub(super) fn read_log<T: DeserializeOwned + Send>(
    path: &Path,
    writing: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    for_each_block(path, |lines, first, _| {
        let parsed: Vec<Option<serde_json::Result<T>>> = lines
            .par_iter()
            .map(|line| (!blank(line, writing)).then(|| serde_json::from_slice(line)))
            .collect();
        for (i, record) in parsed.into_iter().enumerate() {
            match record {
                None => {}
                Some(Ok(record)) => out.push(record),
                Some(Err(e)) => warnings.push(torn(path, first + i, &e)),
            }
        }
    })?;
    Ok(out)
}

/// The trial log, column-wise: the columns kept beside it (`runs.columns/`, see
/// [`columns`]) for the part they cover, then the lines after it, each block's lines
/// parsed in parallel, a chunk of lines per task, and the chunks appended in order. When
/// the lines parsed here hold at least `min_parsed` bytes and an eighth of what the
/// columns covered, they are kept too, up to the last record read: a part of their own.
///
/// `needed`: the table is only for where the cells stand (`Progress::of`) or for a
/// report, and holds only the columns that needs ([`Needed`]), read alone from
/// `runs.columns/` when the lines after them are too few for the columns to be kept
/// (when they are, all the columns are read, and the table has all).
pub(super) fn read_trials(
    path: &Path,
    writing: bool,
    warnings: &mut Vec<String>,
    min_parsed: u64,
    needed: Needed,
) -> Result<Trials, StoreError> {
    if !regular_file(path)? {
        return Ok(Trials::default());
    }
    let io = |e| StoreError::io(path, e);
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let kept = columns::path_for(path);
    // the lines after the columns, at most (the zeros laid ahead are counted too)
    let partial = |end: u64| match meta.len() - end < min_parsed.max(end / 8) {
        true => needed,
        false => Needed::All,
    };
    let covered = columns::read(&kept, &file, &meta, partial);
    let (mut out, start, lines, mut said, partial, parts) = match covered {
        Some(c) => (c.trials, c.end, c.lines, c.warnings, c.needed, c.parts),
        None => (Trials::default(), 0, 0, Vec::new(), Needed::All, columns::Parts::default()),
    };
    // the end of the last record the columns may cover, its line, and whether a newline
    // ends it; while a run writes, a line skipped (being written as this read went by)
    // stops them, so that a later read gets it, and records read past it (`beyond`) keep
    // them from being written this time: they hold only what they cover
    let mut last: Option<(u64, usize, bool)> = None;
    let (mut stopped, mut beyond, mut cut) = (false, false, false);
    for_each_block_from(path, &file, start, lines + 1, |lines, first, offset| {
        let chunk = lines.len().div_ceil(4 * rayon::current_num_threads()).max(1);
        let parsed: Vec<Chunk> = lines
            .par_chunks(chunk)
            .enumerate()
            .map(|(c, lines)| {
                let mut out = Chunk::default();
                for (i, line) in lines.iter().enumerate() {
                    let n = first + c * chunk + i;
                    if blank(line, writing) {
                        // the zeros laid ahead: what a read finds past them was written
                        // after it went by, and is left for the next read, so that every
                        // read is the table of a prefix of the records
                        if writing && !blank(line, false) {
                            out.skipped = true;
                            out.cut = true;
                            break;
                        }
                        continue;
                    }
                    match out.trials.push_json(line) {
                        Ok(()) if !out.skipped => out.last_record = Some(c * chunk + i),
                        Ok(()) => out.past = true,
                        Err(e) => {
                            out.torn.push((n, torn(path, n, &e)));
                            out.skipped |= writing;
                            // a record seen half written over those zeros: the same
                            if writing && line.contains(&0) {
                                out.cut = true;
                                break;
                            }
                        }
                    }
                }
                out
            })
            .collect();
        let mut last_record = None;
        for mut c in parsed {
            // the lines appended to the columns needed: theirs alone
            c.trials.keep(partial);
            if cut {
                // past a record being written: left for the next read
                beyond |= !c.trials.is_empty();
                continue;
            }
            cut = c.cut;
            beyond |= c.past;
            if stopped {
                beyond |= !c.trials.is_empty();
            } else {
                last_record = c.last_record.or(last_record);
                stopped = c.skipped;
            }
            out.append(c.trials);
            said.extend(c.torn);
        }
        if let Some(i) = last_record {
            let end = offset + lines[..=i].iter().map(|l| l.len() as u64 + 1).sum::<u64>();
            last = Some((end, first + i, i + 1 < lines.len()));
        }
    })?;
    // no columns written from a table that lacks some
    if let Some((end, line, true)) = last
        && partial == Needed::All
        && !beyond
        && end - start >= min_parsed.max(start / 8)
    {
        // the warnings of the lines the columns cover go with them (they are in line order)
        let after = said.split_off(said.iter().take_while(|(l, _)| *l <= line).count());
        let mut covered = columns::Covered {
            trials: out,
            end,
            lines: line,
            warnings: said,
            needed: Needed::All,
            parts: columns::Parts::default(),
        };
        // a convenience: a store on a read-only or full disk is read all the same; the
        // parts read stay, the lines after them become one more
        let _ = columns::write(&kept, &file, &meta, &covered, &parts);
        covered.warnings.extend(after);
        warnings.extend(covered.warnings.into_iter().map(|(_, w)| w));
        return Ok(covered.trials);
    }
    warnings.extend(said.into_iter().map(|(_, w)| w));
    Ok(out)
}

/// The records of the log `file` from byte `start`, the start of a line, to the end of
/// its text, when each of its lines parses (a torn line: none).
pub(super) fn read_tail(path: &Path, file: &File, start: u64) -> Result<Option<Trials>, StoreError> {
    let mut out = Some(Trials::default());
    for_each_block_from(path, file, start, 1, |lines, _, _| {
        let Some(trials) = out.as_mut() else { return };
        let chunk = lines.len().div_ceil(4 * rayon::current_num_threads()).max(1);
        let parsed: Vec<Option<Trials>> = lines
            .par_chunks(chunk)
            .map(|lines| {
                let mut chunk = Trials::default();
                for line in lines.iter().filter(|line| !blank(line, false)) {
                    chunk.push_json(line).ok()?;
                }
                Some(chunk)
            })
            .collect();
        match parsed.into_iter().collect::<Option<Vec<Trials>>>() {
            Some(chunks) => chunks.into_iter().for_each(|chunk| trials.append(chunk)),
            None => out = None,
        }
    })?;
    Ok(out)
}

/// What a task made of a chunk of the log's lines.
#[derive(Default)]
struct Chunk {
    trials: Trials,
    /// The torn lines: their numbers, and what to say of them.
    torn: Vec<(usize, String)>,
    /// The last record before the first line skipped while a run writes (an index into
    /// the block's lines), and whether there was such a line.
    last_record: Option<usize>,
    skipped: bool,
    /// A record after that line.
    past: bool,
    /// The chunk stopped at a record being written: the records after it, here and in
    /// the chunks after, were written after the read went by them.
    cut: bool,
}

/// Whether a log exists; an error when something other than a plain file has its name
/// (a device or a pipe could be read forever, or block the open).
pub(super) fn regular_file(path: &Path) -> Result<bool, StoreError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(StoreError::NotAFile { path: path.to_path_buf() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
