//! The order of a host's trials: rounds that visit every unfinished cell once, in a
//! seeded random order (interleaved) or cell after cell (sequential), each cell's
//! warm-ups first, until every cell is done by the repetitions rule or abandoned.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use super::RunError;
use super::state::{CellState, HostRun, Shown};
use crate::spec::Order;

impl<'a> HostRun<'a> {
    pub(crate) fn rounds(&mut self, states: &mut [CellState<'a>]) -> Result<(), RunError> {
        let mut rng = Pcg64::seed_from_u64(self.shared.seed);
        let active = |states: &[CellState<'_>]| -> Vec<usize> {
            (0..states.len()).filter(|i| states[*i].active()).collect()
        };
        let mut round = 0u32;
        loop {
            let mut order = active(states);
            if order.is_empty() || self.halted() {
                return Ok(());
            }
            round += 1;
            match self.shared.exp.spec.order.unwrap_or_default() {
                Order::Interleaved => {
                    order.shuffle(&mut rng);
                    for (position, i) in order.into_iter().enumerate() {
                        self.step(&mut states[i], round, position as u32 + 1)?;
                        self.stop_unneeded(states);
                        if self.halted() {
                            return Ok(());
                        }
                    }
                    for st in states.iter_mut() {
                        self.settle(st);
                    }
                    self.stop_unneeded(states);
                }
                Order::Sequential => {
                    for i in order {
                        let mut position = 0;
                        while states[i].active() {
                            position += 1;
                            self.step(&mut states[i], round, position)?;
                            self.settle(&mut states[i]);
                            self.stop_unneeded(states);
                            if self.halted() {
                                return Ok(());
                            }
                        }
                    }
                }
            }
        }
    }

    /// Mark a cell done (and close it) when the repetitions rule is met.
    fn settle(&mut self, st: &mut CellState<'_>) {
        if st.active() && self.shared.rule.is_done(st.index, &st.progress, &self.shared.board()) {
            st.done = true;
            self.shared.show(Shown::CellEnded);
            self.finish_cell(st);
        }
    }

    /// One visit of a cell: open it if needed, its warm-ups the first time, one trial.
    fn step(&mut self, st: &mut CellState<'_>, round: u32, position: u32) -> Result<(), RunError> {
        if st.workdir.is_none() {
            self.open_cell(st);
            if st.abandoned.is_some() || self.host_error.is_some() {
                return Ok(());
            }
        }
        while st.warmups_left > 0 && st.abandoned.is_none() {
            st.warmups_left -= 1;
            let recorded = self.trial(st, true, round, position)?;
            self.tally(st, recorded);
            if self.halted() {
                return Ok(());
            }
        }
        if st.abandoned.is_none() {
            let recorded = self.trial(st, false, round, position)?;
            self.tally(st, recorded);
        }
        Ok(())
    }
}
