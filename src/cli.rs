//! The command line (clap). Parsed arguments become plain settings before work starts.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::plan::DEFAULT_MAX_CELLS;

/// Benchmark experiments with honest answers: a matrix of cells run in a fair order,
/// every raw output kept, and for each comparison a verdict with its margin of error.
#[derive(Debug, Parser)]
#[command(name = "margin", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Where the stores live.
#[derive(Debug, Clone, Args)]
pub struct Reports {
    /// Folder holding one store per experiment (`reports/<name>/`); relative to the
    /// working directory.
    #[arg(
        long = "reports",
        env = "MARGIN_REPORTS",
        default_value = "reports",
        value_name = "DIR",
        value_parser = absolute
    )]
    pub root: PathBuf,
}

/// A path made absolute against the working directory, once, here at the edge: a trial
/// runs inside its workdir, so a relative store root would name another place there
/// (`{{ workdir }}`, raw outputs). Symbolic links are kept as written.
fn absolute(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        return Err("an empty path; give a folder, e.g. `reports`".to_string());
    }
    std::path::absolute(text).map_err(|e| format!("cannot make `{text}` absolute: {e}"))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate experiment files; print every problem as `file:line:col: message`.
    Check {
        /// Experiment files (YAML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Refuse matrices with more cells than this.
        #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
        max_cells: usize,
    },
    /// Expand the matrix: cells, which run here and which are pending, trials, estimated
    /// time; runs no trial (only the `probe:` commands of environment factors).
    Plan {
        /// The experiment file.
        file: PathBuf,
        /// List every cell (on a terminal only the first 50 are shown).
        #[arg(long)]
        all: bool,
        /// Print the plan as JSON: cells with ids, levels and state.
        #[arg(long)]
        json: bool,
        /// Refuse matrices with more cells than this.
        #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
        max_cells: usize,
        #[command(flatten)]
        reports: Reports,
    },
    /// Run the trials still missing for the cells that match this host, appending them
    /// to the store. Interrupt with Ctrl-C: the trial under way is recorded, and the next
    /// `run` resumes.
    Run {
        /// Experiment files (YAML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Move the old trial log aside (nothing is deleted) and start over.
        #[arg(long)]
        fresh: bool,
        /// Seed of the interleaved order (default: the file's `seed`, else random).
        #[arg(long)]
        seed: Option<u64>,
        /// Run this many repetitions per cell instead of the file's rule.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        repetitions: Option<u32>,
        /// Show what would run, with the rendered commands; run no trial or hook (only
        /// the `probe:` commands of environment factors).
        #[arg(long)]
        dry_run: bool,
        /// Keep each cell's scratch directory (`workdir`) after the run.
        #[arg(long)]
        keep_workdir: bool,
        /// Run only the cells of this host (a key of `hosts:`, or `local`).
        #[arg(long, value_name = "NAME")]
        host: Option<String>,
        /// Record this label in the run's sessions (`v2`, `before-patch`), so that
        /// `margin compare --baseline label=v1 --candidate label=v2` can select them.
        #[arg(long, value_name = "LABEL", value_parser = label)]
        label: Option<String>,
        /// Refuse matrices with more cells than this.
        #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
        max_cells: usize,
        #[command(flatten)]
        reports: Reports,
    },
    /// Add trials from outputs captured elsewhere (another machine, an old run, a post),
    /// parsed with the experiment's parser. Importing the same file twice does nothing.
    Import {
        /// The experiment file.
        file: PathBuf,
        /// The cell the outputs belong to, as `factor=level` (repeat for each factor).
        #[arg(long = "set", value_name = "FACTOR=LEVEL", required = true)]
        set: Vec<String>,
        /// The host the outputs come from (default: the cell's `host` level, else `imported`).
        #[arg(long, conflicts_with = "member")]
        host: Option<String>,
        /// For a gang's cell (`--set host=GANG`): one member's output of one trial the
        /// members ran at once, as `HOST=FILE`; give one per member.
        #[arg(long, value_name = "HOST=FILE", conflicts_with = "raw")]
        member: Vec<String>,
        /// When the outputs were measured, e.g. the "Run began" line of iozone: RFC 3339
        /// (`2006-11-23T18:25:53+01:00`) or `YYYY-MM-DD HH:MM:SS` (taken as UTC). Every
        /// trial of this import gets it. Without it the time is unknown (recorded as null,
        /// never the time of the import), and the report says so where time matters.
        #[arg(long, value_name = "TIME", value_parser = crate::cmd::import::parse_started_at)]
        started_at: Option<jiff::Timestamp>,
        /// The boot the outputs were measured in, named as you like (`--boot bare-1`):
        /// imports naming the same boot are one boot in the analysis, as the sessions of a
        /// run in one `boot_id` are. Without it each import is a unit of its own, as if
        /// every output came from a boot of its own; a post that ran every figure of a
        /// kernel in one boot wants one name per kernel, so that its comparison across
        /// boots reads `unreplicated` rather than claiming what one boot cannot show.
        #[arg(long, value_name = "NAME", value_parser = crate::cmd::import::parse_boot)]
        boot: Option<String>,
        /// The captured outputs; a file holding several results gives several trials.
        #[arg(required_unless_present = "member", value_name = "RAW")]
        raw: Vec<PathBuf>,
        #[command(flatten)]
        reports: Reports,
    },
    /// Run the parsers again over the stored raw outputs, after a parser fix or a new
    /// extractor; nothing is executed. The old log is kept aside.
    Reparse {
        /// The experiment file.
        file: PathBuf,
        #[command(flatten)]
        reports: Reports,
    },
    /// Per experiment: cells done, pending and abandoned, trials, last run.
    Status {
        /// Experiment files, store folders or names, as for `report` (default: every
        /// `experiments/*.yaml`).
        files: Vec<PathBuf>,
        #[command(flatten)]
        reports: Reports,
    },
    /// Rebuild `report.md`, `summary.json` and the plots from the store; runs no trial
    /// (only the `probe:` commands of environment factors, for the pending cells).
    Report {
        /// The experiment file; a store folder (`reports/dd-write`), read with the
        /// experiment file it keeps; or a name: `dd-write` for experiments/dd-write.yaml,
        /// else the store of that name.
        target: PathBuf,
        /// Also print `summary.json`.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        reports: Reports,
    },
    /// Compare two stores, or two selections of one store, with the report's analysis: a
    /// verdict per cell and metric, the candidate against the baseline. Cells whose
    /// commands differ are listed as not comparable, and so are the differences between
    /// the two sides' machines. Exit 1 with `--fail-on` when it trips, for CI gates.
    Compare {
        /// The baseline's store, then the candidate's: experiment files, store folders or
        /// names, as for `report`. One store alone needs --baseline and --candidate.
        #[arg(required = true, num_args = 1..=2, value_name = "TARGET")]
        targets: Vec<PathBuf>,
        /// Which trials of the (first) store are the baseline: `label=v1` (a `run
        /// --label`), `session=ID` (or the start of one), `since=TIME`, `until=TIME`
        /// (RFC 3339, `YYYY-MM-DD HH:MM:SS` or a date, UTC), several joined by commas.
        /// Default: every trial.
        #[arg(long, value_name = "SELECTION")]
        baseline: Option<crate::cmd::compare::Selection>,
        /// Which trials of the (second) store are the candidate, as for --baseline.
        #[arg(long, value_name = "SELECTION")]
        candidate: Option<crate::cmd::compare::Selection>,
        /// Exit 1 when a metric is `worse` beyond ±δ (verdict `significant` in the worse
        /// direction), or has `change`d beyond ±δ either way.
        #[arg(long, value_name = "WHEN")]
        fail_on: Option<crate::cmd::compare::FailOn>,
        /// Print the comparison as JSON instead of Markdown.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        reports: Reports,
    },
    /// Write the tidy table (one row per trial × metric) for pandas, R, DuckDB, Spark.
    Export {
        /// The experiment file, a store folder or a name, as for `report`.
        target: PathBuf,
        /// csv, parquet or ndjson.
        #[arg(long, value_parser = parse_format)]
        format: crate::analyze::Format,
        /// Write to this file instead of stdout (parquet needs it on a terminal).
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        reports: Reports,
    },
    /// Print the JSON Schema of the experiment file, for editor completion.
    Schema,
    /// Check margin's error rates: simulate experiments with a known truth (few trials,
    /// skewed or heavy-tailed values, outliers, pairs, rates, sessions, adaptive
    /// repetitions), analyse each as a report would, and print per scenario how often a
    /// difference is claimed that is not there, how often the interval covers the truth,
    /// and how often a true change of 10 % or 20 % is found.
    Calibrate {
        /// Simulated experiments per scenario and true change.
        #[arg(long, value_name = "N", default_value_t = crate::calibrate::DEFAULT_EXPERIMENTS,
              value_parser = clap::value_parser!(u64).range(1..))]
        experiments: u64,
        /// Seed of the simulation: the same seed gives the same numbers.
        #[arg(long, value_name = "S", default_value_t = 1)]
        seed: u64,
        /// Run only the scenarios whose name contains this (`^` anchors it at the name's
        /// start, `$` at its end; repeat for several).
        #[arg(long, value_name = "FILTER")]
        scenario: Vec<String>,
        /// Print the results as JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
}

