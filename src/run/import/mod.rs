//! Trials from outputs captured elsewhere (another machine, an old run, a mailing-list
//! post): parsed with the experiment's recipe and recorded as imported, with their source
//! and its hash, in a session of their own (`margin import`, docs/experiment-file.md).
//! [`gang`]: one trial of a gang from one output per member.
//!
//! An import records trials as a run does, into the same store, so it lives beside the
//! run: it reads the plan and the recipe and writes the store, and it uses the gang's
//! recording of a member's sample and its aggregates.

pub(crate) mod gang;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::parse::{ParseError, Parsed, Recipe};
use crate::plan::{Cell, Plan};
use crate::spec::Experiment;
use crate::store::{
    Appender, BOOT_ID, Event, Lock, MetricInfo, RawPaths, SessionRecord, Status, Store, StoreError,
    TrialRecord, levels_map,
};

/// Why an import recorded nothing (or stopped): each says which file, and what of it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImportError {
    /// The parser read the output but found no result in it.
    #[error("{}: the parser found no result", path.display())]
    NoResult { path: PathBuf },
    /// A gang member's output holds more than the one result a gang's trial takes.
    #[error(
        "{}: holds {count} results; a gang's trial is one result per member, measured at once \
         (cut the file into one output per trial, and import each trial on its own)",
        path.display()
    )]
    SeveralResults { path: PathBuf, count: usize },
    /// A member's metrics cannot be recorded as `metric@host`.
    #[error("{0}")]
    Member(String),
    /// The gang's aggregates cannot be made from its members' metrics (`files`: the
    /// members' outputs).
    #[error("{files}: {why}")]
    Aggregates { files: String, why: String },
    /// An output named on the command line, or its copy in the store, cannot be read or
    /// written.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    /// An output does not parse.
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: ParseError },
    /// The store is locked by another command, or cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing what was imported to the output failed.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

fn io(e: std::io::Error) -> ImportError {
    ImportError::Output(e)
}

/// What an import knows of where and when its outputs were measured.
pub(crate) struct Provenance {
    /// When the outputs were measured, if known (`--started-at`).
    pub(crate) started_at: Option<jiff::Timestamp>,
    /// The boot the outputs were measured in (`--boot`), recorded as the session's `boot_id`.
    pub(crate) boot: Option<String>,
}

/// An output read and parsed: its path, its bytes, their hash and the parser's reading.
struct Output<'a> {
    path: &'a Path,
    bytes: Vec<u8>,
    hash: String,
    parsed: Parsed,
}

/// The bytes of `path` and the recipe's reading of them (no result is an error); the hash
/// of the text read identifies the output.
fn read<'a>(path: &'a Path, recipe: &Recipe) -> Result<Output<'a>, ImportError> {
    let bytes =
        std::fs::read(path).map_err(|source| ImportError::File { path: path.to_path_buf(), source })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let parsed =
        recipe.apply(&text, "").map_err(|source| ImportError::Parse { path: path.to_path_buf(), source })?;
    if parsed.samples.is_empty() {
        return Err(ImportError::NoResult { path: path.to_path_buf() });
    }
    Ok(Output { path, bytes, hash: blake3::hash(&text.into_bytes()).to_hex().to_string(), parsed })
}

