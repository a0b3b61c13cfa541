//! `runs.columns`: the trial log's columns ([`Trials`]) kept beside it, so that a reader
//! parses only the lines appended since (docs/store.md, "The columns beside the log").
//!
//! Derived, never a second source of truth: the file covers the log's first `end` bytes
//! (whole lines, up to the last one that parsed as a record) and is used only while the
//! log is the same file (device and inode: `reparse` and `--fresh` give the log a new
//! one), at least that long, and the first and last 64 KiB of the covered bytes hash as
//! they did. Anything else — another log, a damaged or truncated file, another version
//! of this format — and the file is ignored: the log is read whole and the file written
//! anew. It is written to a file of its own and renamed into place, so a reader never
//! sees half of one; it is not made durable, since a power cut that damages it costs one
//! full read (its blake3 hashes tell).
//!
//! Layout: the magic, the blake3 hash of the table of contents, the table (the log's
//! device, inode, covered length and lines, the hashes of its ends, and each section's
//! length and blake3 hash), then the sections end to end up to the file's last byte: the
//! first holds what is not a column of numbers (the read's warnings of torn records, the
//! names, the ids that are not UUIDs, each metric's unit, direction and mean, the
//! failures, the parsers' warnings, the lists of secondary names, the tools' flags), each
//! of the others one column of numbers, little-endian. A section is checked against its
//! own hash, so the columns are read on every core, each straight into its vector: the
//! kernel's copy, the hash, and a check of each name and code (a million trials with
//! telemetry, 210 MB: about 0.2 s on two cores under `perf`, where one stream decoded
//! and hashed on one core took 0.3 s).

use std::fs::{self, File, Metadata};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::ids::{self, Ids, OTHER};
use super::names::{Interned, Name, Names};
use super::record::{MetricInfo, Status};
use super::secondary::SecondaryMetrics;
use super::trials::{Failed, Needed, Started, Trials};
use crate::vocab::{Better, MeanKind};

/// What the file starts with; the last digit is the version of the layout below.
const MAGIC: &[u8; 16] = b"margin-columns04";
/// The file's sections: what is not a column of numbers (names, failures, warnings, …),
/// then each column of numbers ([`encode`] has them in order).
const SECTIONS: usize = 19;
/// The table of contents: the log's device, inode, covered length and lines, the hashes
/// of its two ends, and each section's length and blake3 hash.
const TOC: usize = 4 * 8 + 2 * 32 + SECTIONS * (8 + 32);
/// What comes before the sections: the magic, the blake3 hash of the table, the table.
pub(super) const TOP: usize = MAGIC.len() + 32 + TOC;
/// How much of each end of the covered bytes is hashed to tell that the log is the one
/// the columns were read from.
const EDGE: u64 = 64 << 10;

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
}

/// `runs.columns` beside `runs.ndjson`.
pub(super) fn path_for(log: &Path) -> PathBuf {
    log.with_extension("columns")
}

/// The columns kept for `log`, when they are those of its first bytes.
///
/// The file's table of contents is read first; then its sections, each checked against
/// its own blake3 hash, on every core, the numbers read straight into their vectors.
/// `needed` says of the length the columns cover which of them are read ([`Needed`]):
/// for a cell's progress ([`Trials::keep_progress_columns`]) or a report
/// ([`Trials::keep_report_columns`]), the others are left empty, their sections neither
/// read nor checked (but a report's ids, of which the failed trials' are kept).
pub(super) fn read(
    path: &Path,
    log: &File,
    meta: &Metadata,
    needed: impl FnOnce(u64) -> Needed,
) -> Option<Covered> {
    let file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut top = [0u8; TOP];
    file.read_exact_at(&mut top, 0).ok()?;
    let (magic, rest) = top.split_at(MAGIC.len());
    let (sum, toc) = rest.split_at(32);
    if magic != MAGIC || blake3::hash(toc).as_bytes() != sum {
        return None;
    }
    let toc = Toc::decode(toc).ok()?;
    // a line takes a byte at least
    if toc.dev != meta.dev() || toc.ino != meta.ino() || toc.end > meta.len() || toc.lines > toc.end {
        return None;
    }
    if edges(log, toc.end).ok()? != (toc.head, toc.tail) {
        return None;
    }
    // the sections follow the table one after the other, to the file's last byte
    let mut at = TOP as u64;
    let mut sections = [const { Section { at: 0, len: 0, hash: [0; 32] } }; SECTIONS];
    for (section, (len, hash)) in sections.iter_mut().zip(toc.sections) {
        *section = Section { at, len, hash };
        at = at.checked_add(len)?;
    }
    if at != size {
        return None;
    }
    let needed = needed(toc.end);
    let (warnings, trials) = decode(&file, &sections, needed).ok()?;
    let lines = usize::try_from(toc.lines).ok()?;
    let end = toc.end;
    consistent(&trials, needed).then_some(Covered { trials, end, lines, warnings, needed })
}