/// A run label: letters, digits and `-_.+:@/`, at most 64 of them, so that it reads the
/// same in a selection (`label=v2`), a table and a shell.
fn label(text: &str) -> Result<String, String> {
    let allowed = |c: char| c.is_alphanumeric() || "-_.+:@/".contains(c);
    match text.chars().find(|c| !allowed(*c)) {
        _ if text.is_empty() => Err("an empty label; give a word such as `v2` or `before-patch`".to_owned()),
        _ if text.chars().count() > 64 => {
            Err(format!("a label of {} characters; at most 64", text.chars().count()))
        }
        Some(c) => Err(format!("`{c}` in the label `{text}`: a label holds letters, digits and `-_.+:@/`")),
        None => Ok(text.to_owned()),
    }
}

fn parse_format(s: &str) -> Result<crate::analyze::Format, String> {
    s.parse().map_err(|e: <crate::analyze::Format as std::str::FromStr>::Err| e.to_string())
}

impl Command {
    /// Runs the command, its output to `out` (a long run's lines go to stdout directly, as
    /// they happen); `terminal`: stdout is a terminal.
    pub fn run(&self, terminal: bool, out: &mut dyn std::io::Write) -> Result<(), crate::cmd::Error> {
        match self {
            Command::Check { files, max_cells } => crate::cmd::check::run(files, *max_cells, out),
            Command::Plan { file, all, json, max_cells, reports } => {
                let options = crate::cmd::plan::PlanOptions {
                    file,
                    all: *all,
                    json: *json,
                    max_cells: *max_cells,
                    terminal,
                    reports: &reports.root,
                };
                crate::cmd::plan::run(&options, out)
            }
            Command::Run {
                files,
                fresh,
                seed,
                repetitions,
                dry_run,
                keep_workdir,
                host,
                label,
                max_cells,
                reports,
            } => {
                let options = crate::cmd::run::Options {
                    files: files.clone(),
                    reports: reports.root.clone(),
                    run: crate::run::RunOptions {
                        seed: *seed,
                        repetitions: *repetitions,
                        keep_workdir: *keep_workdir,
                        fresh: *fresh,
                        host: host.clone(),
                        label: label.clone(),
                        ..Default::default()
                    },
                    dry_run: *dry_run,
                    max_cells: *max_cells,
                    terminal,
                };
                // Lines of a long run should appear as they happen, not when the buffer fills.
                let mut direct = std::io::stdout();
                crate::cmd::run::run(&options, &mut direct)
            }
            Command::Import { file, set, host, started_at, boot, raw, member, reports } => {
                let options = crate::cmd::import::Options {
                    file: file.clone(),
                    set: set.clone(),
                    host: host.clone(),
                    started_at: *started_at,
                    boot: boot.clone(),
                    raw: raw.clone(),
                    members: member.clone(),
                    reports: reports.root.clone(),
                };
                crate::cmd::import::run(&options, out)
            }
            Command::Reparse { file, reports } => crate::cmd::reparse::run(file, &reports.root, out),
            Command::Status { files, reports } => crate::cmd::status::run(files, &reports.root, out),
            Command::Report { target, json, reports } => {
                crate::cmd::report::run(target, *json, terminal, &reports.root, out)
            }
            Command::Compare { targets, baseline, candidate, fail_on, json, reports } => {
                let options = crate::cmd::compare::Options {
                    targets: targets.clone(),
                    baseline: baseline.clone(),
                    candidate: candidate.clone(),
                    fail_on: *fail_on,
                    json: *json,
                    reports: reports.root.clone(),
                };
                crate::cmd::compare::run(&options, out)
            }
            Command::Export { target, format, output, reports } => {
                crate::cmd::export::run(target, *format, output.as_deref(), &reports.root)
            }
            Command::Schema => crate::cmd::schema(out).map_err(crate::cmd::Error::Output),
            Command::Calibrate { experiments, seed, scenario, json } => {
                let options = crate::cmd::calibrate::Options {
                    calibrate: crate::calibrate::Options {
                        experiments: *experiments,
                        seed: *seed,
                        filters: scenario.clone(),
                    },
                    json: *json,
                };
                crate::cmd::calibrate::run(&options, out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_root_is_absolute_from_the_start() {
        let cli = Cli::try_parse_from(["margin", "status", "--reports", "some/where"]).unwrap();
        let Command::Status { reports, .. } = cli.command else { panic!("not status") };
        assert!(reports.root.is_absolute(), "{}", reports.root.display());
        assert_eq!(reports.root, std::env::current_dir().unwrap().join("some/where"));
        let given = Cli::try_parse_from(["margin", "status", "--reports", "/srv/stores"]).unwrap();
        let Command::Status { reports, .. } = given.command else { panic!("not status") };
        assert_eq!(reports.root, PathBuf::from("/srv/stores"));
    }

    #[test]
    fn a_label_is_a_word() {
        assert_eq!(label("v2.1-rc+1"), Ok("v2.1-rc+1".to_owned()));
        assert!(label("").unwrap_err().contains("an empty label"));
        assert!(label("v 2").unwrap_err().contains("` ` in the label"));
        assert!(label("a,b").unwrap_err().contains("`,`"));
        assert!(label(&"x".repeat(65)).unwrap_err().contains("at most 64"));
    }

    #[test]
    fn an_empty_store_root_is_refused() {
        let err = Cli::try_parse_from(["margin", "status", "--reports", ""]).unwrap_err();
        assert!(err.to_string().contains("an empty path"), "{err}");
    }
}
