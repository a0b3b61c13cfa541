//! The comparisons by means: independent trials (Fieller's interval of the ratio with
//! Welch–Satterthwaite df, Welch's test), paired trials (the log-ratios' t-interval and
//! test), and boots as the units of a paired comparison; each carried back from the
//! analysis scale, with its spread and minimum detectable effect.

use super::power::{mde_independent, mde_paired, welch_df};
use super::{Comparison, Design, RatioInterval, Spread, WelchTest};
use crate::elementary::{mean, variance};
use crate::interval::t_half_width;
use crate::observations::Observations;
use crate::{StatsError, StatsSettings, dist};
use vocab::MeanKind;

/// Compares independent trials of B against A: Fieller's interval for R with
/// Welch–Satterthwaite df, Welch's test and the MDE.
pub(crate) fn compare_independent(
    a: &Observations,
    b: &Observations,
    settings: &StatsSettings,
) -> Result<Comparison, StatsError> {
    let (mean_a, mean_b) = checked_means(a, b, settings)?;
    let kind = a.kind();
    let mut comparison = Comparison::unestimated(
        Design::Independent,
        kind,
        (a.len(), b.len()),
        (mean_a, mean_b),
        mean_b / mean_a,
    );
    if a.len() < 2 || b.len() < 2 {
        return Ok(comparison);
    }
    let (xa, xb) = (a.analysed(), b.analysed());
    let fieller = fieller(xa, xb, settings.confidence);
    comparison.interval = back_transform(kind, fieller.interval);
    comparison.df = fieller.df;
    comparison.p_value = welch_test(xa, xb).map(|test| test.p_value);
    let (cv_a, cv_b) = (cv(xa), cv(xb));
    comparison.mde = mde_independent(cv_a, a.len(), cv_b, b.len(), settings);
    comparison.spread = Some(Spread::Independent { cv_a, cv_b });
    Ok(comparison)
}

/// Compares paired trials (A_i, B_i): the geometric-mean ratio exp(mean d) of
/// d_i = ln(B_i / A_i), its interval exp(mean d ± t(k − 1)·s_d/√k), the paired t-test
/// on the d_i and the MDE. The caller lines the pairs up: A_i and B_i are the values at
/// the same position.
pub(crate) fn compare_paired(
    a: &Observations,
    b: &Observations,
    settings: &StatsSettings,
) -> Result<Comparison, StatsError> {
    if a.len() != b.len() {
        return Err(StatsError::UnequalPairs { a: a.len(), b: b.len() });
    }
    let (mean_a, mean_b) = checked_positive_means(a, b, settings)?;
    let kind = a.kind();
    let logs: Vec<f64> = a.analysed().iter().zip(b.analysed()).map(|(x, y)| (y / x).ln()).collect();
    let k = logs.len();
    let centre = mean(&logs);
    let mut comparison =
        Comparison::unestimated(Design::Paired, kind, (k, k), (mean_a, mean_b), kind.transform(centre.exp()));
    if k < 2 {
        return Ok(comparison);
    }
    let sd_log = variance(&logs).sqrt();
    let df = (k - 1) as f64;
    let se = sd_log / (k as f64).sqrt();
    let interval = t_half_width(sd_log, k, settings.confidence)
        .map(|h| RatioInterval::Bounded { low: (centre - h).exp(), high: (centre + h).exp() });
    comparison.interval = back_transform(kind, interval.unwrap_or(RatioInterval::NoEstimate));
    comparison.df = Some(df);
    comparison.p_value = if se > 0.0 { dist::t_two_sided_p(centre / se, df) } else { None };
    comparison.mde = mde_paired(sd_log, k, settings);
    comparison.spread = Some(Spread::Paired { sd_log });
    Ok(comparison)
}

