//! The robust method (docs/statistics.md, The robust method): rank statistics that assume
//! no normal model. Independent sides: the Hodges–Lehmann shift of the logs (a ratio), its
//! Moses interval from the Mann–Whitney null distribution, and the U test's p. Paired
//! sides: the Hodges–Lehmann median of the Walsh averages of the log-ratios, its interval
//! from the Wilcoxon signed-rank null distribution, and that test's p. Exact null
//! distributions where there are no ties and the counts fit, else the normal approximation
//! with the ties and continuity corrections (Hollander & Wolfe, *Nonparametric Statistical
//! Methods*, §3.1–3.2 and §4.1–4.3); checked against brute-force enumeration in
//! `tests/data/stats/robust.py`.
//!
//! Here the comparison by the robust method and the choice of method; [`shift`] the
//! Hodges–Lehmann shifts with their intervals and the rank tests beside them; [`null`]
//! the rank statistics' null distributions (exact counts, the normal approximation) and
//! the critical values the intervals are read at.

mod null;
mod shift;

use shift::{Shift, independent, paired};

use super::compare::{
    Comparison, Design, RatioInterval, Spread, back_transform, checked_positive_means, compare_independent,
    compare_paired, mde_independent, mde_paired,
};
use super::elementary::{mad, variance};
use super::observations::Observations;
use super::{StatsError, StatsSettings};
use vocab::Method;

/// A side's relative spread as the robust interval sees it: 1.4826·MAD of the logs (the
/// sd for normal data), times √(π/3), the Hodges–Lehmann estimate's efficiency against the
/// mean on normal data (3/π); the sd of the logs where the MAD is 0 (quantised values).
/// What "about N more trials" and the detectable effect are computed from.
fn robust_cv(logs: &[f64]) -> f64 {
    let scale = 1.4826 * mad(logs);
    let scale = if scale > 0.0 { scale } else { variance(logs).sqrt() };
    scale * (std::f64::consts::PI / 3.0).sqrt()
}

/// Compares B against A by the robust method: independent sides by the Hodges–Lehmann
/// shift of the logs with its Moses interval and the Mann–Whitney p, paired sides (A_i and
/// B_i at the same position) by the Walsh averages of the log-ratios with the signed-rank
/// interval and p. On the analysis scale (the reciprocals of a harmonic metric's rates;
/// the ranks of the logs are the same up to a reversal), carried back as a ratio.
pub(crate) fn compare_robust(
    a: &Observations,
    b: &Observations,
    paired: bool,
    settings: &StatsSettings,
) -> Result<Comparison, StatsError> {
    if paired && a.len() != b.len() {
        return Err(StatsError::UnequalPairs { a: a.len(), b: b.len() });
    }
    let (mean_a, mean_b) = checked_positive_means(a, b, settings)?;
    let kind = a.kind();
    let logs = |o: &Observations| -> Vec<f64> { o.analysed().iter().map(|x| x.ln()).collect() };
    let (la, lb) = (logs(a), logs(b));
    let design = if paired { Design::Paired } else { Design::Independent };
    let d: Vec<f64> = if paired { la.iter().zip(&lb).map(|(x, y)| y - x).collect() } else { Vec::new() };
    let ranked = if paired {
        self::paired(&d, settings.confidence)
    } else {
        independent(&la, &lb, settings.confidence)
    };
    let Some((shift, test)) = ranked else { return Err(StatsError::Empty) };
    let (estimate, interval, coverage) = match shift {
        Shift::Interval(s) => {
            let (xa, xb) = (a.analysed(), b.analysed());
            let (low, high) = match s.pairs {
                Some(((li, lj), (hi, hj))) => (xb[lj] / xa[li], xb[hj] / xa[hi]),
                None => (s.low.exp(), s.high.exp()),
            };
            (
                s.estimate,
                back_transform(kind, RatioInterval::Bounded { low, high }),
                s.exact.then_some(s.coverage),
            )
        }
        Shift::TooFew { estimate, needed } => (estimate, RatioInterval::TooFew { needed }, None),
    };
    let (n_a, n_b) = (a.len(), b.len());
    let (mde, spread) = if paired {
        let sd_log = robust_cv(&d);
        (if n_a >= 2 { mde_paired(sd_log, n_a, settings) } else { None }, Spread::Paired { sd_log })
    } else {
        let (cv_a, cv_b) = (robust_cv(&la), robust_cv(&lb));
        let mde = if n_a >= 2 && n_b >= 2 { mde_independent(cv_a, n_a, cv_b, n_b, settings) } else { None };
        (mde, Spread::Independent { cv_a, cv_b })
    };
    Ok(Comparison {
        design,
        mean_kind: kind,
        n_a,
        n_b,
        mean_a,
        mean_b,
        ratio: kind.transform(estimate.exp()),
        interval: if n_a < 2 || n_b < 2 { RatioInterval::NoEstimate } else { interval },
        df: None,
        p_value: test.filter(|_| n_a >= 2 && n_b >= 2).map(|t| t.p_value),
        mde,
        spread: (n_a >= 2 && n_b >= 2).then_some(spread),
        method: Method::Robust,
        coverage,
    })
}