/// A file derived from the log (`runs.columns`, `runs.progress`) opened for reading past
/// its `magic` and its checksum (returned, to check with [`read_whole`] at the end).
pub(super) fn open_derived(path: &Path, magic: &[u8; 16]) -> Option<(Decoder, [u8; 32])> {
    let mut file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let (mut found, mut sum) = ([0u8; 16], [0u8; 32]);
    file.read_exact(&mut found).ok()?;
    file.read_exact(&mut sum).ok()?;
    if &found != magic {
        return None;
    }
    // the checksum covers everything after it
    let left = size.checked_sub((found.len() + sum.len()) as u64)?;
    Some((Decoder { input: BufReader::with_capacity(1 << 20, Hashing::new(file)), left }, sum))
}

/// Whether `r` was read to its end, and what it read is what was written (`sum`).
pub(super) fn read_whole(mut r: Decoder, sum: &[u8; 32]) -> bool {
    r.left == 0 && r.input.fill_buf_empty().is_ok() && r.input.get_ref().hasher.finalize().as_bytes() == sum
}

/// Keep `covered` as the columns of `log`'s first `covered.end` bytes: written beside,
/// then renamed over the old file. Errors are the caller's to ignore (the columns are a
/// convenience: the next read parses the log instead).
pub(super) fn write(path: &Path, log: &File, meta: &Metadata, covered: &Covered) -> io::Result<()> {
    let (head, tail) = edges(log, covered.end)?;
    replace(path, |file| {
        // the table of contents, written last, comes first
        let mut w = Encoder(BufWriter::with_capacity(1 << 20, Hashing::new(file.try_clone()?)));
        w.bytes(&[0u8; TOP])?;
        cut(&mut w)?;
        let sections = encode(&mut w, covered)?;
        let toc = Toc {
            dev: meta.dev(),
            ino: meta.ino(),
            end: covered.end,
            lines: covered.lines as u64,
            head,
            tail,
            sections,
        };
        let toc = toc.encode();
        let top = [&MAGIC[..], blake3::hash(&toc).as_bytes(), &toc].concat();
        file.write_all_at(&top, 0)
    })
}

/// Writes `path` anew: `body` writes a file of this process's beside it, renamed over it
/// when complete (removed on an error). `body`'s file is open at its start.
fn replace(path: &Path, body: impl FnOnce(File) -> io::Result<()>) -> io::Result<()> {
    let name = path.extension().unwrap_or_default().to_string_lossy();
    let temporary = path.with_extension(format!("{name}.{}.tmp", std::process::id()));
    let written = File::create(&temporary).and_then(body).and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
}

/// Writes a derived file whole: `magic`, the checksum of what follows, and what `body`
/// encodes, into a file of this process's beside `path`, renamed over it when complete.
pub(super) fn write_derived(
    path: &Path,
    magic: &[u8; 16],
    body: impl FnOnce(&mut Encoder) -> io::Result<()>,
) -> io::Result<()> {
    replace(path, |mut file| {
        // the checksum, written last, covers what follows it
        file.write_all(magic)?;
        file.write_all(&[0u8; 32])?;
        let mut w = Encoder(BufWriter::with_capacity(1 << 20, Hashing::new(file.try_clone()?)));
        body(&mut w)?;
        w.0.flush()?;
        let sum = *w.0.get_ref().hasher.finalize().as_bytes();
        file.write_all_at(&sum, magic.len() as u64)
    })
}

/// blake3 of the first and of the last [`EDGE`] bytes of `log`'s first `end`.
pub(super) fn edges(log: &File, end: u64) -> io::Result<([u8; 32], [u8; 32])> {
    let mut buf = vec![0u8; EDGE.min(end) as usize];
    log.read_exact_at(&mut buf, 0)?;
    let head = *blake3::hash(&buf).as_bytes();
    let from = end - buf.len() as u64;
    log.read_exact_at(&mut buf, from)?;
    Ok((head, *blake3::hash(&buf).as_bytes()))
}

/// A file read or written through blake3.
pub(super) struct Hashing {
    file: File,
    pub(super) hasher: blake3::Hasher,
    /// Bytes written through it (since [`cut`]).
    written: u64,
}

