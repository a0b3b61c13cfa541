//! Filling summary.json: an experiment's store analysed against its current plan, cell by
//! cell and comparison by comparison, with the warnings, failures, pending cells, the
//! hosts' facts and how to reproduce. The report only formats what this returns.

use std::collections::HashMap;

use indexmap::IndexMap;
use rayon::iter::Either;
use rayon::prelude::*;

use super::analysed::{Analysed, cell_stat};
use super::comparisons::{Arms, Units, adjust, compare_all, primary_metrics};
use super::lint;
use super::sessions::{cell_failures, environment, failures, reproduce};
use super::settings::{nominal_confidence, runs_at_typical_cvs, settings};
use super::table::Group;
use super::telemetry;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{Name, Snapshot, Trials};
use crate::summary::{
    AnalysisSettings, CellStat, ComparisonStat, Effect, MetricMeta, Pending, Reproduce, Summary, TrialCounts,
    TrialFailure, Warning, WarningKind,
};
use stats::cell::analyze_cell;
use stats::observations::Observations;
use stats::{StatsError, StatsSettings};
use vocab::{Better, MeanKind};

/// Why the summary could not be built. Bad data in one cell is a warning, not this.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("analysis settings: {0}")]
    Settings(#[from] StatsError),
}

/// A store's statistics: every cell analysed and every comparison with its verdict,
/// adjusted and pooled — all a verdict depends on, before the warnings that only
/// describe how the trials ran. The report's summary is built on exactly this, and
/// `margin calibrate` reads its verdicts from it (docs/statistics.md, Calibration).
pub(crate) struct Statistics {
    pub settings: StatsSettings,
    pub counts: TrialCounts,
    pub metrics: Vec<MetricMeta>,
    pub analysed: Vec<Analysed>,
    pub cells: Vec<CellStat>,
    pub comparisons: Vec<ComparisonStat>,
    pub arms: Vec<Arms>,
    pub effects: Vec<Effect>,
    /// Cells that could not be analysed, and the store's own problems.
    pub warnings: Vec<Warning>,
}

/// The store's analysed values grouped by cell and metric, with what else the analysis
/// needs of the trial columns: taken from them first, so that a report can let the
/// columns go before its statistics are computed.
struct Grouped {
    settings: StatsSettings,
    counts: TrialCounts,
    metrics: Vec<MetricMeta>,
    /// Each metric's place in `metrics`, by its name.
    metric_index: HashMap<Name, usize>,
    /// In the order of the cells, each cell's in the order of `metrics`.
    groups: Vec<Group>,
    /// The sessions the trials name, each once: the units of replication are theirs.
    sessions: Vec<Name>,
    warnings: Vec<Warning>,
}

/// The experiment's analysis settings, checked.
fn validated(exp: &Experiment) -> Result<StatsSettings, AnalyzeError> {
    let settings = settings(&exp.spec);
    settings.validate()?;
    Ok(settings)
}

/// Groups the store's trials, each cell's values of each metric. Of the trial columns it
/// reads those [`Trials::keep_grouping_columns`] keeps.
fn grouped(exp: &Experiment, plan: &Plan, snapshot: &Snapshot, settings: StatsSettings) -> Grouped {
    let (mut groups, counts) = super::table::groups(&snapshot.trials, plan);
    let metrics = metric_meta(exp, &snapshot.trials);
    let names = &snapshot.trials.names;
    let metric_index: HashMap<Name, usize> =
        metrics.iter().enumerate().filter_map(|(i, m)| Some((names.find(&m.name)?, i))).collect();
    let warnings = lint::store_warnings(snapshot, &counts);
    groups.sort_by_key(|g| (g.cell, metric_index.get(&g.metric).copied().unwrap_or(usize::MAX)));
    let sessions = Units::sessions_of(&snapshot.trials);
    Grouped { settings, counts, metrics, metric_index, groups, sessions, warnings }
}

