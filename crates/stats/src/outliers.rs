//! Outliers (docs/statistics.md, Outliers): which trials a rule flags, and which of those are set aside.
//!
//! Flagged trials are labelled in the report; only some are set aside (left out of the
//! statistics): none below [`MIN_N_TO_SET_ASIDE`] trials, and never more than
//! [`MAX_SET_ASIDE`] of a cell. When more are flagged than may go, the most extreme go
//! first (ties: the earlier trial), so a cap never keeps a wild value while dropping a
//! milder one. Nothing is deleted: the caller still holds every value.
//!
//! The default rule, [`OutlierRule::Studentized`], decides what is set aside by a cutoff
//! whose false-flag rate on clean normal data is known at every n (at most `rate` per
//! cell, by construction); the MAD rule's flags label values for the reader beside it.

use serde::Serialize;

use super::elementary::{mad_of_sorted, median_of_sorted, quantile_of_sorted, sorted};
use super::observations::Observations;

/// Cells smaller than this only label their outliers (docs/statistics.md, Outliers).
pub(crate) const MIN_N_TO_SET_ASIDE: usize = 5;
/// At most this fraction of a cell is set aside, rounded down.
pub(crate) const MAX_SET_ASIDE: f64 = 0.20;
/// Iglewicz and Hoaglin's constant: 0.6745·(x − median)/MAD is a z-score for normal data.
pub(crate) const MODIFIED_Z_SCALE: f64 = 0.6745;

/// How outliers are recognised (`analysis.outliers` of the experiment file).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "method", rename_all = "lowercase")]
pub enum OutlierRule {
    /// Modified z-score 0.6745·|x − median|/MAD above `cutoff` (Iglewicz–Hoaglin: 3.5).
    Mad { cutoff: f64 },
    /// Outside Tukey's fences Q1 − cutoff·IQR, Q3 + cutoff·IQR (usually 1.5), with
    /// linearly interpolated quartiles.
    Iqr { cutoff: f64 },
    /// Keep every trial.
    None,
    /// The externally studentized deviation of the most extreme value from the others,
    /// (x_i − mean₋ᵢ) / (sd₋ᵢ·√(1 + 1/(n − 1))), which is exactly Student's t with n − 2
    /// df for normal data, beyond the Bonferroni cutoff t_{n−2, 1 − rate/(2n)}: a clean
    /// cell loses a value with probability at most `rate`, at every n. Repeated on the
    /// values left, within the cap. Values beyond the MAD rule's 3.5 are labelled too.
    Studentized { rate: f64 },
}

/// The default rule's chance that a clean normal cell loses a value (docs/statistics.md,
/// Outliers: 1 % per cell; at most 2 % of A/A experiments of two cells).
pub const DEFAULT_FALSE_FLAG_RATE: f64 = 0.01;
/// The MAD rule's usual cutoff (Iglewicz and Hoaglin), also the labels of the default rule.
pub const MAD_CUTOFF: f64 = 3.5;

impl Default for OutlierRule {
    fn default() -> Self {
        OutlierRule::Studentized { rate: DEFAULT_FALSE_FLAG_RATE }
    }
}

impl OutlierRule {
    /// The rule's cutoff, if it has one.
    pub fn cutoff(&self) -> Option<f64> {
        match *self {
            OutlierRule::Mad { cutoff } | OutlierRule::Iqr { cutoff } => Some(cutoff),
            OutlierRule::None | OutlierRule::Studentized { .. } => None,
        }
    }

    /// Whether the values the rule selects leave the statistics unless the experiment
    /// says otherwise: yes for the calibrated rule, no for the MAD and IQR rules, whose
    /// false-flag rate at small n is unknown and large (docs/statistics.md, Outliers).
    pub fn sets_aside_by_default(&self) -> bool {
        matches!(self, OutlierRule::Studentized { .. })
    }
}

/// What a rule found in one cell. Indices are positions in the sample, ascending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outliers {
    pub rule: OutlierRule,
    /// Every trial beyond the rule's cutoff: labelled in the report.
    pub flagged: Vec<usize>,
    /// The flagged trials left out of the statistics; a subset of `flagged`.
    pub set_aside: Vec<usize>,
    /// The rule's spread (MAD or IQR) is zero, as with quantised output: every value off
    /// the median would count as infinitely far, so the rule was not applied.
    pub zero_spread: bool,
}

