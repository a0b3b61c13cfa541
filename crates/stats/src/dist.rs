//! The distribution functions the statistics need, guarded so they neither panic nor hang.
//!
//! statrs 0.19 asserts on a probability outside [0, 1] (NaN included) and its
//! `StudentsT::inverse_cdf` drifts above df ≈ 1e5 and never returns at df = 1e8 or ∞
//! (found while testing statrs). Every function here validates its arguments and answers `None`
//! instead, and large degrees of freedom never reach statrs's t quantile.

use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, DiscreteCDF, Normal, StudentsT};

/// Above this many degrees of freedom the t quantile comes from the normal quantile
/// with the Cornish–Fisher correction instead of statrs.
pub(crate) const LARGE_DF: f64 = 1e4;

/// True for a probability strictly inside (0, 1); NaN is rejected by both comparisons.
fn is_open_probability(p: f64) -> bool {
    p > 0.0 && p < 1.0
}

/// Degrees of freedom a t distribution accepts: positive, possibly infinite, not NaN.
fn is_valid_df(df: f64) -> bool {
    df > 0.0
}

/// Quantile of the standard normal distribution, for p strictly inside (0, 1).
pub(crate) fn normal_quantile(p: f64) -> Option<f64> {
    is_open_probability(p).then(|| Normal::standard().inverse_cdf(p))
}

/// Upper tail P(Z > z) of the standard normal distribution.
pub(crate) fn normal_sf(z: f64) -> Option<f64> {
    (!z.is_nan()).then(|| Normal::standard().sf(z))
}

/// Quantile of Student's t with `df` degrees of freedom (df may be infinite).
///
/// Above [`LARGE_DF`] this is the normal quantile z corrected by the Cornish–Fisher
/// expansion in 1/df (Abramowitz & Stegun 26.7.5). The bare normal quantile would be
/// off by 1.2e-4 relative at df = 1e4, short of the six significant digits the report
/// promises; with four correction terms the first omitted one is below 1e-15 there.
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !is_open_probability(p) || !is_valid_df(df) {
        return None;
    }
    if df > LARGE_DF {
        return normal_quantile(p).map(|z| cornish_fisher(z, df));
    }
    // statrs inverts the CDF by search, hundreds of incomplete-beta evaluations; a report
    // asks for the same few (p, df) pairs for thousands of cells.
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<(u64, u64), Option<f64>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    KNOWN.with_borrow_mut(|known| {
        if known.len() > 4096 {
            known.clear();
        }
        *known
            .entry((p.to_bits(), df.to_bits()))
            .or_insert_with(|| StudentsT::new(0.0, 1.0, df).ok().map(|t| t.inverse_cdf(p)))
    })
}

/// Whether Student's t quantile t_p(df), p > ½, is at most `x`, when the tail P(T > x)
/// says so clearly: `Some(true)` when it is below 1 − p by more than a millionth of it,
/// `Some(false)` when above by as much, `None` otherwise (and for df above [`LARGE_DF`],
/// whose quantile is a formula): there only the quantile itself decides. One evaluation
/// of the tail (an incomplete beta) where statrs finds the quantile by a search of
/// several; the tail's error and the quantile's are a billionth of that band.
pub(crate) fn t_quantile_clearly_at_most(p: f64, df: f64, x: f64) -> Option<bool> {
    if !(p > 0.5 && p < 1.0 && df > 0.0 && df <= LARGE_DF) || x.is_nan() {
        return None;
    }
    let tail = upper_tail(x, df)?;
    let alpha = 1.0 - p;
    if tail < alpha * (1.0 - 1e-6) {
        Some(true)
    } else if tail > alpha * (1.0 + 1e-6) {
        Some(false)
    } else {
        None
    }
}

/// A&S 26.7.5: t_p ≈ z + g1(z)/ν + g2(z)/ν² + g3(z)/ν³ + g4(z)/ν⁴.
fn cornish_fisher(z: f64, df: f64) -> f64 {
    let z2 = z * z;
    let g1 = z * (z2 + 1.0) / 4.0;
    let g2 = z * ((5.0 * z2 + 16.0) * z2 + 3.0) / 96.0;
    let g3 = z * (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) / 384.0;
    let g4 = z * ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) / 92160.0;
    let v = df.recip();
    z + v * (g1 + v * (g2 + v * (g3 + v * g4)))
}

