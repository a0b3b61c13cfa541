//! One test per verdict, and the verdicts that rest on an outlier.

use super::*;

#[test]
fn verdict_insufficient() {
    // both sides a single trial: no error estimate, and nothing to predict with
    let (c, _) = verdict_case(&[12.5], &[5.1]);
    assert_eq!(c.verdict, VerdictKind::Insufficient);
    assert!(
        c.sentence.starts_with("no error estimate (a: n = 1, b: n = 1): b measured ÷2.45 against a, but"),
        "{}",
        c.sentence
    );
    assert_eq!(c.prediction, None);
}

/// One side a single trial, the other three: the verdict stays `insufficient`, and the
/// sentence places the single trial against the prediction interval of the three
/// (5.1, 4.9, 5.3: mean 5.1, sd 0.2; t(0.975, 2) = 4.302653, so 5.1 ± 0.99364).
#[test]
fn verdict_insufficient_with_a_single_trial_against_measured_ones() {
    let (c, markdown) = verdict_case(&[12.5], &[5.1, 4.9, 5.3]);
    assert_eq!(c.verdict, VerdictKind::Insufficient);
    let p = c.prediction.as_ref().expect("a prediction");
    let h = 4.302_652_729_749_464 * 0.2 * (4.0f64 / 3.0).sqrt();
    assert!((p.low - (5.1 - h)).abs() < 1e-9 && (p.high.unwrap() - (5.1 + h)).abs() < 1e-9, "{p:?}");
    assert_eq!((p.single_level.as_str(), p.value, p.measured_n), ("a", 12.5, 3));
    assert_eq!((p.place, p.far), (stats::prediction::Place::Above, true));
    assert!(
        c.sentence.starts_with(
            "the single trial of v=a, 12.50 s, lies far above the 95 % prediction interval of one more trial \
             of v=b, [4.106, 6.094] s (from its 3 trials; it assumes"
        ),
        "{}",
        c.sentence
    );
    assert!(markdown.contains("| far above PI [4.106, 6.094] s |"), "{markdown}");
}

#[test]
fn verdict_unbounded() {
    let (c, markdown) = verdict_case(&[1.0, 10.0], &[10.0, 10.4]);
    assert_eq!(c.verdict, VerdictKind::Unbounded);
    assert_eq!((c.ci_low, c.ci_high), (None, None));
    assert!(markdown.contains("very wide: n = 2"), "{markdown}");
}

#[test]
fn verdict_significant() {
    let (c, markdown) = verdict_case(&BASE, &[12.0, 12.1, 11.9, 12.05, 11.95]);
    // The fixture runs every trial of a before any of b: a trap the report names.
    assert!(markdown.contains("v: b vs a were measured in disjoint time windows"), "{markdown}");
    assert_eq!(c.verdict, VerdictKind::Significant);
    assert!(c.sentence.starts_with("b is slower than a: +20.0 % [+"), "{}", c.sentence);
    assert!(c.sentence.ends_with("] at 95 % confidence"), "{}", c.sentence);
}

#[test]
fn verdict_within_band() {
    let (c, _) = verdict_case(&BASE, &[10.2, 10.3, 10.1, 10.25, 10.15]);
    assert_eq!(c.verdict, VerdictKind::WithinBand);
    assert!(c.sentence.ends_with("statistically significant but within the ±5.0 % band"), "{}", c.sentence);
}

/// An interval that excludes no change but reaches across ±δ is a real difference of
/// unsettled size, not "within the band" (which was said of [−86 %, −4 %]).
#[test]
fn verdict_uncertain_size() {
    let (c, _) = verdict_case(&BASE, &[10.2, 10.9, 10.4, 10.8, 10.3]);
    assert_eq!(c.verdict, VerdictKind::UncertainSize);
    let (low, high) = (c.ci_low.unwrap() - 1.0, c.ci_high.unwrap() - 1.0);
    assert!(low > 0.0 && low < 0.05 && high > 0.05, "[{low}, {high}]");
    assert!(
        c.sentence.contains("a real difference, but whether it exceeds ±5.0 % is not settled; about "),
        "{}",
        c.sentence
    );
    assert!(c.more_trials.is_some_and(|n| n >= 1), "{:?}", c.more_trials);
}

