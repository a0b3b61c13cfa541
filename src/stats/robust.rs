//! The robust method (docs/statistics.md, The robust method): rank statistics that assume
//! no normal model. Independent sides: the Hodges–Lehmann shift of the logs (a ratio), its
//! Moses interval from the Mann–Whitney null distribution, and the U test's p. Paired
//! sides: the Hodges–Lehmann median of the Walsh averages of the log-ratios, its interval
//! from the Wilcoxon signed-rank null distribution, and that test's p. Exact null
//! distributions where there are no ties and the counts fit, else the normal approximation
//! with the ties and continuity corrections (Hollander & Wolfe, *Nonparametric Statistical
//! Methods*, §3.1–3.2 and §4.1–4.3); checked against brute-force enumeration in
//! `tests/data/stats/robust.py`.

use super::compare::{
    Comparison, Design, RatioInterval, Spread, back_transform, checked_positive_means, compare_independent,
    compare_paired, mde_independent, mde_paired,
};
use super::dist;
use super::elementary::{average_ranks, mad, median_of_sorted, sorted, variance};
use super::observations::Observations;
use super::{StatsError, StatsSettings};
use crate::vocab::Method;

/// Exact Mann–Whitney distributions are counted up to this many pairs m·n (n = 60 a side
/// is 3600: the counts take m·(m·n) steps); beyond, the normal approximation is close.
const EXACT_MAX_PAIRS: usize = 3600;

/// Exact signed-rank distributions up to this many pairs: the counts of 2^k sign patterns
/// stay exact integers in an f64 (< 2^53).
const EXACT_MAX_SIGNED: usize = 50;

/// A tail probability at or within this of α/2 counts as within it: 1/20 = 0.05 is not
/// above (1 − 0.90)/2 = 0.049999….
const TAIL_SLACK: f64 = 1e-12;

/// A rank test's statistic and two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RankTest {
    /// U of the compared side (pairs it wins, ties counting ½), or T⁺ of the signed ranks.
    pub statistic: f64,
    pub p_value: f64,
    /// From the exact null distribution (else the normal approximation).
    pub exact: bool,
}

/// A distribution-free interval of a shift, on the scale the values were given in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShiftInterval {
    /// The Hodges–Lehmann estimate: the median of the pairwise differences or of the
    /// Walsh averages.
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
    /// The 1-based rank k of the lower bound among the sorted differences (averages).
    pub rank: usize,
    /// The coverage the interval has: exactly 1 − 2·P(statistic < k) for the exact
    /// distribution (at least the confidence asked for), else its normal approximation.
    pub coverage: f64,
    pub exact: bool,
    /// Two samples: the (a, b) indices whose difference each bound is, so that a bound
    /// can be taken as the ratio of two values itself rather than exp(ln y − ln x), which
    /// rounds 110/100 to just below 1.1 (quantised values put bounds on such lattice points).
    pub pairs: Option<((usize, usize), (usize, usize))>,
}

/// The interval of a shift, or why there is none at this confidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Shift {
    Interval(ShiftInterval),
    /// Even the widest interval (the extreme differences) covers less than the confidence:
    /// the sides are too small. `estimate` is the Hodges–Lehmann estimate all the same;
    /// `needed` is the fewest trials per side (pairs, for a paired design) at which an
    /// interval exists at this confidence.
    TooFew {
        estimate: f64,
        needed: usize,
    },
}

/// A rank statistic's null distribution: exact counts where nothing ties and they fit,
/// else its centre and sd (ties-corrected) for the normal approximation. Built once per
/// comparison: the test and the interval read the same one.
struct Null {
    exact: Option<Vec<f64>>,
    centre: f64,
    sd: f64,
}

impl Null {
    /// The two-sided p of `statistic`: twice the lower tail of the exact distribution (it
    /// is symmetric about its centre), else by the normal approximation.
    fn test(&self, statistic: f64) -> Option<RankTest> {
        if let Some(cdf) = &self.exact {
            let low_tail = statistic.min(2.0 * self.centre - statistic);
            let p = cdf[low_tail as usize];
            return Some(RankTest { statistic, p_value: (2.0 * p).min(1.0), exact: true });
        }
        normal_test(statistic, self.centre, self.sd)
    }

