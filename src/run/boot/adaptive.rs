//! Adaptive boots (`boots: { min, max, until: verdict }`): when the looks begin, what a
//! boot costs against a trial, whether the comparisons are settled at a look, and the
//! trials per cell of the boots past the first blocks (docs/statistics.md, Adaptive boots).

use super::*;
use crate::run::BootLook;

/// A look of adaptive boots: after how many boots of each combination, which of how
/// many looks, up to how many blocks, and what it found in the comparisons across boots.
pub(super) struct Look {
    pub(super) blocks: u32,
    pub(super) number: usize,
    pub(super) of: usize,
    pub(super) max: u32,
    pub(super) found: BootLook,
}

impl Booting<'_> {
    /// Adaptive boots: the boots of the first `min` blocks, after which the looks begin
    /// (`None` when the boots are fixed).
    pub(super) fn first_phase(&self) -> Option<usize> {
        match self.count {
            Boots::Fixed(_) => None,
            Boots::UntilVerdict { min, .. } => Some(min as usize * self.block),
        }
    }

    /// A boot's cost in trials: the mean time from the reboot to ssh answering in the
    /// verified boots so far against the mean wall time of the host's trials.
    fn boot_cost(&self, progress: &std::collections::HashMap<usize, crate::store::CellProgress>) -> f64 {
        let (records, _) = self.store.boot_records().unwrap_or_default();
        let ready: Vec<f64> = records
            .iter()
            .filter(|r| r.host == self.host && r.event == BootEvent::Verified)
            .filter_map(|r| r.ready_seconds)
            .collect();
        let walls: Vec<f64> = self
            .plan
            .cells
            .iter()
            .enumerate()
            .filter(|(_, c)| host_of(self.plan, c) == self.host)
            .filter_map(|(i, _)| progress.get(&i).and_then(|p| p.mean_wall))
            .collect();
        if ready.is_empty() || walls.is_empty() {
            return stats::components::BOOT_COST_IN_TRIALS;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        (mean(&ready) / mean(&walls).max(1e-3)).clamp(1.0, 1e4)
    }

    /// Adaptive boots, at the start of a block past the first `min`: whether this block
    /// is a look, and whether the trials so far settle every comparison across boots.
    pub(super) fn look_at(&self, index: usize, rule: &dyn Stopping) -> Result<Option<Look>, RunError> {
        let Some(first) = self.first_phase() else { return Ok(None) };
        let blocks = (index / self.block) as u32;
        let looks = self.count.looks();
        let Some(at) = looks.iter().position(|&b| b == blocks) else { return Ok(None) };
        if index < first || !index.is_multiple_of(self.block) {
            return Ok(None);
        }
        let max = looks.last().copied().unwrap_or(blocks);
        let snapshot = self.store.load()?;
        let found = rule.look_across_boots(&snapshot, max);
        Ok(Some(Look { blocks, number: at + 1, of: looks.len(), max, found }))
    }

    /// Adaptive boots: the trials per cell of the boots past the first `min` blocks,
    /// decided from the trials so far at the first of them and kept.
    pub(super) fn decide_per_boot(&self, rule: &dyn Stopping) -> Result<u32, RunError> {
        if let Some(m) = self.per_boot.get() {
            return Ok(m);
        }
        let snapshot = self.store.load()?;
        let progress = progress(self.plan, self.options, &snapshot, false);
        let cost = self.boot_cost(&progress);
        let first = crate::run::repetitions(self.plan, self.options).bounds().0;
        let m = rule.trials_per_boot(&snapshot, cost).unwrap_or(first.div_ceil(2).max(2));
        self.per_boot.set(Some(m));
        Ok(m)
    }

    /// Whether some cell of this host still needs trials: else no boot is needed.
    pub(super) fn needs_trials(&self, rule: &dyn Stopping) -> Result<bool, RunError> {
        let snapshot = self.store.load()?;
        let progress = progress(self.plan, self.options, &snapshot, rule.needs_board());
        let board = if rule.needs_board() { progress.clone() } else { crate::store::ProgressByCell::new() };
        Ok(self.plan.cells.iter().enumerate().any(|(i, c)| {
            host_of(self.plan, c) == self.host
                && !rule.is_done(i, &progress.get(&i).cloned().unwrap_or_default(), &board)
        }))
    }
}

impl Booting<'_> {
    /// Say what a look found (every look once, also when it settles nothing); true when
    /// the host boots no more: settled, or more boots cannot settle it (futility).
    pub(super) fn said(&self, look: &Look, attempt: u32, ui: &mut dyn Progress) -> bool {
        let host = self.host;
        let (number, of, blocks) = (look.number, look.of, look.blocks);
        match look.found {
            BootLook::Settled => {
                ui.note(&format!(
                    "host `{host}`: the comparisons across its boots are settled after {blocks} boots of each \
                     combination of levels (look {number} of {of} of `boots: {{ until: verdict }}`): no more boots"
                ));
                true
            }
            BootLook::Futile { needed } => {
                let needed = match needed {
                    Some(n) => format!("about {n} boots of each would be needed"),
                    None => {
                        format!("more than {} boots of each would be needed", stats::components::MAX_BOOTS)
                    }
                };
                ui.note(&format!(
                    "host `{host}`: look {number} of {of} after {blocks} boots of each combination of levels: more \
                     boots cannot settle it — {needed}, max is {}; stopping",
                    look.max
                ));
                true
            }
            BootLook::Open if attempt == 1 && number > 1 && number < of => {
                ui.note(&format!(
                    "host `{host}`: look {number} of {of} after {blocks} boots of each combination of levels: not \
                     settled; booting on"
                ));
                false
            }
            BootLook::Open => false,
        }
    }
}