impl Hashing {
    pub(super) fn new(file: File) -> Self {
        Hashing { file, hasher: blake3::Hasher::new(), written: 0 }
    }
}

impl Read for Hashing {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

pub(super) trait FillBufEmpty {
    /// `Ok(())` when nothing is left to read, else an error.
    fn fill_buf_empty(&mut self) -> io::Result<()>;
}

impl<R: Read> FillBufEmpty for BufReader<R> {
    fn fill_buf_empty(&mut self) -> io::Result<()> {
        use std::io::BufRead;
        if self.fill_buf()?.is_empty() { Ok(()) } else { Err(bad()) }
    }
}

pub(super) fn bad() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "runs.columns does not hold what it should")
}

/// Little-endian numbers, lengths as u64, text as its length and UTF-8 bytes.
pub(super) struct Encoder(pub(super) BufWriter<Hashing>);

impl Encoder {
    pub(super) fn bytes(&mut self, b: &[u8]) -> io::Result<()> {
        self.0.write_all(b)
    }
    pub(super) fn u8(&mut self, n: u8) -> io::Result<()> {
        self.bytes(&[n])
    }
    pub(super) fn u32(&mut self, n: u32) -> io::Result<()> {
        self.bytes(&n.to_le_bytes())
    }
    pub(super) fn u64(&mut self, n: u64) -> io::Result<()> {
        self.bytes(&n.to_le_bytes())
    }
    pub(super) fn len(&mut self, n: usize) -> io::Result<()> {
        self.u64(n as u64)
    }
    pub(super) fn f64(&mut self, x: f64) -> io::Result<()> {
        self.u64(x.to_bits())
    }
    pub(super) fn text(&mut self, s: &str) -> io::Result<()> {
        self.len(s.len())?;
        self.bytes(s.as_bytes())
    }
    pub(super) fn optional<T>(
        &mut self,
        v: Option<T>,
        mut each: impl FnMut(&mut Self, T) -> io::Result<()>,
    ) -> io::Result<()> {
        match v {
            None => self.u8(0),
            Some(v) => {
                self.u8(1)?;
                each(self, v)
            }
        }
    }
    pub(super) fn list<'t, T: 't>(
        &mut self,
        items: impl IntoIterator<Item = &'t T, IntoIter: ExactSizeIterator>,
        mut each: impl FnMut(&mut Self, &'t T) -> io::Result<()>,
    ) -> io::Result<()> {
        let items = items.into_iter();
        self.len(items.len())?;
        for item in items {
            each(self, item)?;
        }
        Ok(())
    }
    pub(super) fn names(&mut self, names: &[Name]) -> io::Result<()> {
        self.list(names, |w, n| w.u32(n.index() as u32))
    }
}

pub(super) struct Decoder<R = BufReader<Hashing>> {
    pub(super) input: R,
    /// Bytes of the file not read yet: no list is longer than what is left could hold.
    pub(super) left: u64,
}

impl<R: Read> Decoder<R> {
    pub(super) fn bytes(&mut self, b: &mut [u8]) -> io::Result<()> {
        self.left = self.left.checked_sub(b.len() as u64).ok_or_else(bad)?;
        self.input.read_exact(b)
    }
    pub(super) fn array<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.bytes(&mut b)?;
        Ok(b)
    }
    pub(super) fn u8(&mut self) -> io::Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    pub(super) fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub(super) fn u64(&mut self) -> io::Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub(super) fn len(&mut self) -> io::Result<usize> {
        usize::try_from(self.u64()?).map_err(|_| bad())
    }
    pub(super) fn f64(&mut self) -> io::Result<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub(super) fn text(&mut self) -> io::Result<String> {
        let n = self.len()?;
        if n as u64 > self.left {
            return Err(bad());
        }
        let mut b = vec![0u8; n];
        self.bytes(&mut b)?;
        String::from_utf8(b).map_err(|_| bad())
    }
    pub(super) fn flag(&mut self) -> io::Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(bad()),
        }
    }
    pub(super) fn optional<T>(
        &mut self,
        each: impl FnOnce(&mut Self) -> io::Result<T>,
    ) -> io::Result<Option<T>> {
        if self.flag()? { each(self).map(Some) } else { Ok(None) }
    }
    /// A list of fixed-size items any bytes make (numbers, and indices checked after), read
    /// a buffer at a time: a loop with no branch per item, which the compiler vectorises.
    pub(super) fn plain<const N: usize, T>(&mut self, each: impl Fn([u8; N]) -> T) -> io::Result<Vec<T>> {
        let n = self.len()?;
        if n as u64 > self.left / N as u64 {
            return Err(bad());
        }
        let mut out = Vec::with_capacity(n);
        let mut buf = vec![0u8; N * n.min(8192)];
        let mut left = n;
        while left > 0 {
            let piece = &mut buf[..N * left.min(8192)];
            self.bytes(piece)?;
            out.extend(piece.chunks_exact(N).map(|item| each(item.try_into().expect("N bytes"))));
            left -= piece.len() / N;
        }
        Ok(out)
    }
    pub(super) fn list<T>(&mut self, mut each: impl FnMut(&mut Self) -> io::Result<T>) -> io::Result<Vec<T>> {
        let n = self.len()?;
        // every item takes a byte at least: a damaged length is refused when the file could
        // not hold it, and room is made for no more items than a page of bytes could be
        // before they are read (an item may take many times its bytes in memory)
        if n as u64 > self.left {
            return Err(bad());
        }
        let mut out = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            out.push(each(self)?);
        }
        Ok(out)
    }
}