    /// The interval's order statistic: the largest c with P(statistic ≤ c) ≤ α/2.
    fn critical(&self, half_alpha: f64) -> Option<(usize, f64, bool)> {
        match &self.exact {
            Some(cdf) => exact_critical(cdf, half_alpha),
            None => normal_critical(self.centre, self.sd, half_alpha),
        }
    }
}

/// Independent sides: the Hodges–Lehmann shift of b against a with its Moses interval
/// ([`moses_interval`]) and the two-sided Mann–Whitney test, from one ranking of the
/// pooled values.
pub(crate) fn independent(a: &[f64], b: &[f64], confidence: f64) -> Option<(Shift, Option<RankTest>)> {
    let (m, n) = (a.len(), b.len());
    if m == 0 || n == 0 {
        return None;
    }
    let (u, ties) = u_statistic(a, b);
    let null = Null { exact: exact_cdf(m, n, &ties), centre: (m * n) as f64 / 2.0, sd: u_sd(m, n, &ties) };
    Some((moses_interval(a, b, &null, confidence)?, null.test(u)))
}

/// The two-sided p of a rank statistic by the normal approximation with the continuity
/// correction, (|statistic − centre| − ½)/sd; 1 when the null sd is 0 (every value tied).
fn normal_test(statistic: f64, centre: f64, sd: f64) -> Option<RankTest> {
    let p = if sd == 0.0 {
        1.0
    } else {
        let z = ((statistic - centre).abs() - 0.5) / sd;
        (2.0 * dist::normal_sf(z)?).min(1.0)
    };
    Some(RankTest { statistic, p_value: p, exact: false })
}

/// The Hodges–Lehmann shift of b against a (the median of the m·n differences b_j − a_i)
/// and its Moses interval: the order statistics [d(k), d(mn − k + 1)] with k − 1 the
/// largest u for which P(U ≤ u) ≤ α/2 under the null (exact, or by the normal
/// approximation with the ties correction when values tie).
fn moses_interval(a: &[f64], b: &[f64], null: &Null, confidence: f64) -> Option<Shift> {
    let (m, n) = (a.len(), b.len());
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let mut pairs: Vec<(f64, usize, usize)> =
        (0..m).flat_map(|i| (0..n).map(move |j| (b[j] - a[i], i, j))).collect();
    pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
    let diffs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    let estimate = median_of_sorted(&diffs);
    Some(match null.critical((1.0 - confidence) / 2.0) {
        Some((c, coverage, exact)) => Shift::Interval(ShiftInterval {
            estimate,
            low: diffs[c],
            high: diffs[m * n - 1 - c],
            rank: c + 1,
            coverage,
            exact,
            pairs: Some(((pairs[c].1, pairs[c].2), (pairs[m * n - 1 - c].1, pairs[m * n - 1 - c].2))),
        }),
        None => Shift::TooFew { estimate, needed: fewest_per_side(confidence) },
    })
}

