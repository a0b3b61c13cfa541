//! The runs as a level (docs/statistics.md, Runs as a level): every comparison of the
//! experiment made again in each labelled run of its trials alone, the runs' verdicts set
//! side by side and pooled with the run as the unit — Hartung–Knapp over the runs'
//! log-ratios, t on runs − 1 degrees of freedom, as effects across the matrix pool
//! contexts ([`super::effects`]) — or said to depend on the run when Welch's test finds the
//! runs differ, or two runs claim opposite directions. And, for a report of one run
//! compared across boots, the period the boots spanned ([`period`]).

use indexmap::IndexMap;
use rayon::prelude::*;

use super::statistics;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::store::{BootRecord, SessionRecord, Snapshot, TrialRecord, Trials};
use crate::summary::ComparisonStat;
use crate::summary::across_runs::{Period, RunSpan, RunVerdict, RunsAnswer, RunsComparison};
use stats::StatsSettings;
use stats::notation::{change_and_interval, confidence_level};
use stats::pool::{LogRatio, pool};
use stats::verdict::VerdictKind;
use vocab::display::significant;

/// The name of a store's trials without a label, when other trials have one.
pub(crate) const UNLABELLED: &str = "(no label)";

/// One run's trials and sessions, and the experiment they are analysed by.
pub(crate) struct RunTrials<'a> {
    pub exp: &'a Experiment,
    pub plan: &'a Plan,
    pub records: Vec<TrialRecord>,
    pub sessions: Vec<SessionRecord>,
}

/// Whether `sessions` hold two runs or more to set side by side: two labels, or a label
/// beside sessions without one ([`UNLABELLED`]).
pub(crate) fn several(sessions: &[SessionRecord]) -> bool {
    let mut labels: Vec<&str> = sessions.iter().filter_map(|s| s.label.as_deref()).collect();
    labels.sort_unstable();
    labels.dedup();
    let unlabelled = sessions.iter().any(|s| s.label.is_none());
    !labels.is_empty() && labels.len() + usize::from(unlabelled) >= 2
}

/// The labelled runs of one store, in the order they started, with their trials (the
/// sessions without a label one run more, [`UNLABELLED`]); none when fewer than two.
pub(crate) fn labelled<'a>(
    exp: &'a Experiment,
    plan: &'a Plan,
    records: &[TrialRecord],
    sessions: &[SessionRecord],
) -> (Vec<RunSpan>, Vec<RunTrials<'a>>) {
    let name = |s: &SessionRecord| s.label.clone().unwrap_or_else(|| UNLABELLED.to_owned());
    let mut of_session: IndexMap<&str, String> = IndexMap::new();
    for s in sessions {
        of_session.entry(&s.session).or_insert_with(|| name(s));
    }
    let mut spans: IndexMap<String, RunSpan> = IndexMap::new();
    for s in sessions {
        let span = spans.entry(of_session[s.session.as_str()].clone()).or_insert_with(|| RunSpan {
            name: of_session[s.session.as_str()].clone(),
            started: s.at.clone(),
            ended: s.at.clone(),
        });
        // RFC 3339 times of one writer compare as text
        if s.at < span.started {
            span.started.clone_from(&s.at);
        }
        if s.at > span.ended {
            span.ended.clone_from(&s.at);
        }
    }
    if spans.len() < 2 || spans.keys().all(|k| k == UNLABELLED) {
        return (Vec::new(), Vec::new());
    }
    let mut spans: Vec<RunSpan> = spans.into_values().collect();
    spans.sort_by(|a, b| a.started.cmp(&b.started));
    let mut runs: Vec<RunTrials<'a>> =
        spans.iter().map(|_| RunTrials { exp, plan, records: Vec::new(), sessions: Vec::new() }).collect();
    let index = |name: &str| spans.iter().position(|s| s.name == name);
    for s in sessions {
        if let Some(i) = index(&of_session[s.session.as_str()]) {
            runs[i].sessions.push(s.clone());
        }
    }
    for r in records {
        if let Some(i) = of_session.get(r.session.as_str()).and_then(|n| index(n)) {
            runs[i].records.push(r.clone());
        }
    }
    (spans, runs)
}

