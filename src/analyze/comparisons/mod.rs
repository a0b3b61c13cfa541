//! The comparisons an experiment's `compare` entries ask for: which cells face which, in
//! which context, trial by trial or boot by boot, each computed by the statistics core
//! into a row of summary.json with its verdict.
//!
//! A comparison's design is chosen first ([`run_job`]), then made by its own file:
//! [`trials`] (independent trials, one cell a side), [`boots`] (levels measured in
//! disjoint boots or sessions: the units are the observations), [`paired`] (blocks of
//! `paired_by`, each pair one observation); [`judge`] turns what they give into the row
//! and its verdicts. [`units`] says which boot (or session) each trial ran in.

mod boots;
mod judge;
mod paired;
mod trials;
mod units;

use std::collections::{BTreeSet, HashSet};

use indexmap::IndexMap;
use rayon::prelude::*;

use super::analysed::Analysed;
use crate::plan::{Cell, Plan};
use crate::spec::Experiment;
use crate::summary::{ComparisonStat, MetricMeta, Replication, Warning, WarningKind};
use stats::StatsError;
use stats::StatsSettings;
use stats::compare::holm;
use stats::observations::Observations;
use stats::units::UnitLogs;

pub(crate) use units::Units;

/// The cells (indices into the analysed list) behind each side of a comparison, for the
/// lints that look at when and where the trials ran.
#[derive(Debug, Clone)]
pub(crate) struct Arms {
    pub baseline: Vec<usize>,
    pub level: Vec<usize>,
    /// Index of the `compare` entry.
    pub entry: usize,
}

/// Runs every `compare` entry of the spec over every metric and context.
/// The metrics comparisons are about: what the experiment reads from its outputs, else
/// the wall time; the engine's CPU times only when the experiment names them (for short
/// trials they are too coarse to compare, and every extra comparison costs power under
/// Holm).
pub(crate) fn primary_metrics<'m>(exp: &Experiment, metrics: &'m [MetricMeta]) -> HashSet<&'m str> {
    let engine = vocab::engine_metric;
    let named = |m: &str| exp.spec.metrics.keys().any(|k| k.value == m);
    let parsed: HashSet<&str> = metrics.iter().map(|m| m.name.as_str()).filter(|m| !engine(m)).collect();
    let mut primary: HashSet<&str> =
        metrics.iter().map(|m| m.name.as_str()).filter(|m| engine(m) && named(m)).collect();
    if parsed.is_empty() {
        if primary.is_empty() {
            primary.insert("wall_time");
        }
    } else {
        primary.extend(parsed);
    }
    primary
}

