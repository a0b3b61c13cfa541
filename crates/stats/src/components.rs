//! Variance components of trials within boots (docs/statistics.md, Sessions and boots:
//! spreading further runs): how much a level's trials vary within a boot and how much its
//! boots' centres vary beyond that, and how many more boots of how many trials each would
//! resolve a comparison between levels measured in disjoint boots.
//!
//! The components are those of the one-way random-effects model y_ij = μ + b_i + e_ij
//! (boot i, trial j), by the method of moments (the ANOVA estimator, unbalanced: Searle,
//! Casella and McCulloch, *Variance Components*, §3.6): σ²_w = MSW,
//! σ²_b = max(0, (MSB − MSW)/n₀) with n₀ = (N − Σnᵢ²/N)/(k − 1).

use serde::Serialize;

use super::dist;
use super::elementary::mean;

/// What one more boot costs, in trials (a reboot, the setup, the warm-up): the weight
/// of the boots against the trials in choosing how many trials each boot gets
/// ([`advise`]). With cost ratio c the variance of a level's mean per unit of effort is
/// least at m = √(c·σ²_w/σ²_b) trials per boot (Cochran, *Sampling Techniques*, §10.6).
pub const BOOT_COST_IN_TRIALS: f64 = 5.0;
/// The fewest trials a boot is advised: two, so that every boot still measures the spread
/// within it.
pub(crate) const MIN_TRIALS_PER_BOOT: usize = 2;
/// The most trials a boot is advised, when boots are not seen to differ.
pub const MAX_TRIALS_PER_BOOT: usize = 30;
/// The most boots per level advice goes up to; beyond, it says none would be practical.
pub(crate) const MAX_BOOTS: usize = 100;
/// The chance that following the advice reaches the resolution it aims at, if the
/// components are as estimated: the power margin's detectable effects are quoted at.
pub(crate) const ADVICE_ASSURANCE: f64 = 0.80;

/// One level's variance components, relative to its mean (squared CVs), on the analysis
/// scale (the reciprocals of a harmonic metric; the logs, for a paired comparison).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Components {
    /// Boots (or sessions) and trials behind the estimate.
    pub units: usize,
    pub trials: usize,
    /// σ_w / |mean|, the spread of the trials within a boot, as a fraction.
    pub within_cv: f64,
    /// σ_b / |mean|, the spread of the boots' centres beyond what their trials explain
    /// (0 when the boots' means vary no more than their trials predict).
    pub between_cv: f64,
}

/// The method-of-moments components of `groups` (one boot's values each), as fractions
/// of `scale` (the mean for relative components; 1 for values that are already
/// relative, such as logs). `None` without two boots, or without a boot of two trials.
pub fn components(groups: &[Vec<f64>], scale: f64) -> Option<Components> {
    let groups: Vec<&Vec<f64>> = groups.iter().filter(|g| !g.is_empty()).collect();
    let k = groups.len();
    let n_total: usize = groups.iter().map(|g| g.len()).sum();
    if k < 2 || n_total <= k || !(scale.is_finite() && scale != 0.0) {
        return None;
    }
    let all: Vec<f64> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let grand = mean(&all);
    let (mut ssb, mut ssw) = (0.0, 0.0);
    for g in &groups {
        let m = mean(g);
        ssb += g.len() as f64 * (m - grand).powi(2);
        ssw += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    }
    let (kf, nf) = (k as f64, n_total as f64);
    let msb = ssb / (kf - 1.0);
    let msw = ssw / (nf - kf);
    let n0 = (nf - groups.iter().map(|g| (g.len() as f64).powi(2)).sum::<f64>() / nf) / (kf - 1.0);
    let between = ((msb - msw) / n0).max(0.0);
    Some(Components {
        units: k,
        trials: n_total,
        within_cv: msw.sqrt() / scale.abs(),
        between_cv: between.sqrt() / scale.abs(),
    })
}

/// The components of `groups` (one boot's values each) as fractions of the mean of all
/// their values: those of an unpaired level's boots.
pub fn relative_components(groups: &[Vec<f64>]) -> Option<Components> {
    let all: Vec<f64> = groups.iter().flatten().copied().collect();
    components(groups, mean(&all))
}

/// How to spread further runs of a comparison across boots.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Advice {
    /// Boots to add to each level (beyond those the level with fewer has).
    pub more_units: usize,
    /// Trials to run in each new boot.
    pub trials_per_unit: usize,
    /// The boots' centres vary more than a boot's mean of its trials does: more trials
    /// per boot would not narrow the interval much, only more boots do.
    pub between_dominates: bool,
    /// The interval's half-width aimed at (relative, or on the log scale when paired).
    pub target: f64,
    /// The chance of reaching it, if the components stay as estimated: the first number
    /// of boots whose chance is at least [`ADVICE_ASSURANCE`] has this one.
    pub assurance: f64,
}