/// The comparisons of one run, as its report would make them of its trials alone.
fn comparisons(run: &RunTrials<'_>) -> Vec<ComparisonStat> {
    if run.records.is_empty() || run.exp.spec.analysis.compare.is_empty() {
        return Vec::new();
    }
    let snapshot = Snapshot {
        trials: Trials::from_records(&run.records),
        sessions: run.sessions.clone(),
        warnings: Vec::new(),
    };
    statistics(run.exp, run.plan, &snapshot).map(|s| s.comparisons).unwrap_or_default()
}

/// Every comparison made in two or more of `runs` (named `names`, in the same order),
/// its runs side by side and pooled.
pub(crate) fn across(
    runs: &[RunTrials<'_>],
    names: &[String],
    settings: &StatsSettings,
) -> Vec<RunsComparison> {
    let per_run: Vec<Vec<ComparisonStat>> = runs.par_iter().map(comparisons).collect();
    pool_runs(&per_run, names, settings)
}

/// The comparisons of each run (`per_run[i]`, run `names[i]`), grouped by what they
/// compare, each group of two or more runs pooled.
pub(crate) fn pool_runs(
    per_run: &[Vec<ComparisonStat>],
    names: &[String],
    settings: &StatsSettings,
) -> Vec<RunsComparison> {
    type Key = (String, String, String, String, String);
    let mut groups: IndexMap<Key, Vec<(usize, &ComparisonStat)>> = IndexMap::new();
    for (run, comparisons) in per_run.iter().enumerate() {
        for c in comparisons {
            let key =
                (c.factor.clone(), c.baseline.clone(), c.level.clone(), c.metric.clone(), c.context_text());
            groups.entry(key).or_default().push((run, c));
        }
    }
    groups
        .into_iter()
        .filter(|(_, g)| g.len() >= 2)
        .map(|((factor, baseline, level, metric, context), g)| {
            let mut out = pooled(&g, names, settings);
            (out.factor, out.baseline, out.level, out.metric, out.context) =
                (factor, baseline, level, metric, context);
            out
        })
        .collect()
}

/// Whether a verdict claims a difference: beyond the band, within it, or of a size not
/// settled.
fn claims(verdict: VerdictKind) -> bool {
    matches!(verdict, VerdictKind::Significant | VerdictKind::WithinBand | VerdictKind::UncertainSize)
}

/// One comparison's runs: each run's verdict, the pooled interval, and the answer.
fn pooled(g: &[(usize, &ComparisonStat)], names: &[String], settings: &StatsSettings) -> RunsComparison {
    let ratios: Vec<LogRatio> = g.iter().filter_map(|(_, c)| c.log_ratio).collect();
    let mut p = pool(&ratios, settings.confidence);
    // whether the runs differ is judged on every value, as across contexts
    let all: Vec<LogRatio> = g.iter().filter_map(|(_, c)| c.log_ratio_all).collect();
    if let (Some(p), true, Some(every)) = (&mut p, all.len() == ratios.len(), pool(&all, settings.confidence))
    {
        (p.i2, p.p_differs) = (every.i2, every.p_differs);
    }
    let up = g.iter().any(|(_, c)| claims(c.verdict) && c.ratio > 1.0);
    let down = g.iter().any(|(_, c)| claims(c.verdict) && c.ratio < 1.0);
    let differs = p.as_ref().is_some_and(|p| p.p_differs < settings.alpha());
    let answer = match &p {
        _ if differs || (up && down) => RunsAnswer::DependsOnTheRun,
        None => RunsAnswer::TooFewRuns,
        Some(p)
            if g.iter().all(|(_, c)| claims(c.verdict) && c.log_ratio.is_some())
                && (p.low > 1.0 || p.high < 1.0) =>
        {
            RunsAnswer::Holds
        }
        Some(_) => RunsAnswer::Pooled,
    };
    let per_run: Vec<RunVerdict> = g
        .iter()
        .map(|(run, c)| RunVerdict {
            run: *run,
            ratio: c.ratio,
            ci_low: c.ci_low,
            ci_high: c.ci_high,
            verdict: c.verdict,
        })
        .collect();
    let sentence = sentence(
        answer,
        &per_run,
        p.as_ref().map(|p| (p.ratio, p.low, p.high, p.p_differs, p.i2)),
        names,
        settings,
    );
    RunsComparison {
        factor: String::new(),
        baseline: String::new(),
        level: String::new(),
        metric: String::new(),
        context: String::new(),
        runs_pooled: ratios.len(),
        per_run,
        ratio: p.as_ref().map(|p| p.ratio),
        ci_low: p.as_ref().map(|p| p.low),
        ci_high: p.as_ref().map(|p| p.high),
        confidence: settings.confidence,
        p_differs: p.as_ref().map(|p| p.p_differs),
        i2_pct: p.as_ref().map(|p| p.i2 * 100.0),
        answer,
        sentence,
    }
}

/// `p = 0.0123` or `p < 0.001`.
fn p_clause(p: f64) -> String {
    if p < 0.001 { "p < 0.001".to_owned() } else { format!("p = {}", significant(p, 3)) }
}

/// Each run's figure: `+20.1 % [+18.0 %, +22.3 %] in `day1``.
fn each(per_run: &[RunVerdict], names: &[String]) -> String {
    per_run
        .iter()
        .map(|r| {
            let name = names.get(r.run).map_or("?", String::as_str);
            match (r.ci_low, r.ci_high) {
                (Some(l), Some(h)) => {
                    let (change, interval) = change_and_interval(r.ratio, (l, h));
                    format!("{change} {interval} in `{name}` ({})", r.verdict.words())
                }
                _ => format!("{} in `{name}`", r.verdict.words()),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The answer in words.
fn sentence(
    answer: RunsAnswer,
    per_run: &[RunVerdict],
    p: Option<(f64, f64, f64, f64, f64)>,
    names: &[String],
    settings: &StatsSettings,
) -> String {
    let k = per_run.len();
    let runs = each(per_run, names);
    let tests = p.map(|(_, _, _, pd, i2)| format!("{}, I² = {:.0} %", p_clause(pd), i2 * 100.0));
    let pooled = p.map(|(ratio, low, high, _, _)| {
        let (change, interval) = change_and_interval(ratio, (low, high));
        format!("{change} {interval} pooled at {}", confidence_level(settings.confidence))
    });
    let two = if k == 2 {
        "; with 2 runs the pooled interval rests on 1 degree of freedom, and only a difference between the \
         runs beyond each run's own noise can show: a third run, later, tells more"
    } else {
        ""
    };
    match (answer, pooled, tests) {
        (RunsAnswer::DependsOnTheRun, _, tests) => format!(
            "depends on the run: {runs}{}; not pooled into one figure: the answer of one run is not the answer of \
             another period",
            tests.map_or_else(String::new, |t| format!(" (the runs differ: {t})"))
        ),
        (RunsAnswer::Holds, Some(pooled), Some(tests)) => format!(
            "holds in all {k} runs: {pooled}, the runs as units ({runs}; no sign that it depends on the run: \
             {tests}){two}"
        ),
        (RunsAnswer::Pooled, Some(pooled), Some(tests)) => format!(
            "over {k} runs: {pooled}, the runs as units ({runs}); no sign that it depends on the run ({tests}), \
             which with {k} runs does not show that the runs agree{two}"
        ),
        _ => format!("{runs}: fewer than two runs with an interval of their own, nothing pooled"),
    }
}

/// The period the boots (or sessions) of one run spanned, from the store: the first
/// boot's request (or the first session's start) to the last session record; `None`
/// when no comparison is across units.
pub(crate) fn period(
    comparisons: &[ComparisonStat],
    sessions: &[SessionRecord],
    boots: &[BootRecord],
    replicate: &str,
) -> Option<Period> {
    let unit = comparisons.iter().find_map(|c| c.replication.as_ref().map(|r| r.unit))?;
    let started = boots.iter().map(|b| &b.at).chain(sessions.iter().map(|s| &s.at)).min()?.clone();
    let ended = sessions.iter().map(|s| &s.at).chain(boots.iter().map(|b| &b.at)).max()?.clone();
    let minutes = match (started.parse::<jiff::Timestamp>(), ended.parse::<jiff::Timestamp>()) {
        (Ok(a), Ok(b)) => (b.as_second() - a.as_second()) as f64 / 60.0,
        _ => 0.0,
    };
    let shown = |t: &str| t.get(..19).map_or_else(|| t.to_owned(), |s| s.replace('T', " "));
    let sentence = format!(
        "The {unit}s of this run spanned {} to {} UTC ({} min): its verdicts are of that period, and how much \
         another period would change them is unmeasured (every {unit} shared it). To replicate it, run it again \
         later as a labelled run and set the runs side by side: {replicate}",
        shown(&started),
        shown(&ended),
        significant(minutes.max(0.0), 2),
    );
    Some(Period { started, ended, minutes, units: format!("{unit}s"), sentence })
}
