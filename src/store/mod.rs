//! The store: `reports/<name>/` — an append-only trial log, session log, raw outputs.
//!
//! Every record is one line written with a single `write` and made durable
//! (`fdatasync`) before the next trial starts. Nothing is ever deleted: `--fresh` moves
//! the logs aside, a torn line (power cut, full disk) is skipped with a warning and kept.
//! While a run writes the trial log, zeros are laid ahead of its last line (see
//! [`Appender::open`]); readers stop at them, and the run gives them back when it ends.
//! What a read parsed is kept beside the log as its columns (`runs.columns/`, Parquet: see
//! `columns`), so that the next read parses only the lines appended since.

mod append;
mod bisects;
mod boots;
mod columns;
mod copy;
mod derived;
mod ids;
mod line;
mod names;
mod progress;
mod read;
mod record;
mod secondary;
mod trials;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::plan::Plan;

use self::append::{TRIALS_RESERVE, written_end};
use self::read::{KEEP_COLUMNS_AFTER, read_log, read_tail, read_trials, regular_file};

pub use append::Appender;
pub use bisects::BisectRecord;
pub use boots::{BootEvent, BootRecord};
pub use copy::{Kept, spec_hash};
pub use names::{Name, Names};
pub use progress::{CellProgress, Progress, ProgressByCell, levels_map, progress, progress_labelled};
pub use record::{
    BOOT_ID, CellProblem, Event, MetricInfo, ProblemKind, RawPaths, SCHEMA, SessionRecord, Status, Telemetry,
    TrialRecord,
};
pub use secondary::SecondaryMetrics;
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
    pub progress: ProgressByCell,
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
    /// Without a label, that is where the cells stand ([`Store::progress`]): read from
    /// `runs.progress` and the records after it, and kept, so that a `status` after the
    /// run reads only the run's records.
    pub fn start_locked(&self, plan: &Plan, label: Option<&str>) -> Result<Start, StoreError> {
        if label.is_none() {
            let (progress, sessions, warnings) = self.progress(plan)?;
            let Progress { cells: progress, set_aside, .. } = progress;
            return Ok(Start { progress, set_aside, sessions, warnings });
        }
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
    /// its columns, and kept for the next time (src/store/progress/file.rs).
    pub fn progress(&self, plan: &Plan) -> Result<(Progress, Vec<SessionRecord>, Vec<String>), StoreError> {
        let writing = self.being_written();
        let mut said = Vec::new();
        let sessions = read_log(&self.sessions_path(), writing, &mut said)?;
        let path = self.runs_path();
        if !regular_file(&path)? {
            return Ok((Progress::default(), sessions, said));
        }
        let io = |e| StoreError::io(&path, e);
        let file = File::open(&path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let kept = progress::file::path_for(&path);
        // where the text ends, before the zeros a killed run left: records written over
        // them leave the file's size as it was
        let text = written_end(&file, meta.len()).map_err(io)?;
        // kept only when what was read is the whole of the file first opened
        let keep = |progress: &Progress| {
            let same = fs::metadata(&path)
                .is_ok_and(|now| (now.dev(), now.ino(), now.len()) == (meta.dev(), meta.ino(), meta.len()))
                && written_end(&file, meta.len()).is_ok_and(|now| now == text);
            if !writing && same && text > 0 {
                let _ = progress::file::write(&kept, &file, &meta, text, plan, progress);
            }
        };
        let known = if writing { None } else { progress::file::read(&kept, &file, &meta, text, plan) };
        // the records a run appended since, alone, when they all parse (a torn line's
        // warning names its line, which only a whole read counts)
        let known = match known {
            Some((progress, end)) if end == text => Some(progress),
            Some((mut progress, end)) => read_tail(&path, &file, end)?.map(|tail| {
                progress.extend(plan, &tail);
                keep(&progress);
                progress
            }),
            None => None,
        };
        let progress = match known {
            Some(progress) => progress,
            None => {
                let mut warnings = Vec::new();
                let trials =
                    read_trials(&path, writing, &mut warnings, KEEP_COLUMNS_AFTER, Needed::Progress)?;
                let progress = Progress::of(plan, &trials, warnings);
                keep(&progress);
                progress
            }
        };
        let mut warnings = progress.warnings.clone();
        warnings.extend(said);
        Ok((progress, sessions, warnings))
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
        for path in [self.runs_path(), self.sessions_path(), self.boots_path()] {
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

/// fsync a directory, so a file created in it survives a power cut.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests;
