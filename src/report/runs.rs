//! The report's section on the runs as a level (docs/statistics.md, Runs as a level):
//! each comparison made in several labelled runs, its runs' verdicts side by side and
//! pooled or said to depend on the run; or, for one run compared across boots, the
//! period its boots spanned and how to replicate it.

use crate::summary::Summary;

/// The section's text; `None` when the store holds one run not compared across boots.
pub(crate) fn section(summary: &Summary) -> Option<String> {
    let across = summary.across_runs.as_ref()?;
    let mut out = String::new();
    if !across.comparisons.is_empty() {
        let names: Vec<String> = across.runs.iter().map(|r| format!("`{}`", r.name)).collect();
        out.push_str(&format!(
            "The store holds {} labelled runs ({}, in the order they started): each comparison is made again of \
             each run's trials alone, and the runs' verdicts are set side by side, pooled with the run as the \
             unit above boots and sessions, or said to depend on the run when the runs differ beyond their \
             noise (docs/statistics.md, Runs as a level).\n\n",
            across.runs.len(),
            names.join(", ")
        ));
        for c in &across.comparisons {
            let context = if c.context.is_empty() { String::new() } else { format!(" ({})", c.context) };
            out.push_str(&format!(
                "- **{}: {} vs {} · {}{context}**: {}.\n",
                c.factor, c.level, c.baseline, c.metric, c.sentence
            ));
        }
    }
    if let Some(p) = &across.period {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{}.\n", p.sentence));
    }
    (!out.is_empty()).then(|| out.trim_end().to_owned())
}