/// Paired sides: the Hodges–Lehmann centre of the differences `d` with its Walsh interval
/// ([`walsh_interval`]) and the two-sided Wilcoxon signed-rank test that they centre on 0,
/// from one ranking of their magnitudes. The test drops zeros (Wilcoxon's convention)
/// and gives ties their average rank; the interval keeps every difference, so its null
/// counts the zeros as one more tie group.
pub(crate) fn paired(d: &[f64], confidence: f64) -> Option<(Shift, Option<RankTest>)> {
    if d.is_empty() {
        return None;
    }
    let nonzero: Vec<f64> = d.iter().copied().filter(|x| *x != 0.0).collect();
    let k = nonzero.len();
    let magnitudes: Vec<f64> = nonzero.iter().map(|x| x.abs()).collect();
    let (ranks, mut ties) = average_ranks(&magnitudes);
    let t_plus: f64 = ranks.iter().zip(&nonzero).filter(|(_, x)| **x > 0.0).map(|(r, _)| r).sum();
    // Without zeros or ties, both read the same exact distribution.
    let exact =
        (k == d.len() && ties.iter().all(|&t| t == 1) && k <= EXACT_MAX_SIGNED).then(|| signed_rank_cdf(k));
    let test = if k == 0 {
        Some(RankTest { statistic: 0.0, p_value: 1.0, exact: false })
    } else {
        let centre = (k * (k + 1)) as f64 / 4.0;
        Null { exact: exact.clone(), centre, sd: signed_rank_sd(k, &ties) }.test(t_plus)
    };
    ties.push(d.len() - k);
    let all = d.len();
    let null = Null { exact, centre: (all * (all + 1)) as f64 / 4.0, sd: signed_rank_sd(all, &ties) };
    Some((walsh_interval(d, &null, confidence)?, test))
}

/// The Hodges–Lehmann centre of the differences (the median of the k(k+1)/2 Walsh
/// averages (d_i + d_j)/2, i ≤ j) and its interval [W(c + 1), W(M − c)], c the largest t
/// with P(T⁺ ≤ t) ≤ α/2 (exact without ties or zeros, else the normal approximation).
fn walsh_interval(d: &[f64], null: &Null, confidence: f64) -> Option<Shift> {
    let k = d.len();
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let mut averages = Vec::with_capacity(k * (k + 1) / 2);
    for i in 0..k {
        for j in i..k {
            averages.push((d[i] + d[j]) / 2.0);
        }
    }
    let averages = sorted(&averages);
    let estimate = median_of_sorted(&averages);
    let m = averages.len();
    Some(match null.critical((1.0 - confidence) / 2.0) {
        Some((c, coverage, exact)) => Shift::Interval(ShiftInterval {
            estimate,
            low: averages[c],
            high: averages[m - 1 - c],
            rank: c + 1,
            coverage,
            exact,
            pairs: None,
        }),
        None => Shift::TooFew { estimate, needed: fewest_pairs(confidence) },
    })
}

/// U of b (the pairs b wins, ties ½) from the pooled average ranks, and the sizes of the
/// pooled values' tie groups.
fn u_statistic(a: &[f64], b: &[f64]) -> (f64, Vec<usize>) {
    let pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let (ranks, ties) = average_ranks(&pooled);
    let nb = b.len() as f64;
    let rank_sum_b: f64 = ranks[a.len()..].iter().sum();
    (rank_sum_b - nb * (nb + 1.0) / 2.0, ties)
}

/// The null sd of U, with the ties correction: mn/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1))).
fn u_sd(m: usize, n: usize, ties: &[usize]) -> f64 {
    let big = (m + n) as f64;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let correction = if big > 1.0 { tie_term / (big * (big - 1.0)) } else { 0.0 };
    ((m * n) as f64 / 12.0 * ((big + 1.0) - correction)).max(0.0).sqrt()
}

/// The null sd of T⁺ over k nonzero differences, with the ties correction
/// k(k + 1)(2k + 1)/24 − Σ(t³ − t)/48.
fn signed_rank_sd(k: usize, ties: &[usize]) -> f64 {
    let k = k as f64;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    (k * (k + 1.0) * (2.0 * k + 1.0) / 24.0 - tie_term / 48.0).max(0.0).sqrt()
}

/// P(U ≤ u) for u = 0..=mn under the null, when the values do not tie and the counts fit.
fn exact_cdf(m: usize, n: usize, ties: &[usize]) -> Option<Vec<f64>> {
    if ties.iter().any(|&t| t > 1) || m * n > EXACT_MAX_PAIRS {
        return None;
    }
    u_cdf(m.min(n), m.max(n))
}