/// The trials per boot that make a level's mean the most precise for its cost, a boot
/// costing `boot_cost` trials: m = ⌈√(c · σ²_w / σ²_b)⌉ over both levels' components
/// (Cochran, *Sampling Techniques* §10.6), between [`MIN_TRIALS_PER_BOOT`] and
/// [`MAX_TRIALS_PER_BOOT`]; the most when the boots do not differ at all.
pub fn trials_per_boot(a: &Components, b: &Components, boot_cost: f64) -> usize {
    let within = (a.within_cv.powi(2) + b.within_cv.powi(2)) / 2.0;
    let between = (a.between_cv.powi(2) + b.between_cv.powi(2)) / 2.0;
    let m = if between > 0.0 { (boot_cost.max(0.0) * within / between).sqrt().ceil() } else { f64::INFINITY };
    if m.is_finite() {
        (m as usize).clamp(MIN_TRIALS_PER_BOOT, MAX_TRIALS_PER_BOOT)
    } else {
        MAX_TRIALS_PER_BOOT
    }
}

/// The boots of `trials_per_unit` trials each level needs so that the interval of the
/// ratio has a half-width at most `target` with probability [`ADVICE_ASSURANCE`], at
/// `confidence`, given both levels' components; `current` boots (the fewer of the two
/// levels') are there already. The trials per boot minimise the variance of the level's
/// mean per unit of effort ([`BOOT_COST_IN_TRIALS`]), between [`MIN_TRIALS_PER_BOOT`]
/// and [`MAX_TRIALS_PER_BOOT`]. `None` when no number up to [`MAX_BOOTS`] would do.
///
/// With b boots of m trials, a level's boot means vary by V = σ²_b + σ²_w/m, the squared
/// half-width of Welch's interval of the difference is t²·(s²_A + s²_B)/b, and
/// (s²_A + s²_B)/(V_A + V_B) is about χ²_ν/ν with Satterthwaite's ν =
/// (V_A + V_B)²/(V_A² + V_B²)·(b − 1); so the half-width is within the target with
/// probability P(χ²_ν ≤ ν·target²·b / (t²·(V_A + V_B))).
pub fn advise(
    a: &Components,
    b: &Components,
    current: usize,
    target: f64,
    confidence: f64,
) -> Option<Advice> {
    if !(target > 0.0 && target.is_finite()) {
        return None;
    }
    let within = (a.within_cv.powi(2) + b.within_cv.powi(2)) / 2.0;
    let between = (a.between_cv.powi(2) + b.between_cv.powi(2)) / 2.0;
    let trials_now = (a.trials / a.units.max(1)).max(b.trials / b.units.max(1)).max(1);
    let m = trials_per_boot(a, b, BOOT_COST_IN_TRIALS);
    let between_dominates = between > within / trials_now as f64;
    let level_variance = |c: &Components| c.between_cv.powi(2) + c.within_cv.powi(2) / m as f64;
    let (va, vb) = (level_variance(a), level_variance(b));
    let q = 1.0 - (1.0 - confidence) / 2.0;
    let chance = |boots: usize| -> Option<f64> {
        if va + vb == 0.0 {
            return Some(1.0);
        }
        let nu = (va + vb).powi(2) / (va * va + vb * vb) * (boots as f64 - 1.0);
        let t = dist::t_quantile(q, nu)?;
        let bound = nu * target * target * boots as f64 / (t * t * (va + vb));
        dist::chi_squared_cdf(bound, nu)
    };
    let (boots, assurance) =
        (2..=MAX_BOOTS).filter_map(|n| Some((n, chance(n)?))).find(|&(_, p)| p >= ADVICE_ASSURANCE)?;
    Some(Advice {
        more_units: boots.saturating_sub(current).max(1),
        trials_per_unit: m,
        between_dominates,
        target,
        assurance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trials_per_boot_is_cochrans_optimum_within_its_bounds() {
        let c = |within_cv: f64, between_cv: f64| Components { units: 3, trials: 15, within_cv, between_cv };
        // √(10 · 0.05² / 0.02²) = 7.9 → 8
        assert_eq!(trials_per_boot(&c(0.05, 0.02), &c(0.05, 0.02), 10.0), 8);
        // both levels' components averaged as variances: within² 0.0025, between² 0.00045,
        // √(10 · 0.0025 / 0.00045) = 7.45 → 8
        assert_eq!(trials_per_boot(&c(0.05, 0.0), &c(0.05, 0.03), 10.0), 8);
        // boots alike: the most; boots far apart or free: the fewest
        assert_eq!(trials_per_boot(&c(0.05, 0.0), &c(0.05, 0.0), 10.0), MAX_TRIALS_PER_BOOT);
        assert_eq!(trials_per_boot(&c(0.01, 0.5), &c(0.01, 0.5), 10.0), MIN_TRIALS_PER_BOOT);
        assert_eq!(trials_per_boot(&c(0.05, 0.02), &c(0.05, 0.02), 1e6), MAX_TRIALS_PER_BOOT);
    }

    /// Values and components from tests/data/stats/components.py, which computes them
    /// with its own code (plain Python, the textbook sums of squares).
    #[test]
    fn components_match_the_independent_computation() {
        // unbalanced: 3 boots of 5, 3 and 4 trials
        let groups =
            vec![vec![10.1, 10.3, 9.9, 10.2, 10.0], vec![10.9, 11.2, 11.0], vec![9.6, 9.8, 9.5, 9.9]];
        let c = components(&groups, 1.0).unwrap();
        assert_eq!((c.units, c.trials), (3, 12));
        assert!((c.within_cv.powi(2) - 0.027_407_407_407_407).abs() < 1e-12, "{c:?}");
        assert!((c.between_cv.powi(2) - 0.393_002_364_066_194).abs() < 1e-12, "{c:?}");
        // boots that differ less than their trials predict: σ²_b truncated at 0
        let close = vec![vec![10.0, 11.0, 9.0], vec![10.1, 9.2, 10.9]];
        let c = components(&close, 10.0).unwrap();
        assert_eq!(c.between_cv, 0.0);
        assert!((c.within_cv - (0.861_666_666_666_667_f64).sqrt() / 10.0).abs() < 1e-12, "{c:?}");
        assert_eq!(components(&[vec![1.0, 2.0]], 1.0), None, "one boot");
        assert_eq!(components(&[vec![1.0], vec![2.0]], 1.0), None, "no boot of two trials");
    }

    #[test]
    fn relative_components_are_fractions_of_the_grand_mean() {
        let close = vec![vec![10.0, 11.0, 9.0], vec![10.1, 9.2, 10.9]];
        let c = relative_components(&close).unwrap();
        assert!((c.within_cv - (0.861_666_666_666_667_f64).sqrt() / (60.2 / 6.0)).abs() < 1e-12, "{c:?}");
        assert_eq!(relative_components(&[vec![1.0, 2.0]]), None, "one boot");
    }

    #[test]
    fn advice_puts_few_trials_in_a_boot_when_boots_differ_and_many_when_not() {
        let c = |between: f64| Components { units: 2, trials: 10, within_cv: 0.05, between_cv: between };
        let differ = advise(&c(0.05), &c(0.05), 2, 0.025, 0.95).unwrap();
        // m = ⌈√(5 · 1)⌉ = 3: a boot costs five trials and its centre varies like a trial
        assert_eq!(differ.trials_per_unit, 3);
        assert!(differ.between_dominates);
        let same = advise(&c(0.0), &c(0.0), 2, 0.025, 0.95).unwrap();
        assert_eq!(same.trials_per_unit, MAX_TRIALS_PER_BOOT);
        assert!(!same.between_dominates);
        assert!(same.more_units < differ.more_units, "{same:?} vs {differ:?}");
        // an impractical resolution says so
        assert_eq!(advise(&c(0.5), &c(0.5), 2, 0.001, 0.95), None);
    }

    /// Following the advice reaches the resolution it aims at about as often as it says
    /// (at least 4 times in 5: the chance it states), when the components are as estimated: levels simulated with known
    /// components, b boots of m trials as advised, the boots' means compared by margin's
    /// own Fieller interval (as the report compares boots). 2000 experiments per case give
    /// a binomial SE of 0.9 %; the tolerance is ±8 % (the Satterthwaite approximation and
    /// Fieller's interval against Welch's), at a fixed seed.
    #[test]
    fn following_the_advice_settles_it_as_often_as_it_says() {
        use crate::StatsSettings;
        use crate::compare::compare_independent;
        use crate::observations::Observations;
        use rand::{RngExt, SeedableRng};
        use vocab::MeanKind;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(13);
        let mut normal = move || {
            let (u, v): (f64, f64) = (1.0 - rng.random::<f64>(), rng.random::<f64>());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        };
        let settings = StatsSettings::default();
        let target = settings.threshold / 2.0;
        for (within, between) in [(0.05, 0.02), (0.05, 0.0), (0.02, 0.03)] {
            let c = Components { units: 2, trials: 10, within_cv: within, between_cv: between };
            let advice = advise(&c, &c, 0, target, settings.confidence).unwrap();
            let (boots, m) = (advice.more_units, advice.trials_per_unit);
            let mut settled = 0;
            const EXPERIMENTS: usize = 2000;
            for _ in 0..EXPERIMENTS {
                let mut side = || {
                    let means: Vec<f64> = (0..boots)
                        .map(|_| {
                            let centre = 10.0 * (1.0 + between * normal());
                            (0..m).map(|_| centre + 10.0 * within * normal()).sum::<f64>() / m as f64
                        })
                        .collect();
                    Observations::new(&means, MeanKind::Arithmetic).unwrap()
                };
                let (a, b) = (side(), side());
                let comparison = compare_independent(&a, &b, &settings).unwrap();
                if let Some((low, high)) = comparison.interval.effect() {
                    settled += usize::from((high - low) / 2.0 <= target);
                }
            }
            let rate = settled as f64 / EXPERIMENTS as f64;
            assert!(advice.assurance >= ADVICE_ASSURANCE, "{advice:?}");
            assert!(
                (rate - advice.assurance).abs() <= 0.08,
                "within {within}, between {between}: {boots} boots × {m} trials reached ±{target} in {rate}"
            );
        }
    }
}
