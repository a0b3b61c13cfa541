//! The bisection's state machine on fixed data, and its laws for any data.

use super::*;
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};

/// Drives a bisection to its end, each unit of a level its `mean` plus `noise(i)`
/// for the i-th unit measured overall.
fn run(b: &mut Bisection, mean: impl Fn(usize) -> f64, noise: impl Fn(u64) -> f64) -> Answer {
    let mut i = 0u64;
    loop {
        match b.next() {
            Next::Measure(level) => {
                b.record(level, mean(level) + noise(i)).unwrap();
                i += 1;
            }
            Next::Done(answer) => return answer,
        }
        assert!(i < 100_000, "the bisection never ends");
    }
}

/// A fixed pattern of ±1 % around 0, repeating every 5 units.
fn wobble(i: u64) -> f64 {
    [0.1, -0.1, 0.05, -0.05, 0.0][(i % 5) as usize]
}

fn step_at(first_bad: usize, size: f64) -> impl Fn(usize) -> f64 {
    move |level| if level >= first_bad { 10.0 + size } else { 10.0 }
}

#[test]
fn the_looks_follow_the_schedule_of_until_verdict() {
    assert_eq!(Budget { min: 5, max: 30 }.looks(), [5, 8, 12, 18, 27, 30]);
    assert_eq!(Budget { min: 2, max: 12 }.looks(), [2, 3, 5, 8, 12]);
    assert_eq!(Budget { min: 3, max: 3 }.looks(), [3]);
}

#[test]
fn a_clear_step_is_found_in_about_log2_levels() {
    let mut b = Bisection::new(0, 63, BisectSettings::default()).unwrap();
    let answer = run(&mut b, step_at(37, 2.0), wobble);
    assert_eq!(answer, Answer { outcome: Outcome::Found, last_good: Some(36), first_bad: Some(37) });
    // the ends, then 6 steps: 63 gaps halved each time
    assert_eq!(b.steps().len(), 7);
    assert_eq!(b.steps()[0].decision, Decision::Regression);
    assert_eq!(b.levels_measured(), 8);
    let levels: Vec<usize> = b.steps()[1..].iter().map(|s| s.level.unwrap()).collect();
    assert_eq!(levels, [31, 47, 39, 35, 37, 36]);
    let decisions: Vec<Decision> = b.steps()[1..].iter().map(|s| s.decision).collect();
    use Decision::{LikeBad, LikeGood};
    assert_eq!(decisions, [LikeGood, LikeBad, LikeBad, LikeGood, LikeBad, LikeGood]);
    // so clear a step is decided at each test's first look
    assert!(b.steps().iter().all(|s| s.looks == 1), "{:?}", b.steps());
    // the step between them: +20 %, the wobble's spread around it
    let step = b.step_found().unwrap().unwrap();
    assert!((step.ratio - 1.2).abs() < 0.01, "{}", step.ratio);
    let (low, high) = ratio_bounds(&step).unwrap();
    assert!(low > 1.15 && high < 1.25, "{low} {high}");
}

#[test]
fn the_same_ends_are_no_regression_and_nothing_between_is_measured() {
    let mut b = Bisection::new(0, 15, BisectSettings::default()).unwrap();
    let answer = run(&mut b, |_| 10.0, wobble);
    assert_eq!(answer, Answer { outcome: Outcome::NoRegression, last_good: None, first_bad: None });
    assert!(b.step_found().is_none());
    assert_eq!(b.levels_measured(), 2);
    assert_eq!(b.units(), 10, "settled at the first look, 5 rounds");
}

#[test]
fn a_faster_bad_end_is_an_improvement_and_a_higher_better_metric_turns_it_round() {
    let mut b = Bisection::new(0, 15, BisectSettings::default()).unwrap();
    assert_eq!(run(&mut b, step_at(8, -2.0), wobble).outcome, Outcome::Improvement);
    let higher = BisectSettings { better: Better::Higher, ..BisectSettings::default() };
    let mut b = Bisection::new(0, 15, higher).unwrap();
    let answer = run(&mut b, step_at(8, -2.0), wobble);
    assert_eq!(answer.first_bad, Some(8), "{:#?}", b.steps());
}

/// A rate (higher is better, harmonic mean) that drops: decided on the reciprocals,
/// worse is lower.
#[test]
fn a_rate_that_drops_is_bisected_on_its_reciprocals() {
    let rate =
        BisectSettings { better: Better::Higher, mean: MeanKind::Harmonic, ..BisectSettings::default() };
    let mut b = Bisection::new(0, 31, rate).unwrap();
    let answer = run(&mut b, step_at(11, -3.0), wobble);
    assert_eq!(answer, Answer { outcome: Outcome::Found, last_good: Some(10), first_bad: Some(11) });
    assert!(b.record(0, 0.0).is_err());
    let mut b =
        Bisection::new(0, 31, BisectSettings { mean: MeanKind::Harmonic, ..b.settings().clone() }).unwrap();
    assert!(matches!(b.record(0, -1.0), Err(BisectError::Stats(StatsError::NotPositive { .. }))));
}

