//! The comparisons an experiment's `compare` entries ask for: which cells face which, in
//! which context, trial by trial or boot by boot, each computed by the statistics core
//! into a row of summary.json with its verdict.

use std::collections::{BTreeSet, HashMap, HashSet};

use indexmap::IndexMap;
use rayon::prelude::*;

use super::analysed::Analysed;
use crate::plan::{Cell, Plan};
use crate::spec::Experiment;
use crate::stats::compare::{Comparison, RatioInterval, block_means, compare_unit_logs, holm};
use crate::stats::components::{Components, components};
use crate::stats::elementary::{mean, median_of_sorted, sorted};
use crate::stats::interval::{mean_interval, median_interval};
use crate::stats::observations::Observations;
use crate::stats::robust::compare_design;
use crate::stats::verdict::{Replicate, VerdictKind, Vocabulary, Wording, unreplicated, verdict_per};
use crate::stats::{StatsError, StatsSettings};
use crate::store::{BOOT_ID, Event, Name, Names, Snapshot, Trials};
use crate::summary::{Arm, ComparisonStat, Median, MetricMeta, Replication, Warning, WarningKind};
use crate::vocab::Method;

/// The unit each session's trials vary by between levels: its boot when it recorded
/// one (two runs in one boot are one unit), else the session itself (each import is one).
pub(crate) struct Units<'a> {
    /// The unit of each session, by its name's number (`None` for a name that is not a
    /// trial's session): looked up by place for every value of every comparison, where
    /// hashing the session's id each time cost a few per cent of a large report.
    of_name: Vec<Option<&'a str>>,
    names: &'a Names,
    /// Whether every session named a boot.
    all_boots: bool,
}

impl<'a> Units<'a> {
    /// The sessions the trials name, each once, in the order first named.
    pub(crate) fn sessions_of(trials: &Trials) -> Vec<Name> {
        let mut seen = vec![false; trials.names.len()];
        let mut sessions = Vec::new();
        for &session in &trials.session {
            if !std::mem::replace(&mut seen[session.index()], true) {
                sessions.push(session);
            }
        }
        sessions
    }

    /// The units of the `sessions` the trials name ([`Units::sessions_of`]): the
    /// snapshot's names and sessions are read, not its trial columns.
    pub(crate) fn new(snapshot: &'a Snapshot, sessions: &[Name]) -> Self {
        let mut by_session = HashMap::new();
        let mut all_boots = true;
        for s in snapshot.sessions.iter().filter(|s| s.event == Event::Start) {
            match s.facts.get(BOOT_ID) {
                Some(boot) => {
                    by_session.insert(s.session.as_str(), boot.as_str());
                }
                None => all_boots = false,
            }
        }
        let trials = &snapshot.trials;
        let mut of_name = vec![None; trials.names.len()];
        for &session in sessions {
            of_name[session.index()].get_or_insert_with(|| {
                let id = trials.names.get(session);
                by_session.get(id).copied().unwrap_or(id)
            });
        }
        Units { of_name, names: &trials.names, all_boots }
    }

    fn of(&self, session: Name) -> &'a str {
        // every trial's session has its unit; another name is its own
        self.of_name.get(session.index()).copied().flatten().unwrap_or_else(|| self.names.get(session))
    }

    /// Each unit's values of a cell (all its trials, or those kept), in first-seen order,
    /// on the analysis scale.
    fn values(&self, cell: &Analysed, kept: bool) -> IndexMap<&'a str, Vec<f64>> {
        let aside = &cell.analysis.outliers.set_aside;
        // a cell's units are few (its sessions' boots): found in a short list, each
        // value's mostly the one before's, and hashed once each at the end
        let mut out: Vec<(&'a str, Vec<f64>)> = Vec::new();
        let mut last = usize::MAX;
        for (i, (&v, &session)) in cell.all.analysed().iter().zip(&cell.group.rows.sessions).enumerate() {
            if kept && aside.binary_search(&i).is_ok() {
                continue;
            }
            let unit = self.of(session);
            if out.get(last).is_none_or(|(u, _)| *u != unit) {
                last = match out.iter().position(|(u, _)| *u == unit) {
                    Some(k) => k,
                    None => {
                        out.push((unit, Vec::new()));
                        out.len() - 1
                    }
                };
            }
            out[last].1.push(v);
        }
        out.into_iter().collect()
    }
}

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
    let engine = crate::vocab::engine_metric;
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

