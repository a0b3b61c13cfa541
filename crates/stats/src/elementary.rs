//! The elementary statistics of a list of numbers: mean, variance, order statistics, ranks.

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Observations variance with n − 1 in the denominator (two passes, for accuracy); 0 for n < 2
/// so callers need not special-case a single value before they check n.
pub fn variance(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64
}

/// The values in ascending order (`total_cmp`: values equal in that order are the same
/// bits, so an unstable sort gives the same list as a stable one, faster).
pub fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    sorted
}

/// The median of values in any order, which it reorders: the same number as
/// [`median_of_sorted`] of them sorted, found by selection instead of a sort.
pub fn median_in_place(values: &mut [f64]) -> f64 {
    let n = values.len();
    let (below, &mut middle, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        middle
    } else {
        // the other middle value is the largest of those below it
        let lower = below.iter().copied().max_by(f64::total_cmp).unwrap_or(middle);
        (lower + middle) / 2.0
    }
}

/// Median of sorted values: the mean of the middle two for even n (numpy, R).
pub fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 }
}

/// Quantile by linear interpolation between order statistics: numpy's default, R type 7
/// (statrs's `Data::quantile` is type 8, which puts Tukey's fences elsewhere).
pub(crate) fn quantile_of_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let below = h.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + (h - below as f64) * (sorted[above] - sorted[below])
}

/// |x − median| for every value, in order.
pub(crate) fn absolute_deviations(values: &[f64]) -> Vec<f64> {
    deviations_from(values, median_in_place(&mut values.to_vec()))
}

/// |x − centre| for every value, in order.
pub(crate) fn deviations_from(values: &[f64], centre: f64) -> Vec<f64> {
    values.iter().map(|v| (v - centre).abs()).collect()
}

/// Median absolute deviation from the median, unscaled.
pub fn mad(values: &[f64]) -> f64 {
    median_in_place(&mut absolute_deviations(values))
}

/// The median absolute deviation of values sorted (`sorted`) from `median`, their median,
/// unscaled: the selection's number (the tests hold it to `reference::mad_about`), without
/// a copy or a selection. The deviations fall towards the median from below and
/// rise from it above, so the smallest are met walking out from it on both sides at once.
pub(crate) fn mad_of_sorted(sorted: &[f64], median: f64) -> f64 {
    let n = sorted.len();
    let deviation = |i: usize| (sorted[i] - median).abs();
    // below: the values under the median, nearest first; above: the others
    let split = sorted.partition_point(|&x| x < median);
    let (mut below, mut above) = (split, split);
    let (mut previous, mut current) = (f64::NAN, f64::NAN);
    for _ in 0..=n / 2 {
        let take_below =
            below > 0 && (above == n || deviation(below - 1).total_cmp(&deviation(above)).is_le());
        previous = current;
        current = if take_below {
            below -= 1;
            deviation(below)
        } else {
            above += 1;
            deviation(above - 1)
        };
    }
    if n % 2 == 1 { current } else { (previous + current) / 2.0 }
}

/// The places of `values` in ascending order of value (`total_cmp`), ties in the order
/// of their places: the order a stable sort of the places by value gives. One sort that
/// a cell's summary, its trend's ranks and its regime split all read.
pub(crate) fn ascending(values: &[f64]) -> Vec<u32> {
    // each value beside its place, sorted together (no lookup per comparison)
    let mut pairs: Vec<(f64, u32)> = values.iter().copied().zip(0..).collect();
    pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    pairs.into_iter().map(|(_, i)| i).collect()
}

/// The values at the places `ascending` lists, in that order.
pub(crate) fn in_order(values: &[f64], ascending: &[u32]) -> Vec<f64> {
    ascending.iter().map(|&i| values[i as usize]).collect()
}

/// Ranks 1..=n with ties given their average rank, and the size of every group of tied
/// values (1 for an untied value), as the rank tests need them.
pub(crate) fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    average_ranks_in(values, &ascending(values))
}

/// [`average_ranks`] of `values` whose [`ascending`] order is at hand (ties may be in
/// any order: they share their rank).
pub(crate) fn average_ranks_in(values: &[f64], ascending: &[u32]) -> (Vec<f64>, Vec<usize>) {
    let mut ranks = vec![0.0; values.len()];
    let mut groups = Vec::new();
    let value = |k: usize| values[ascending[k] as usize];
    let mut start = 0;
    while start < ascending.len() {
        let mut end = start + 1;
        while end < ascending.len() && value(end) == value(start) {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their average:
        let rank = (start + end + 1) as f64 / 2.0;
        for &i in &ascending[start..end] {
            ranks[i as usize] = rank;
        }
        groups.push(end - start);
        start = end;
    }
    (ranks, groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::mad_about;

    /// The MAD walked out from the median of sorted values is the selection's, bit for
    /// bit: odd and even n, ties, negatives, -0.0, values on one side of the median only.
    #[test]
    fn mad_of_sorted_values_is_the_selections() {
        let lists: Vec<Vec<f64>> = vec![
            vec![1.0],
            vec![1.0, 2.0],
            vec![3.0, 3.0, 3.0, 3.0],
            vec![-0.0, 0.0, 1.0, -1.0, 0.0],
            vec![1.0, 1.0, 1.0, 1.0, 9.0, 10.0],
            (0..101).map(|i| ((i * 7919) % 37) as f64 * 0.1 - 1.0).collect(),
            (0..100).map(|i| 1.0e8 + ((i * 104_729) % 53) as f64 / 3.0).collect(),
            (0..64).map(|i| if i % 3 == 0 { 5.0 } else { f64::from(i) }).collect(),
        ];
        for values in lists {
            let sorted = sorted(&values);
            let median = median_of_sorted(&sorted);
            let want = mad_about(&values, median);
            assert_eq!(mad_of_sorted(&sorted, median).to_bits(), want.to_bits(), "{values:?}");
        }
    }

    #[test]
    fn quantiles_interpolate_linearly_like_numpy() {
        let sorted = [1.0, 2.0, 4.0, 8.0];
        // numpy.percentile([1, 2, 4, 8], [0, 25, 50, 75, 100]) = [1, 1.75, 3, 5, 8]
        let got: Vec<f64> =
            [0.0, 0.25, 0.5, 0.75, 1.0].iter().map(|&p| quantile_of_sorted(&sorted, p)).collect();
        assert_eq!(got, vec![1.0, 1.75, 3.0, 5.0, 8.0]);
    }
}
