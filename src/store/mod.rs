//! The store: `reports/<name>/` — an append-only trial log, session log, raw outputs.
//!
//! Every record is one line written with a single `write` and made durable
//! (`fdatasync`) before the next trial starts. Nothing is ever deleted: `--fresh` moves
//! the logs aside, a torn line (power cut, full disk) is skipped with a warning and kept.
//! While a run writes the trial log, zeros are laid ahead of its last line (see
//! [`Appender::open`]); readers stop at them, and the run gives them back when it ends.
//! What a read parsed is kept beside the log as its columns (`runs.columns`, see
//! `columns`), so that the next read parses only the lines appended since.

mod columns;
mod copy;
mod ids;
mod names;
mod progress;
mod record;
mod secondary;
mod standing;
mod trials;

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::plan::Plan;

pub use copy::{Kept, spec_hash};
pub use names::{Name, Names};
pub use progress::{Board, CellProgress, levels_map, progress, progress_labelled};
pub use record::{
    BOOT_ID, CellProblem, Event, MetricInfo, RawPaths, SCHEMA, SessionRecord, Status, Telemetry, TrialRecord,
};
pub use secondary::SecondaryMetrics;
pub use standing::Standing;
pub use trials::{ByCell, CellIndex, Failed, Needed, Started, Trials};

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: another `margin {command}` (pid {pid}) is writing this experiment's store")]
    Locked { path: PathBuf, pid: String, command: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: not a regular file; a store's logs are plain files (move this one away)")]
    NotAFile { path: PathBuf },
}

impl StoreError {
    fn io(path: &Path, source: io::Error) -> Self {
        StoreError::Io { path: path.to_path_buf(), source }
    }

    /// Whether the disk is full: the run stops with this said plainly.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::Io { source, .. } if source.kind() == io::ErrorKind::StorageFull)
    }
}

/// One experiment's folder.
#[derive(Debug, Clone)]
pub struct Store {
    pub dir: PathBuf,
}

/// Everything the logs hold at one moment, and what was skipped while reading them: a
/// command reads the store once into this and hands it to whatever asks (the outlook, the
/// run, the analysis, the report), so that they all see the same records.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub trials: Trials,
    pub sessions: Vec<SessionRecord>,
    pub warnings: Vec<String>,
}

/// What a run needs of the store before its first trial ([`Store::start_locked`]).
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Each cell's progress, by its index in the plan.
    pub progress: HashMap<usize, CellProgress>,
    /// Records of cells whose commands have changed since (set aside).
    pub set_aside: usize,
    pub sessions: Vec<SessionRecord>,
    pub warnings: Vec<String>,
}

/// Held while a run writes the store; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// An open log, appended to durably.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: File,
    /// Where the next record goes: just past the last line.
    end: u64,
    /// The file's length; from `end` to here, zeros laid down ahead.
    len: u64,
    /// The most bytes of zeros to lay ahead when the room runs out (0: none).
    reserve: u64,
    /// The line being written, kept for the next record: no allocation per trial.
    line: Vec<u8>,
}

impl Store {
    pub fn new(root: &Path, name: &str) -> Self {
        Store { dir: root.join(name) }
    }

    /// The store in this folder, whatever its name (a store folder given on the command line).
    pub fn at(dir: &Path) -> Self {
        Store { dir: dir.to_path_buf() }
    }

    /// What the logs look like from outside: each one's length and modification time.
    /// Any write changes it (a record over the zeros laid ahead keeps the length but not
    /// the time), so a reader can tell that the store changed since it read it.
    pub fn fingerprint(&self) -> Vec<Option<(u64, std::time::SystemTime)>> {
        [self.runs_path(), self.sessions_path()]
            .iter()
            .map(|p| fs::metadata(p).ok().and_then(|m| Some((m.len(), m.modified().ok()?))))
            .collect()
    }

    pub fn runs_path(&self) -> PathBuf {
        self.dir.join("runs.ndjson")
    }

    pub fn sessions_path(&self) -> PathBuf {
        self.dir.join("sessions.ndjson")
    }

    pub fn raw_dir(&self) -> PathBuf {
        self.dir.join("raw")
    }