fn run_job(
    job: Job,
    meta: &MetricMeta,
    analysed: &[Analysed],
    settings: &StatsSettings,
    units: &Units<'_>,
) -> Result<(ComparisonStat, Arms), String> {
    let what = || {
        let context: Vec<String> = job.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "compare {} {} vs {} ({}) · {}",
            job.factor,
            job.level,
            job.baseline,
            context.join(" "),
            meta.name
        )
    };
    let fail = |e: StatsError| format!("{}: {e}", what());
    let kind = meta.mean_kind;
    // the metric's own method (`method:` of the metric, else `analysis.method`)
    let own = StatsSettings { method: meta.method, ..settings.clone() };
    let settings = &own;
    let mut replication = None;
    // Independent: the one cell of each side.
    let mut single: Option<(&Analysed, &Analysed)> = None;
    // Paired across disjoint boots: each side's boots, their log-values less the blocks'
    // centres, of the trials kept and of all trials.
    let mut unit_logs: Option<[UnitLogs; 2]> = None;
    let mut unit_logs_all: Option<[UnitLogs; 2]> = None;
    let (a_kept, b_kept, a_all, b_all, pairs) = match &job.paired_by {
        None => {
            // Without pairing the context holds every other key: one cell per side.
            let (&(_, a), &(_, b)) =
                (job.base.first().ok_or_else(what)?, job.other.first().ok_or_else(what)?);
            let (a, b) = (&analysed[a], &analysed[b]);
            single = Some((a, b));
            let (ua, ub) = (units.values(a, false), units.values(b, false));
            if ua.keys().all(|u| !ub.contains_key(u)) {
                // Disjoint boots: a boot's state is shared by its trials, so the boots are
                // the observations, and a level's interval holds the variation between them.
                let (ka, kb) = (units.values(a, true), units.values(b, true));
                let side = |by_unit: &IndexMap<&str, Vec<f64>>| {
                    let groups: Vec<Vec<f64>> = by_unit.values().cloned().collect();
                    let all: Vec<f64> = groups.iter().flatten().copied().collect();
                    components(&groups, mean(&all))
                };
                replication = Some(replication_of(units, &[&ua, &ub], (side(&ka), side(&kb))));
            }
            match &replication {
                Some(r) if r.baseline_units >= 2 && r.level_units >= 2 => {
                    let means = |by_unit: &IndexMap<&str, Vec<f64>>| {
                        let values: Vec<f64> = by_unit.values().map(|v| kind.transform(mean(v))).collect();
                        Observations::new(&values, kind).map_err(fail)
                    };
                    let (a_all, b_all) = (means(&ua)?, means(&ub)?);
                    // the kept trials differ from all of them only where some were set aside
                    let kept = |cell: &Analysed, all: &Observations| {
                        if cell.analysis.outliers.set_aside.is_empty() {
                            Ok(all.clone())
                        } else {
                            means(&units.values(cell, true))
                        }
                    };
                    (kept(a, &a_all)?, kept(b, &b_all)?, a_all, b_all, Vec::new())
                }
                _ => (a.kept.clone(), b.kept.clone(), a.all.clone(), b.all.clone(), Vec::new()),
            }
        }
        Some(_) => {
            // Pair the blocks both sides have; each block contributes its cell's mean.
            let other: HashMap<&str, usize> =
                job.other.iter().filter_map(|(b, i)| b.as_deref().map(|b| (b, *i))).collect();
            let pairs: Vec<(&str, usize, usize)> = job
                .base
                .iter()
                .filter_map(|(b, i)| b.as_deref().and_then(|b| other.get(b).map(|j| (b, *i, *j))))
                .collect();
            if pairs.is_empty() {
                return Err(format!("{}: no block has trials of both levels", what()));
            }
            let cells = |baseline: bool| -> Vec<&Analysed> {
                pairs.iter().map(|&(_, a, b)| &analysed[if baseline { a } else { b }]).collect()
            };
            let (base_cells, other_cells) = (cells(true), cells(false));
            let unit_set = |cells: &[&Analysed]| -> Vec<&str> {
                let mut out: Vec<&str> = Vec::new();
                for c in cells {
                    for u in units.values(c, false).into_keys() {
                        if !out.contains(&u) {
                            out.push(u);
                        }
                    }
                }
                out
            };
            let (ua, ub) = (unit_set(&base_cells), unit_set(&other_cells));
            // The blocks each unit ran, over both sides.
            let coverage = |u: &str| -> Vec<usize> {
                (0..pairs.len())
                    .filter(|&p| {
                        [base_cells[p], other_cells[p]].iter().any(|c| units.values(c, false).contains_key(u))
                    })
                    .collect()
            };
            let spans_blocks = ua.iter().chain(&ub).any(|u| coverage(u).len() > 1);
            // the blocks every unit ran: there the blocks' centres cancel
            let common: Vec<usize> =
                (0..pairs.len()).filter(|p| ua.iter().chain(&ub).all(|u| coverage(u).contains(p))).collect();
            // Disjoint boots that each ran several blocks: the pairs share their boots, so
            // the boot is the unit here too (docs/statistics.md, Sessions and boots), each
            // boot's mean log-value over the blocks all boots ran. (Units of one block
            // each are independent pairs, whose log-ratios carry the variation between
            // units already: those stay pairs.)
            if ua.iter().all(|u| !ub.contains(u)) && spans_blocks && !common.is_empty() {
                let (base_common, other_common): (Vec<&Analysed>, Vec<&Analysed>) =
                    common.iter().map(|&p| (base_cells[p], other_cells[p])).unzip();
                let logs = |kept: bool| unit_log_values(units, &base_common, &other_common, kept);
                let kept = logs(true);
                let side = |u: &UnitLogs| components(&u.residuals, 1.0);
                let counts: Vec<IndexMap<&str, Vec<f64>>> = [&base_common, &other_common]
                    .iter()
                    .map(|cells| {
                        let mut by_unit: IndexMap<&str, Vec<f64>> = IndexMap::new();
                        for c in cells.iter() {
                            for (u, v) in units.values(c, false) {
                                by_unit.entry(u).or_default().extend(v);
                            }
                        }
                        by_unit
                    })
                    .collect();
                replication =
                    Some(replication_of(units, &[&counts[0], &counts[1]], (side(&kept[0]), side(&kept[1]))));
                // with one boot on a side it is judged `unreplicated`, on the pairs
                // within the boots
                if replication.as_ref().is_some_and(|r| r.baseline_units >= 2 && r.level_units >= 2) {
                    unit_logs = Some(kept);
                    unit_logs_all = Some(logs(false));
                }
            }
            // Each side's per-block means, of the trials kept or of all trials.
            let means = |baseline: bool, kept: bool| {
                let samples: Vec<&Observations> = (if baseline { &base_cells } else { &other_cells })
                    .iter()
                    .map(|cell| if kept { &cell.kept } else { &cell.all })
                    .collect();
                block_means(&samples, kind).map_err(fail)
            };
            (
                means(true, true)?,
                means(false, true)?,
                means(true, false)?,
                means(false, false)?,
                pairs.iter().map(|p| p.0.to_owned()).collect(),
            )
        }
    };
    // The robust method compares trials by their ranks, every value (no outlier rule);
    // across disjoint boots the boots' means are the observations, too few for ranks, so
    // there it falls back to the parametric method and says so.
    let positive = |o: &Observations| o.values().iter().all(|v| *v > 0.0);
    let falls_back = match settings.method {
        Method::Robust if replication.is_some() => Some(format!(
            "the robust method ranks trials, and these levels were measured in disjoint {unit}s: their \
             {unit}s' means are compared by the parametric method",
            unit = replication.as_ref().map_or("boot", |r| r.unit)
        )),
        Method::Robust if !positive(&a_all) || !positive(&b_all) => Some(
            "the robust method ranks the logarithms of the values, and a value here is 0 or below: \
             compared by the parametric method"
                .to_owned(),
        ),
        _ => None,
    };
    let parametric = StatsSettings { method: Method::Parametric, ..settings.clone() };
    let settings = if falls_back.is_some() { &parametric } else { settings };
    let robust = settings.method == Method::Robust;
    let (a_kept, b_kept) = if robust { (a_all.clone(), b_all.clone()) } else { (a_kept, b_kept) };
    let compare = |a: &Observations, b: &Observations, logs: Option<&[UnitLogs; 2]>| match logs {
        Some([la, lb]) => {
            let centre = |o: &Observations| kind.transform(mean(o.analysed()));
            compare_unit_logs(&la.means, &lb.means, kind, (centre(a), centre(b)), settings)
        }
        None => compare_design(job.paired_by.is_some(), a, b, settings),
    };
    let comparison = compare(&a_kept, &b_kept, unit_logs.as_ref()).map_err(fail)?;
    let vocabulary = match meta.unit.as_str() {
        "s" | "B/s" | "bit/s" | "op/s" => Vocabulary::Speed,
        _ => Vocabulary::Quality,
    };
    let wording =
        Wording { baseline: &job.baseline, level: &job.level, better: Some(meta.better), vocabulary };
    let replicate = match &replication {
        Some(r) => Replicate::Unit {
            unit: r.unit,
            trials: r.trials_per_unit.1.max(1),
            components: r.baseline_components.zip(r.level_components),
            units: r.baseline_units.min(r.level_units),
        },
        None => Replicate::Trial,
    };
    let judge = |c: &Comparison| match &replication {
        Some(r) if r.baseline_units < 2 || r.level_units < 2 => {
            unreplicated(c, settings, &wording, r.unit, (r.baseline_units, r.level_units))
        }
        _ => verdict_per(c, settings, &wording, replicate),
    };
    let judged = judge(&comparison);
    // Every value compared, the outliers set aside on either side kept in: for the
    // verdict with them, and for a single trial's prediction interval, made from every
    // value of the other side (docs/statistics.md, A single number)
    let set_aside = a_kept != a_all || b_kept != b_all;
    let all = if set_aside {
        compare(&a_all, &b_all, unit_logs_all.as_ref()).map_err(fail)?
    } else {
        comparison.clone()
    };
    // Outliers were set aside on either side: would keeping them change the verdict?
    let verdict_with_outliers = set_aside.then(|| judge(&all).kind).filter(|k| *k != judged.kind);
    // Flagged values stayed in: would setting them aside change the verdict? (Trial by
    // trial only: a boot's mean is not one value to set aside.)
    let verdict_without_outliers = match (single, &replication) {
        (Some((a, b)), None) if !robust && (a.trimmed.is_some() || b.trimmed.is_some()) => {
            let a = a.trimmed.as_ref().unwrap_or(&a.kept);
            let b = b.trimmed.as_ref().unwrap_or(&b.kept);
            let without = compare(a, b, None).map_err(fail)?;
            Some(judge(&without).kind).filter(|k| *k != judged.kind)
        }
        _ => None,
    };
    if let Some(r) = &mut replication {
        r.advice = judged.advice;
    }
    let mut judged = judged;
    if let Some(why) = &falls_back {
        judged.sentence.push_str(&format!(" ({why})"));
    }
    let arms = Arms {
        baseline: job.base.iter().map(|(_, i)| *i).collect(),
        level: job.other.iter().map(|(_, i)| *i).collect(),
        entry: job.entry,
    };
    let unreplicated = judged.kind == VerdictKind::Unreplicated;
    let (ci_low, ci_high) = match comparison.interval {
        // unreplicated: the interval within the boots is no interval of the levels' ratio
        // (it leaves out how boots differ); the sentence gives it for what it is
        _ if unreplicated => (None, None),
        RatioInterval::Bounded { low, high } => (Some(low), Some(high)),
        RatioInterval::NoEstimate | RatioInterval::Unbounded | RatioInterval::TooFew { .. } => (None, None),
    };
    let mut stat = ComparisonStat {
        factor: job.factor,
        baseline: job.baseline,
        level: job.level,
        context: job.context,
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        design: comparison.design,
        paired_by: job.paired_by,
        pairs,
        baseline_arm: arm(&a_kept, settings),
        level_arm: arm(&b_kept, settings),
        ratio: comparison.ratio,
        change_pct: (comparison.ratio - 1.0) * 100.0,
        ci_low,
        ci_high,
        // nor are the test and the detectable effect of the trials within the boots
        p_value: comparison.p_value.filter(|_| !unreplicated),
        p_adjusted: None,
        mde_pct: comparison.mde.map(|m| m * 100.0).filter(|_| !unreplicated),
        verdict: judged.kind,
        sentence: judged.sentence,
        more_trials: judged.more_trials,
        verdict_with_outliers,
        verdict_without_outliers,
        replication: replication.map(Box::new),
        mixtures: None,
        prediction: None,
        log_ratio: None,
        log_ratio_all: None,
        method: comparison.method,
        coverage_pct: comparison.coverage.map(|c| c * 100.0),
    };
    super::answers::annotate(
        &mut stat,
        (&comparison, &all),
        (&a_all, &b_all),
        meta,
        settings,
        single.is_some(),
    );
    Ok((stat, arms))
}

