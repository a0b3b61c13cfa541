//! Verdicts (docs/statistics.md, Verdicts): what a comparison means against the practical threshold δ,
//! and the sentence the report prints for it.

use serde::Serialize;

use super::cell::analyze_cell;
use super::compare::Design;
use super::compare::{Comparison, RatioInterval, block_means, size_target, trials_to_settle, trials_to_size};
use super::components::Advice;
use super::notation::{
    Notation, change_and_interval, confidence_level, fraction_as_percent, ratio_change, ratio_change_in,
    ratio_interval,
};
use super::observations::Observations;
use super::robust::compare_design;
pub use super::settle::Replicate;
use super::settle::{advice_words, beyond_the_maximum, settle_words, too_many_units};
use super::{StatsError, StatsSettings};
use vocab::Better;
use vocab::{MeanKind, Method};

/// The verdicts of summary.json (docs/statistics.md, Verdicts), in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    /// The robust method's interval needs more trials at this confidence than a side has
    /// (its widest, between the extreme differences, covers less): nothing is claimed
    /// (docs/statistics.md, The robust method).
    TooFewForRobust,
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    pub sentence: String,
    /// For [`VerdictKind::Inconclusive`]: about how many more trials per level would
    /// settle it (see [`trials_to_settle`]).
    pub more_trials: Option<usize>,
    /// Across disjoint boots with two or more on each side: how to spread further runs,
    /// from the variance components, when the verdict is not settled.
    pub advice: Option<Advice>,
}

