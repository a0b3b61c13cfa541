//! Two regimes in a cell (docs/statistics.md, Two regimes in a cell): whether a cell's
//! trials fall into a lower and an upper group that one unimodal distribution would
//! rarely give, and, when they do, each group's share, mean and interval.
//!
//! The test is the split ratio of the best split into two groups: on the logs of the
//! values (their scale does not matter, and a rate and its reciprocal split alike), the
//! sorted values are cut where the sum of squares left within the two groups is least,
//! each group at least [`MIN_GROUP`] values (a single far value is an outlier, not a
//! regime), and W = that sum / the total sum of squares. Two regimes leave little within
//! their groups; one unimodal cloud leaves at least about a third at every n. The cell is
//! two regimes when W is below the critical value of its n, simulated under unimodal
//! shapes (normal, log-normal, Student's t₃, uniform) so that none of them raises a false
//! alarm in more than about 0.8 % of cells ([`CRITICAL`]; `margin calibrate` measures it anew).

use serde::Serialize;

use super::describe::{CellSummary, summarize};
use super::observations::Observations;
use super::{StatsError, StatsSettings};

/// The fewest trials a cell is tested with: two groups of [`MIN_GROUP`] and one more.
pub const MIN_TRIALS: usize = 5;
/// The fewest trials of a regime.
pub const MIN_GROUP: usize = 2;

/// The critical split ratio at each n: the smallest over the unimodal shapes of W's 0.8 %
/// quantile, from 200 000 simulated cells per shape and n (tests/data/stats/regimes.py,
/// which writes them to regimes.json; a test checks this table against it). Between two
/// rows the value is interpolated, beyond the last the last row's is used.
pub(crate) const CRITICAL: [(usize, f64); 33] = [
    (5, 0.0082),
    (6, 0.0164),
    (7, 0.0259),
    (8, 0.0359),
    (9, 0.0447),
    (10, 0.0526),
    (11, 0.0612),
    (12, 0.0676),
    (13, 0.0744),
    (14, 0.0808),
    (15, 0.0856),
    (16, 0.0904),
    (17, 0.0938),
    (18, 0.0983),
    (19, 0.1026),
    (20, 0.106),
    (21, 0.1089),
    (22, 0.1127),
    (23, 0.1149),
    (24, 0.1179),
    (25, 0.1204),
    (26, 0.1224),
    (27, 0.1247),
    (28, 0.127),
    (29, 0.1293),
    (30, 0.1314),
    (40, 0.1464),
    (50, 0.157),
    (60, 0.1653),
    (80, 0.1761),
    (100, 0.1837),
    (150, 0.1961),
    (200, 0.203),
];

/// The critical split ratio for `n` trials; `None` below [`MIN_TRIALS`].
pub(crate) fn critical_value(n: usize) -> Option<f64> {
    if n < MIN_TRIALS {
        return None;
    }
    let last = CRITICAL[CRITICAL.len() - 1];
    if n >= last.0 {
        return Some(last.1);
    }
    let upper = CRITICAL.iter().position(|&(m, _)| m >= n)?;
    let (n1, w1) = CRITICAL[upper];
    if n1 == n || upper == 0 {
        return Some(w1);
    }
    let (n0, w0) = CRITICAL[upper - 1];
    Some(w0 + (w1 - w0) * (n - n0) as f64 / (n1 - n0) as f64)
}

/// The best split of a cell's values into a lower and an upper group.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Within-group sum of squares / total (both with Sheppard's correction for ties).
    pub ratio: f64,
    /// The indices of the lower group's values (in the order given), then the upper's.
    pub lower: Vec<usize>,
    pub upper: Vec<usize>,
}

/// The values on the test's scale: their logs when every one is positive, else
/// themselves.
fn test_scale(values: &[f64]) -> Vec<f64> {
    if values.iter().all(|&x| x > 0.0) { values.iter().map(|x| x.ln()).collect() } else { values.to_vec() }
}

/// Each value on the test's scale beside its place, in the order of the test scale, ties
/// in the order of their places (as a stable sort of the places by it): the values' own
/// order (`ascending`), unless a logarithm rounded two values to one (or was not
/// increasing), which a sort then mends.
fn on_test_scale_sorted(values: &[f64], ascending: &[u32]) -> Vec<(f64, usize)> {
    let scale = test_scale(values);
    let order = |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    let mut pairs: Vec<(f64, usize)> = ascending.iter().map(|&i| (scale[i as usize], i as usize)).collect();
    if !pairs.is_sorted_by(|a, b| order(a, b).is_le()) {
        pairs.sort_unstable_by(order);
    }
    pairs
}

