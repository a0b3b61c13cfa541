//! The report's section on effects across the matrix: a row per compared level and
//! metric pooled over its contexts (docs/statistics.md, Effects across the matrix).

use super::format::{cell_text, confidence, markdown_table, p_clause};
use crate::summary::Summary;
use stats::notation::change_and_interval;

/// The table of `summary.effects`, and the line that says how to read it; `None` when no
/// level was compared in two or more contexts with an interval.
pub(crate) fn section(summary: &Summary) -> Option<String> {
    let first = summary.effects.first()?;
    let header: Vec<String> = [
        "effect",
        "metric",
        "over",
        "contexts",
        "change",
        &format!("{} CI", confidence(first.confidence)),
        "differs between contexts",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let rows: Vec<Vec<String>> = summary
        .effects
        .iter()
        .map(|e| {
            let p = p_clause("p", e.p_differs);
            let differs =
                format!("{} ({p}, I² = {:.0} %)", if e.differs { "yes" } else { "no sign" }, e.i2_pct);
            let contexts = if e.left_out > 0 {
                format!("{} (+{} without interval)", e.contexts, e.left_out)
            } else {
                e.contexts.to_string()
            };
            let (change, interval) = change_and_interval(e.ratio, (e.ci_low, e.ci_high));
            vec![
                cell_text(&format!("{}: {} vs {}", e.factor, e.level, e.baseline)),
                cell_text(&e.metric),
                cell_text(&e.over.join(" × ")),
                contexts,
                change,
                interval,
                differs,
            ]
        })
        .collect();
    Some(format!(
        "{}\n\nEach row pools a level's comparisons with its baseline over the contexts (the levels of the \
         other factors) that have an interval of their own: the geometric mean of their ratios, weighted by \
         their trial counts (the spread pooled over the contexts), with Hartung–Knapp's interval: its width \
         from how the contexts' ratios scatter, t on contexts − 1 df. Whether the \
         effect differs between contexts: Welch's test of equal effects (p, not adjusted for the other rows) \
         and I², the share of the spread between contexts beyond chance. \"No sign\" is not evidence that the \
         effect is the same everywhere.",
        markdown_table(&header, &rows, 3)
    ))
}
