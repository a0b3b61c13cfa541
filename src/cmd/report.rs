//! `margin report FILE|NAME [--json]` and `margin export NAME --format …`: from the store
//! only, nothing runs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

pub use super::answer::{Whole, answer};
use super::{Error, io, load_all};
use crate::analyze::{self, Format, Table};
use crate::outlook;
use crate::plan::Plan;
use crate::run::RunOptions;
use crate::spec::Experiment;
use crate::store::{Kept, Snapshot, Store};
use crate::summary::{Pending, Summary};

/// What `report`, `status` and `export` were pointed at: the experiment file to read,
/// and the store when the target named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub file: PathBuf,
    /// A store folder (given, or `<root>/NAME` when no experiment file has that name);
    /// `None`: the experiment's own store, `<root>/<name>`.
    pub store: Option<PathBuf>,
    /// Whether `file` is the store's copy, and whose.
    pub kept: Option<Kept>,
}

impl Target {
    fn file(path: &Path) -> Self {
        Target { file: path.to_path_buf(), store: None, kept: None }
    }

    /// The store to read.
    pub fn store(&self, reports: &Path, exp: &Experiment) -> Store {
        match &self.store {
            Some(dir) => Store::at(dir),
            None => Store::new(reports, &exp.name),
        }
    }

    /// The experiment file used, and when it is the store's copy, whose.
    pub fn file_used(&self) -> String {
        let file = self.file.display();
        match self.kept {
            None => file.to_string(),
            Some(Kept::Last) => format!("{file}, the store's copy from its last session"),
            Some(Kept::Earlier) => format!("{file}, the store's newest copy (its last session kept none)"),
        }
    }

    /// The line that says which experiment file was used.
    pub fn used(&self) -> String {
        format!("experiment file {}", self.file_used())
    }
}

/// Find what `target` names, in this order: an experiment file; a store folder (read with
/// the copy of the experiment file it keeps, even when the file it came from has changed
/// since: the copy is what its trials ran with); the name of an experiment under
/// `experiments/` (its stem or its `name:`); the name of a store in `reports`.
/// `command` words the hints.
pub fn resolve(target: &Path, reports: &Path, command: &str) -> Result<Target, Error> {
    if target.is_file() {
        return Ok(Target::file(target));
    }
    if Store::is_store(target) {
        return kept(target, command);
    }
    let name = target.to_string_lossy();
    for ext in ["yaml", "yml"] {
        let candidate = Path::new("experiments").join(format!("{name}.{ext}"));
        if candidate.is_file() {
            return Ok(Target::file(&candidate));
        }
    }
    let mut known = Vec::new();
    for path in super::experiment_files() {
        if let Ok(exp) = crate::spec::load_file(&path) {
            if exp.name == name {
                return Ok(Target::file(&path));
            }
            known.push(exp.name);
        }
    }
    // a plain name only: `reports` joined with `../x` would be somewhere else
    let plain = matches!(target.components().collect::<Vec<_>>()[..], [std::path::Component::Normal(_)]);
    let store = reports.join(target);
    if plain && Store::is_store(&store) {
        return kept(&store, command);
    }
    known.sort();
    let mut stores: Vec<String> = std::fs::read_dir(reports)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| Store::is_store(p))
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    stores.sort();
    let list = |names: &[String]| if names.is_empty() { "none".to_string() } else { names.join(", ") };
    let what = if target.is_dir() {
        "a folder but not a store (it has no sessions.ndjson or runs.ndjson)"
    } else {
        "not a file"
    };
    Err(Error::Input(format!(
        "`{name}` is {what}, nor the name of an experiment in experiments/ ({}) or of a store in {} ({})",
        list(&known),
        reports.display(),
        list(&stores)
    )))
}

/// A store folder, with the copy of the experiment file it keeps.
fn kept(dir: &Path, command: &str) -> Result<Target, Error> {
    let store = Store::at(dir);
    match store.latest_experiment()? {
        Some((file, kept)) => Ok(Target { file, store: Some(dir.to_path_buf()), kept: Some(kept) }),
        None => Err(Error::Input(format!(
            "{}: the store keeps no copy of the experiment file it was run with (stores written \
             before margin kept one have none), so it cannot be read on its own\n\
             hint: give the experiment file, `margin {command} path/to/{}.yaml` (with `--reports` \
             naming the folder that holds this store); the next `margin run` or `margin import` \
             with it keeps a copy here",
            dir.display(),
            dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "NAME".into())
        ))),
    }
}

/// summary.json's text on `out` (the file's very bytes, then a line break), its cells
/// formatted in pieces on all cores as the file's are.
fn print_json(summary: &Summary, out: &mut dyn Write) -> Result<(), Error> {
    crate::summary::json::summary_to_writer(&mut *out, summary).map_err(io)?;
    writeln!(out).map_err(io)
}

/// The cells of an experiment still pending on this host, from a snapshot of its store.
fn pending(exp: &Experiment, plan: &Plan, snapshot: &Snapshot) -> Result<Vec<Pending>, Error> {
    let outlook = outlook::outlook(exp, plan, snapshot, &RunOptions::default())?.cells;
    let gave_up = outlook::last_abandoned(exp, plan, &snapshot.sessions);
    let pending = plan
        .cells
        .iter()
        .zip(&outlook)
        .filter(|(_, o)| !o.done)
        .map(|(cell, o)| Pending {
            cell: plan.label(cell),
            reason: o.pending.clone().unwrap_or_else(|| match (gave_up.get(&cell.id.to_string()), o.ok) {
                (Some(why), _) => {
                    format!("abandoned by the last run ({why}; see Failures): `margin run` tries it again")
                }
                (None, 0) => "not run yet: `margin run` on this host runs it".to_string(),
                (None, n) => {
                    format!("{n} trials so far, fewer than the repetitions ask: `margin run` adds the rest")
                }
            }),
        })
        .collect();
    Ok(pending)
}

