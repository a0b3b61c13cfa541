//! The series' change points checked against a second implementation written here from
//! docs/statistics.md (every mean recomputed from the units, the t quantile by bisection
//! on statrs's distribution function, recursion instead of a stack), by laws that hold for
//! any input, and by simulation: the false-change rate and the steps' coverage.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::*;

fn obs(values: &[f64]) -> Observations {
    Observations::new(values, MeanKind::Arithmetic).unwrap()
}

fn series(levels: &[Vec<f64>], kind: MeanKind) -> Vec<Observations> {
    levels.iter().map(|v| Observations::new(v, kind).unwrap()).collect()
}

/// Student's t quantile by bisection on the distribution function.
fn t_quantile(p: f64, df: f64) -> f64 {
    let t = StudentsT::new(0.0, 1.0, df).unwrap();
    let (mut low, mut high) = (0.0, 1e4);
    for _ in 0..200 {
        let mid = (low + high) / 2.0;
        if t.cdf(mid) < p { low = mid } else { high = mid }
    }
    (low + high) / 2.0
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// The change points found: the first level after each, and its t.
type Found = Vec<(usize, f64)>;
/// Each step's log-ratio and half-width.
type Steps = Vec<(f64, f64)>;

/// The method as docs/statistics.md states it, on the analysis-scale units of each level:
/// the change points (index of the first level after each) with their t, and each step's
/// (log-ratio, half-width) between the final segments.
fn reference(levels: &[Vec<f64>], alpha: f64, confidence: f64) -> (Found, Steps) {
    let units: usize = levels.iter().map(Vec::len).sum();
    let df = (units - levels.len()) as f64;
    let mut squares = 0.0;
    for level in levels {
        let m = mean(level);
        squares += level.iter().map(|x| (x / m - 1.0).powi(2)).sum::<f64>();
    }
    let sd = (squares / df).sqrt();
    let pooled = |a: usize, b: usize| -> Vec<f64> { levels[a..b].iter().flatten().copied().collect() };
    fn search(
        a: usize,
        b: usize,
        pooled: &dyn Fn(usize, usize) -> Vec<f64>,
        sd: f64,
        df: f64,
        alpha: f64,
        out: &mut Vec<(usize, f64)>,
    ) {
        if b - a < 2 {
            return;
        }
        let splits = (b - a - 1) as f64;
        let c = t_quantile(1.0 - alpha / 2.0 / (2.0 * splits), df);
        let mut best = (0, 0.0_f64);
        for k in a + 1..b {
            let (left, right) = (pooled(a, k), pooled(k, b));
            let se = sd * (1.0 / left.len() as f64 + 1.0 / right.len() as f64).sqrt();
            let t = (mean(&right) / mean(&left)).ln() / se;
            if t.abs() > best.1.abs() {
                best = (k, t);
            }
        }
        if best.1.abs() > c {
            search(a, best.0, pooled, sd, df, alpha, out);
            out.push(best);
            search(best.0, b, pooled, sd, df, alpha, out);
        }
    }
    let mut found = Vec::new();
    search(0, levels.len(), &pooled, sd, df, alpha, &mut found);
    let mut bounds = vec![0];
    bounds.extend(found.iter().map(|f| f.0));
    bounds.push(levels.len());
    let q = t_quantile(1.0 - 0.6 * (1.0 - confidence) / 2.0, df);
    let steps = (0..found.len())
        .map(|i| {
            let (left, right) = (pooled(bounds[i], bounds[i + 1]), pooled(bounds[i + 1], bounds[i + 2]));
            let se = sd * (1.0 / left.len() as f64 + 1.0 / right.len() as f64).sqrt();
            ((mean(&right) / mean(&left)).ln(), q * se)
        })
        .collect();
    (found, steps)
}

fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "{what}: {got} against {want}");
}

