//! Verdicts (docs/statistics.md, Verdicts): what a comparison means against the practical threshold δ,
//! and the sentence the report prints for it.

use serde::Serialize;

use super::cell::analyze_cell;
use super::compare::{
    Comparison, RatioInterval, block_means, compare_design, trials_to_settle, trials_to_size,
};
use super::observations::Observations;
use super::{StatsError, StatsSettings};
use crate::vocab::Better;
use crate::vocab::MeanKind;

/// The verdicts of summary.json (docs/statistics.md, Verdicts), in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// A level has fewer than two trials: no error estimate.
    Insufficient,
    /// The ratio's interval is unbounded: too noisy to say anything.
    Unbounded,
    /// The whole interval lies beyond ±δ.
    Significant,
    /// The interval excludes no change but stays within ±δ.
    WithinBand,
    /// The interval excludes no change and reaches across ±δ: a real difference whose
    /// size may or may not matter. (Called `within_band` before, which said "within the
    /// band" of intervals such as [−86 %, −4 %].)
    UncertainSize,
    /// The interval includes no change and lies within ±δ.
    NoMeaningfulDifference,
    /// The interval includes no change and reaches beyond ±δ. Never "no difference":
    /// absence of evidence is not evidence of absence.
    Inconclusive,
    /// The levels were measured in disjoint boots (or sessions), one of them in a single
    /// one: the variation between boots is unmeasured, so no difference is claimed on the
    /// variation within one (docs/statistics.md, Sessions and boots).
    Unreplicated,
}

impl VerdictKind {
    /// The summary.json name in words: `no_meaningful_difference` → "no meaningful difference".
    pub fn words(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
            .unwrap_or_default()
    }
}

/// What one more replicate of a level is: a trial, or a boot (a session where margin
/// cannot tell the boot) of about `trials` trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replicate<'a> {
    Trial,
    Unit { unit: &'a str, trials: usize },
}

impl Replicate<'_> {
    /// "about 3 more trials per level", "about 2 more boots of each level, 5 trials each".
    fn more(&self, n: usize) -> String {
        match *self {
            Replicate::Trial if n == 1 => "about 1 more trial per level".to_owned(),
            Replicate::Trial => format!("about {n} more trials per level"),
            Replicate::Unit { unit, trials } => {
                let each = if trials == 1 { "1 trial".to_owned() } else { format!("{trials} trials") };
                let units = if n == 1 { unit.to_owned() } else { format!("{unit}s") };
                format!("about {n} more {units} of each level, {each} each,")
            }
        }
    }
}

/// The words a good and a bad change are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Vocabulary {
    /// For times and rates: "faster" / "slower".
    Speed,
    /// For anything else: "better" / "worse".
    Quality,
}

/// What the sentence calls the levels and how it judges a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wording<'a> {
    pub baseline: &'a str,
    pub level: &'a str,
    /// `None` for a metric with no preferred direction: the sentence states the
    /// direction and passes no judgement.
    pub better: Option<Better>,
    pub vocabulary: Vocabulary,
}

/// A comparison's verdict and its sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub sentence: String,
    /// For [`VerdictKind::Inconclusive`]: about how many more trials per level would
    /// settle it (see [`trials_to_settle`]).
    pub more_trials: Option<usize>,
}

/// The first rule of docs/statistics.md (Verdicts) that matches, with δ = `threshold`.
pub fn classify(comparison: &Comparison, threshold: f64) -> VerdictKind {
    if comparison.n_a < 2 || comparison.n_b < 2 {
        return VerdictKind::Insufficient;
    }
    let (low, high) = match comparison.interval {
        RatioInterval::NoEstimate => return VerdictKind::Insufficient,
        RatioInterval::Unbounded => return VerdictKind::Unbounded,
        RatioInterval::Bounded { low, high } => (low - 1.0, high - 1.0),
    };
    if low > threshold || high < -threshold {
        VerdictKind::Significant
    } else if low > 0.0 || high < 0.0 {
        if -threshold <= low && high <= threshold {
            VerdictKind::WithinBand
        } else {
            VerdictKind::UncertainSize
        }
    } else if -threshold <= low && high <= threshold {
        VerdictKind::NoMeaningfulDifference
    } else {
        VerdictKind::Inconclusive
    }
}

