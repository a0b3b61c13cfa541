//! One effect over several contexts (docs/statistics.md, Effects across the matrix): the
//! log-ratios of a compared level in each combination of the other factors pooled into a
//! geometric-mean ratio with its interval, and whether the effect differs between them.
//!
//! Each context i gives y_i = ln(ratio_i) with variance v_i estimated on ν_i degrees of
//! freedom; v_i = c_i·σ_i², where c_i depends only on the trial counts (1/n_A + 1/n_B for
//! independent trials, 1/k for k pairs) and σ_i² is the context's squared relative spread.
//! With the contexts' own weights w_i = 1/v_i, W = Σw_i and ȳ = Σw_i·y_i / W:
//! - Cochran's Q = Σw_i(y_i − ȳ)², on k − 1 df; I² = max(0, (Q − (k − 1)) / Q);
//! - DerSimonian–Laird's between-context variance τ² = max(0, (Q − (k − 1)) / (W − Σw_i²/W));
//! - whether the effect differs: Welch's (1951) test of equal means under unequal,
//!   estimated variances, F = (Q/(k − 1)) / (1 + 2(k − 2)/(k² − 1)·A) on k − 1 and
//!   (k² − 1)/(3A) df, A = Σ(1 − w_i/W)²/ν_i;
//! - the main effect and its interval: Hartung–Knapp's, with the spread pooled over the
//!   contexts, so the weights are ω_i = 1/c_i (the common spread cancels):
//!   ȳ_ω ± t(1 − α/2, k − 1)·√(Σω_i(y_i − ȳ_ω)² / ((k − 1)·Σω_i)); its scale comes from the
//!   scatter of the y_i, so a true difference between contexts (τ²) widens it.
//!
//! Also computed, for the calibration suite's record of why they are not reported:
//! Cochran's test P(χ²(k − 1) > Q), the fixed-effect interval ȳ ± z/√W, and
//! Hartung–Knapp over the contexts' own random-effects weights 1/(v_i + τ²).
//!
//! Why (measured by `margin calibrate`, docs/statistics.md): the v_i come from 3–10
//! trials a cell, so the own weights are noisy and W is too large on average
//! (E[1/v̂] > 1/v). Cochran's χ² test then calls equal effects different more often than
//! α, the fixed-effect interval is too narrow, and even Hartung–Knapp over the own weights
//! covers 90–93 % with 5–8 contexts; Welch's F corrects the test for the variances'
//! degrees of freedom, and weights from the pooled spread are exact under equal effects
//! and equal spreads (Hartung–Knapp is exact when the variances are known up to one
//! common factor).

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF, FisherSnedecor};

use super::dist;

/// One context's log-ratio: estimate, variance, the variance's degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogRatio {
    pub estimate: f64,
    pub variance: f64,
    pub df: f64,
    /// c_i: the variance per unit of squared relative spread (1/n_A + 1/n_B, or 1/k).
    pub per_spread: f64,
}

/// The pooled effect of k ≥ 2 contexts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pooled {
    pub contexts: usize,
    /// exp(ȳ_ω): the geometric-mean ratio, weighted by the pooled-spread precision.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub q: f64,
    /// P(χ²(k − 1) > Q): Cochran's test, which takes the v_i as known.
    pub q_p: f64,
    /// The fixed-effect interval exp(ȳ ± z/√W), which takes them as known too (kept for
    /// the calibration suite, which measures why it is not the one reported).
    pub fixed_low: f64,
    pub fixed_high: f64,
    /// Hartung–Knapp over the contexts' own random-effects weights (for the record).
    pub own_low: f64,
    pub own_high: f64,
    /// I² as a fraction.
    pub i2: f64,
    pub tau2: f64,
    /// Welch's F test that every context has the same effect.
    pub f: f64,
    pub f_df: (f64, f64),
    pub p_differs: f64,
}