/// The best split of `values` (finite numbers, on the metric's scale); `None` below
/// [`MIN_TRIALS`] values or when they are all equal.
pub fn split_ratio(values: &[f64]) -> Option<Split> {
    split_ratio_in(values, &crate::elementary::ascending(values))
}

/// [`split_ratio`] of `values` whose order is at hand (`elementary::ascending`).
pub(crate) fn split_ratio_in(values: &[f64], ascending: &[u32]) -> Option<Split> {
    let n = values.len();
    if n < MIN_TRIALS || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let pairs = on_test_scale_sorted(values, ascending);
    let (sorted, order): (Vec<f64>, Vec<usize>) = pairs.into_iter().unzip();
    let centre = sorted.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = sorted.iter().map(|x| x - centre).collect();
    let total: f64 = centred.iter().map(|d| d * d).sum();
    // Tied values are quantised: each stands for a spread of one step q, whose variance
    // q²/12 the sums would otherwise miss (two groups of equal values would leave 0).
    let steps = sorted.windows(2).map(|w| w[1] - w[0]);
    let tied = steps.clone().any(|s| s == 0.0);
    let q = if tied { steps.filter(|&s| s > 0.0).fold(f64::INFINITY, f64::min) } else { 0.0 };
    let sheppard = if q.is_finite() { n as f64 * q * q / 12.0 } else { 0.0 };
    if sorted[0] == sorted[n - 1] || total <= 0.0 || !total.is_finite() {
        return None;
    }
    let (mut sum, mut squares) = (0.0, 0.0);
    let mut best: Option<(f64, usize)> = None;
    for (k, d) in centred.iter().enumerate().take(n - MIN_GROUP) {
        sum += d;
        squares += d * d;
        let low = k + 1;
        if low < MIN_GROUP {
            continue;
        }
        let high = n - low;
        // the upper group's sums are the total's less the lower's (centred: Σ = 0)
        let within = (squares - sum * sum / low as f64) + ((total - squares) - sum * sum / high as f64);
        let ratio = (within.max(0.0) + sheppard) / (total + sheppard);
        if best.is_none_or(|(b, _)| ratio < b) {
            best = Some((ratio, low));
        }
    }
    let (ratio, low) = best?;
    let mut lower = order[..low].to_vec();
    let mut upper = order[low..].to_vec();
    lower.sort_unstable();
    upper.sort_unstable();
    Some(Split { ratio, lower, upper })
}

/// One regime: its trials and their statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regime {
    /// Positions of its trials among the cell's, in trial order (0 is the first).
    pub trials: Vec<usize>,
    /// Its trials' share of the cell's.
    pub share: f64,
    /// Their mean (of the metric's kind), interval and extremes.
    pub summary: CellSummary,
}

/// A cell found to be two regimes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regimes {
    /// The split ratio W and the critical value it fell below.
    pub ratio: f64,
    pub critical: f64,
    /// The regime of the lower values (on the metric's scale), then the upper's.
    pub regimes: [Regime; 2],
}

/// Tests every trial of `sample` for two regimes; `Some` when the cell is two.
pub fn find_regimes(sample: &Observations, settings: &StatsSettings) -> Result<Option<Regimes>, StatsError> {
    find_regimes_in(sample, settings, &crate::elementary::ascending(sample.values()))
}

/// [`find_regimes`] of a sample whose values' order is at hand (`elementary::ascending`).
pub(crate) fn find_regimes_in(
    sample: &Observations,
    settings: &StatsSettings,
    ascending: &[u32],
) -> Result<Option<Regimes>, StatsError> {
    let Some(critical) = critical_value(sample.len()) else { return Ok(None) };
    let Some(split) = split_ratio_in(sample.values(), ascending) else { return Ok(None) };
    if split.ratio >= critical {
        return Ok(None);
    }
    let n = sample.len() as f64;
    let regime = |trials: Vec<usize>| -> Result<Regime, StatsError> {
        let others: Vec<usize> = (0..sample.len()).filter(|i| !trials.contains(i)).collect();
        let summary = summarize(&sample.without(&others)?, settings)?;
        Ok(Regime { share: trials.len() as f64 / n, trials, summary })
    };
    Ok(Some(Regimes { ratio: split.ratio, critical, regimes: [regime(split.lower)?, regime(split.upper)?] }))
}