/// A midpoint as noisy as the truth is unclear spends its whole budget: unknown.
#[test]
fn a_midpoint_never_decided_spends_its_budget_and_is_unknown() {
    let mut b = Bisection::new(0, 4, BisectSettings::default()).unwrap();
    let mut i = 0u64;
    while let Next::Measure(level) = b.next() {
        // the ends tight and apart, the midpoint 2 wild about half-way
        let x = match level {
            0 => 10.0 + wobble(i),
            4 => 12.0 + wobble(i),
            2 => 11.0 + if b.values(2).len().is_multiple_of(2) { 3.0 } else { -3.0 },
            l => step_at(3, 2.0)(l) + wobble(i),
        };
        b.record(level, x).unwrap();
        i += 1;
    }
    let step = &b.steps()[1];
    assert_eq!((step.level, step.decision, step.looks), (Some(2), Decision::Unknown, 4));
    assert_eq!(step.units, 8 * 8, "8 rounds of 6 midpoint units and the two ends");
    // its neighbours decide, and the change lies between them, 2 unknown
    let tried: Vec<(usize, Decision)> =
        b.steps()[2..].iter().map(|s| (s.level.unwrap(), s.decision)).collect();
    assert_eq!(tried, [(1, Decision::LikeGood), (3, Decision::LikeBad)]);
    assert_eq!(
        b.next(),
        Next::Done(Answer { outcome: Outcome::Narrowed, last_good: Some(1), first_bad: Some(3) })
    );
}

#[test]
fn noise_that_never_settles_the_ends_is_inconclusive_at_the_budget() {
    let mut b = Bisection::new(0, 15, BisectSettings::default()).unwrap();
    // ±50 %: the interval of the ratio reaches across ±5 % at every look
    let answer = run(&mut b, |_| 10.0, |i| if i % 4 < 2 { 5.0 } else { -5.0 });
    assert_eq!(answer.outcome, Outcome::Inconclusive);
    assert_eq!(b.units(), 80, "40 rounds of the two ends");
    assert_eq!(b.steps()[0].looks, 6);
}

/// A midpoint measuring half-way between the ends is not guessed: unknown, then the
/// nearest untested level (a neighbour) is tried, and the range ends narrowed.
#[test]
fn a_midpoint_half_way_is_unknown_and_a_neighbour_is_tried() {
    let mean = |level: usize| match level {
        0..=3 => 10.0,
        4 => 11.0,
        _ => 12.0,
    };
    let mut b = Bisection::new(0, 8, BisectSettings::default()).unwrap();
    let answer = run(&mut b, mean, wobble);
    let tried: Vec<(usize, Decision)> =
        b.steps()[1..].iter().map(|s| (s.level.unwrap(), s.decision)).collect();
    assert_eq!(tried[0], (4, Decision::Unknown));
    assert_eq!(b.steps()[1].looks, 1, "it differs from both ends at once");
    assert_eq!(tried[1], (3, Decision::LikeGood));
    assert_eq!(tried[2], (5, Decision::LikeBad));
    assert_eq!(answer, Answer { outcome: Outcome::Narrowed, last_good: Some(3), first_bad: Some(5) });
}

#[test]
fn a_skipped_level_is_named_and_its_neighbour_tried() {
    let mut b = Bisection::new(0, 8, BisectSettings::default()).unwrap();
    let mean = step_at(6, 2.0);
    let mut i = 0;
    while let Next::Measure(level) = b.next() {
        if level == 4 {
            b.skip(4).unwrap();
            continue;
        }
        b.record(level, mean(level) + wobble(i)).unwrap();
        i += 1;
    }
    assert_eq!(b.steps()[1].decision, Decision::Skipped);
    assert_eq!(b.steps()[1].level, Some(4));
    assert_eq!(b.steps()[2].level, Some(3), "the nearest untested level to the middle");
    assert_eq!(
        b.next(),
        Next::Done(Answer { outcome: Outcome::Found, last_good: Some(5), first_bad: Some(6) })
    );
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    assert_eq!(
        Bisection::new(5, 5, BisectSettings::default()).unwrap_err(),
        BisectError::Range { good: 5, bad: 5 }
    );
    let bad_budget = BisectSettings { ends: Budget { min: 1, max: 5 }, ..BisectSettings::default() };
    assert!(matches!(
        Bisection::new(0, 5, bad_budget),
        Err(BisectError::Stats(StatsError::InvalidSetting { .. }))
    ));
    let mut b = Bisection::new(2, 9, BisectSettings::default()).unwrap();
    let before = b.clone();
    assert_eq!(b.record(9, 1.0), Err(BisectError::NotAsked { expected: 2, got: 9 }));
    assert!(matches!(b.record(2, f64::NAN), Err(BisectError::Stats(StatsError::NotFinite { .. }))));
    assert_eq!(b.skip(5), Err(BisectError::NotSkippable { level: 5 }));
    assert_eq!(b, before);
    run(&mut b, |_| 10.0, wobble);
    assert_eq!(b.record(2, 1.0), Err(BisectError::Over));
    // a look with a mean at or below 0 has no ratio: refused, and nothing recorded
    let mut b = Bisection::new(0, 4, BisectSettings::default()).unwrap();
    for i in 0..9 {
        let level = if i % 2 == 0 { 0 } else { 4 };
        b.record(level, if level == 0 { -1.0 + wobble(i) } else { 1.0 }).unwrap();
    }
    let before = b.clone();
    assert!(matches!(b.record(4, 1.0), Err(BisectError::Stats(StatsError::NonPositiveMean { .. }))));
    assert_eq!(b, before);
}

