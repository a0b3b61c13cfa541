//! The report: `report.md` from a minijinja template, `summary.json`, and `plots/*.svg`.
//!
//! Every number comes from the [`Summary`]; this module only chooses units, rounds,
//! lays out tables and draws. The built-in template is compiled in; an experiment may
//! replace it with `report.template` (a path relative to the experiment file), which sees
//! the same context and filters. Undefined names are errors, so a typo in a template
//! fails with its line instead of printing nothing.

pub(crate) mod compare;
mod context;
pub(crate) mod effects;
mod facts;
mod failures;
pub(crate) mod format;
pub(crate) mod glance;
mod metrics;
pub(crate) mod plot;
mod regimes;
mod telemetry;

use std::collections::HashSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Serde, Value};
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::plan::Plan;
use crate::spec::Experiment;
use crate::stats::outliers::OutlierRule;
use crate::summary::{Arm, CellStat, ComparisonStat, Summary};
use crate::vocab::{Better, Method};
use facts::{environment_table, sessions_table};
use failures::{PendingGroup, failures_table, pending_groups};
use format::{
    DisplayUnit, cell_text, confidence, dash, markdown_table, p_clause, p_value, percent, plural, scale,
    signed_percent,
};
use metrics::{fold, metric_description, metric_table};

/// The built-in report template.
pub(crate) const BUILTIN_TEMPLATE: &str = include_str!("report.md.j2");

/// Why the report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}{}", path.display(), if source.kind() == io::ErrorKind::StorageFull {
        "\nthe disk is full; every trial is in the store: free some space and run `margin report` again"
    } else {
        ""
    })]
    Io { path: PathBuf, source: io::Error },
    #[error("{name}:{line}: {message}", line = line.map_or_else(|| "?".to_owned(), |l| l.to_string()))]
    Template { name: String, line: Option<usize>, message: String },
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
}

impl ReportError {
    fn io(path: &Path, source: io::Error) -> Self {
        ReportError::Io { path: path.to_path_buf(), source }
    }

    fn template(name: &str, e: &minijinja::Error) -> Self {
        let message = match e.detail() {
            Some(detail) => format!("{}: {detail}", e.kind()),
            None => e.kind().to_string(),
        };
        ReportError::Template { name: name.to_owned(), line: e.line(), message }
    }
}

/// Writes the summary the analysis made as `report.md`, `summary.json` and
/// `plots/*.svg` into `out_dir` (the experiment's store folder). The report only formats:
/// every number is the summary's.
pub(crate) fn write_report(
    exp: &Experiment,
    plan: &Plan,
    summary: &Arc<Summary>,
    out_dir: &Path,
) -> Result<(), ReportError> {
    // summary.json is the largest file (136 MB at 10⁶ trials of four metrics): serialised
    // straight into its file, on a thread of its own while the plots and report.md are
    // made, and renamed into place after them, as when it was written last.
    let json = out_dir.join("summary.json");
    std::thread::scope(|scope| {
        let serialised = scope.spawn(|| {
            write_partial(&json, |out| {
                crate::summary::json::summary_to_writer(&mut *out, summary)?;
                out.write_all(b"\n")
            })
        });
        let made = plots_and_markdown(exp, plan, summary, out_dir);
        let partial = serialised.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match (made, partial) {
            (Ok(()), Ok(partial)) => publish(&partial, &json),
            (Err(e), partial) => {
                if let Ok(partial) = partial {
                    let _ = fs::remove_file(partial);
                }
                Err(e)
            }
            (Ok(()), Err(e)) => Err(e),
        }
    })
}

/// The plots and report.md of [`write_report`].
fn plots_and_markdown(
    exp: &Experiment,
    plan: &Plan,
    summary: &Arc<Summary>,
    out_dir: &Path,
) -> Result<(), ReportError> {
    let plots = plots(exp, plan, summary)?;
    let dir = out_dir.join("plots");
    if plots.iter().any(|p| p.svg.is_ok()) {
        fs::create_dir_all(&dir).map_err(|e| ReportError::io(&dir, e))?;
    }
    for plot in &plots {
        if let Ok(svg) = &plot.svg {
            write_file(&out_dir.join(&plot.path), svg.as_bytes())?;
        }
    }
    let markdown = render(exp, summary, &plots, &now())?;
    write_file(&out_dir.join("report.md"), markdown.as_bytes())
}

/// Writes through a temporary file and a rename, so a reader never sees half a report.
/// The temporary name is this process's own: several `margin report`s of one store at
/// once each rename a whole file of theirs (the last one wins), where one shared name
/// let one rename away another's file ("No such file or directory").
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    write_with(path, |out| out.write_all(bytes))
}

/// [`write_file`] of what `fill` writes, through a buffer.
fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<(), ReportError> {
    publish(&write_partial(path, fill)?, path)
}

