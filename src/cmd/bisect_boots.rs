//! `margin bisect` across boots: the factor is an environment factor of a host with
//! `boot:`, and each unit the bisection asks for is a fresh boot of that level, checked as
//! a boot plan's is ([`crate::run::boot::boot_asked`]), then a session of the level's
//! cell in it running the experiment's repetitions, labelled for the bisection; the
//! boot's mean is the unit ([`crate::analyze::bisect`] replays them). The boots are
//! logged with the bisection's label and numbered among its own, apart from the host's
//! boot plan. Killed at any moment, the same command resumes: a boot only requested is
//! asked for again (its next attempt), and a host still in the boot the bisection was
//! stopped in runs only the trials that boot lacks. Here too what both ways of bisecting
//! share: the replay from the store, the stopping rule of a unit, the progress lines.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::{Error, to_stderr};
use crate::analyze::bisect::{self, Booted, Replay, ReplayError};
use crate::plan::Plan;
use crate::run::boot::{AskedBoot, boot_asked, current_boot};
use crate::run::display::{Progress, TrialLine};
use crate::run::{self, RunOptions};
use crate::spec::Experiment;
use crate::store::{BootEvent, CellProgress, ProgressByCell, Store};
use stats::bisect::Next;

/// Boots and measures what the bisection asks for, a boot a unit, until it answers.
pub(super) fn drive(
    exp: &Experiment,
    plan: &Plan,
    store: &Store,
    start: &Replay,
    booted: &Booted,
) -> Result<Replay, Error> {
    let interrupt = Arc::new(AtomicBool::new(false));
    run::process::watch_signals(Arc::clone(&interrupt));
    let t = start.target();
    let host = booted.host.as_str();
    let others: Vec<String> =
        plan.cells.iter().map(|c| crate::plan::host_of(plan, c).to_owned()).filter(|h| h != host).collect();
    let options = RunOptions {
        label: Some(t.label.clone()),
        boots_left: Some(1),
        skip_hosts: others,
        ..RunOptions::default()
    };
    let max_failed = max_failed(exp, host);
    // the level, units and measurements when a boot's trials were last asked for
    let mut asked: Option<(usize, u64, u32)> = None;
    let mut ui = Trials;
    loop {
        let replay = replayed(store, start)?;
        let Next::Measure(level) = replay.next() else { return Ok(replay) };
        let name = format!("{}={}", t.factor, t.levels[level]);
        let Some(cell) = t.cells[level] else {
            return Err(Error::Input(format!("{name}: no cell of {} has this level", exp.path.display())));
        };
        let per_boot = replay.per_boot().unwrap_or(1);
        let r = run::Run {
            exp,
            plan,
            store,
            options: &options,
            rule: &OneTrial { cell, want: 0 },
            interrupt: &interrupt,
        };
        // the boot the bisection was stopped in goes on while the host is still in it
        let open = replay.open_boot().filter(|o| o.level == level).cloned();
        let go_on = match &open {
            Some(o) => {
                current_boot(&r, host).map_err(|e| stopped(exp, store, e))?.as_deref()
                    == Some(o.boot_id.as_str())
            }
            None => false,
        };
        let again = asked.filter(|a| (a.0, a.1) == (level, replay.units()));
        if again.is_some_and(|a| go_on && a.2 == replay.measured(level)) {
            return Err(Error::Input(format!(
                "{name}: the boot it was stopped in ran no trial of it, though asked to; see the store in {}",
                store.dir.display()
            )));
        }
        if again.is_some() && !go_on {
            return Err(Error::Input(format!(
                "{name}: its boot's trials were recorded without a value of `{}`; see their raw output in {}",
                t.metric,
                store.dir.display()
            )));
        }
        let want = match (&open, go_on) {
            (Some(o), true) => {
                ui.note(&format!("host `{host}` is still in the boot of {name} the bisection was stopped in: its trials go on in it"));
                replay.measured(level) + per_boot.saturating_sub(o.trials)
            }
            _ => {
                let (number, attempt) = next_boot(store, host, &t.label, max_failed)?;
                if attempt > 1 && matches!(last_event(store, host, &t.label)?, Some(BootEvent::Requested)) {
                    ui.note(&format!(
                        "host `{host}`: resuming: bisection boot {number} ({name}) was requested by a bisect that \
                         ended before it was verified; asking for it again"
                    ));
                }
                match boot_asked(&r, host, &booted.wanted[level], (number, attempt), &t.label, &mut ui)
                    .map_err(|e| stopped(exp, store, e))?
                {
                    AskedBoot::Verified(_) => replay.measured(level) + per_boot,
                    AskedBoot::Failed(why) => {
                        ui.note(&format!("host `{host}`: bisection boot {number} ({name}) failed: {why}"));
                        continue;
                    }
                    AskedBoot::Interrupted => return Err(Error::Interrupted),
                }
            }
        };
        asked = Some((level, replay.units(), replay.measured(level)));
        let rule = OneTrial { cell, want };
        let outcome =
            run::run(&run::Run { rule: &rule, ..r }, &mut ui).map_err(|e| stopped(exp, store, e))?;
        if outcome.interrupted {
            return Err(Error::Interrupted);
        }
        // a host lost in its boot (its trials' cells are pending then too) is said as one
        if !outcome.abandoned.is_empty() || !outcome.host_errors.is_empty() {
            for h in &outcome.host_errors {
                to_stderr(format_args!("host {} failed: {}", h.host, h.why));
            }
            to_stderr(format_args!(
                "bisect: {name} could not be measured in its boot; its trials are in {}; run the same command \
                 again to resume",
                store.dir.display()
            ));
            return Err(Error::Trials);
        }
        if let Some(p) = outcome.pending.first() {
            return Err(Error::Input(format!("{}: cannot run in the boot of {name}: {}", p.label, p.why)));
        }
    }
}

