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
    header.extend(env.columns.iter().map(|c| cell_text(&column_heading(summary, c))));
    let rows: Vec<Vec<String>> = env
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![if r.differs { format!("≠ {}", r.fact) } else { r.fact.clone() }];
            row.extend(r.values.iter().map(|v| {
                match v.as_deref() {
                    None => dash(),
                    // the boots' ids, short as the Boots section shows them
                    Some(v) if r.volatile => {
                        cell_text(&v.split(", ").map(super::boots::short_id).collect::<Vec<_>>().join(", "))
                    }
                    Some(v) => fact_text(&r.fact, v),
                }
            }));
            row
        })
        .collect();
    let mut table = markdown_table(&header, &rows, header.len());
    let xl = env.rows.iter().any(|r| r.fact == "xl_info" || r.fact == "xl_vcpu_list");
    if env.rows.iter().any(|r| r.volatile) || xl {
        let note = if xl {
            "`boot_id` changes in every boot by nature, and so do `xl info`'s free memory and cpu_mhz and \
             `xl vcpu-list`'s CPU, state and CPU seconds (left out of those rows): none of them is compared"
        } else {
            "`boot_id` changes in every boot by nature, so it is not compared"
        };
        table.push_str(&format!(
            "\n\n{note}, and boots that agree in every other fact are one column (sessions.ndjson keeps \
             each session's facts whole)."
        ));
    }
    Some(table)
}

/// A column's heading: the host, then its boots as the Boots section numbers them and
/// the levels they were booted for (`lab · boots 1, 5 · kernel=bare`); without boots
/// margin made, its sessions (how many, the first and the last; the Sessions table lists
/// them all).
fn column_heading(summary: &Summary, c: &crate::summary::EnvColumn) -> String {
    let made: Vec<&crate::summary::BootRow> = c
        .boots
        .iter()
        .filter_map(|id| summary.boots.iter().find(|b| b.boot_id.as_deref() == Some(id.as_str())))
        .collect();
    if !made.is_empty() {
        let numbers: Vec<String> = made.iter().map(|b| b.boot.to_string()).collect();
        let mut levels: Vec<&str> = Vec::new();
        for b in &made {
            if !levels.contains(&b.wanted.as_str()) {
                levels.push(&b.wanted);
            }
        }
        let boots = if numbers.len() == 1 { "boot" } else { "boots" };
        let others = c.boots.len() - made.len();
        let others = match others {
            0 => String::new(),
            1 => " and 1 other".to_owned(),
            n => format!(" and {n} others"),
        };
        return format!("{} · {boots} {}{others} · {}", c.host, numbers.join(", "), levels.join("; "));
    }
    let sessions = match c.sessions.as_slice() {
        [first, .., last] if c.sessions.len() > 2 => {
            format!("{} sessions, {first} … {last}", c.sessions.len())
        }
        all => all.join(", "),
    };
    format!("{} ({})", c.host, sessions)
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
