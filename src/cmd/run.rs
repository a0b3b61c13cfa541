//! `margin run FILE…`: run what is missing, say what is pending and how to complete it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Error, io, load_all};
use crate::analyze::stopping::Rule;
use crate::outlook::dry_run::{DryRunError, write_dry_run};
use crate::plan::Plan;
use crate::run::display::{Bar, Lines, Progress};
use crate::run::{self, Outcome, RunOptions};
use crate::spec::Experiment;
use crate::store::{Board, CellProgress, Store};

pub struct Options {
    pub files: Vec<PathBuf>,
    pub reports: PathBuf,
    pub run: RunOptions,
    pub dry_run: bool,
    pub max_cells: usize,
    /// stdout is a terminal: the answer at the end is cut to what a person reads.
    pub terminal: bool,
}

pub fn run(o: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let experiments = load_all(&o.files, o.max_cells)?;
    if let Some(only) = &o.run.host {
        for (exp, plan) in &experiments {
            let mut hosts: Vec<&str> = plan.cells.iter().map(|c| run::host_of(plan, c)).collect();
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
    if o.dry_run {
        for (exp, plan) in &experiments {
            dry_run(exp, plan, o, out)?;
        }
        return Ok(());
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    watch_signals(Arc::clone(&interrupt));
    let mut failures = false;
    for (exp, plan) in &experiments {
        let store = Store::new(&o.reports, &exp.name);
        let mut ui: Box<dyn Progress> =
            if std::io::stderr().is_terminal() { Box::new(Bar::new()) } else { Box::new(Lines) };
        writeln!(out, "{}: {}", exp.name, describe(plan, &o.run)).map_err(io)?;
        let rule = Rule::new(exp, plan, run::repetitions(plan, &o.run));
        let outcome = match run::run(exp, plan, &store, &o.run, &rule, &interrupt, ui.as_mut()) {
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
        super::answer::answer(&report, o.terminal.then_some(&whole), out).map_err(io)?;
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

/// The labels of `(label, reason)` pairs grouped by reason, in the order each reason
/// first appears: the same reason is the same first line once what differs by cell is
/// set aside (`reason::same_way`: numbers, paths, the cell's levels; the lines after
/// quote each trial's own output), and a group is said with the whole reason of its first
/// cell.
fn by_reason(pairs: &[(String, String)]) -> Vec<(&str, Vec<&str>)> {
    let mut groups: indexmap::IndexMap<String, (&str, Vec<&str>)> = indexmap::IndexMap::new();
    for (label, why) in pairs {
        let key = crate::reason::same_way(why, &crate::reason::levels_of_label(label));
        groups.entry(key).or_insert((why.as_str(), Vec::new())).1.push(label.as_str());
    }
    groups.into_values().collect()
}

fn summary(exp: &Experiment, o: &Outcome, out: &mut dyn Write) -> std::io::Result<()> {
    let state = if o.interrupted { " (interrupted)" } else { "" };
    writeln!(
        out,
        "{}{state}: {} of {} cells complete, {} pending on this host, {} abandoned",
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
    for (host, why) in &o.host_errors {
        writeln!(out, "  host {host} failed: {why}")?;
    }
    if o.set_aside > 0 {
        writeln!(out, "  set aside: {} records of cells whose commands have changed since", o.set_aside)?;
    }
    // a session stopped early on a mistake every cell made: said once, for all its cells
    let (stopped, abandoned): (Vec<_>, Vec<_>) =
        o.abandoned.iter().cloned().partition(|(_, why)| why.starts_with(crate::reason::STOPPED));
    for (why, labels) in by_reason(&stopped) {
        let cells = if labels.len() == 1 { "1 cell".to_string() } else { format!("{} cells", labels.len()) };
        writeln!(out, "  stopped early, {cells} left to run: {why}")?;
    }
    // grouped by reason: a mistake every cell makes (a regex that matches nothing, a
    // missing tool) is said once, with the cells it abandoned, not once a cell
    for (why, labels) in by_reason(&abandoned) {
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
    for (label, why) in &o.cleanup_failed {
        writeln!(out, "  cleanup failed {label}: {why}")?;
    }
    if !o.pending.is_empty() {
        writeln!(out, "  pending, for another host or boot:")?;
        for (label, why) in &o.pending {
            writeln!(out, "    {label}: {why}")?;
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
fn dry_run(exp: &Experiment, plan: &Plan, o: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let store = Store::new(&o.reports, &exp.name);
    let outlook = crate::outlook::outlook(exp, plan, &store.load()?, &o.run)?.cells;
    writeln!(out, "{}: {} (dry run: nothing is executed)", exp.name, describe(plan, &o.run)).map_err(io)?;
    write_dry_run(exp, plan, &outlook, &store, &o.run, out).map_err(|e| match e {
        DryRunError::Spec(d) => Error::Spec(d),
        DryRunError::Output(e) => Error::Output(e),
    })
}

/// The run asks analyze's stopping rule whether a cell is done.
impl run::Stopping for Rule {
    fn needs_board(&self) -> bool {
        Rule::needs_board(self)
    }

    fn is_done(&self, cell: usize, progress: &CellProgress, board: &Board) -> bool {
        Rule::is_done(self, cell, progress, board)
    }

    fn remaining(&self, cell: usize, progress: &CellProgress, board: &Board) -> (u32, u32) {
        Rule::remaining(self, cell, progress, board)
    }

    fn settled_across_boots(&self, snapshot: &crate::store::Snapshot) -> bool {
        Rule::settled_across_boots(self, snapshot)
    }

    fn trials_per_boot(&self, snapshot: &crate::store::Snapshot, boot_cost: f64) -> Option<u32> {
        Rule::trials_per_boot(self, snapshot, boot_cost)
    }
}

/// Ctrl-C or SIGTERM: finish the trial under way, record it, stop (exit 130; the next
/// `run` resumes). A second one kills the commands running, each with its whole process
/// group (they are not in the terminal's, so Ctrl-C never reaches them), and ends margin
/// at once: the trial under way is lost, the log stays loadable.
fn watch_signals(interrupt: Arc<AtomicBool>) {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if interrupt.swap(true, Ordering::SeqCst) {
                crate::run::process::kill_running();
                std::process::exit(130);
            }
            // not `eprintln!`: it panics on a closed stderr, and this thread must live to
            // see the second interrupt
            let _ = writeln!(
                std::io::stderr(),
                "stopping after the trial under way (interrupt again to stop at once)"
            );
        }
    });
}
