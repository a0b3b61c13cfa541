//! Each metric's section of the report: the line that says how to read it, the table of
//! its cells, and whether it is one of margin's own measures, folded after the others.

use super::figures::typical;
use super::format::{DisplayUnit, cell_text, dash, markdown_table, percent, scale};
use super::{SHOWN, telemetry};
use crate::spec::Experiment;
use crate::summary::{CellStat, CellUnits, Summary};
use vocab::Better;

/// The Boots section's heading (boots.rs), as this and other sections name it.
pub(super) const BOOTS_HEADING: &str = "Boots";

/// Whether `metric` is margin's own measure of a trial (`wall_time`, `user_time`,
/// `system_time`, a gang member's too) that the report folds after the experiment's
/// metrics: when some metric the trials reported has analysed cells and the experiment
/// file does not name this one under `metrics:`.
pub(super) fn fold(exp: &Experiment, summary: &Summary, metric: &str) -> bool {
    let engine = vocab::engine_metric;
    let named = exp.spec.metrics.keys().any(|k| k.value == metric);
    let others = summary.cells.iter().any(|c| !engine(&c.metric));
    engine(metric) && !named && others
}

pub(super) fn metric_description(summary: &Summary, metric: &str) -> String {
    let Some(meta) = summary.metrics.iter().find(|m| m.name == metric) else { return String::new() };
    let better = match meta.better {
        Better::Higher => "higher is better",
        Better::Lower => "lower is better",
    };
    let cells = summary.cells.iter().filter(|c| c.metric == metric);
    let display = scale(&meta.unit, typical(cells.map(|c| c.mean)));
    let unit =
        if display.symbol.is_empty() { String::new() } else { format!("Values in {}; ", display.symbol) };
    // the cells' intervals are at the level of every interval (raised when adaptive)
    let (level, adaptive) = super::glance::interval_level(summary);
    let mut text = format!(
        "{unit}{better}; {} mean. ± is the half-width of the {level}{adaptive} confidence interval of the \
         mean; each cell's sd, min and max are in summary.json and `margin export`.",
        meta.mean_kind,
    );
    let cut = summary.cells.iter().any(|c| c.metric == metric && c.ci_low == Some(0.0) && c.min >= 0.0);
    if cut && vocab::never_negative(&meta.unit) {
        text.push_str(" An interval that reached below 0 is cut at 0: the quantity is never negative.");
    }
    if let Some(unit) = across_unit(summary, metric) {
        let each = if summary.boots.is_empty() {
            format!("each {unit}'s mean is in summary.json, the cell's `units`")
        } else {
            format!("each {unit}'s mean is in {}, below", BOOTS_HEADING)
        };
        text.push_str(&format!(
            " These cells are compared across {unit}s, and their comparisons count {unit}s, not trials \
             (docs/statistics.md, Sessions and boots): the ± and CI here take the trials as independent, \
             so they hold how the trials vary within a {unit}, not how the {unit}s differ ({each}; each \
             comparison's sentence gives the interval of its {unit}s' means). {}s needed: how many {unit}s, \
             of how many trials each, would bring the interval of the cell's {unit}s' means to ±{} \
             (8 times in 10 if {unit}s and trials vary as measured; > 100 where more {unit}s would not).",
            capitalised(unit),
            percent(summary.settings.target_pct),
        ));
    }
    if matches!(metric, "user_time" | "system_time")
        && summary.cells.iter().any(|c| c.metric == metric && c.median == 0.0)
    {
        text.push_str(
            " CPU time is counted in the kernel's clock ticks (1–10 ms): where most trials read 0, the \
             trials are shorter than a tick and these means say only how often one was charged.",
        );
    }
    if summary.cells.iter().any(|c| c.metric == metric && c.n < 2) {
        // One trial shows no spread: say what the runs needed would be at typical CVs.
        let s = &summary.settings;
        let at: Vec<String> = s.runs_needed_at_cv.iter().map(|r| r.runs.to_string()).collect();
        let cvs: Vec<String> = s.runs_needed_at_cv.iter().map(|r| format!("{} %", r.cv_pct)).collect();
        text.push_str(" A cell of one trial has no spread, so no margin of error and no runs needed: a second trial gives the first estimate");
        if let (Some((last_cv, cvs)), Some((last, at))) = (cvs.split_last(), at.split_last()) {
            text.push_str(&format!(
                "; if the trials vary by {} or {last_cv} (CV), ±{} takes {} or {last} runs",
                cvs.join(", "),
                percent(s.target_pct),
                at.join(", ")
            ));
        }
        text.push('.');
    }
    text
}

