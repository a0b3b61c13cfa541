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
//! full read (its blake3 checksum tells).

use std::fs::{self, File, Metadata};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::ids::Ids;
use super::names::{Interned, Name, Names};
use super::record::{MetricInfo, Status};
use super::secondary::SecondaryMetrics;
use super::trials::{Failed, Started, Trials};
use crate::vocab::{Better, MeanKind};

/// What the file starts with; the last digit is the version of the layout below.
const MAGIC: &[u8; 16] = b"margin-columns03";
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
}

/// `runs.columns` beside `runs.ndjson`.
pub(super) fn path_for(log: &Path) -> PathBuf {
    log.with_extension("columns")
}

/// The columns kept for `log`, when they are those of its first bytes.
pub(super) fn read(path: &Path, log: &File, meta: &Metadata) -> Option<Covered> {
    let (mut r, sum) = open_derived(path, MAGIC)?;
    let (dev, ino, end, lines) = (r.u64().ok()?, r.u64().ok()?, r.u64().ok()?, r.u64().ok()?);
    let (mut head, mut tail) = ([0u8; 32], [0u8; 32]);
    r.bytes(&mut head).ok()?;
    r.bytes(&mut tail).ok()?;
    if dev != meta.dev() || ino != meta.ino() || end > meta.len() {
        return None;
    }
    if edges(log, end).ok()? != (head, tail) {
        return None;
    }
    let warnings = r.list(|r| Ok((r.len()?, r.text()?))).ok()?;
    let trials = decode(&mut r).ok()?;
    if !read_whole(r, &sum) {
        return None;
    }
    let lines = usize::try_from(lines).ok()?;
    consistent(&trials).then_some(Covered { trials, end, lines, warnings })
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
    write_derived(path, MAGIC, |w| {
        for n in [meta.dev(), meta.ino(), covered.end, covered.lines as u64] {
            w.u64(n)?;
        }
        w.bytes(&head)?;
        w.bytes(&tail)?;
        w.list(&covered.warnings, |w, (line, text)| {
            w.len(*line)?;
            w.text(text)
        })?;
        encode(w, &covered.trials)
    })
}

/// Writes a derived file whole: `magic`, the checksum of what follows, and what `body`
/// encodes, into a file of this process's beside `path`, renamed over it when complete.
pub(super) fn write_derived(
    path: &Path,
    magic: &[u8; 16],
    body: impl FnOnce(&mut Encoder) -> io::Result<()>,
) -> io::Result<()> {
    let name = path.extension().unwrap_or_default().to_string_lossy();
    let temporary = path.with_extension(format!("{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = File::create(&temporary)?;
        // the checksum, written last, covers what follows it
        file.write_all(magic)?;
        file.write_all(&[0u8; 32])?;
        let mut w = Encoder(BufWriter::with_capacity(1 << 20, Hashing::new(file.try_clone()?)));
        body(&mut w)?;
        w.0.flush()?;
        let sum = *w.0.get_ref().hasher.finalize().as_bytes();
        file.write_all_at(&sum, magic.len() as u64)
    })()
    .and_then(|()| fs::rename(&temporary, path));
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written
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
}

