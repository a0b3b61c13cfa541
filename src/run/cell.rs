//! One cell in a session: opened with a fresh workdir and `setup`, closed with `cleanup`
//! (the workdir removed unless kept), and abandoned for the session after
//! `max_failures` failed trials — or with every other cell of the host, when the first
//! cells to run all fail the same way ([`Streak`]).

use super::exec::Target;
use super::state::{CellState, HostRun, Shown};
use super::trial::Recorded;
use super::workdir::WorkdirName;
use super::{GaveUp, HostError};
use crate::plan::render::Commands;
use crate::reason;

impl HostRun<'_> {
    /// Create the workdir and run `setup`; a failure abandons the cell for this session.
    pub(crate) fn open_cell(&mut self, st: &mut CellState<'_>) {
        let executor = match self.target {
            Target::One(one) => one.as_ref(),
            Target::Gang(gang) => return self.open_gang_cell(gang, st),
        };
        let name = WorkdirName::new(st.cell.id, &self.session);
        match executor.create_workdir(&self.shared.exp.name, &name) {
            Ok(dir) => st.workdir = Some(dir),
            // this machine's fault is the cell's; an ssh host's is the host's
            Err(e) if executor.is_local() => return self.abandon(st, GaveUp::Workdir(e.to_string())),
            Err(error) => {
                let host = executor.host().to_string();
                self.host_error = Some(HostError::Workdir { host, error });
                return;
            }
        }
        let (setup, env) = match self.render(st, st.progress.attempts + 1) {
            Ok(c) => (c.setup, c.env),
            Err(e) => {
                self.abandon(st, GaveUp::Render(e));
                return;
            }
        };
        let machine = self.machine;
        if let Some(cmd) = setup {
            let turn = machine.turn();
            let key = format!("{}-{}", self.session, st.cell.id);
            let done = self.hook(executor, st, "setup", &cmd, &env, &key);
            drop(turn);
            if let Err(why) = done {
                self.abandon(st, GaveUp::Setup(why));
            }
        }
    }

    /// Run `cleanup` and remove the workdir (unless kept).
    pub(crate) fn finish_cell(&mut self, st: &mut CellState<'_>) {
        let executor = match self.target {
            Target::One(one) => one.as_ref(),
            Target::Gang(gang) => return self.finish_gang_cell(gang, st),
        };
        let Some(dir) = st.workdir.clone() else { return };
        if self.host_error.is_none() {
            let machine = self.machine;
            if let Ok(Commands { cleanup: Some(cmd), env, .. }) = self.render(st, st.progress.attempts)
                && let Err(why) = {
                    let _turn = machine.turn();
                    let key = format!("{}-{}", self.session, st.cell.id);
                    self.hook(executor, st, "cleanup", &cmd, &env, &key)
                }
            {
                self.note(format!("{}: {why}", st.label));
                st.cleanup_failed = Some(why);
            }
            if !self.shared.options.keep_workdir {
                executor.remove_workdir(&dir);
            }
        }
        st.workdir = None;
    }

    pub(crate) fn abandon(&mut self, st: &mut CellState<'_>, why: GaveUp) {
        self.note(format!("{}: abandoned for this session: {why}", st.label));
        self.shared.show(Shown::CellEnded);
        st.abandoned = Some(why);
    }

    /// Count a trial's end against the cell: the `max_failures`-th failure in this
    /// session abandons it.
    pub(crate) fn tally(&mut self, st: &mut CellState<'_>, recorded: Recorded) {
        let Recorded::Failure(error) = recorded else { return };
        st.failures += 1;
        if st.failures >= self.shared.max_failures {
            self.abandon(st, GaveUp::Failures { failures: st.failures, last: error });
            self.finish_cell(st);
        }
    }
}

/// The failures of a host's session so far, for the early stop on a mistake every cell
/// makes (a regex that matches nothing, a missing tool): when the first trials of the
/// session all failed the same way (`reason::same_way`) in [`reason::STOP_AFTER_CELLS`]
/// cells that had no trial before this run, and none was measured, the file is wrong, not
/// the cells, and running the rest of the matrix would only say so again. A trial
/// measured or a failure of another reason turns it off for the session: one cell that
/// fails among working ones is abandoned alone, by `max_failures`. Cells with trials from
/// an earlier run do not count, so a run after a stop that was wrong (cells that are meant
/// to fail, and happened to run first) goes on to the others.
#[derive(Debug, Default)]
pub(crate) struct Streak {
    off: bool,
    /// The first failure: its key and its whole error.
    first: Option<(String, String)>,
    /// The cells (indices into the plan's cells) that count toward the stop.
    cells: Vec<usize>,
    trials: u32,
}

impl Streak {
    /// Count a trial of `st`, which had no trial before this run when `fresh`.
    pub(crate) fn saw(&mut self, st: &CellState<'_>, fresh: bool, recorded: &Recorded) {
        if self.off {
            return;
        }
        let why = match recorded {
            Recorded::Nothing => return,
            Recorded::Measurement => {
                self.off = true;
                return;
            }
            Recorded::Failure(why) => why,
        };
        self.trials += 1;
        let levels: Vec<&str> = st.levels.values().map(String::as_str).collect();
        let key = reason::same_way(why, &levels);
        match &self.first {
            None => self.first = Some((key, why.clone())),
            Some((first, _)) if *first != key => {
                self.off = true;
                return;
            }
            Some(_) => {}
        }
        if fresh && !self.cells.contains(&st.index) {
            self.cells.push(st.index);
        }
    }

    /// Why the session stops here, when it does.
    pub(crate) fn stops(&self) -> Option<GaveUp> {
        if self.off || self.cells.len() < reason::STOP_AFTER_CELLS {
            return None;
        }
        self.first.as_ref().map(|(_, first)| GaveUp::SameWay { first: first.clone(), trials: self.trials })
    }
}

impl HostRun<'_> {
    /// Stop the session: every cell still to run is abandoned for it, with one reason,
    /// said once.
    pub(crate) fn stop_same_way(&mut self, states: &mut [CellState<'_>], why: GaveUp) {
        self.note(why.to_string());
        for st in states.iter_mut().filter(|st| st.active()) {
            self.shared.show(Shown::CellEnded);
            st.abandoned = Some(why.clone());
        }
    }
}