/// P(U ≤ u), u = 0..=mn, for untied samples of m ≤ n values, from exact counts.
///
/// The number of arrangements with U = u is the coefficient of q^u in the Gaussian
/// binomial [m+n choose m]_q = Π_{i=1..m} (1 − q^(n+i)) / (1 − q^i). Each partial
/// product is itself a Gaussian binomial, hence a polynomial with integer coefficients
/// no larger than C(m+n, m), so the multiply-then-divide steps stay exact in i128.
/// `None` when C(m+n, m) does not fit. (Kept from commit 9bf4640.)
fn u_cdf(m: usize, n: usize) -> Option<Vec<f64>> {
    let mut total: i128 = 1;
    for i in 1..=m {
        total = total.checked_mul((n + i) as i128)? / i as i128;
    }
    let mut counts = vec![0_i128; m * n + m + 1];
    counts[0] = 1;
    for i in 1..=m {
        let shift = n + i;
        for j in (shift..counts.len()).rev() {
            counts[j] -= counts[j - shift];
        }
        for j in i..counts.len() {
            counts[j] += counts[j - i];
        }
    }
    let mut below = 0_i128;
    Some(
        counts[..=m * n]
            .iter()
            .map(|c| {
                below += c;
                below as f64 / total as f64
            })
            .collect(),
    )
}

/// P(T⁺ ≤ t), t = 0..=k(k+1)/2, for k untied nonzero differences: the counts of the
/// subsets of {1, …, k} by their sum, over 2^k.
fn signed_rank_cdf(k: usize) -> Vec<f64> {
    let top = k * (k + 1) / 2;
    let mut counts = vec![0.0_f64; top + 1];
    counts[0] = 1.0;
    for r in 1..=k {
        for s in (r..=top).rev() {
            counts[s] += counts[s - r];
        }
    }
    let total = 2_f64.powi(k as i32);
    let mut below = 0.0;
    counts
        .iter()
        .map(|c| {
            below += c;
            below / total
        })
        .collect()
}

/// The largest c with P(statistic ≤ c) ≤ α/2 and the interval's exact coverage
/// 1 − 2·P(statistic ≤ c); `None` when even P(statistic ≤ 0) is above α/2.
fn exact_critical(cdf: &[f64], half_alpha: f64) -> Option<(usize, f64, bool)> {
    let c = cdf.iter().take_while(|&&p| p <= half_alpha + TAIL_SLACK).count().checked_sub(1)?;
    Some((c, 1.0 - 2.0 * cdf[c], true))
}

/// The normal approximation's c: P(statistic ≤ c) ≈ Φ((c + ½ − centre)/sd) ≤ α/2, so
/// c = ⌊centre − ½ − z·sd⌋; `None` when that is below 0.
fn normal_critical(centre: f64, sd: f64, half_alpha: f64) -> Option<(usize, f64, bool)> {
    let z = dist::normal_quantile(1.0 - half_alpha)?;
    let c = (centre - 0.5 - z * sd).floor();
    if c < 0.0 {
        return None;
    }
    let coverage = if sd > 0.0 { 1.0 - 2.0 * (1.0 - dist::normal_sf((c + 0.5 - centre) / sd)?) } else { 1.0 };
    Some((c as usize, coverage, false))
}

/// The fewest trials per side (n a side) whose widest Moses interval reaches the
/// confidence: 2/C(2n, n) ≤ α.
fn fewest_per_side(confidence: f64) -> usize {
    let alpha = 1.0 - confidence;
    let mut choose = 2.0_f64; // C(2, 1)
    let mut n = 1;
    while 2.0 / choose > alpha + TAIL_SLACK && n < 1000 {
        // C(2n + 2, n + 1) = C(2n, n) · (2n + 1)(2n + 2)/(n + 1)²
        choose *= ((2 * n + 1) * (2 * n + 2)) as f64 / ((n + 1) * (n + 1)) as f64;
        n += 1;
    }
    n
}

