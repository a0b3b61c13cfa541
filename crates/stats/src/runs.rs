//! Runs needed: the smallest number of trials whose interval reaches a relative margin of
//! error (docs/statistics.md, One cell), and the upward search it and the comparisons share.

use serde::Serialize;

use super::dist;

/// "Runs needed" searches no further than this; beyond it the answer is "more than".
pub(crate) const MAX_RUNS: usize = 1_000_000;

/// The smallest number of trials reaching a relative margin of error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunsNeeded {
    Runs(usize),
    /// Beyond [`MAX_RUNS`]: a different benchmark is needed, not more runs.
    MoreThan(usize),
}
/// The smallest n ≥ 2 with t(1 − α/2, n − 1)·cv/√n ≤ `target`.
///
/// t(n − 1)/√n falls strictly as n grows, so the first n that passes is the answer and
/// the search only ever goes up. It starts at the normal-theory bound (z·cv/target)²:
/// t > z, so no smaller n can pass. From there it is a handful of steps (about
/// (1 + z²)/2), and iterating the closed form, which oscillates, is never needed.
pub fn runs_needed(cv: f64, target: f64, confidence: f64) -> Option<RunsNeeded> {
    if !(cv >= 0.0 && cv.is_finite() && target > 0.0 && target.is_finite()) {
        return None;
    }
    let q = 1.0 - (1.0 - confidence) / 2.0;
    let z = dist::normal_quantile(q)?;
    let bound = (z * cv / target).powi(2);
    search_upward(bound, |n| {
        let t = dist::t_quantile(q, (n - 1) as f64)?;
        Some(t * cv / (n as f64).sqrt() <= target)
    })
}

/// The first n ≥ 2 (and ≥ `bound`, below which the caller knows none passes) for which
/// `passes` holds, up to [`MAX_RUNS`]; `None` if `passes` cannot decide.
pub(crate) fn search_upward(bound: f64, mut passes: impl FnMut(usize) -> Option<bool>) -> Option<RunsNeeded> {
    // A NaN bound means the spread was not a number: nothing could ever pass.
    if bound.is_nan() {
        return None;
    }
    if bound >= MAX_RUNS as f64 {
        return Some(RunsNeeded::MoreThan(MAX_RUNS));
    }
    for n in (bound as usize).max(2)..=MAX_RUNS {
        if passes(n)? {
            return Some(RunsNeeded::Runs(n));
        }
    }
    Some(RunsNeeded::MoreThan(MAX_RUNS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{entries, number};

    #[test]
    fn runs_needed_matches_the_formula_evaluated_with_scipy() {
        for point in entries("runs_needed") {
            let (cv, target) = (number(&point["cv"]), number(&point["target"]));
            let runs = point["runs"].as_u64().unwrap() as usize;
            assert_eq!(
                runs_needed(cv, target, 0.95),
                Some(RunsNeeded::Runs(runs)),
                "cv {cv}, target {target}"
            );
        }
    }

    /// The worked examples of docs/statistics.md (One cell) (all confirmed by scipy).
    #[test]
    fn runs_needed_reproduces_the_examples_of_the_contract() {
        for (cv, target, runs) in [(0.01, 0.02, 4), (0.05, 0.02, 27), (0.05, 0.05, 7), (0.10, 0.05, 18)] {
            assert_eq!(runs_needed(cv, target, 0.95), Some(RunsNeeded::Runs(runs)));
        }
    }

    #[test]
    fn runs_needed_edges() {
        assert_eq!(runs_needed(0.0, 0.02, 0.95), Some(RunsNeeded::Runs(2)));
        assert_eq!(runs_needed(1.0, 1e-6, 0.95), Some(RunsNeeded::MoreThan(MAX_RUNS)));
        assert_eq!(runs_needed(f64::NAN, 0.02, 0.95), None);
        assert_eq!(runs_needed(0.05, 0.0, 0.95), None);
        assert_eq!(runs_needed(0.05, 0.02, 1.0), None);
    }
}
