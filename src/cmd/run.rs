//! `margin run FILE…`: run what is missing, say what is pending and how to complete it.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::args::Reports;
use super::{Error, io, load_all_in};
use crate::analyze::stopping::Rule;
use crate::outlook::dry_run::{DryRunError, write_dry_run};
use crate::plan::{DEFAULT_MAX_CELLS, Plan};
use crate::run::display::{Bar, Lines, Progress};
use crate::run::{self, Abandoned, CleanupFailed, GaveUp, HostFailure, Outcome, RunOptions};
use crate::spec::Experiment;
use crate::store::Store;

/// `margin run`'s arguments.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Experiment files (YAML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Move the old trial log aside (nothing is deleted) and start over.
    #[arg(long)]
    pub fresh: bool,
    /// Seed of the interleaved order (default: the file's `seed`, else random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run this many repetitions per cell instead of the file's rule.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub repetitions: Option<u32>,
    /// Show what would run, with the rendered commands; run no trial or hook (only
    /// the `probe:` commands of environment factors).
    #[arg(long)]
    pub dry_run: bool,
    /// Keep each cell's scratch directory (`workdir`) after the run.
    #[arg(long)]
    pub keep_workdir: bool,
    /// Run only the cells of this host (a key of `hosts:`, or `local`).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Record this label in the run's sessions (`v2`, `before-patch`), so that
    /// `margin compare --baseline label=v1 --candidate label=v2` can select them.
    #[arg(long, value_name = "LABEL", value_parser = super::args::label)]
    pub label: Option<String>,
    /// Confirm a change point of a series: measure its two sides, levels `A,B`
    /// (neighbours, A first), again in alternation until their comparison is settled, in
    /// a store of their own (`NAME-confirm-A-B`); the run says confirmed or not.
    #[arg(long, value_name = "A,B")]
    pub confirm: Option<String>,
    /// Refuse matrices with more cells than this.
    #[arg(long, default_value_t = DEFAULT_MAX_CELLS)]
    pub max_cells: usize,
    #[command(flatten)]
    pub reports: Reports,
}

impl RunArgs {
    /// How to run, as the library takes it.
    fn options(&self) -> RunOptions {
        RunOptions {
            seed: self.seed,
            repetitions: self.repetitions,
            keep_workdir: self.keep_workdir,
            fresh: self.fresh,
            host: self.host.clone(),
            label: self.label.clone(),
            ..Default::default()
        }
    }
}

