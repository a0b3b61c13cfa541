//! The series an experiment's `series` entries ask for: for each metric and each context
//! (the levels of the other factors), the series factor's levels in the order the matrix
//! writes them, each level's observations, and the change points the statistics core
//! finds along them ([`stats::series`]; docs/statistics.md, Change points in a series).
//!
//! A level's observations are its kept trials when the levels shared their sessions (the
//! trials interleaved, each session's state common to every level); when each level ran
//! in boots or sessions of its own, each one's mean is an observation, as comparisons of
//! disjoint boots take them: the variation between boots is then in every level's spread.

use indexmap::IndexMap;
use rayon::prelude::*;

use super::analysed::Analysed;
use super::comparisons::{Units, primary_metrics};
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::summary::{MetricMeta, SeriesStat, Warning, WarningKind};
use stats::observations::Observations;
use stats::series::{SeriesSettings, find_changes};
use stats::units::unit_means;

/// One series to analyse: a metric in a context, its levels' cells in the series' order.
struct Job {
    factor: String,
    meta: usize,
    context: IndexMap<String, String>,
    /// (level, the analysed cells of that level), in the series' order.
    levels: Vec<(String, Vec<usize>)>,
    missing: Vec<String>,
}

/// A series' metric (index into the metrics) and its context (the other keys' levels).
type Context = (usize, Vec<(usize, String)>);

/// Every `series` entry over every primary metric and context.
pub(crate) fn series_all(
    exp: &Experiment,
    plan: &Plan,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    units: &Units<'_>,
    confidence: f64,
    warnings: &mut Vec<Warning>,
) -> Vec<SeriesStat> {
    let primary = primary_metrics(exp, metrics);
    let mut jobs = Vec::new();
    for entry in &exp.spec.analysis.series {
        let factor = entry.value.factor.value.as_str();
        let Some(key) = plan.keys.iter().position(|k| k == factor) else {
            warnings.push(Warning::new(
                WarningKind::Compare,
                format!("series: `{factor}` is not a factor of the plan; no series analysed"),
            ));
            continue;
        };
        let order = level_order(plan, key);
        // (metric, context) → level → analysed cells
        let mut by_context: IndexMap<Context, IndexMap<String, Vec<usize>>> = IndexMap::new();
        for (i, a) in analysed.iter().enumerate() {
            if !primary.contains(metrics[a.meta].name.as_str()) {
                continue;
            }
            let cell = &plan.cells[a.group.cell];
            let mut level = None;
            let mut context = Vec::new();
            for (k, v) in &cell.levels {
                let k = usize::from(*k);
                if k == key {
                    level = Some(v.text.clone());
                } else if k < plan.factor_keys {
                    context.push((k, v.text.clone()));
                }
            }
            let Some(level) = level else { continue };
            by_context.entry((a.meta, context)).or_default().entry(level).or_default().push(i);
        }
        for ((meta, context), mut cells) in by_context {
            let mut levels = Vec::new();
            let mut missing = Vec::new();
            for level in &order {
                match cells.shift_remove(level) {
                    Some(c) => levels.push((level.clone(), c)),
                    None => missing.push(level.clone()),
                }
            }
            jobs.push(Job {
                factor: factor.to_owned(),
                meta,
                context: context.into_iter().map(|(k, v)| (plan.keys[k].clone(), v)).collect(),
                levels,
                missing,
            });
        }
    }
    let settings = SeriesSettings { confidence, ..SeriesSettings::default() };
    let made: Vec<Result<SeriesStat, String>> =
        jobs.into_par_iter().map(|job| analyse(job, metrics, analysed, units, &settings)).collect();
    let mut out = Vec::new();
    for result in made {
        match result {
            Ok(s) => out.push(s),
            Err(message) => warnings.push(Warning::new(WarningKind::NotAnalysed, message)),
        }
    }
    out
}

/// The levels of key `key` in the order the plan's cells first name them: the matrix's
/// order, as written in the experiment file.
fn level_order(plan: &Plan, key: usize) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for cell in &plan.cells {
        for (k, v) in &cell.levels {
            if usize::from(*k) == key && !order.contains(&v.text) {
                order.push(v.text.clone());
            }
        }
    }
    order
}

/// One series: its levels' observations, then the change points along them.
fn analyse(
    job: Job,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    units: &Units<'_>,
    settings: &SeriesSettings,
) -> Result<SeriesStat, String> {
    let meta = &metrics[job.meta];
    let label = || {
        let context: Vec<String> = job.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("series {} · {} ({})", job.factor, meta.name, context.join(" "))
    };
    let observation = observation(&job, analysed, units);
    let levels: Vec<Observations> = job
        .levels
        .iter()
        .map(|(_, cells)| level_observations(cells, analysed, units, observation, meta))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not analysed: {e}", label()))?;
    let series = find_changes(&levels, settings).map_err(|e| format!("{}: not analysed: {e}", label()))?;
    Ok(SeriesStat {
        factor: job.factor,
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        context: job.context,
        observation,
        level_names: job.levels.into_iter().map(|(level, _)| level).collect(),
        missing: job.missing,
        series,
    })
}

/// `trial` when two levels share a boot or session (their trials interleaved there), else
/// the unit the sessions name (`boot` or `session`): each level ran in units of its own.
fn observation(job: &Job, analysed: &[Analysed], units: &Units<'_>) -> &'static str {
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (level, (_, cells)) in job.levels.iter().enumerate() {
        for &i in cells {
            for unit in units.of_cell(&analysed[i]) {
                if seen.iter().any(|&(u, l)| u == unit && l != level) {
                    return "trial";
                }
                seen.push((unit, level));
            }
        }
    }
    units.unit()
}

/// A level's observations: its cells' kept trials, or each unit's mean of them.
fn level_observations(
    cells: &[usize],
    analysed: &[Analysed],
    units: &Units<'_>,
    observation: &str,
    meta: &MetricMeta,
) -> Result<Observations, stats::StatsError> {
    if observation == "trial" {
        let values: Vec<f64> =
            cells.iter().flat_map(|&i| analysed[i].kept.values().iter().copied()).collect();
        return Observations::new(&values, meta.mean_kind);
    }
    let mut groups: IndexMap<&str, Vec<f64>> = IndexMap::new();
    for &i in cells {
        for (unit, values) in units.values(&analysed[i], true) {
            groups.entry(unit).or_default().extend(values);
        }
    }
    let groups: Vec<Vec<f64>> = groups.into_values().collect();
    unit_means(&groups, meta.mean_kind)
}