/// The statistics table of one metric, a row for each of its first [`SHOWN`] cells, in
/// the metric's display unit (chosen over every cell, so that it is the unit of the
/// whole metric).
pub(super) fn metric_table(summary: &Summary, metric: &str) -> String {
    let cells: Vec<&CellStat> = summary.cells.iter().filter(|c| c.metric == metric).collect();
    let Some(first) = cells.first() else { return String::new() };
    let display: DisplayUnit = scale(&first.unit, typical(cells.iter().map(|c| c.mean)));
    let n = |x: f64| display.number(x);
    // compared across boots: the trials' interval is within-boot, and the boots are what
    // more of would narrow the comparison
    let across = across_unit(summary, metric);
    let all_across = cells.iter().all(|c| c.units.is_some());
    let (pm, ci, needed) = match across {
        Some(unit) if all_across => {
            (format!("± within {unit}s"), format!("CI within {unit}s"), format!("{unit}s needed"))
        }
        Some(unit) => {
            (format!("± within {unit}s"), format!("CI within {unit}s"), format!("runs ({unit}s) needed"))
        }
        None => ("±".to_owned(), "CI".to_owned(), "runs needed".to_owned()),
    };
    let header: Vec<String> =
        ["cell", "n", "mean", &pm, "± %", &ci, "CV", "median", "outliers", &needed].map(str::to_owned).into();
    let not_converged = telemetry::not_converged_cells(summary);
    let rows: Vec<Vec<String>> = cells
        .iter()
        .take(SHOWN)
        .map(|c| {
            let mut label = if c.label.is_empty() { "(all trials)".to_owned() } else { cell_text(&c.label) };
            if let Some(flag) = telemetry::cell_flag(&not_converged, &c.cell) {
                label.push_str(&format!(" ({flag})"));
            }
            let (moe, moe_pct) = match (c.moe, c.moe_pct) {
                (Some(m), Some(p)) if c.very_wide => (n(m), format!("{} (very wide: n = 2)", percent(p))),
                (Some(m), Some(p)) => (n(m), percent(p)),
                (Some(m), None) => (n(m), dash()),
                _ => ("no error estimate".to_owned(), dash()),
            };
            let ci = match (c.ci_low, c.ci_high) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", n(lo), n(hi)),
                (Some(lo), None) => format!("[{}, ∞)", n(lo)),
                _ => dash(),
            };
            let mut aside: Vec<String> =
                c.set_aside.iter().map(|v| format!("{} (set aside)", n(*v))).collect();
            aside.extend(c.flagged_outliers().iter().map(|v| format!("{} (flagged, kept)", n(*v))));
            if aside.is_empty() && !c.flagged.is_empty() {
                aside.push("– (two regimes)".to_owned());
            }
            let runs = match &c.units {
                Some(u) => units_needed(u, all_across),
                None => runs_needed(c),
            };
            vec![
                label,
                c.n.to_string(),
                n(c.mean),
                moe,
                moe_pct,
                ci,
                c.cv.map_or_else(dash, |cv| percent(cv * 100.0)),
                n(c.median),
                if aside.is_empty() { dash() } else { aside.join(", ") },
                runs,
            ]
        })
        .collect();
    markdown_table(&header, &rows, 1)
}

/// A cell's runs needed for the target margin, or why it has none.
fn runs_needed(c: &CellStat) -> String {
    match (c.runs_needed, c.runs_needed_exceeds) {
        (Some(r), _) => r.to_string(),
        (None, Some(max)) => format!("> {max}"),
        (None, None) if c.regimes.is_some() => "– (two regimes)".to_owned(),
        (None, None) => dash(),
    }
}

/// A cell compared across boots: the boots, of how many trials each, its mean needs
/// ("14 × 3 trials"); `> 100` beyond any practical number; what it lacks for an estimate.
/// `header_says`: the column's header names the unit.
fn units_needed(u: &CellUnits, header_says: bool) -> String {
    let unit = |n: usize| if n == 1 { u.unit.to_owned() } else { format!("{}s", u.unit) };
    match (&u.needed, &u.components) {
        (Some(n), _) if header_says => format!("{} × {} trials", n.units, n.trials_per_unit),
        (Some(n), _) => format!("{} {} × {} trials", n.units, unit(n.units), n.trials_per_unit),
        (None, Some(_)) => format!("> {} {}", stats::components::MAX_BOOTS, unit(2)),
        // one boot, or no boot of two trials: how much they differ is unmeasured
        (None, None) if u.per_unit.len() < 2 => format!("≥ 2 {} (1 so far)", unit(2)),
        (None, None) => format!("≥ 2 trials a {}", u.unit),
    }
}

/// The unit (`boot`, `session`) the metric's cells are compared across, when some are.
pub(super) fn across_unit(summary: &Summary, metric: &str) -> Option<&'static str> {
    summary.cells.iter().filter(|c| c.metric == metric).find_map(|c| c.units.as_ref().map(|u| u.unit))
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
