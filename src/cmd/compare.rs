//! `margin compare A [B]`: two stores, or two selections of one store, set side by side by
//! the report's own analysis ([`crate::analyze::compare`]), printed as Markdown
//! ([`crate::report::compare`]) or JSON. With `--fail-on`, a gate for CI (docs/design.md
//! §4, Exit codes). This is the command: it reads the sides, prints, and ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::target::{Target, resolve};
use super::{Error, io, load_all};
use crate::analyze::compare::{CompareError, Side, compare};
use crate::report::compare::markdown;
use crate::report::format::percent;
use crate::store::Store;

// the words of the command line (`cli`), defined where the comparison is
pub use crate::analyze::compare::select::Selection;
pub use crate::summary::compare::FailOn;

/// What `margin compare` was asked.
#[derive(Debug, Clone)]
pub struct Options {
    /// One target (both sides from its store) or two (baseline, candidate): experiment
    /// files, store folders or names, as `report` takes them.
    pub targets: Vec<PathBuf>,
    pub baseline: Option<Selection>,
    pub candidate: Option<Selection>,
    pub fail_on: Option<FailOn>,
    pub json: bool,
    pub reports: PathBuf,
}

pub fn run(options: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let (a, b) = match &options.targets[..] {
        [one] => {
            if options.baseline.is_none() || options.candidate.is_none() {
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
    let base = side(a, options.baseline.as_ref(), &options.reports)?;
    let cand = side(b, options.candidate.as_ref(), &options.reports)?;
    if base.store.dir == cand.store.dir && options.baseline == options.candidate {
        return Err(Error::Input(format!(
            "both sides are the same trials of {}: select different ones with --baseline and --candidate",
            base.store.dir.display()
        )));
    }
    let (output, summary) = compare(&base, &cand, options.fail_on).map_err(error)?;
    if options.json {
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
    if let Some(fail_on) = options.fail_on
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
        return Err(Error::Input(format!(
            "{}: no store at {}: nothing has run or been imported yet (`margin run {}`)",
            exp.name,
            store.dir.display(),
            exp.path.display()
        )));
    }
    let (records, _) = store.records()?;
    let (sessions, _) = store.session_records()?;
    Side::new(exp, store, selection, records, sessions).map_err(error)
}

/// The comparison's error as the command's: the analysis failing is said as a report's
/// failure is; a selection that keeps nothing (or names nothing) is bad input.
fn error(e: CompareError) -> Error {
    match e {
        CompareError::Analyze { experiment, source } => Error::Analyze { experiment, source },
        other => Error::Input(other.to_string()),
    }
}
