//! The command line (clap): the commands, each with its arguments, which are defined in
//! the command's own file (`cmd/<command>.rs`) and handed to it whole.

use clap::{Parser, Subcommand};

use crate::cmd;

/// Benchmark experiments with honest answers: a matrix of cells run in a fair order,
/// every raw output kept, and for each comparison a verdict with its margin of error.
#[derive(Debug, Parser)]
#[command(name = "margin", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate experiment files; print every problem as `file:line:col: message`.
    Check(cmd::check::CheckArgs),
    /// Expand the matrix: cells, which run here and which are pending, trials, estimated
    /// time; runs no trial (only the `probe:` commands of environment factors).
    Plan(cmd::plan::PlanArgs),
    /// Run the trials still missing for the cells that match this host, appending them
    /// to the store. Interrupt with Ctrl-C: the trial under way is recorded, and the next
    /// `run` resumes.
    Run(cmd::run::RunArgs),
    /// Add trials from outputs captured elsewhere (another machine, an old run, a post),
    /// parsed with the experiment's parser. Importing the same file twice does nothing.
    Import(cmd::import::ImportArgs),
    /// Run the parsers again over the stored raw outputs, after a parser fix or a new
    /// extractor; nothing is executed. The old log is kept aside.
    Reparse(cmd::reparse::ReparseArgs),
    /// Per experiment: cells done, pending and abandoned, trials, last run.
    Status(cmd::status::StatusArgs),
    /// Rebuild `report.md`, `summary.json` and the plots from the store; runs no trial
    /// (only the `probe:` commands of environment factors, for the pending cells).
    Report(cmd::report::ReportArgs),
    /// Compare two stores, or two selections of one store, with the report's analysis: a
    /// verdict per cell and metric, the candidate against the baseline. Cells whose
    /// commands differ are listed as not comparable, and so are the differences between
    /// the two sides' machines. Exit 1 with `--fail-on` when it trips, for CI gates.
    Compare(cmd::compare::CompareArgs),
    /// The runs of one or more stores in time order, and for each cell and metric where it
    /// changed across them: each run one observation, change points with their steps'
    /// intervals. Exit 1 with `--fail-on worse` when a newest change is worse beyond ±δ.
    History(cmd::history::HistoryArgs),
    /// Which level of an ordered factor made a metric worse: a bisection whose every step
    /// is a sequential decision with its error spent in advance, one trial at a time,
    /// each recorded in the store (kill it and run it again: it resumes). Exit 0 when the
    /// change is found or narrowed, 1 when there is no regression to locate.
    Bisect(cmd::bisect::BisectArgs),
    /// Write the tidy table (one row per trial × metric) for pandas, R, DuckDB, Spark.
    Export(cmd::export::ExportArgs),
    /// Print the JSON Schema of the experiment file, for editor completion.
    Schema,
    /// Check margin's error rates: simulate experiments with a known truth (few trials,
    /// skewed or heavy-tailed values, outliers, pairs, rates, sessions, adaptive
    /// repetitions), analyse each as a report would, and print per scenario how often a
    /// difference is claimed that is not there, how often the interval covers the truth,
    /// and how often a true change of 10 % or 20 % is found.
    Calibrate(cmd::calibrate::CalibrateArgs),
}

impl Command {
    /// Runs the command, its output to `out` (a long run's lines go to stdout directly, as
    /// they happen); `terminal`: stdout is a terminal.
    pub fn run(&self, terminal: bool, out: &mut dyn std::io::Write) -> Result<(), cmd::Error> {
        match self {
            Command::Check(args) => cmd::check::run(args, out),
            Command::Plan(args) => cmd::plan::run(args, terminal, out),
            // Lines of a long run should appear as they happen, not when the buffer fills.
            Command::Run(args) => cmd::run::run(args, terminal, &mut std::io::stdout()),
            Command::Import(args) => cmd::import::run(args, out),
            Command::Reparse(args) => cmd::reparse::run(args, out),
            Command::Status(args) => cmd::status::run(args, out),
            Command::Report(args) => cmd::report::run(args, terminal, out),
            Command::Compare(args) => cmd::compare::run(args, out),
            Command::History(args) => cmd::history::run(args, out),
            Command::Bisect(args) => cmd::bisect::run(args, out),
            Command::Export(args) => cmd::export::run(args),
            Command::Schema => cmd::schema(out).map_err(cmd::Error::Output),
            Command::Calibrate(args) => cmd::calibrate::run(args, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_store_root_is_absolute_from_the_start() {
        let cli = Cli::try_parse_from(["margin", "status", "--reports", "some/where"]).unwrap();
        let Command::Status(args) = cli.command else { panic!("not status") };
        assert!(args.reports.root.is_absolute(), "{}", args.reports.root.display());
        assert_eq!(args.reports.root, std::env::current_dir().unwrap().join("some/where"));
        let given = Cli::try_parse_from(["margin", "status", "--reports", "/srv/stores"]).unwrap();
        let Command::Status(args) = given.command else { panic!("not status") };
        assert_eq!(args.reports.root, PathBuf::from("/srv/stores"));
    }

    #[test]
    fn an_empty_store_root_is_refused() {
        let err = Cli::try_parse_from(["margin", "status", "--reports", ""]).unwrap_err();
        assert!(err.to_string().contains("an empty path"), "{err}");
    }
}