    /// The raw output files of a trial, relative to the store and absolute.
    pub fn raw_paths(&self, trial: &str) -> (RawPaths, PathBuf, PathBuf) {
        let rel = RawPaths { stdout: format!("raw/{trial}.out"), stderr: format!("raw/{trial}.err") };
        let out = self.dir.join(&rel.stdout);
        let err = self.dir.join(&rel.stderr);
        (rel, out, err)
    }

    /// Create the folders a run writes into.
    pub fn create(&self) -> Result<(), StoreError> {
        fs::create_dir_all(self.raw_dir()).map_err(|e| StoreError::io(&self.raw_dir(), e))
    }

    /// Take the store's lock for `margin COMMAND` (`run`, `import`, `reparse`); a second
    /// writer gets [`StoreError::Locked`] naming the holder and its command.
    pub fn lock(&self, command: &str) -> Result<Lock, StoreError> {
        self.create()?;
        let path = self.dir.join("lock");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let holder = format!("{} {command}", std::process::id());
                file.set_len(0)
                    .and_then(|()| file.write_all(holder.as_bytes()))
                    .map_err(|e| StoreError::io(&path, e))?;
                Ok(Lock { _file: file })
            }
            Err(fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                // "pid command"; a lock of an older margin holds the pid alone
                let mut words = holder.split_whitespace();
                let pid = words.next().unwrap_or("unknown").to_string();
                let command = words.next().unwrap_or("run").to_string();
                Err(StoreError::Locked { path, pid, command })
            }
            Err(fs::TryLockError::Error(e)) => Err(StoreError::io(&path, e)),
        }
    }

    /// The trial log, to add records to, with room laid ahead (a record per trial).
    pub fn trial_appender(&self) -> Result<Appender, StoreError> {
        Appender::open(&self.runs_path(), TRIALS_RESERVE)
    }

    /// The session log, to add records to (a record or two per run).
    pub fn session_appender(&self) -> Result<Appender, StoreError> {
        Appender::open(&self.sessions_path(), 0)
    }

    /// Read both logs. Lines that do not parse (a record torn by a power cut or a full
    /// disk) are skipped with a warning naming the line; everything else is kept.
    ///
    /// While another `margin run` writes the log, a line that starts with the zeros laid
    /// ahead is a record it was writing as this read went by, left for the next read;
    /// otherwise such a line is a record torn by a crash, and said.
    pub fn load(&self) -> Result<Snapshot, StoreError> {
        self.load_as(self.being_written(), Needed::All)
    }

    /// [`Store::load`] for a report: the trial columns a report reads
    /// ([`Trials::keep_report_columns`]), the others (ids but the failed trials', rounds,
    /// units) neither read nor held when the columns kept beside the log cover it (or
    /// nearly: docs/store.md, Reading for a report).
    pub fn load_for_report(&self) -> Result<Snapshot, StoreError> {
        self.load_as(self.being_written(), Needed::Report)
    }

    /// What a run needs of the store before its first trial, read by the run that holds
    /// the lock (nobody else writes): where `plan`'s cells stand, counting only `label`'s
    /// sessions when given, the session log, and what reading the two said. The trials
    /// are read from the columns a cell's progress needs and let go before the run
    /// begins (docs/store.md, Where the cells stand).
    pub fn start_locked(&self, plan: &Plan, label: Option<&str>) -> Result<Start, StoreError> {
        let mut warnings = Vec::new();
        let trials =
            read_trials(&self.runs_path(), false, &mut warnings, KEEP_COLUMNS_AFTER, Needed::Progress)?;
        let sessions = read_log(&self.sessions_path(), false, &mut warnings)?;
        let (progress, set_aside) = progress_labelled(plan, &trials, &sessions, label, true);
        Ok(Start { progress, set_aside, sessions, warnings })
    }

    fn load_as(&self, writing: bool, needed: Needed) -> Result<Snapshot, StoreError> {
        let mut snapshot = Snapshot::default();
        snapshot.trials =
            read_trials(&self.runs_path(), writing, &mut snapshot.warnings, KEEP_COLUMNS_AFTER, needed)?;
        snapshot.sessions = read_log(&self.sessions_path(), writing, &mut snapshot.warnings)?;
        Ok(snapshot)
    }

    /// Where `plan`'s cells stand, the session log, and what was skipped while reading the
    /// two: for `status` and `plan`, which need no more of the trials. Read from
    /// `runs.progress` when the trial log has not changed since it was kept there (not a
    /// byte of the log, nor of its columns, is read then); otherwise from the log, through
    /// its columns, and kept for the next time (src/store/standing.rs).
    pub fn standing(&self, plan: &Plan) -> Result<(Standing, Vec<SessionRecord>, Vec<String>), StoreError> {
        let writing = self.being_written();
        let mut said = Vec::new();
        let sessions = read_log(&self.sessions_path(), writing, &mut said)?;
        let path = self.runs_path();
        if !regular_file(&path)? {
            return Ok((Standing::default(), sessions, said));
        }
        let io = |e| StoreError::io(&path, e);
        let file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let kept = standing::path_for(&path);
        // where the text ends, before the zeros a killed run left: records written over
        // them leave the file's size as it was
        let text = written_end(&file, meta.len()).map_err(io)?;
        let known = if writing { None } else { standing::read(&kept, &file, &meta, text, plan) };
        let standing = match known {
            Some(standing) => standing,
            None => {
                let mut warnings = Vec::new();
                let trials =
                    read_trials(&path, writing, &mut warnings, KEEP_COLUMNS_AFTER, Needed::Progress)?;
                let standing = Standing::of(plan, &trials, warnings);
                // kept only when what was read is the whole of the file first opened
                let same = fs::metadata(&path).is_ok_and(|now| {
                    (now.dev(), now.ino(), now.len()) == (meta.dev(), meta.ino(), meta.len())
                }) && written_end(&file, meta.len()).is_ok_and(|now| now == text);
                if !writing && same && text > 0 {
                    let _ = standing::write(&kept, &file, &meta, text, plan, &standing);
                }
                standing
            }
        };
        let mut warnings = standing.warnings.clone();
        warnings.extend(said);
        Ok((standing, sessions, warnings))
    }

    /// Whether a `margin run` of another process is writing the store now: the lock's
    /// last holder was a run and is a live margin process. (Taking the lock to find out
    /// could make a run that starts at that moment fail.)
    fn being_written(&self) -> bool {
        let Ok(holder) = fs::read_to_string(self.dir.join("lock")) else { return false };
        let mut words = holder.split_whitespace();
        let (Some(pid), command) = (words.next(), words.next().unwrap_or("run")) else { return false };
        command == "run"
            && pid != std::process::id().to_string()
            && fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "margin")
    }

    /// The session log alone, and what was skipped while reading it: for finding which
    /// kept experiment file to read a store with, before there is a plan to load it for.
    pub fn session_records(&self) -> Result<(Vec<SessionRecord>, Vec<String>), StoreError> {
        let mut warnings = Vec::new();
        let sessions = read_log(&self.sessions_path(), false, &mut warnings)?;
        Ok((sessions, warnings))
    }

    /// The trial log as whole records, for the commands that rewrite or extend it
    /// (`reparse`, `import`), and what was skipped while reading it.
    pub fn records(&self) -> Result<(Vec<TrialRecord>, Vec<String>), StoreError> {
        let mut warnings = Vec::new();
        let records = read_log(&self.runs_path(), false, &mut warnings)?;
        Ok((records, warnings))
    }

    /// `--fresh`: move the logs aside as `runs.<stamp>.ndjson` (raw outputs stay).
    pub fn move_aside(&self) -> Result<Vec<PathBuf>, StoreError> {
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
        let mut moved = Vec::new();
        for path in [self.runs_path(), self.sessions_path()] {
            if !path.exists() {
                continue;
            }
            let stem = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let mut target = self.dir.join(format!("{stem}.{stamp}.ndjson"));
            let mut n = 1;
            while target.exists() {
                n += 1;
                target = self.dir.join(format!("{stem}.{stamp}-{n}.ndjson"));
            }
            fs::rename(&path, &target).map_err(|e| StoreError::io(&path, e))?;
            moved.push(target);
        }
        sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        Ok(moved)
    }
}