/// P(χ²_ν ≤ x), for ν > 0 (possibly fractional, as Satterthwaite's) and x ≥ 0.
pub(crate) fn chi_squared_cdf(x: f64, df: f64) -> Option<f64> {
    if !(df > 0.0 && df.is_finite()) || x.is_nan() {
        return None;
    }
    if x <= 0.0 {
        return Some(0.0);
    }
    ChiSquared::new(df).ok().map(|c| c.cdf(x))
}

/// Two-sided p-value 2·P(T > |t|) of a t statistic, capped at 1.
///
/// Computed from the upper tail rather than as 1 − cdf, so tiny p-values keep their
/// digits instead of cancelling to zero.
pub(crate) fn t_two_sided_p(t: f64, df: f64) -> Option<f64> {
    Some((2.0 * upper_tail(t.abs(), df)?).min(1.0))
}

/// P(T > x) for x ≥ 0.
///
/// statrs's t cdf loses digits in proportion to df (1e-10 relative at df = 1e6, 1e-6
/// at 1e9: its log-beta normaliser is a difference of two huge log-gammas). Above
/// [`LARGE_DF`] the tail comes instead from Hill's normalising transformation (CACM
/// Algorithm 395, 1970), which agrees with scipy to 1e-12 there, tails included.
pub(crate) fn upper_tail(x: f64, df: f64) -> Option<f64> {
    if x.is_nan() || !is_valid_df(df) {
        return None;
    }
    if df.is_infinite() {
        return normal_sf(x);
    }
    if df > LARGE_DF {
        let a = df - 0.5;
        let b = 48.0 * a * a;
        let y = a * (x * x / df).ln_1p();
        let z = (((((-0.4 * y - 3.3) * y - 24.0) * y - 85.5) / (0.8 * y * y + 100.0 + b) + y + 3.0) / b
            + 1.0)
            * y.sqrt();
        return normal_sf(z);
    }
    StudentsT::new(0.0, 1.0, df).ok().map(|t| t.sf(x))
}

/// Rank k (1-based) of the distribution-free confidence interval [x(k), x(n−k+1)] for
/// the median, and the coverage it actually achieves.
///
/// The number of observations below the median is Binomial(n, ½), so the interval
/// misses the median with probability 2·P(B ≤ k − 1). k is the largest rank keeping that
/// within α; `None` when even [x(1), x(n)] is not wide enough (n ≤ 5 at 95 %).
pub(crate) fn median_rank(n: usize, confidence: f64) -> Option<(usize, f64)> {
    if !is_open_probability(confidence) || n < 2 {
        return None;
    }
    // a few binomial cdfs (incomplete betas) for each; a report asks for the same few
    // (n, confidence) pairs for thousands of cells
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<(usize, u64), MedianRank>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }
    KNOWN.with_borrow_mut(|known| {
        if known.len() > 4096 {
            known.clear();
        }
        *known.entry((n, confidence.to_bits())).or_insert_with(|| search_median_rank(n, confidence))
    })
}

/// [`median_rank`]'s answer: the rank and the coverage it achieves.
type MedianRank = Option<(usize, f64)>;

