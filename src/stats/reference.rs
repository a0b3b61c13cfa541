//! Test support: the numpy/scipy values of `tests/data/stats/reference.json`, produced
//! by `reference.py` next to it, and the comparison the tests make with them.

use std::sync::LazyLock;

use serde_json::Value;

use super::observations::Observations;
use crate::vocab::MeanKind;

pub(crate) static REFERENCE: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("../../tests/data/stats/reference.json"))
        .expect("reference.json is valid JSON")
});

/// Relative tolerance of every comparison with scipy. docs/statistics.md (One cell) asks for 6
/// significant digits; the tests hold the code to 9.
pub(crate) const RTOL: f64 = 1e-9;

/// Asserts `actual` agrees with `expected` to [`RTOL`] (absolutely, when expected is 0).
#[track_caller]
pub(crate) fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(expected.is_finite(), "{what}: the reference value {expected} is not finite");
    let error = (actual - expected).abs();
    let scale = if expected == 0.0 { 1.0 } else { expected.abs() };
    assert!(
        error <= RTOL * scale,
        "{what}: got {actual}, scipy says {expected} (relative error {:e})",
        error / scale
    );
}

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
