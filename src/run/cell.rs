//! One cell in a session: opened with a fresh workdir and `setup`, closed with `cleanup`
//! (the workdir removed unless kept), and abandoned for the session after
//! `max_failures` failed trials.

use super::LOCAL_HOST;
use super::state::{CellState, HostRun, Shown};
use super::trial::Recorded;
use super::workdir::WorkdirName;
use crate::plan::render::Commands;

impl HostRun<'_> {
    /// Create the workdir and run `setup`; a failure abandons the cell for this session.
    pub(crate) fn open_cell(&mut self, st: &mut CellState<'_>) {
        let executor = self.executor;
        if let Some(gang) = executor.gang() {
            return self.open_gang_cell(gang, st);
        }
        let name = WorkdirName::new(st.cell.id, &self.session);
        match self.executor.create_workdir(&self.shared.exp.name, &name) {
            Ok(dir) => st.workdir = Some(dir),
            Err(e) => {
                if self.executor.host() == LOCAL_HOST {
                    self.abandon(st, format!("cannot create the workdir: {e}"));
                } else {
                    self.host_error =
                        Some(format!("host `{}`: cannot create the workdir: {e}", self.executor.host()));
                }
                return;
            }
        }
        let (setup, env) = match self.render(st, st.progress.attempts + 1) {
            Ok(c) => (c.setup, c.env),
            Err(e) => {
                self.abandon(st, e);
                return;
            }
        };
        let machine = self.machine;
        if let Some(cmd) = setup {
            let turn = machine.turn();
            let done = self.hook(st, "setup", &cmd, &env, &format!("{}-{}", self.session, st.cell.id));
            drop(turn);
            if let Err(why) = done {
                self.abandon(st, why);
            }
        }
    }

    /// Run `cleanup` and remove the workdir (unless kept).
    pub(crate) fn finish_cell(&mut self, st: &mut CellState<'_>) {
        let executor = self.executor;
        if let Some(gang) = executor.gang() {
            return self.finish_gang_cell(gang, st);
        }
        let Some(dir) = st.workdir.clone() else { return };
        if self.host_error.is_none() {
            let machine = self.machine;
            if let Ok(Commands { cleanup: Some(cmd), env, .. }) = self.render(st, st.progress.attempts)
                && let Err(why) = {
                    let _turn = machine.turn();
                    self.hook(st, "cleanup", &cmd, &env, &format!("{}-{}", self.session, st.cell.id))
                }
            {
                self.note(format!("{}: {why}", st.label));
                st.cleanup_failed = Some(why);
            }
            if !self.shared.options.keep_workdir {
                self.executor.remove_workdir(&dir);
            }
        }
        st.workdir = None;
    }

    pub(crate) fn abandon(&mut self, st: &mut CellState<'_>, why: String) {
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
            let failures =
                if st.failures == 1 { "1 failure".to_string() } else { format!("{} failures", st.failures) };
            let why = format!("{failures}; the last: {error}");
            self.abandon(st, why);
            self.finish_cell(st);
        }
    }
}