/// `terminal`: stdout is a terminal, where the answer at the end is cut to what a person
/// reads.
pub fn run(args: &RunArgs, terminal: bool, out: &mut dyn Write) -> Result<(), Error> {
    let options = &args.options();
    let reports = &args.reports.root;
    let mut experiments = load_all_in(&args.files, args.max_cells, Some(reports))?;
    if let Some(pair) = &args.confirm {
        experiments = super::confirm::confirming(experiments, pair, reports, args.max_cells)?;
    }
    if let Some(only) = &options.host {
        for (exp, plan) in &experiments {
            let mut hosts: Vec<&str> = plan.cells.iter().map(|c| crate::plan::host_of(plan, c)).collect();
            hosts.dedup();
            if !hosts.contains(&only.as_str()) {
                hosts.sort_unstable();
                hosts.dedup();
                return Err(Error::Input(format!(
                    "--host {only}: no cell of {} runs there; its hosts are: {}",
                    exp.name,
                    hosts.join(", ")
                )));
            }
        }
    }
    if args.dry_run {
        for (exp, plan) in &experiments {
            dry_run(exp, plan, reports, options, out)?;
        }
        return Ok(());
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    run::process::watch_signals(Arc::clone(&interrupt));
    let mut failures = false;
    for (exp, plan) in &experiments {
        let store = Store::new(reports, &exp.name);
        let mut ui: Box<dyn Progress> =
            if std::io::stderr().is_terminal() { Box::new(Bar::new()) } else { Box::new(Lines) };
        writeln!(out, "{}: {}", exp.name, describe(plan, options)).map_err(io)?;
        let rule = Rule::new(exp, plan, run::repetitions(plan, options));
        let run = run::Run { exp, plan, store: &store, options, rule: &rule, interrupt: &interrupt };
        let outcome = match run::run(&run, ui.as_mut()) {
            Ok(outcome) => outcome,
            Err(source) if source.is_disk_full() => {
                let log = store.runs_path();
                return Err(Error::DiskFull { experiment: exp.name.clone(), log, source });
            }
            Err(source) => return Err(Error::Stopped { experiment: exp.name.clone(), source }),
        };
        summary(exp, &outcome, out).map_err(io)?;
        // The answer, from everything the store holds now (also after an interruption):
        // what the run read plus what it added, read again now that it has let go.
        // A run that begins meanwhile writes a newer report: this one is then left out.
        let (path, report) = super::report::write(exp, plan, &store, &outcome.pending)?;
        match path {
            Some(path) => writeln!(out, "  report: {}", path.display()).map_err(io)?,
            None => writeln!(out, "  report: left to the run that began meanwhile").map_err(io)?,
        }
        let whole = super::answer::Whole::new(&format!("margin report {}", exp.path.display()), &store);
        super::answer::answer(&report, terminal.then_some(&whole), out).map_err(io)?;
        if args.confirm.is_some() {
            super::confirm::say(&report, out)?;
        }
        failures |= outcome.has_failures();
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
    }
    if failures { Err(Error::Trials) } else { Ok(()) }
}

fn describe(plan: &Plan, options: &RunOptions) -> String {
    let mut p = plan.clone();
    p.repetitions = run::repetitions(plan, options);
    p.to_string()
}

fn summary(exp: &Experiment, o: &Outcome, out: &mut dyn Write) -> std::io::Result<()> {
    let state = if o.interrupted { " (interrupted)" } else { "" };
    // where the pending cells wait: on the hosts they name (the ssh hosts a run drives),
    // else on the machine margin runs on
    let hosts = o.pending_hosts();
    let place = match hosts.as_slice() {
        [] => "on this host".to_owned(),
        [one] => format!("on host `{one}`"),
        many => format!("on hosts `{}`", many.join("`, `")),
    };
    writeln!(
        out,
        "{}{state}: {} of {} cells complete, {} pending {place}, {} abandoned",
        exp.name,
        o.complete,
        o.cells,
        o.pending.len(),
        o.abandoned.len()
    )?;
    let warmups = if o.warmups > 0 { format!(" (+ {} warm-ups)", o.warmups) } else { String::new() };
    writeln!(
        out,
        "  this session: {} ok, {} failed, {} timed out, {} parse errors{warmups}",
        o.ok, o.failed, o.timed_out, o.parse_errors
    )?;
    writeln!(out, "  store: {} (seed {})", o.store.display(), o.seed)?;
    for HostFailure { host, why } in &o.host_errors {
        writeln!(out, "  host {host} failed: {why}")?;
    }
    if o.set_aside > 0 {
        writeln!(out, "  set aside: {} records of cells whose commands have changed since", o.set_aside)?;
    }
    // a session stopped early on a mistake every cell made: said once, for all its cells
    let (stopped, abandoned): (Vec<&Abandoned>, Vec<&Abandoned>) =
        o.abandoned.iter().partition(|a| matches!(a.why, GaveUp::SameWay { .. }));
    let pairs = |cells: Vec<&Abandoned>| -> Vec<(String, String)> {
        cells.into_iter().map(|a| (a.label.clone(), a.why.to_string())).collect()
    };
    let (stopped, abandoned) = (pairs(stopped), pairs(abandoned));
    for (why, labels) in crate::reason::by_reason(&stopped) {
        let cells = if labels.len() == 1 { "1 cell".to_string() } else { format!("{} cells", labels.len()) };
        writeln!(out, "  stopped early, {cells} left to run: {why}")?;
    }
    // grouped by reason: a mistake every cell makes (a regex that matches nothing, a
    // missing tool) is said once, with the cells it abandoned, not once a cell
    for (why, labels) in crate::reason::by_reason(&abandoned) {
        match labels.as_slice() {
            [label] => writeln!(out, "  abandoned {label}: {why}")?,
            _ => writeln!(
                out,
                "  abandoned {} cells ({}) the same way; the first: {why}",
                labels.len(),
                crate::reason::some_of(&labels)
            )?,
        }
    }
    for CleanupFailed { label, why } in &o.cleanup_failed {
        writeln!(out, "  cleanup failed {label}: {why}")?;
    }
    if !o.pending.is_empty() {
        writeln!(out, "  pending, for another host or boot:")?;
        for (why, labels) in o.pending_by_reason() {
            match labels.as_slice() {
                [label] => writeln!(out, "    {label}: {why}")?,
                _ => {
                    writeln!(out, "    {} cells ({}): {why}", labels.len(), crate::reason::some_of(&labels))?
                }
            }
        }
        writeln!(
            out,
            "  to complete them, boot or log into a matching host and run `margin run {}` again: results accumulate in the same store",
            exp.path.display()
        )?;
    }
    Ok(())
}

/// `--dry-run`: what would run here, with the commands rendered; nothing is executed.
fn dry_run(
    exp: &Experiment,
    plan: &Plan,
    reports: &Path,
    options: &RunOptions,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let store = Store::new(reports, &exp.name);
    let outlook = crate::outlook::outlook(exp, plan, &store.load()?, options)?.cells;
    writeln!(out, "{}: {} (dry run: nothing is executed)", exp.name, describe(plan, options)).map_err(io)?;
    write_dry_run(exp, plan, &outlook, &store, options, out).map_err(|e| match e {
        DryRunError::Spec(d) => Error::Spec(d),
        DryRunError::Output(e) => Error::Output(e),
    })
}
