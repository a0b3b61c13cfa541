//! Command handlers: each loads what it needs, calls the stages, and prints; how a command
//! ends is its [`Error`], and the exit code follows from it.
//!
//! Exit codes, the contract with scripts (README.md and docs/ say the same):
//!
//! | code | when |
//! |------|------|
//! | 0    | done; also when stdout was closed early (`margin export … \| head`) |
//! | 1    | finished, but trials failed, cells were abandoned or a host was unreachable; `compare --fail-on` tripped; `bisect` located no change; or writing to stdout failed |
//! | 2    | bad input: usage, an experiment file, a name that matches nothing, a locked store, a store that cannot be read or written, a full disk |
//! | 130  | interrupted (Ctrl-C or SIGTERM); the next `run` resumes |

pub mod answer;
pub mod args;
pub mod bisect;
mod bisect_boots;
pub mod calibrate;
pub mod check;
pub mod compare;
mod confirm;
pub mod export;
pub mod history;
pub mod import;
mod load;
pub mod plan;
pub mod reparse;
pub mod report;
pub mod run;
pub mod status;
pub mod target;

use std::error::Error as _;
use std::path::PathBuf;

use polars::error::PolarsError;

use crate::analyze::AnalyzeError;
use crate::diag::Diagnostics;
use crate::parse::ParseError;
use crate::parse::extract::ExtractorError;
use crate::report::ReportError;
use crate::run::RunError;
use crate::store::StoreError;

/// How a command ended, beyond success. The typed cause is kept until `main` prints it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Problems in experiment files, printed as `file:line:col` blocks.
    #[error(transparent)]
    Spec(#[from] Diagnostics),
    /// `margin check`: every problem, then how many in how many files.
    #[error("{problems}\n{summary}")]
    Check { problems: Diagnostics, summary: String },
    /// What the command was asked cannot be done as asked (a name that matches nothing, a
    /// `--set` that names no cell, an output with no result); the message says what exists.
    #[error("{0}")]
    Input(String),
    /// The store is locked by another command, or cannot be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Reading what the store holds for a plan, before anything runs.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A run stopped by an error of its own (not a trial's).
    #[error("{experiment}: {source}")]
    Stopped { experiment: String, source: RunError },
    /// A run stopped because the disk is full: what was recorded is kept.
    #[error(
        "{experiment}: the disk is full: {source}\nevery trial recorded before is in {}; free some \
         space and run the same command again to resume",
        log.display()
    )]
    DiskFull { experiment: String, log: PathBuf, source: RunError },
    /// A metric's extractor in the experiment file does not compile.
    #[error("metric `{metric}`: {source}")]
    Recipe { metric: String, source: ExtractorError },
    /// An output given to `import` does not parse.
    #[error("{}: {source}", path.display())]
    Parse { path: PathBuf, source: ParseError },
    /// A file named on the command line, or a raw output kept in the store, cannot be read
    /// or written.
    #[error("{}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    /// The report (report.md, summary.json, plots) cannot be made or written.
    #[error("{experiment}: the report: {source}")]
    Report { experiment: String, source: ReportError },
    /// The store cannot be analysed for the report (said the same way: the report failed).
    #[error("{experiment}: the report: {source}")]
    Analyze { experiment: String, source: AnalyzeError },
    /// The table of trials cannot be built.
    #[error("{experiment}: {source}")]
    Table { experiment: String, source: PolarsError },
    /// The table cannot be written in the format asked, to `path` (or to stdout).
    #[error("{}{source}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Export { path: Option<PathBuf>, source: PolarsError },
    /// Finished, but some trials failed, cells were abandoned or a host failed (its boots,
    /// its connection): the run's summary above names which.
    #[error("some trials or hosts failed; see above")]
    Trials,
    /// `margin compare --fail-on`: the candidate is worse (or changed) beyond ±δ; the
    /// message names each metric and cell. `margin bisect`: no change was located (no
    /// regression, an improvement, or the ends not settled); the message says which.
    #[error("{0}")]
    Gate(String),
    /// Stopped by Ctrl-C after recording the trial under way.
    #[error("interrupted; run the same command again to resume")]
    Interrupted,
    /// Writing to stdout failed; a closed pipe is no failure (see [`Error::is_closed_stdout`]).
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