/// Applies `rule` to the sample's values on its analysis scale (the reciprocals of a
/// harmonic metric).
#[cfg(test)]
pub(crate) fn find_outliers(sample: &Observations, rule: &OutlierRule) -> Outliers {
    find_outliers_scored(sample, rule, crate::reference::modified_z_scores(sample.analysed()).as_deref())
}

/// `find_outliers` given the values' modified z-scores (`modified_z`:
/// [`modified_z_scores_sorted`] of the sample on its analysis scale), which a cell's analysis
/// also flags its first trial by.
pub(crate) fn find_outliers_scored(
    sample: &Observations,
    rule: &OutlierRule,
    modified_z: Option<&[f64]>,
) -> Outliers {
    let values = sample.analysed();
    if let OutlierRule::Studentized { rate } = *rule {
        let (set_aside, zero_spread) = studentized_selection(values, rate);
        let labelled = modified_z.unwrap_or_default();
        let flagged = (0..values.len())
            .filter(|i| set_aside.contains(i) || labelled.get(*i).is_some_and(|&z| z > MAD_CUTOFF))
            .collect();
        return Outliers { rule: *rule, flagged, set_aside, zero_spread };
    }
    let scores = match *rule {
        OutlierRule::Mad { cutoff } => modified_z.map(|s| (s.to_vec(), cutoff)),
        OutlierRule::Iqr { cutoff } => fence_scores(values, cutoff).map(|s| (s, 0.0)),
        OutlierRule::None | OutlierRule::Studentized { .. } => {
            return Outliers { rule: *rule, flagged: Vec::new(), set_aside: Vec::new(), zero_spread: false };
        }
    };
    let Some((scores, cutoff)) = scores else {
        return Outliers { rule: *rule, flagged: Vec::new(), set_aside: Vec::new(), zero_spread: true };
    };
    let flagged: Vec<usize> = (0..values.len()).filter(|&i| scores[i] > cutoff).collect();
    let allowed = allowed_to_set_aside(values.len());
    let mut most_extreme_first = flagged.clone();
    most_extreme_first.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]).then(i.cmp(&j)));
    let mut set_aside: Vec<usize> = most_extreme_first.into_iter().take(allowed).collect();
    set_aside.sort_unstable();
    Outliers { rule: *rule, flagged, set_aside, zero_spread: false }
}

/// How many of `n` values may be set aside: none below [`MIN_N_TO_SET_ASIDE`], else at
/// most [`MAX_SET_ASIDE`] of them, rounded down.
fn allowed_to_set_aside(n: usize) -> usize {
    if n >= MIN_N_TO_SET_ASIDE { (n as f64 * MAX_SET_ASIDE).floor() as usize } else { 0 }
}

/// The Bonferroni cutoff of the studentized deviation among `n` values: the
/// 1 − rate/(2n) quantile of t with n − 2 df. For normal data each of the n deviations
/// is exactly t(n − 2), so the chance that any exceeds it is at most `rate`.
pub(crate) fn studentized_cutoff(n: usize, rate: f64) -> Option<f64> {
    if n < 3 {
        return None;
    }
    super::dist::t_quantile(1.0 - rate / (2.0 * n as f64), n as f64 - 2.0)
}

/// Every value's externally studentized deviation from the others,
/// |x_i − mean₋ᵢ| / (sd₋ᵢ·√(1 + 1/(n − 1))), from the sample's mean x̄ and sum of squares
/// S: x_i − mean₋ᵢ = n/(n − 1)·(x_i − x̄) and (n − 2)·sd₋ᵢ² = S − n/(n − 1)·(x_i − x̄)².
/// `None` for a value whose others are all equal (sd₋ᵢ = 0: no spread to judge it by).
pub(crate) fn studentized_deviations(values: &[f64]) -> Vec<Option<f64>> {
    let n = values.len() as f64;
    if values.len() < 3 {
        return vec![None; values.len()];
    }
    let centre = super::elementary::mean(values);
    let ss: f64 = values.iter().map(|x| (x - centre).powi(2)).sum();
    values
        .iter()
        .map(|&x| {
            let d = x - centre;
            let others_ss = ss - n / (n - 1.0) * d * d;
            // relative to S: a rounding residue of an exact zero is zero
            let others_var = others_ss / (n - 2.0);
            (others_ss > ss * 1e-12)
                .then(|| (n / (n - 1.0) * d).abs() / (others_var.sqrt() * (1.0 + 1.0 / (n - 1.0)).sqrt()))
        })
        .collect()
}