fn search_median_rank(n: usize, confidence: f64) -> MedianRank {
    let half_alpha = (1.0 - confidence) / 2.0;
    let binomial = Binomial::new(0.5, n as u64).ok()?;
    let miss = |k: usize| binomial.cdf(k as u64 - 1);
    if miss(1) > half_alpha {
        return None;
    }
    // miss(k) grows with k: binary search for the last k in 1..=n/2 that is allowed.
    let (mut ok, mut too_far) = (1, n / 2 + 1);
    while too_far - ok > 1 {
        let mid = ok + (too_far - ok) / 2;
        if miss(mid) <= half_alpha {
            ok = mid;
        } else {
            too_far = mid;
        }
    }
    Some((ok, 1.0 - 2.0 * miss(ok)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{assert_close, df, entries, number, t_cdf};

    #[test]
    fn t_quantile_matches_scipy_including_huge_and_infinite_df() {
        for point in entries("t_quantile") {
            let (p, df) = (number(&point["p"]), df(&point["df"]));
            let got = t_quantile(p, df).expect("valid arguments");
            assert_close(got, number(&point["value"]), &format!("t.ppf({p}, {df})"));
        }
    }

    #[test]
    fn t_cdf_matches_scipy() {
        for point in entries("t_cdf") {
            let (x, df) = (number(&point["x"]), df(&point["df"]));
            let got = t_cdf(x, df).expect("valid arguments");
            assert_close(got, number(&point["value"]), &format!("t.cdf({x}, {df})"));
        }
    }

    /// The tail's answer is the quantile's wherever it gives one: at points a relative
    /// 10⁻¹² to 10⁻¹ either side of the quantile, for the dfs of a few trials to LARGE_DF,
    /// fractional ones (Welch's) among them; and it answers away from the quantile.
    #[test]
    fn the_tail_decides_as_the_quantile_does_or_not_at_all() {
        let mut undecided = 0;
        for &p in &[0.6, 0.9, 0.975, 0.995, 0.9995] {
            for &df in &[1.0, 1.5, 2.0, 3.7, 9.0, 29.5, 99.0, 197.3, 1000.0, 9999.9, LARGE_DF] {
                let t = t_quantile(p, df).unwrap();
                for k in 1..=11 {
                    let step = 10f64.powi(-k);
                    for x in [t * (1.0 - step), t * (1.0 + step), t - step, t + step] {
                        match t_quantile_clearly_at_most(p, df, x) {
                            Some(answer) => assert_eq!(answer, t <= x, "p {p}, df {df}, x {x}, t {t}"),
                            None => undecided += 1,
                        }
                    }
                }
                assert_eq!(t_quantile_clearly_at_most(p, df, 2.0 * t), Some(true));
                assert_eq!(t_quantile_clearly_at_most(p, df, t / 2.0), Some(false));
                assert_eq!(t_quantile_clearly_at_most(p, df, -t), Some(false));
                assert_eq!(t_quantile_clearly_at_most(p, df, f64::INFINITY), Some(true));
            }
        }
        // near the quantile (within about 10⁻⁶ relative) the quantile is computed
        assert!(undecided > 0 && undecided < 5 * 11 * 4 * 11 / 2, "{undecided}");
        for (p, df, x) in
            [(0.4, 5.0, 1.0), (1.0, 5.0, 1.0), (0.975, 2e4, 1.0), (0.975, 0.0, 1.0), (0.975, 5.0, f64::NAN)]
        {
            assert_eq!(t_quantile_clearly_at_most(p, df, x), None, "p {p}, df {df}, x {x}");
        }
    }

    #[test]
    fn invalid_arguments_give_none_instead_of_a_panic() {
        for p in [f64::NAN, 0.0, 1.0, -0.1, 1.5] {
            assert_eq!(t_quantile(p, 5.0), None, "p = {p}");
            assert_eq!(normal_quantile(p), None, "p = {p}");
        }
        for df in [f64::NAN, 0.0, -3.0] {
            assert_eq!(t_quantile(0.975, df), None, "df = {df}");
            assert_eq!(t_cdf(1.0, df), None, "df = {df}");
            assert_eq!(t_two_sided_p(1.0, df), None, "df = {df}");
        }
        assert_eq!(t_cdf(f64::NAN, 3.0), None);
        assert_eq!(t_two_sided_p(f64::NAN, 3.0), None);
        assert_eq!(median_rank(10, f64::NAN), None);
    }

    #[test]
    fn two_sided_p_keeps_tiny_tails_and_caps_at_one() {
        assert_eq!(t_two_sided_p(0.0, 4.0), Some(1.0));
        assert_eq!(t_two_sided_p(f64::INFINITY, 4.0), Some(0.0));
        let tiny = t_two_sided_p(40.0, 10.0).unwrap();
        assert!(tiny > 0.0 && tiny < 1e-11, "{tiny}");
        let symmetric = t_two_sided_p(-2.0, 7.0).unwrap();
        assert_close(symmetric, 2.0 * (1.0 - t_cdf(2.0, 7.0).unwrap()), "p(-2, 7)");
    }

    #[test]
    fn median_rank_matches_the_binomial_table_of_scipy() {
        for point in entries("median_ci_rank") {
            let n = point["n"].as_u64().unwrap() as usize;
            let (rank, coverage) = median_rank(n, 0.95).expect("n >= 6");
            assert_eq!(rank as u64, point["k"].as_u64().unwrap(), "n = {n}");
            assert_close(coverage, number(&point["coverage"]), &format!("coverage, n = {n}"));
        }
        assert_eq!(median_rank(5, 0.95), None, "1/32 > 2.5 %: no interval at n = 5");
    }
}