/// Compares paired levels measured in disjoint boots, each boot one observation
/// (docs/statistics.md, Sessions and boots): `a_logs` and `b_logs` hold each boot's mean
/// log-value (on the analysis scale) less its blocks' centres, so the blocks' centres
/// cancel and the boots' spread is in the interval. The ratio is exp(mean_B − mean_A)
/// (carried back for a harmonic metric), its interval Welch's t-interval of the
/// difference of the logs, exp(·); the spread of each side is the sd of its boots' logs,
/// about their CV. `mean_a` and `mean_b` are the sides' means on the metric's scale.
pub fn compare_unit_logs(
    a_logs: &[f64],
    b_logs: &[f64],
    kind: MeanKind,
    (mean_a, mean_b): (f64, f64),
    settings: &StatsSettings,
) -> Result<Comparison, StatsError> {
    settings.validate()?;
    if a_logs.is_empty() || b_logs.is_empty() {
        return Err(StatsError::Empty);
    }
    if let Some((index, &value)) = a_logs.iter().chain(b_logs).enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(StatsError::NotFinite { index, value });
    }
    let centre = mean(b_logs) - mean(a_logs);
    let (na, nb) = (a_logs.len(), b_logs.len());
    let mut comparison = Comparison::unestimated(
        Design::Paired,
        kind,
        (na, nb),
        (mean_a, mean_b),
        kind.transform(centre.exp()),
    );
    if na < 2 || nb < 2 {
        return Ok(comparison);
    }
    let (sd_a, sd_b) = (variance(a_logs).sqrt(), variance(b_logs).sqrt());
    let (va, vb) = (sd_a.powi(2) / na as f64, sd_b.powi(2) / nb as f64);
    let interval = if va + vb == 0.0 {
        RatioInterval::Bounded { low: centre.exp(), high: centre.exp() }
    } else {
        let df = welch_df(va, na, vb, nb);
        comparison.df = Some(df);
        match dist::t_quantile(1.0 - settings.alpha() / 2.0, df) {
            Some(t) => {
                let h = t * (va + vb).sqrt();
                RatioInterval::Bounded { low: (centre - h).exp(), high: (centre + h).exp() }
            }
            None => RatioInterval::NoEstimate,
        }
    };
    comparison.interval = back_transform(kind, interval);
    comparison.p_value = welch_test(a_logs, b_logs).map(|test| test.p_value);
    comparison.mde = mde_independent(sd_a, na, sd_b, nb, settings).map(f64::exp_m1);
    comparison.spread = Some(Spread::Independent { cv_a: sd_a, cv_b: sd_b });
    Ok(comparison)
}

/// [`checked_means`], for a comparison of logarithms: every value must be positive.
pub(crate) fn checked_positive_means(
    a: &Observations,
    b: &Observations,
    settings: &StatsSettings,
) -> Result<(f64, f64), StatsError> {
    let means = checked_means(a, b, settings)?;
    for sample in [a, b] {
        if let Some((index, &value)) = sample.values().iter().enumerate().find(|(_, v)| **v <= 0.0) {
            return Err(StatsError::NotPositiveForLog { index, value });
        }
    }
    Ok(means)
}

/// Validates the pair and returns both means on the metric's scale.
fn checked_means(
    a: &Observations,
    b: &Observations,
    settings: &StatsSettings,
) -> Result<(f64, f64), StatsError> {
    settings.validate()?;
    if a.kind() != b.kind() {
        return Err(StatsError::MixedMeanKinds { a: a.kind(), b: b.kind() });
    }
    let kind = a.kind();
    let mean_a = kind.transform(mean(a.analysed()));
    let mean_b = kind.transform(mean(b.analysed()));
    for (level, mean) in [("baseline", mean_a), ("compared", mean_b)] {
        if !(mean > 0.0 && mean.is_finite()) {
            return Err(StatsError::NonPositiveMean { level, mean });
        }
    }
    Ok((mean_a, mean_b))
}

fn cv(values: &[f64]) -> f64 {
    variance(values).sqrt() / mean(values)
}