fn status_code(s: Status) -> u8 {
    match s {
        Status::Ok => 0,
        Status::Failed => 1,
        Status::Timeout => 2,
        Status::ParseError => 3,
        Status::Imported => 4,
    }
}

fn status_of(n: u8) -> io::Result<Status> {
    Ok(match n {
        0 => Status::Ok,
        1 => Status::Failed,
        2 => Status::Timeout,
        3 => Status::ParseError,
        4 => Status::Imported,
        _ => return Err(bad()),
    })
}

pub(super) fn mean_code(m: MeanKind) -> u8 {
    match m {
        MeanKind::Arithmetic => 0,
        MeanKind::Harmonic => 1,
    }
}

pub(super) fn mean_of(n: u8) -> io::Result<MeanKind> {
    match n {
        0 => Ok(MeanKind::Arithmetic),
        1 => Ok(MeanKind::Harmonic),
        _ => Err(bad()),
    }
}

fn better_code(b: Better) -> u8 {
    match b {
        Better::Higher => 0,
        Better::Lower => 1,
    }
}

fn better_of(n: u8) -> io::Result<Better> {
    match n {
        0 => Ok(Better::Higher),
        1 => Ok(Better::Lower),
        _ => Err(bad()),
    }
}

/// The table of contents ([`TOC`]).
struct Toc {
    dev: u64,
    ino: u64,
    end: u64,
    lines: u64,
    head: [u8; 32],
    tail: [u8; 32],
    /// Each section's length and blake3 hash, in order.
    sections: [(u64, [u8; 32]); SECTIONS],
}

impl Toc {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(TOC);
        for n in [self.dev, self.ino, self.end, self.lines] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&self.tail);
        for (len, hash) in &self.sections {
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(hash);
        }
        out
    }

    fn decode(bytes: &[u8]) -> io::Result<Toc> {
        let mut r = Decoder { input: bytes, left: bytes.len() as u64 };
        let (dev, ino, end, lines) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let (head, tail) = (r.array()?, r.array()?);
        let mut sections = [(0, [0; 32]); SECTIONS];
        for section in &mut sections {
            *section = (r.u64()?, r.array()?);
        }
        Ok(Toc { dev, ino, end, lines, head, tail, sections })
    }
}

/// Where a section is in the file, and its hash.
struct Section {
    at: u64,
    len: u64,
    hash: [u8; 32],
}

/// The length and hash of what was written since the last cut, flushed.
fn cut(w: &mut Encoder) -> io::Result<(u64, [u8; 32])> {
    w.0.flush()?;
    let h = w.0.get_mut();
    let hash = std::mem::replace(&mut h.hasher, blake3::Hasher::new()).finalize();
    Ok((std::mem::take(&mut h.written), *hash.as_bytes()))
}

/// A column of numbers as a section: each item's little-endian bytes.
fn column<T, const N: usize>(
    w: &mut Encoder,
    items: &[T],
    each: impl Fn(&T) -> [u8; N],
) -> io::Result<(u64, [u8; 32])> {
    for item in items {
        w.bytes(&each(item))?;
    }
    cut(w)
}

