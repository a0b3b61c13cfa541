//! Matrix expansion: from the experiment's factors to the list of cells to run.
//!
//! Cartesian product in declared order (the last factor varies fastest), zipped groups,
//! `exclude` then `include` with GitHub Actions semantics, the `where` filter, a cap on
//! the size, and a stable id per cell.

pub mod boots;
mod expand;
mod find;
mod id;
pub(crate) mod render;

pub use expand::expand;

use std::fmt;
use std::sync::Arc;

use crate::spec::Repetitions;
use vocab::{CellId, Scalar};

/// The default cap on the number of cells (`--max-cells` raises it).
pub const DEFAULT_MAX_CELLS: usize = 100_000;

/// An expanded experiment: every cell to run, and how many trials each gets.
#[derive(Debug, Clone)]
pub struct Plan {
    pub experiment: String,
    /// Every level key, in declared order: factors (zipped keys flattened), then keys
    /// that only `include` adds.
    pub keys: Vec<String>,
    /// `keys[..factor_keys]` are the matrix's factors; the rest only `include` adds
    /// (values that ride along with a combination, like a directory per host).
    pub factor_keys: usize,
    pub factors: Vec<FactorSummary>,
    pub cells: Vec<Cell>,
    pub repetitions: Repetitions,
    /// Warm-up trials per cell per session (so per boot, for a host that boots).
    pub warmup: u32,
    /// Whether some host boots: each boot is a session of its own, with its warm-ups.
    pub boots: bool,
}

/// A factor and its levels as written, for display.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FactorSummary {
    pub name: String,
    pub levels: Vec<String>,
}

/// A cell's levels: (index into [`Plan::keys`], level), sorted by key index.
pub type Levels = Vec<(u16, Arc<Scalar>)>;

/// One combination of levels.
#[derive(Debug, Clone)]
pub struct Cell {
    pub id: CellId,
    pub levels: Levels,
    /// Whether this cell came from an `include` entry that matched no combination.
    pub added: bool,
}

impl Plan {
    /// The cell's levels as (key, value), in declared key order.
    pub fn levels<'a>(&'a self, cell: &'a Cell) -> impl Iterator<Item = (&'a str, &'a Scalar)> + 'a {
        cell.levels.iter().map(|(k, v)| (self.keys[*k as usize].as_str(), v.as_ref()))
    }

    /// `bs=1k sync=none` — the cell's levels on one line.
    pub fn label(&self, cell: &Cell) -> String {
        self.levels(cell).map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The label as a message quotes it: each level shortened (`crate::diag::excerpt`).
    pub(crate) fn short_label(&self, cell: &Cell) -> String {
        self.levels(cell)
            .map(|(k, v)| format!("{k}={}", crate::diag::excerpt(&v.text)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Trials per cell, fewest and most (adaptive repetitions give a range).
    pub fn trials(&self) -> (u64, u64) {
        let (min, max) = self.repetitions.bounds();
        let n = self.cells.len() as u64;
        (n * u64::from(min), n * u64::from(max))
    }
}

/// The host name of the machine running margin: where a cell without a `host` level runs.
pub const LOCAL_HOST: &str = "local";

/// The host of a cell: its `host` level, if it has one. The one place a cell's host is
/// looked up; [`host_of`] when a cell without one runs here.
pub fn host_level<'a>(plan: &'a Plan, cell: &'a Cell) -> Option<&'a str> {
    plan.levels(cell).find(|(k, _)| *k == "host").map(|(_, v)| v.text.as_str())
}

/// The host a cell runs on: its `host` level, or the local machine ([`LOCAL_HOST`]).
pub fn host_of<'a>(plan: &'a Plan, cell: &'a Cell) -> &'a str {
    host_level(plan, cell).unwrap_or(LOCAL_HOST)
}

impl fmt::Display for Plan {
    /// "12 cells × 5 repetitions = 60 trials (+ 1 warm-up per cell)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.cells.len();
        let cells = if n == 1 { "cell" } else { "cells" };
        match &self.repetitions {
            Repetitions::Fixed(r) => {
                let reps = if *r == 1 { "repetition" } else { "repetitions" };
                write!(f, "{n} {cells} × {r} {reps} = {} trials", self.trials().0)?;
            }
            Repetitions::Adaptive { min, max, target } => {
                let (lo, hi) = self.trials();
                write!(
                    f,
                    "{n} {cells} × {min}–{max} repetitions (adaptive, until ±{target}) = {lo}–{hi} trials"
                )?;
            }
            Repetitions::Verdict { min, max } => {
                let (lo, hi) = self.trials();
                write!(
                    f,
                    "{n} {cells} × {min}–{max} repetitions (adaptive, until every comparison is resolved) \
                     = {lo}–{hi} trials"
                )?;
            }
        }
        if self.warmup > 0 {
            let per = if self.boots { "per cell per boot" } else { "per cell" };
            write!(f, " (+ {} warm-up {per})", self.warmup)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
