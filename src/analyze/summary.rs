//! The summary of an experiment's store: every cell's statistics, every comparison the
//! spec asks for with its verdict, the methodology warnings, failures, pending cells,
//! the hosts' facts and how to reproduce. Serialised, it is `summary.json` (DESIGN §8);
//! the report only formats it.
//!
//! Relative quantities are fractions inside the statistics core; here, at the boundary
//! to readers, every `*_pct` field is a percentage (5.0 means 5 %).

use std::collections::{BTreeSet, HashMap, HashSet};

use indexmap::IndexMap;
use polars::error::PolarsError;
use rayon::prelude::*;
use serde::Serialize;

use super::compare::{Comparison, Design, RatioInterval};
use super::lint;
use super::stats::{self, CellAnalysis, RunsNeeded, StabilityFlag};
use super::table::{Group, Table, TrialCounts, status_name};
use super::verdict::{Replicate, Vocabulary, Wording, verdict_per};
use super::{
    MeanKind, OutlierRule, Sample, Settings, StatsError, VerdictKind, analyze_cell, compare_independent,
    compare_paired, holm,
};
use crate::plan::{Cell, Plan};
use crate::spec::{Experiment, OutlierMethod, Repetitions, Spec, parse_percent};
use crate::store::{BOOT_ID, Event, Loaded, Name, Names, Trials};
use crate::vocab::Better;

/// Why the summary could not be built. Bad data in one cell is a warning, not this.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    #[error("building the table of trials: {0}")]
    Table(#[from] PolarsError),
    #[error("analysis settings: {0}")]
    Settings(#[from] StatsError),
}

/// A cell that cannot run where margin ran, and what it waits for (computed by the runner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The cell's label, `kernel=bare dom0_mem=unlimited`.
    pub cell: String,
    pub reason: String,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub experiment: String,
    pub description: Option<String>,
    pub settings: AnalysisSettings,
    pub trials: TrialCounts,
    pub metrics: Vec<MetricMeta>,
    pub cells: Vec<CellStat>,
    pub comparisons: Vec<ComparisonStat>,
    pub warnings: Vec<lint::Warning>,
    pub pending: Vec<Pending>,
    pub failures: Vec<Failure>,
    /// What went wrong with cells outside their trials, session by session.
    pub cell_failures: Vec<CellFailure>,
    pub environment: Environment,
    pub reproduce: Reproduce,
}

/// The analysis settings in force, as a reader wants to see them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysisSettings {
    /// The confidence the experiment states.
    pub confidence: f64,
    /// The level the intervals are computed at: higher than `confidence` when cells stop
    /// adaptively, so that they still cover at `confidence`.
    pub interval_confidence: f64,
    /// `until: verdict`: the trial counts at which the comparisons were looked at; the
    /// intervals are at 1 − α/K for these K looks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub looks: Vec<u32>,
    /// The practical-significance band ±δ.
    pub threshold_pct: f64,
    /// The relative margin of error "runs needed" aims at.
    pub target_pct: f64,
    pub outliers: OutlierRule,
    /// How the p-values of the report are adjusted for multiplicity.
    pub p_adjustment: &'static str,
    /// Runs needed for the target margin at a few typical CVs: what a cell of one trial,
    /// whose spread is unknown, would take (STATISTICS §1).
    pub runs_needed_at_cv: Vec<RunsAtCv>,
}

/// Runs needed for the target margin if the trials varied by `cv_pct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunsAtCv {
    pub cv_pct: u32,
    pub runs: usize,
}

/// The CVs (in %) at which a cell of one trial is told what it would take.
const TYPICAL_CVS: [u32; 3] = [1, 5, 10];

fn runs_at_typical_cvs(settings: &Settings) -> Vec<RunsAtCv> {
    TYPICAL_CVS
        .iter()
        .filter_map(|&cv_pct| {
            match stats::runs_needed(f64::from(cv_pct) / 100.0, settings.target_margin, settings.confidence)?
            {
                RunsNeeded::Runs(runs) => Some(RunsAtCv { cv_pct, runs }),
                RunsNeeded::MoreThan(_) => None,
            }
        })
        .collect()
}

/// How a metric is read: unit, direction and mean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetricMeta {
    pub name: String,
    pub unit: String,
    pub better: Better,
    pub mean_kind: MeanKind,
}

