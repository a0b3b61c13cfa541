//! The boots margin made, for the report: the boot log's tries, each as it ended, with
//! the trials measured in it (the sessions that ran in its `boot_id`); a cell's trials
//! boot by boot where its comparisons count boots (adaptive boots that stopped for
//! futility, and fixed boots whose trials per boot used the reboots poorly:
//! [`super::boot_design`]).

use std::collections::HashMap;

use super::analysed::Analysed;
use super::comparisons::Units;
use crate::store::{BOOT_ID, BootEvent, BootRecord, Event, Snapshot};
use crate::summary::{BootRow, CellUnits, UnitMean};
use stats::StatsSettings;
use stats::components::{relative_components, units_needed};
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
            bisect: r.bisect.clone(),
        };
        // a try's later event replaces its `requested` (a bisection's boots numbered apart)
        let same = |o: &BootRow| {
            (o.host.as_str(), o.boot, o.attempt, &o.bisect)
                == (row.host.as_str(), row.boot, row.attempt, &row.bisect)
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(o) => *o = row,
            None => out.push(row),
        }
    }
    out.sort_by(|a, b| a.host.cmp(&b.host).then(a.boot.cmp(&b.boot)).then(a.attempt.cmp(&b.attempt)));
    out
}