/// Carries a ratio interval from the analysis scale to the metric's scale.
pub(crate) fn back_transform(kind: MeanKind, interval: RatioInterval) -> RatioInterval {
    match interval {
        RatioInterval::Bounded { low, high } => match kind.transform_interval(low, high) {
            (_, high) if high.is_infinite() => RatioInterval::Unbounded,
            (low, high) => RatioInterval::Bounded { low, high },
        },
        other => other,
    }
}

struct Fieller {
    interval: RatioInterval,
    df: Option<f64>,
}

/// Fieller's interval for mean(b)/mean(a) (docs/statistics.md, Comparing level B with baseline A), for n ≥ 2 in both.
fn fieller(xa: &[f64], xb: &[f64], confidence: f64) -> Fieller {
    let (a, b) = (mean(xa), mean(xb));
    let (na, nb) = (xa.len() as f64, xb.len() as f64);
    let (va, vb) = (variance(xa) / na, variance(xb) / nb);
    let theta = b / a;
    let spread = vb + theta.powi(2) * va;
    let weight = vb.powi(2) / (nb - 1.0) + theta.powi(4) * va.powi(2) / (na - 1.0);
    if weight == 0.0 {
        // Neither level varies: the data pin the ratio down exactly.
        return Fieller { interval: RatioInterval::Bounded { low: theta, high: theta }, df: None };
    }
    let df = spread.powi(2) / weight;
    let Some(t) = dist::t_quantile(1.0 - (1.0 - confidence) / 2.0, df) else {
        return Fieller { interval: RatioInterval::NoEstimate, df: Some(df) };
    };
    let d = a * a - t * t * va;
    if d <= 0.0 {
        return Fieller { interval: RatioInterval::Unbounded, df: Some(df) };
    }
    // a²b² − D(b² − t²vb) expands to t²(vb·D + b²va): the same number without the
    // cancellation of two nearly equal squares, and visibly non-negative once D > 0.
    let root = t * (vb * d + b * b * va).sqrt();
    Fieller {
        interval: RatioInterval::Bounded { low: (a * b - root) / d, high: (a * b + root) / d },
        df: Some(df),
    }
}

/// Welch's t-test of mean(b) − mean(a); `None` below two values per side or when
/// neither side varies (the statistic is 0/0 or ±∞).
pub(crate) fn welch_test(a: &[f64], b: &[f64]) -> Option<WelchTest> {
    let (na, nb) = (a.len(), b.len());
    if na < 2 || nb < 2 {
        return None;
    }
    let (va, vb) = (variance(a) / na as f64, variance(b) / nb as f64);
    let se2 = va + vb;
    if se2 == 0.0 || se2.is_nan() {
        return None;
    }
    let t = (mean(b) - mean(a)) / se2.sqrt();
    let df = welch_df(va, na, vb, nb);
    Some(WelchTest { t, df, p_value: dist::t_two_sided_p(t, df)? })
}