/// One cell × metric (DESIGN §8 names the fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellStat {
    /// The cell id.
    pub cell: String,
    pub label: String,
    pub levels: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub mean_kind: MeanKind,
    /// Trials kept (outliers set aside are not counted).
    pub n: usize,
    pub mean: f64,
    pub sd: Option<f64>,
    /// sd / mean, a fraction.
    pub cv: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mad: f64,
    pub ci_low: Option<f64>,
    /// `None` also when a harmonic mean's interval has no finite upper end.
    pub ci_high: Option<f64>,
    /// Margin of error ± in the metric's unit.
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    /// n = 2: the t quantile is 12.7 and the interval very wide.
    pub very_wide: bool,
    pub median_ci_low: Option<f64>,
    pub median_ci_high: Option<f64>,
    /// Values left out of the statistics by the outlier rule, in trial order.
    pub set_aside: Vec<f64>,
    /// Values the rule flags but keeps (the cell is too small to set them aside).
    pub flagged: Vec<f64>,
    pub runs_needed: Option<usize>,
    /// Set when reaching the target would take more than this many runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed_exceeds: Option<usize>,
    pub flags: Vec<StabilityFlag>,
    /// Every analysed value, in the order the trials started.
    pub values: Vec<f64>,
    pub sessions: usize,
}

/// One side of a comparison: the trials (or, paired, the per-block means) it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    pub n: usize,
    pub mean: f64,
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

/// A level against the baseline for one metric in one context (DESIGN §8 names the fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparisonStat {
    pub factor: String,
    pub baseline: String,
    pub level: String,
    /// The levels of the other factors this comparison holds fixed.
    pub context: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub design: Design,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired_by: Option<String>,
    /// Paired: the blocks (levels of `paired_by`) both sides have.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<String>,
    pub baseline_arm: Arm,
    pub level_arm: Arm,
    /// mean_level / mean_baseline (paired: the geometric mean of the ratios).
    pub ratio: f64,
    /// (ratio − 1) as a percentage.
    pub change_pct: f64,
    /// The ratio's interval; `None` when there is none (too few trials, unbounded).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub p_value: Option<f64>,
    /// Holm-adjusted across every comparison of the report.
    pub p_adjusted: Option<f64>,
    pub mde_pct: Option<f64>,
    pub verdict: VerdictKind,
    pub sentence: String,
    /// Inconclusive: about how many more trials per level would settle it.
    pub more_trials: Option<usize>,
    /// The verdict if the outliers set aside were kept, when it differs.
    pub verdict_with_outliers: Option<VerdictKind>,
    /// The verdict if the flagged values (kept by default) were set aside, when it
    /// differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict_without_outliers: Option<VerdictKind>,
    /// The levels came from disjoint boots (or sessions): how many of each, and that the
    /// comparison is of their means (docs/statistics.md, Sessions and boots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<Replication>,
}

/// The boots (or sessions) a comparison between disjoint ones rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replication {
    /// `boot` when every session recorded its boot, else `session`.
    pub unit: &'static str,
    pub baseline_units: usize,
    pub level_units: usize,
    /// The most trials one of the units holds, and the fewest.
    pub trials_per_unit: (usize, usize),
}

/// The unit each session's trials vary by between levels: its boot when it recorded
/// one (two runs in one boot are one unit), else the session itself (each import is one).
pub(crate) struct Units<'a> {
    by_session: HashMap<&'a str, &'a str>,
    names: &'a Names,
    /// Whether every session named a boot.
    all_boots: bool,
}

impl<'a> Units<'a> {
    pub(crate) fn new(loaded: &'a Loaded) -> Self {
        let mut by_session = HashMap::new();
        let mut all_boots = true;
        for s in loaded.sessions.iter().filter(|s| s.event == Event::Start) {
            match s.facts.get(BOOT_ID) {
                Some(boot) => {
                    by_session.insert(s.session.as_str(), boot.as_str());
                }
                None => all_boots = false,
            }
        }
        Units { by_session, names: &loaded.trials.names, all_boots }
    }

    fn of(&self, session: Name) -> &'a str {
        let id = self.names.get(session);
        self.by_session.get(id).copied().unwrap_or(id)
    }

    /// Each unit's values of a cell (all its trials, or those kept), in first-seen order,
    /// on the analysis scale.
    fn values(&self, cell: &Analysed, kept: bool) -> IndexMap<&'a str, Vec<f64>> {
        let aside = &cell.analysis.outliers.set_aside;
        let mut out: IndexMap<&str, Vec<f64>> = IndexMap::new();
        for (i, (&v, &session)) in cell.all.analysed().iter().zip(&cell.group.sessions).enumerate() {
            if kept && aside.binary_search(&i).is_ok() {
                continue;
            }
            out.entry(self.of(session)).or_default().push(v);
        }
        out
    }
}