impl Error {
    /// The process's exit code (the table above).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Trials | Error::Gate(_) | Error::Output(_) => 1,
            Error::Interrupted => 130,
            Error::Spec(_)
            | Error::Check { .. }
            | Error::Input(_)
            | Error::Store(_)
            | Error::Run(_)
            | Error::Stopped { .. }
            | Error::DiskFull { .. }
            | Error::Recipe { .. }
            | Error::Parse { .. }
            | Error::File { .. }
            | Error::Report { .. }
            | Error::Analyze { .. }
            | Error::Table { .. }
            | Error::Export { .. } => 2,
        }
    }

    /// Whether stdout was closed before everything was written (`margin plan … | head`):
    /// the reader has what it wanted, so the command ends quietly, with 0.
    pub fn is_closed_stdout(&self) -> bool {
        matches!(self, Error::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// What `main` prints: the message, then each cause it does not already say. Bad input
    /// is said as it is (a diagnostic is a `file:line:col` block); the rest start `error: `.
    pub fn message(&self) -> String {
        let mut text = match self {
            Error::Trials | Error::Interrupted | Error::Output(_) => format!("error: {self}"),
            _ => self.to_string(),
        };
        let mut cause = self.source();
        while let Some(e) = cause {
            let said = e.to_string();
            if !text.contains(&said) {
                text.push_str(": ");
                text.push_str(&said);
            }
            cause = e.source();
        }
        text
    }
}

/// A write to stdout failed.
pub(crate) fn io(e: std::io::Error) -> Error {
    Error::Output(e)
}

/// A line to stderr that never panics: `eprintln!` does when stderr is a closed pipe
/// (`margin report … 2>&1 | head`), and a note is not worth failing the command for.
pub(crate) fn to_stderr(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

pub(crate) use load::{load_all, load_all_in};

/// `margin schema`.
pub fn schema(out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(out, "{}", crate::spec::json_schema().trim_end())
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::diag::{Diagnostic, Pos};

    #[test]
    fn diagnostics_print_as_they_are_and_exit_2() {
        let d = Diagnostic::new(Path::new("e.yaml"), Pos::new(3, 7), "bad").with_hint("fix it");
        let e = Error::from(Diagnostics::from(d));
        assert_eq!(e.message(), "e.yaml:3:7: bad\n  hint: fix it");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn a_closed_stdout_is_no_failure_but_another_write_error_is() {
        let closed = Error::Output(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(closed.is_closed_stdout());
        let full = Error::Output(io::Error::from_raw_os_error(28));
        assert!(!full.is_closed_stdout());
        assert_eq!(full.exit_code(), 1);
        assert!(full.message().starts_with("error: cannot write the output: "), "{}", full.message());
        assert!(!Error::Input("broken pipe".into()).is_closed_stdout());
    }

    #[test]
    fn a_cause_is_said_once() {
        let source = io::Error::from_raw_os_error(28);
        let said = source.to_string();
        let e = Error::from(StoreError::Io { path: "r/runs.ndjson".into(), source });
        assert_eq!(e.message(), format!("r/runs.ndjson: {said}"));
        // polars words an io error with a message of its own: the cause is added
        let error = Arc::new(io::Error::other("the device is gone"));
        let source = PolarsError::IO { error, msg: Some("writing the csv".into()) };
        let e = Error::Export { path: Some("t.csv".into()), source };
        assert_eq!(e.message(), "t.csv: writing the csv: the device is gone");
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        assert_eq!(Error::Trials.exit_code(), 1);
        assert_eq!(Error::Interrupted.exit_code(), 130);
        assert_eq!(Error::Interrupted.message(), "error: interrupted; run the same command again to resume");
        assert_eq!(Error::Input("`x` is not a file".into()).message(), "`x` is not a file");
        let locked = StoreError::Locked { path: "r".into(), pid: "7".into(), command: "run".into() };
        assert_eq!(Error::from(locked).exit_code(), 2);
    }
}