impl Hashing {
    pub(super) fn new(file: File) -> Self {
        Hashing { file, hasher: blake3::Hasher::new() }
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

pub(super) struct Decoder {
    pub(super) input: BufReader<Hashing>,
    /// Bytes of the file not read yet: no list is longer than what is left could hold.
    pub(super) left: u64,
}

impl Decoder {
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
    /// A list of fixed-size items, read a buffer at a time rather than an item at a time
    /// (a million trials' columns are tens of millions of numbers).
    pub(super) fn fixed<const N: usize, T>(
        &mut self,
        each: impl Fn([u8; N]) -> io::Result<T>,
    ) -> io::Result<Vec<T>> {
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
            for item in piece.chunks_exact(N) {
                let mut b = [0u8; N];
                b.copy_from_slice(item);
                out.push(each(b)?);
            }
            left -= piece.len() / N;
        }
        Ok(out)
    }
    /// [`Decoder::fixed`] for items any bytes make (numbers, and indices checked after):
    /// a loop with no branch per item, which the compiler vectorises.
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
        // every item takes a byte at least: a damaged length cannot ask for more memory
        // than the file could fill
        if n as u64 > self.left {
            return Err(bad());
        }
        let mut out = Vec::with_capacity(n);
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

fn encode(w: &mut Encoder, t: &Trials) -> io::Result<()> {
    w.list(&t.names.0.items, |w, s| w.text(s))?;
    w.names(&t.cell)?;
    w.names(&t.host)?;
    w.names(&t.session)?;
    w.list(&t.status, |w, s| w.u8(status_code(*s)))?;
    w.list(&t.warmup, |w, b| w.u8(u8::from(*b)))?;
    w.list(&t.repetition, |w, n| w.u32(*n))?;
    w.list(&t.round, |w, n| w.u32(*n))?;
    // eight bytes each, i64::MIN for none (`Started`'s own)
    w.list(&t.started, |w, s| w.u64(s.bits() as u64))?;
    w.list(&t.wall_time, |w, x| w.f64(*x))?;
    // a UUID's 16 bytes a trial, then the ids that are not one, with their trial
    w.list(&t.ids.packed, |w, b| w.bytes(b))?;
    w.list(&t.ids.other, |w, (trial, id)| {
        w.len(*trial)?;
        w.text(id)
    })?;
    w.list(&t.row_end, |w, n| w.len(*n))?;
    w.names(&t.metric)?;
    w.list(&t.value, |w, x| w.f64(*x))?;
    w.names(&t.unit)?;
    w.list(&t.mean, |w, m| w.u8(mean_code(*m)))?;
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
    // the trials' lists of names, each trial's list, the values
    w.list(&t.secondary.shapes.items, |w, names| w.names(names))?;
    w.list(&t.secondary.shape, |w, s| w.u32(*s))?;
    w.list(&t.secondary.values, |w, v| w.f64(*v))?;
    w.names(&t.monitored)?;
    w.list(&t.flags, |w, (trial, flag)| {
        w.len(*trial)?;
        w.u32(flag.index() as u32)
    })
}

fn decode(r: &mut Decoder) -> io::Result<Trials> {
    // each name once: a repeated one is a damaged file
    let texts = r.list(|r| Ok(r.text()?.into_boxed_str()))?;
    let mut t = Trials { names: Names(Interned::from_items(texts).ok_or_else(bad)?), ..Trials::default() };
    let names = t.names.len();
    let name = move |r: &mut Decoder| {
        let n = u32::from_le_bytes(r.array()?) as usize;
        if n < names { Ok(Name::new(n)) } else { Err(bad()) }
    };
    // lists of names: each read as it is, then all checked at once
    let index = move |r: &mut Decoder| {
        let list = r.plain(|b: [u8; 4]| Name::new(u32::from_le_bytes(b) as usize))?;
        if list.iter().all(|n| n.index() < names) { Ok(list) } else { Err(bad()) }
    };
    let number = |b: [u8; 8]| f64::from_bits(u64::from_le_bytes(b));
    // too large for this machine: past any end, which `consistent` refuses
    let length = |b: [u8; 8]| usize::try_from(u64::from_le_bytes(b)).unwrap_or(usize::MAX);
    t.cell = index(r)?;
    t.host = index(r)?;
    t.session = index(r)?;
    t.status = r.fixed(|[b]: [u8; 1]| status_of(b))?;
    t.warmup = r.fixed(|[b]: [u8; 1]| match b {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(bad()),
    })?;
    t.repetition = r.plain(u32::from_le_bytes)?;
    t.round = r.plain(u32::from_le_bytes)?;
    t.started = r.plain(|b| Started::from_bits(i64::from_le_bytes(b)))?;
    t.wall_time = r.plain(number)?;
    let packed = r.plain(|b: [u8; 16]| b)?;
    let other = r.list(|r| Ok((r.len()?, r.text()?.into_boxed_str())))?;
    t.ids = Ids::from_parts(packed, other).ok_or_else(bad)?;
    t.row_end = r.plain(length)?;
    t.metric = index(r)?;
    t.value = r.plain(number)?;
    t.unit = index(r)?;
    t.mean = r.fixed(|[b]: [u8; 1]| mean_of(b))?;
    let metrics = r.list(|r| {
        let metric = name(r)?;
        let info = r.optional(|r| {
            let unit = r.text()?;
            Ok(MetricInfo { unit, better: better_of(r.u8()?)?, mean: mean_of(r.u8()?)? })
        })?;
        Ok((metric, info))
    })?;
    t.metrics = metrics.into_iter().collect::<IndexMap<_, _>>();
    t.failed = r.list(|r| {
        Ok(Failed {
            trial: r.len()?,
            exit_code: r.optional(|r| Ok(r.u32()? as i32))?,
            error: r.optional(Decoder::text)?,
            started_at: r.optional(Decoder::text)?,
        })
    })?;
    t.warnings = r.list(|r| Ok((r.text()?, r.len()?)))?.into_iter().collect();
    let shapes = r.list(|r| Ok(index(r)?.into_boxed_slice()))?;
    let shape = r.plain(u32::from_le_bytes)?;
    let values = r.plain(number)?;
    t.secondary = SecondaryMetrics::from_parts(shapes, shape, values).ok_or_else(bad)?;
    t.monitored = index(r)?;
    t.flags = r.list(|r| Ok((r.len()?, name(r)?)))?;
    Ok(t)
}

/// Whether the columns fit together, so that no lookup into them can fail: a file
/// that passed its checksum was written by this code, but a reader never trusts a file
/// that far.
fn consistent(t: &Trials) -> bool {
    let n = t.len();
    let same = [t.host.len(), t.session.len(), t.status.len(), t.warmup.len(), t.repetition.len()]
        .into_iter()
        .chain([t.round.len(), t.started.len(), t.wall_time.len(), t.ids.len(), t.row_end.len()])
        .chain([t.monitored.len()])
        .all(|len| len == n);
    let rows = t.metric.len();
    let ordered = |ends: &[usize], limit: usize| {
        ends.windows(2).all(|w| w[0] <= w[1]) && ends.last().is_none_or(|&e| e <= limit)
    };
    same && [t.value.len(), t.unit.len(), t.mean.len()].iter().all(|&len| len == rows)
        && ordered(&t.row_end, rows)
        && t.failed.iter().all(|f| f.trial < n)
        && t.secondary.trials() == n
        && t.flags.iter().all(|(trial, _)| *trial < n)
}
