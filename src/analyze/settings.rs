//! The statistics settings an experiment asks for: its `analysis:` block and repetitions
//! turned into [`StatsSettings`], at the confidence its intervals need.

use crate::spec::{OutlierMethod, Repetitions, Spec, parse_percent};
use crate::summary::RunsAtCv;
use stats::StatsSettings;
use stats::outliers::{DEFAULT_FALSE_FLAG_RATE, MAD_CUTOFF, OutlierRule};
use stats::runs::{RunsNeeded, runs_needed};

/// The share of α an adaptive experiment's intervals keep: its cells stop when their
/// interval is narrow enough, which happens more often when the spread came out small by
/// chance, so a plain 95 % t-interval covered only 0.92 at CV 5 % (target ±2 %, 5–30
/// trials). Intervals at 1 − 0.6·α (97 % for 95 %), used by the stopping rule and the
/// report alike, cover ≥ 0.95 at CV 0.5–10 % with mean n within 8 % of the fixed n that
/// reaches the target (docs/statistics.md, Calibration; `margin calibrate`).
pub(crate) const ADAPTIVE_ALPHA_SHARE: f64 = 0.6;

/// The confidence level of the intervals of an experiment of `nominal` confidence: the
/// same for a fixed number of trials; widened by [`ADAPTIVE_ALPHA_SHARE`] when its cells
/// stop on their margin of error; and 1 − α/K when they stop on the answer
/// (`until: verdict`), K being the looks of its schedule ([`Repetitions::looks`]): α
/// spent in equal parts over a schedule fixed in advance, so that the chance that any
/// look's interval misses the truth is at most α (Bonferroni), whatever the data do
/// (docs/statistics.md, Stopping on the answer). The report's intervals are the same.
pub(crate) fn interval_confidence(nominal: f64, repetitions: &Repetitions) -> f64 {
    match repetitions {
        Repetitions::Fixed(_) => nominal,
        Repetitions::Adaptive { .. } => 1.0 - ADAPTIVE_ALPHA_SHARE * (1.0 - nominal),
        Repetitions::Verdict { .. } => 1.0 - (1.0 - nominal) / repetitions.looks().len().max(1) as f64,
    }
}

/// The block counts at which adaptive boots (`boots: { min, max, until: verdict }`) look
/// at the comparisons across boots: the longest schedule among the hosts' (empty when no
/// host boots adaptively).
pub(crate) fn boot_looks(spec: &Spec) -> Vec<u32> {
    spec.hosts
        .values()
        .filter_map(|h| h.value.boot.as_ref())
        .map(|b| b.value.count().looks())
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// `confidence` with its α spent over the looks of adaptive boots, K of them: 1 − α/K,
/// as `until: verdict` spends it over its trial counts (Bonferroni over a schedule fixed
/// in advance; docs/statistics.md, Adaptive boots). Validation refuses both at once.
pub(crate) fn across_boots(confidence: f64, spec: &Spec) -> f64 {
    match boot_looks(spec).len() {
        0 => confidence,
        k => 1.0 - (1.0 - confidence) / k as f64,
    }
}

/// The confidence level the experiment states (`analysis.confidence`, else 0.95).
pub(crate) fn nominal_confidence(spec: &Spec) -> f64 {
    spec.analysis.confidence.as_ref().map_or(StatsSettings::default().confidence, |c| c.value)
}

/// The statistics settings an experiment asks for (`analysis:`, `repetitions:`); with
/// adaptive repetitions (either rule) the intervals are at [`interval_confidence`].
pub(crate) fn settings(spec: &Spec) -> StatsSettings {
    let defaults = StatsSettings::default();
    let analysis = &spec.analysis;
    let threshold = analysis
        .threshold
        .as_ref()
        .and_then(|t| parse_percent(&t.value).ok())
        .map_or(defaults.threshold, |p| p.0);
    let repetitions = spec.repetitions();
    let target_margin = match repetitions {
        Repetitions::Adaptive { target, .. } => target.0,
        Repetitions::Fixed(_) | Repetitions::Verdict { .. } => threshold,
    };
    let outliers = match &analysis.outliers {
        None => defaults.outliers,
        Some(o) => {
            let cutoff = o.cutoff.as_ref().map(|c| c.value);
            match o.method {
                OutlierMethod::Studentized => OutlierRule::Studentized {
                    rate: o
                        .rate
                        .as_ref()
                        .and_then(|r| parse_percent(&r.value).ok())
                        .map_or(DEFAULT_FALSE_FLAG_RATE, |p| p.0),
                },
                OutlierMethod::Mad => OutlierRule::Mad { cutoff: cutoff.unwrap_or(MAD_CUTOFF) },
                OutlierMethod::Iqr => OutlierRule::Iqr { cutoff: cutoff.unwrap_or(1.5) },
                OutlierMethod::None => OutlierRule::None,
            }
        }
    };
    // the calibrated rule sets aside what it finds; the MAD and IQR rules only label,
    // unless told (docs/statistics.md, Outliers)
    let set_aside =
        analysis.outliers.as_ref().and_then(|o| o.set_aside).unwrap_or(outliers.sets_aside_by_default());
    StatsSettings {
        confidence: across_boots(interval_confidence(nominal_confidence(spec), &repetitions), spec),
        threshold,
        target_margin,
        outliers,
        set_aside,
        method: analysis.method.unwrap_or_default(),
        max_trials: match repetitions {
            Repetitions::Fixed(_) => None,
            Repetitions::Adaptive { max, .. } | Repetitions::Verdict { max, .. } => Some(max as usize),
        },
        ..defaults
    }
}

/// The CVs (in %) at which a cell of one trial is told what it would take.
const TYPICAL_CVS: [u32; 3] = [1, 5, 10];

pub(crate) fn runs_at_typical_cvs(settings: &StatsSettings) -> Vec<RunsAtCv> {
    TYPICAL_CVS
        .iter()
        .filter_map(|&cv_pct| {
            match runs_needed(f64::from(cv_pct) / 100.0, settings.target_margin, settings.confidence)? {
                RunsNeeded::Runs(runs) => Some(RunsAtCv { cv_pct, runs }),
                RunsNeeded::MoreThan(_) => None,
            }
        })
        .collect()
}
