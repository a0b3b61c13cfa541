//! Warnings about a cell's trials, metric by metric: too few of them, a spread or an
//! extreme the stability checks flag, a slow first trial, a trend within its sessions
//! ([`super::trend`]), two regimes.

use std::collections::{BTreeMap, HashMap};

use super::{list, short, trend};
use crate::analyze::analysed::Analysed;
use crate::plan::Plan;
use crate::summary::{CellStat, MetricMeta, Warning, WarningKind};
use stats::stability::StabilityFlag;

/// Fewer analysed trials than this in a cell is worth a warning.
const FEW_TRIALS: usize = 3;

/// Per-cell warnings, one per kind and metric, naming the cells (`cells`: their published
/// form, parallel to `analysed`); only for the metrics
/// the experiment is about (`primary`), so the engine's CPU times of short trials do not
/// drown the report.
pub(crate) fn cell_warnings(
    plan: &Plan,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    cells: &[CellStat],
    primary: &std::collections::HashSet<&str>,
) -> Vec<Warning> {
    let mut found: BTreeMap<(WarningKind, usize), Vec<String>> = BTreeMap::new();
    let mine = || analysed.iter().zip(cells).filter(|(a, _)| primary.contains(metrics[a.meta].name.as_str()));
    // a cell's metrics share its trend test's 1 %
    let mut tested: HashMap<usize, usize> = HashMap::new();
    mine().for_each(|(a, _)| *tested.entry(a.group.cell).or_default() += 1);
    for (a, published) in mine() {
        let unit = metrics[a.meta].unit.as_str();
        let label = plan.label(&plan.cells[a.group.cell]);
        let mut add = |kind, detail: String| {
            found.entry((kind, a.meta)).or_default().push(format!("{label} ({detail})"))
        };
        if a.all.len() < FEW_TRIALS {
            add(WarningKind::FewTrials, format!("n = {}", a.all.len()));
        }
        for flag in &a.analysis.flags {
            match *flag {
                // The flags look at every trial, outliers included, unlike the table.
                StabilityFlag::HighVariation { cv } => {
                    add(WarningKind::HighVariation, format!("CV {:.1} % over all trials", cv * 100.0))
                }
                StabilityFlag::FarFromMean { value, distance } => add(
                    WarningKind::FarFromMean,
                    format!("{} is {:.0} % from the mean", short(value, unit), distance * 100.0),
                ),
                // in a cell of two regimes the first value is in one of them, no outlier
                StabilityFlag::FirstTrialOutlier { .. } if a.analysis.regimes.is_some() => {}
                StabilityFlag::FirstTrialOutlier { value, .. } => {
                    add(WarningKind::SlowFirstTrial, format!("first value {}", short(value, unit)))
                }
                // the stability flag's trend is over all trials, across sessions, at 5 %:
                // the warning's is within sessions, calibrated (below)
                StabilityFlag::Trend(_) => {}
            }
        }
        let seed = 0x7e4d ^ ((a.group.cell as u64) << 16) ^ a.meta as u64;
        let alpha = trend::ALPHA / tested[&a.group.cell] as f64;
        if let Some(t) = trend::within_sessions(a.all.values(), &a.group.rows.sessions, seed, alpha)
            && t.p_value < alpha
        {
            let sessions = match t.sessions {
                1 => String::new(),
                n => format!(" within each of {n} sessions"),
            };
            add(WarningKind::Trend, format!("Spearman ρ = {:.2}{sessions}, p = {:.4}", t.rho, t.p_value));
        }
        if let Some(r) = &a.analysis.regimes {
            let parts: Vec<String> = r
                .regimes
                .iter()
                .map(|g| format!("{:.0} % of trials at {}", g.share * 100.0, short(g.summary.mean, unit)))
                .collect();
            let mut detail = parts.join(", ");
            if crate::analyze::regimes::by_session(a, r) {
                detail.push_str("; the regimes are its sessions");
            } else if published.decided_by_trial_before() {
                detail.push_str("; the trial before on its host decides it");
            }
            add(WarningKind::Regimes, detail);
        }
    }
    found
        .into_iter()
        .map(|((kind, meta), cells)| {
            let metric = &metrics[meta].name;
            let what = match kind {
                WarningKind::FewTrials => format!(
                    "fewer than {FEW_TRIALS} trials of {metric}: the margin of error is missing or very wide"
                ),
                WarningKind::HighVariation => format!("{metric} varies by 10 % or more between trials"),
                WarningKind::FarFromMean => {
                    format!("{metric} has a minimum or maximum 50 % or more away from the mean")
                }
                WarningKind::SlowFirstTrial => {
                    format!("the first trial of {metric} is an outlier: cold caches? consider `warmup:`")
                }
                WarningKind::Regimes => format!(
                    "{metric} is two regimes in a cell: its mean mixes them, and more trials will not settle \
                     which regime a trial lands in; find what decides it (the cell's regimes and the metrics \
                     that differ between them are in its section)"
                ),
                _ => format!(
                    "{metric} drifts across the repetitions within a session (a monotone trend, found at 1 % \
                     per cell): the machine is changing under the benchmark"
                ),
            };
            Warning::new(kind, format!("{what}: {}", list(&cells)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::analyze::{MemoryStore, summarize_store};
    use crate::summary::WarningKind;
    use vocab::{Better, MeanKind};

    /// Two sessions (boots) far apart: a steady cell is no trend, whatever the Spearman
    /// of all its trials says; a cell that rises within each session is one.
    #[test]
    fn a_trend_is_found_within_sessions_and_boots_that_differ_are_none() {
        let yaml = "matrix:\n  c: [steady, rise]\nrun: 'true'\nmetrics:\n  value: { regex: 'v ([0-9]+)' }\n";
        let mut m = MemoryStore::new("t.yaml", yaml);
        m.metric("value", "", Better::Lower, MeanKind::Arithmetic);
        for (session, shift) in [("s1", 0.0), ("s2", 1000.0)] {
            m.session(session, "local", &[]);
            for r in 0..5 {
                m.trial(&[("c", "rise")], &[("value", shift + f64::from(r))]);
                m.trial(&[("c", "steady")], &[("value", shift + f64::from((r * 3) % 5))]);
            }
        }
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        let trend: Vec<&str> = summary
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Trend)
            .map(|w| w.message.as_str())
            .collect();
        let [only] = trend[..] else { panic!("{trend:?}") };
        assert!(
            only.ends_with(": c=rise (Spearman ρ = 1.00 within each of 2 sessions, p = 0.0005)"),
            "{only}"
        );
    }
}