/// `covered`'s sections, in order; their lengths and hashes.
fn encode(w: &mut Encoder, covered: &Covered) -> io::Result<[(u64, [u8; 32]); SECTIONS]> {
    let t = &covered.trials;
    w.list(&covered.warnings, |w, (line, text)| {
        w.len(*line)?;
        w.text(text)
    })?;
    w.list(&t.names.0.items, |w, s| w.text(s))?;
    // the ids that are not a UUID, with their trial
    w.list(&t.ids.other, |w, (trial, id)| {
        w.len(*trial)?;
        w.text(id)
    })?;
    let metrics: Vec<(&Name, &Option<MetricInfo>)> = t.metrics.iter().collect();
    w.list(&metrics, |w, (name, info)| {
        w.u32(name.index() as u32)?;
        w.optional(info.as_ref(), |w, i| {
            w.text(&i.unit)?;
            w.u8(better_code(i.better))?;
            w.u8(mean_code(i.mean))
        })
    })?;
    w.list(&t.failed, |w, f| {
        w.len(f.trial)?;
        w.optional(f.exit_code, |w, c| w.u32(c as u32))?;
        w.optional(f.error.as_deref(), |w, s| w.text(s))?;
        w.optional(f.started_at.as_deref(), |w, s| w.text(s))
    })?;
    let warnings: Vec<(&String, &usize)> = t.warnings.iter().collect();
    w.list(&warnings, |w, (text, n)| {
        w.text(text)?;
        w.len(**n)
    })?;
    // the trials' lists of secondary names (each list once)
    w.list(&t.secondary.shapes.items, |w, names| w.names(names))?;
    w.list(&t.flags, |w, (trial, flag)| {
        w.len(*trial)?;
        w.u32(flag.index() as u32)
    })?;
    let name = |n: &Name| (n.index() as u32).to_le_bytes();
    let number = |x: &f64| x.to_bits().to_le_bytes();
    let small = |n: &u32| n.to_le_bytes();
    Ok([
        cut(w)?,
        column(w, &t.cell, name)?,
        column(w, &t.host, name)?,
        column(w, &t.session, name)?,
        column(w, &t.status, |s| [status_code(*s)])?,
        column(w, &t.warmup, |b| [u8::from(*b)])?,
        column(w, &t.repetition, small)?,
        column(w, &t.round, small)?,
        // i64::MIN for none (`Started`'s own)
        column(w, &t.started, |s| s.bits().to_le_bytes())?,
        column(w, &t.wall_time, number)?,
        // a UUID's 16 bytes a trial (the ids that are not one are in the first section)
        column(w, &t.ids.packed, |b| *b)?,
        column(w, &t.row_end, |n| (*n as u64).to_le_bytes())?,
        column(w, &t.metric, name)?,
        column(w, &t.value, number)?,
        column(w, &t.unit, name)?,
        column(w, &t.mean, |m| [mean_code(*m)])?,
        column(w, &t.secondary.shape, small)?,
        column(w, &t.secondary.values, number)?,
        column(w, &t.monitored, name)?,
    ])
}

/// A section read straight into a vector of `T`, when its bytes hash as they should.
/// Its length is within the file's, which was checked: a damaged table cannot ask for
/// more memory than the file could fill.
fn raw<T: bytemuck::Pod>(file: &File, s: &Section) -> io::Result<Vec<T>> {
    let width = size_of::<T>() as u64;
    if !s.len.is_multiple_of(width) {
        return Err(bad());
    }
    let mut out = vec![T::zeroed(); usize::try_from(s.len / width).map_err(|_| bad())?];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    file.read_exact_at(bytes, s.at)?;
    if blake3::hash(bytes).as_bytes() != &s.hash {
        return Err(bad());
    }
    Ok(out)
}