/// The values the studentized rule sets aside (ascending indices), and whether it stopped
/// because the others of the most extreme value had no spread. The most extreme value of
/// those left is tested against the cutoff for their number, and the test repeats on the
/// rest while the cap allows.
fn studentized_selection(values: &[f64], rate: f64) -> (Vec<usize>, bool) {
    let allowed = allowed_to_set_aside(values.len());
    let mut left: Vec<usize> = (0..values.len()).collect();
    let mut out = Vec::new();
    let mut zero_spread = false;
    while out.len() < allowed {
        let here: Vec<f64> = left.iter().map(|&i| values[i]).collect();
        let scores = studentized_deviations(&here);
        // the most extreme by distance from the mean (the order of the scores too, where
        // they exist); ties: the earlier trial
        let centre = super::elementary::mean(&here);
        let Some(k) = (0..here.len())
            .max_by(|&a, &b| (here[a] - centre).abs().total_cmp(&(here[b] - centre).abs()).then(b.cmp(&a)))
        else {
            break;
        };
        let Some(score) = scores[k] else {
            zero_spread = (here[k] - centre).abs() > 0.0;
            break;
        };
        match studentized_cutoff(here.len(), rate) {
            Some(cutoff) if score > cutoff => {
                out.push(left.remove(k));
            }
            _ => break,
        }
    }
    out.sort_unstable();
    (out, zero_spread)
}

/// 0.6745·|x − median|/MAD for every value of `values`, whose sorted copy is at hand
/// (`sorted`); `None` when MAD = 0. The median and the MAD are read from the sorted
/// values.
pub(crate) fn modified_z_scores_sorted(values: &[f64], sorted: &[f64]) -> Option<Vec<f64>> {
    let median = median_of_sorted(sorted);
    let mad = mad_of_sorted(sorted, median);
    (mad > 0.0).then(|| values.iter().map(|v| MODIFIED_Z_SCALE * (v - median).abs() / mad).collect())
}

