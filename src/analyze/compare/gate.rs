//! The gate of `compare --fail-on`: the comparisons that make it fail.

use std::collections::HashMap;

use crate::summary::Summary;
use crate::summary::compare::{FailOn, Tripped};
use stats::notation::{change_and_interval, ratio_change};
use stats::verdict::VerdictKind;
use vocab::Better;

/// The comparisons that trip the gate: `significant` (beyond ±δ), in the worse direction
/// for `worse`. `uncertain_size` — real, but perhaps within ±δ — trips neither.
pub(super) fn tripped(summary: &Summary, fail_on: Option<FailOn>) -> Vec<Tripped> {
    let Some(fail_on) = fail_on else { return Vec::new() };
    let better: HashMap<&str, Better> = summary.metrics.iter().map(|m| (m.name.as_str(), m.better)).collect();
    summary
        .comparisons
        .iter()
        .filter(|c| c.verdict == VerdictKind::Significant)
        .filter(|c| match (fail_on, better.get(c.metric.as_str())) {
            (FailOn::Change, _) => true,
            (FailOn::Worse, Some(Better::Higher)) => c.ratio < 1.0,
            (FailOn::Worse, Some(Better::Lower)) => c.ratio > 1.0,
            (FailOn::Worse, None) => false,
        })
        .map(|c| Tripped {
            metric: c.metric.clone(),
            cell: c.context_text(),
            change: match (c.ci_low, c.ci_high) {
                (Some(l), Some(h)) => {
                    let (change, interval) = change_and_interval(c.ratio, (l, h));
                    format!("{change} {interval}")
                }
                _ => ratio_change(c.ratio),
            },
            verdict: c.verdict,
        })
        .collect()
}