/// Classifies the comparison and words the verdict.
pub fn verdict(comparison: &Comparison, settings: &StatsSettings, wording: &Wording) -> Verdict {
    verdict_per(comparison, settings, wording, Replicate::Trial)
}

/// [`verdict`] for a comparison whose observations are `replicate`s: the trials, or the
/// means of boots; "more trials" is then said in boots.
pub fn verdict_per(
    comparison: &Comparison,
    settings: &StatsSettings,
    wording: &Wording,
    replicate: Replicate<'_>,
) -> Verdict {
    let delta = settings.threshold;
    let kind = classify(comparison, delta);
    let Wording { baseline, level, .. } = *wording;
    let band = format!("±{}", fraction_as_percent(delta));
    let mut more_trials = None;
    let sentence = match (kind, comparison.interval.effect()) {
        (VerdictKind::Significant, Some(effect)) => change(comparison.ratio, effect, wording),
        (VerdictKind::WithinBand, Some(effect)) => format!(
            "{}, statistically significant but within the {band} band",
            change(comparison.ratio, effect, &Wording { better: None, ..*wording })
        ),
        (VerdictKind::UncertainSize, Some(effect)) => {
            more_trials = trials_to_size(comparison, settings);
            let settle = match more_trials {
                Some(n) => format!("; {} would settle it", replicate.more(n.max(1))),
                None => String::new(),
            };
            format!(
                "{}: a real difference, but whether it exceeds {band} is not settled{settle}",
                change(comparison.ratio, effect, &Wording { better: None, ..*wording })
            )
        }
        (VerdictKind::NoMeaningfulDifference, Some((low, high))) => format!(
            "no meaningful difference: {level} is within {band} of {baseline} [{}, {}]",
            signed_fraction_as_percent(low),
            signed_fraction_as_percent(high)
        ),
        (VerdictKind::Inconclusive, Some((low, high))) => {
            more_trials = trials_to_settle(comparison, settings);
            let settle = match more_trials {
                Some(0) => {
                    format!("the difference lies close to {band}, so only many more trials would settle it")
                }
                Some(n) => format!("{} would settle it", replicate.more(n)),
                None => "it would take more trials than are practical to settle it".to_owned(),
            };
            format!(
                "inconclusive: the data allow up to {} between {level} and {baseline} [{}, {}]; {settle}",
                fraction_as_percent(low.abs().max(high.abs())),
                signed_fraction_as_percent(low),
                signed_fraction_as_percent(high)
            )
        }
        (VerdictKind::Unbounded, _) => format!(
            "inconclusive: too noisy to bound the ratio of {level} to {baseline}; \
             run more trials or reduce the noise"
        ),
        // Insufficient, and the combinations `classify` never returns (a verdict other
        // than these three always comes with a bounded interval).
        _ => {
            let seen = if comparison.ratio.is_finite() && comparison.ratio != 1.0 {
                let (size, direction) = if comparison.ratio > 1.0 {
                    (comparison.ratio - 1.0, "higher")
                } else {
                    (1.0 - comparison.ratio, "lower")
                };
                format!("{level} measured {} {direction}, but ", fraction_as_percent(size))
            } else {
                String::new()
            };
            format!(
                "no error estimate ({baseline}: n = {}, {level}: n = {}): {seen}a single trial shows no \
                 spread to judge a difference by; it takes 2 trials per level for any margin of error \
                 and 5 for a dependable one",
                comparison.n_a, comparison.n_b
            )
        }
    };
    Verdict { kind, sentence, more_trials }
}

/// "B is 12.3 % higher than A [8.1 %, 16.4 %]: slower", for an interval on one side of
/// zero; the bounds are given as sizes of the change, smaller first.
fn change(ratio: f64, (low, high): (f64, f64), wording: &Wording) -> String {
    let higher = low > 0.0;
    let (size, from, to) = if higher { (ratio - 1.0, low, high) } else { (1.0 - ratio, -high, -low) };
    let direction = if higher { "higher" } else { "lower" };
    let mut sentence = format!(
        "{} is {} {direction} than {} [{}, {}]",
        wording.level,
        fraction_as_percent(size),
        wording.baseline,
        fraction_as_percent(from),
        fraction_as_percent(to)
    );
    if let Some(better) = wording.better {
        let good = higher == (better == Better::Higher);
        let judgement = match (wording.vocabulary, good) {
            (Vocabulary::Speed, true) => "faster",
            (Vocabulary::Speed, false) => "slower",
            (Vocabulary::Quality, true) => "better",
            (Vocabulary::Quality, false) => "worse",
        };
        sentence.push_str(": ");
        sentence.push_str(judgement);
    }
    sentence
}