/// The warnings kept with the columns and the columns, from `file`'s `sections`: the
/// first read whole, then the columns of numbers each on its own, on every core.
fn decode(
    file: &File,
    sections: &[Section; SECTIONS],
    needed: Needed,
) -> io::Result<(Vec<(usize, String)>, Trials)> {
    // in [`encode`]'s order
    let [
        first,
        cell_at,
        host_at,
        session_at,
        status_at,
        warmup_at,
        repetition_at,
        round_at,
        started_at,
        wall_time_at,
        ids_at,
        row_end_at,
        metric_at,
        value_at,
        unit_at,
        mean_at,
        shape_at,
        values_at,
        monitored_at,
    ] = sections;
    let first = raw::<u8>(file, first)?;
    let mut r = Decoder { input: &first[..], left: first.len() as u64 };
    let said = r.list(|r| Ok((r.len()?, r.text()?)))?;
    // each name once: a repeated one is a damaged file
    let texts = r.list(|r| Ok(r.text()?.into_boxed_str()))?;
    let names = Names(Interned::from_items(texts).ok_or_else(bad)?);
    let count = names.len();
    let name = move |r: &mut Decoder<&[u8]>| {
        let n = r.u32()? as usize;
        if n < count { Ok(Name::new(n)) } else { Err(bad()) }
    };
    let mut other = r.list(|r| Ok((r.len()?, r.text()?.into_boxed_str())))?;
    let metrics = r.list(|r| {
        let metric = name(r)?;
        let info = r.optional(|r| {
            let unit = r.text()?;
            Ok(MetricInfo { unit, better: better_of(r.u8()?)?, mean: mean_of(r.u8()?)? })
        })?;
        Ok((metric, info))
    })?;
    let failed = r.list(|r| {
        Ok(Failed {
            trial: r.len()?,
            id: None,
            exit_code: r.optional(|r| Ok(r.u32()? as i32))?,
            error: r.optional(Decoder::text)?,
            started_at: r.optional(Decoder::text)?,
        })
    })?;
    let warnings = r.list(|r| Ok((r.text()?, r.len()?)))?.into_iter().collect();
    let shapes = r.list(|r| Ok(r.list(name)?.into_boxed_slice()))?;
    let flags = r.list(|r| Ok((r.len()?, name(r)?)))?;
    if r.left != 0 {
        return Err(bad());
    }
    drop(first);

    // the columns: names checked against the names read, codes against their meanings
    let names_at = |at: &Section| -> io::Result<Vec<Name>> {
        let list = raw::<u32>(file, at)?;
        if list.iter().all(|&n| (u32::from_le(n) as usize) < count) {
            Ok(list.into_iter().map(|n| Name::new(u32::from_le(n) as usize)).collect())
        } else {
            Err(bad())
        }
    };
    let numbers_at = |at: &Section| -> io::Result<Vec<f64>> {
        Ok(raw::<u64>(file, at)?.into_iter().map(|b| f64::from_bits(u64::from_le(b))).collect())
    };
    let small_at = |at: &Section| -> io::Result<Vec<u32>> {
        Ok(raw::<u32>(file, at)?.into_iter().map(u32::from_le).collect())
    };
    let (mut cell, mut host, mut session, mut metric, mut unit, mut monitored) =
        (None, None, None, None, None, None);
    let (mut status, mut warmup, mut mean) = (None, None, None);
    let (mut repetition, mut round, mut shape) = (None, None, None);
    let (mut started, mut wall_time, mut value, mut values) = (None, None, None, None);
    let (mut packed, mut row_end, mut failed_ids) = (None, None, None);
    let mut failed = failed;
    rayon::scope(|scope| {
        // what a cell's progress needs, the largest first
        scope.spawn(|_| value = Some(numbers_at(value_at)));
        scope.spawn(|_| {
            started = Some(
                raw::<u64>(file, started_at)
                    .map(|v| v.into_iter().map(|b| Started::from_bits(u64::from_le(b) as i64)).collect()),
            )
        });
        scope.spawn(|_| wall_time = Some(numbers_at(wall_time_at)));
        scope.spawn(|_| {
            row_end = Some(raw::<u64>(file, row_end_at).map(|v| {
                v.into_iter().map(|b| usize::try_from(u64::from_le(b)).unwrap_or(usize::MAX)).collect()
            }))
        });
        scope.spawn(|_| metric = Some(names_at(metric_at)));
        scope.spawn(|_| cell = Some(names_at(cell_at)));
        scope.spawn(|_| session = Some(names_at(session_at)));
        scope.spawn(|_| repetition = Some(small_at(repetition_at)));
        scope.spawn(|_| status = Some(codes(file, status_at, status_of)));
        scope.spawn(|_| warmup = Some(codes(file, warmup_at, flag_of)));
        scope.spawn(|_| mean = Some(codes(file, mean_at, mean_of)));
        if needed == Needed::Progress {
            return;
        }
        scope.spawn(|_| values = Some(numbers_at(values_at)));
        scope.spawn(|_| host = Some(names_at(host_at)));
        scope.spawn(|_| monitored = Some(names_at(monitored_at)));
        scope.spawn(|_| shape = Some(small_at(shape_at)));
        if needed == Needed::Report {
            // the ids of the failed trials alone (none: the section is not read)
            if !failed.is_empty() {
                scope
                    .spawn(|_| failed_ids = Some(ids_of(file, ids_at, &std::mem::take(&mut other), &failed)));
            }
            return;
        }
        scope.spawn(|_| packed = Some(raw::<[u8; 16]>(file, ids_at)));
        scope.spawn(|_| unit = Some(names_at(unit_at)));
        scope.spawn(|_| round = Some(small_at(round_at)));
    });
    if let Some(ids) = failed_ids {
        let (count, ids) = ids?;
        if Some(count) != cell.as_ref().and_then(|c| c.as_ref().ok()).map(Vec::len) {
            return Err(bad());
        }
        for (f, id) in failed.iter_mut().zip(ids) {
            f.id = Some(id);
        }
    }
    let done = "each column was read in the scope";
    // the columns not read are left empty
    let mut trials = Trials {
        names,
        cell: cell.expect(done)?,
        host: host.unwrap_or(Ok(Vec::new()))?,
        session: session.expect(done)?,
        status: status.expect(done)?,
        warmup: warmup.expect(done)?,
        repetition: repetition.expect(done)?,
        round: round.unwrap_or(Ok(Vec::new()))?,
        started: started.expect(done)?,
        wall_time: wall_time.expect(done)?,
        ids: match packed {
            Some(packed) => Ids::from_parts(packed?, other).ok_or_else(bad)?,
            None => Ids::default(),
        },
        row_end: row_end.expect(done)?,
        metric: metric.expect(done)?,
        value: value.expect(done)?,
        unit: unit.unwrap_or(Ok(Vec::new()))?,
        mean: mean.expect(done)?,
        metrics: metrics.into_iter().collect::<IndexMap<_, _>>(),
        failed,
        warnings,
        secondary: match (shape, values) {
            (Some(shape), Some(values)) => {
                SecondaryMetrics::from_parts(shapes, shape?, values?).ok_or_else(bad)?
            }
            _ => SecondaryMetrics::default(),
        },
        monitored: monitored.unwrap_or(Ok(Vec::new()))?,
        flags,
    };
    // and of what the first section held, what is not needed is let go
    trials.keep(needed);
    Ok((said, trials))
}