/// A trial that did not yield metrics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    pub cell: String,
    pub trial: String,
    pub repetition: u32,
    pub warmup: bool,
    pub host: String,
    pub session: String,
    pub started_at: Option<String>,
    pub status: &'static str,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

/// A cell abandoned by a session, or whose `cleanup` failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellFailure {
    pub cell: String,
    pub host: String,
    pub session: String,
    /// When the session ended.
    pub at: String,
    /// `abandoned` or `cleanup failed`.
    pub what: String,
    pub why: String,
}

/// The facts of every machine state trials ran in: one column per host and distinct set
/// of facts (a host rebooted into another kernel is two columns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Environment {
    pub columns: Vec<EnvColumn>,
    pub rows: Vec<FactRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvColumn {
    pub host: String,
    pub sessions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FactRow {
    pub fact: String,
    /// One per column; `None` where that column lacks the fact.
    pub values: Vec<Option<String>>,
    pub differs: bool,
}

/// Everything needed to run the experiment again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reproduce {
    pub experiment_file: String,
    /// The command line that repeats the runs.
    pub command: String,
    /// The experiment's command templates by key (`setup`, `run`, …).
    pub commands: IndexMap<String, String>,
    /// blake3 of the experiment file as it is now.
    pub spec_hash: String,
    /// The version of margin writing this summary.
    pub margin_version: String,
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionInfo {
    pub session: String,
    pub host: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub seed: u64,
    pub spec_hash: String,
    pub margin_version: String,
    /// The experiment file has changed since this session ran.
    pub spec_changed: bool,
}

/// The confidence level the experiment states (`analysis.confidence`, else 0.95).
pub fn nominal_confidence(spec: &Spec) -> f64 {
    spec.analysis.confidence.as_ref().map_or(Settings::default().confidence, |c| c.value)
}

/// The statistics settings an experiment asks for (`analysis:`, `repetitions:`); with
/// adaptive repetitions (either rule) the intervals are at [`super::interval_confidence`].
pub fn settings(spec: &Spec) -> Settings {
    let defaults = Settings::default();
    let analysis = &spec.analysis;
    let threshold = analysis
        .threshold
        .as_ref()
        .and_then(|t| parse_percent(&t.value).ok())
        .map_or(defaults.threshold, |p| p.0);
    let repetitions = spec.repetitions();
    let target_margin = match repetitions {
        Repetitions::Adaptive { target, .. } => target.0,
        Repetitions::Fixed(_) | Repetitions::Verdict { .. } => threshold,
    };
    let set_aside = analysis.outliers.as_ref().is_some_and(|o| o.set_aside);
    let outliers = match &analysis.outliers {
        None => defaults.outliers,
        Some(o) => {
            let cutoff = o.cutoff.as_ref().map(|c| c.value);
            match o.method {
                OutlierMethod::Mad => OutlierRule::Mad { cutoff: cutoff.unwrap_or(3.5) },
                OutlierMethod::Iqr => OutlierRule::Iqr { cutoff: cutoff.unwrap_or(1.5) },
                OutlierMethod::None => OutlierRule::None,
            }
        }
    };
    Settings {
        confidence: super::interval_confidence(nominal_confidence(spec), &repetitions),
        threshold,
        target_margin,
        outliers,
        set_aside,
        ..defaults
    }
}

/// One analysed cell × metric, with what the comparisons and lints need besides the
/// published statistics.
pub(crate) struct Analysed {
    pub group: Group,
    pub meta: usize,
    pub all: Sample,
    pub kept: Sample,
    /// Without the flagged values the rule would set aside, when they were kept.
    pub trimmed: Option<Sample>,
    pub analysis: CellAnalysis,
}

/// Analyses the store of `exp` against its current plan.
pub fn summarize_store(
    exp: &Experiment,
    plan: &Plan,
    loaded: &Loaded,
    pending: &[Pending],
) -> Result<Summary, AnalyzeError> {
    let settings = settings(&exp.spec);
    settings.validate()?;
    let table = Table::build(&loaded.trials, plan)?;
    let metrics = metric_meta(exp, &loaded.trials);
    let names = &loaded.trials.names;
    let metric_index: HashMap<Name, usize> =
        metrics.iter().enumerate().filter_map(|(i, m)| Some((names.find(&m.name)?, i))).collect();

    let mut warnings = lint::store_warnings(loaded, &table.counts);
    let mut groups = table.groups()?;
    groups.sort_by_key(|g| (g.cell, metric_index.get(&g.metric).copied().unwrap_or(usize::MAX)));
    let results: Vec<Result<Analysed, String>> = groups
        .into_par_iter()
        .map(|group| {
            let meta = metric_index[&group.metric];
            let fail = |e: StatsError| {
                format!("{} · {}: not analysed: {e}", plan.label(&plan.cells[group.cell]), metrics[meta].name)
            };
            let all = Sample::new(&group.values, metrics[meta].mean_kind).map_err(fail)?;
            let analysis = analyze_cell(&all, &settings).map_err(fail)?;
            let kept = all.without(&analysis.outliers.set_aside).map_err(fail)?;
            // flagged values that stay in: the sample without them, for the verdict beside
            let trimmed = if analysis.outliers.set_aside.is_empty() && !analysis.candidates.is_empty() {
                Some(all.without(&analysis.candidates).map_err(fail)?)
            } else {
                None
            };
            Ok(Analysed { group, meta, all, kept, trimmed, analysis })
        })
        .collect();
    let mut analysed = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(a) => analysed.push(a),
            Err(message) => warnings.push(lint::Warning::new(lint::WarningKind::NotAnalysed, message)),
        }
    }

    let cells: Vec<CellStat> = analysed.par_iter().map(|a| cell_stat(plan, &metrics[a.meta], a)).collect();
    let units = Units::new(loaded);
    let (mut comparisons, arms) =
        compare_all(exp, plan, &metrics, &analysed, &settings, &units, &mut warnings);
    adjust(&mut comparisons)?;

    warnings.extend(lint::cell_warnings(plan, &metrics, &analysed, &primary_metrics(exp, &metrics)));
    warnings.extend(lint::command_warnings(exp, plan, loaded, &analysed));
    warnings.extend(lint::comparison_warnings(exp, loaded, &analysed, &comparisons, &arms));

    Ok(Summary {
        experiment: exp.name.clone(),
        description: exp.spec.description.clone(),
        settings: AnalysisSettings {
            confidence: nominal_confidence(&exp.spec),
            interval_confidence: settings.confidence,
            looks: exp.spec.repetitions().looks(),
            threshold_pct: settings.threshold * 100.0,
            target_pct: settings.target_margin * 100.0,
            outliers: settings.outliers,
            p_adjustment: "holm",
            runs_needed_at_cv: runs_at_typical_cvs(&settings),
        },
        trials: table.counts,
        metrics,
        cells,
        comparisons,
        warnings,
        pending: pending.to_vec(),
        failures: failures(plan, &loaded.trials),
        cell_failures: cell_failures(plan, loaded),
        environment: environment(loaded),
        reproduce: reproduce(exp, loaded),
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
        }
    }
    // A metric the spec names but no trial reported has nothing to show.
    metas.retain(|name, _| trials.names.find(name).is_some_and(|n| trials.metrics.contains_key(&n)));
    metas.into_values().collect()
}