/// A fraction as a percentage: one decimal, two below 1 %, so small effects keep a
/// significant digit.
fn fraction_as_percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if value.abs() < 1.0 { format!("{value:.2} %") } else { format!("{value:.1} %") }
}

/// A percentage with its sign, for interval bounds on both sides of zero.
fn signed_fraction_as_percent(fraction: f64) -> String {
    let text = fraction_as_percent(fraction);
    if text.starts_with('-') { text } else { format!("+{text}") }
}

/// The verdict the report gives a comparison of these cells' values (in trial order, on
/// the metric's scale), when the levels share their boots: each cell analysed and its
/// outliers handled as the report does, the sides compared by the same interval
/// ([`compare_design`]: Fieller/Welch, or paired per-block means) at
/// `settings.confidence`, and classified by the same rule. One cell per side unless
/// `paired` (then the blocks both sides have).
pub fn trial_verdict(
    base: &[(Option<&str>, &[f64])],
    other: &[(Option<&str>, &[f64])],
    kind: MeanKind,
    paired: bool,
    settings: &StatsSettings,
) -> Result<VerdictKind, StatsError> {
    let kept = |values: &[f64]| -> Result<Observations, StatsError> {
        let all = Observations::new(values, kind)?;
        let analysis = analyze_cell(&all, settings)?;
        all.without(&analysis.outliers.set_aside)
    };
    let (a, b) = if paired {
        let mut sides: (Vec<Observations>, Vec<Observations>) = (Vec::new(), Vec::new());
        for (block, values) in base {
            if let Some((_, theirs)) = other.iter().find(|(b, _)| block.is_some() && b == block) {
                sides.0.push(kept(values)?);
                sides.1.push(kept(theirs)?);
            }
        }
        if sides.0.is_empty() {
            return Ok(VerdictKind::Insufficient);
        }
        let (a, b): (Vec<&Observations>, Vec<&Observations>) =
            (sides.0.iter().collect(), sides.1.iter().collect());
        (block_means(&a, kind)?, block_means(&b, kind)?)
    } else {
        match (base.first(), other.first()) {
            (Some((_, a)), Some((_, b))) => (kept(a)?, kept(b)?),
            _ => return Ok(VerdictKind::Insufficient),
        }
    };
    let comparison = compare_design(paired, &a, &b, settings)?;
    Ok(classify(&comparison, settings.threshold))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::compare::{compare_independent, compare_paired};
    use crate::stats::observations::Observations;
    use crate::stats::reference::sample;
    use crate::vocab::MeanKind;

    const SECONDS: Wording = Wording {
        baseline: "bare",
        level: "xen",
        better: Some(Better::Lower),
        vocabulary: Vocabulary::Speed,
    };

    fn judge(a: &Observations, b: &Observations, wording: &Wording) -> Verdict {
        let settings = StatsSettings::default();
        verdict(&compare_independent(a, b, &settings).unwrap(), &settings, wording)
    }

    fn seconds(values: &[f64]) -> Observations {
        Observations::new(values, MeanKind::Arithmetic).unwrap()
    }

    const BASE: [f64; 5] = [10.0, 10.1, 9.9, 10.05, 9.95];

    #[test]
    fn one_trial_is_insufficient() {
        let got = judge(&sample("n1"), &sample("n3"), &SECONDS);
        assert_eq!(got.kind, VerdictKind::Insufficient);
        assert_eq!(
            got.sentence,
            "no error estimate (bare: n = 1, xen: n = 3): xen measured 59.2 % lower, but a single trial \
             shows no spread to judge a difference by; it takes 2 trials per level for any margin of error \
             and 5 for a dependable one"
        );
    }

    #[test]
    fn a_baseline_indistinguishable_from_zero_is_unbounded() {
        let got = judge(&sample("wild_2"), &sample("n2"), &SECONDS);
        assert_eq!(got.kind, VerdictKind::Unbounded);
        assert!(got.sentence.starts_with("inconclusive: too noisy"), "{}", got.sentence);
    }

    #[test]
    fn seed_000_block_writes_are_significantly_slower_in_the_domu() {
        let wording = Wording {
            baseline: "dom0",
            level: "domU",
            better: Some(Better::Higher),
            vocabulary: Vocabulary::Speed,
        };
        let got = judge(&sample("put_block_dom0"), &sample("put_block_domu"), &wording);
        assert_eq!(got.kind, VerdictKind::Significant);
        assert_eq!(got.sentence, "domU is 19.9 % lower than dom0 [18.9 %, 20.9 %]: slower");
        assert_eq!(got.more_trials, None);
    }

    #[test]
    fn a_small_sure_change_is_within_the_band() {
        let got = judge(&seconds(&BASE), &seconds(&[10.2, 10.3, 10.1, 10.25, 10.15]), &SECONDS);
        assert_eq!(got.kind, VerdictKind::WithinBand);
        assert_eq!(
            got.sentence,
            "xen is 2.0 % higher than bare [0.84 %, 3.2 %], \
             statistically significant but within the ±5.0 % band"
        );
    }

    #[test]
    fn a_tight_interval_around_zero_is_no_meaningful_difference() {
        let got = judge(&seconds(&BASE), &seconds(&[10.02, 10.08, 9.93, 10.0, 9.97]), &SECONDS);
        assert_eq!(got.kind, VerdictKind::NoMeaningfulDifference);
        assert_eq!(got.sentence, "no meaningful difference: xen is within ±5.0 % of bare [-1.0 %, +1.0 %]");
    }

    /// Seed 000's question: do the kernels differ on the dnetc cores? Not by this data.
    #[test]
    fn seed_000_dnetc_kernels_are_inconclusive_with_a_trial_estimate() {
        let got = judge(&sample("dnetc_bare"), &sample("dnetc_xen"), &SECONDS);
        assert_eq!(got.kind, VerdictKind::Inconclusive);
        assert_eq!(got.more_trials, Some(4), "10 per level settle it, 6 are there");
        assert_eq!(
            got.sentence,
            "inconclusive: the data allow up to 6.0 % between xen and bare [-1.0 %, +6.0 %]; \
             about 4 more trials per level would settle it"
        );
        assert!(!got.sentence.contains("no difference"));
        let settings = StatsSettings::default();
        let paired = compare_paired(&sample("dnetc_bare"), &sample("dnetc_xen"), &settings).unwrap();
        let got = verdict(&paired, &settings, &SECONDS);
        assert_eq!((got.kind, got.more_trials), (VerdictKind::Inconclusive, Some(3)));
    }

    #[test]
    fn judgement_follows_the_better_direction_and_vocabulary() {
        let (a, b) = (sample("put_block_dom0"), sample("put_block_domu"));
        let ending = |better, vocabulary| {
            let wording = Wording { better, vocabulary, ..SECONDS };
            judge(&a, &b, &wording).sentence.rsplit(']').next().unwrap().to_owned()
        };
        assert_eq!(ending(Some(Better::Lower), Vocabulary::Speed), ": faster");
        assert_eq!(ending(Some(Better::Higher), Vocabulary::Quality), ": worse");
        assert_eq!(ending(Some(Better::Lower), Vocabulary::Quality), ": better");
        assert_eq!(ending(None, Vocabulary::Speed), "");
        let rise = judge(&b, &a, &SECONDS).sentence;
        assert!(rise.starts_with("xen is 24.8 % higher than bare ["), "{rise}");
        assert!(rise.ends_with(": slower"), "{rise}");
    }

    #[test]
    fn verdict_names_are_those_of_summary_json() {
        let names = [
            VerdictKind::Insufficient,
            VerdictKind::Unbounded,
            VerdictKind::Significant,
            VerdictKind::UncertainSize,
            VerdictKind::WithinBand,
            VerdictKind::NoMeaningfulDifference,
            VerdictKind::Inconclusive,
        ]
        .map(|kind| serde_json::to_value(kind).unwrap());
        assert_eq!(
            names,
            [
                "insufficient",
                "unbounded",
                "significant",
                "uncertain_size",
                "within_band",
                "no_meaningful_difference",
                "inconclusive"
            ]
            .map(serde_json::Value::from)
        );
    }
}