/// By the settings' method: Fieller's interval with Welch's degrees of freedom between
/// independent sides, or the paired log-ratios of per-block means; or their robust
/// counterparts ([`compare_robust`]). (Here rather than in `compare` so that the robust method
/// depends on the parametric one's types, not the other way round.)
pub fn compare_design(
    paired: bool,
    a: &Observations,
    b: &Observations,
    settings: &StatsSettings,
) -> Result<Comparison, StatsError> {
    match (settings.method, paired) {
        (Method::Robust, _) => compare_robust(a, b, paired, settings),
        (Method::Parametric, true) => compare_paired(a, b, settings),
        (Method::Parametric, false) => compare_independent(a, b, settings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::assert_close;
    use vocab::MeanKind;

    // The vectors and values of tests/data/stats/robust.py (its output: robust.out).
    pub(super) const A: [f64; 5] = [10.12, 9.87, 10.31, 10.05, 9.94];
    pub(super) const B: [f64; 6] = [10.71, 10.48, 11.02, 10.66, 10.39, 10.93];
    pub(super) const C: [f64; 7] = [10.2, 9.8, 10.6, 10.1, 9.7, 10.4, 10.0];
    pub(super) const QA: [f64; 10] = [101.0, 100.0, 100.0, 99.0, 101.0, 100.0, 102.0, 100.0, 99.0, 100.0];
    pub(super) const QB: [f64; 10] = [103.0, 102.0, 102.0, 101.0, 103.0, 102.0, 104.0, 101.0, 102.0, 103.0];
    pub(super) const D: [f64; 7] = [0.031, 0.052, -0.012, 0.044, 0.027, 0.061, 0.018];
    pub(super) const DT: [f64; 8] = [0.02, 0.02, -0.01, 0.03, 0.0, 0.02, 0.05, 0.03];

    #[test]
    fn a_harmonic_metric_gives_the_same_ratio_as_its_reciprocals() {
        let settings = StatsSettings::default();
        let rates = |v: &[f64]| {
            Observations::new(&v.iter().map(|x| 100.0 / x).collect::<Vec<_>>(), MeanKind::Harmonic).unwrap()
        };
        let times = |v: &[f64]| Observations::new(v, MeanKind::Arithmetic).unwrap();
        let by_time = compare_robust(&times(&A), &times(&B), false, &settings).unwrap();
        let by_rate = compare_robust(&rates(&A), &rates(&B), false, &settings).unwrap();
        assert_close(by_rate.ratio * by_time.ratio, 1.0, "rate ratio = 1 / time ratio");
        let (RatioInterval::Bounded { low, high }, RatioInterval::Bounded { low: tl, high: th }) =
            (by_rate.interval, by_time.interval)
        else {
            panic!("bounded intervals expected")
        };
        assert_close(low * th, 1.0, "low");
        assert_close(high * tl, 1.0, "high");
        assert_eq!(by_rate.p_value, by_time.p_value);
        assert_close(by_time.ratio, 1.0612498367761964, "ratio");
        assert_eq!(by_time.method, Method::Robust);
    }

    /// The interval holds the true ratio at least as often as its exact coverage says, for
    /// skewed and heavy-tailed data alike (a scale family: B = 1.1·A in distribution).
    #[test]
    fn the_exact_interval_covers_as_stated_by_simulation() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let settings = StatsSettings::default();
        let trials = 4000;
        for n in [5, 8] {
            let (mut covered, mut counted) = (0, 0);
            let mut stated = 0.0;
            for _ in 0..trials {
                // log-Cauchy: far heavier tails than any benchmark's
                let mut draw = |scale: f64| -> Vec<f64> {
                    (0..n)
                        .map(|_| {
                            let u: f64 = rng.random::<f64>();
                            let cauchy = (std::f64::consts::PI * (u - 0.5)).tan();
                            scale * 10.0 * (0.02 * cauchy).clamp(-30.0, 30.0).exp()
                        })
                        .collect()
                };
                let (a, b) = (draw(1.0), draw(1.1));
                let c = compare_robust(
                    &Observations::new(&a, MeanKind::Arithmetic).unwrap(),
                    &Observations::new(&b, MeanKind::Arithmetic).unwrap(),
                    false,
                    &settings,
                )
                .unwrap();
                // (clamped draws may tie, rarely: then the interval is approximate; not counted)
                let Some(coverage) = c.coverage else { continue };
                stated = coverage;
                counted += 1;
                if let RatioInterval::Bounded { low, high } = c.interval {
                    covered += usize::from(low <= 1.1 && 1.1 <= high);
                }
            }
            assert!(counted > trials * 9 / 10, "{counted} exact intervals of {trials}");
            let rate = covered as f64 / counted as f64;
            let se = (stated * (1.0 - stated) / counted as f64).sqrt();
            assert!(rate >= stated - 3.0 * se, "n = {n}: covered {rate}, stated {stated}");
        }
    }
}