/// The ids of the `failed` trials (in log order), from the ids section `at` and the ids
/// that are not a UUID (`other`), and how many trials the section holds: the section
/// read a piece at a time and checked against its hash and against `other` as
/// `Ids::from_parts` checks the whole, without holding it (at 10⁷ trials, 160 MB).
fn ids_of(
    file: &File,
    at: &Section,
    other: &[(usize, Box<str>)],
    failed: &[Failed],
) -> io::Result<(usize, Vec<String>)> {
    ids_in_pieces(file, at, other, failed, 1 << 16)
}

/// [`ids_of`], `slots` ids at a time.
fn ids_in_pieces(
    file: &File,
    at: &Section,
    other: &[(usize, Box<str>)],
    failed: &[Failed],
    slots: usize,
) -> io::Result<(usize, Vec<String>)> {
    if !at.len.is_multiple_of(16) {
        return Err(bad());
    }
    let count = usize::try_from(at.len / 16).map_err(|_| bad())?;
    let mut hasher = blake3::Hasher::new();
    let size = slots.max(1);
    let mut slots = vec![[0u8; 16]; size.min(count)];
    let (mut ids, mut next_failed, mut next_other, mut others) = (Vec::new(), 0, 0, 0);
    let mut first = 0;
    while first < count {
        let these = &mut slots[..size.min(count - first)];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(these);
        file.read_exact_at(bytes, at.at + first as u64 * 16)?;
        hasher.update(bytes);
        for (k, slot) in these.iter().enumerate() {
            if *slot != OTHER {
                continue;
            }
            // each slot that says so has its text, in order
            others += 1;
            match other.get(next_other) {
                Some((t, _)) if *t == first + k => next_other += 1,
                _ => return Err(bad()),
            }
        }
        while let Some(f) = failed.get(next_failed).filter(|f| f.trial < first + these.len()) {
            let slot = these.get(f.trial.checked_sub(first).ok_or_else(bad)?).ok_or_else(bad)?;
            ids.push(ids::text(*slot, f.trial, other).ok_or_else(bad)?.into_owned());
            next_failed += 1;
        }
        first += these.len();
    }
    let whole = others == other.len() && next_failed == failed.len();
    if !whole || hasher.finalize().as_bytes() != &at.hash {
        return Err(bad());
    }
    Ok((count, ids))
}

/// A column of one-byte codes, each read as `each` says.
fn codes<T>(file: &File, at: &Section, each: fn(u8) -> io::Result<T>) -> io::Result<Vec<T>> {
    raw::<u8>(file, at)?.into_iter().map(each).collect()
}

fn flag_of(b: u8) -> io::Result<bool> {
    match b {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(bad()),
    }
}