/// A change measured far beyond δ whose interval still reaches below it is settled by
/// narrowing the interval to the change's distance from δ, not to δ/2 (which asked dd's
/// 1M direct writes, +32 % [0.2 %, 62 %], for 5 714 more trials).
#[test]
fn an_uncertain_size_far_beyond_the_band_needs_few_more_trials() {
    let (c, _) = verdict_case(&BASE, &[11.0, 16.0, 12.0, 15.5, 11.5]);
    assert_eq!(c.verdict, VerdictKind::UncertainSize, "{}", c.sentence);
    let more = c.more_trials.unwrap();
    // the spread is about 16 % of the mean: the interval reaches 5 % once its half-width
    // is under about 27 %, a few trials more; δ/2 would take hundreds
    assert!((1..=10).contains(&more), "{more}: {}", c.sentence);
}

#[test]
fn verdict_no_meaningful_difference() {
    let (c, _) = verdict_case(&BASE, &[10.02, 10.08, 9.93, 10.0, 9.97]);
    assert_eq!(c.verdict, VerdictKind::NoMeaningfulDifference);
    assert_eq!(
        c.sentence,
        "no meaningful difference: b is within ±5.0 % of a [-1.0 %, +1.0 %] at 95 % confidence"
    );
}

#[test]
fn verdict_inconclusive() {
    let bare = numbers(&SEED["dnetc"]["bare"]);
    let xen = numbers(&SEED["dnetc"]["xen"]);
    let (c, _) = verdict_case(&bare, &xen);
    assert_eq!(c.verdict, VerdictKind::Inconclusive);
    assert_eq!(c.more_trials, Some(4));
    assert!(c.sentence.contains("about 4 more trials per level would settle it"), "{}", c.sentence);
}

/// A flagged outlier decides the verdict: by default it stays in, and the report says
/// what setting it aside would give.
#[test]
fn verdicts_that_rest_on_an_outlier_are_flagged() {
    let (c, markdown) = verdict_case_with(
        "  outliers: { method: mad }\n",
        &[10.0, 10.1, 9.9, 10.05, 9.95, 10.0],
        &[10.02, 10.08, 9.93, 10.0, 9.97, 13.0],
    );
    assert_eq!(c.verdict, VerdictKind::Inconclusive);
    assert_eq!(c.level_arm.n, 6, "13.0 stays in");
    assert_eq!(c.verdict_with_outliers, None);
    assert_eq!(c.verdict_without_outliers, Some(VerdictKind::NoMeaningfulDifference));
    assert!(markdown.contains("with the flagged outliers set aside: no meaningful difference"), "{markdown}");
    assert!(
        markdown.contains(
            "v b vs a · wall_time: no meaningful difference if the flagged outliers were set aside"
        ),
        "{markdown}"
    );
}

/// `outliers: { set_aside: true }`: the flagged value goes, and the report says what
/// keeping it would give.
#[test]
fn outliers_set_aside_on_request() {
    let mut f = MemoryStore::new(
        "experiments/case.yaml",
        "matrix: { v: [a, b] }\nrun: \"true\"\nrepetitions: 6\nanalysis:\n  outliers: { method: mad, set_aside: true }\n  compare: [{ factor: v, baseline: a }]\n",
    );
    f.metric("wall_time", "s", Better::Lower, MeanKind::Arithmetic);
    for (level, values) in
        [("a", [10.0, 10.1, 9.9, 10.05, 9.95, 10.0]), ("b", [10.02, 10.08, 9.93, 10.0, 9.97, 13.0])]
    {
        for v in values {
            f.trial(&[("v", level)], &[("wall_time", v)]);
        }
    }
    let (summary, markdown) = report(&f, &[]);
    let [c] = &summary.comparisons[..] else { panic!("one comparison") };
    assert_eq!(c.verdict, VerdictKind::NoMeaningfulDifference);
    assert_eq!(c.level_arm.n, 5, "13.0 is set aside");
    assert_eq!(c.verdict_with_outliers, Some(VerdictKind::Inconclusive));
    assert!(markdown.contains("with the outliers kept: inconclusive"), "{markdown}");
}