/// Fixed series: a step of +8 % after level 12 of 20, three steps, a flat one; each
/// matches the reference to 9 digits.
#[test]
fn fixed_series_match_the_reference() {
    let mut rng = Pcg64::seed_from_u64(7);
    let normal = Normal::standard();
    let mut noisy = |centre: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|_| centre * (1.0 + 0.03 * normal.inverse_cdf(rng.random_range(1e-9..1.0 - 1e-9))))
            .collect()
    };
    let step: Vec<Vec<f64>> = (0..20).map(|i| noisy(if i < 13 { 100.0 } else { 108.0 }, 6)).collect();
    let three: Vec<Vec<f64>> = (0..30)
        .map(|i| {
            noisy([50.0, 55.0, 45.0, 47.0][(i >= 8) as usize + (i >= 15) as usize + (i >= 24) as usize], 4)
        })
        .collect();
    let flat: Vec<Vec<f64>> = (0..12).map(|_| noisy(10.0, 3)).collect();
    let settings = SeriesSettings::default();
    for (name, levels) in [("step", &step), ("three", &three), ("flat", &flat)] {
        let got = find_changes(&series(levels, MeanKind::Arithmetic), &settings).unwrap();
        let (want, steps) = reference(levels, settings.alpha, settings.confidence);
        let at: Vec<usize> = got.change_points.iter().map(|c| c.after + 1).collect();
        assert_eq!(at, want.iter().map(|w| w.0).collect::<Vec<_>>(), "{name}");
        for ((c, w), (d, h)) in got.change_points.iter().zip(&want).zip(&steps) {
            close(c.t, w.1, &format!("{name}: t"));
            close(c.ratio, d.exp(), &format!("{name}: ratio"));
            close(c.low, (d - h).exp(), &format!("{name}: low"));
            close(c.high, (d + h).exp(), &format!("{name}: high"));
        }
        assert_eq!(got.segments.len(), want.len() + 1, "{name}");
    }
    let got = find_changes(&series(&step, MeanKind::Arithmetic), &settings).unwrap();
    assert_eq!(got.verdict, SeriesVerdict::Changes);
    assert_eq!(got.change_points.len(), 1);
    assert_eq!(got.change_points[0].after, 12, "between level 12 and 13 (from 0)");
    let c = got.change_points[0];
    assert!(c.low < 1.08 && 1.08 < c.high, "{c:?}");
    let three_got = find_changes(&series(&three, MeanKind::Arithmetic), &settings).unwrap();
    assert_eq!(three_got.change_points.iter().map(|c| c.after).collect::<Vec<_>>(), vec![7, 14, 23]);
    let flat_got = find_changes(&series(&flat, MeanKind::Arithmetic), &settings).unwrap();
    assert_eq!(flat_got.verdict, SeriesVerdict::NoChange);
    let d = flat_got.detectable.unwrap();
    assert!(d.middle > 0.0 && d.edge > d.middle, "{d:?}");
}

/// A hand-worked series: three levels of two units, the last a third higher.
/// Relative deviations ±0.1, ±0.1, ±0.1: sd = √(6·0.01/3) = √0.02; the split before the
/// last level: ln(4/3) / (√0.02·√(1/4 + 1/2)) = 2.3489…; the bound t₃ at 1 − 0.005/4 is
/// 7.4532, so no change; with α = 0.8 the bound is t₃(1 − 0.4/4) = 1.6377 and it is one.
#[test]
fn a_hand_worked_series() {
    let levels = [obs(&[2.7, 3.3]), obs(&[2.7, 3.3]), obs(&[3.6, 4.4])];
    let got = find_changes(&levels, &SeriesSettings::default()).unwrap();
    assert_eq!(got.verdict, SeriesVerdict::NoChange);
    close(got.cv.unwrap(), 0.02f64.sqrt(), "cv");
    assert_eq!(got.df, 3);
    let loose = SeriesSettings { alpha: 0.8, ..SeriesSettings::default() };
    let got = find_changes(&levels, &loose).unwrap();
    assert_eq!(got.change_points.len(), 1);
    let c = got.change_points[0];
    assert_eq!(c.after, 1);
    close(c.t, (4.0f64 / 3.0).ln() / (0.02f64.sqrt() * 0.75f64.sqrt()), "t");
    close(c.ratio, 4.0 / 3.0, "ratio");
    close(c.critical, t_quantile(0.9, 3.0), "critical");
    assert_eq!(got.segments.len(), 2);
    assert_eq!((got.segments[0].first, got.segments[0].last, got.segments[0].units), (0, 1, 4));
    close(got.segments[1].estimate.mean, 4.0, "second segment's mean");
}

#[test]
fn one_unit_per_level_is_unreplicated() {
    let levels = [obs(&[1.0]), obs(&[1.0]), obs(&[5.0]), obs(&[5.0])];
    let got = find_changes(&levels, &SeriesSettings::default()).unwrap();
    assert_eq!(got.verdict, SeriesVerdict::Unreplicated);
    assert!(got.change_points.is_empty() && got.detectable.is_none() && got.cv.is_none());
    assert_eq!(got.segments.len(), 1);
    assert_eq!(got.segments[0].estimate.low, None);
    close(got.segments[0].estimate.mean, 3.0, "mean");
}