/// Analyses every cell of the store and every comparison of the spec.
pub(crate) fn statistics(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
) -> Result<Statistics, AnalyzeError> {
    let grouped = grouped(exp, plan, snapshot, validated(exp)?);
    let units = Units::new(snapshot, &grouped.sessions);
    Ok(analyse(exp, plan, grouped, &units, &snapshot.trials.names, |_, _, _| ())?.0)
}

/// Each group analysed, then each comparison made of them, and `beside` of the analysed
/// groups and their cells' statistics meanwhile (what reads them and not the
/// comparisons), its answer returned with the statistics.
fn analyse<R: Send>(
    exp: &Experiment,
    plan: &Plan,
    grouped: Grouped,
    units: &Units<'_>,
    names: &crate::store::Names,
    beside: impl FnOnce(&[Analysed], &[CellStat], &[MetricMeta]) -> R + Send,
) -> Result<(Statistics, R), AnalyzeError> {
    let Grouped { settings, counts, metrics, metric_index, groups, sessions: _, mut warnings } = grouped;
    // Straight into the two lists (in order): a list of results first, then its copy,
    // held every analysed cell twice.
    let (analysed, failed): (Vec<Analysed>, Vec<String>) = groups
        .into_par_iter()
        .map(|mut group| -> Result<Analysed, String> {
            let meta = metric_index[&group.metric];
            let fail = |e: StatsError| {
                format!("{} · {}: not analysed: {e}", plan.label(&plan.cells[group.cell]), metrics[meta].name)
            };
            let all = Observations::new(&group.values, metrics[meta].mean_kind).map_err(fail)?;
            // the observations hold the values from here on
            group.values = Vec::new();
            let mut analysis = analyze_cell(&all, &settings).map_err(fail)?;
            if super::regimes::by_the_clock(&metrics[meta].name, all.values()) {
                analysis.regimes = None;
            }
            let kept = all.without(&analysis.outliers.set_aside).map_err(fail)?;
            // flagged values that stay in: the sample without them, for the verdict beside
            let trimmed = if analysis.outliers.set_aside.is_empty() && !analysis.candidates.is_empty() {
                Some(all.without(&analysis.candidates).map_err(fail)?)
            } else {
                None
            };
            Ok(Analysed { group, meta, all, kept, trimmed, analysis })
        })
        .partition_map(|result| match result {
            Ok(a) => Either::Left(a),
            Err(message) => Either::Right(message),
        });
    warnings.extend(failed.into_iter().map(|message| Warning::new(WarningKind::NotAnalysed, message)));

    let mut cells: Vec<CellStat> =
        analysed.par_iter().map(|a| cell_stat(plan, &metrics[a.meta], a)).collect();
    // each cell's metrics, for the metrics that differ between a cell's regimes
    let mut same_cell: HashMap<usize, Vec<usize>> = HashMap::new();
    if analysed.iter().any(|a| a.analysis.regimes.is_some()) {
        for (i, a) in analysed.iter().enumerate() {
            same_cell.entry(a.group.cell).or_default().push(i);
        }
    }
    for (cell, a) in cells.iter_mut().zip(&analysed) {
        let others = same_cell.get(&a.group.cell).map_or(&[][..], Vec::as_slice);
        cell.regimes = super::regimes::regimes_stat(a, &analysed, others, &metrics, plan, names);
        if cell.regimes.is_some() {
            // more trials narrow a mixture's mean, not what decides a trial's regime
            (cell.runs_needed, cell.runs_needed_exceeds) = (None, None);
        }
    }
    let ((mut comparisons, arms), besides) = rayon::join(
        || compare_all(exp, plan, &metrics, &analysed, &settings, units, &mut warnings),
        || beside(&analysed, &cells, &metrics),
    );
    // the cells of comparisons across boots: their trials boot by boot
    let mut across: Vec<usize> = comparisons
        .iter()
        .zip(&arms)
        .filter(|(c, _)| c.replication.is_some())
        .flat_map(|(_, a)| a.baseline.iter().chain(&a.level).copied())
        .collect();
    across.sort_unstable();
    across.dedup();
    for i in across {
        cells[i].units = Some(Box::new(super::boots::cell_units(&analysed[i], units, &settings)));
    }
    super::regimes::annotate_mixtures(&mut comparisons, &arms, &analysed, &cells);
    adjust(&mut comparisons)?;
    let effects = super::effects::effects(&comparisons, &settings);
    Ok((
        Statistics { settings, counts, metrics, analysed, cells, comparisons, arms, effects, warnings },
        besides,
    ))
}

