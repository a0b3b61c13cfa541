//! `margin bisect FILE --factor F`: which level of an ordered factor made a metric worse.
//! The bisection ([`crate::analyze::bisect`]) asks for one trial of a level at a time;
//! each is run here through the run stage, as a session of its own labelled for the
//! bisection, so that it is recorded in the experiment's store like any run's (raw
//! output kept). Nothing else is kept: on start, and after each trial, the state is
//! replayed from the store's labelled trials, so that an interrupted bisection resumes
//! with the same command. The answer is printed as Markdown ([`crate::report::bisect`])
//! or JSON; exit 0 when a change is located (found or narrowed), 1 when not.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::args::Reports;
use super::bisect_boots::{OneTrial, Trials, replayed};
use super::{Error, io, load_all_in, to_stderr};
use crate::analyze::bisect::{self, Ask, Replay};
use crate::plan::Plan;
use crate::run::{self, RunOptions};
use crate::spec::Experiment;
use crate::store::{BisectRecord, Store};
use stats::bisect::Next;

/// `margin bisect`'s arguments.
#[derive(Debug, clap::Args)]
#[command(after_help = "Exit status: 0 when the change is found or narrowed to a range; 1 when there is \
                        no regression between the ends, the bad end is the better one, or the ends' \
                        comparison is not settled; 2 for bad input.")]
pub struct BisectArgs {
    /// The experiment file (YAML).
    pub file: PathBuf,
    /// The factor to bisect: a factor of the matrix with 3 or more levels, in the order
    /// the file lists them.
    #[arg(long, value_name = "FACTOR")]
    pub factor: String,
    /// The level known good (default: the factor's first).
    #[arg(long, value_name = "LEVEL")]
    pub good: Option<String>,
    /// The level known bad (default: the factor's last).
    #[arg(long, value_name = "LEVEL")]
    pub bad: Option<String>,
    /// The metric bisected (default: the file's first).
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// The level of another factor with several levels, as `factor=level` (repeat).
    #[arg(long = "set", value_name = "FACTOR=LEVEL")]
    pub set: Vec<String>,
    /// Print the answer as JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub reports: Reports,
}

pub fn run(args: &BisectArgs, out: &mut dyn Write) -> Result<(), Error> {
    let (exp, plan) =
        load_all_in(std::slice::from_ref(&args.file), usize::MAX, Some(&args.reports.root))?.remove(0);
    let set: Vec<(String, String)> = args
        .set
        .iter()
        .map(|s| match s.split_once('=') {
            Some((k, v)) => Ok((k.trim().to_owned(), v.trim().to_owned())),
            None => Err(Error::Input(format!("--set {s}: write it as factor=level"))),
        })
        .collect::<Result<_, _>>()?;
    let ask = Ask {
        factor: &args.factor,
        good: args.good.as_deref(),
        bad: args.bad.as_deref(),
        metric: args.metric.as_deref(),
        set: &set,
    };
    let start = bisect::start(&exp, &plan, &ask).map_err(Error::Input)?;
    let store = Store::new(&args.reports.root, &exp.name);
    let t = start.target();
    store.log_bisect(&BisectRecord {
        label: t.label.clone(),
        factor: t.factor.clone(),
        good: t.levels[t.good].clone(),
        bad: t.levels[t.bad].clone(),
        metric: t.metric.clone(),
        fixed: t.fixed.clone(),
        at: jiff::Timestamp::now().to_string(),
    })?;
    let replay = match &t.booted {
        Some(booted) => super::bisect_boots::drive(&exp, &plan, &store, &start, booted)?,
        None => drive(&exp, &plan, &store, &start)?,
    };
    let answer =
        replay.answer().ok_or_else(|| Error::Input("the bisection ended without an answer".into()))?;
    if args.json {
        let json = crate::report::bisect::WithCommits::new(&answer, exp.git_factor(&args.factor));
        let text = crate::summary::json::to_string(&json).map_err(|e| Error::Output(e.into()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        let commits = crate::spec::git::subjects(&exp.git);
        write!(out, "{}", crate::report::bisect::markdown(&answer, &commits)).map_err(io)?;
    }
    out.flush().map_err(io)?;
    if answer.verdict.located() {
        Ok(())
    } else {
        Err(Error::Gate(format!("bisect: {}", crate::report::bisect::verdict_line(&answer))))
    }
}

/// Runs the trials the bisection asks for, one session each, until it answers.
fn drive(exp: &Experiment, plan: &Plan, store: &Store, start: &Replay) -> Result<Replay, Error> {
    let interrupt = Arc::new(AtomicBool::new(false));
    run::process::watch_signals(Arc::clone(&interrupt));
    let mut asked: Option<(usize, u64)> = None;
    loop {
        let replay = replayed(store, start)?;
        let Next::Measure(level) = replay.next() else { return Ok(replay) };
        let t = replay.target();
        let name = format!("{}={}", t.factor, t.levels[level]);
        if asked == Some((level, replay.units())) {
            return Err(Error::Input(format!(
                "{name}: its trial was recorded without a value of `{}`; see its raw output in {}",
                t.metric,
                store.dir.display()
            )));
        }
        asked = Some((level, replay.units()));
        let Some(cell) = t.cells[level] else {
            return Err(Error::Input(format!("{name}: no cell of {} has this level", exp.path.display())));
        };
        let rule = OneTrial { cell, want: replay.measured(level) + 1 };
        let options = RunOptions {
            host: Some(crate::plan::host_of(plan, &plan.cells[cell]).to_owned()),
            label: Some(t.label.clone()),
            ..RunOptions::default()
        };
        let run = run::Run { exp, plan, store, options: &options, rule: &rule, interrupt: &interrupt };
        let outcome = match run::run(&run, &mut Trials) {
            Ok(outcome) => outcome,
            Err(source) if source.is_disk_full() => {
                return Err(Error::DiskFull { experiment: exp.name.clone(), log: store.runs_path(), source });
            }
            Err(source) => return Err(Error::Stopped { experiment: exp.name.clone(), source }),
        };
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        if let Some(p) = outcome.pending.first() {
            return Err(Error::Input(format!("{}: cannot run here: {}", p.label, p.why)));
        }
        if outcome.has_failures() {
            // an abandoned cell was said as a note (`Trials::note`), a failed host was not
            for h in &outcome.host_errors {
                to_stderr(format_args!("host {} failed: {}", h.host, h.why));
            }
            let build = outcome.abandoned.iter().all(|a| matches!(a.why, run::GaveUp::Setup(_)));
            if build && !outcome.abandoned.is_empty() && outcome.host_errors.is_empty() {
                to_stderr(format_args!(
                    "bisect: {name}: its `setup` (the build) failed: skipped, as `git bisect skip`; its output is in {}",
                    store.raw_dir().display()
                ));
                continue;
            }
            if !outcome.abandoned.is_empty() || !outcome.host_errors.is_empty() {
                to_stderr(format_args!(
                    "bisect: {name} could not be measured; its trials are in {}; run the same command again to resume",
                    store.dir.display()
                ));
                return Err(Error::Trials);
            }
        }
    }
}