/// The first half of [`write_with`]: `path`'s content written under this process's
/// temporary name beside it, which is returned.
fn write_partial(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<fs::File>) -> std::io::Result<()>,
) -> Result<PathBuf, ReportError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let partial = path.with_file_name(format!(".{name}.{}.partial", std::process::id()));
    let written = fs::File::create(&partial).and_then(|file| {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        fill(&mut out)?;
        out.into_inner().map_err(std::io::IntoInnerError::into_error).map(drop)
    });
    // the file the reader asked for is the one named; the half-written one goes
    written.map_err(|e| {
        let _ = fs::remove_file(&partial);
        ReportError::io(path, e)
    })?;
    Ok(partial)
}

/// The second half: the whole file renamed into place.
fn publish(partial: &Path, path: &Path) -> Result<(), ReportError> {
    fs::rename(partial, path).map_err(|e| ReportError::io(path, e))
}

fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// One metric's plot: where it goes, and its SVG, or why there is none.
#[derive(Debug, Clone)]
pub(crate) struct Plot {
    pub metric: String,
    /// Relative to the report: `plots/<metric>.svg`.
    pub path: String,
    pub svg: Result<String, String>,
    /// A drift's plot (values against time, docs/statistics.md): what it shows, for its
    /// caption. `None`: the metric's dot plot.
    pub drift: Option<String>,
}

