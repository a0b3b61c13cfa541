//! The report's "What the machines did" section: a compact table of each cell's secondary
//! metrics (telemetry, docs/design.md §8), marks where compared levels differ, and the
//! tools' convergence flags beside the cells and verdicts they concern.

use super::SHOWN;
use super::format::{cell_text, markdown_table, percent, scale, significant};
use crate::summary::{CellTelemetry, ComparisonStat, Summary, TelemetryDifference};

/// The compact table: a row per cell (the first [`SHOWN`]), a column per secondary metric,
/// ≠ where the cell and the other side of one of its comparisons differ.
pub(super) fn table(summary: &Summary) -> Option<String> {
    let t = &summary.telemetry;
    if t.cells.is_empty() {
        return None;
    }
    let mut header = vec!["cell".to_owned(), "trials".to_owned()];
    let scales: Vec<_> = t
        .columns
        .iter()
        .map(|c| {
            let typical = t
                .cells
                .iter()
                .filter_map(|cell| cell.values.get(&c.name))
                .map(|s| s.mean.abs())
                .fold(0.0, f64::max);
            scale(&c.unit, typical)
        })
        .collect();
    for (c, s) in t.columns.iter().zip(&scales) {
        header.push(match (c.unit.as_str(), s.symbol.as_str()) {
            ("%", _) | (_, "") => format!("{} {}", c.title, c.unit).trim_end().to_owned(),
            _ => format!("{} ({})", c.title, s.symbol),
        });
    }
    header.push("converged".to_owned());
    let rows: Vec<Vec<String>> = t
        .cells
        .iter()
        .take(SHOWN)
        .map(|cell| {
            let label =
                if cell.label.is_empty() { "(all trials)".to_owned() } else { cell_text(&cell.label) };
            let mut row = vec![label, format!("{} of {}", cell.trials, cell.analysed)];
            for (c, s) in t.columns.iter().zip(&scales) {
                row.push(match cell.values.get(&c.name) {
                    None => "—".to_owned(),
                    Some(v) => {
                        let number = if c.unit == "%" { format!("{:.1}", v.mean) } else { s.number(v.mean) };
                        if v.differs { format!("≠ {number}") } else { number }
                    }
                });
            }
            row.push(match cell.not_converged {
                0 => "yes".to_owned(),
                n => format!("no: {n} of {}", cell.analysed),
            });
            row
        })
        .collect();
    let mut text = markdown_table(&header, &rows, 1);
    if t.cells.len() > SHOWN {
        text.push_str(&format!("\n\n{} more cells in summary.json.", t.cells.len() - SHOWN));
    }
    Some(text)
}

/// A line per difference between compared levels: `bs: 1M vs 4k: disk written 105 MiB vs 0 B`.
pub(super) fn differences(summary: &Summary) -> Vec<String> {
    let t = &summary.telemetry;
    t.differences
        .iter()
        .map(|d| {
            let title = t
                .columns
                .iter()
                .find(|c| c.name == d.of.metric)
                .map_or(d.of.metric.as_str(), |c| c.title.as_str());
            format!("{}: {title} {} vs {}", side(d), value(d, d.level_mean), value(d, d.baseline_mean))
        })
        .collect()
}

fn side(d: &TelemetryDifference) -> String {
    let d = &d.of;
    let context: Vec<String> = d.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut s = format!("{}: {} vs {}", d.factor, d.level, d.baseline);
    if !context.is_empty() {
        s.push_str(&format!(" ({})", context.join(" ")));
    }
    s
}

fn value(d: &TelemetryDifference, v: f64) -> String {
    match d.unit.as_str() {
        "%" => percent(v),
        "" => significant(v, 4),
        unit => scale(unit, v).with_unit(v),
    }
}

/// "measurement not converged (3 trials)" for a comparison resting on flagged trials.
pub(super) fn not_converged(summary: &Summary, c: &ComparisonStat) -> Option<String> {
    let n = summary.telemetry.not_converged.iter().find(|n| n.of.names(c))?;
    let trials = if n.trials == 1 { "1 trial".to_owned() } else { format!("{} trials", n.trials) };
    Some(format!("measurement not converged ({trials}: the tool said so)"))
}

/// The cells whose tool said a measurement did not converge: found once for a table
/// rather than among every cell for each of its rows.
pub(super) fn not_converged_cells(summary: &Summary) -> Vec<&CellTelemetry> {
    summary.telemetry.cells.iter().filter(|c| c.not_converged > 0).collect()
}

/// "not converged: 2 of 5" beside a cell in the results tables.
pub(super) fn cell_flag(not_converged: &[&CellTelemetry], cell: &str) -> Option<String> {
    let c = not_converged.iter().find(|c| c.cell == cell)?;
    Some(format!("measurement not converged: {} of {}", c.not_converged, c.analysed))
}