impl Store {
    /// Replace the trial log atomically (`margin reparse`): the new log is written beside
    /// it and made durable, the old one is moved aside, then the new one takes its name.
    /// Returns where the old log went.
    pub fn rewrite_trials(&self, records: &[TrialRecord]) -> Result<PathBuf, StoreError> {
        let path = self.runs_path();
        let new = self.dir.join("runs.ndjson.new");
        let mut text = Vec::new();
        for r in records {
            serde_json::to_writer(&mut text, r).map_err(|e| StoreError::io(&new, e.into()))?;
            text.push(b'\n');
        }
        let mut file = File::create(&new).map_err(|e| StoreError::io(&new, e))?;
        file.write_all(&text).and_then(|()| file.sync_all()).map_err(|e| StoreError::io(&new, e))?;
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
        let mut aside = self.dir.join(format!("runs.{stamp}.before-reparse.ndjson"));
        let mut n = 1;
        while aside.exists() {
            n += 1;
            aside = self.dir.join(format!("runs.{stamp}-{n}.before-reparse.ndjson"));
        }
        fs::rename(&path, &aside).map_err(|e| StoreError::io(&path, e))?;
        fs::rename(&new, &path).map_err(|e| StoreError::io(&new, e))?;
        sync_dir(&self.dir).map_err(|e| StoreError::io(&self.dir, e))?;
        Ok(aside)
    }
}