/// Draws the plot of every metric, coloured by the first compared factor.
pub(crate) fn plots(exp: &Experiment, plan: &Plan, summary: &Summary) -> Result<Vec<Plot>, ReportError> {
    let colour_key = exp
        .spec
        .analysis
        .compare
        .iter()
        .map(|c| c.value.factor.value.as_str())
        .find(|f| plan.keys.iter().any(|k| k == f));
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for meta in &summary.metrics {
        let cells: Vec<&CellStat> = summary.cells.iter().filter(|c| c.metric == meta.name).collect();
        let path = unique_name(&mut used, &meta.name);
        if cells.is_empty() || cells.len() > plot::MAX_CELLS {
            let why = match cells.is_empty() {
                true => "no analysed trials".to_string(),
                false => "more cells than a plot can show; see the table".to_string(),
            };
            out.push(Plot { metric: meta.name.clone(), path, svg: Err(why), drift: None });
            continue;
        }
        // Colours by the compared factor's levels in plan order; rows grouped by the
        // other levels, so the cells a comparison puts side by side are neighbours.
        // A row is labelled by the levels that differ between the rows; those every row
        // shares are said once, under the title.
        let varies = |k: &str| cells.iter().any(|c| c.levels.get(k) != cells[0].levels.get(k));
        let common: Vec<String> =
            cells[0].levels.iter().filter(|(k, _)| !varies(k)).map(|(k, v)| format!("{k}={v}")).collect();
        let mut levels: Vec<&str> = Vec::new();
        let mut rows: Vec<(String, usize, plot::Row)> = cells
            .iter()
            .map(|cell| {
                let level = colour_key.and_then(|k| cell.levels.get(k)).map_or("", String::as_str);
                let colour = levels.iter().position(|l| *l == level).unwrap_or_else(|| {
                    levels.push(level);
                    levels.len() - 1
                });
                let context: Vec<String> = cell
                    .levels
                    .iter()
                    .filter(|(k, _)| Some(k.as_str()) != colour_key)
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                let own: Vec<String> =
                    cell.levels.iter().filter(|(k, _)| varies(k)).map(|(k, v)| format!("{k}={v}")).collect();
                let label = match (own.is_empty(), cell.label.is_empty()) {
                    (false, _) => own.join(" "),
                    (true, false) => cell.label.clone(),
                    (true, true) => "(all trials)".to_owned(),
                };
                (context.join(" "), colour, plot::Row { label, cell, colour })
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let legend: Vec<String> = match colour_key {
            Some(k) => levels.iter().map(|l| format!("{k}={l}")).collect(),
            None => vec![meta.name.clone()],
        };
        let rows: Vec<plot::Row> = rows.into_iter().map(|(_, _, r)| r).collect();
        let display = scale(&meta.unit, typical(cells.iter().map(|c| c.mean)));
        let svg = match plot::not_drawable(&rows) {
            Some(why) => Err(format!("{why}; see the table")),
            // a single cell keeps its whole label on its row
            None if rows.len() > 1 => {
                Ok(plot::dot_plot(&meta.name, &display, &rows, &legend, &common.join(" "))?)
            }
            None => Ok(plot::dot_plot(&meta.name, &display, &rows, &legend, "")?),
        };
        out.push(Plot { metric: meta.name.clone(), path, svg, drift: None });
    }
    // each drift found, its trials against time: a plot that cannot be drawn is said
    for (i, d) in summary.drifts.iter().enumerate() {
        let path = unique_name(&mut used, &format!("drift-{}-{}", d.metric, i + 1));
        let caption = format!(
            "{} drifting in session {} on host {}: each trial's difference from its cell's median, by when it started",
            d.metric, d.session, d.host
        );
        let svg = plot::drift_plot(d).map_err(|e| e.to_string());
        out.push(Plot { metric: d.metric.clone(), path, svg, drift: Some(caption) });
    }
    Ok(out)
}

/// `plots/<name>.svg` with the name made file-safe, and unique among the plots.
fn unique_name(used: &mut HashSet<String>, metric: &str) -> String {
    let safe: String = metric
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
        .collect();
    let mut name = safe.clone();
    let mut n = 1;
    while !used.insert(name.clone()) {
        n += 1;
        name = format!("{safe}-{n}");
    }
    format!("plots/{name}.svg")
}

/// The magnitude a metric's display unit is chosen for: the smallest mean, so that no
/// row of a table reads 0.0002 while others read 1.5.
fn typical(values: impl Iterator<Item = f64>) -> f64 {
    values.filter(|x| x.is_finite() && *x != 0.0).map(f64::abs).min_by(f64::total_cmp).unwrap_or(0.0)
}

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
    /// Effects across the matrix: the table of `summary.effects` and its legend.
    effects: Option<String>,
    metrics: Vec<MetricView>,
    environment: Option<String>,
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
struct Answer {
    title: String,
    sentence: String,
    detail: String,
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
    let metric_plot =
        |m: &crate::summary::MetricMeta| plots.iter().find(|p| p.metric == m.name && p.drift.is_none());
    let view = View {
        generated_at,
        margin_version: env!("CARGO_PKG_VERSION"),
        counts: counts_line(summary),
        settings: settings_line(summary),
        glance: (!shown.is_empty()).then(|| glance::table(summary, &shown)),
        glance_legend: glance::legend(summary, &shown),
        answers: shown.iter().map(|c| answer(summary, c)).collect(),
        more_answers: more(summary.comparisons.len(), "comparisons"),
        effects: effects::section(summary),
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
    env.add_filter("change", |ratio: Option<f64>| {
        ratio.map_or_else(dash, crate::stats::notation::ratio_change)
    });
    env.add_filter("p", |value: Option<f64>| value.map_or_else(dash, p_value));
    env
}

/// The answer and each metric's table list at most this many rows; summary.json has
/// them all. Ten thousand rows help no reader, and make a report too large to page.
pub(crate) const SHOWN: usize = 100;

/// "… 9900 more cells in summary.json", when a section leaves rows out.
fn more(total: usize, what: &str) -> Option<String> {
    (total > SHOWN).then(|| format!("… {} more {what} in summary.json", total - SHOWN))
}

fn counts_line(summary: &Summary) -> String {
    let t = &summary.trials;
    let cells: HashSet<&str> = summary.cells.iter().map(|c| c.cell.as_str()).collect();
    let mut parts = vec![format!(
        "{} analysed in {}",
        plural(t.analysed, "trial", "trials"),
        plural(cells.len(), "cell", "cells")
    )];
    if t.warmups > 0 {
        parts.push(format!("{} (not analysed)", plural(t.warmups, "warm-up", "warm-ups")));
    }
    if t.failed > 0 {
        parts.push(format!("{} failed", t.failed));
    }
    if t.stale > 0 {
        parts.push(format!("{} set aside: the command changed", plural(t.stale, "record", "records")));
    }
    if !summary.pending.is_empty() {
        parts.push(format!("{} pending", plural(summary.pending.len(), "cell", "cells")));
    }
    parts.join(" · ")
}

fn settings_line(summary: &Summary) -> String {
    let s = &summary.settings;
    let outliers = match s.outliers {
        OutlierRule::Mad { cutoff } => format!("outliers: modified z-score above {cutoff}"),
        OutlierRule::Iqr { cutoff } => format!("outliers: beyond {cutoff} IQR of the quartiles"),
        OutlierRule::None => "outliers: none set aside".to_owned(),
        OutlierRule::Studentized { rate } => format!(
            "outliers: set aside by the studentized rule (a clean cell loses a value {} of the time), \
             labelled above a modified z-score of {}",
            percent(rate * 100.0),
            crate::stats::outliers::MAD_CUTOFF
        ),
    };
    let adjusted = summary.comparisons.iter().filter(|c| c.p_adjusted.is_some()).count();
    let mut line = format!(
        "Confidence {}; practical threshold ±{}; {outliers}; runs needed aim at ±{}.",
        confidence(s.confidence),
        percent(s.threshold_pct),
        percent(s.target_pct)
    );
    if !s.looks.is_empty() {
        let looks: Vec<String> = s.looks.iter().map(u32::to_string).collect();
        line.push_str(&format!(
            " The cells stop once their comparisons are resolved (`until: verdict`), looked at after {} \
             trials, so the intervals are computed at {} (α/{} at each look) to keep false claims within {}.",
            looks.join(", "),
            confidence(s.interval_confidence),
            s.looks.len(),
            percent((1.0 - s.confidence) * 100.0)
        ));
    } else if !s.boot_looks.is_empty() {
        let looks: Vec<String> = s.boot_looks.iter().map(u32::to_string).collect();
        line.push_str(&format!(
            " Each level is booted again until the comparisons across boots are resolved (`boots: {{ until: \
             verdict }}`), looked at after {} boots of each, so the intervals are computed at {} (α/{} at each \
             look) to keep false claims within {}.",
            looks.join(", "),
            confidence(s.interval_confidence),
            s.boot_looks.len(),
            percent((1.0 - s.confidence) * 100.0)
        ));
    } else if s.interval_confidence > s.confidence {
        line.push_str(&format!(
            " The cells stop adaptively, so their intervals are computed at {} to keep {} coverage.",
            confidence(s.interval_confidence),
            confidence(s.confidence)
        ));
    }
    let robust: Vec<&str> =
        summary.metrics.iter().filter(|m| m.method == Method::Robust).map(|m| m.name.as_str()).collect();
    if !robust.is_empty() {
        let which = if robust.len() == summary.metrics.len() {
            "Every metric is".to_owned()
        } else {
            format!("{} {}", robust.join(", "), if robust.len() == 1 { "is" } else { "are" })
        };
        line.push_str(&format!(
            " {which} compared by the robust method: ranks of every value (no outlier set aside), the \
             Hodges–Lehmann shift with its Mann–Whitney interval and the U test's p (paired: the \
             signed-rank interval and test), the medians with their order-statistic intervals."
        ));
    }
    if adjusted > 1 {
        line.push_str(&format!(
            " p-values are Holm-adjusted across the {adjusted} comparisons of this report."
        ));
    }
    line
}

fn answer(summary: &Summary, c: &ComparisonStat) -> Answer {
    let mut title = format!("{} · {}", glance::comparison(c), c.metric);
    if !c.context.is_empty() {
        title.push_str(&format!(" ({})", c.context_text()));
    }
    let confidence = confidence(summary.settings.interval_confidence);
    let side = |name: &str, arm: &Arm| {
        let display = scale(&c.unit, arm.mean);
        if let Some(m) = &arm.median {
            let display = scale(&c.unit, m.value);
            return match (m.ci_low, m.ci_high) {
                (Some(low), Some(high)) => format!(
                    "{name} median {} [{}, {}] ({confidence} order-statistic interval)",
                    display.with_unit(m.value),
                    display.number(low),
                    display.number(high)
                ),
                _ => format!(
                    "{name} median {} (n = {}: too few for a {confidence} interval of the median, which takes 6)",
                    display.with_unit(m.value),
                    arm.n
                ),
            };
        }
        match (arm.moe, arm.moe_pct) {
            (Some(moe), Some(pct)) => {
                format!("{name} {} (±{})", display.plus_minus(arm.mean, moe), percent(pct))
            }
            _ => format!("{name} {} (n = {}: no error estimate)", display.with_unit(arm.mean), arm.n),
        }
    };
    let mut detail =
        vec![format!("{}, {}", side(&c.baseline, &c.baseline_arm), side(&c.level, &c.level_arm))];
    match (&c.paired_by, c.pairs.len()) {
        (Some(by), k) => detail.push(format!("paired by {by} ({})", plural(k, "pair", "pairs"))),
        (None, _) => detail.push(format!("n = {} and {}", c.baseline_arm.n, c.level_arm.n)),
    }
    if let Some(p) = c.p_value {
        let adjusted = c
            .p_adjusted
            .filter(|a| *a != p)
            .map(|a| format!(" ({})", p_clause("Holm", a)))
            .unwrap_or_default();
        detail.push(format!("{}{adjusted}", p_clause("p", p)));
    }
    if let Some(mde) = c.mde_pct {
        detail.push(format!("detectable at 80 % power: {}", percent(mde)));
    }
    if let Some(kept) = c.verdict_with_outliers {
        detail.push(format!("with the outliers kept: {}", kept.words()));
    }
    if let Some(without) = c.verdict_without_outliers {
        detail.push(format!("with the flagged outliers set aside: {}", without.words()));
    }
    if let Some(flag) = telemetry::not_converged(summary, c) {
        detail.push(flag);
    }
    Answer { title, sentence: c.sentence.clone(), detail: detail.join("; ") }
}

/// Facts longer than this are cut in the table (summary.json keeps them whole): a
/// kernel command line or `xl info` would make the table unreadable in a pager.
const FACT_WIDTH: usize = 72;

#[cfg(test)]
mod tests;