/// How far each value lies outside Tukey's fences, in IQRs (≤ 0 inside); `None` when
/// IQR = 0.
fn fence_scores(values: &[f64], cutoff: f64) -> Option<Vec<f64>> {
    let sorted = sorted(values);
    let (q1, q3) = (quantile_of_sorted(&sorted, 0.25), quantile_of_sorted(&sorted, 0.75));
    let iqr = q3 - q1;
    let (low, high) = (q1 - cutoff * iqr, q3 + cutoff * iqr);
    (iqr > 0.0).then(|| values.iter().map(|&x| (low - x).max(x - high) / iqr).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{entries, number, sample};
    use vocab::MeanKind;

    const MAD: OutlierRule = OutlierRule::Mad { cutoff: MAD_CUTOFF };

    fn indices(value: &serde_json::Value) -> Vec<usize> {
        value.as_array().expect("a list of indices").iter().map(|i| i.as_u64().unwrap() as usize).collect()
    }

    #[test]
    fn selections_match_the_reference() {
        for case in entries("outliers") {
            let name = case["cell"].as_str().unwrap();
            let cutoff = number(&case["cutoff"]);
            let rule = match case["rule"].as_str() {
                Some("mad") => OutlierRule::Mad { cutoff },
                _ => OutlierRule::Iqr { cutoff },
            };
            let found = find_outliers(&sample(name), &rule);
            let what = format!("{name} by {rule:?}");
            assert_eq!(found.flagged, indices(&case["flagged"]), "{what}: flagged");
            assert_eq!(found.set_aside, indices(&case["set_aside"]), "{what}: set aside");
            assert_eq!(Some(found.zero_spread), case["skipped"].as_bool(), "{what}: skipped");
        }
    }

    #[test]
    fn at_most_a_fifth_goes_and_the_most_extreme_first() {
        // Ten trials, three far out: only two (20 %) may go, the two farthest.
        let values = [10.0, 10.1, 9.9, 10.0, 30.0, 10.2, 9.8, 50.0, 10.1, 40.0];
        let sample = Observations::new(&values, MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&sample, &MAD);
        assert_eq!(found.flagged, vec![4, 7, 9]);
        assert_eq!(found.set_aside, vec![7, 9]);
    }

    #[test]
    fn small_cells_only_label() {
        let sample = Observations::new(&[10.0, 10.1, 9.9, 30.0], MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&sample, &MAD);
        assert_eq!((found.flagged, found.set_aside), (vec![3], vec![]));
    }

    #[test]
    fn harmonic_metrics_are_judged_on_the_reciprocals() {
        // 96 MB/s is 3.37 modified z-scores from the other rates, but as time per MB
        // (1/96 s) it is 3.50 from the others: the rule sees it only on that scale.
        let rates = [100.0, 101.0, 99.0, 100.5, 99.5, 96.0];
        let rule = MAD;
        let as_rates = Observations::new(&rates, MeanKind::Arithmetic).unwrap();
        let as_times = Observations::new(&rates, MeanKind::Harmonic).unwrap();
        assert_eq!(find_outliers(&as_rates, &rule).flagged, Vec::<usize>::new());
        assert_eq!(find_outliers(&as_times, &rule).flagged, vec![5]);
    }

    #[test]
    fn rule_none_keeps_everything() {
        let found = find_outliers(&sample("seeks_domu"), &OutlierRule::None);
        assert!(found.flagged.is_empty() && found.set_aside.is_empty() && !found.zero_spread);
    }

    /// Plain O(n²) leave-one-out, as the rule's formula reads: (x_i − mean₋ᵢ) /
    /// (sd₋ᵢ·√(1 + 1/(n − 1))), from the others' own mean and sd.
    fn leave_one_out(values: &[f64], i: usize) -> f64 {
        let others: Vec<f64> = values.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, &x)| x).collect();
        let m = others.len() as f64;
        let centre = others.iter().sum::<f64>() / m;
        let sd = (others.iter().map(|x| (x - centre).powi(2)).sum::<f64>() / (m - 1.0)).sqrt();
        (values[i] - centre) / (sd * (1.0 + 1.0 / m).sqrt())
    }

    #[test]
    fn the_studentized_deviation_is_the_leave_one_out_formula() {
        let values = [10.0, 10.4, 9.7, 10.1, 12.9, 9.95, 10.2];
        for (i, score) in studentized_deviations(&values).into_iter().enumerate() {
            let direct = leave_one_out(&values, i).abs();
            assert!((score.unwrap() - direct).abs() < 1e-9 * direct.max(1.0), "{i}: {score:?} vs {direct}");
        }
        // the others all equal: no spread to judge the odd one by
        assert_eq!(studentized_deviations(&[100.0, 100.0, 100.0, 101.0])[3], None);
    }

    /// P(T > t) for Student's t with `df` degrees of freedom, by Simpson's rule on the
    /// density (independent of statrs, which margin's quantile comes from).
    fn t_upper_tail(t: f64, df: f64) -> f64 {
        let ln_gamma = |x: f64| statrs::function::gamma::ln_gamma(x);
        let c = (ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0)).exp() / (df * std::f64::consts::PI).sqrt();
        let density = |x: f64| c * (1.0 + x * x / df).powf(-(df + 1.0) / 2.0);
        // substitute x = t / u, u ∈ (0, 1]: ∫_t^∞ f(x) dx = ∫_0^1 f(t/u)·t/u² du
        let g = |u: f64| if u == 0.0 { 0.0 } else { density(t / u) * t / (u * u) };
        let steps = 20_000;
        let h = 1.0 / steps as f64;
        let mut sum = g(0.0) + g(1.0);
        for k in 1..steps {
            sum += g(k as f64 * h) * if k % 2 == 1 { 4.0 } else { 2.0 };
        }
        sum * h / 3.0
    }

    #[test]
    fn the_cutoff_leaves_rate_over_2n_in_each_tail() {
        for n in [5, 6, 10, 30] {
            let cutoff = studentized_cutoff(n, 0.01).unwrap();
            let tail = t_upper_tail(cutoff, n as f64 - 2.0);
            let nominal = 0.01 / (2.0 * n as f64);
            assert!(
                (tail - nominal).abs() < 1e-3 * nominal,
                "n = {n}: {cutoff} leaves {tail}, not {nominal}"
            );
        }
    }

    /// The false-flag rate, simulated: clean normal cells of n values, each through the
    /// rule; the share that loses a value is the rate the rule promises (Bonferroni is
    /// nearly exact this far out: at most `rate`, at least rate − rate²/2). 40 000 cells
    /// per n give a binomial SE of 0.05 % at 1 %; the tolerance is 4 SE, at a fixed seed.
    #[test]
    fn clean_normal_cells_lose_a_value_at_the_stated_rate() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(20_261_201);
        // Box–Muller, so the draws do not come from the suite's own generator
        let mut normal = || {
            let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let rule = OutlierRule::Studentized { rate: 0.01 };
        const CELLS: usize = 40_000;
        for n in [5, 10, 30] {
            let mut lost = 0;
            for _ in 0..CELLS {
                let values: Vec<f64> = (0..n).map(|_| 10.0 + 0.5 * normal()).collect();
                let sample = Observations::new(&values, MeanKind::Arithmetic).unwrap();
                lost += usize::from(!find_outliers(&sample, &rule).set_aside.is_empty());
            }
            let rate = lost as f64 / CELLS as f64;
            let se = (0.01 * 0.99 / CELLS as f64).sqrt();
            assert!((rate - 0.01).abs() < 4.0 * se, "n = {n}: {lost} of {CELLS} cells lost a value");
        }
    }

    #[test]
    fn the_studentized_rule_sets_aside_a_wild_value_and_labels_by_mad() {
        // 15.0 is 40 sd from the others: beyond t(8) at 1 − 0.01/20 (5.0)
        let values = [10.0, 10.1, 9.9, 10.0, 15.0, 10.2, 9.8, 10.05, 10.1, 9.95];
        let sample = Observations::new(&values, MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&sample, &OutlierRule::default());
        assert_eq!((found.set_aside.clone(), found.zero_spread), (vec![4], false));
        assert!(found.flagged.contains(&4));
        // two wild values in ten: the second is tested among the nine left, and goes too
        let two = [10.0, 10.1, 9.9, 10.0, 30.0, 10.2, 9.8, 11.5, 10.1, 9.95];
        let found =
            find_outliers(&Observations::new(&two, MeanKind::Arithmetic).unwrap(), &OutlierRule::default());
        assert_eq!(found.set_aside, vec![4, 7]);
        // two equally wild values mask each other: each inflates the others' sd of the
        // other (docs/statistics.md, Outliers), and both stay
        let masked = [10.0, 10.1, 9.9, 10.0, 15.0, 10.2, 9.8, 5.0, 10.1, 9.95];
        let found = find_outliers(
            &Observations::new(&masked, MeanKind::Arithmetic).unwrap(),
            &OutlierRule::default(),
        );
        assert_eq!((found.flagged, found.set_aside), (vec![4, 7], vec![]));
        // a milder one stays (3.7 sd: labelled by the MAD rule, kept by the calibrated one)
        let mild = [10.0, 10.1, 9.9, 10.0, 10.5, 10.2, 9.8, 10.05, 10.1, 9.95];
        let found =
            find_outliers(&Observations::new(&mild, MeanKind::Arithmetic).unwrap(), &OutlierRule::default());
        assert_eq!((found.flagged, found.set_aside), (vec![4], vec![]));
    }

    #[test]
    fn the_studentized_rule_needs_five_values_and_a_spread() {
        let four = Observations::new(&[10.0, 10.1, 9.9, 30.0], MeanKind::Arithmetic).unwrap();
        assert!(find_outliers(&four, &OutlierRule::default()).set_aside.is_empty());
        // quantised output: the others of the odd value are all equal
        let ties = Observations::new(&[100.0, 100.0, 100.0, 100.0, 101.0], MeanKind::Arithmetic).unwrap();
        let found = find_outliers(&ties, &OutlierRule::default());
        assert_eq!((found.set_aside, found.zero_spread), (vec![], true));
    }

    #[test]
    fn the_studentized_rule_judges_rates_on_their_reciprocals() {
        // 50 MB/s among rates near 100: as time per MB it is twice the others, far out;
        // 200 MB/s is as far as a rate but only half as far as a time.
        let slow = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 50.0];
        let fast = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 150.0];
        let rule = OutlierRule::default();
        let rate =
            |v: &[f64]| find_outliers(&Observations::new(v, MeanKind::Harmonic).unwrap(), &rule).set_aside;
        assert_eq!(rate(&slow), vec![9]);
        assert_eq!(rate(&fast), vec![9]);
        let scores = |v: &[f64], kind| studentized_deviations(Observations::new(v, kind).unwrap().analysed());
        let on_times = scores(&slow, MeanKind::Harmonic)[9].unwrap();
        let on_rates = scores(&slow, MeanKind::Arithmetic)[9].unwrap();
        assert!(on_times > on_rates, "{on_times} vs {on_rates}");
    }
}
