//! `margin report FILE|NAME [--json]` and `margin export NAME --format …`: from the store
//! only, nothing runs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use super::{Failure, io, load_all};
use crate::analyze::{self, Format, Pending, Summary, Table};
use crate::plan::Plan;
use crate::run::{self, Settings};
use crate::spec::Experiment;
use crate::store::{Loaded, Store};

/// An experiment file, or the name of one under `experiments/` (its stem or its `name:`).
pub fn resolve(target: &Path) -> Result<PathBuf, Failure> {
    if target.is_file() {
        return Ok(target.to_path_buf());
    }
    let name = target.to_string_lossy();
    for ext in ["yaml", "yml"] {
        let candidate = Path::new("experiments").join(format!("{name}.{ext}"));
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    let mut known = Vec::new();
    for path in super::experiment_files() {
        if let Ok(exp) = crate::spec::load_file(&path) {
            if exp.name == name {
                return Ok(path);
            }
            known.push(exp.name);
        }
    }
    known.sort();
    Err(Failure::Input(format!(
        "`{name}` is neither an experiment file nor the name of one in experiments/ ({})",
        if known.is_empty() { "none there".to_string() } else { known.join(", ") }
    )))
}

/// The store of an experiment, loaded, and the cells still pending on this host.
fn loaded(exp: &Experiment, plan: &Plan, reports: &Path) -> Result<(Store, Loaded, Vec<Pending>), Failure> {
    let store = Store::new(reports, &exp.name);
    let (outlook, loaded, _) =
        run::outlook(exp, plan, &store, &Settings::default()).map_err(|e| Failure::Input(e.to_string()))?;
    let gave_up = run::last_abandoned(exp, plan, &loaded.sessions);
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
    Ok((store, loaded, pending))
}

/// Write `report.md`, `summary.json` and the plots into the store. `reasons`: why cells
/// are pending as a run just found out (a host down), over what the plan can tell.
pub fn write(
    exp: &Experiment,
    plan: &Plan,
    reports: &Path,
    reasons: &[(String, String)],
) -> Result<(PathBuf, Summary), Failure> {
    let (store, loaded, mut pending) = loaded(exp, plan, reports)?;
    for p in &mut pending {
        if let Some((_, why)) = reasons.iter().find(|(label, _)| *label == p.cell) {
            p.reason.clone_from(why);
        }
    }
    if !store.dir.is_dir() {
        return Err(Failure::Input(format!(
            "{}: no store at {}: nothing has run or been imported yet (`margin run {}`)",
            exp.name,
            store.dir.display(),
            exp.path.display()
        )));
    }
    let summary = crate::report::write_report(exp, plan, &loaded, &pending, &store.dir)
        .map_err(|e| Failure::Input(format!("{}: the report: {e}", exp.name)))?;
    Ok((store.dir.join("report.md"), summary))
}

/// The answer in a few lines, for the end of `run` and `report`.
pub fn answer(summary: &Summary, out: &mut dyn Write) -> std::io::Result<()> {
    for c in &summary.comparisons {
        let context: Vec<String> = c.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let context = if context.is_empty() { String::new() } else { format!(" ({})", context.join(" ")) };
        writeln!(out, "  {}{context}: {}", c.metric, c.sentence)?;
    }
    Ok(())
}

pub fn run(target: &Path, json: bool, reports: &Path, out: &mut dyn Write) -> Result<(), Failure> {
    let file = resolve(target)?;
    let (exp, plan) = load_all(&[file], usize::MAX)?.remove(0);
    let (path, summary) = write(&exp, &plan, reports, &[])?;
    if json {
        let text = serde_json::to_string_pretty(&summary).map_err(|e| Failure::Output(e.into()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        writeln!(out, "{}: {}", exp.name, path.display()).map_err(io)?;
        answer(&summary, out).map_err(io)?;
    }
    Ok(())
}

/// `margin export`: the tidy table to stdout or a file.
pub fn export(target: &Path, format: Format, output: Option<&Path>, reports: &Path) -> Result<(), Failure> {
    let file = resolve(target)?;
    let (exp, plan) = load_all(&[file], usize::MAX)?.remove(0);
    let store = Store::new(reports, &exp.name);
    let loaded = store.load().map_err(|e| Failure::Input(e.to_string()))?;
    let table =
        Table::build(&loaded.trials, &plan).map_err(|e| Failure::Input(format!("{}: {e}", exp.name)))?;
    match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))?;
            analyze::export(&table, format, std::io::BufWriter::new(f))
                .map_err(|e| Failure::Input(format!("{}: {e}", path.display())))
        }
        None if format == Format::Parquet && std::io::stdout().is_terminal() => Err(Failure::Input(
            "parquet is binary: write it to a file with `-o FILE` (or redirect stdout)".into(),
        )),
        None => {
            let stdout = std::io::stdout();
            analyze::export(&table, format, stdout.lock()).map_err(|e| Failure::Input(e.to_string()))
        }
    }
}
