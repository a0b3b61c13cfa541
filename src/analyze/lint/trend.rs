//! The per-cell trend warning's test (docs/statistics.md, One cell): a monotone trend of
//! a cell's values over its repetitions, looked for within each session (each boot),
//! never across them — that boots differ is the boots' analysis's to say, not a trend.
//!
//! The statistic is Spearman's, stratified: each session's values ranked among
//! themselves against their order in it, the sessions' cross-products summed. Its p-value
//! is a permutation test that shuffles the ranks within each session (1999 seeded
//! permutations): exact whatever the values' distribution when the order within a session
//! says nothing. A cell is flagged below 1 % over the primary metrics tested in it, so
//! that at most 1 % of steady cells get a warning (`margin calibrate --scenario trend`).
//! Cells the normal approximation puts far from that (its p above 5 %) are not permuted,
//! and the permutations stop once as many were as extreme as make the p-value the
//! caller's `alpha` or more: both save the time, neither changes which cells are flagged
//! nor a flagged cell's p-value.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64;
use statrs::distribution::{ContinuousCDF, Normal};

/// A cell's false-alarm rate: its metrics' tests share it.
pub(crate) const ALPHA: f64 = 0.01;
/// The test needs this many trials in sessions of two or more.
pub(crate) const MIN_TRIALS: usize = 6;
const PERMUTATIONS: usize = 1999;
/// Above this normal-approximation p-value a cell is not permuted.
const SCREEN: f64 = 0.05;

/// A trend within sessions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Trend {
    /// Spearman's ρ within sessions: the summed cross-products over the root of the
    /// product of the summed squares (within one session, Spearman's ρ itself).
    pub rho: f64,
    /// Two-sided; above the screen, the normal approximation's.
    pub p_value: f64,
    /// The sessions tested (those with two trials or more).
    pub sessions: usize,
}