pub(crate) fn compare_all(
    exp: &Experiment,
    plan: &Plan,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    settings: &StatsSettings,
    units: &Units<'_>,
    warnings: &mut Vec<Warning>,
) -> (Vec<ComparisonStat>, Vec<Arms>) {
    let key = |name: &str| plan.keys.iter().position(|k| k == name);
    let primary = primary_metrics(exp, metrics);
    let mut jobs: Vec<Job> = Vec::new();
    for (entry_index, entry) in exp.spec.analysis.compare.iter().enumerate() {
        let entry = &entry.value;
        let Some(factor) = key(&entry.factor.value) else {
            warnings.push(Warning::new(
                WarningKind::Compare,
                format!("compare: `{}` is not a factor of the plan; nothing compared", entry.factor.value),
            ));
            continue;
        };
        let paired = match &entry.paired_by {
            None => None,
            Some(p) => match key(&p.value) {
                Some(k) => Some(k),
                None => {
                    warnings.push(Warning::new(
                        WarningKind::Compare,
                        format!(
                            "compare {}: `paired_by: {}` is not a factor of the plan; nothing compared",
                            entry.factor.value, p.value
                        ),
                    ));
                    continue;
                }
            },
        };
        let baseline = entry.baseline.value.text.as_str();
        // (metric, context) → level → [(block, analysed index)], in plan order.
        let mut by_context: IndexMap<ContextKey, ByLevel> = IndexMap::new();
        for (i, a) in analysed.iter().enumerate() {
            if !primary.contains(metrics[a.meta].name.as_str()) {
                continue;
            }
            let Some((level, block, context)) = place(plan, &plan.cells[a.group.cell], factor, paired) else {
                continue;
            };
            by_context.entry((a.meta, context)).or_default().entry(level).or_default().push((block, i));
        }
        let mut seen_baseline = false;
        for ((meta, context), levels) in &by_context {
            let Some(base) = levels.get(baseline) else { continue };
            seen_baseline = true;
            for (level, cells) in levels.iter().filter(|(l, _)| **l != baseline) {
                jobs.push(Job {
                    entry: entry_index,
                    factor: entry.factor.value.clone(),
                    paired_by: entry.paired_by.as_ref().map(|p| p.value.clone()),
                    baseline: baseline.to_owned(),
                    level: (*level).to_owned(),
                    meta: *meta,
                    context: context.iter().map(|(k, v)| (plan.keys[*k].clone(), (*v).to_owned())).collect(),
                    base: base.clone().into_iter().map(|(b, i)| (b.map(str::to_owned), i)).collect(),
                    other: cells.iter().map(|(b, i)| (b.map(str::to_owned), *i)).collect(),
                });
            }
        }
        if seen_baseline {
            warnings.extend(confounded(plan, &entry.factor.value, baseline, &by_context));
        }
        if !seen_baseline && !by_context.is_empty() {
            warnings.push(Warning::new(
                WarningKind::Compare,
                format!(
                    "compare {}: no analysed trials of the baseline `{baseline}` yet; nothing compared",
                    entry.factor.value
                ),
            ));
        }
    }

    // Each job's two results straight into their places in two lists, which then become
    // the lists of those made in place (no copy: Vec's in-place collect), rather than a
    // list of results copied into two others (the report's peak at 10⁵ comparisons).
    let (mut made, mut sides): (Vec<Result<ComparisonStat, String>>, Vec<Option<Arms>>) =
        (Vec::new(), Vec::new());
    // each job's names moved into its comparison, and the job let go as it is done
    jobs.into_par_iter()
        .map(|job| {
            let meta = &metrics[job.meta];
            match run_job(job, meta, analysed, settings, units) {
                Ok((c, a)) => (Ok(c), Some(a)),
                Err(message) => (Err(message), None),
            }
        })
        .unzip_into_vecs(&mut made, &mut sides);
    let failed = made.iter().filter_map(|r| r.as_ref().err());
    warnings.extend(failed.map(|message| Warning::new(WarningKind::Compare, message.clone())));
    let comparisons: Vec<ComparisonStat> = made.into_iter().filter_map(Result::ok).collect();
    let arms: Vec<Arms> = sides.into_iter().flatten().collect();
    (comparisons, arms)
}

/// A cell's level of the compared factor, its block, and its context.
type Place<'p> = (&'p str, Option<&'p str>, Vec<(usize, &'p str)>);

/// Where a cell stands in a comparison of `factor` (paired by `paired`): its level of the
/// factor, its block, and its context (the levels of the other keys); `None` when it has
/// no level of the factor, or of the pairing key.
fn place<'p>(plan: &'p Plan, cell: &'p Cell, factor: usize, paired: Option<usize>) -> Option<Place<'p>> {
    let level_of =
        |k: usize| cell.levels.iter().find(|(key, _)| usize::from(*key) == k).map(|(_, v)| v.text.as_str());
    let level = level_of(factor)?;
    let block = paired.and_then(level_of);
    if paired.is_some() && block.is_none() {
        return None;
    }
    let context = cell
        .levels
        .iter()
        .map(|(k, v)| (usize::from(*k), v.text.as_str()))
        // keys only `include` adds ride along with their combination: not context
        .filter(|(k, _)| *k != factor && Some(*k) != paired && *k < plan.factor_keys)
        .collect();
    Some((level, block, context))
}

