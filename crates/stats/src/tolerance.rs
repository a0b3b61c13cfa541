//! The tolerance every comparison with a reference computation (numpy, scipy, plain
//! Python) is held to: this crate's tests and margin's report tests use it, so it is
//! compiled in, not only under `cfg(test)`.

/// Relative tolerance of every comparison with scipy. docs/statistics.md (One cell) asks for 6
/// significant digits; the tests hold the code to 9.
pub const RTOL: f64 = 1e-9;

/// Asserts `actual` agrees with `expected` to [`RTOL`] (absolutely, when expected is 0).
#[track_caller]
pub fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!(expected.is_finite(), "{what}: the reference value {expected} is not finite");
    let error = (actual - expected).abs();
    let scale = if expected == 0.0 { 1.0 } else { expected.abs() };
    assert!(
        error <= RTOL * scale,
        "{what}: got {actual}, scipy says {expected} (relative error {:e})",
        error / scale
    );
}
