//! What the boots tell beyond the comparisons: the hosts whose adaptive boots stopped for
//! futility, and the comparisons across fixed boots whose trials per boot used the
//! reboots poorly (docs/statistics.md, Adaptive boots).

use crate::plan::Plan;
use crate::spec::Experiment;
use crate::summary::{BootDesign, ComparisonStat, Summary};
use stats::components::trials_per_boot;
use stats::elementary::mean;

/// Least ratio of the times of two designs for the same standard error before the report
/// says the cheaper one would have done better.
pub(crate) const CLEARLY_CHEAPER: f64 = 1.5;

/// What the boots tell beyond the comparisons: the hosts whose adaptive boots stopped
/// for futility, and the comparisons across fixed boots that used their reboots poorly.
pub(crate) fn judge_boots(exp: &Experiment, plan: &Plan, summary: &mut Summary) {
    summary.boots_stopped = super::boot_rule::stopped(exp, plan, summary);
    summary.boot_design = design(exp, summary);
}

/// The comparisons across fixed boots margin made whose trials per boot used the reboots
/// poorly: the time a design of b boots × m trials takes for a given standard error of
/// the comparison is ∝ (σ²_b + σ²_w/m) · (T_boot + m · T_trial) (the boots it needs
/// times each one's cost), least at Cochran's m* = √(c · σ²_w/σ²_b), c = T_boot/T_trial;
/// reported where the design as run takes [`CLEARLY_CHEAPER`] × the time of m* or more.
pub(crate) fn design(exp: &Experiment, summary: &Summary) -> Vec<BootDesign> {
    if !crate::analyze::settings::boot_looks(&exp.spec).is_empty() {
        // adaptive boots choose m* themselves
        return Vec::new();
    }
    let ready: Vec<f64> =
        summary.boots.iter().filter(|b| b.outcome == "verified").filter_map(|b| b.ready_seconds).collect();
    if ready.is_empty() {
        return Vec::new();
    }
    let boot = mean(&ready);
    super::boot_rule::across_boots(exp, &summary.comparisons)
        .into_iter()
        .filter_map(|c| {
            let r = c.replication.as_ref().filter(|r| r.unit == "boot")?;
            let (a, b) = (r.baseline_components.as_ref()?, r.level_components.as_ref()?);
            let trial = trial_seconds(summary, c)?;
            let within = (a.within_cv.powi(2) + b.within_cv.powi(2)) / 2.0;
            let between = (a.between_cv.powi(2) + b.between_cv.powi(2)) / 2.0;
            let as_run =
                (r.baseline_trials + r.level_trials) as f64 / (r.baseline_units + r.level_units) as f64;
            let better = trials_per_boot(a, b, boot / trial);
            let variance = |m: f64| between + within / m;
            let cost = |m: f64| variance(m) * (boot + m * trial);
            let ratio = cost(as_run) / cost(better as f64);
            (ratio >= CLEARLY_CHEAPER && variance(as_run) > 0.0).then(|| BootDesign {
                factor: c.factor.clone(),
                baseline: c.baseline.clone(),
                level: c.level.clone(),
                metric: c.metric.clone(),
                trials_per_boot: as_run,
                better_trials_per_boot: better,
                within_cv_pct: within.sqrt() * 100.0,
                between_cv_pct: between.sqrt() * 100.0,
                boot_seconds: boot,
                trial_seconds: trial,
                cost_ratio: ratio,
                boots_ratio: variance(better as f64) / variance(as_run),
            })
        })
        .collect()
}

/// The mean wall time of a trial in the cells of a comparison (both sides, its context).
fn trial_seconds(summary: &Summary, c: &ComparisonStat) -> Option<f64> {
    let walls: Vec<f64> = summary
        .cells
        .iter()
        .filter(|cell| cell.metric == "wall_time")
        .filter(|cell| {
            cell.levels.get(&c.factor).is_some_and(|l| *l == c.baseline || *l == c.level)
                && c.context.iter().all(|(k, v)| cell.levels.get(k) == Some(v))
        })
        .map(|cell| cell.mean)
        .filter(|m| m.is_finite() && *m > 0.0)
        .collect();
    (!walls.is_empty()).then(|| mean(&walls))
}