#[test]
fn adjacent_ends_with_a_regression_are_found_without_a_step() {
    let mut b = Bisection::new(3, 4, BisectSettings::default()).unwrap();
    let answer = run(&mut b, step_at(4, 2.0), wobble);
    assert_eq!(answer, Answer { outcome: Outcome::Found, last_good: Some(3), first_bad: Some(4) });
    assert_eq!(b.steps().len(), 1);
}

#[test]
fn alpha_is_split_between_the_ends_and_the_steps() {
    let b = Bisection::new(0, 63, BisectSettings::default()).unwrap();
    assert_eq!(b.max_steps(), 7, "⌈log₂ 63⌉ + 1");
    assert_eq!(b.settings().ends.looks(), [5, 8, 12, 18, 27, 40]);
    assert_eq!(b.settings().step.looks(), [2, 3, 5, 8]);
    assert!((b.ends_confidence() - (1.0 - 0.1 / 6.0)).abs() < 1e-12);
    assert!((b.step_confidence() - (1.0 - 0.05 / 7.0 / 4.0)).abs() < 1e-12);
}

/// Any level's values: a centre per level (in any order, not a step) and noise.
fn series() -> impl Strategy<Value = (usize, Vec<f64>, f64, u64, usize)> {
    (2usize..40).prop_flat_map(|n| {
        (Just(n), prop::collection::vec(5.0..15.0_f64, n), 0.0..3.0_f64, any::<u64>(), 0usize..400)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever the measurements, the bisection ends within its budget, names only
    /// levels inside the range, in order, and resumed from its serialised state at any
    /// point asks for the same next unit and ends with the same answer.
    #[test]
    fn the_state_machine_ends_inside_its_range_and_resumes((n, centres, noise, seed, cut) in series()) {
        let settings = BisectSettings { ends: Budget { min: 2, max: 8 }, step: Budget { min: 1, max: 6 }, ..BisectSettings::default() };
        let (good, bad) = (0, n - 1);
        let mut b = Bisection::new(good, bad, settings.clone()).unwrap();
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut draws = Vec::new();
        let bound = 2 * 8 + u64::from(b.max_steps()) * 6 * u64::from(settings.per_round + 2);
        let mut resumed = None;
        loop {
            if draws.len() == cut {
                let text = serde_json::to_string(&b).unwrap();
                let back: Bisection = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(&back, &b);
                prop_assert_eq!(back.next(), b.next());
                resumed = Some((back, draws.len()));
            }
            match b.next() {
                Next::Measure(level) => {
                    prop_assert!(good <= level && level <= bad);
                    let x = centres[level] + noise * (rng.random::<f64>() - 0.5);
                    draws.push((level, x));
                    b.record(level, x).unwrap();
                }
                Next::Done(answer) => {
                    if let (Some(g), Some(f)) = (answer.last_good, answer.first_bad) {
                        prop_assert!(good <= g && g < f && f <= bad);
                        prop_assert_eq!(answer.outcome == Outcome::Found, f == g + 1);
                    } else {
                        prop_assert!(matches!(answer.outcome, Outcome::NoRegression | Outcome::Improvement | Outcome::Inconclusive));
                    }
                    break;
                }
            }
            prop_assert!(b.units() <= bound, "{} units past the bound {}", b.units(), bound);
        }
        prop_assert!(b.steps().len() as u32 <= 1 + b.max_steps());
        if let Some((mut back, from)) = resumed {
            for &(level, x) in &draws[from..] {
                back.record(level, x).unwrap();
            }
            prop_assert_eq!(back, b);
        }
    }
}
