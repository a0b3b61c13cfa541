//! The Hodges–Lehmann shift of one side against the other (independent sides: the median
//! of the pairwise differences, with its Moses interval and the Mann–Whitney test) or of
//! paired differences (the median of the Walsh averages, with the signed-rank interval
//! and the Wilcoxon test), each interval and test from one ranking of the values.

use super::null::{
    EXACT_MAX_SIGNED, Null, RankTest, exact_cdf, fewest_pairs, fewest_per_side, signed_rank_cdf,
    signed_rank_sd, u_sd,
};
use crate::elementary::{average_ranks, median_of_sorted, sorted};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist;
    use crate::reference::assert_close;
    use crate::robust::tests::{A, B, C, D, DT, QA, QB};

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
}
