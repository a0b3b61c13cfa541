//! Outliers (docs/statistics.md, Outliers): which trials a rule flags, and which of those are set aside.
//!
//! Flagged trials are labelled in the report; only some are set aside (left out of the
//! statistics): none below [`MIN_N_TO_SET_ASIDE`] trials, and never more than
//! [`MAX_SET_ASIDE`] of a cell. When more are flagged than may go, the most extreme go
//! first (ties: the earlier trial), so a cap never keeps a wild value while dropping a
//! milder one. Nothing is deleted: the caller still holds every value.

use serde::Serialize;

use super::elementary::{absolute_deviations, median_of_sorted, quantile_of_sorted, sorted};
use super::observations::Observations;

/// Cells smaller than this only label their outliers (docs/statistics.md, Outliers).
pub(crate) const MIN_N_TO_SET_ASIDE: usize = 5;
/// At most this fraction of a cell is set aside, rounded down.
pub(crate) const MAX_SET_ASIDE: f64 = 0.20;
/// Iglewicz and Hoaglin's constant: 0.6745·(x − median)/MAD is a z-score for normal data.
const MODIFIED_Z_SCALE: f64 = 0.6745;

/// How outliers are recognised (`analysis.outliers` of the experiment file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum OutlierRule {
    /// Modified z-score 0.6745·|x − median|/MAD above `cutoff` (Iglewicz–Hoaglin: 3.5).
    Mad { cutoff: f64 },
    /// Outside Tukey's fences Q1 − cutoff·IQR, Q3 + cutoff·IQR (usually 1.5), with
    /// linearly interpolated quartiles.
    Iqr { cutoff: f64 },
    /// Keep every trial.
    None,
}

impl Default for OutlierRule {
    fn default() -> Self {
        OutlierRule::Mad { cutoff: 3.5 }
    }
}

impl OutlierRule {
    /// The rule's cutoff, if it has one.
    pub fn cutoff(&self) -> Option<f64> {
        match *self {
            OutlierRule::Mad { cutoff } | OutlierRule::Iqr { cutoff } => Some(cutoff),
            OutlierRule::None => None,
        }
    }
}

/// What a rule found in one cell. Indices are positions in the sample, ascending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Outliers {
    pub rule: OutlierRule,
    /// Every trial beyond the rule's cutoff: labelled in the report.
    pub flagged: Vec<usize>,
    /// The flagged trials left out of the statistics; a subset of `flagged`.
    pub set_aside: Vec<usize>,
    /// The rule's spread (MAD or IQR) is zero, as with quantised output: every value off
    /// the median would count as infinitely far, so the rule was not applied.
    pub zero_spread: bool,
}

/// Applies `rule` to the sample's values on its analysis scale (the reciprocals of a
/// harmonic metric).
pub(crate) fn find_outliers(sample: &Observations, rule: &OutlierRule) -> Outliers {
    let values = sample.analysed();
    let scores = match *rule {
        OutlierRule::Mad { cutoff } => modified_z_scores(values).map(|s| (s, cutoff)),
        OutlierRule::Iqr { cutoff } => fence_scores(values, cutoff).map(|s| (s, 0.0)),
        OutlierRule::None => {
            return Outliers { rule: *rule, flagged: Vec::new(), set_aside: Vec::new(), zero_spread: false };
        }
    };
    let Some((scores, cutoff)) = scores else {
        return Outliers { rule: *rule, flagged: Vec::new(), set_aside: Vec::new(), zero_spread: true };
    };
    let flagged: Vec<usize> = (0..values.len()).filter(|&i| scores[i] > cutoff).collect();
    let allowed = if values.len() >= MIN_N_TO_SET_ASIDE {
        (values.len() as f64 * MAX_SET_ASIDE).floor() as usize
    } else {
        0
    };
    let mut most_extreme_first = flagged.clone();
    most_extreme_first.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
    let mut set_aside: Vec<usize> = most_extreme_first.into_iter().take(allowed).collect();
    set_aside.sort_unstable();
    Outliers { rule: *rule, flagged, set_aside, zero_spread: false }
}

