//! The Markdown `margin history` prints: the runs in time order, then for each cell and
//! metric where it changed across them (worse or better, with the step's interval), or
//! that nothing changed and what step would have been found.

use super::format::{cell_text, confidence, markdown_table, percent, scale};
use crate::summary::history::{HistoryOutput, HistoryRow};
use stats::notation::change_and_interval;
use stats::series::SeriesVerdict;
use vocab::Better;

/// The whole answer.
pub(crate) fn markdown(h: &HistoryOutput) -> String {
    let mut out = String::from("# History\n\n");
    let changed =
        h.rows.iter().filter(|r| r.series.as_ref().is_some_and(|s| !s.change_points.is_empty())).count();
    let worse = h.rows.iter().filter(|r| r.newest_worse).count();
    out.push_str(&format!(
        "{} run{} in time order; {} cell × metric row{}: {changed} changed across the runs{}. Each run is one \
         observation (its mean); the runs' scatter around their segments is the noise, and a change point is \
         called at a {} % chance per row of a false one.\n\n",
        h.runs.len(),
        if h.runs.len() == 1 { "" } else { "s" },
        h.rows.len(),
        if h.rows.len() == 1 { "" } else { "s" },
        if worse > 0 { format!(", {worse} worse beyond ±{} in the newest runs", percent(h.threshold_pct)) } else { String::new() },
        vocab::display::significant(h.alpha * 100.0, 2),
    ));
    let header: Vec<String> =
        ["#", "run", "started", "sessions", "store"].iter().map(|s| (*s).to_owned()).collect();
    let rows: Vec<Vec<String>> = h
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                cell_text(&r.name),
                r.started.clone(),
                r.sessions.to_string(),
                cell_text(&r.store),
            ]
        })
        .collect();
    out.push_str(&markdown_table(&header, &rows, 3));
    out.push_str("\n\n");
    for row in &h.rows {
        out.push_str(&one(h, row));
        out.push('\n');
    }
    if !h.across_runs.is_empty() {
        out.push_str(
            "## The comparisons across the runs\n\nEach comparison of the experiment made again of each run's \
             trials alone, the runs' verdicts side by side, pooled with the run as the unit or said to depend on \
             the run (docs/statistics.md, Runs as a level):\n\n",
        );
        for c in &h.across_runs {
            let context = if c.context.is_empty() { String::new() } else { format!(" ({})", c.context) };
            out.push_str(&format!(
                "- **{}: {} vs {} · {}{context}**: {}.\n",
                c.factor, c.level, c.baseline, c.metric, c.sentence
            ));
        }
    }
    out
}

/// One cell × metric.
fn one(h: &HistoryOutput, r: &HistoryRow) -> String {
    let name = |i: usize| format!("`{}`", h.runs[r.runs[i]].name);
    let mut text =
        format!("## {} · {}\n\n", r.metric, if r.label.is_empty() { "(one cell)" } else { &r.label });
    let Some(s) = &r.series else {
        text.push_str(&format!("Not analysed: {}.\n", r.not_analysed.as_deref().unwrap_or("no runs")));
        return text;
    };
    match s.verdict {
        SeriesVerdict::Changes => {
            let steps: Vec<String> = s
                .change_points
                .iter()
                .map(|c| {
                    let (change, interval) = change_and_interval(c.ratio, (c.low, c.high));
                    let better = (r.better == Better::Higher) == (c.ratio > 1.0);
                    format!(
                        "between {} and {}: {change} {interval}, {}",
                        name(c.after),
                        name(c.after + 1),
                        if better { "better" } else { "worse" }
                    )
                })
                .collect();
            text.push_str(&format!("**Changed** across {} runs: {}.", r.runs.len(), steps.join("; ")));
            if r.newest_worse {
                text.push_str(&format!(" The newest change is worse beyond ±{}.", percent(h.threshold_pct)));
            }
            text.push_str(" A change is suspected until its two sides are measured again, interleaved.");
            for rerun in &r.rerun {
                let commands: Vec<String> = rerun.commands.iter().map(|c| format!("`{c}`")).collect();
                text.push_str(&format!(
                    " To tell a change of the runs from a change of their periods, run `{}` and `{}` again, back \
                     to back: {}.",
                    rerun.before,
                    rerun.after,
                    commands.join(", then ")
                ));
            }
            text.push_str("\n\n");
        }
        SeriesVerdict::NoChange => {
            let found = s.detectable.map_or_else(String::new, |d| {
                format!(
                    ": a step of ±{} half-way would have been found 80 % of the time",
                    percent(d.middle * 100.0)
                )
            });
            text.push_str(&format!("**No change found** across {} runs{found}.\n\n", r.runs.len()));
        }
        SeriesVerdict::Unreplicated => text.push_str("**Unreplicated**: nothing is claimed.\n\n"),
    }
    let show = |v: f64| scale(&r.unit, v).with_unit(v);
    let header: Vec<String> = ["runs", "trials", "mean", &format!("{} CI", confidence(s.confidence))]
        .iter()
        .map(|x| (*x).to_owned())
        .collect();
    let rows: Vec<Vec<String>> = s
        .segments
        .iter()
        .map(|g| {
            let runs = if g.first == g.last {
                name(g.first)
            } else {
                format!("{} … {} ({})", name(g.first), name(g.last), g.last - g.first + 1)
            };
            let trials: usize = r.trials[g.first..=g.last].iter().sum();
            let interval = match (g.estimate.low, g.estimate.high) {
                (Some(l), Some(hi)) => format!("[{}, {}]", show(l), show(hi)),
                _ => "–".to_owned(),
            };
            vec![cell_text(&runs), trials.to_string(), show(g.estimate.mean), interval]
        })
        .collect();
    text.push_str(&markdown_table(&header, &rows, 1));
    text.push('\n');
    text
}