#[test]
fn bad_series_are_errors() {
    let s = SeriesSettings::default();
    assert_eq!(find_changes(&[obs(&[1.0, 2.0])], &s), Err(SeriesError::TooFewLevels { found: 1 }));
    let harmonic = Observations::new(&[1.0, 2.0], MeanKind::Harmonic).unwrap();
    assert!(matches!(
        find_changes(&[obs(&[1.0, 2.0]), harmonic], &s),
        Err(SeriesError::MixedMeanKinds { level: 1, .. })
    ));
    assert_eq!(
        find_changes(&[obs(&[1.0, 2.0]), obs(&[-1.0, -2.0])], &s),
        Err(SeriesError::NonPositiveMean { level: 1, mean: -1.5 })
    );
    let bad = SeriesSettings { alpha: 0.0, ..s };
    assert!(matches!(
        find_changes(&[obs(&[1.0]), obs(&[2.0])], &bad),
        Err(SeriesError::InvalidSetting { .. })
    ));
}

/// Levels whose units do not vary: each distinct mean is its own segment, steps exact.
#[test]
fn constant_levels_pin_the_steps() {
    let levels = [obs(&[2.0, 2.0]), obs(&[2.0, 2.0]), obs(&[3.0, 3.0]), obs(&[3.0, 3.0])];
    let got = find_changes(&levels, &SeriesSettings::default()).unwrap();
    assert_eq!(got.change_points.len(), 1);
    let c = got.change_points[0];
    assert_eq!((c.after, c.ratio, c.low, c.high), (1, 1.5, 1.5, 1.5));
}

/// A rate's series is the series of its reciprocals, its steps inverted.
#[test]
fn a_harmonic_series_is_its_reciprocals_turned_around() {
    let rates: Vec<Vec<f64>> = (0..12)
        .map(|i| {
            let c = if i < 6 { 100.0 } else { 80.0 };
            vec![c * 0.97, c, c * 1.03, c * 1.01]
        })
        .collect();
    let times: Vec<Vec<f64>> = rates.iter().map(|v| v.iter().map(|x| 1.0 / x).collect()).collect();
    let s = SeriesSettings::default();
    let h = find_changes(&series(&rates, MeanKind::Harmonic), &s).unwrap();
    let a = find_changes(&series(&times, MeanKind::Arithmetic), &s).unwrap();
    assert_eq!(h.change_points.len(), 1);
    assert_eq!(h.change_points[0].after, a.change_points[0].after);
    close(h.change_points[0].ratio, 1.0 / a.change_points[0].ratio, "ratio");
    close(h.change_points[0].low, 1.0 / a.change_points[0].high, "low");
    close(h.change_points[0].high, 1.0 / a.change_points[0].low, "high");
    close(h.change_points[0].ratio, 0.8, "the rate fell by 20 %");
}

fn draw_series(rng: &mut Pcg64, means: &[f64], n: usize, cv: f64) -> Vec<Vec<f64>> {
    let normal = Normal::standard();
    means
        .iter()
        .map(|m| {
            (0..n)
                .map(|_| m * (1.0 + cv * normal.inverse_cdf(rng.random_range(1e-12..1.0 - 1e-12))))
                .collect()
        })
        .collect()
}

/// A/A series of 30 levels × 5 normal units: at most 1 % get a change point (the
/// Bonferroni bound is conservative; 4000 series, 1 % + 3 SE = 1.47 %), and steps of
/// 8 % at a random place are covered by their interval at least 94 % of the time.
#[test]
fn few_false_changes_and_covered_steps() {
    let s = SeriesSettings::default();
    let mut rng = Pcg64::seed_from_u64(11);
    let mut false_changes = 0;
    for _ in 0..4000 {
        let levels = draw_series(&mut rng, &[100.0; 30], 5, 0.05);
        false_changes += usize::from(
            !find_changes(&series(&levels, MeanKind::Arithmetic), &s).unwrap().change_points.is_empty(),
        );
    }
    assert!(false_changes <= 59, "{false_changes} of 4000 A/A series had a change point");
    let (mut exact, mut covered) = (0, 0);
    for _ in 0..2000 {
        let at = rng.random_range(3..27);
        let means: Vec<f64> = (0..30).map(|i| if i < at { 100.0 } else { 108.0 }).collect();
        let levels = draw_series(&mut rng, &means, 5, 0.05);
        let got = find_changes(&series(&levels, MeanKind::Arithmetic), &s).unwrap();
        if let Some(c) = got.change_points.iter().find(|c| c.after + 1 == at) {
            exact += 1;
            covered += usize::from(c.low <= 1.08 && 1.08 <= c.high);
        }
    }
    assert!(exact > 1800, "{exact} of 2000 steps found at their place");
    assert!(covered as f64 >= 0.94 * exact as f64, "{covered} of {exact} covered");
}