/// Import the outputs `raw` into `cell`, each result of each a trial, recorded on `host`
/// (else the cell's level of `host`, else `imported`). Everything is parsed first: one bad
/// file imports nothing. An output already in the cell (the same content) is skipped.
#[allow(clippy::too_many_arguments)]
pub(crate) fn outputs(
    exp: &Experiment,
    plan: &Plan,
    cell: &Cell,
    store: Store,
    from: &Provenance,
    host: Option<&str>,
    raw: &[PathBuf],
    recipe: &Recipe,
    out: &mut dyn Write,
) -> Result<(), ImportError> {
    let parsed = raw.iter().map(|path| read(path, recipe)).collect::<Result<Vec<_>, _>>()?;
    let host = host.map(str::to_owned).or_else(|| crate::plan::host_level(plan, cell).map(str::to_owned));
    let host = host.unwrap_or_else(|| "imported".to_string());
    let mut im = Importing::start(exp, store, from, &host, out)?;
    let (store, records, trials, session) = (&im.store, &im.records, &mut im.trials, im.session.clone());
    let cell_id = cell.id.to_string();
    let mut attempts = records.iter().filter(|t| t.cell == cell_id).map(|t| t.repetition).max().unwrap_or(0);
    let (mut added, mut skipped) = (0, 0);
    // The content identifies an output: a file already in the cell, from an earlier
    // import or earlier in this one, is skipped. So an import killed and run again ends
    // with the same trials as one that was never interrupted.
    let mut seen: HashSet<String> =
        records.iter().filter(|t| t.cell == cell_id).filter_map(|t| t.source_hash.clone()).collect();
    for Output { path: raw, bytes, hash, parsed: result } in parsed {
        if !seen.insert(hash.clone()) {
            writeln!(
                out,
                "{}: already imported into {} (same content), skipped",
                raw.display(),
                plan.label(cell)
            )
            .map_err(io)?;
            skipped += 1;
            continue;
        }
        // The store keeps one copy of the file, under its first trial's name, so `reparse`
        // works after the original is gone; every trial of the file points at it, and its
        // `position` says which of the file's results it is. A copy per trial made a
        // bonnie++ CSV of 334 rows 334 copies.
        let mut kept: Option<RawPaths> = None;
        for (i, sample) in result.samples.iter().enumerate() {
            attempts += 1;
            let trial = uuid::Uuid::now_v7().to_string();
            let paths = match &kept {
                Some(paths) => paths.clone(),
                None => {
                    let (paths, stdout, _) = store.raw_paths(&trial);
                    keep(&stdout, &bytes)?;
                    // its stderr is empty: no file, as for a run's silent stream
                    kept.insert(paths).clone()
                }
            };
            let source = (raw.display().to_string(), hash.clone());
            let mut t = imported(plan, cell, from, (&host, &session), trial, attempts, source);
            t.position = i as u32 + 1;
            t.raw = Some(paths);
            t.warnings = result.warnings.clone();
            t.flags = result.flags.iter().map(|f| f.to_string()).collect();
            for m in &sample.metrics {
                t.metrics.insert(m.name.clone(), m.value);
                t.metric_info.insert(
                    m.name.clone(),
                    MetricInfo { unit: m.unit.symbol().to_string(), better: m.better, mean: m.mean },
                );
            }
            trials.append(&t)?;
            added += 1;
        }
        let n = result.samples.len();
        writeln!(
            out,
            "{}: {n} {} imported into {}",
            raw.display(),
            if n == 1 { "trial" } else { "trials" },
            plan.label(cell)
        )
        .map_err(io)?;
    }
    im.end(format!("imported {added} trials, skipped {skipped} files already imported"))
}

/// An output's bytes kept in the store at `path`, on disk before the record points at it.
fn keep(path: &Path, bytes: &[u8]) -> Result<(), ImportError> {
    std::fs::write(path, bytes)
        .and_then(|()| std::fs::File::open(path)?.sync_data())
        .map_err(|source| ImportError::File { path: path.to_path_buf(), source })
}

/// An imported trial's record before its metrics: `imported`, no exit code or wall time,
/// its time the import's `--started-at` (else unknown), its source and the source's hash.
fn imported(
    plan: &Plan,
    cell: &Cell,
    from: &Provenance,
    (host, session): (&str, &str),
    trial: String,
    repetition: u32,
    (source, hash): (String, String),
) -> TrialRecord {
    TrialRecord {
        repetition,
        started_at: from.started_at.map(|t| t.to_string()),
        source: Some(source),
        source_hash: Some(hash),
        ..TrialRecord::new(
            trial,
            cell.id.to_string(),
            levels_map(plan, cell),
            host.to_string(),
            session.to_string(),
            Status::Imported,
        )
    }
}

/// An import's session in a locked store: its start recorded, the log read, the
/// appenders open; [`Importing::end`] records its end.
struct Importing {
    store: Store,
    _lock: Lock,
    records: Vec<TrialRecord>,
    trials: Appender,
    sessions: Appender,
    record: SessionRecord,
    session: String,
}

impl Importing {
    fn start(
        exp: &Experiment,
        store: Store,
        from: &Provenance,
        host: &str,
        out: &mut dyn Write,
    ) -> Result<Self, ImportError> {
        let lock = store.lock("import")?;
        // the store keeps the file it is imported with, so it can be reported on without it
        store.keep_experiment(exp)?;
        let (records, torn) = store.records()?;
        for w in &torn {
            writeln!(out, "warning: {w}").map_err(io)?;
        }
        let session = uuid::Uuid::now_v7().to_string();
        let trials = store.trial_appender()?;
        let mut sessions = store.session_appender()?;
        let record = SessionRecord {
            // the only fact an import knows, when told: which boot its outputs share
            facts: from.boot.iter().map(|b| (BOOT_ID.to_string(), b.clone())).collect(),
            import: true,
            ..SessionRecord::start(session.clone(), host.to_string(), exp, 0)
        };
        sessions.append(&record)?;
        Ok(Importing { store, _lock: lock, records, trials, sessions, record, session })
    }

    fn end(mut self, outcome: String) -> Result<(), ImportError> {
        self.record.event = Event::End;
        self.record.at = jiff::Timestamp::now().to_string();
        self.record.outcome = Some(outcome);
        self.sessions.append(&self.record)?;
        Ok(())
    }
}