/// Pools the contexts' log-ratios; `None` for fewer than two, a variance that is not
/// positive and finite, or a degenerate distribution.
pub fn pool(contexts: &[LogRatio], confidence: f64) -> Option<Pooled> {
    let k = contexts.len();
    let ok = |c: &LogRatio| {
        c.estimate.is_finite()
            && c.variance > 0.0
            && c.variance.is_finite()
            && c.df > 0.0
            && c.per_spread > 0.0
            && c.per_spread.is_finite()
    };
    if k < 2 || !contexts.iter().all(ok) {
        return None;
    }
    let kf = k as f64;
    let w: Vec<f64> = contexts.iter().map(|c| 1.0 / c.variance).collect();
    let weighted_mean = |w: &[f64]| {
        let total: f64 = w.iter().sum();
        (contexts.iter().zip(w).map(|(c, w)| w * c.estimate).sum::<f64>() / total, total)
    };
    let scatter = |w: &[f64], centre: f64| -> f64 {
        contexts.iter().zip(w).map(|(c, w)| w * (c.estimate - centre).powi(2)).sum()
    };
    let (fixed, total) = weighted_mean(&w);
    let q = scatter(&w, fixed);
    let i2 = if q > 0.0 { ((q - (kf - 1.0)) / q).max(0.0) } else { 0.0 };
    let sum_sq: f64 = w.iter().map(|w| w * w).sum();
    let tau2 = ((q - (kf - 1.0)) / (total - sum_sq / total)).max(0.0);

    let t = dist::t_quantile(1.0 - (1.0 - confidence) / 2.0, kf - 1.0)?;
    let hartung_knapp = |w: &[f64]| {
        let (centre, total) = weighted_mean(w);
        let se = (scatter(w, centre) / ((kf - 1.0) * total)).sqrt();
        (centre, (centre - t * se).exp(), (centre + t * se).exp())
    };
    let omega: Vec<f64> = contexts.iter().map(|c| 1.0 / c.per_spread).collect();
    let (centre, low, high) = hartung_knapp(&omega);
    let w_re: Vec<f64> = contexts.iter().map(|c| 1.0 / (c.variance + tau2)).collect();
    let (_, own_low, own_high) = hartung_knapp(&w_re);

    let a: f64 = contexts.iter().zip(&w).map(|(c, w)| (1.0 - w / total).powi(2) / c.df).sum();
    let f = (q / (kf - 1.0)) / (1.0 + 2.0 * (kf - 2.0) / (kf * kf - 1.0) * a);
    let df2 = (kf * kf - 1.0) / (3.0 * a);
    let p_differs = f_sf(f, kf - 1.0, df2)?;
    let q_p = ChiSquared::new(kf - 1.0).ok()?.sf(q).clamp(0.0, 1.0);
    let z = dist::normal_quantile(1.0 - (1.0 - confidence) / 2.0)?;
    let fixed_se = (1.0 / total).sqrt();
    Some(Pooled {
        contexts: k,
        ratio: centre.exp(),
        low,
        high,
        own_low,
        own_high,
        q,
        q_p,
        fixed_low: (fixed - z * fixed_se).exp(),
        fixed_high: (fixed + z * fixed_se).exp(),
        i2,
        tau2,
        f,
        f_df: (kf - 1.0, df2),
        p_differs,
    })
}

/// P(F > f) for Fisher's F on (d1, d2) df; `None` for arguments statrs would reject.
fn f_sf(f: f64, d1: f64, d2: f64) -> Option<f64> {
    if !(f >= 0.0 && f.is_finite() && d1 > 0.0 && d2 > 0.0 && d1.is_finite()) {
        return None;
    }
    let d2 = d2.min(1e8);
    FisherSnedecor::new(d1, d2).ok().map(|d| d.sf(f).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::assert_close;

    static ANSWERS: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| {
        serde_json::from_str(include_str!("../../../tests/data/stats/answers.json")).expect("answers.json")
    });

    fn f(v: &serde_json::Value) -> f64 {
        v.as_f64().expect("a number")
    }

    /// Against `tests/data/stats/answers.py`: the same formulas in plain Python, with its
    /// own incomplete beta function for the t quantile and the F tail.
    #[test]
    fn pooling_agrees_with_the_independent_reference() {
        for case in ANSWERS["pool"].as_array().unwrap() {
            let contexts: Vec<LogRatio> = case["contexts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| LogRatio {
                    estimate: f(&c[0]),
                    variance: f(&c[1]),
                    df: f(&c[2]),
                    per_spread: f(&c[3]),
                })
                .collect();
            let name = case["name"].as_str().unwrap();
            let p = pool(&contexts, 0.95).unwrap();
            let e = &case["expected"];
            for (what, got) in [
                ("ratio", p.ratio),
                ("low", p.low),
                ("high", p.high),
                ("q", p.q),
                ("fixed_low", p.fixed_low),
                ("fixed_high", p.fixed_high),
                ("own_low", p.own_low),
                ("own_high", p.own_high),
                ("i2", p.i2),
                ("tau2", p.tau2),
                ("f", p.f),
                ("df2", p.f_df.1),
            ] {
                assert_close(got, f(&e[what]), &format!("{name}: {what}"));
            }
            // the F tail of the reference is a continued fraction of its own: 1e-7 relative
            for (what, got) in [("p_differs", p.p_differs), ("q_p", p.q_p)] {
                let want = f(&e[what]);
                assert!((got - want).abs() <= 1e-7 * want.max(1e-12), "{name}: {what} {got} against {want}");
            }
        }
    }

    #[test]
    fn fewer_than_two_contexts_or_a_zero_variance_pool_nothing() {
        let one = LogRatio { estimate: 0.1, variance: 0.01, df: 8.0, per_spread: 0.4 };
        assert!(pool(&[one], 0.95).is_none());
        assert!(pool(&[one, LogRatio { variance: 0.0, ..one }], 0.95).is_none());
        // identical contexts: no scatter, no heterogeneity, a zero-width interval at the effect
        let p = pool(&[one, one, one], 0.95).unwrap();
        assert_eq!((p.q, p.i2, p.tau2), (0.0, 0.0, 0.0));
        assert!((p.ratio - 0.1f64.exp()).abs() < 1e-12 && p.p_differs == 1.0);
    }
}
