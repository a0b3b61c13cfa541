//! The boots margin made, for the report: the boot log's tries, each as it ended, with
//! the trials measured in it (the sessions that ran in its `boot_id`); a cell's trials
//! boot by boot where its comparisons count boots; adaptive boots that stopped for
//! futility; and fixed boots whose trials per boot used the reboots poorly.

use std::collections::HashMap;

use super::analysed::Analysed;
use super::comparisons::Units;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{BOOT_ID, BootEvent, BootRecord, Event, Snapshot};
use crate::summary::{BootDesign, BootRow, CellUnits, ComparisonStat, Summary, UnitMean};
use stats::StatsSettings;
use stats::components::{relative_components, trials_per_boot, units_needed};
use stats::elementary::mean;
use stats::interval::mean_interval;
use stats::observations::Observations;

/// A cell compared across boots (or sessions), boot by boot: each boot's mean of its
/// trials kept and that mean's interval, the cell's variance components, and the boots
/// of how many trials its own mean would need to reach the target margin (the
/// "runs needed" of a cell whose unit is the boot).
pub(crate) fn cell_units(a: &Analysed, units: &Units<'_>, settings: &StatsSettings) -> CellUnits {
    let by_unit = units.values(a, true);
    let kind = a.kept.kind();
    let per_unit = by_unit
        .iter()
        .map(|(id, values)| {
            // the values are on the analysis scale: back to the metric's own for the sample
            let own: Vec<f64> = values.iter().map(|&v| kind.transform(v)).collect();
            let sample = Observations::new(&own, kind).ok();
            let interval = sample.as_ref().and_then(|s| mean_interval(s, settings.confidence));
            let finite = |x: f64| x.is_finite().then_some(x);
            UnitMean {
                id: (*id).to_owned(),
                n: values.len(),
                mean: kind.transform(mean(values)),
                moe: interval.map(|i| i.moe),
                moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
                ci_low: interval.and_then(|i| finite(i.low)),
                ci_high: interval.and_then(|i| finite(i.high)),
            }
        })
        .collect();
    let groups: Vec<Vec<f64>> = by_unit.into_values().collect();
    let components = relative_components(&groups);
    let needed = components.and_then(|c| units_needed(&c, settings.target_margin, settings.confidence));
    CellUnits { unit: units.unit(), per_unit, components, needed }
}

/// One row per try of each boot, host by host in the order they ran.
pub(crate) fn rows(records: &[BootRecord], snapshot: &Snapshot) -> Vec<BootRow> {
    // measured trials per boot_id, through the sessions that recorded theirs
    let mut boot_of: HashMap<&str, &str> = HashMap::new();
    for s in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
        if let Some(id) = s.facts.get(BOOT_ID) {
            boot_of.insert(s.session.as_str(), id.as_str());
        }
    }
    let trials = &snapshot.trials;
    // counted by the session's name number first (no string hashed per trial: a store may
    // hold millions), then by boot; nothing to count for a store without boots
    let mut measured: HashMap<&str, usize> = HashMap::new();
    if !records.is_empty() && !boot_of.is_empty() {
        let mut per_name = vec![0usize; trials.names.len()];
        for t in 0..trials.len() {
            if !trials.warmup[t] && trials.status[t].is_measurement() {
                per_name[trials.session[t].index()] += 1;
            }
        }
        for (n, &count) in per_name.iter().enumerate().filter(|(_, c)| **c > 0) {
            if let Some(id) = boot_of.get(trials.names.get(trials.names.nth(n))) {
                *measured.entry(id).or_default() += count;
            }
        }
    }
    let mut out: Vec<BootRow> = Vec::new();
    for r in records {
        let outcome = match r.event {
            BootEvent::Requested => "requested",
            BootEvent::Verified => "verified",
            BootEvent::Rejected => "rejected",
            BootEvent::Lost => "lost",
        };
        let row = BootRow {
            host: r.host.clone(),
            boot: r.boot,
            attempt: r.attempt,
            wanted: r.wanted.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "),
            outcome: outcome.to_string(),
            boot_id: r.boot_id.clone(),
            ready_seconds: r.ready_seconds,
            why: r.why.clone(),
            trials: r.boot_id.as_deref().and_then(|id| measured.get(id)).copied().unwrap_or(0),
        };
        // a try's later event replaces its `requested`
        match out.iter_mut().find(|o| o.host == row.host && o.boot == row.boot && o.attempt == row.attempt) {
            Some(o) => *o = row,
            None => out.push(row),
        }
    }
    out.sort_by(|a, b| a.host.cmp(&b.host).then(a.boot.cmp(&b.boot)).then(a.attempt.cmp(&b.attempt)));
    out
}

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