/// Whether the columns fit together, so that no lookup into them can fail: a file
/// whose hashes matched was written by this code, but a reader never trusts a file
/// that far.
fn consistent(t: &Trials, needed: Needed) -> bool {
    let n = t.len();
    let progress = [t.session.len(), t.status.len(), t.warmup.len(), t.repetition.len(), t.started.len()];
    let report = [t.host.len(), t.monitored.len(), t.secondary.trials()];
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
    same && t.value.len() == rows
        && t.mean.len() == rows
        && t.unit.len() == all(rows)
        && ordered(&t.row_end, rows)
        && t.failed.iter().all(|f| f.trial < n && f.id.is_some() == (needed == Needed::Report))
        && t.flags.iter().all(|(trial, _)| *trial < n)
}

/// Each section's start and length in a file's bytes, by its table (for tests that
/// damage one section).
#[cfg(test)]
pub(super) fn sections_in(bytes: &[u8]) -> Vec<(usize, usize)> {
    let toc = Toc::decode(&bytes[MAGIC.len() + 32..TOP]).expect("a table");
    let mut at = TOP;
    let mut out = Vec::new();
    for (len, _) in toc.sections {
        out.push((at, len as usize));
        at += len as usize;
    }
    out
}

/// The hashes of `bytes`' sections and of its table made again, as if what the bytes
/// hold had been written so: what a reader then refuses, it refuses by its checks of the
/// contents, not by a hash.
#[cfg(test)]
pub(super) fn rehash(bytes: &mut [u8]) {
    let table = MAGIC.len() + 32..TOP;
    let mut toc = Toc::decode(&bytes[table.clone()]).expect("a table");
    for (section, (at, len)) in toc.sections.iter_mut().zip(sections_in(bytes)) {
        section.1 = *blake3::hash(&bytes[at..at + len]).as_bytes();
    }
    let encoded = toc.encode();
    bytes[table].copy_from_slice(&encoded);
    bytes[MAGIC.len()..MAGIC.len() + 32].copy_from_slice(blake3::hash(&encoded).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The failed trials' ids read a piece at a time are those of the whole column, at
    /// every size of piece, UUIDs and other ids alike; a flipped byte, an id out of place
    /// or a failed trial past the column is refused.
    #[test]
    fn the_failed_trials_ids_read_in_pieces_are_the_columns() {
        let mut ids = Ids::default();
        for n in 0..40 {
            match n % 3 {
                0 => ids.push(&format!("not-a-uuid-{n}")),
                _ => ids.push(&uuid::Uuid::now_v7().to_string()),
            }
        }
        let bytes: Vec<u8> = bytemuck::cast_slice(&ids.packed).to_vec();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ids");
        let hashed = |bytes: &[u8]| {
            fs::write(&path, bytes).unwrap();
            let section = Section { at: 0, len: bytes.len() as u64, hash: *blake3::hash(bytes).as_bytes() };
            (File::open(&path).unwrap(), section)
        };
        let failed = |trials: &[usize]| -> Vec<Failed> {
            trials
                .iter()
                .map(|&trial| Failed { trial, id: None, exit_code: None, error: None, started_at: None })
                .collect()
        };
        let (file, section) = hashed(&bytes);
        let these = failed(&[0, 1, 2, 6, 7, 29, 39]);
        let expected: Vec<String> = these.iter().map(|f| ids.get(f.trial).into_owned()).collect();
        for slots in [1, 2, 3, 7, 40, 1000] {
            let read = ids_in_pieces(&file, &section, &ids.other, &these, slots).unwrap();
            assert_eq!(read, (40, expected.clone()), "{slots} at a time");
        }
        // a flipped byte: the hash tells
        let mut flipped = bytes.clone();
        flipped[100] ^= 1;
        let (bad_file, _) = hashed(&flipped);
        assert!(ids_in_pieces(&bad_file, &section, &ids.other, &these, 7).is_err());
        // rehashed: still refused when a text's slot does not say so, or one is missing
        let mut moved = ids.other.clone();
        moved[1].0 += 1;
        let (file, section) = hashed(&bytes);
        assert!(ids_in_pieces(&file, &section, &moved, &these, 7).is_err());
        assert!(ids_in_pieces(&file, &section, &ids.other[1..], &these, 7).is_err());
        // a failed trial past the column, or out of order
        assert!(ids_in_pieces(&file, &section, &ids.other, &failed(&[3, 40]), 7).is_err());
        assert!(ids_in_pieces(&file, &section, &ids.other, &failed(&[9, 3]), 7).is_err());
    }
}
