//! `margin history`'s analysis: the runs of one or more stores in time order (a run is the
//! sessions of one `--label`, or a session without one), each cell's mean in each run, and
//! the change points across the runs ([`stats::series::sequence`]): the runs' own scatter
//! is the noise, each run one observation (docs/statistics.md, Change points across runs).

use indexmap::IndexMap;

use super::runs::{RunTrials, across};
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{Event, SessionRecord, TrialRecord};
use crate::summary::history::{HistoryOutput, HistoryRow, HistoryRun, Rerun};
use stats::series::SeriesSettings;
use stats::series::sequence::{MIN_RUNS, find_changes_in_runs};
use vocab::{Better, MeanKind};

/// One store's records, as `margin history` read them, with its experiment.
pub(crate) struct Input {
    pub store: String,
    pub exp: Experiment,
    pub plan: Plan,
    pub records: Vec<TrialRecord>,
    pub sessions: Vec<SessionRecord>,
}

/// One cell × metric's values, run by run.
struct Track {
    cell: String,
    levels: IndexMap<String, String>,
    metric: String,
    unit: String,
    better: Better,
    kind: MeanKind,
    /// run → the values of its measured trials
    by_run: IndexMap<usize, Vec<f64>>,
}

/// The runs in time order, then each cell × metric across them.
pub(crate) fn history(inputs: &[Input], threshold: f64, confidence: f64) -> HistoryOutput {
    let (runs, run_of) = runs(inputs);
    let mut tracks: IndexMap<(String, String), Track> = IndexMap::new();
    for (s, input) in inputs.iter().enumerate() {
        for r in input.records.iter().filter(|r| r.status.is_measurement() && !r.warmup) {
            let Some(&run) = run_of.get(&(s, r.session.as_str())) else { continue };
            for (metric, &value) in &r.metrics {
                let info = r.metric_info.get(metric);
                let track = tracks.entry((r.cell.clone(), metric.clone())).or_insert_with(|| Track {
                    cell: r.cell.clone(),
                    levels: r.levels.clone(),
                    metric: metric.clone(),
                    unit: info.map(|i| i.unit.clone()).unwrap_or_default(),
                    better: info.map_or(Better::Lower, |i| i.better),
                    kind: info.map(|i| i.mean).unwrap_or_default(),
                    by_run: IndexMap::new(),
                });
                track.by_run.entry(run).or_default().push(value);
            }
        }
    }
    // margin's own measures (wall and CPU time) only where the commands report no metric
    // of their own, as comparisons choose them
    let parsed = tracks.values().any(|t| !vocab::engine_metric(&t.metric));
    tracks.retain(|_, t| !(parsed && vocab::engine_metric(&t.metric)));
    let settings = SeriesSettings { confidence, ..SeriesSettings::default() };
    let mut rows: Vec<HistoryRow> = tracks.into_values().map(|t| row(t, threshold, &settings)).collect();
    let store_of = |run: &HistoryRun| inputs.iter().position(|i| i.store == run.store).unwrap_or(0);
    for r in &mut rows {
        r.rerun = reruns(r, &runs, |run| &inputs[store_of(run)].exp);
    }
    let across_runs = runs_as_a_level(inputs, &runs, &run_of);
    HistoryOutput { runs, rows, threshold_pct: threshold * 100.0, alpha: settings.alpha, across_runs }
}

/// For each change point of `r`, the labels on either side and the commands that measure
/// them anew, back to back.
fn reruns<'a>(
    r: &HistoryRow,
    runs: &[HistoryRun],
    exp_of: impl Fn(&HistoryRun) -> &'a Experiment,
) -> Vec<Rerun> {
    let Some(series) = &r.series else { return Vec::new() };
    series
        .change_points
        .iter()
        .map(|c| {
            let (before, after) = (&runs[r.runs[c.after]], &runs[r.runs[c.after + 1]]);
            let mut commands: Vec<String> = [before, after]
                .iter()
                .map(|run| format!("margin run {} --label {}-again", exp_of(run).path.display(), run.name))
                .collect();
            commands.push(format!("margin history {}", exp_of(after).name));
            Rerun { before: before.name.clone(), after: after.name.clone(), commands }
        })
        .collect()
}

