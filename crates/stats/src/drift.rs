//! Drift within a session (docs/statistics.md, Drift within a session): did the machine
//! change under the benchmark while a session ran — a disk warming, a thermal throttle,
//! a neighbour starting?
//!
//! The trials of one session and metric are taken in the order they started, across
//! their cells. Each trial's value is replaced by its rank among the trials of its own
//! cell in that session, scaled to (0, 1) — so cells of different sizes and scales mix,
//! and one far value counts as one rank. The statistic is Pettitt's: the largest
//! |cumulative sum of (rank − ½)| over the sequence, where a shift or a trend piles up.
//! Its p-value is a permutation test that shuffles each cell's ranks among that cell's
//! own positions — exact when, within each cell, the order of the trials says nothing
//! about their values, whatever their distribution (`PERMUTATIONS` seeded draws; beyond
//! `EXACT_UP_TO` trials, the Kolmogorov limit of the same statistic).
//!
//! The same ranks and permutations find an effect of the order within a round
//! ([`test_places`]): the trials taken by their place in their round rather than by their
//! start, the change sought only between places, and each partial sum standardised
//! (docs/statistics.md, Order within a round).

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;

/// The fewest trials of a session tested.
pub const MIN_TRIALS: usize = 10;
/// Random permutations of the test.
pub(crate) const PERMUTATIONS: usize = 1999;
/// Up to this many trials the p-value is the permutation test's; beyond, the limit's.
pub(crate) const EXACT_UP_TO: usize = 2000;

/// One trial of the sequence: its cell (any id) and value, in the order trials started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub cell: usize,
    pub value: f64,
}

/// What the test found in one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub p_value: f64,
    /// Trials before the change: the change is between trial `at - 1` and `at` (from 0).
    pub at: usize,
    /// After against before, the median over the cells that ran on both sides of the
    /// median ratio of their values (1.1: 10 % higher after); `None` when no cell did.
    pub ratio: Option<f64>,
    pub trials: usize,
}

/// Each point's rank within its cell, scaled to (0, 1), less ½ ([`centred_ranks_of`]);
/// a cell of one trial gives 0. The ranks do not depend on the points' order: a sequence
/// taken in two orders (by start, by place) is ranked once.
pub(crate) fn centred_ranks(points: &[Point]) -> Vec<f64> {
    let cells = dense_cells(points);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); cells.iter().max().map_or(0, |&c| c + 1)];
    for (i, &c) in cells.iter().enumerate() {
        members[c].push(i);
    }
    let mut out = vec![0.0; points.len()];
    for members in &members {
        let values: Vec<f64> = members.iter().map(|&i| points[i].value).collect();
        for (&i, u) in members.iter().zip(centred_ranks_of(&values)) {
            out[i] = u;
        }
    }
    out
}

/// The ranks of one cell's `values` (1 for the smallest; ties share their mean rank),
/// scaled to (0, 1) and less ½: (rank − ½) / n − ½, in the values' order.
pub fn centred_ranks_of(values: &[f64]) -> Vec<f64> {
    let m = values.len() as f64;
    let (ranks, _) = crate::elementary::average_ranks(values);
    ranks.into_iter().map(|rank| (rank - 0.5) / m - 0.5).collect()
}

/// The points' cells numbered 0, 1, … in order of first appearance when their ids are
/// sparse; as they are when they are already few and small (an index into the cells).
fn dense_cells(points: &[Point]) -> Vec<usize> {
    if points.iter().all(|p| p.cell <= 4 * points.len() + 1024) {
        return points.iter().map(|p| p.cell).collect();
    }
    let mut ids: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    points
        .iter()
        .map(|p| {
            let next = ids.len();
            *ids.entry(p.cell).or_insert(next)
        })
        .collect()
}

/// Pettitt's statistic of `u`: the largest |partial sum| and the number of terms in it.
fn cusum(u: &[f64]) -> (f64, usize) {
    let (mut sum, mut best, mut at) = (0.0, 0.0, 0);
    for (i, x) in u.iter().enumerate().take(u.len().saturating_sub(1)) {
        sum += x;
        if sum.abs() > best {
            (best, at) = (sum.abs(), i + 1);
        }
    }
    (best, at)
}

