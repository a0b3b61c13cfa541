//! `margin report FILE|NAME [--json]`: report.md, summary.json and the plots from the
//! store only; nothing runs.

use std::io::Write;
use std::path::PathBuf;

pub use super::answer::{Whole, answer};
use super::args::Reports;
use super::target::{no_store, resolve};
use super::{Error, io, load_all_in, to_stderr};
use crate::analyze;
use crate::outlook;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::Store;
use crate::summary::Summary;

/// summary.json's text on `out` (the file's very bytes, then a line break), its cells and
/// comparisons formatted in pieces on all cores as the file's are.
fn print_json(summary: &Summary, out: &mut dyn Write) -> Result<(), Error> {
    crate::summary::json::summary_to_writer(&mut *out, summary).map_err(io)?;
    writeln!(out).map_err(io)
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
    reasons: &[crate::run::Pending],
) -> Result<(Option<PathBuf>, Summary), Error> {
    let before = store.fingerprint();
    let snapshot = store.load_for_report()?;
    if !store.dir.is_dir() {
        return Err(no_store(exp, store));
    }
    // The pending cells (every trial folded into its cell's progress) beside the analysis;
    // the trial columns are let go once both have what they need of them, before the
    // statistics (`summarize_owned`).
    let boots = analyze::boots::rows(&store.boot_records()?.0, &snapshot);
    let sessions = snapshot.sessions.clone();
    let (pending, summary) =
        analyze::summarize_owned(exp, plan, snapshot, |snapshot| outlook::pending(exp, plan, snapshot));
    let mut pending = pending?;
    for p in &mut pending {
        if let Some(r) = reasons.iter().find(|r| r.label == p.cell) {
            p.reason.clone_from(&r.why);
        }
    }
    let experiment = || exp.name.clone();
    let mut summary = summary.map_err(|source| Error::Analyze { experiment: experiment(), source })?;
    summary.pending = pending;
    summary.boots = boots;
    analyze::boot_design::judge_boots(exp, plan, &mut summary);
    summary.across_runs = across_runs(exp, plan, store, &sessions, &summary)?;
    (summary.bisections, summary.bisections_under_way) = analyze::bisect::stored(exp, plan, store)?;
    if store.fingerprint() != before {
        return Ok((None, summary));
    }
    let summary = std::sync::Arc::new(summary);
    crate::report::write_report(exp, plan, &summary, &store.dir)
        .map_err(|source| Error::Report { experiment: experiment(), source })?;
    Ok((Some(store.dir.join("report.md")), std::sync::Arc::unwrap_or_clone(summary)))
}

/// The runs as a level: the comparisons of two or more labelled runs side by side
/// (reading the store's trials again, run by run); or, for one run compared across the
/// boots margin made, the period they spanned.
fn across_runs(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    sessions: &[crate::store::SessionRecord],
    summary: &Summary,
) -> Result<Option<crate::summary::across_runs::AcrossRuns>, Error> {
    use crate::summary::across_runs::AcrossRuns;
    if !analyze::runs::several(sessions) {
        if summary.boots.is_empty() {
            return Ok(None);
        }
        let replicate =
            format!("`margin run {} --label later`, then `margin report {}`", exp.path.display(), exp.name);
        let period =
            analyze::runs::period(&summary.comparisons, sessions, &store.boot_records()?.0, &replicate);
        return Ok(period.map(|p| AcrossRuns { runs: Vec::new(), comparisons: Vec::new(), period: Some(p) }));
    }
    let (records, _) = store.records()?;
    let (spans, runs) = analyze::runs::labelled(exp, plan, &records, sessions);
    let names: Vec<String> = spans.iter().map(|s| s.name.clone()).collect();
    let comparisons = analyze::runs::across(&runs, &names, &analyze::settings::settings(&exp.spec));
    Ok((!comparisons.is_empty()).then_some(AcrossRuns { runs: spans, comparisons, period: None }))
}

/// `margin report`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The experiment file; a store folder (`reports/dd-write`), read with the
    /// experiment file it keeps; or a name: `dd-write` for experiments/dd-write.yaml,
    /// else the store of that name.
    pub target: PathBuf,
    /// Also print `summary.json`.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub reports: Reports,
}

/// `terminal`: stdout is a terminal, where the answer is cut to what a person reads.
pub fn run(args: &ReportArgs, terminal: bool, out: &mut dyn Write) -> Result<(), Error> {
    let ReportArgs { target, json, reports: Reports { root: reports } } = args;
    let t = resolve(target, reports, "report")?;
    let (exp, plan) = load_all_in(std::slice::from_ref(&t.file), usize::MAX, Some(reports))?.remove(0);
    let store = t.store(reports, &exp);
    let (path, summary) = write(&exp, &plan, &store, &[])?;
    let Some(path) = path else {
        to_stderr(format_args!(
            "{}: the store changed while this report was made (a run is writing it): report.md is left \
             as it is, and the run writes a newer one when it ends; the answer below is of the trials read",
            exp.name
        ));
        if *json {
            print_json(&summary, out)?;
        } else {
            answer(&summary, None, out).map_err(io)?;
        }
        return Ok(());
    };
    if *json {
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
