//! `margin history TARGET...`: the runs of one or more stores in time order, and for each
//! cell and metric where it changed across them ([`crate::analyze::history`]), printed as
//! Markdown ([`crate::report::history`]) or JSON. With `--fail-on worse`, exit 1 when the
//! newest change of a row is worse beyond ±δ: a gate for nightly runs.

use std::io::Write;
use std::path::PathBuf;

use super::args::Reports;
use super::target::{no_store, resolve};
use super::{Error, io, load_all};
use crate::analyze::history::{Input, history};
use crate::analyze::settings::{nominal_confidence, settings};
use crate::report::format::percent;
use crate::report::history::markdown;
use crate::store::Store;

/// `margin history`'s arguments.
#[derive(Debug, clap::Args)]
pub struct HistoryArgs {
    /// The stores whose runs make the history: experiment files, store folders or names,
    /// as for `report`. A run is the sessions of one `margin run --label`, or one session
    /// without a label; the runs of every store are set in the order they started.
    #[arg(required = true, value_name = "TARGET")]
    pub targets: Vec<PathBuf>,
    /// Exit 1 when a row's newest change is worse beyond ±δ (its interval wholly beyond
    /// the experiment's threshold, in the direction its metric is worse).
    #[arg(long, value_name = "WHEN", value_parser = ["worse"])]
    pub fail_on: Option<String>,
    /// Print the history as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub reports: Reports,
}

pub fn run(args: &HistoryArgs, out: &mut dyn Write) -> Result<(), Error> {
    let mut inputs = Vec::new();
    let mut threshold = None;
    let mut confidence = None;
    for target in &args.targets {
        let t = resolve(target, &args.reports.root, "history")?;
        let (exp, plan) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
        let store = t.store(&args.reports.root, &exp);
        if !Store::is_store(&store.dir) {
            return Err(no_store(&exp, &store));
        }
        // the first store's experiment sets δ and the confidence
        threshold.get_or_insert(settings(&exp.spec).threshold);
        confidence.get_or_insert(nominal_confidence(&exp.spec));
        let (records, _) = store.records()?;
        let (sessions, _) = store.session_records()?;
        inputs.push(Input { store: store.dir.display().to_string(), exp, plan, records, sessions });
    }
    let output = history(&inputs, threshold.unwrap_or(0.05), confidence.unwrap_or(0.95));
    if args.json {
        let text = crate::summary::json::to_string(&output).map_err(|e| Error::Output(e.into()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", markdown(&output)).map_err(io)?;
    }
    out.flush().map_err(io)?;
    if output.runs.is_empty() {
        return Err(Error::Input("no runs in the store(s): nothing has run or been imported yet".into()));
    }
    if args.fail_on.is_some() {
        let worse: Vec<String> = output
            .rows
            .iter()
            .filter(|r| r.newest_worse)
            .map(|r| format!("{} ({})", r.metric, r.label))
            .collect();
        if !worse.is_empty() {
            return Err(Error::Gate(format!(
                "--fail-on worse: the newest runs are worse beyond ±{}: {}",
                percent(output.threshold_pct),
                worse.join("; ")
            )));
        }
    }
    Ok(())
}