/// The most zeros laid ahead of the trial log's last record when it needs room: a trial
/// record is 0.5–1 KiB, so about a thousand trials per reservation.
const TRIALS_RESERVE: u64 = 1 << 20;

/// The columns of the trial log are kept beside it (`runs.columns`) once a read has parsed
/// this many bytes of lines they did not cover (and an eighth of what they did): about
/// 2 000 trial records. A smaller log is parsed in less time than the columns take to write.
const KEEP_COLUMNS_AFTER: u64 = 1 << 20;

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

fn read_log<T: DeserializeOwned + Send>(
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

/// The trial log, column-wise: the columns kept beside it (`runs.columns`, see
/// [`columns`]) for the part they cover, then the lines after it, each block's lines
/// parsed in parallel, a chunk of lines per task, and the chunks appended in order. When
/// the lines parsed here hold at least `min_parsed` bytes and an eighth of what the
/// columns covered, the columns are kept anew, up to the last record read.
///
/// `needed`: the table is only for where the cells stand (`Standing::of`) or for a
/// report, and holds only the columns that needs ([`Needed`]), read alone from
/// `runs.columns` when the lines after them are too few for the columns to be kept anew
/// (the file keeps all the columns, so it is then read whole, and the table has all).
fn read_trials(
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
    let (mut out, start, lines, mut said, partial) = match covered {
        Some(c) => (c.trials, c.end, c.lines, c.warnings, c.needed),
        None => (Trials::default(), 0, 0, Vec::new(), Needed::All),
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
        let mut covered =
            columns::Covered { trials: out, end, lines: line, warnings: said, needed: Needed::All };
        // a convenience: a store on a read-only or full disk is read all the same
        let _ = columns::write(&kept, &file, &meta, &covered);
        covered.warnings.extend(after);
        warnings.extend(covered.warnings.into_iter().map(|(_, w)| w));
        return Ok(covered.trials);
    }
    warnings.extend(said.into_iter().map(|(_, w)| w));
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

impl Appender {
    /// Open a log to add records to. A log whose last line was torn gets a newline first,
    /// so the next record starts on a line of its own and the torn one stays readable as
    /// such. Zeros left past the last line by a run that was killed are written over.
    ///
    /// `reserve`: at most how many bytes of zeros to lay down past the end each time the
    /// log needs more room (0: the file grows with each record). A record written over zeros
    /// already on the disk leaves the file's size alone, so `fdatasync` flushes the data
    /// without an ext4 journal commit. On this project's VM disk a bare loop of write +
    /// `fdatasync` takes 135–150 µs per record that way against 215–255 µs appending,
    /// and 1 000 trials of `true` through `margin run` went from 1.18–1.26 s to
    /// 1.13–1.16 s (six runs each, in turns).
    fn open(path: &Path, reserve: u64) -> Result<Self, StoreError> {
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
fn written_end(file: &File, len: u64) -> io::Result<u64> {
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

/// Whether a log exists; an error when something other than a plain file has its name
/// (a device or a pipe could be read forever, or block the open).
fn regular_file(path: &Path) -> Result<bool, StoreError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(StoreError::NotAFile { path: path.to_path_buf() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// fsync a directory, so a file created in it survives a power cut.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests;
