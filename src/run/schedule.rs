//! The order of a host's trials: rounds that visit every unfinished cell once, in a
//! seeded random order (interleaved) or cell after cell (sequential), each cell's
//! warm-ups first, until every cell is done by the repetitions rule or abandoned — or
//! until the first cells all fail the same way (`cell::Streak`).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

use super::RunError;
use super::cell::Streak;
use super::state::{CellState, HostRun, Shown};
use crate::spec::Order;

impl<'a> HostRun<'a> {
    pub(crate) fn rounds(&mut self, states: &mut [CellState<'a>]) -> Result<(), RunError> {
        let mut rng = Pcg64::seed_from_u64(self.shared.seed);
        let active = |states: &[CellState<'_>]| -> Vec<usize> {
            (0..states.len()).filter(|i| states[*i].active()).collect()
        };
        // which cells had no trial before this run (`Streak`)
        let fresh: Vec<bool> = states.iter().map(|st| st.progress.attempts == 0).collect();
        let mut streak = Streak::default();
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
                        self.step(&mut states[i], fresh[i], &mut streak, round, position as u32 + 1)?;
                        if let Some(why) = streak.stops() {
                            self.stop_same_way(states, why);
                            return Ok(());
                        }
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
                            self.step(&mut states[i], fresh[i], &mut streak, round, position)?;
                            if let Some(why) = streak.stops() {
                                self.stop_same_way(states, why);
                                return Ok(());
                            }
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
        if !st.active() {
            return;
        }
        let shared = self.shared;
        let done = shared.rule.is_done(st.index, &st.progress, &shared.board());
        if done || st.share.is_some_and(|share| st.taken >= share) {
            st.done = true;
            st.paused = !done;
            self.shared.show(Shown::CellEnded);
            self.finish_cell(st);
        }
    }

    /// One visit of a cell: open it if needed, its warm-ups the first time, one trial.
    fn step(
        &mut self,
        st: &mut CellState<'_>,
        fresh: bool,
        streak: &mut Streak,
        round: u32,
        position: u32,
    ) -> Result<(), RunError> {
        if st.workdir.is_none() {
            self.open_cell(st);
            if st.abandoned.is_some() || self.host_error.is_some() {
                return Ok(());
            }
        }
        while st.warmups_left > 0 && st.abandoned.is_none() {
            st.warmups_left -= 1;
            let recorded = self.trial(st, true, round, position)?;
            streak.saw(st, fresh, &recorded);
            self.tally(st, recorded);
            if self.halted() {
                return Ok(());
            }
        }
        if st.abandoned.is_none() {
            st.taken += 1;
            let recorded = self.trial(st, false, round, position)?;
            streak.saw(st, fresh, &recorded);
            self.tally(st, recorded);
        }
        Ok(())
    }
}