/// The fewest pairs whose widest signed-rank interval reaches the confidence: 2/2^k ≤ α.
fn fewest_pairs(confidence: f64) -> usize {
    let alpha = 1.0 - confidence;
    (1..1000).find(|&k| 2.0 / 2_f64.powi(k as i32) <= alpha + TAIL_SLACK).unwrap_or(1000)
}

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
pub(crate) fn compare_design(
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
    use crate::stats::reference::assert_close;
    use crate::vocab::MeanKind;

    // The vectors and values of tests/data/stats/robust.py (its output: robust.out).
    const A: [f64; 5] = [10.12, 9.87, 10.31, 10.05, 9.94];
    const B: [f64; 6] = [10.71, 10.48, 11.02, 10.66, 10.39, 10.93];
    const C: [f64; 7] = [10.2, 9.8, 10.6, 10.1, 9.7, 10.4, 10.0];
    const QA: [f64; 10] = [101.0, 100.0, 100.0, 99.0, 101.0, 100.0, 102.0, 100.0, 99.0, 100.0];
    const QB: [f64; 10] = [103.0, 102.0, 102.0, 101.0, 103.0, 102.0, 104.0, 101.0, 102.0, 103.0];
    const D: [f64; 7] = [0.031, 0.052, -0.012, 0.044, 0.027, 0.061, 0.018];
    const DT: [f64; 8] = [0.02, 0.02, -0.01, 0.03, 0.0, 0.02, 0.05, 0.03];

    fn ln(values: &[f64]) -> Vec<f64> {
        values.iter().map(|x| x.ln()).collect()
    }

    // The test and the interval through the entry points that build them together.
    fn mann_whitney(a: &[f64], b: &[f64]) -> RankTest {
        independent(a, b, 0.95).unwrap().1.unwrap()
    }

    fn moses(a: &[f64], b: &[f64], confidence: f64) -> Option<Shift> {
        independent(a, b, confidence).map(|(shift, _)| shift)
    }

    fn wilcoxon(d: &[f64]) -> RankTest {
        paired(d, 0.95).unwrap().1.unwrap()
    }

    fn walsh(d: &[f64], confidence: f64) -> Option<Shift> {
        paired(d, confidence).map(|(shift, _)| shift)
    }

    fn interval(shift: Option<Shift>) -> ShiftInterval {
        match shift {
            Some(Shift::Interval(s)) => s,
            other => panic!("expected an interval, got {other:?}"),
        }
    }

    #[track_caller]
    fn assert_shift(s: ShiftInterval, (estimate, low, high): (f64, f64, f64), rank: usize, coverage: f64) {
        assert_close(s.estimate.exp(), estimate, "Hodges–Lehmann ratio");
        assert_close(s.low.exp(), low, "interval low");
        assert_close(s.high.exp(), high, "interval high");
        assert_eq!(s.rank, rank);
        assert_close(s.coverage, coverage, "coverage");
    }

    #[test]
    fn mann_whitney_matches_enumeration_exactly_and_by_the_normal_approximation() {
        let exact = mann_whitney(&A, &B);
        assert!(exact.exact);
        assert_eq!(exact.statistic, 30.0);
        assert_close(exact.p_value, 0.004329004329004329, "exact p");
        // the logs rank alike
        assert_eq!(mann_whitney(&ln(&A), &ln(&B)), exact);
        let overlapping = mann_whitney(&A, &C);
        assert_eq!(overlapping.statistic, 19.0);
        assert_close(overlapping.p_value, 0.8762626262626262, "exact p, overlapping");
        // ties: the normal approximation with the ties and continuity corrections
        let tied = mann_whitney(&QA, &QB);
        assert!(!tied.exact);
        assert_eq!(tied.statistic, 94.0);
        assert_close(tied.p_value, 0.0007837635202245886, "normal p with ties");
        // the same formula without ties (what robust.py prints for A, B)
        let sd = u_sd(5, 6, &[1; 11]);
        let z = ((30.0 - 15.0_f64).abs() - 0.5) / sd;
        assert_close(2.0 * dist::normal_sf(z).unwrap(), 0.008113117265565782, "normal p");
    }

    #[test]
    fn moses_intervals_match_enumeration_and_say_when_there_are_too_few() {
        let s = interval(moses(&ln(&A), &ln(&B), 0.95));
        assert_shift(s, (1.0612498367761964, 1.033830845771144, 1.0995975855130786), 4, 0.9696969696969697);
        assert!(s.exact);
        let s = interval(moses(&ln(&A), &ln(&B), 0.99));
        assert_shift(s, (1.0612498367761964, 1.016488845780795, 1.1086519114688131), 2, 0.9913419913419913);
        let s = interval(moses(&ln(&A), &ln(&C), 0.95));
        assert_shift(s, (1.0060362173038233, 0.9699321047526672, 1.046277665995976), 6, 0.952020202020202);
        let s = interval(moses(&ln(&A[..4]), &ln(&B[..4]), 0.95));
        assert_shift(s, (1.0612498367761964, 1.016488845780795, 1.1165146909827763), 1, 0.9714285714285714);
        // three a side: 2/C(6, 3) = 10 % > 5 %, so no interval at 95 %; at 90 % the extremes
        match moses(&ln(&A[..3]), &ln(&B[..3]), 0.95) {
            Some(Shift::TooFew { needed, .. }) => assert_eq!(needed, 4),
            other => panic!("{other:?}"),
        }
        let s = interval(moses(&ln(&A[..3]), &ln(&B[..3]), 0.90));
        assert_shift(s, (1.0618034447821683, 1.016488845780795, 1.1165146909827763), 1, 0.9);
        // quantised values tie: the normal approximation
        let s = interval(moses(&ln(&QA), &ln(&QB), 0.95));
        assert!(!s.exact);
        assert_shift(s, (1.0199999999999991, 1.0099999999999998, 1.0299999999999996), 25, 0.9510188773358796);
    }

    #[test]
    fn signed_rank_and_walsh_intervals_match_enumeration() {
        let t = wilcoxon(&D);
        assert!(t.exact);
        assert_eq!(t.statistic, 27.0);
        assert_close(t.p_value, 0.03125, "exact p");
        let tied = wilcoxon(&DT);
        assert!(!tied.exact);
        assert_eq!(tied.statistic, 27.0);
        assert_close(tied.p_value, 0.03300625766123256, "normal p, ties and a zero");
        let sd = signed_rank_sd(7, &[1; 7]);
        let z = ((27.0 - 14.0_f64).abs() - 0.5) / sd;
        assert_close(2.0 * dist::normal_sf(z).unwrap(), 0.034610557515707366, "normal p");
        let s = interval(walsh(&D, 0.95));
        assert_shift(s, (1.0335505392413056, 1.0075281954445339, 1.0539025620785374), 3, 0.953125);
        let s = interval(walsh(&D[..6], 0.95));
        assert_shift(s, (1.038211997081825, 0.9880717128619305, 1.0628989141871952), 1, 0.96875);
        match walsh(&D[..5], 0.95) {
            Some(Shift::TooFew { needed, .. }) => assert_eq!(needed, 6),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn exact_counts_sum_to_one_and_are_symmetric() {
        for (m, n) in [(1, 1), (3, 5), (5, 5), (10, 10), (30, 30), (7, 40)] {
            let cdf = u_cdf(m, n).unwrap();
            assert_eq!(cdf.len(), m * n + 1);
            assert!((cdf[m * n] - 1.0).abs() < 1e-12);
            // P(U ≤ u) = P(U ≥ mn − u) = 1 − P(U ≤ mn − u − 1)
            for u in 0..m * n {
                assert!((cdf[u] - (1.0 - cdf[m * n - u - 1])).abs() < 1e-12, "{m} {n} {u}");
            }
        }
        let cdf = signed_rank_cdf(10);
        assert!((cdf[55] - 1.0).abs() < 1e-15);
        assert_eq!(cdf[0], 1.0 / 1024.0);
        assert_eq!((fewest_per_side(0.95), fewest_per_side(0.99), fewest_pairs(0.95)), (4, 5, 6));
    }

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
