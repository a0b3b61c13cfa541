//! Test support: the numpy/scipy values of `tests/data/stats/reference.json`, produced
//! by `reference.py` next to it, and the comparison the tests make with them.

use std::sync::LazyLock;

use serde_json::Value;

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