fn cell_stat(plan: &Plan, meta: &MetricMeta, a: &Analysed) -> CellStat {
    let cell = &plan.cells[a.group.cell];
    let s = &a.analysis.summary;
    let interval = s.interval.as_ref();
    let finite = |x: f64| x.is_finite().then_some(x);
    let values = a.all.values();
    let flagged = a.analysis.outliers.flagged.iter().filter(|i| !a.analysis.outliers.set_aside.contains(i));
    let (runs_needed, runs_needed_exceeds) = match s.runs_needed {
        Some(RunsNeeded::Runs(n)) => (Some(n), None),
        Some(RunsNeeded::MoreThan(n)) => (None, Some(n)),
        None => (None, None),
    };
    CellStat {
        cell: cell.id.to_string(),
        label: plan.label(cell),
        levels: plan.levels(cell).map(|(k, v)| (k.to_owned(), v.text.clone())).collect(),
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        mean_kind: s.mean_kind,
        n: s.n,
        mean: s.mean,
        sd: s.sd,
        cv: s.cv,
        median: s.median,
        min: s.min,
        max: s.max,
        mad: s.mad,
        ci_low: interval.and_then(|i| finite(i.low)),
        ci_high: interval.and_then(|i| finite(i.high)),
        moe: interval.map(|i| i.moe),
        moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
        very_wide: interval.is_some_and(|i| i.very_wide),
        median_ci_low: s.median_interval.map(|m| m.low),
        median_ci_high: s.median_interval.map(|m| m.high),
        set_aside: a.analysis.set_aside.clone(),
        flagged: flagged.map(|&i| values[i]).collect(),
        runs_needed,
        runs_needed_exceeds,
        flags: a.analysis.flags.clone(),
        values: values.to_vec(),
        sessions: a.group.sessions.iter().collect::<HashSet<_>>().len(),
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
fn primary_metrics<'m>(exp: &Experiment, metrics: &'m [MetricMeta]) -> HashSet<&'m str> {
    let engine = crate::vocab::ENGINE_METRICS;
    let named = |m: &str| exp.spec.metrics.keys().any(|k| k.value == m);
    let parsed: HashSet<&str> =
        metrics.iter().map(|m| m.name.as_str()).filter(|m| !engine.contains(m)).collect();
    let mut primary: HashSet<&str> =
        metrics.iter().map(|m| m.name.as_str()).filter(|m| engine.contains(m) && named(m)).collect();
    if parsed.is_empty() {
        if primary.is_empty() {
            primary.insert("wall_time");
        }
    } else {
        primary.extend(parsed);
    }
    primary
}