/// A run stage error as the command reports it.
fn stopped(exp: &Experiment, store: &Store, source: run::RunError) -> Error {
    if source.is_disk_full() {
        return Error::DiskFull { experiment: exp.name.clone(), log: store.runs_path(), source };
    }
    Error::Stopped { experiment: exp.name.clone(), source }
}

/// The host's `max_failed` failed boots in a row before the bisection stops.
fn max_failed(exp: &Experiment, host: &str) -> u32 {
    exp.spec
        .hosts
        .iter()
        .find(|(name, _)| name.value == host)
        .and_then(|(_, h)| h.value.boot.as_ref())
        .and_then(|b| b.value.max_failed.as_ref())
        .map_or(crate::run::boot::DEFAULT_MAX_FAILED, |n| n.value)
}

/// The last event of the bisection's boot log on `host`.
fn last_event(store: &Store, host: &str, label: &str) -> Result<Option<BootEvent>, Error> {
    let (records, _) = store.boot_records()?;
    Ok(records.iter().rev().find(|r| r.host == host && r.bisect.as_deref() == Some(label)).map(|r| r.event))
}

/// The number and attempt of the bisection's next boot: after a verified boot the next
/// number; after one only requested (a bisect killed while the host rebooted), rejected
/// or lost, that number again, its next attempt — unless `max_failed` failed in a row.
fn next_boot(store: &Store, host: &str, label: &str, max_failed: u32) -> Result<(u32, u32), Error> {
    let (records, _) = store.boot_records()?;
    let ours: Vec<_> =
        records.iter().filter(|r| r.host == host && r.bisect.as_deref() == Some(label)).collect();
    let Some(last) = ours.last() else { return Ok((1, 1)) };
    if last.event == BootEvent::Verified {
        return Ok((last.boot + 1, 1));
    }
    let failed = ours
        .iter()
        .filter(|r| r.boot == last.boot && matches!(r.event, BootEvent::Rejected | BootEvent::Lost))
        .count() as u32;
    if failed >= max_failed {
        let why = last.why.as_deref().unwrap_or("no reason recorded");
        to_stderr(format_args!(
            "host `{host}`: bisection boot {} failed {failed} times (max_failed: {max_failed}); the last: {}; \
             fix the host and run the same command again",
            last.boot,
            why.lines().next().unwrap_or_default()
        ));
        return Err(Error::Trials);
    }
    Ok((last.boot, last.attempt + 1))
}

/// The bisection replayed from what the store holds now.
pub(super) fn replayed(store: &Store, start: &Replay) -> Result<Replay, Error> {
    bisect::replayed(store, start).map_err(|e| match e {
        ReplayError::Store(e) => Error::Store(e),
        ReplayError::Data(why) => Error::Input(why),
    })
}

/// The stopping rule of one bisection unit: the asked cell's labelled measurements
/// reaching `want` (one more trial, or a boot's), none of any other.
pub(super) struct OneTrial {
    pub cell: usize,
    pub want: u32,
}

impl run::Stopping for OneTrial {
    fn needs_board(&self) -> bool {
        false
    }

    fn is_done(&self, cell: usize, progress: &CellProgress, _: &ProgressByCell) -> bool {
        cell != self.cell || progress.ok >= self.want
    }

    fn remaining(&self, cell: usize, progress: &CellProgress, board: &ProgressByCell) -> (u32, u32) {
        if self.is_done(cell, progress, board) {
            (0, 0)
        } else {
            let left = self.want.saturating_sub(progress.ok);
            (left, left)
        }
    }
}

/// Each trial on a line of stderr, as the bisection goes; notes as they come.
pub(super) struct Trials;

impl Progress for Trials {
    fn start(&mut self, _: usize, _: u64, _: u64) {}

    fn trial(&mut self, t: &TrialLine<'_>) {
        let kind = if t.warmup { " (warm-up)" } else { "" };
        let detail = t.detail.map(|d| format!(": {d}")).unwrap_or_default();
        to_stderr(format_args!(
            "bisect: {} #{}{kind}: {} in {:.3} s{detail}",
            t.label, t.repetition, t.status, t.wall
        ));
    }

    fn note(&mut self, text: &str) {
        to_stderr(format_args!("{text}"));
    }

    fn finish(&mut self) {}
}