/// 0.6745·|x − median|/MAD for every value; `None` when MAD = 0.
pub(crate) fn modified_z_scores(values: &[f64]) -> Option<Vec<f64>> {
    let deviations = absolute_deviations(values);
    let mad = median_of_sorted(&sorted(&deviations));
    (mad > 0.0).then(|| deviations.iter().map(|d| MODIFIED_Z_SCALE * d / mad).collect())
}

/// How far each value lies outside Tukey's fences, in IQRs (≤ 0 inside); `None` when
/// IQR = 0.
fn fence_scores(values: &[f64], cutoff: f64) -> Option<Vec<f64>> {
    let sorted = sorted(values);
    let (q1, q3) = (quantile_of_sorted(&sorted, 0.25), quantile_of_sorted(&sorted, 0.75));
    let iqr = q3 - q1;
    let (low, high) = (q1 - cutoff * iqr, q3 + cutoff * iqr);
    (iqr > 0.0).then(|| values.iter().map(|&x| (low - x).max(x - high) / iqr).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::reference::{entries, number, sample};
    use crate::vocab::MeanKind;

    fn indices(value: &serde_json::Value) -> Vec<usize> {
        value.as_array().expect("a list of indices").iter().map(|i| i.as_u64().unwrap() as usize).collect()
    }

    #[test]
    fn selections_match_the_reference() {
        for case in entries("outliers") {
            let name = case["cell"].as_str().unwrap();
            let cutoff = number(&case["cutoff"]);
            let rule = match case["rule"].as_str() {
                Some("mad") => OutlierRule::Mad { cutoff },
                _ => OutlierRule::Iqr { cutoff },
            };
            let found = find_outliers(&sample(name), &rule);
            let what = format!("{name} by {rule:?}");
            assert_eq!(found.flagged, indices(&case["flagged"]), "{what}: flagged");
            assert_eq!(found.set_aside, indices(&case["set_aside"]), "{what}: set aside");
            assert_eq!(Some(found.zero_spread), case["skipped"].as_bool(), "{what}: skipped");
        }
    }

    #[test]
    fn at_most_a_fifth_goes_and_the_most_extreme_first() {
        // Ten trials, three far out: only two (20 %) may go, the two farthest.
        let values = [10.0, 10.1, 9.9, 10.0, 30.0, 10.2, 9.8, 50.0, 10.1, 40.0];
        let sample = Observations::new(&values, MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&sample, &OutlierRule::default());
        assert_eq!(found.flagged, vec![4, 7, 9]);
        assert_eq!(found.set_aside, vec![7, 9]);
    }

    #[test]
    fn small_cells_only_label() {
        let sample = Observations::new(&[10.0, 10.1, 9.9, 30.0], MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&sample, &OutlierRule::default());
        assert_eq!((found.flagged, found.set_aside), (vec![3], vec![]));
    }

    #[test]
    fn harmonic_metrics_are_judged_on_the_reciprocals() {
        // 96 MB/s is 3.37 modified z-scores from the other rates, but as time per MB
        // (1/96 s) it is 3.50 from the others: the rule sees it only on that scale.
        let rates = [100.0, 101.0, 99.0, 100.5, 99.5, 96.0];
        let rule = OutlierRule::default();
        let as_rates = Observations::new(&rates, MeanKind::Arithmetic).unwrap();
        let as_times = Observations::new(&rates, MeanKind::Harmonic).unwrap();
        assert_eq!(find_outliers(&as_rates, &rule).flagged, Vec::<usize>::new());
        assert_eq!(find_outliers(&as_times, &rule).flagged, vec![5]);
    }

    #[test]
    fn rule_none_keeps_everything() {
        let found = find_outliers(&sample("seeks_domu"), &OutlierRule::None);
        assert!(found.flagged.is_empty() && found.set_aside.is_empty() && !found.zero_spread);
    }
}