/// What the summary needs of the trial columns besides the groups, taken from them first
/// (see [`summarize_owned`]).
struct Early {
    failures: Vec<TrialFailure>,
    reproduce: Reproduce,
    telemetry: telemetry::CellsTelemetry,
}

fn early(exp: &Experiment, plan: &Plan, snapshot: &Snapshot, settings: &StatsSettings) -> Early {
    let metrics = metric_meta(exp, &snapshot.trials);
    Early {
        failures: failures(plan, &snapshot.trials),
        reproduce: reproduce(exp, snapshot),
        telemetry: telemetry::cells(exp, plan, snapshot, &metrics, settings.threshold),
    }
}

/// Analyses the store of `exp` against its current plan, keeping the snapshot whole
/// (the tests' form of [`summarize_owned`], which they check it against).
#[cfg(test)]
pub(crate) fn summarize_store(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    pending: &[Pending],
) -> Result<Summary, AnalyzeError> {
    let settings = validated(exp)?;
    let early = early(exp, plan, snapshot, &settings);
    let grouped = grouped(exp, plan, snapshot, settings);
    summary(exp, plan, snapshot, grouped, early, pending)
}

/// The summary of the store of `exp` (as `summarize_store`, the tests' form, makes it)
/// from a snapshot it may let go of, a part at a time, so that what a report holds at its
/// peak is the trial columns as read, and little more (docs/store.md, Reading for a
/// report): what the summary needs of the columns besides the groups is taken
/// first, then only the columns the grouping reads are kept, then after the grouping
/// none (the names, the metrics' descriptions and the sessions stay), and the statistics
/// are computed without them. `beside` reads the whole snapshot meanwhile, on a thread of
/// its own (a report's pending cells); its result comes back with the summary.
pub(crate) fn summarize_owned<R: Send>(
    exp: &Experiment,
    plan: &Plan,
    mut snapshot: Snapshot,
    beside: impl FnOnce(&Snapshot) -> R + Send,
) -> (R, Result<Summary, AnalyzeError>) {
    let settings = match validated(exp) {
        Ok(settings) => settings,
        Err(e) => return (beside(&snapshot), Err(e)),
    };
    let (besides, early) = std::thread::scope(|s| {
        let besides = s.spawn(|| beside(&snapshot));
        let early = early(exp, plan, &snapshot, &settings);
        (besides.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), early)
    });
    snapshot.trials.keep_grouping_columns();
    let grouped = grouped(exp, plan, &snapshot, settings);
    snapshot.trials.let_go_of_columns();
    let summary = summary(exp, plan, &snapshot, grouped, early, &[]);
    (besides, summary)
}