/// The first rule of docs/statistics.md (Verdicts) that matches, with δ = `threshold`.
pub(crate) fn classify(comparison: &Comparison, threshold: f64) -> VerdictKind {
    if comparison.n_a < 2 || comparison.n_b < 2 {
        return VerdictKind::Insufficient;
    }
    let (low, high) = match comparison.interval {
        RatioInterval::NoEstimate => return VerdictKind::Insufficient,
        RatioInterval::Unbounded => return VerdictKind::Unbounded,
        RatioInterval::TooFew { .. } => return VerdictKind::TooFewForRobust,
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

/// Classifies the comparison of trials and words the verdict (the tests' shorthand).
#[cfg(test)]
pub fn verdict(comparison: &Comparison, settings: &StatsSettings, wording: &Wording) -> Verdict {
    verdict_per(comparison, settings, wording, Replicate::Trial)
}

/// Classifies the comparison and words the verdict, for a comparison whose observations are `replicate`s: the trials, or the
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
    let at = format!("at {} confidence{}", confidence_level(settings.confidence), method_words(comparison));
    let mut more_trials = None;
    let mut advice = None;
    let sentence = match (kind, bounds(&comparison.interval)) {
        (VerdictKind::Significant, Some(bounds)) => change(comparison.ratio, bounds, &at, wording),
        (VerdictKind::WithinBand, Some(bounds)) => format!(
            "{}, statistically significant but within the {band} band",
            change(comparison.ratio, bounds, &at, &Wording { better: None, ..*wording })
        ),
        (VerdictKind::UncertainSize, Some(bounds)) => {
            more_trials = trials_to_size(comparison, settings);
            advice = replicate.advice(size_target(comparison, settings), settings);
            let settle = match (more_trials, &advice, replicate) {
                (_, Some(a), Replicate::Unit { unit, .. }) => format!("; {}", advice_words(unit, a)),
                (_, None, Replicate::Unit { unit, components: Some((a, b)), .. }) => {
                    format!("; {}", too_many_units(unit, &a, &b))
                }
                (Some(n), ..) => {
                    format!("; {}", beyond_the_maximum(n.max(1), comparison, settings, replicate))
                }
                (None, ..) => String::new(),
            };
            format!(
                "{}: a real difference, but whether it exceeds {band} is not settled{settle}",
                change(comparison.ratio, bounds, &at, &Wording { better: None, ..*wording })
            )
        }
        (VerdictKind::NoMeaningfulDifference, Some(bounds)) => format!(
            "no meaningful difference: {level} is within {band} of {baseline} {} {at}",
            ratio_interval(bounds)
        ),
        (VerdictKind::Inconclusive, Some((low, high))) => {
            more_trials = trials_to_settle(comparison, settings);
            advice = replicate.advice(settings.threshold / 2.0, settings);
            let settle = match (more_trials, &advice, replicate) {
                (_, Some(a), Replicate::Unit { unit, .. }) => advice_words(unit, a),
                (_, None, Replicate::Unit { unit, components: Some((a, b)), .. }) => {
                    too_many_units(unit, &a, &b)
                }
                (Some(n), ..) if n > 0 => beyond_the_maximum(n, comparison, settings, replicate),
                (n, ..) => settle_words(n, &band, replicate),
            };
            format!(
                "inconclusive: {at} the data allow anything from {} to {} between {level} and {baseline}; \
                 {settle}",
                ratio_change_in(low, Notation::of((low, high))),
                ratio_change_in(high, Notation::of((low, high)))
            )
        }
        (VerdictKind::TooFewForRobust, _) => {
            let needed = match comparison.interval {
                RatioInterval::TooFew { needed } => needed,
                _ => 0,
            };
            let (what, per) = match comparison.design {
                Design::Paired => ("pairs", format!("{} here", comparison.n_a)),
                Design::Independent => {
                    ("trials per level", format!("{} and {} here", comparison.n_a, comparison.n_b))
                }
            };
            format!(
                "too few for the robust method: at {} confidence its interval needs at least {needed} {what} \
                 ({per}); {level} measured {} against {baseline} (Hodges–Lehmann), and nothing is claimed; \
                 run more trials, or compare the means (`method: parametric`)",
                confidence_level(settings.confidence),
                ratio_change(comparison.ratio),
            )
        }
        (VerdictKind::Unbounded, _) => {
            // across boots the boots are what the interval counts: more of them, not
            // more trials, bound it (2 boots a side leave it 1 degree of freedom)
            advice = replicate.advice(settings.threshold / 2.0, settings);
            let settle = match (&advice, replicate) {
                (Some(a), Replicate::Unit { unit, .. }) => advice_words(unit, a),
                (None, Replicate::Unit { unit, components: Some((a, b)), .. }) => {
                    too_many_units(unit, &a, &b)
                }
                (None, Replicate::Unit { unit, units, .. }) => format!(
                    "run more {unit}s of each level ({units} of the fewer side here): the interval counts \
                     {unit}s, not trials"
                ),
                (_, Replicate::Trial) => "run more trials or reduce the noise".to_owned(),
            };
            format!("inconclusive: too noisy to bound the ratio of {level} to {baseline} {at}; {settle}")
        }
        // Insufficient, and the combinations `classify` never returns (a verdict other
        // than these three always comes with a bounded interval). No interval, so no
        // confidence level to name.
        _ => {
            let seen = if comparison.ratio.is_finite() && comparison.ratio != 1.0 {
                format!("{level} measured {} against {baseline}, but ", ratio_change(comparison.ratio))
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
    Verdict { kind, sentence, more_trials, advice }
}

/// What a robust interval is, for the sentence after its confidence level: " (robust:
/// Hodges–Lehmann shift, Mann–Whitney interval, exact coverage 96.8 %)"; nothing for the
/// parametric method, whose interval's coverage is its confidence.
fn method_words(comparison: &Comparison) -> String {
    if comparison.method != Method::Robust {
        return String::new();
    }
    let how = match comparison.design {
        Design::Independent => "Hodges–Lehmann shift, Mann–Whitney interval",
        Design::Paired => "Hodges–Lehmann median of the Walsh averages, signed-rank interval",
    };
    let coverage = match comparison.coverage {
        Some(c) => format!(", exact coverage {}", confidence_level((c * 1000.0).round() / 1000.0)),
        None => String::new(),
    };
    format!(" (robust: {how}{coverage})")
}

/// The verdict of levels measured in disjoint boots (or sessions), one of them in a
/// single one: what the trials showed within their boots, at which confidence, and that
/// it claims nothing (docs/statistics.md, Sessions and boots). `unit` is `boot` or
/// `session`; `units` how many of them each side has (baseline, level).
pub fn unreplicated(
    comparison: &Comparison,
    settings: &StatsSettings,
    wording: &Wording<'_>,
    unit: &str,
    (baseline_units, level_units): (usize, usize),
) -> Verdict {
    let within = match bounds(&comparison.interval) {
        Some(bounds) if comparison.ratio.is_finite() => {
            let (change, interval) = change_and_interval(comparison.ratio, bounds);
            format!(
                "within their {unit}s {} measured {change} against {} {interval} at {} confidence; ",
                wording.level,
                wording.baseline,
                confidence_level(settings.confidence)
            )
        }
        _ => String::new(),
    };
    let (one, other) = if baseline_units < 2 {
        (wording.baseline, wording.level)
    } else {
        (wording.level, wording.baseline)
    };
    let sentence = format!(
        "unreplicated: {within}{one} was measured in one {unit}{}, so how much {unit}s differ is \
         unmeasured and no difference is claimed; run each level in 2 or more {unit}s",
        if baseline_units < 2 && level_units < 2 { format!(", and so was {other}") } else { String::new() }
    );
    Verdict { kind: VerdictKind::Unreplicated, sentence, more_trials: None, advice: None }
}

/// "domU is slower than dom0: -19.9 % [-20.9 %, -18.9 %] at 95 % confidence", for an
/// interval on one side of no change; with no preferred direction, "higher" or "lower".
fn change(ratio: f64, bounds: (f64, f64), at: &str, wording: &Wording) -> String {
    let higher = bounds.0 > 1.0;
    let judgement = match (wording.better, wording.vocabulary) {
        (None, _) => {
            if higher {
                "higher"
            } else {
                "lower"
            }
        }
        (Some(better), vocabulary) => {
            let good = higher == (better == Better::Higher);
            match (vocabulary, good) {
                (Vocabulary::Speed, true) => "faster",
                (Vocabulary::Speed, false) => "slower",
                (Vocabulary::Quality, true) => "better",
                (Vocabulary::Quality, false) => "worse",
            }
        }
    };
    let (change, interval) = change_and_interval(ratio, bounds);
    format!("{} is {judgement} than {}: {change} {interval} {at}", wording.level, wording.baseline,)
}

/// The ratio's interval as ratios (low, high), when it is bounded.
fn bounds(interval: &RatioInterval) -> Option<(f64, f64)> {
    interval.effect().map(|(low, high)| (low + 1.0, high + 1.0))
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
        if settings.method == Method::Robust {
            // ranks need no outlier rule: the report's robust comparisons take every value
            return Ok(all);
        }
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
    use crate::compare::{compare_independent, compare_paired};
    use crate::observations::Observations;
    use crate::reference::sample;
    use vocab::MeanKind;

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
            "no error estimate (bare: n = 1, xen: n = 3): xen measured ÷2.45 against bare, but a single trial \
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
        assert_eq!(got.sentence, "domU is slower than dom0: -19.9 % [-20.9 %, -18.9 %] at 95 % confidence");
        assert_eq!(got.more_trials, None);
    }

    #[test]
    fn a_small_sure_change_is_within_the_band() {
        let got = judge(&seconds(&BASE), &seconds(&[10.2, 10.3, 10.1, 10.25, 10.15]), &SECONDS);
        assert_eq!(got.kind, VerdictKind::WithinBand);
        assert_eq!(
            got.sentence,
            "xen is higher than bare: +2.0 % [+0.84 %, +3.2 %] at 95 % confidence, \
             statistically significant but within the ±5.0 % band"
        );
    }

    #[test]
    fn a_tight_interval_around_zero_is_no_meaningful_difference() {
        let got = judge(&seconds(&BASE), &seconds(&[10.02, 10.08, 9.93, 10.0, 9.97]), &SECONDS);
        assert_eq!(got.kind, VerdictKind::NoMeaningfulDifference);
        assert_eq!(
            got.sentence,
            "no meaningful difference: xen is within ±5.0 % of bare [-1.0 %, +1.0 %] at 95 % confidence"
        );
    }

    /// Seed 000's question: do the kernels differ on the dnetc cores? Not by this data.
    #[test]
    fn seed_000_dnetc_kernels_are_inconclusive_with_a_trial_estimate() {
        let got = judge(&sample("dnetc_bare"), &sample("dnetc_xen"), &SECONDS);
        assert_eq!(got.kind, VerdictKind::Inconclusive);
        assert_eq!(got.more_trials, Some(4), "10 per level settle it, 6 are there");
        assert_eq!(
            got.sentence,
            "inconclusive: at 95 % confidence the data allow anything from -1.0 % to +6.0 % between xen \
             and bare; about 4 more trials per level would settle it"
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
        let judgement = |better, vocabulary| {
            let wording = Wording { better, vocabulary, ..SECONDS };
            let sentence = judge(&a, &b, &wording).sentence;
            sentence.strip_prefix("xen is ").unwrap().split(' ').next().unwrap().to_owned()
        };
        assert_eq!(judgement(Some(Better::Lower), Vocabulary::Speed), "faster");
        assert_eq!(judgement(Some(Better::Higher), Vocabulary::Quality), "worse");
        assert_eq!(judgement(Some(Better::Lower), Vocabulary::Quality), "better");
        assert_eq!(judgement(None, Vocabulary::Speed), "lower");
        let rise = judge(&b, &a, &SECONDS).sentence;
        assert!(rise.starts_with("xen is slower than bare: +24.8 % ["), "{rise}");
        assert!(rise.ends_with("] at 95 % confidence"), "{rise}");
    }

    #[test]
    fn sentences_name_the_level_their_interval_is_computed_at() {
        // adaptive repetitions compute the intervals at 1 − 0.6·α: the sentence says so
        let settings = StatsSettings { confidence: 0.97, ..StatsSettings::default() };
        let (a, b) = (sample("put_block_dom0"), sample("put_block_domu"));
        let c = compare_independent(&a, &b, &settings).unwrap();
        let got = verdict(&c, &settings, &SECONDS);
        assert!(got.sentence.ends_with("] at 97 % confidence"), "{}", got.sentence);
        let got = unreplicated(&c, &settings, &SECONDS, "session", (1, 1));
        assert_eq!(got.kind, VerdictKind::Unreplicated);
        assert!(
            got.sentence
                .starts_with("unreplicated: within their sessions xen measured -19.9 % against bare [")
                && got
                    .sentence
                    .contains("] at 97 % confidence; bare was measured in one session, and so was xen"),
            "{}",
            got.sentence
        );
        // a ratio past twice reads as a multiple, never as a percentage above 100 %
        let rise = verdict(
            &compare_independent(&seconds(&BASE), &seconds(&BASE.map(|x| x * 217.0)), &settings).unwrap(),
            &settings,
            &SECONDS,
        );
        assert!(rise.sentence.starts_with("xen is slower than bare: ×217 [×"), "{}", rise.sentence);
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