fn compare_all(
    exp: &Experiment,
    plan: &Plan,
    metrics: &[MetricMeta],
    analysed: &[Analysed],
    settings: &Settings,
    units: &Units<'_>,
    warnings: &mut Vec<lint::Warning>,
) -> (Vec<ComparisonStat>, Vec<Arms>) {
    let key = |name: &str| plan.keys.iter().position(|k| k == name);
    let primary = primary_metrics(exp, metrics);
    let mut jobs: Vec<Job> = Vec::new();
    for (entry_index, entry) in exp.spec.analysis.compare.iter().enumerate() {
        let entry = &entry.value;
        let Some(factor) = key(&entry.factor.value) else {
            warnings.push(lint::Warning::new(
                lint::WarningKind::Compare,
                format!("compare: `{}` is not a factor of the plan; nothing compared", entry.factor.value),
            ));
            continue;
        };
        let paired = match &entry.paired_by {
            None => None,
            Some(p) => match key(&p.value) {
                Some(k) => Some(k),
                None => {
                    warnings.push(lint::Warning::new(
                        lint::WarningKind::Compare,
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
            warnings.push(lint::Warning::new(
                lint::WarningKind::Compare,
                format!(
                    "compare {}: no analysed trials of the baseline `{baseline}` yet; nothing compared",
                    entry.factor.value
                ),
            ));
        }
    }

    let results: Vec<Result<(ComparisonStat, Arms), String>> =
        jobs.par_iter().map(|job| run_job(job, &metrics[job.meta], analysed, settings, units)).collect();
    let mut comparisons = Vec::with_capacity(results.len());
    let mut arms = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok((c, a)) => {
                comparisons.push(c);
                arms.push(a);
            }
            Err(message) => warnings.push(lint::Warning::new(lint::WarningKind::Compare, message)),
        }
    }
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
) -> Option<lint::Warning> {
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
        lint::Warning::new(
            lint::WarningKind::Confounded,
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
    job: &Job,
    meta: &MetricMeta,
    analysed: &[Analysed],
    settings: &Settings,
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
    let mut replication = None;
    // Independent: the one cell of each side.
    let mut single: Option<(&Analysed, &Analysed)> = None;
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
                let sizes = ua.values().chain(ub.values()).map(Vec::len);
                replication = Some(Replication {
                    unit: if units.all_boots { "boot" } else { "session" },
                    baseline_units: ua.len(),
                    level_units: ub.len(),
                    trials_per_unit: (sizes.clone().max().unwrap_or(0), sizes.min().unwrap_or(0)),
                });
            }
            match &replication {
                Some(r) if r.baseline_units >= 2 && r.level_units >= 2 => {
                    let means = |by_unit: &IndexMap<&str, Vec<f64>>| {
                        let values: Vec<f64> =
                            by_unit.values().map(|v| kind.transform(stats::mean(v))).collect();
                        Sample::new(&values, kind).map_err(fail)
                    };
                    let (a_all, b_all) = (means(&ua)?, means(&ub)?);
                    // the kept trials differ from all of them only where some were set aside
                    let kept = |cell: &Analysed, all: &Sample| {
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
            // Each side's per-block means, of the trials kept or of all trials.
            let means = |baseline: bool, kept: bool| {
                let samples: Vec<&Sample> = pairs
                    .iter()
                    .map(|&(_, a, b)| {
                        let cell = &analysed[if baseline { a } else { b }];
                        if kept { &cell.kept } else { &cell.all }
                    })
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
    let compare = |a: &Sample, b: &Sample| compare_design(job.paired_by.is_some(), a, b, settings);
    let comparison = compare(&a_kept, &b_kept).map_err(fail)?;
    let vocabulary = match meta.unit.as_str() {
        "s" | "B/s" | "bit/s" | "op/s" => Vocabulary::Speed,
        _ => Vocabulary::Quality,
    };
    let wording =
        Wording { baseline: &job.baseline, level: &job.level, better: Some(meta.better), vocabulary };
    let replicate = match &replication {
        Some(r) => Replicate::Unit { unit: r.unit, trials: r.trials_per_unit.1.max(1) },
        None => Replicate::Trial,
    };
    let judge = |c: &Comparison| match &replication {
        Some(r) if r.baseline_units < 2 || r.level_units < 2 => unreplicated(c, r, &wording),
        _ => verdict_per(c, settings, &wording, replicate),
    };
    let judged = judge(&comparison);
    // Outliers were set aside on either side: would keeping them change the verdict?
    let verdict_with_outliers = if a_kept != a_all || b_kept != b_all {
        let with = compare(&a_all, &b_all).map_err(fail)?;
        Some(judge(&with).kind).filter(|k| *k != judged.kind)
    } else {
        None
    };
    // Flagged values stayed in: would setting them aside change the verdict? (Trial by
    // trial only: a boot's mean is not one value to set aside.)
    let verdict_without_outliers = match (single, &replication) {
        (Some((a, b)), None) if a.trimmed.is_some() || b.trimmed.is_some() => {
            let a = a.trimmed.as_ref().unwrap_or(&a.kept);
            let b = b.trimmed.as_ref().unwrap_or(&b.kept);
            let without = compare(a, b).map_err(fail)?;
            Some(judge(&without).kind).filter(|k| *k != judged.kind)
        }
        _ => None,
    };
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
        RatioInterval::NoEstimate | RatioInterval::Unbounded => (None, None),
    };
    let stat = ComparisonStat {
        factor: job.factor.clone(),
        baseline: job.baseline.clone(),
        level: job.level.clone(),
        context: job.context.clone(),
        metric: meta.name.clone(),
        unit: meta.unit.clone(),
        design: comparison.design,
        paired_by: job.paired_by.clone(),
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
        replication,
    };
    Ok((stat, arms))
}

/// A paired side's observations: each block's mean, on the metric's scale.
fn block_means(cells: &[&Sample], kind: MeanKind) -> Result<Sample, StatsError> {
    let values: Vec<f64> = cells.iter().map(|s| kind.transform(stats::mean(s.analysed()))).collect();
    Sample::new(&values, kind)
}

/// Fieller's interval with Welch's degrees of freedom between independent sides, or the
/// paired log-ratios of per-block means.
fn compare_design(
    paired: bool,
    a: &Sample,
    b: &Sample,
    settings: &Settings,
) -> Result<Comparison, StatsError> {
    if paired { compare_paired(a, b, settings) } else { compare_independent(a, b, settings) }
}

/// The cells one comparison of the plan sets side by side: a `compare` entry's baseline
/// against one of its levels, in one context (the levels of the other factors), as
/// [`summarize_store`] forms its comparisons, for every metric.
#[derive(Debug, Clone, PartialEq)]
pub struct CellComparison {
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
/// grouping of [`summarize_store`]'s comparisons (built once, for `until: verdict`).
pub fn plan_comparisons(exp: &Experiment, plan: &Plan) -> Vec<CellComparison> {
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

/// The verdict the report gives a comparison of these cells' values (in trial order, on
/// the metric's scale), when the levels share their boots: each cell analysed and its
/// outliers handled as [`summarize_store`] does, the sides compared by the same interval
/// ([`compare_design`]: Fieller/Welch, or paired per-block means) at
/// `settings.confidence`, and classified by the same rule. One cell per side unless
/// `paired` (then the blocks both sides have).
pub fn trial_verdict(
    base: &[(Option<&str>, &[f64])],
    other: &[(Option<&str>, &[f64])],
    kind: MeanKind,
    paired: bool,
    settings: &Settings,
) -> Result<VerdictKind, StatsError> {
    let kept = |values: &[f64]| -> Result<Sample, StatsError> {
        let all = Sample::new(values, kind)?;
        let analysis = analyze_cell(&all, settings)?;
        all.without(&analysis.outliers.set_aside)
    };
    let (a, b) = if paired {
        let mut sides: (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
        for (block, values) in base {
            if let Some((_, theirs)) = other.iter().find(|(b, _)| block.is_some() && b == block) {
                sides.0.push(kept(values)?);
                sides.1.push(kept(theirs)?);
            }
        }
        if sides.0.is_empty() {
            return Ok(VerdictKind::Insufficient);
        }
        let (a, b): (Vec<&Sample>, Vec<&Sample>) = (sides.0.iter().collect(), sides.1.iter().collect());
        (block_means(&a, kind)?, block_means(&b, kind)?)
    } else {
        match (base.first(), other.first()) {
            (Some((_, a)), Some((_, b))) => (kept(a)?, kept(b)?),
            _ => return Ok(VerdictKind::Insufficient),
        }
    };
    let comparison = compare_design(paired, &a, &b, settings)?;
    Ok(super::verdict::classify(&comparison, settings.threshold))
}

/// The verdict of levels measured in disjoint boots, one of them in a single boot: what
/// the trials showed within their boots, and that it claims nothing (docs/statistics.md).
fn unreplicated(c: &Comparison, r: &Replication, wording: &Wording<'_>) -> super::Verdict {
    let unit = r.unit;
    let within = match c.interval.effect() {
        Some((low, high)) if c.ratio.is_finite() => format!(
            "within their {unit}s {} measured {:+.1} % against {} [{:+.1} %, {:+.1} %]; ",
            wording.level,
            (c.ratio - 1.0) * 100.0,
            wording.baseline,
            low * 100.0,
            high * 100.0
        ),
        _ => String::new(),
    };
    let (one, other) = if r.baseline_units < 2 {
        (wording.baseline, wording.level)
    } else {
        (wording.level, wording.baseline)
    };
    let sentence = format!(
        "unreplicated: {within}{one} was measured in one {unit}{}, so how much {unit}s differ is \
         unmeasured and no difference is claimed; run each level in 2 or more {unit}s",
        if r.baseline_units < 2 && r.level_units < 2 {
            format!(", and so was {other}")
        } else {
            String::new()
        }
    );
    super::Verdict { kind: VerdictKind::Unreplicated, sentence, more_trials: None }
}

fn arm(sample: &Sample, settings: &Settings) -> Arm {
    let centre = stats::mean(sample.analysed());
    let interval = stats::mean_interval(sample, settings.confidence);
    let finite = |x: f64| x.is_finite().then_some(x);
    Arm {
        n: sample.len(),
        mean: sample.kind().transform(centre),
        moe: interval.map(|i| i.moe),
        moe_pct: interval.and_then(|i| i.moe_rel).map(|r| r * 100.0),
        ci_low: interval.and_then(|i| finite(i.low)),
        ci_high: interval.and_then(|i| finite(i.high)),
    }
}

/// Holm's adjustment across every comparison of the report that has a p-value.
fn adjust(comparisons: &mut [ComparisonStat]) -> Result<(), StatsError> {
    let with_p: Vec<(usize, f64)> =
        comparisons.iter().enumerate().filter_map(|(i, c)| c.p_value.map(|p| (i, p))).collect();
    let adjusted = holm(&with_p.iter().map(|(_, p)| *p).collect::<Vec<_>>())?;
    for ((i, _), p) in with_p.into_iter().zip(adjusted) {
        comparisons[i].p_adjusted = Some(p);
    }
    Ok(())
}

/// Every trial of a current cell that did not yield metrics, in the order they ran.
fn failures(plan: &Plan, trials: &Trials) -> Vec<Failure> {
    let cells = trials.cells_in(plan);
    let names = &trials.names;
    trials
        .failed
        .iter()
        .filter_map(|f| {
            let t = f.trial;
            Some(Failure {
                cell: plan.label(&plan.cells[*cells.get(&trials.cell[t])?]),
                trial: trials.id(t).to_owned(),
                repetition: trials.repetition[t],
                warmup: trials.warmup[t],
                host: names.get(trials.host[t]).to_owned(),
                session: names.get(trials.session[t]).to_owned(),
                started_at: f.started_at.clone(),
                status: status_name(trials.status[t]),
                exit_code: f.exit_code,
                error: f.error.clone(),
            })
        })
        .collect()
}

/// Cells a session abandoned (a failed `setup`, too many failed trials) or whose
/// `cleanup` failed, from the sessions' end records: no trial record says so. Cells that
/// are no longer in the plan are left out.
fn cell_failures(plan: &Plan, loaded: &Loaded) -> Vec<CellFailure> {
    let ends = loaded.sessions.iter().filter(|s| s.event == Event::End && !s.problems.is_empty());
    let mut cells: Option<HashMap<String, usize>> = None;
    let mut out = Vec::new();
    for end in ends {
        let cells = cells.get_or_insert_with(|| {
            plan.cells.iter().enumerate().map(|(i, c)| (c.id.to_string(), i)).collect()
        });
        for p in &end.problems {
            let Some(&i) = cells.get(&p.cell) else { continue };
            out.push(CellFailure {
                cell: plan.label(&plan.cells[i]),
                host: end.host.clone(),
                session: end.session.clone(),
                at: end.at.clone(),
                what: p.what.clone(),
                why: p.why.clone(),
            });
        }
    }
    out
}

/// One column per host and distinct set of facts, in the order the sessions started.
fn environment(loaded: &Loaded) -> Environment {
    let mut columns: Vec<(EnvColumn, &IndexMap<String, String>)> = Vec::new();
    for session in loaded.sessions.iter().filter(|s| s.event == Event::Start) {
        match columns.iter_mut().find(|(c, facts)| c.host == session.host && **facts == session.facts) {
            Some((column, _)) => column.sessions.push(session.session.clone()),
            None => columns.push((
                EnvColumn { host: session.host.clone(), sessions: vec![session.session.clone()] },
                &session.facts,
            )),
        }
    }
    let mut keys: IndexMap<&str, ()> = IndexMap::new();
    for (_, facts) in &columns {
        keys.extend(facts.keys().map(|k| (k.as_str(), ())));
    }
    let rows = keys
        .keys()
        .map(|&fact| {
            let values: Vec<Option<String>> = columns.iter().map(|(_, f)| f.get(fact).cloned()).collect();
            let differs = values.iter().any(|v| *v != values[0]);
            FactRow { fact: fact.to_owned(), values, differs }
        })
        .collect();
    Environment { columns: columns.into_iter().map(|(c, _)| c).collect(), rows }
}

fn reproduce(exp: &Experiment, loaded: &Loaded) -> Reproduce {
    let spec_hash = blake3::hash(exp.source.as_bytes()).to_hex().to_string();
    let mut sessions: Vec<SessionInfo> = Vec::new();
    for record in &loaded.sessions {
        match record.event {
            Event::Start => sessions.push(SessionInfo {
                session: record.session.clone(),
                host: record.host.clone(),
                started_at: record.at.clone(),
                ended_at: None,
                seed: record.seed,
                spec_hash: record.spec_hash.clone(),
                margin_version: record.margin_version.clone(),
                spec_changed: record.spec_hash != spec_hash,
            }),
            Event::End => {
                if let Some(s) = sessions.iter_mut().find(|s| s.session == record.session) {
                    s.ended_at = Some(record.at.clone());
                }
            }
        }
    }
    let file = exp.path.display().to_string();
    // The order of the last session that ran trials is the one to repeat (an import has
    // no order); without one, the spec's.
    let trials = &loaded.trials;
    let imports: BTreeSet<&str> = (0..trials.len())
        .filter(|&t| trials.status[t] == crate::store::Status::Imported)
        .map(|t| trials.names.get(trials.session[t]))
        .collect();
    let seed = sessions
        .iter()
        .rev()
        .find(|s| !imports.contains(s.session.as_str()))
        .map(|s| s.seed)
        .or(exp.spec.seed);
    let command = match seed {
        Some(seed) => format!("margin run {file} --seed {seed}"),
        None => format!("margin run {file}"),
    };
    Reproduce {
        experiment_file: file,
        command,
        commands: exp.spec.commands().map(|(k, v)| (k.to_owned(), v.value.clone())).collect(),
        spec_hash,
        margin_version: env!("CARGO_PKG_VERSION").to_owned(),
        sessions,
    }
}