/// The places' statistic of `u`: the largest |partial sum of `t` terms| / √(t (n − t)),
/// over the `t` that end where `cuts` allows (`cuts[i]`: between term `i` and `i + 1`),
/// and that `t`. Standardised, so that a change at the first of 20 places weighs as one
/// half-way: under no effect each is about normal with the same spread.
fn standardised_cusum(u: &[f64], cuts: &[bool]) -> (f64, usize) {
    let n = u.len() as f64;
    let (mut sum, mut best, mut at) = (0.0, 0.0, 0);
    for (i, x) in u.iter().enumerate().take(u.len().saturating_sub(1)) {
        sum += x;
        if cuts[i] {
            let t = (i + 1) as f64;
            let z = sum.abs() / (t * (n - t)).sqrt();
            if z > best {
                (best, at) = (z, i + 1);
            }
        }
    }
    (best, at)
}

/// P(sup |Brownian bridge| > x), Kolmogorov's series.
fn kolmogorov_tail(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let k = k as f64;
        let term = (-2.0 * k * k * x * x).exp();
        sum += if k as u64 % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

/// Tests `points` (in the order they started) for a drift; `None` below [`MIN_TRIALS`]
/// or when no cell has two distinct values. `seed` fixes the permutations.
pub fn test(points: &[Point], seed: u64) -> Option<Drift> {
    finite(points)?;
    let d = test_ranked(&centred_ranks(points), || points.iter().map(|p| p.cell).collect(), seed)?;
    Some(Drift { ratio: shift(points, d.at), ..d })
}

/// [`test()`] of a sequence of finite values whose [`centred_ranks`] are `u`; `cells`
/// gives each one's cell, asked for only when the permutations need it (up to
/// [`EXACT_UP_TO`] trials). The `ratio` is not computed (`None`: [`shift`] gives it, for a
/// finding).
pub fn test_ranked(u: &[f64], cells: impl FnOnce() -> Vec<usize>, seed: u64) -> Option<Drift> {
    let n = u.len();
    usable(u)?;
    let (k, at) = cusum(u);
    let p_value = if n <= EXACT_UP_TO {
        permutation_p(&cells(), u, seed, |shuffled| cusum(shuffled).0 >= k - 1e-12)
    } else {
        let variance: f64 = u.iter().map(|x| x * x).sum::<f64>() / n as f64;
        kolmogorov_tail(k / (n as f64 * variance).sqrt())
    };
    Some(Drift { p_value, at, ratio: None, trials: n })
}

/// Tests `points`, in the order of their places in a round (a trial's `position`), for
/// an effect of that place: the ranks and permutations of [`test()`], the change sought
/// only between places (`places[i]`: point `i`'s, in non-decreasing order), so that the
/// order of the trials within one place says nothing, and its partial sums standardised
/// ([`standardised_cusum`]). Beyond [`EXACT_UP_TO`] trials the p-value is Bonferroni's
/// bound over the cuts of each standardised sum's normal limit. `None` as for [`test()`],
/// and when all points are at one place.
pub fn test_places(points: &[Point], places: &[u32], seed: u64) -> Option<Drift> {
    finite(points)?;
    let u = centred_ranks(points);
    let d = test_places_ranked(&u, || points.iter().map(|p| p.cell).collect(), places, seed)?;
    Some(Drift { ratio: shift(points, d.at), ..d })
}

/// [`test_places`] of finite values whose [`centred_ranks`] are `u`, their cells from
/// `cells` when the permutations need them, the `ratio` not computed (as [`test_ranked`]).
pub fn test_places_ranked(
    u: &[f64],
    cells: impl FnOnce() -> Vec<usize>,
    places: &[u32],
    seed: u64,
) -> Option<Drift> {
    if places.len() != u.len() || !places.is_sorted() {
        return None;
    }
    let cuts: Vec<bool> = places.windows(2).map(|w| w[0] != w[1]).collect();
    test_cuts_ranked(u, cells, &cuts, seed)
}

/// [`test_places_ranked`] of ranks `u` in the order of their places, given where the
/// place changes (`cuts[i]`: between term `i` and `i + 1`, one fewer than the terms)
/// rather than the places. `None` as for [`test_places`], and when no place changes.
pub fn test_cuts_ranked(
    u: &[f64],
    cells: impl FnOnce() -> Vec<usize>,
    cuts: &[bool],
    seed: u64,
) -> Option<Drift> {
    let n = u.len();
    if cuts.len() + 1 != n || !cuts.contains(&true) {
        return None;
    }
    usable(u)?;
    let (k, at) = standardised_cusum(u, cuts);
    let p_value = if n <= EXACT_UP_TO {
        permutation_p(&cells(), u, seed, |shuffled| standardised_cusum(shuffled, cuts).0 >= k - 1e-12)
    } else {
        // a sum of t terms under shuffling of all ranks has variance t (n − t) Σu² / (n (n − 1))
        let variance: f64 = u.iter().map(|x| x * x).sum::<f64>() / (n as f64 * (n - 1) as f64);
        let z = k / variance.sqrt();
        let m = cuts.iter().filter(|&&c| c).count() as f64;
        (m * 2.0 * crate::dist::normal_sf(z).unwrap_or(1.0)).min(1.0)
    };
    Some(Drift { p_value, at, ratio: None, trials: n })
}

/// `Some` when every value of `points` is finite.
fn finite(points: &[Point]) -> Option<()> {
    points.iter().all(|p| p.value.is_finite()).then_some(())
}

/// `Some` when ranks `u` can be tested: at least [`MIN_TRIALS`], and a cell with two
/// distinct values.
fn usable(u: &[f64]) -> Option<()> {
    (u.len() >= MIN_TRIALS && u.iter().any(|x| *x != 0.0)).then_some(())
}

/// The permutation test's p-value: the share of [`PERMUTATIONS`] seeded shufflings of
/// each cell's ranks `u` among that cell's own positions for which `as_large` holds (the
/// statistic at least the observed one; ties count), the observed order one of them.
fn permutation_p(cells: &[usize], u: &[f64], seed: u64, as_large: impl Fn(&[f64]) -> bool) -> f64 {
    let mut groups: std::collections::HashMap<usize, Vec<usize>> = std::collections::HashMap::new();
    for (i, &cell) in cells.iter().enumerate() {
        groups.entry(cell).or_default().push(i);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
    groups.sort();
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut shuffled = u.to_vec();
    let mut values: Vec<f64> = Vec::new();
    let mut at_least = 0usize;
    for _ in 0..PERMUTATIONS {
        for g in &groups {
            values.clear();
            values.extend(g.iter().map(|&i| u[i]));
            values.shuffle(&mut rng);
            for (&i, &v) in g.iter().zip(&values) {
                shuffled[i] = v;
            }
        }
        // a tolerance for the sums' rounding: ties of the statistic count as at least as large
        if as_large(&shuffled) {
            at_least += 1;
        }
    }
    (1 + at_least) as f64 / (1 + PERMUTATIONS) as f64
}

/// After `at` against before: per cell with trials on both sides, the ratio of the
/// medians; their median.
pub fn shift(points: &[Point], at: usize) -> Option<f64> {
    use super::elementary::median_in_place as median;
    let cells = dense_cells(points);
    let mut sides: Vec<(Vec<f64>, Vec<f64>)> = Vec::new();
    sides.resize_with(cells.iter().max().map_or(0, |&c| c + 1), Default::default);
    for (i, (p, &c)) in points.iter().zip(&cells).enumerate() {
        let (before, after) = &mut sides[c];
        if i < at { before.push(p.value) } else { after.push(p.value) }
    }
    let mut ratios: Vec<f64> = sides
        .into_iter()
        .filter_map(|(mut before, mut after)| {
            if before.is_empty() || after.is_empty() {
                return None;
            }
            let (b, a) = (median(&mut before), median(&mut after));
            (b > 0.0 && a > 0.0).then(|| a / b)
        })
        .collect();
    (!ratios.is_empty()).then(|| median(&mut ratios))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(values: &[f64], cells: usize) -> Vec<Point> {
        values.iter().enumerate().map(|(i, &value)| Point { cell: i % cells, value }).collect()
    }

    #[test]
    fn a_step_half_way_is_found_where_it_is() {
        // two cells interleaved, 15 % higher from trial 20 on
        let values: Vec<f64> = (0..40)
            .map(|i| {
                let base = if i % 2 == 0 { 100.0 } else { 50.0 };
                let noise = ((i * 37) % 11) as f64 / 10.0 - 0.5;
                base * if i >= 20 { 1.15 } else { 1.0 } + noise
            })
            .collect();
        let d = test(&points(&values, 2), 1).unwrap();
        assert!(d.p_value < 0.001, "{d:?}");
        assert_eq!(d.at, 20);
        let ratio = d.ratio.unwrap();
        assert!((ratio - 1.15).abs() < 0.02, "{ratio}");
    }

    #[test]
    fn an_order_that_says_nothing_is_not_a_drift() {
        // values in an order unrelated to time: p well above 1 %
        let values: Vec<f64> = (0..30).map(|i| ((i * 17) % 30) as f64).collect();
        let d = test(&points(&values, 3), 1).unwrap();
        assert!(d.p_value > 0.05, "{d:?}");
        assert_eq!(test(&points(&values[..9], 3), 1), None);
        assert_eq!(test(&points(&[5.0; 12], 2), 1), None);
    }

    #[test]
    fn the_first_place_of_each_round_higher_is_found_between_places() {
        // 3 cells × 12 rounds, each round in a varying order; the trial first in its
        // round 20 % higher. Taken by place: every round's first, then its second, ...
        let mut by_place: Vec<(u32, Point)> = Vec::new();
        for round in 0..12usize {
            for place in 0..3usize {
                let cell = (round + place) % 3;
                let base = 100.0 * (1 + cell) as f64;
                let noise = ((round * 7 + place * 3) % 5) as f64 - 2.0;
                let value = base * if place == 0 { 1.2 } else { 1.0 } + noise;
                by_place.push((place as u32 + 1, Point { cell, value }));
            }
        }
        by_place.sort_by_key(|(place, _)| *place);
        let (places, points): (Vec<u32>, Vec<Point>) = by_place.into_iter().unzip();
        let d = test_places(&points, &places, 1).unwrap();
        assert!(d.p_value < 0.001, "{d:?}");
        assert_eq!(d.at, 12, "between the first place and the second");
        assert!((d.ratio.unwrap() - 1.0 / 1.2).abs() < 0.02, "{d:?}");
        // one place only, or places out of order: no test
        assert_eq!(test_places(&points, &vec![1; points.len()], 1), None);
        let mut reversed = places.clone();
        reversed.reverse();
        assert_eq!(test_places(&points, &reversed, 1), None);
    }

    #[test]
    fn a_change_within_one_place_is_not_sought() {
        // a step half-way through the sequence, but all of it at two places split 1 : 39:
        // the only cut allowed is after the first point
        let values: Vec<f64> =
            (0..40).map(|i| if i < 20 { 100.0 + (i % 3) as f64 } else { 130.0 + (i % 3) as f64 }).collect();
        let points = points(&values, 1);
        let places: Vec<u32> = (0..40).map(|i| if i == 0 { 1 } else { 2 }).collect();
        let d = test_places(&points, &places, 1).unwrap();
        assert_eq!(d.at, 1);
        assert!(d.p_value > 0.05, "{d:?}");
        assert!(test(&points, 1).unwrap().p_value < 0.001);
    }

    #[test]
    fn ranks_are_within_cells_and_the_limit_agrees_with_the_permutations() {
        let u = centred_ranks(&[
            Point { cell: 0, value: 1.0 },
            Point { cell: 1, value: 100.0 },
            Point { cell: 0, value: 3.0 },
            Point { cell: 1, value: 300.0 },
            Point { cell: 2, value: 7.0 },
        ]);
        assert_eq!(u, vec![-0.25, -0.25, 0.25, 0.25, 0.0]);
        // against the definition: 1 + the values below + half the others equal, with
        // many ties, a -0.0 beside 0.0, in every order
        for seed in 0..20_u64 {
            let values: Vec<f64> = (0..50_u64)
                .map(|i| match (i * 7919 + seed * 104_729) % 13 {
                    0 => -0.0,
                    k => (k % 5) as f64 - 2.0,
                })
                .collect();
            let m = values.len() as f64;
            let want: Vec<f64> = values
                .iter()
                .map(|x| {
                    let below = values.iter().filter(|y| *y < x).count() as f64;
                    let equal = values.iter().filter(|y| *y == x).count() as f64;
                    (1.0 + below + (equal - 1.0) / 2.0 - 0.5) / m - 0.5
                })
                .collect();
            assert_eq!(centred_ranks_of(&values), want, "seed {seed}");
        }
        // Kolmogorov's tail at its textbook points
        assert!((kolmogorov_tail(1.3581) - 0.05).abs() < 1e-3);
        assert!((kolmogorov_tail(1.6276) - 0.01).abs() < 1e-3);
    }
}
