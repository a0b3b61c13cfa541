//! The machines the trials ran on: their facts side by side, the differences marked, and
//! the sessions that ran.

use super::format::{cell_text, dash, markdown_table, scale};
use crate::summary::Summary;

/// Facts longer than this are cut in the table (summary.json keeps them whole): a
/// kernel command line or `xl info` would make the table unreadable in a pager.
const FACT_WIDTH: usize = 72;

/// Facts × machine states, the rows that differ marked with ≠.
pub(super) fn environment_table(summary: &Summary) -> Option<String> {
    let env = &summary.environment;
    if env.columns.is_empty() || env.rows.is_empty() {
        return None;
    }
    let mut header = vec!["fact".to_owned()];
    header.extend(env.columns.iter().map(|c| {
        // a machine state many imports or runs shared: how many, the first and the last
        // (the Sessions table below lists them all)
        let sessions = match c.sessions.as_slice() {
            [first, .., last] if c.sessions.len() > 2 => {
                format!("{} sessions, {first} … {last}", c.sessions.len())
            }
            all => all.join(", "),
        };
        cell_text(&format!("{} ({})", c.host, sessions))
    }));
    let rows: Vec<Vec<String>> = env
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![if r.differs { format!("≠ {}", r.fact) } else { r.fact.clone() }];
            row.extend(r.values.iter().map(|v| v.as_deref().map_or_else(dash, |v| fact_text(&r.fact, v))));
            row
        })
        .collect();
    Some(markdown_table(&header, &rows, header.len()))
}

/// A fact as people read it: the memory in GiB rather than bytes, long values cut.
pub(super) fn fact_text(fact: &str, value: &str) -> String {
    match (fact, value.parse::<f64>()) {
        ("memory", Ok(bytes)) => scale("B", bytes).with_unit(bytes),
        _ => {
            let one_line = value.split_whitespace().collect::<Vec<_>>().join(" ");
            if one_line.chars().count() > FACT_WIDTH {
                let cut: String = one_line.chars().take(FACT_WIDTH - 1).collect();
                cell_text(&format!("{cut}…"))
            } else {
                cell_text(&one_line)
            }
        }
    }
}

pub(super) fn sessions_table(summary: &Summary) -> Option<String> {
    let sessions = &summary.reproduce.sessions;
    if sessions.is_empty() {
        return None;
    }
    // a label column only when a run was given one (`margin run --label`)
    let labelled = sessions.iter().any(|s| s.label.is_some());
    let mut header = vec!["session", "host", "started", "margin", "experiment file"];
    if labelled {
        header.push("label");
    }
    header.push("seed");
    let header: Vec<String> = header.into_iter().map(str::to_owned).collect();
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            let mut row = vec![
                cell_text(&s.session),
                cell_text(&s.host),
                s.started_at.clone(),
                s.margin_version.clone(),
                if s.spec_changed { "changed since".to_owned() } else { "as now".to_owned() },
            ];
            if labelled {
                row.push(s.label.as_deref().map_or_else(|| "—".to_owned(), cell_text));
            }
            row.push(s.seed.to_string());
            row
        })
        .collect();
    Some(markdown_table(&header, &rows, header.len() - 1))
}
