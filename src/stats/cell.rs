//! One cell analysed as the report needs it: its outliers found, the trials kept
//! summarised, and its stability flagged over all trials.

use serde::Serialize;

use super::describe::{CellSummary, summarize};
use super::observations::Observations;
use super::outliers::{self, Outliers};
use super::stability::{StabilityFlag, stability_flags, stability_flags_of};
use super::{StatsError, StatsSettings};

/// One cell analysed the way the report needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct CellAnalysis {
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
}

/// Finds the outliers by the configured rule, summarises the trials kept, and flags
/// instabilities over all trials (a set-aside slow first run is still worth a warning).
pub(crate) fn analyze_cell(
    sample: &Observations,
    settings: &StatsSettings,
) -> Result<CellAnalysis, StatsError> {
    settings.validate()?;
    let mut outliers = outliers::find_outliers(sample, &settings.outliers);
    let candidates = outliers.set_aside.clone();
    if !settings.set_aside {
        outliers.set_aside.clear();
    }
    let kept = sample.without(&outliers.set_aside)?;
    let summary = summarize(&kept, settings)?;
    // the flags look at all trials: the same summary when none was set aside
    let flags = if outliers.set_aside.is_empty() {
        stability_flags_of(sample, &summary, settings)
    } else {
        stability_flags(sample, settings)?
    };
    Ok(CellAnalysis {
        summary,
        set_aside: outliers.set_aside.iter().map(|&i| sample.values()[i]).collect(),
        flags,
        outliers,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::outliers::OutlierRule;
    use crate::stats::reference::sample;

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
}
