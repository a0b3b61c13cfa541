//! The null distributions of the rank statistics: exact counts of U (Mann–Whitney) and of
//! T⁺ (signed ranks) where nothing ties and the counts fit, else their centre and
//! ties-corrected sd for the normal approximation; the p-value of a statistic, and the
//! order statistic an interval is read at.

use crate::dist;

/// Exact Mann–Whitney distributions are counted up to this many pairs m·n (n = 60 a side
/// is 3600: the counts take m·(m·n) steps); beyond, the normal approximation is close.
const EXACT_MAX_PAIRS: usize = 3600;

/// Exact signed-rank distributions up to this many pairs: the counts of 2^k sign patterns
/// stay exact integers in an f64 (< 2^53).
pub(super) const EXACT_MAX_SIGNED: usize = 50;

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

/// A rank statistic's null distribution: exact counts where nothing ties and they fit,
/// else its centre and sd (ties-corrected) for the normal approximation. Built once per
/// comparison: the test and the interval read the same one.
pub(super) struct Null {
    pub(super) exact: Option<Vec<f64>>,
    pub(super) centre: f64,
    pub(super) sd: f64,
}

impl Null {
    /// The two-sided p of `statistic`: twice the lower tail of the exact distribution (it
    /// is symmetric about its centre), else by the normal approximation.
    pub(super) fn test(&self, statistic: f64) -> Option<RankTest> {
        if let Some(cdf) = &self.exact {
            let low_tail = statistic.min(2.0 * self.centre - statistic);
            let p = cdf[low_tail as usize];
            return Some(RankTest { statistic, p_value: (2.0 * p).min(1.0), exact: true });
        }
        normal_test(statistic, self.centre, self.sd)
    }

    /// The interval's order statistic: the largest c with P(statistic ≤ c) ≤ α/2.
    pub(super) fn critical(&self, half_alpha: f64) -> Option<(usize, f64, bool)> {
        match &self.exact {
            Some(cdf) => exact_critical(cdf, half_alpha),
            None => normal_critical(self.centre, self.sd, half_alpha),
        }
    }
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

/// The null sd of U, with the ties correction: mn/12 · ((N + 1) − Σ(t³ − t)/(N(N − 1))).
pub(super) fn u_sd(m: usize, n: usize, ties: &[usize]) -> f64 {
    let big = (m + n) as f64;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    let correction = if big > 1.0 { tie_term / (big * (big - 1.0)) } else { 0.0 };
    ((m * n) as f64 / 12.0 * ((big + 1.0) - correction)).max(0.0).sqrt()
}

/// The null sd of T⁺ over k nonzero differences, with the ties correction
/// k(k + 1)(2k + 1)/24 − Σ(t³ − t)/48.
pub(super) fn signed_rank_sd(k: usize, ties: &[usize]) -> f64 {
    let k = k as f64;
    let tie_term: f64 = ties.iter().map(|&t| (t as f64).powi(3) - t as f64).sum();
    (k * (k + 1.0) * (2.0 * k + 1.0) / 24.0 - tie_term / 48.0).max(0.0).sqrt()
}

/// P(U ≤ u) for u = 0..=mn under the null, when the values do not tie and the counts fit.
pub(super) fn exact_cdf(m: usize, n: usize, ties: &[usize]) -> Option<Vec<f64>> {
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
pub(super) fn signed_rank_cdf(k: usize) -> Vec<f64> {
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
pub(super) fn fewest_per_side(confidence: f64) -> usize {
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
pub(super) fn fewest_pairs(confidence: f64) -> usize {
    let alpha = 1.0 - confidence;
    (1..1000).find(|&k| 2.0 / 2_f64.powi(k as i32) <= alpha + TAIL_SLACK).unwrap_or(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
