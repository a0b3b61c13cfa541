//! The report's figures: a dot plot per metric (its rows grouped and labelled by the
//! levels that differ, coloured by the first compared factor) and one per drift found,
//! each with its file name, or why it has none. [`super::plot`] draws them.

use std::collections::HashSet;

use super::ReportError;
use super::format::scale;
use super::plot;
use super::series_plot::series_plot;
use crate::plan::Plan;
use crate::spec::Experiment;
use crate::summary::{CellStat, Summary};

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
    /// A series' plot: its index in `summary.series`.
    pub series: Option<usize>,
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
            out.push(Plot { metric: meta.name.clone(), path, svg: Err(why), drift: None, series: None });
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
        out.push(Plot { metric: meta.name.clone(), path, svg, drift: None, series: None });
    }
    // each drift found, its trials against time: a plot that cannot be drawn is said
    for (i, d) in summary.drifts.iter().enumerate() {
        let path = unique_name(&mut used, &format!("drift-{}-{}", d.metric, i + 1));
        let caption = format!(
            "{} drifting in session {} on host {}: each trial's difference from its cell's median, by when it started",
            d.metric, d.session, d.host
        );
        let svg = plot::drift_plot(d).map_err(|e| e.to_string());
        out.push(Plot { metric: d.metric.clone(), path, svg, drift: Some(caption), series: None });
    }
    // each series, its levels' trials and the segments' means as steps
    for (i, s) in summary.series.iter().enumerate() {
        let path = unique_name(&mut used, &format!("series-{}-{}-{}", s.metric, s.factor, i + 1));
        let values: Vec<Vec<f64>> = s
            .level_names
            .iter()
            .map(|level| {
                summary
                    .cells
                    .iter()
                    .filter(|c| {
                        c.metric == s.metric
                            && c.levels.get(&s.factor) == Some(level)
                            && s.context.iter().all(|(k, v)| c.levels.get(k) == Some(v))
                    })
                    .flat_map(|c| c.values.iter().copied())
                    .collect()
            })
            .collect();
        let display = scale(&s.unit, typical(s.series.levels.iter().map(|l| l.estimate.mean)));
        let svg = series_plot(s, &values, &display).map_err(|e| e.to_string());
        out.push(Plot { metric: s.metric.clone(), path, svg, drift: None, series: Some(i) });
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
pub(super) fn typical(values: impl Iterator<Item = f64>) -> f64 {
    values.filter(|x| x.is_finite() && *x != 0.0).map(f64::abs).min_by(f64::total_cmp).unwrap_or(0.0)
}
