//! What did not run or failed: trials that failed, cells a session abandoned, and the
//! cells still pending, grouped by reason.

use serde::Serialize;

use super::format::{cell_text, dash, markdown_table};
use crate::summary::Summary;

/// Cells that wait for the same reason (another host, another boot), said once.
#[derive(Debug, Serialize)]
pub(super) struct PendingGroup {
    reason: String,
    cells: Vec<String>,
}

/// Cells abandoned by the last run are grouped by what their failures share
/// (`reason::same_way`), with the first cell's reason; any other reason must be the same
/// text (`needs dom0_mem=1024M` and `needs dom0_mem=2048M` are two boots).
pub(super) fn pending_groups(summary: &Summary) -> Vec<PendingGroup> {
    let key = |reason: &str, cell: &str| match reason.starts_with("abandoned by the last run") {
        true => crate::reason::same_way(reason, &crate::reason::levels_of_label(cell)),
        false => reason.to_string(),
    };
    let mut groups: indexmap::IndexMap<String, PendingGroup> = indexmap::IndexMap::new();
    for p in &summary.pending {
        groups
            .entry(key(&p.reason, &p.cell))
            .or_insert_with(|| PendingGroup { reason: p.reason.clone(), cells: Vec::new() })
            .cells
            .push(p.cell.clone());
    }
    groups.into_values().collect()
}

/// The boots that failed, the trials that failed, then the cells a session abandoned or
/// could not clean up.
pub(super) fn failures_table(summary: &Summary) -> Option<String> {
    // the boots that failed first: a refused boot leaves its cells to run
    let tables: Vec<String> =
        [super::boots::failed_table(summary), trial_failures_table(summary), cell_failures_table(summary)]
            .into_iter()
            .flatten()
            .collect();
    // a blank line between: two tables on adjacent lines are one table in Markdown
    (!tables.is_empty()).then(|| tables.join("\n\n"))
}

/// The cells a session abandoned or could not clean up, one row per reason: cells that
/// failed the same way (`reason::same_way`: a regex that matches nothing, a tool that is
/// missing) are one row with how many and which, and the first cell's reason, as `margin
/// run` says them.
fn cell_failures_table(summary: &Summary) -> Option<String> {
    if summary.cell_failures.is_empty() {
        return None;
    }
    // by what went wrong (`ProblemKind`), the host and the reason's key
    let mut groups: indexmap::IndexMap<(_, String, String), Vec<&crate::summary::CellFailure>> =
        indexmap::IndexMap::new();
    for f in &summary.cell_failures {
        let key = crate::reason::same_way(&f.why, &crate::reason::levels_of_label(&f.cell));
        groups.entry((f.what.clone(), f.host.clone(), key)).or_default().push(f);
    }
    let header = ["cell", "what", "host", "session ended", "why"].map(str::to_owned);
    let rows: Vec<Vec<String>> = groups
        .into_values()
        .map(|fs| {
            let f = fs[0];
            let cells = match fs.as_slice() {
                [_] => f.cell.clone(),
                _ => {
                    let labels: Vec<&str> = fs.iter().map(|f| f.cell.as_str()).collect();
                    format!("{} cells: {}", fs.len(), crate::reason::some_of(&labels))
                }
            };
            vec![
                cell_text(&cells),
                f.what.to_string(),
                cell_text(&f.host),
                f.at.clone(),
                cell_text(&first_line(&f.why)),
            ]
        })
        .collect();
    Some(markdown_table(&header, &rows, header.len()))
}

/// The first line of an error, at most 120 characters, with `…` when there was more.
fn first_line(error: &str) -> String {
    let mut first: String = error.lines().next().unwrap_or("").chars().take(120).collect();
    if error.chars().count() > first.chars().count() {
        first.push('…');
    }
    first
}

fn trial_failures_table(summary: &Summary) -> Option<String> {
    if summary.failures.is_empty() {
        return None;
    }
    let header = ["cell", "trial", "status", "host", "exit", "error"].map(str::to_owned);
    let rows: Vec<Vec<String>> = summary
        .failures
        .iter()
        .map(|f| {
            let first = first_line(f.error.as_deref().unwrap_or(""));
            let trial = if f.warmup { format!("{} (warm-up)", f.trial) } else { f.trial.clone() };
            vec![
                cell_text(&f.cell),
                trial,
                f.status.to_owned(),
                cell_text(&f.host),
                f.exit_code.map_or_else(dash, |c| c.to_string()),
                cell_text(&first),
            ]
        })
        .collect();
    // Only the exit code is a number; the error text reads best left-aligned, so the
    // exit column is aligned left too rather than breaking the run of text columns.
    Some(markdown_table(&header, &rows, header.len()))
}