/// Levels with analysed trials that no context shares with the baseline: every cell of
/// theirs differs from the baseline's cells in another factor too (seed 002 changed the
/// memory limit, the vCPU limit and the pinning at once), so nothing can be compared.
fn confounded(
    plan: &Plan,
    factor: &str,
    baseline: &str,
    by_context: &IndexMap<ContextKey<'_>, ByLevel<'_>>,
) -> Option<Warning> {
    let contexts = |level: &str| -> Vec<&Vec<(usize, &str)>> {
        by_context.iter().filter(|(_, levels)| levels.contains_key(level)).map(|((_, c), _)| c).collect()
    };
    let base = contexts(baseline);
    let mut levels: Vec<&str> = Vec::new();
    for levels_here in by_context.values() {
        for level in levels_here.keys() {
            if *level != baseline && !levels.contains(level) {
                levels.push(level);
            }
        }
    }
    let mut found = Vec::new();
    for level in levels {
        let own = contexts(level);
        if own.iter().any(|c| base.contains(c)) {
            continue;
        }
        // the keys on which no cell of the level agrees with any cell of the baseline
        let values = |cs: &[&Vec<(usize, &str)>], key: usize| -> BTreeSet<String> {
            cs.iter()
                .flat_map(|c| c.iter().filter(|(k, _)| *k == key).map(|(_, v)| (*v).to_owned()))
                .collect()
        };
        let keys: Vec<&str> = (0..plan.factor_keys)
            .filter(|&k| values(&own, k).is_disjoint(&values(&base, k)))
            .filter(|&k| !values(&own, k).is_empty())
            .map(|k| plan.keys[k].as_str())
            .collect();
        found.push(format!("{level} vs {baseline} (they also differ in {})", keys.join(", ")));
    }
    (!found.is_empty()).then(|| {
        Warning::new(
            WarningKind::Confounded,
            format!(
                "compare {factor}: {} were never measured with the other factors held fixed, so their \
                 difference cannot be told from those factors' and nothing is compared; vary one factor \
                 at a time",
                found.join("; ")
            ),
        )
    })
}

/// A metric (index into the metrics) and the levels of the other keys (key index, level).
type ContextKey<'a> = (usize, Vec<(usize, &'a str)>);

/// The cells of each level of the compared factor: (block level, analysed index).
type ByLevel<'a> = IndexMap<&'a str, Vec<(Option<&'a str>, usize)>>;

/// One level against the baseline in one context, before it is run.
struct Job {
    entry: usize,
    factor: String,
    paired_by: Option<String>,
    baseline: String,
    level: String,
    meta: usize,
    context: IndexMap<String, String>,
    /// (block, analysed index) of the baseline's and the level's cells.
    base: Vec<(Option<String>, usize)>,
    other: Vec<(Option<String>, usize)>,
}

impl Job {
    /// The comparison, for its error messages: `compare FACTOR LEVEL vs BASELINE (CONTEXT) · METRIC`.
    fn what(&self, metric: &str) -> String {
        let context: Vec<String> = self.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "compare {} {} vs {} ({}) · {}",
            self.factor,
            self.level,
            self.baseline,
            context.join(" "),
            metric
        )
    }
}

/// What a design hands [`judge`]: each side's observations, of the trials kept and of all
/// trials, and what the design knows of its units.
struct Sides<'c> {
    /// The baseline's and the level's observations, of the trials kept.
    kept: [Observations; 2],
    /// The same of all trials, the outliers set aside kept in.
    all: [Observations; 2],
    /// The blocks paired, in order (paired designs only).
    pairs: Vec<String>,
    /// The boots (or sessions) behind levels measured in disjoint ones.
    replication: Option<Replication>,
    /// Unpaired: the one cell of each side.
    single: Option<(&'c Analysed, &'c Analysed)>,
    /// Paired across disjoint boots, two or more a side: each side's boots, their
    /// log-values less the blocks' centres, of the trials kept and of all trials.
    unit_logs: Option<KeptAndAll>,
}

/// Both sides' [`UnitLogs`], of the trials kept and of all trials.
type KeptAndAll = ([UnitLogs; 2], [UnitLogs; 2]);