/// The trend of `values` (in the order they ran) within their sessions (`sessions[i]`:
/// value `i`'s), its p-value exact below `alpha` (the level the caller flags at), at or
/// above it only known to be so. `None` with fewer than [`MIN_TRIALS`] in sessions of two
/// or more, for a value not finite, or for values constant within every session.
pub(crate) fn within_sessions<S: PartialEq + Copy>(
    values: &[f64],
    sessions: &[S],
    seed: u64,
    alpha: f64,
) -> Option<Trend> {
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    // each session's values' centred ranks, in their order
    let mut order: Vec<S> = Vec::new();
    for s in sessions {
        if !order.contains(s) {
            order.push(*s);
        }
    }
    let strata: Vec<Vec<f64>> = order
        .iter()
        .map(|s| {
            centred_ranks(
                &values.iter().zip(sessions).filter(|(_, t)| *t == s).map(|(v, _)| *v).collect::<Vec<_>>(),
            )
        })
        .filter(|r| r.len() >= 2)
        .collect();
    if strata.iter().map(Vec::len).sum::<usize>() < MIN_TRIALS {
        return None;
    }
    let (mut sxx, mut syy, mut variance) = (0.0, 0.0, 0.0);
    for ranks in &strata {
        let n = ranks.len() as f64;
        let (xx, yy) = (n * (n * n - 1.0) / 12.0, ranks.iter().map(|r| r * r).sum::<f64>());
        (sxx, syy, variance) = (sxx + xx, syy + yy, variance + xx * yy / (n - 1.0));
    }
    if syy == 0.0 {
        return None;
    }
    let s = statistic(&strata);
    let rho = (s / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let approximate = 2.0 * Normal::standard().sf(s.abs() / variance.sqrt());
    let p_value = if approximate > SCREEN {
        approximate
    } else {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut shuffled = strata.clone();
        let p = |extreme: usize| (1 + extreme) as f64 / (1 + PERMUTATIONS) as f64;
        let mut extreme = 0;
        for _ in 0..PERMUTATIONS {
            shuffled.iter_mut().for_each(|r| r.shuffle(&mut rng));
            if statistic(&shuffled).abs() >= s.abs() - 1e-9 {
                extreme += 1;
                // the p-value only grows from here: the cell is not flagged
                if p(extreme) >= alpha {
                    break;
                }
            }
        }
        p(extreme)
    };
    Some(Trend { rho, p_value, sessions: strata.len() })
}

/// Σ over sessions of Σ (place − centre) · centred rank.
fn statistic(strata: &[Vec<f64>]) -> f64 {
    strata
        .iter()
        .map(|ranks| {
            let centre = (ranks.len() as f64 + 1.0) / 2.0;
            ranks.iter().enumerate().map(|(i, r)| (i as f64 + 1.0 - centre) * r).sum::<f64>()
        })
        .sum()
}

/// Average ranks (ties share theirs), less their mean.
fn centred_ranks(values: &[f64]) -> Vec<f64> {
    let mut by: Vec<usize> = (0..values.len()).collect();
    by.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut k = 0;
    while k < by.len() {
        let mut end = k + 1;
        while end < by.len() && values[by[end]] == values[by[k]] {
            end += 1;
        }
        for &i in &by[k..end] {
            ranks[i] = (k + end + 1) as f64 / 2.0;
        }
        k = end;
    }
    let centre = (values.len() as f64 + 1.0) / 2.0;
    ranks.iter().map(|r| r - centre).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(of: &[u32]) -> Vec<u32> {
        of.to_vec()
    }

    #[test]
    fn one_session_is_spearmans_rho() {
        // four neighbours swapped: Σd² = 6, ρ = 1 − 6·6/(8·63) = 0.9285714 (scipy's spearmanr)
        let t =
            within_sessions(&[1.0, 3.0, 2.0, 5.0, 4.0, 7.0, 6.0, 8.0], &names(&[0; 8]), 1, ALPHA).unwrap();
        assert!((t.rho - 0.928_571_4).abs() < 1e-6, "{t:?}");
        // the exact two-sided p of |ρ| ≥ 0.929 at n = 8 is 0.0022: permuted, below 1 %
        assert!(t.p_value < ALPHA, "{t:?}");
        assert_eq!(t.sessions, 1);
    }

    #[test]
    fn boots_that_differ_are_no_trend() {
        // 3 trials in one boot, 3 in a faster one: across boots ρ = 0.94, within them none
        let values = [10.0, 10.2, 9.9, 12.0, 11.9, 12.1];
        let t = within_sessions(&values, &names(&[0, 0, 0, 1, 1, 1]), 1, ALPHA).unwrap();
        assert!(t.p_value > 0.5, "{t:?}");
        // the same trend within each boot is one
        let rising = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0];
        let t = within_sessions(&rising, &names(&[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1]), 1, ALPHA).unwrap();
        assert_eq!((t.rho, t.sessions), (1.0, 2));
        assert!(t.p_value < 0.001, "{t:?}");
    }

    #[test]
    fn too_few_trials_within_sessions_are_not_tested() {
        // six trials, but one a session
        assert_eq!(
            within_sessions(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &names(&[0, 1, 2, 3, 4, 5]), 1, ALPHA),
            None
        );
        assert_eq!(within_sessions(&[1.0, f64::NAN, 3.0, 4.0, 5.0, 6.0], &names(&[0; 6]), 1, ALPHA), None);
        assert_eq!(within_sessions(&[2.0; 6], &names(&[0; 6]), 1, ALPHA), None);
    }

    #[test]
    fn six_steady_trials_can_only_be_flagged_when_perfectly_ordered() {
        // at n = 6 the exact p of |ρ| = 1 is 2/720 = 0.0028 and of the next value 0.017
        let t = within_sessions(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &names(&[0; 6]), 3, ALPHA).unwrap();
        assert!(t.p_value < ALPHA, "{t:?}");
        let t = within_sessions(&[2.0, 1.0, 3.0, 4.0, 5.0, 6.0], &names(&[0; 6]), 3, ALPHA).unwrap();
        assert!(t.p_value >= ALPHA, "{t:?}");
    }

    #[test]
    fn permutations_stopped_at_alpha_flag_the_same_cells_with_the_same_p_values() {
        use rand::RngExt;
        let mut rng = Pcg64::seed_from_u64(5);
        let (mut flagged, mut stopped) = (0, 0);
        for cell in 0..400u64 {
            // a weak trend: many cells permuted, some flagged
            let n = 10 + (cell % 20) as usize;
            let values: Vec<f64> = (0..n).map(|i| i as f64 * 0.04 + rng.random::<f64>()).collect();
            let of = vec![0u32; n];
            // at alpha = 1 every permutation is drawn
            let all = within_sessions(&values, &of, cell, 1.0).unwrap();
            let quick = within_sessions(&values, &of, cell, ALPHA).unwrap();
            assert_eq!((all.p_value < ALPHA, all.rho), (quick.p_value < ALPHA, quick.rho), "cell {cell}");
            if all.p_value < ALPHA {
                assert_eq!(all.p_value, quick.p_value, "cell {cell}");
                flagged += 1;
            } else if quick.p_value < all.p_value {
                assert!(quick.p_value >= ALPHA, "cell {cell}: {quick:?}");
                stopped += 1;
            }
        }
        assert!(flagged >= 20 && stopped >= 20, "{flagged} flagged, {stopped} stopped early");
    }

    /// The calibration: steady cells — values independent within each session, the
    /// sessions (boots) shifted apart by 2 sd where there are several — flagged at most
    /// 1 % of the time (within 3 standard errors) at every shape and size. The table in
    /// docs/statistics.md (One cell) is this test's output at 4000 cells a row
    /// (`MARGIN_TREND_CELLS=4000 cargo test --lib steady_cells_are_flagged -- --nocapture`);
    /// `cargo test` runs 1000 a row.
    #[test]
    fn steady_cells_are_flagged_at_most_1_percent() {
        use rand::RngExt;
        let cells: usize =
            std::env::var("MARGIN_TREND_CELLS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
        let normal = |rng: &mut Pcg64| {
            let (u, v): (f64, f64) = (rng.random::<f64>().max(f64::MIN_POSITIVE), rng.random());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        type Draw<'a> = &'a dyn Fn(&mut Pcg64) -> f64;
        let shapes: [(&str, Draw); 4] = [
            ("normal", &|rng| 100.0 + 5.0 * normal(rng)),
            ("log-normal", &|rng| 100.0 * (0.05 * normal(rng)).exp()),
            ("t(3)", &|rng| {
                let chi: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
                100.0 + 5.0 * normal(rng) / (chi / 3.0).sqrt()
            }),
            ("quantised", &|rng| (100.0 + normal(rng)).round()),
        ];
        // (sessions, trials in each)
        let sizes = [(1, 6), (1, 10), (1, 30), (2, 3), (2, 10), (6, 3), (4, 10)];
        let mut table = String::from("| shape |");
        for (s, t) in sizes {
            table.push_str(&format!(" {s} × {t} |"));
        }
        table.push_str(&format!("\n| --- |{}\n", " --: |".repeat(sizes.len())));
        let se = (ALPHA * (1.0 - ALPHA) / cells as f64).sqrt();
        let mut misses = Vec::new();
        for (name, draw) in shapes {
            table.push_str(&format!("| {name} |"));
            for (sessions, each) in sizes {
                let mut rng = Pcg64::seed_from_u64(0x7e4d + (sessions * 100 + each) as u64);
                let flagged = (0..cells)
                    .filter(|&cell| {
                        let (mut values, mut of) = (Vec::new(), Vec::new());
                        for s in 0..sessions {
                            let boot = 10.0 * normal(&mut rng);
                            for _ in 0..each {
                                values.push(draw(&mut rng) + boot);
                                of.push(s);
                            }
                        }
                        within_sessions(&values, &of, cell as u64, ALPHA).is_some_and(|t| t.p_value < ALPHA)
                    })
                    .count();
                let rate = flagged as f64 / cells as f64;
                table.push_str(&format!(" {:.2} ±{:.2} |", 100.0 * rate, 100.0 * se));
                if rate > ALPHA + 3.0 * se {
                    misses.push(format!("{name} at {sessions} × {each}: {:.2} %", 100.0 * rate));
                }
            }
            table.push('\n');
        }
        println!("{table}");
        assert!(misses.is_empty(), "{misses:?}\n{table}");
    }
}
