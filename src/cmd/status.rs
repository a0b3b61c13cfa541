//! `margin status [FILE…]`: per experiment, what is done, pending and abandoned.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::Reports;
use super::target::{Target, resolve};
use super::{Error, io, load_all};
use crate::outlook;
use crate::plan::DEFAULT_MAX_CELLS;
use crate::run::RunOptions;
use indexmap::IndexMap;

use crate::store::{Event, SessionRecord, Store};

/// The store folders under `reports` whose name is not among `names`, sorted.
fn stores_without_a_file(reports: &Path, names: &HashSet<String>) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(reports) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|d| d.file_name().is_some_and(|n| !names.contains(n.to_string_lossy().as_ref())))
        .filter(|d| Store::is_store(d))
        .collect();
    dirs.sort();
    dirs
}

/// The run labels of the sessions, each with how many sessions carry it, in the order
/// they were first used: `v1 (1 session), v2 (2 sessions)`; empty when none has one.
fn labels(sessions: &[SessionRecord]) -> String {
    let mut counts: IndexMap<&str, usize> = IndexMap::new();
    for s in sessions.iter().filter(|s| s.event == Event::Start) {
        if let Some(label) = &s.label {
            *counts.entry(label.as_str()).or_default() += 1;
        }
    }
    let plural = |n: usize| if n == 1 { "session" } else { "sessions" };
    counts.iter().map(|(l, n)| format!("{l} ({n} {})", plural(*n))).collect::<Vec<_>>().join(", ")
}

/// `margin status`'s arguments.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Experiment files, store folders or names, as for `report` (default: every
    /// `experiments/*.yaml`).
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub reports: Reports,
}

/// `files`: experiment files, store folders or names (see [`super::target::resolve`]);
/// none: every experiment file under `experiments/`, then every store in `reports` that
/// none of them names (a store copied from another machine, read with the experiment
/// file it keeps).
pub fn run(args: &StatusArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (targets, reports) = (&args.files, args.reports.root.as_path());
    let targets = if targets.is_empty() {
        let files = super::target::experiment_files();
        let names: HashSet<String> =
            files.iter().filter_map(|f| crate::spec::load_file(f).ok().map(|e| e.name)).collect();
        let mut targets: Vec<Target> =
            files.iter().map(|f| Target { file: f.clone(), store: None, kept: None }).collect();
        for dir in stores_without_a_file(reports, &names) {
            // a store that keeps no experiment file (older margin) has nothing to read it by
            if let Ok(target) = resolve(&dir, reports, "status") {
                targets.push(target);
            }
        }
        targets
    } else {
        targets.iter().map(|t| resolve(t, reports, "status")).collect::<Result<Vec<_>, _>>()?
    };
    if targets.is_empty() {
        return Err(Error::Input("no experiment files given, and none in experiments/".into()));
    }
    let files: Vec<PathBuf> = targets.iter().map(|t| t.file.clone()).collect();
    for ((exp, plan), target) in load_all(&files, DEFAULT_MAX_CELLS)?.into_iter().zip(&targets) {
        let store = target.store(reports, &exp);
        let (progress, sessions, warnings) = store.progress(&plan)?;
        let outlook::Outlook { cells: outlook, set_aside } =
            outlook::outlook_of(&exp, &plan, progress.cells, progress.set_aside, &RunOptions::default())?;
        let done = outlook.iter().filter(|o| o.done).count();
        let pending = outlook.iter().filter(|o| o.pending.is_some()).count();
        // Abandoned: cells not done that the last run on their host gave up on.
        let gave_up = outlook::last_abandoned(&exp, &plan, &sessions);
        let abandoned = plan
            .cells
            .iter()
            .zip(&outlook)
            .filter(|(c, o)| !o.done && o.pending.is_none() && gave_up.contains_key(&c.id.to_string()))
            .count();
        let here = outlook.len() - done - pending - abandoned;
        let (measured, failed, imported) = (progress.measured, progress.failed, progress.imported);
        writeln!(out, "{} ({})", exp.name, target.file_used()).map_err(io)?;
        writeln!(
            out,
            "  cells: {} — {done} done, {here} to run here, {pending} pending (other host or boot), {abandoned} abandoned",
            plan.cells.len()
        )
        .map_err(io)?;
        if plan.keys.iter().any(|k| k == "host") {
            for (host, how, cells, done) in outlook::hosts_summary(&exp, &plan, &outlook) {
                writeln!(out, "    host {host} ({how}): {done} of {cells} cells done").map_err(io)?;
            }
        }
        let imported = if imported > 0 { format!(" ({imported} imported)") } else { String::new() };
        writeln!(out, "  trials: {measured} measured{imported}, {failed} failed").map_err(io)?;
        let labels = labels(&sessions);
        if !labels.is_empty() {
            writeln!(out, "  labels: {labels}").map_err(io)?;
        }
        if set_aside > 0 {
            writeln!(out, "  set aside: {set_aside} records of cells whose commands have changed")
                .map_err(io)?;
        }
        let last = progress.last_started.and_then(|t| jiff::Timestamp::from_microsecond(t).ok());
        match last {
            Some(at) => writeln!(out, "  last trial: {at}").map_err(io)?,
            None => writeln!(out, "  never run (store: {})", store.dir.display()).map_err(io)?,
        }
        for w in &warnings {
            writeln!(out, "  warning: {w}").map_err(io)?;
        }
    }
    Ok(())
}