/// 1000 levels × 20 trials with three steps, analysed in well under a second (the
/// statistics crate is optimised in the debug build too).
#[test]
fn a_thousand_levels_are_quick() {
    let mut rng = Pcg64::seed_from_u64(3);
    let means: Vec<f64> = (0..1000).map(|i| [100.0, 104.0, 97.0, 101.0][i / 250]).collect();
    let levels = series(&draw_series(&mut rng, &means, 20, 0.05), MeanKind::Arithmetic);
    let started = std::time::Instant::now();
    let got = find_changes(&levels, &SeriesSettings::default()).unwrap();
    let took = started.elapsed();
    assert_eq!(got.change_points.iter().map(|c| c.after).collect::<Vec<_>>(), vec![249, 499, 749]);
    assert!(took.as_secs_f64() < 0.5, "{took:?}");
}

fn any_series() -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(0.5f64..2.0, 1..5), 2..25)
}

proptest! {
    /// Whatever the units: the segments partition the levels, each change sits between
    /// two segments with its ratio inside its interval, and the verdict says what was found.
    #[test]
    fn segments_partition_the_levels(levels in any_series()) {
        let got = find_changes(&series(&levels, MeanKind::Arithmetic), &SeriesSettings::default()).unwrap();
        prop_assert_eq!(got.segments.first().unwrap().first, 0);
        prop_assert_eq!(got.segments.last().unwrap().last, levels.len() - 1);
        for w in got.segments.windows(2) {
            prop_assert_eq!(w[0].last + 1, w[1].first);
        }
        prop_assert_eq!(got.segments.len(), got.change_points.len() + 1);
        prop_assert_eq!(got.segments.iter().map(|s| s.units).sum::<usize>(), levels.iter().map(Vec::len).sum::<usize>());
        for (c, s) in got.change_points.iter().zip(&got.segments) {
            prop_assert_eq!(c.after, s.last);
            prop_assert!(c.low <= c.ratio && c.ratio <= c.high, "{:?}", c);
            prop_assert!(c.t.abs() > c.critical);
        }
        match got.verdict {
            SeriesVerdict::Changes => prop_assert!(!got.change_points.is_empty()),
            SeriesVerdict::NoChange => prop_assert!(got.change_points.is_empty() && got.detectable.is_some()),
            SeriesVerdict::Unreplicated => prop_assert!(levels.iter().all(|l| l.len() == 1)),
        }
    }

    /// The units' scale does not matter: the same changes, the same ratios.
    #[test]
    fn scale_free(levels in any_series(), scale in 1e-3f64..1e3) {
        let s = SeriesSettings::default();
        let a = find_changes(&series(&levels, MeanKind::Arithmetic), &s).unwrap();
        let scaled: Vec<Vec<f64>> = levels.iter().map(|l| l.iter().map(|x| x * scale).collect()).collect();
        let b = find_changes(&series(&scaled, MeanKind::Arithmetic), &s).unwrap();
        prop_assert_eq!(a.change_points.len(), b.change_points.len());
        for (x, y) in a.change_points.iter().zip(&b.change_points) {
            prop_assert_eq!(x.after, y.after);
            prop_assert!((x.ratio - y.ratio).abs() < 1e-9 * x.ratio);
        }
    }

    /// Read backwards, a series has its changes at the mirrored places, each step inverted.
    #[test]
    fn reversed_series_mirror(levels in any_series()) {
        let s = SeriesSettings::default();
        let a = find_changes(&series(&levels, MeanKind::Arithmetic), &s).unwrap();
        let reversed: Vec<Vec<f64>> = levels.iter().rev().cloned().collect();
        let b = find_changes(&series(&reversed, MeanKind::Arithmetic), &s).unwrap();
        let l = levels.len();
        let mut mirrored: Vec<usize> = b.change_points.iter().map(|c| l - 2 - c.after).collect();
        mirrored.sort_unstable();
        // ties between equal |t| may split differently; otherwise the same places
        if a.change_points.iter().all(|c| c.t.is_finite()) {
            prop_assert_eq!(a.change_points.iter().map(|c| c.after).collect::<Vec<_>>(), mirrored);
        }
    }
}
