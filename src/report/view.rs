//! report.md rendered from the template (the experiment's own or the built-in one): the
//! view it sees beside the summary, and the environment with its number filters.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Serde, Value};
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use super::answer::{Answer, answer};
use super::facts::{environment_table, sessions_table};
use super::failures::{PendingGroup, failures_table, pending_groups};
use super::figures::Plot;
use super::format::{dash, p_value, percent, scale, signed_percent};
use super::header::{counts_line, settings_line};
use super::metrics::{fold, metric_description, metric_table};
use super::{BUILTIN_TEMPLATE, ReportError, SHOWN, context, effects, glance, regimes, series, telemetry};
use crate::spec::Experiment;
use crate::summary::{ComparisonStat, Summary};

/// What the template sees besides the summary: the parts laid out for reading.
#[derive(Debug, Serialize)]
struct View<'a> {
    generated_at: &'a str,
    margin_version: &'static str,
    counts: String,
    settings: String,
    /// The table the report opens with: a row for each of the first [`SHOWN`]
    /// comparisons, ranked (real differences first, the biggest first); `None` without
    /// comparisons. `glance_legend` says how to read it.
    glance: Option<String>,
    glance_legend: String,
    /// The same comparisons in the same order, in words; and a line counting the rest.
    answers: Vec<Answer>,
    more_answers: Option<String>,
    /// Without comparisons: why there is none (every boot refused, none asked for, no
    /// baseline analysed yet).
    no_answer: String,
    /// Effects across the matrix: the table of `summary.effects` and its legend.
    effects: Option<String>,
    /// Change points along each series the experiment asks for, or none.
    series: Option<String>,
    /// The same comparisons in several labelled runs, or one run's period, or none.
    across_runs: Option<String>,
    metrics: Vec<MetricView>,
    environment: Option<String>,
    /// The Boots section's tables of each cell's mean in each boot, where cells are
    /// compared across boots.
    boot_means: Option<String>,
    /// The Bisect section: each bisection the store holds, as `margin bisect` answers.
    bisect: Option<String>,
    /// Whether any fact differs between the machine states (the rows marked ≠).
    environment_differs: bool,
    failures: Option<String>,
    sessions: Option<String>,
    /// What the machines did: the compact table of secondary metrics (`None`: no trial
    /// has telemetry or a convergence flag), and where compared levels differ in them.
    telemetry: Option<String>,
    telemetry_differences: Vec<String>,
    /// The pending cells, grouped by why they wait (in order of first appearance).
    pending: Vec<PendingGroup>,
    /// A plot per drift found: its caption and path, or why it has none.
    drift_plots: Vec<DriftPlotView>,
}

#[derive(Debug, Serialize)]
struct DriftPlotView {
    caption: String,
    path: Option<String>,
    no_plot: Option<String>,
}

#[derive(Debug, Serialize)]
struct MetricView {
    name: String,
    description: String,
    /// The first [`SHOWN`] cells, and a line counting the rest.
    table: String,
    more: Option<String>,
    /// Its cells of two regimes, each regime's share, mean and interval.
    regimes: Option<String>,
    plot: Option<String>,
    /// Why the metric has no plot, when it has none.
    no_plot: Option<String>,
    /// margin's own measure (wall_time, user_time, system_time) beside metrics of the
    /// experiment's own: the built-in report folds it under them.
    folded: bool,
}

