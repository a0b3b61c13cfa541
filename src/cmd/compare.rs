//! `margin compare A [B]`: two stores, or two selections of one store, set side by side by
//! the report's own analysis ([`crate::analyze::versus`]), printed as Markdown
//! ([`crate::report::versus`]) or JSON. With `--fail-on`, a gate for CI (docs/design.md
//! §4, Exit codes). This is the command: it reads the sides, prints, and ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::args::Reports;
use super::target::{Target, no_store, resolve};
use super::{Error, io, load_all};
use crate::analyze::versus::{Side, VersusError, versus};
use crate::report::format::percent;
use crate::report::versus::markdown;
use crate::store::Store;

// the words of the command line, defined where the comparison is
use crate::analyze::versus::select::Selection;
use crate::summary::versus::FailOn;

/// `margin compare`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline's store, then the candidate's: experiment files, store folders or
    /// names, as for `report`. One store alone needs --baseline and --candidate.
    #[arg(required = true, num_args = 1..=2, value_name = "TARGET")]
    pub targets: Vec<PathBuf>,
    /// Which trials of the (first) store are the baseline: `label=v1` (a `run
    /// --label`), `session=ID` (or the start of one), `since=TIME`, `until=TIME`
    /// (RFC 3339, `YYYY-MM-DD HH:MM:SS` or a date, UTC), several joined by commas.
    /// Default: every trial.
    #[arg(long, value_name = "SELECTION")]
    pub baseline: Option<Selection>,
    /// Which trials of the (second) store are the candidate, as for --baseline.
    #[arg(long, value_name = "SELECTION")]
    pub candidate: Option<Selection>,
    /// Exit 1 when a metric is `worse` beyond ±δ (verdict `significant` in the worse
    /// direction), or has `change`d beyond ±δ either way.
    #[arg(long, value_name = "WHEN")]
    pub fail_on: Option<FailOn>,
    /// Print the comparison as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub reports: Reports,
}

pub fn run(args: &CompareArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (a, b) = match &args.targets[..] {
        [one] => {
            if args.baseline.is_none() || args.candidate.is_none() {
                return Err(Error::Input(format!(
                    "one store, `{}`: say which of its trials each side is, with --baseline and \
                     --candidate (e.g. `--baseline label=v1 --candidate label=v2`), or give two stores",
                    one.display()
                )));
            }
            (one, one)
        }
        [a, b] => (a, b),
        _ => return Err(Error::Input("compare takes one store (with two selections) or two".into())),
    };
    let base = side(a, args.baseline.as_ref(), &args.reports.root)?;
    let cand = side(b, args.candidate.as_ref(), &args.reports.root)?;
    if base.store.dir == cand.store.dir && args.baseline == args.candidate {
        return Err(Error::Input(format!(
            "both sides are the same trials of {}: select different ones with --baseline and --candidate",
            base.store.dir.display()
        )));
    }
    let (output, summary) = versus(&base, &cand, args.fail_on).map_err(error)?;
    if args.json {
        let text = crate::summary::json::to_string(&output).map_err(|e| Error::Output(e.into()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        write!(out, "{}", markdown(&output, &summary)).map_err(io)?;
    }
    out.flush().map_err(io)?;
    if output.comparisons.is_empty() {
        return Err(Error::Input(
            "nothing could be compared: no cell has analysed trials on both sides with the same \
             commands (see above)"
                .into(),
        ));
    }
    if let Some(fail_on) = args.fail_on
        && !output.failed.is_empty()
    {
        let rows: Vec<String> =
            output.failed.iter().map(|t| format!("{} ({}) {}", t.metric, t.cell, t.change)).collect();
        let what = if fail_on == FailOn::Worse { "worse" } else { "changed" };
        return Err(Error::Gate(format!(
            "--fail-on {}: the candidate is {what} beyond ±{}: {}",
            fail_on.word(),
            percent(output.settings.threshold_pct),
            rows.join("; ")
        )));
    }
    Ok(())
}

/// Reads one side: the target's experiment and store, and the records its selection keeps.
fn side(target: &Path, selection: Option<&Selection>, reports: &Path) -> Result<Side, Error> {
    let t: Target = resolve(target, reports, "compare")?;
    let (exp, _) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
    let store = t.store(reports, &exp);
    if !Store::is_store(&store.dir) {
        return Err(no_store(&exp, &store));
    }
    let (records, _) = store.records()?;
    let (sessions, _) = store.session_records()?;
    Side::new(exp, store, selection, records, sessions).map_err(error)
}

/// The comparison's error as the command's: the analysis failing is said as a report's
/// failure is; a selection that keeps nothing (or names nothing) is bad input.
fn error(e: VersusError) -> Error {
    match e {
        VersusError::Analyze { experiment, source } => Error::Analyze { experiment, source },
        other => Error::Input(other.to_string()),
    }
}
