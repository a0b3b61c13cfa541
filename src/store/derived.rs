//! The files derived from the trial log that margin writes in a layout of its own
//! (`runs.progress`, docs/store.md "Where the cells stand"): little-endian numbers, text
//! as its length and bytes, a blake3 checksum of what follows the magic, written beside
//! and renamed into place. Also the log's identity they check: the hashes of its ends.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use vocab::MeanKind;

/// How much of each end of the covered bytes is hashed to tell that the log is the one
/// a derived file was made of.
const EDGE: u64 = 64 << 10;

/// A file derived from the log in this layout (`runs.progress`) opened for reading past
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

/// Writes `path` anew: `body` writes a file of this process's beside it, renamed over it
/// when complete (removed on an error). `body`'s file is open at its start.
pub(super) fn replace(path: &Path, body: impl FnOnce(File) -> io::Result<()>) -> io::Result<()> {
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
    /// Bytes written through it.
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
    io::Error::new(
        io::ErrorKind::InvalidData,
        "a file derived from the trial log does not hold what it should",
    )
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
}

/// Reads what [`Encoder`] wrote.
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