/// Renders `report.md` from the summary and the plots, with the experiment's template or
/// the built-in one.
pub(crate) fn render(
    exp: &Experiment,
    summary: &Arc<Summary>,
    plots: &[Plot],
    generated_at: &str,
) -> Result<String, ReportError> {
    let (name, source) = match &exp.spec.report.template {
        None => ("report.md.j2".to_owned(), BUILTIN_TEMPLATE.to_owned()),
        Some(t) => {
            let path = exp.path.parent().unwrap_or(Path::new("")).join(&t.value);
            let text = fs::read_to_string(&path).map_err(|e| ReportError::io(&path, e))?;
            (path.display().to_string(), text)
        }
    };
    let env = environment();
    let template =
        env.template_from_named_str(&name, &source).map_err(|e| ReportError::template(&name, &e))?;
    let shown: Vec<&ComparisonStat> = glance::ranked(&summary.comparisons).into_iter().take(SHOWN).collect();
    let metric_plot = |m: &crate::summary::MetricMeta| {
        plots.iter().find(|p| p.metric == m.name && p.drift.is_none() && p.series.is_none())
    };
    let view = View {
        generated_at,
        margin_version: env!("CARGO_PKG_VERSION"),
        counts: counts_line(summary),
        settings: settings_line(summary),
        glance: (!shown.is_empty()).then(|| glance::table(summary, &shown)),
        glance_legend: glance::legend(summary, &shown),
        answers: shown.iter().map(|c| answer(summary, c)).collect(),
        more_answers: more(summary.comparisons.len(), "comparisons"),
        no_answer: super::boots::no_answer(exp, summary),
        effects: effects::section(summary),
        series: series::section(summary, plots, &exp.path, &exp.git),
        across_runs: super::runs::section(summary),
        metrics: summary
            .metrics
            .iter()
            .map(|m| MetricView {
                name: m.name.clone(),
                description: match summary.cells.iter().any(|c| c.metric == m.name) {
                    true => metric_description(summary, &m.name),
                    false => "No analysed trials: every trial that ran failed (Failures, below, says why), \
                              or none has run yet."
                        .to_owned(),
                },
                table: metric_table(summary, &m.name),
                more: more(summary.cells.iter().filter(|c| c.metric == m.name).count(), "cells"),
                regimes: regimes::section(summary, &m.name),
                plot: metric_plot(m).filter(|p| p.svg.is_ok()).map(|p| p.path.clone()),
                no_plot: metric_plot(m).and_then(|p| p.svg.clone().err()),
                folded: fold(exp, summary, &m.name),
            })
            .collect(),
        environment: environment_table(summary),
        boot_means: super::boots::means(exp, summary),
        bisect: super::bisect::section(
            &summary.bisections,
            &summary.bisections_under_way,
            &crate::spec::git::subjects(&exp.git),
        ),
        environment_differs: summary.environment.rows.iter().any(|r| r.differs),
        failures: failures_table(summary),
        sessions: sessions_table(summary),
        telemetry: telemetry::table(summary),
        telemetry_differences: telemetry::differences(summary),
        pending: pending_groups(summary),
        drift_plots: plots
            .iter()
            .filter_map(|p| {
                let caption = p.drift.clone()?;
                Some(match &p.svg {
                    Ok(_) => DriftPlotView { caption, path: Some(p.path.clone()), no_plot: None },
                    Err(why) => DriftPlotView { caption, path: None, no_plot: Some(why.clone()) },
                })
            })
            .collect(),
    };
    // `summary` is read field by field as the template asks (context.rs)
    let context = minijinja::context! { summary => context::LazySummary::value(Arc::clone(summary)), ..Value::from(Serde(&view)) };
    template.render(context).map_err(|e| ReportError::template(&name, &e))
}

/// The template environment: strict about undefined names, block tags on lines of their
/// own, and the number filters.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .expect("the default delimiters are valid");
    env.set_syntax(syntax);
    // `{{ x | num(unit) }}` → "48.93 MB/s"; `{{ mean | pm(moe, unit) }}` → "16.84 ± 0.58 s".
    env.add_filter("num", |value: Option<f64>, unit: String| {
        value.map_or_else(dash, |v| scale(&unit, v).with_unit(v))
    });
    env.add_filter("pm", |mean: f64, moe: Option<f64>, unit: String| {
        let display = scale(&unit, mean);
        moe.map_or_else(|| display.with_unit(mean), |m| display.plus_minus(mean, m))
    });
    env.add_filter("pct", |value: Option<f64>| value.map_or_else(dash, percent));
    env.add_filter("signed_pct", |value: Option<f64>| value.map_or_else(dash, signed_percent));
    // `{{ c.ratio | change }}` → "+12.3 %", "×217", "÷3.1" (docs/statistics.md, Verdicts).
    env.add_filter("change", |ratio: Option<f64>| ratio.map_or_else(dash, stats::notation::ratio_change));
    env.add_filter("p", |value: Option<f64>| value.map_or_else(dash, p_value));
    env
}

/// "… 9900 more cells in summary.json", when a section leaves rows out.
fn more(total: usize, what: &str) -> Option<String> {
    (total > SHOWN).then(|| format!("… {} more {what} in summary.json", total - SHOWN))
}
