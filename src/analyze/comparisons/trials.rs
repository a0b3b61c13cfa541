//! The design of independent trials: levels not paired and measured in shared boots (or
//! sessions), each side one cell, its trials the observations.

use super::super::analysed::Analysed;
use super::Sides;

/// The sides of two cells compared trial by trial: each cell's trials kept, and all of them.
pub(super) fn sides<'c>(a: &'c Analysed, b: &'c Analysed) -> Sides<'c> {
    Sides {
        kept: [a.kept.clone(), b.kept.clone()],
        all: [a.all.clone(), b.all.clone()],
        pairs: Vec::new(),
        replication: None,
        single: Some((a, b)),
        unit_logs: None,
    }
}