/// The boots (or sessions) behind a comparison between disjoint ones: how many each side
/// has (`sides`: unit → its trials), how many trials they hold, and each side's variance
/// components.
fn replication_of(
    units: &Units<'_>,
    sides: &[&IndexMap<&str, Vec<f64>>; 2],
    (baseline_components, level_components): (Option<Components>, Option<Components>),
) -> Replication {
    let sizes = sides.iter().flat_map(|s| s.values().map(Vec::len));
    Replication {
        unit: if units.all_boots { "boot" } else { "session" },
        baseline_units: sides[0].len(),
        level_units: sides[1].len(),
        trials_per_unit: (sizes.clone().max().unwrap_or(0), sizes.min().unwrap_or(0)),
        baseline_components,
        level_components,
        advice: None,
    }
}

/// One side of a paired comparison across disjoint boots: each boot's log-values (on
/// the analysis scale) less their blocks' centres, and the boot's mean of them.
#[derive(Debug, Clone, PartialEq)]
struct UnitLogs {
    /// Per boot, each trial's ln(value) − its block's centre.
    residuals: Vec<Vec<f64>>,
    /// Per boot, the mean over its blocks of the block's mean residual: every block
    /// weighs alike, however many trials it had.
    means: Vec<f64>,
}

/// Both sides' [`UnitLogs`]. A block's centre is the mean, over both sides' boots, of a
/// boot's mean log-value in that block, so with every block in every boot the centres
/// cancel in the difference between the sides and the boots' means carry the variation
/// between boots (docs/statistics.md, Sessions and boots).
fn unit_log_values(units: &Units<'_>, base: &[&Analysed], other: &[&Analysed], kept: bool) -> [UnitLogs; 2] {
    // per side, per block: unit → the logs of its trials
    let logs = |cells: &[&Analysed]| -> Vec<IndexMap<&str, Vec<f64>>> {
        cells
            .iter()
            .map(|c| {
                units
                    .values(c, kept)
                    .into_iter()
                    .map(|(u, v)| (u, v.iter().map(|x| x.ln()).collect()))
                    .collect()
            })
            .collect()
    };
    let (la, lb) = (logs(base), logs(other));
    let centres: Vec<f64> = la
        .iter()
        .zip(&lb)
        .map(|(a, b)| {
            let means: Vec<f64> = a.values().chain(b.values()).map(|v| mean(v)).collect();
            mean(&means)
        })
        .collect();
    let side = |blocks: &[IndexMap<&str, Vec<f64>>]| -> UnitLogs {
        let mut by_unit: IndexMap<&str, (Vec<f64>, Vec<f64>)> = IndexMap::new();
        for (block, centre) in blocks.iter().zip(&centres) {
            for (unit, v) in block {
                let entry = by_unit.entry(*unit).or_default();
                entry.0.extend(v.iter().map(|x| x - centre));
                entry.1.push(mean(v) - centre);
            }
        }
        UnitLogs {
            residuals: by_unit.values().map(|(r, _)| r.clone()).collect(),
            means: by_unit.values().map(|(_, m)| mean(m)).collect(),
        }
    };
    [side(&la), side(&lb)]
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

fn arm(sample: &Observations, settings: &StatsSettings) -> Arm {
    let median = (settings.method == Method::Robust).then(|| {
        // order statistics are the same on either scale: those of the values themselves
        let values = sorted(sample.values());
        let interval = median_interval(&values, settings.confidence);
        Median {
            value: median_of_sorted(&values),
            ci_low: interval.map(|i| i.low),
            ci_high: interval.map(|i| i.high),
        }
    });
    let centre = mean(sample.analysed());
    let interval = mean_interval(sample, settings.confidence);
    let finite = |x: f64| x.is_finite().then_some(x);
    Arm {
        n: sample.len(),
        mean: sample.kind().transform(centre),
        moe: interval.map(|i| i.moe),
        moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
        ci_low: interval.and_then(|i| finite(i.low)),
        ci_high: interval.and_then(|i| finite(i.high)),
        median,
    }
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