/// A paired side's observations: each block's mean, on the metric's scale.
pub fn block_means(cells: &[&Observations], kind: MeanKind) -> Result<Observations, StatsError> {
    let values: Vec<f64> = cells.iter().map(|s| kind.transform(mean(s.analysed()))).collect();
    Observations::new(&values, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::trials_to_settle;
    use crate::reference::{assert_close, entries, number, sample};

    #[test]
    fn comparisons_match_scipy_and_the_formulas() {
        let settings = StatsSettings::default();
        for case in entries("comparisons") {
            let (a, b) = (case["a"].as_str().unwrap(), case["b"].as_str().unwrap());
            let design = case["design"].as_str().unwrap();
            let what = |field: &str| format!("{design} {b} vs {a}: {field}");
            let got = match design {
                "paired" => compare_paired(&sample(a), &sample(b), &settings),
                _ => compare_independent(&sample(a), &sample(b), &settings),
            }
            .unwrap();
            assert_close(got.ratio, number(&case["ratio"]), &what("ratio"));
            match (got.interval, case["ci"].as_array()) {
                (RatioInterval::Bounded { low, high }, Some(ci)) => {
                    assert_close(low, number(&ci[0]), &what("ci low"));
                    assert_close(high, number(&ci[1]), &what("ci high"));
                }
                (RatioInterval::Unbounded, None) => {}
                (interval, _) => panic!("{}: {interval:?}", what("interval")),
            }
            assert_close(got.df.unwrap(), number(&case["df"]), &what("df"));
            assert_close(got.p_value.unwrap(), number(&case["p"]), &what("p"));
            assert_close(got.mde.unwrap(), number(&case["mde"]), &what("mde"));
            let settle = case["settle_n"].as_u64().unwrap() as usize;
            assert_eq!(
                trials_to_settle(&got, &settings),
                Some(settle.saturating_sub(got.n_a.min(got.n_b)).max(1)),
                "{}",
                what("trials to settle")
            );
        }
    }

    #[test]
    fn harmonic_ratio_is_the_inverse_of_the_reciprocal_ratio() {
        let settings = StatsSettings::default();
        let a = Observations::new(&[100.0, 110.0, 105.0], MeanKind::Harmonic).unwrap();
        let b = Observations::new(&[80.0, 85.0, 90.0], MeanKind::Harmonic).unwrap();
        let got = compare_independent(&a, &b, &settings).unwrap();
        let times = |s: &Observations| Observations::new(s.analysed(), MeanKind::Arithmetic).unwrap();
        let on_times = compare_independent(&times(&a), &times(&b), &settings).unwrap();
        assert_close(got.ratio, 1.0 / on_times.ratio, "ratio");
        let (RatioInterval::Bounded { low, high }, RatioInterval::Bounded { low: tl, high: th }) =
            (got.interval, on_times.interval)
        else {
            panic!("bounded intervals expected");
        };
        assert_close(low, 1.0 / th, "low = 1 / high of the times");
        assert_close(high, 1.0 / tl, "high = 1 / low of the times");
        assert_eq!(got.p_value, on_times.p_value);
    }

    #[test]
    fn constant_levels_pin_the_ratio() {
        let settings = StatsSettings::default();
        let a = Observations::new(&[4.0, 4.0, 4.0], MeanKind::Arithmetic).unwrap();
        let b = Observations::new(&[5.0, 5.0], MeanKind::Arithmetic).unwrap();
        let got = compare_independent(&a, &b, &settings).unwrap();
        assert_eq!(got.interval, RatioInterval::Bounded { low: 1.25, high: 1.25 });
        assert_eq!((got.df, got.p_value, got.mde), (None, None, Some(0.0)));
    }

    #[test]
    fn invalid_comparisons_are_errors() {
        let settings = StatsSettings::default();
        let arithmetic = sample("n3");
        let harmonic = Observations::new(&[1.0, 2.0, 3.0], MeanKind::Harmonic).unwrap();
        assert!(matches!(
            compare_independent(&arithmetic, &harmonic, &settings),
            Err(StatsError::MixedMeanKinds { .. })
        ));
        assert_eq!(
            compare_paired(&sample("n3"), &sample("n5"), &settings),
            Err(StatsError::UnequalPairs { a: 3, b: 5 })
        );
        let centred = Observations::new(&[-1.0, 1.0], MeanKind::Arithmetic).unwrap();
        assert!(matches!(
            compare_independent(&centred, &arithmetic, &settings),
            Err(StatsError::NonPositiveMean { level: "baseline", .. })
        ));
        let with_zero = Observations::new(&[0.0, 5.0, 5.3], MeanKind::Arithmetic).unwrap();
        assert_eq!(
            compare_paired(&arithmetic, &with_zero, &settings),
            Err(StatsError::NotPositiveForLog { index: 0, value: 0.0 })
        );
    }

    #[test]
    fn one_trial_gives_a_ratio_without_an_interval() {
        let got = compare_independent(&sample("n1"), &sample("n3"), &StatsSettings::default()).unwrap();
        assert_eq!(got.interval, RatioInterval::NoEstimate);
        assert_close(got.ratio, 5.1 / 12.5, "ratio");
        assert_eq!((got.p_value, got.mde, got.spread), (None, None, None));
    }
}
