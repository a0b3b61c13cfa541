//! Laws the statistics obey for any input, checked with proptest.

use proptest::prelude::*;

use super::StatsSettings;
use super::cell::analyze_cell;
use super::compare::{RatioInterval, compare_independent, compare_paired, holm, trials_to_settle};
use super::describe::summarize;
use super::interval::mean_interval;
use super::observations::Observations;
use super::runs::runs_needed;
use super::stability::spearman_trend;
use super::verdict::{Vocabulary, Wording, verdict};
use vocab::{Better, MeanKind};

const WORDING: Wording =
    Wording { baseline: "A", level: "B", better: Some(Better::Lower), vocabulary: Vocabulary::Speed };

fn kind() -> impl Strategy<Value = MeanKind> {
    prop_oneof![Just(MeanKind::Arithmetic), Just(MeanKind::Harmonic)]
}

/// Any finite number: huge, tiny, negative, zero.
fn finite() -> impl Strategy<Value = f64> {
    prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL | prop::num::f64::ZERO
}

/// Values a benchmark could report: positive, over nine orders of magnitude.
fn measurement() -> impl Strategy<Value = f64> {
    (1e-3..1e6_f64).prop_flat_map(|centre| (0.5..1.5_f64).prop_map(move |f| centre * f))
}

proptest! {
    /// The median by selection is the median of the sorted values, to the bit, for any
    /// length, ties and signed zeros included; the MAD from it likewise, by selection and
    /// walked out from the median of the sorted values.
    #[test]
    fn the_selected_median_is_the_sorted_median(
        values in prop::collection::vec(prop_oneof![finite(), Just(0.0), Just(-0.0), Just(1.0)], 1..40),
    ) {
        use super::elementary::{mad, mad_of_sorted, median_in_place, median_of_sorted, sorted};
        use super::reference::mad_about;
        let median = median_of_sorted(&sorted(&values));
        prop_assert_eq!(median_in_place(&mut values.clone()).to_bits(), median.to_bits());
        let deviations: Vec<f64> = values.iter().map(|v| (v - median).abs()).collect();
        let by_sorting = median_of_sorted(&sorted(&deviations));
        prop_assert_eq!(mad(&values).to_bits(), by_sorting.to_bits());
        prop_assert_eq!(mad_about(&values, median).to_bits(), by_sorting.to_bits());
        prop_assert_eq!(mad_of_sorted(&sorted(&values), median).to_bits(), by_sorting.to_bits());
    }

    /// A cell's modified z-scores from its values sorted once are the selection's, to the
    /// bit, on any finite values; and on a harmonic metric's reciprocals, the values'
    /// order turned around is the reciprocals' sorted order.
    #[test]
    fn modified_z_scores_from_the_sorted_values_are_the_selections(
        values in prop::collection::vec(prop_oneof![finite(), Just(0.0), Just(-0.0), Just(1.0)], 1..40),
        rates in prop::collection::vec(prop_oneof![measurement(), Just(1.0), Just(2.0)], 1..40),
    ) {
        use super::elementary::{ascending, sorted};
        use super::outliers::modified_z_scores_sorted;
        use super::reference::modified_z_scores;
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        let z = |v: &[f64]| modified_z_scores(v).map(|z| bits(&z));
        let z_sorted = |v: &[f64], s: &[f64]| modified_z_scores_sorted(v, s).map(|z| bits(&z));
        prop_assert_eq!(z_sorted(&values, &sorted(&values)), z(&values));
        let harmonic = Observations::new(&rates, MeanKind::Harmonic).unwrap();
        let reciprocals = harmonic.analysed();
        let turned: Vec<f64> = ascending(&rates).iter().rev().map(|&i| reciprocals[i as usize]).collect();
        prop_assert_eq!(bits(&turned), bits(&sorted(reciprocals)));
        prop_assert_eq!(z_sorted(reciprocals, &turned), z(reciprocals));
    }

    #[test]
    fn nothing_panics_on_finite_input(
        a in prop::collection::vec(finite(), 1..24),
        b in prop::collection::vec(finite(), 1..24),
        kind in kind(),
    ) {
        let settings = StatsSettings::default();
        let _ = spearman_trend(&a);
        let _ = runs_needed(a[0].abs(), b[0].abs(), 0.95);
        let (Ok(sa), Ok(sb)) = (Observations::new(&a, kind), Observations::new(&b, kind)) else {
            return Ok(());
        };
        let _ = analyze_cell(&sa, &settings)?;
        let paired_b = Observations::new(&b.iter().cycle().take(a.len()).copied().collect::<Vec<_>>(), kind)?;
        for comparison in [
            compare_independent(&sa, &sb, &settings),
            compare_paired(&sa, &paired_b, &settings),
        ]
        .into_iter()
        .flatten()
        {
            let _ = verdict(&comparison, &settings, &WORDING);
            let _ = trials_to_settle(&comparison, &settings);
        }
    }

    #[test]
    fn the_interval_contains_the_mean(
        values in prop::collection::vec(measurement(), 2..30),
        kind in kind(),
        confidence in 0.5..0.999_f64,
    ) {
        let sample = Observations::new(&values, kind)?;
        let interval = mean_interval(&sample, confidence).expect("n >= 2");
        let mean = summarize(&sample, &StatsSettings::default())?.mean;
        prop_assert!(interval.low <= mean && mean <= interval.high, "{interval:?} vs {mean}");
    }

    #[test]
    fn the_ratio_interval_contains_the_ratio(
        a in prop::collection::vec(measurement(), 2..12),
        b in prop::collection::vec(measurement(), 2..12),
        kind in kind(),
    ) {
        let settings = StatsSettings::default();
        let (a, b) = (Observations::new(&a, kind)?, Observations::new(&b, kind)?);
        let paired_b = Observations::new(&b.values().iter().cycle().take(a.len()).copied().collect::<Vec<_>>(), kind)?;
        for comparison in [compare_independent(&a, &b, &settings)?, compare_paired(&a, &paired_b, &settings)?] {
            if let RatioInterval::Bounded { low, high } = comparison.interval {
                let r = comparison.ratio;
                // Fieller's bounds solve a quadratic: allow its rounding, not more.
                let slack = 1e-12 * r;
                prop_assert!(low - slack <= r && r <= high + slack, "{low} {r} {high}");
            }
        }
    }

    #[test]
    fn holm_never_lowers_a_p_value_nor_exceeds_one(
        p in prop::collection::vec(0.0..=1.0_f64, 0..30),
    ) {
        let adjusted = holm(&p)?;
        prop_assert_eq!(adjusted.len(), p.len());
        for (raw, adj) in p.iter().zip(&adjusted) {
            prop_assert!(raw <= adj && *adj <= 1.0, "{raw} -> {adj}");
        }
    }
}