/// One comparison: its design chosen (paired or not; trials or boots as the
/// observations), its sides made by that design, then judged.
fn run_job(
    job: Job,
    meta: &MetricMeta,
    analysed: &[Analysed],
    settings: &StatsSettings,
    units: &Units<'_>,
) -> Result<(ComparisonStat, Arms), String> {
    let what = || job.what(&meta.name);
    let fail = |e: StatsError| format!("{}: {e}", what());
    let kind = meta.mean_kind;
    let sides = match &job.paired_by {
        None => {
            // Without pairing the context holds every other key: one cell per side.
            let (&(_, a), &(_, b)) =
                (job.base.first().ok_or_else(what)?, job.other.first().ok_or_else(what)?);
            let (a, b) = (&analysed[a], &analysed[b]);
            let units_b = units.of_cell(b);
            if units.of_cell(a).iter().all(|u| !units_b.contains(u)) {
                // Disjoint boots: a boot's state is shared by its trials, so the boots are
                // the observations, and a level's interval holds the variation between them.
                let (ua, ub) = (units.values(a, false), units.values(b, false));
                boots::unpaired(units, (a, b), [&ua, &ub], kind)
            } else {
                Ok(trials::sides(a, b))
            }
        }
        Some(_) => {
            let pairs = paired::pairs(&job, analysed);
            if pairs.is_empty() {
                return Err(format!("{}: no block has trials of both levels", what()));
            }
            paired::sides(&pairs, units, kind)
        }
    }
    .map_err(fail)?;
    judge::judge(job, meta, settings, sides)
}

/// The cells one comparison of the plan sets side by side: a `compare` entry's baseline
/// against one of its levels, in one context (the levels of the other factors), as
/// [`summarize_owned`](crate::analyze::summarize_owned) forms its comparisons, for every metric.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CellComparison {
    /// `paired_by`: the sides are matched block by block.
    pub paired: bool,
    /// (block level, index into [`Plan::cells`]) of the baseline's cells and the level's.
    pub base: Vec<(Option<String>, usize)>,
    pub other: Vec<(Option<String>, usize)>,
    /// The compared factor is an environment factor or the host: its levels never share a
    /// boot, so the report compares boots, not trials, and one boot per level claims
    /// nothing (docs/statistics.md, Sessions and boots).
    pub across_boots: bool,
}

/// Every comparison the spec's `compare` entries make among the plan's cells, by the
/// grouping of [`summarize_owned`](crate::analyze::summarize_owned)'s comparisons (built once, for `until: verdict`).
pub(crate) fn plan_comparisons(exp: &Experiment, plan: &Plan) -> Vec<CellComparison> {
    let key = |name: &str| plan.keys.iter().position(|k| k == name);
    let mut out = Vec::new();
    for entry in &exp.spec.analysis.compare {
        let entry = &entry.value;
        let Some(factor) = key(&entry.factor.value) else { continue };
        let paired = match &entry.paired_by {
            None => None,
            Some(p) => match key(&p.value) {
                Some(k) => Some(k),
                None => continue,
            },
        };
        let across_boots = entry.factor.value == "host"
            || exp.spec.environment.keys().any(|k| k.value == entry.factor.value);
        let baseline = entry.baseline.value.text.as_str();
        type Sides<'c> = IndexMap<&'c str, Vec<(Option<String>, usize)>>;
        let mut by_context: IndexMap<Vec<(usize, &str)>, Sides<'_>> = IndexMap::new();
        for (i, cell) in plan.cells.iter().enumerate() {
            let Some((level, block, context)) = place(plan, cell, factor, paired) else { continue };
            by_context
                .entry(context)
                .or_default()
                .entry(level)
                .or_default()
                .push((block.map(str::to_owned), i));
        }
        for levels in by_context.values() {
            let Some(base) = levels.get(baseline) else { continue };
            for (_, cells) in levels.iter().filter(|(l, _)| **l != baseline) {
                out.push(CellComparison {
                    paired: paired.is_some(),
                    base: base.clone(),
                    other: cells.clone(),
                    across_boots,
                });
            }
        }
    }
    out
}

/// Holm's adjustment across every comparison of the report that has a p-value.
pub(crate) fn adjust(comparisons: &mut [ComparisonStat]) -> Result<(), StatsError> {
    let with_p: Vec<(usize, f64)> =
        comparisons.iter().enumerate().filter_map(|(i, c)| c.p_value.map(|p| (i, p))).collect();
    let adjusted = holm(&with_p.iter().map(|(_, p)| *p).collect::<Vec<_>>())?;
    for ((i, _), p) in with_p.into_iter().zip(adjusted) {
        comparisons[i].p_adjusted = Some(p);
    }
    Ok(())
}
