//! One cell analysed as the report needs it: its outliers found, the trials kept
//! summarised, and its stability flagged over all trials.

use serde::Serialize;

use super::describe::{CellSummary, summarize_sorted};
use super::elementary;
use super::observations::Observations;
use super::outliers::{self, Outliers};
use super::regimes::{Regimes, find_regimes_in};
use super::stability::{StabilityFlag, stability_flags_of};
use super::{StatsError, StatsSettings};
use vocab::MeanKind;

/// One cell analysed the way the report needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellAnalysis {
    /// Statistics of the trials kept, after setting outliers aside.
    pub summary: CellSummary,
    pub outliers: Outliers,
    /// The flagged trials the rule would leave out (from 5 trials, at most a fifth), by
    /// index: set aside when the settings say so, else kept, and the verdict without
    /// them is given beside the verdict.
    pub candidates: Vec<usize>,
    /// The values set aside, in trial order (`set_aside` of summary.json).
    pub set_aside: Vec<f64>,
    /// Warnings about all trials, in the order they ran.
    pub flags: Vec<StabilityFlag>,
    /// Every trial tested for two regimes (docs/statistics.md, Two regimes in a cell):
    /// `Some` when the cell is two.
    pub regimes: Option<Regimes>,
}

/// Finds the outliers by the configured rule, summarises the trials kept, and flags
/// instabilities over all trials (a set-aside slow first run is still worth a warning),
/// and tests them all for two regimes — unless the smaller of the two is values the
/// outlier rule selected, every one of them: then they are its outliers.
pub fn analyze_cell(sample: &Observations, settings: &StatsSettings) -> Result<CellAnalysis, StatsError> {
    settings.validate()?;
    // the values' order, read by the modified z-scores, the summaries, the trend's ranks
    // and the regime split: found once (the trials kept are those of all in the same
    // order, less those set aside; the reciprocals of a harmonic metric's values are in
    // the opposite order)
    let ascending = elementary::ascending(sample.values());
    let sorted_values = elementary::in_order(sample.values(), &ascending);
    let reciprocals: Vec<f64>;
    let sorted_analysed = match sample.kind() {
        MeanKind::Arithmetic => &sorted_values,
        MeanKind::Harmonic => {
            reciprocals = ascending.iter().rev().map(|&i| sample.analysed()[i as usize]).collect();
            &reciprocals
        }
    };
    // read by the outlier rules and by the flags of all trials: found once
    let modified_z = outliers::modified_z_scores_sorted(sample.analysed(), sorted_analysed);
    let mut outliers = outliers::find_outliers_scored(sample, &settings.outliers, modified_z.as_deref());
    let candidates = outliers.set_aside.clone();
    if !settings.set_aside {
        outliers.set_aside.clear();
    }
    let kept = sample.without(&outliers.set_aside)?;
    let aside = &outliers.set_aside;
    let summary = if aside.is_empty() {
        summarize_sorted(&kept, &sorted_values, settings)?
    } else {
        let kept_sorted: Vec<f64> = ascending
            .iter()
            .zip(&sorted_values)
            .filter(|&(&i, _)| aside.binary_search(&(i as usize)).is_err())
            .map(|(_, &v)| v)
            .collect();
        summarize_sorted(&kept, &kept_sorted, settings)?
    };
    // the flags look at all trials: the same summary when none was set aside
    let flags = if aside.is_empty() {
        stability_flags_of(sample, &summary, settings, modified_z.as_deref(), &ascending)
    } else {
        let all = summarize_sorted(sample, &sorted_values, settings)?;
        stability_flags_of(sample, &all, settings, modified_z.as_deref(), &ascending)
    };
    // a group the outlier rule takes whole is its outliers, not a regime
    let regimes = find_regimes_in(sample, settings, &ascending)?.filter(|r| {
        let smaller = r.regimes.iter().map(|g| &g.trials).min_by_key(|t| t.len()).expect("two regimes");
        !smaller.iter().all(|i| candidates.contains(i))
    });
    Ok(CellAnalysis {
        summary,
        regimes,
        set_aside: outliers.set_aside.iter().map(|&i| sample.values()[i]).collect(),
        flags,
        outliers,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outliers::OutlierRule;
    use crate::reference::sample;

    #[test]
    fn analyze_cell_sets_aside_what_the_calibrated_rule_finds_and_the_mad_rule_only_labels() {
        // by default the studentized rule sets the wild 185.3 aside
        let analysis = analyze_cell(&sample("seeks_domu"), &StatsSettings::default()).unwrap();
        assert_eq!(analysis.set_aside, vec![185.3]);
        assert_eq!((analysis.summary.n, analysis.summary.min), (7, 193.2));
        // the MAD rule flags it and keeps it, named as the one it would set aside
        let mad = StatsSettings {
            outliers: OutlierRule::Mad { cutoff: 3.5 },
            set_aside: false,
            ..StatsSettings::default()
        };
        let kept = analyze_cell(&sample("seeks_domu"), &mad).unwrap();
        assert_eq!((kept.set_aside.len(), kept.summary.n, kept.summary.min), (0, 8, 185.3));
        assert_eq!(kept.outliers.flagged, kept.candidates);
        assert_eq!(sample("seeks_domu").values()[kept.candidates[0]], 185.3);
        let settings = StatsSettings { set_aside: true, ..mad };
        let analysis = analyze_cell(&sample("seeks_domu"), &settings).unwrap();
        assert_eq!(analysis.set_aside, vec![185.3]);
        let first = analyze_cell(&sample("n6_slow_first"), &settings).unwrap();
        assert_eq!(first.set_aside, vec![14.2]);
        assert!(
            first.flags.iter().any(|f| matches!(f, StabilityFlag::FirstTrialOutlier { .. })),
            "the warning survives setting the trial aside"
        );
    }

    /// Two slow trials among 20 steady ones (a scheduler's hiccup, as `sleep 0.01` shows
    /// under load) are the outlier rule's, not a regime; six are a regime.
    #[test]
    fn a_pair_of_outliers_is_not_a_regime_and_a_quarter_of_the_trials_is() {
        let steady = |i: usize| 12.5 + 0.1 * ((i * 7) % 5) as f64;
        let mut values: Vec<f64> = (0..20).map(steady).collect();
        (values[4], values[13]) = (19.0, 21.0);
        let sample = Observations::new(&values, vocab::MeanKind::Arithmetic).unwrap();
        let analysis = analyze_cell(&sample, &StatsSettings::default()).unwrap();
        assert_eq!(analysis.set_aside.len(), 2, "{analysis:?}");
        assert!(super::super::regimes::split_ratio(&values).unwrap().lower.len() == 18);
        assert_eq!(analysis.regimes, None);
        for i in [1, 6, 9, 15] {
            values[i] = 20.0 + 0.1 * i as f64;
        }
        let sample = Observations::new(&values, vocab::MeanKind::Arithmetic).unwrap();
        let analysis = analyze_cell(&sample, &StatsSettings::default()).unwrap();
        let regimes = analysis.regimes.expect("six slow trials are a regime");
        assert_eq!(regimes.regimes[1].trials, vec![1, 4, 6, 9, 13, 15]);
    }
}