/// The test of the trial before (docs/statistics.md, What decides a regime) is a
/// permutation test up to this many trials, the G-test's χ² beyond.
pub const BEFORE_EXACT_UP_TO: usize = 2000;
/// Its level: the trial before is said to decide the regime at p ≤ this, so a cell whose
/// regime does not depend on it is told so falsely in at most 1 % of cells.
pub const BEFORE_ALPHA: f64 = 0.01;

/// What the trial before tells of a trial's regime.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Before {
    /// The p-value of "the regime does not depend on what ran before".
    pub p_value: f64,
    /// The share of trials in their kind of trial before's more common regime: how well
    /// the trial before predicts the regime (1 when it decides it).
    pub predicted: f64,
    /// Per kind of trial before (`kinds`' values, 0 to k − 1): its trials in the lower
    /// regime and in the upper.
    pub counts: Vec<[usize; 2]>,
}

/// Whether the regime of each trial (`upper[i]`: trial i in the upper regime) depends on
/// what ran on its host just before it (`kinds[i]`: the cell of that trial, as a number
/// from 0, one number standing for "nothing before"). The statistic is the G-test's
/// Σ O ln O over the table kinds × regimes (its margins are fixed under permutation); its
/// p-value is the share of [`PERMUTATIONS`](super::drift::PERMUTATIONS) seeded
/// shufflings of the regimes that reach it, up to [`BEFORE_EXACT_UP_TO`] trials, and the
/// χ² of G with k − 1 degrees of freedom beyond. `None` when fewer than two kinds occur.
pub fn decided_by_before(upper: &[bool], kinds: &[usize], seed: u64) -> Option<Before> {
    use rand::SeedableRng;
    use rand::seq::SliceRandom;
    let n = upper.len();
    let k = kinds.iter().max().map_or(0, |&m| m + 1);
    if n != kinds.len() || n == 0 {
        return None;
    }
    let table = |upper: &[bool]| {
        let mut counts = vec![[0usize; 2]; k];
        for (&u, &c) in upper.iter().zip(kinds) {
            counts[c][usize::from(u)] += 1;
        }
        counts
    };
    let o_ln_o = |counts: &[[usize; 2]]| -> f64 {
        counts.iter().flatten().filter(|&&o| o > 0).map(|&o| o as f64 * (o as f64).ln()).sum()
    };
    let counts = table(upper);
    let occurring = counts.iter().filter(|c| c[0] + c[1] > 0).count();
    if occurring < 2 {
        return None;
    }
    let observed = o_ln_o(&counts);
    let p_value = if n <= BEFORE_EXACT_UP_TO {
        let permutations = super::drift::PERMUTATIONS;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
        let mut shuffled = upper.to_vec();
        // ties of the statistic count as reaching it (a tolerance for the sums' rounding)
        let reached = (0..permutations)
            .filter(|_| {
                shuffled.shuffle(&mut rng);
                o_ln_o(&table(&shuffled)) >= observed - 1e-9 * observed.abs().max(1.0)
            })
            .count();
        (1 + reached) as f64 / (1 + permutations) as f64
    } else {
        let ln = |x: usize| if x > 0 { x as f64 * (x as f64).ln() } else { 0.0 };
        let rows: f64 = counts.iter().map(|c| ln(c[0] + c[1])).sum();
        let ups = counts.iter().map(|c| c[1]).sum::<usize>();
        let g = 2.0 * (observed - rows - ln(ups) - ln(n - ups) + ln(n));
        1.0 - super::dist::chi_squared_cdf(g.max(0.0), (occurring - 1) as f64)?
    };
    let predicted = counts.iter().map(|c| c[0].max(c[1])).sum::<usize>() as f64 / n as f64;
    Some(Before { p_value, predicted, counts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test scale's order taken from the values' is the stable sort's, where the
    /// logarithm keeps two values apart or rounds them to one (large neighbours), on
    /// values with ties, with negatives and zeros (no logarithm), -0.0 beside 0.0.
    #[test]
    fn the_test_scale_in_the_values_order_is_the_sorts() {
        let big = 1.0e300_f64;
        let lists: Vec<Vec<f64>> = vec![
            vec![3.0, 1.0, 2.0, 2.0, 1.0, 5.0, 4.0, 1.0],
            (0..40).map(|i| big + f64::from(i % 7) * big * f64::EPSILON).collect(),
            (0..40).map(|i| f64::from((i * 13) % 11) * 1e8 + 1e17).collect(),
            vec![0.0, -0.0, -1.0, 2.0, -0.0, 0.0, 3.0, -1.0],
            (0..50).map(|i| ((i * 7919) % 97) as f64 / 7.0 + 0.5).collect(),
        ];
        for values in lists {
            let mut want: Vec<(f64, usize)> = test_scale(&values).into_iter().zip(0..).collect();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            let got = on_test_scale_sorted(&values, &crate::elementary::ascending(&values));
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!((g.0.to_bits(), g.1), (w.0.to_bits(), w.1), "{values:?}");
            }
        }
    }
    use crate::reference::{assert_close, number};
    use serde_json::Value;
    use std::sync::LazyLock;
    use vocab::MeanKind;

    static REFERENCE: LazyLock<Value> = LazyLock::new(|| {
        serde_json::from_str(include_str!("../../../tests/data/stats/regimes.json"))
            .expect("regimes.json is JSON")
    });

    /// The split ratio and the split of every fixed vector, against numpy's
    /// (tests/data/stats/regimes.py, written independently of this file).
    #[test]
    fn the_split_ratio_is_numpys() {
        let samples = REFERENCE["samples"].as_object().unwrap();
        assert!(samples.len() >= 5);
        for (name, s) in samples {
            let values: Vec<f64> = s["values"].as_array().unwrap().iter().map(number).collect();
            let split = split_ratio(&values).unwrap();
            assert_close(split.ratio, number(&s["w"]), name);
            assert_eq!(split.lower.len() as f64, number(&s["lower"]), "{name}");
            let top_of_lower = split.lower.iter().map(|&i| values[i]).fold(f64::NEG_INFINITY, f64::max);
            assert!(split.upper.iter().all(|&i| values[i] >= top_of_lower), "{name}");
        }
    }

    /// The table of critical values is the one the script simulated.
    #[test]
    fn the_critical_values_are_the_simulated_ones() {
        let table = REFERENCE["critical"].as_array().unwrap();
        assert_eq!(table.len(), CRITICAL.len());
        for (row, &(n, w)) in table.iter().zip(&CRITICAL) {
            assert_eq!(number(&row["n"]) as usize, n);
            assert_eq!(number(&row["critical"]), w, "n = {n}");
        }
        // they rise with n, and interpolate between the rows
        assert!(CRITICAL.windows(2).all(|w| w[0].1 < w[1].1 && w[0].0 < w[1].0));
        let (a, b) = (critical_value(30).unwrap(), critical_value(40).unwrap());
        assert_close(critical_value(35).unwrap(), (a + b) / 2.0, "n = 35");
        assert_eq!(critical_value(4), None);
        assert_eq!(critical_value(5000), Some(CRITICAL[CRITICAL.len() - 1].1));
    }

    #[test]
    fn two_regimes_are_found_with_their_shares_and_means() {
        let values: Vec<f64> =
            REFERENCE["samples"]["dd_two_regimes"]["values"].as_array().unwrap().iter().map(number).collect();
        let sample = Observations::new(&values, MeanKind::Harmonic).unwrap();
        let found = find_regimes(&sample, &StatsSettings::default()).unwrap().expect("two regimes");
        let [low, high] = &found.regimes;
        assert_eq!((low.trials.len(), high.trials.len()), (6, 14));
        assert_close(low.share, 0.3, "share");
        assert!(low.trials.iter().all(|&i| values[i] < 1000.0));
        assert!(low.summary.max < 1000.0 && high.summary.min > 2000.0);
        // each regime's mean is of the metric's kind, with its interval
        let lows: Vec<f64> = low.trials.iter().map(|&i| values[i]).collect();
        let harmonic = lows.len() as f64 / lows.iter().map(|x| 1.0 / x).sum::<f64>();
        assert_close(low.summary.mean, harmonic, "harmonic mean of the low regime");
        assert!(low.summary.interval.is_some());
    }

    #[test]
    fn one_regime_and_degenerate_cells_are_not_two() {
        let settings = StatsSettings::default();
        for values in [
            vec![10.2, 9.7, 10.5, 9.9, 10.1, 9.6, 10.3, 10.0, 9.8, 10.4],
            vec![5.0; 8],
            vec![1.0, 2.0, 3.0, 4.0],
            vec![100.0, 101.0, 100.0, 101.0, 100.0, 101.0, 101.0, 100.0],
            // one far value is an outlier, not a regime
            vec![10.0, 10.1, 9.9, 10.2, 9.8, 10.0, 10.1, 50.0],
        ] {
            let sample = Observations::new(&values, MeanKind::Arithmetic).unwrap();
            assert_eq!(find_regimes(&sample, &settings).unwrap(), None, "{values:?}");
        }
        assert!(split_ratio(&[1.0, f64::NAN, 2.0, 3.0, 4.0]).is_none());
    }

    proptest::proptest! {
        /// Any finite input gives a ratio in [0, 1] and a partition of the trials, or none.
        #[test]
        fn never_panics_and_partitions(values in proptest::collection::vec(-1e6f64..1e6, 0..40)) {
            if let Some(split) = split_ratio(&values) {
                proptest::prop_assert!((0.0..=1.0).contains(&split.ratio));
                proptest::prop_assert!(split.lower.len() >= MIN_GROUP && split.upper.len() >= MIN_GROUP);
                proptest::prop_assert_eq!(split.lower.len() + split.upper.len(), values.len());
            }
        }
    }

    /// A table of counts (kind, lower, upper) as the trials `decided_by_before` takes.
    fn trials_of(table: &[[usize; 2]]) -> (Vec<bool>, Vec<usize>) {
        let mut upper = Vec::new();
        let mut kinds = Vec::new();
        for (kind, &[low, high]) in table.iter().enumerate() {
            for u in std::iter::repeat_n(false, low).chain(std::iter::repeat_n(true, high)) {
                upper.push(u);
                kinds.push(kind);
            }
        }
        (upper, kinds)
    }

    #[test]
    fn the_trial_before_deciding_every_regime_is_found() {
        // lab-regimes' 1M cell: after the other cell's trial the lower regime, after its own the upper
        let (upper, kinds) = trials_of(&[[15, 0], [0, 45]]);
        let b = decided_by_before(&upper, &kinds, 1).unwrap();
        assert_eq!(b.p_value, 1.0 / 2000.0);
        assert_eq!(b.predicted, 1.0);
        assert_eq!(b.counts, vec![[15, 0], [0, 45]]);
        // one kind of trial before tells nothing
        assert_eq!(decided_by_before(&[false, true, true], &[0, 0, 0], 1), None);
    }

    #[test]
    fn the_g_test_beyond_the_permutations_is_scipys() {
        // scipy.stats.chi2_contingency([[1000, 1010], [990, 1030], [240, 250]],
        // correction=False, lambda_="log-likelihood"): G 0.24949466223577055, p 0.8827199102628052
        let (upper, kinds) = trials_of(&[[1000, 1010], [990, 1030], [240, 250]]);
        let b = decided_by_before(&upper, &kinds, 1).unwrap();
        assert_close(b.p_value, 0.8827199102628052, "G-test p");
        // below the permutations' limit the permutation p-value is near the G-test's:
        // scipy gives p 0.0031999315476639837 for [[30, 12], [25, 40], [8, 9]]
        let (upper, kinds) = trials_of(&[[30, 12], [25, 40], [8, 9]]);
        let p = decided_by_before(&upper, &kinds, 1).unwrap().p_value;
        assert!((0.001..0.01).contains(&p), "permutation p {p}");
    }

    #[test]
    fn a_trial_before_that_decides_nothing_is_said_to_in_at_most_1_percent_of_cells() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(36);
        let cells = 1000;
        let mut alarms = 0;
        for _ in 0..cells {
            let n = rng.random_range(5..=60);
            let k = rng.random_range(2..=4);
            let share = rng.random_range(0.1..0.5);
            let upper: Vec<bool> = (0..n).map(|_| rng.random_bool(share)).collect();
            let kinds: Vec<usize> = (0..n).map(|_| rng.random_range(0..k)).collect();
            if upper.iter().all(|&u| u) || !upper.iter().any(|&u| u) {
                continue;
            }
            let seed = rng.random();
            if decided_by_before(&upper, &kinds, seed).is_some_and(|b| b.p_value <= BEFORE_ALPHA) {
                alarms += 1;
            }
        }
        // 1 % of 1000 is 10; 17 lies 2.2 binomial sds above it
        assert!(alarms <= 17, "{alarms} false alarms in {cells} cells");
    }
}