/// Read the store and write `report.md`, `summary.json` and the plots into it.
/// `reasons`: why cells are pending as a run just found out (a host down), over what the
/// plan can tell. A run or an import may write the store meanwhile: if it changed while
/// the report was made, the report would already be old and is not written (the summary
/// is returned, `None` for the path); the writer's own report is the newer one.
pub fn write(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    reasons: &[(String, String)],
) -> Result<(Option<PathBuf>, Summary), Error> {
    let before = store.fingerprint();
    let snapshot = store.load_for_report()?;
    if !store.dir.is_dir() {
        return Err(Error::Input(format!(
            "{}: no store at {}: nothing has run or been imported yet (`margin run {}`)",
            exp.name,
            store.dir.display(),
            exp.path.display()
        )));
    }
    // The pending cells (every trial folded into its cell's progress) beside the analysis;
    // the trial columns are let go once both have what they need of them, before the
    // statistics (`summarize_owned`).
    let boots = analyze::boots::rows(&store.boot_records()?.0, &snapshot);
    let (pending, summary) =
        analyze::summarize_owned(exp, plan, snapshot, |snapshot| pending(exp, plan, snapshot));
    let mut pending = pending?;
    for p in &mut pending {
        if let Some((_, why)) = reasons.iter().find(|(label, _)| *label == p.cell) {
            p.reason.clone_from(why);
        }
    }
    let experiment = || exp.name.clone();
    let mut summary = summary.map_err(|source| Error::Analyze { experiment: experiment(), source })?;
    summary.pending = pending;
    summary.boots = boots;
    if store.fingerprint() != before {
        return Ok((None, summary));
    }
    let summary = std::sync::Arc::new(summary);
    crate::report::write_report(exp, plan, &summary, &store.dir)
        .map_err(|source| Error::Report { experiment: experiment(), source })?;
    Ok((Some(store.dir.join("report.md")), std::sync::Arc::unwrap_or_clone(summary)))
}

pub fn run(
    target: &Path,
    json: bool,
    terminal: bool,
    reports: &Path,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let t = resolve(target, reports, "report")?;
    let (exp, plan) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
    let store = t.store(reports, &exp);
    let (path, summary) = write(&exp, &plan, &store, &[])?;
    let Some(path) = path else {
        to_stderr(format_args!(
            "{}: the store changed while this report was made (a run is writing it): report.md is left \
             as it is, and the run writes a newer one when it ends; the answer below is of the trials read",
            exp.name
        ));
        if json {
            print_json(&summary, out)?;
        } else {
            answer(&summary, None, out).map_err(io)?;
        }
        return Ok(());
    };
    if json {
        // stdout is summary.json alone
        to_stderr(format_args!("{}: {}", exp.name, t.used()));
        print_json(&summary, out)?;
    } else {
        writeln!(out, "{}: {}", exp.name, path.display()).map_err(io)?;
        writeln!(out, "  {}", t.used()).map_err(io)?;
        let whole = Whole::new(&format!("margin report {}", target.display()), &store);
        answer(&summary, terminal.then_some(&whole), out).map_err(io)?;
    }
    // The summary and the plan of a large store are millions of small allocations: the
    // process gives them back at once when it ends (a tenth of a second at 10⁶ trials of
    // four metrics, spent freeing them one by one first). `report` is a command's last act.
    std::mem::forget(summary);
    std::mem::forget(plan);
    Ok(())
}

/// `margin export`: the tidy table to stdout or a file.
pub fn export(target: &Path, format: Format, output: Option<&Path>, reports: &Path) -> Result<(), Error> {
    let t = resolve(target, reports, "export")?;
    let (exp, plan) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
    // stdout may be the table itself
    to_stderr(format_args!("{}: {}", exp.name, t.used()));
    let store = t.store(reports, &exp);
    let snapshot = store.load()?;
    let table = Table::build(&snapshot.trials, &plan)
        .map_err(|source| Error::Table { experiment: exp.name.clone(), source })?;
    match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|source| Error::File { path: path.to_path_buf(), source })?;
            analyze::export(&table, format, std::io::BufWriter::new(f))
                .map_err(|source| Error::Export { path: Some(path.to_path_buf()), source })
        }
        None if format == Format::Parquet && std::io::stdout().is_terminal() => Err(Error::Input(
            "parquet is binary: write it to a file with `-o FILE` (or redirect stdout)".into(),
        )),
        None => {
            let mut stdout = Watched { inner: std::io::stdout().lock(), error: None };
            let exported = analyze::export(&table, format, &mut stdout);
            match (exported, stdout.error) {
                // polars words a failed write its own way: a closed pipe must stay one
                (_, Some(e)) => Err(Error::Output(e)),
                (Err(source), None) => Err(Error::Export { path: None, source }),
                (Ok(()), None) => stdout.inner.flush().map_err(io),
            }
        }
    }
}

/// A writer that keeps (a copy of) the first error of the writer it wraps, for writers
/// whose callers turn it into an error of their own.
struct Watched<W> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: Write> Watched<W> {
    fn watch<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        // `write_all` retries an interrupted write itself
        if let Err(e) = &result
            && self.error.is_none()
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
        }
        result
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.watch(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.watch(result)
    }
}

/// A line to stderr that never panics: `eprintln!` does when stderr is a closed pipe
/// (`margin report … 2>&1 | head`), and a note is not worth failing the command for.
fn to_stderr(line: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "{line}");
}