/// The summary from what was taken of the trial columns, and the snapshot's sessions and
/// names (its columns may have been let go).
fn summary(
    exp: &Experiment,
    plan: &Plan,
    snapshot: &Snapshot,
    grouped: Grouped,
    early: Early,
    pending: &[Pending],
) -> Result<Summary, AnalyzeError> {
    let Early { failures, reproduce, telemetry } = early;
    let units = Units::new(snapshot, &grouped.sessions);
    // the drift tests and the lints of the cells read the analysed groups, not the
    // comparisons, nor each other: made beside the comparisons, so that the drift tests'
    // stretches on one core leave the other to the rest
    let names = &snapshot.trials.names;
    let (statistics, ((cell_warnings, shifts), command_warnings)) =
        analyse(exp, plan, grouped, &units, names, |analysed, cells, metrics| {
            let primary = primary_metrics(exp, metrics);
            rayon::join(
                || {
                    rayon::join(
                        || lint::cell_warnings(plan, metrics, analysed, cells, &primary),
                        || super::drift::shifts(analysed, metrics, &primary, names),
                    )
                },
                || {
                    lint::command_warnings(exp, plan, snapshot, analysed, &|cell| {
                        telemetry.least_written(cell)
                    })
                },
            )
        })?;
    let Statistics { settings, counts, metrics, analysed, cells, comparisons, arms, effects, mut warnings } =
        statistics;
    let comparison_warnings = lint::comparison_warnings(exp, snapshot, &analysed, &comparisons, &arms);
    let series =
        super::series::series_all(exp, plan, &metrics, &analysed, &units, settings.confidence, &mut warnings);
    let super::drift::Shifts { drifts, orders } = shifts;
    warnings.extend(cell_warnings);
    warnings.extend(super::drift::warnings(&drifts));
    warnings.extend(super::drift::order_warnings(&orders));
    warnings.extend(command_warnings);
    warnings.extend(comparison_warnings);
    let (telemetry, machine) = telemetry::summarize(
        telemetry,
        &snapshot.trials.names,
        &analysed,
        &comparisons,
        &arms,
        settings.threshold,
    );
    warnings.extend(machine);
    // 10⁴ groups of many small allocations each: given back on every core, not one by one
    // on this thread
    analysed.into_par_iter().for_each(drop);

    Ok(Summary {
        boots: Vec::new(),
        boots_stopped: Vec::new(),
        boot_design: Vec::new(),
        bisections: Vec::new(),
        bisections_under_way: Vec::new(),
        drifts,
        order_effects: orders,
        series,
        across_runs: None,
        experiment: exp.name.clone(),
        description: exp.spec.description.clone(),
        settings: AnalysisSettings {
            confidence: nominal_confidence(&exp.spec),
            interval_confidence: settings.confidence,
            looks: exp.spec.repetitions().looks(),
            boot_looks: crate::analyze::settings::boot_looks(&exp.spec),
            threshold_pct: settings.threshold * 100.0,
            target_pct: settings.target_margin * 100.0,
            outliers: settings.outliers,
            p_adjustment: "holm",
            runs_needed_at_cv: runs_at_typical_cvs(&settings),
        },
        trials: counts,
        metrics,
        cells,
        comparisons,
        effects,
        warnings,
        pending: pending.to_vec(),
        failures,
        cell_failures: cell_failures(plan, snapshot),
        environment: environment(snapshot),
        reproduce,
        telemetry,
    })
}

/// Unit, direction and mean of every metric, in the order the spec lists them, then in
/// the order the trials first report them. The spec's `metrics:` entries override what
/// the parser recorded.
fn metric_meta(exp: &Experiment, trials: &Trials) -> Vec<MetricMeta> {
    let mut metas: IndexMap<String, MetricMeta> = IndexMap::new();
    let blank = |name: &str| MetricMeta {
        name: name.to_owned(),
        unit: String::new(),
        better: Better::Lower,
        mean_kind: MeanKind::Arithmetic,
        method: exp.spec.analysis.method.unwrap_or_default(),
    };
    for name in exp.spec.metrics.keys() {
        metas.insert(name.value.clone(), blank(&name.value));
    }
    for (&metric, info) in &trials.metrics {
        let name = trials.names.get(metric);
        let meta = metas.entry(name.to_owned()).or_insert_with(|| blank(name));
        if let Some(info) = info {
            meta.unit.clone_from(&info.unit);
            meta.better = info.better;
            meta.mean_kind = info.mean;
        }
    }
    for (name, spec) in &exp.spec.metrics {
        if let Some(meta) = metas.get_mut(&name.value) {
            meta.better = spec.value.better.unwrap_or(meta.better);
            meta.mean_kind = spec.value.mean.unwrap_or(meta.mean_kind);
            meta.method = spec.value.method.unwrap_or(meta.method);
        }
    }
    // A metric the spec names but no trial reported has nothing to show.
    metas.retain(|name, _| trials.names.find(name).is_some_and(|n| trials.metrics.contains_key(&n)));
    metas.into_values().collect()
}