/// The experiments' comparisons in each run, side by side and pooled with the run as the
/// unit ([`super::runs`]).
fn runs_as_a_level(
    inputs: &[Input],
    runs: &[HistoryRun],
    run_of: &std::collections::HashMap<(usize, &str), usize>,
) -> Vec<crate::summary::across_runs::RunsComparison> {
    if runs.len() < 2 || inputs.iter().all(|i| i.exp.spec.analysis.compare.is_empty()) {
        return Vec::new();
    }
    let mut trials: Vec<RunTrials<'_>> = runs
        .iter()
        .map(|run| {
            let input = inputs.iter().find(|i| i.store == run.store).unwrap_or(&inputs[0]);
            RunTrials { exp: &input.exp, plan: &input.plan, records: Vec::new(), sessions: Vec::new() }
        })
        .collect();
    for (s, input) in inputs.iter().enumerate() {
        for session in &input.sessions {
            if let Some(&run) = run_of.get(&(s, session.session.as_str())) {
                trials[run].sessions.push(session.clone());
            }
        }
        for r in &input.records {
            if let Some(&run) = run_of.get(&(s, r.session.as_str())) {
                trials[run].records.push(r.clone());
            }
        }
    }
    let names: Vec<String> = runs.iter().map(|r| r.name.clone()).collect();
    across(&trials, &names, &super::settings::settings(&inputs[0].exp.spec))
}

/// A run as found: its label, its first session's start, and its sessions.
type Found<'a> = (Option<String>, String, Vec<&'a str>);

/// The runs of every store, in the order their first sessions started, and each
/// (store, session)'s run.
fn runs(inputs: &[Input]) -> (Vec<HistoryRun>, std::collections::HashMap<(usize, &str), usize>) {
    // (store, name) → (label, first start, sessions)
    let mut found: IndexMap<(usize, String), Found<'_>> = IndexMap::new();
    for (s, input) in inputs.iter().enumerate() {
        for session in input.sessions.iter().filter(|x| x.event == Event::Start) {
            let name = session.label.clone().unwrap_or_else(|| session.session.clone());
            let entry = found
                .entry((s, name))
                .or_insert_with(|| (session.label.clone(), session.at.clone(), Vec::new()));
            if session.at < entry.1 {
                entry.1.clone_from(&session.at);
            }
            entry.2.push(session.session.as_str());
        }
    }
    let mut order: Vec<((usize, String), Found<'_>)> = found.into_iter().collect();
    // RFC 3339 times of one writer compare as text
    order.sort_by(|a, b| a.1.1.cmp(&b.1.1));
    let mut run_of = std::collections::HashMap::new();
    let mut runs = Vec::new();
    for (i, ((s, name), (label, started, sessions))) in order.into_iter().enumerate() {
        for session in &sessions {
            run_of.insert((s, *session), i);
        }
        runs.push(HistoryRun {
            name,
            label,
            started,
            sessions: sessions.len(),
            store: inputs[s].store.clone(),
        });
    }
    (runs, run_of)
}

/// One cell × metric: each run's mean (harmonic for a rate over fixed work), the change
/// points across them, and whether the newest is worse beyond ±δ.
fn row(t: Track, threshold: f64, settings: &SeriesSettings) -> HistoryRow {
    let mut by_run: Vec<(usize, Vec<f64>)> = t.by_run.into_iter().collect();
    by_run.sort_by_key(|(run, _)| *run);
    let means: Vec<f64> = by_run
        .iter()
        .map(|(_, v)| {
            let analysed: f64 = v.iter().map(|x| t.kind.transform(*x)).sum::<f64>() / v.len() as f64;
            t.kind.transform(analysed)
        })
        .collect();
    let (series, not_analysed) = if means.len() < MIN_RUNS {
        (
            None,
            Some(format!(
                "{} run{}: a change needs {MIN_RUNS} or more",
                means.len(),
                if means.len() == 1 { "" } else { "s" }
            )),
        )
    } else {
        match find_changes_in_runs(&means, t.kind, settings) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    let newest_worse = series.as_ref().and_then(|s| s.change_points.last()).is_some_and(|c| {
        let worse = match t.better {
            Better::Higher => c.high < 1.0 - threshold,
            Better::Lower => c.low > 1.0 + threshold,
        };
        worse && c.after + 1 == series.as_ref().map_or(0, |s| s.segments.last().map_or(0, |g| g.first))
    });
    let label = t.levels.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    HistoryRow {
        cell: t.cell,
        label,
        levels: t.levels,
        metric: t.metric,
        unit: t.unit,
        better: t.better,
        runs: by_run.iter().map(|(run, _)| *run).collect(),
        trials: by_run.iter().map(|(_, v)| v.len()).collect(),
        series,
        not_analysed,
        newest_worse,
        rerun: Vec::new(),
    }
}
