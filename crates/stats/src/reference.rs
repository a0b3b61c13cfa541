//! Test support: the numpy/scipy values of `tests/data/stats/reference.json`, produced
//! by `reference.py` next to it, and the comparison the tests make with them; and the
//! oracles, the plain computations that the tests hold a faster form of margin's to.

use std::sync::LazyLock;

use serde_json::Value;

use super::elementary::{absolute_deviations, deviations_from, median_in_place};
use super::observations::Observations;
pub(crate) use crate::tolerance::assert_close;
use vocab::MeanKind;

pub(crate) static REFERENCE: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../../tests/data/stats/reference.json"))
        .expect("reference.json is valid JSON")
});

/// A number of the reference.
#[track_caller]
pub(crate) fn number(value: &Value) -> f64 {
    value.as_f64().expect("a number in reference.json")
}

/// Degrees of freedom of the reference, where null stands for ∞ (the normal limit).
#[track_caller]
pub(crate) fn df(value: &Value) -> f64 {
    if value.is_null() { f64::INFINITY } else { number(value) }
}

/// The reference's cell `name` as a sample.
pub(crate) fn sample(name: &str) -> Observations {
    let cell = &REFERENCE["cells"][name];
    let values: Vec<f64> = cell["values"].as_array().expect("values").iter().map(number).collect();
    let kind = match cell["kind"].as_str() {
        Some("harmonic") => MeanKind::Harmonic,
        _ => MeanKind::Arithmetic,
    };
    Observations::new(&values, kind).expect("reference cells are valid samples")
}

/// The entries of a top-level list of the reference.
pub(crate) fn entries(key: &str) -> &'static [Value] {
    REFERENCE[key].as_array().expect("a list in reference.json")
}

/// Median absolute deviation from `median`, the values' median, unscaled, by selection:
/// the reference for [`crate::elementary::mad_of_sorted`].
pub(crate) fn mad_about(values: &[f64], median: f64) -> f64 {
    median_in_place(&mut deviations_from(values, median))
}

/// 0.6745·|x − median|/MAD for every value, `None` when MAD = 0, by selection: the
/// reference for [`crate::outliers::modified_z_scores_sorted`].
pub(crate) fn modified_z_scores(values: &[f64]) -> Option<Vec<f64>> {
    let deviations = absolute_deviations(values);
    let mad = median_in_place(&mut deviations.clone());
    (mad > 0.0).then(|| deviations.iter().map(|d| crate::outliers::MODIFIED_Z_SCALE * d / mad).collect())
}

/// Cumulative distribution function of Student's t at `x` (df may be infinite), from the
/// tail function margin's p-values use: what the tests check against scipy.
pub(crate) fn t_cdf(x: f64, df: f64) -> Option<f64> {
    let tail = crate::dist::upper_tail(x.abs(), df)?;
    Some(if x <= 0.0 { tail } else { 1.0 - tail })
}
