//! The cells of two regimes, under their metric's table: each regime's trials, share,
//! mean and interval, and the cell's other metrics where its regimes differ
//! (docs/statistics.md, Two regimes in a cell).

use super::format::{cell_text, markdown_table, p_clause, percent, scale};
use crate::summary::{CellStat, Summary};

/// The most trials a regime's row lists by number.
const LISTED: usize = 20;

/// The paragraph and table of `metric`'s cells of two regimes; `None` when it has none.
pub(super) fn section(summary: &Summary, metric: &str) -> Option<String> {
    let cells: Vec<&CellStat> = summary
        .cells
        .iter()
        .filter(|c| c.metric == metric && c.regimes.is_some())
        .take(super::SHOWN)
        .collect();
    if cells.is_empty() {
        return None;
    }
    let header: Vec<String> =
        ["cell", "regime", "trials", "share", "mean", "CI", "min", "max"].map(str::to_owned).to_vec();
    let mut rows = Vec::new();
    let mut beside = Vec::new();
    // the trial before, tested and found not to tell the regimes apart: said after what differs
    let mut not_before = Vec::new();
    for c in &cells {
        let Some(r) = c.regimes.as_deref() else { continue };
        let shown = scale(&c.unit, r.regimes.iter().map(|g| g.mean.abs()).fold(f64::INFINITY, f64::min));
        let label = if c.label.is_empty() { "(all trials)".to_owned() } else { cell_text(&c.label) };
        for (i, g) in r.regimes.iter().enumerate() {
            let ci = match (g.ci_low, g.ci_high) {
                (Some(lo), Some(hi)) => format!("[{}, {}]", shown.with_unit(lo), shown.with_unit(hi)),
                (Some(lo), None) => format!("[{}, ∞)", shown.with_unit(lo)),
                _ => "–".to_owned(),
            };
            // trials by their number in the cell, from 1, as the plot counts them
            let mut numbers: Vec<String> =
                g.trials.iter().take(LISTED).map(|t| format!("#{}", t + 1)).collect();
            if g.trials.len() > LISTED {
                numbers.push("…".to_owned());
            }
            rows.push(vec![
                if i == 0 { label.clone() } else { String::new() },
                if i == 0 { "lower".to_owned() } else { "upper".to_owned() },
                format!("{} ({})", g.n, numbers.join(" ")),
                percent(g.share * 100.0),
                shown.with_unit(g.mean),
                ci,
                shown.with_unit(g.min),
                shown.with_unit(g.max),
            ]);
        }
        if r.by_session {
            beside
                .push(format!("- {label}: the regimes are its sessions (each session's trials lie in one)."));
        }
        match &r.before {
            Some(b) if b.decides => {
                let after: Vec<String> = b
                    .after
                    .iter()
                    .map(|a| format!("after {}: {} lower, {} upper", a.after, a.lower, a.upper))
                    .collect();
                beside.push(format!(
                    "- {label}: the trial that ran just before on its host decides it ({}; it tells the \
                     regime of {} of the trials): {}",
                    p_clause("p", b.p_value),
                    percent(b.predicted * 100.0),
                    after.join("; ")
                ));
            }
            Some(b) => not_before.push(format!(
                "- {label}: the trial just before on its host does not tell the regimes apart ({}).",
                p_clause("p", b.p_value)
            )),
            None => {}
        }
        for b in &r.beside {
            let s = scale(
                &b.unit,
                b.means.iter().map(|m| m.abs()).filter(|m| *m > 0.0).fold(f64::INFINITY, f64::min),
            );
            let s = if s.factor.is_finite() { s } else { scale(&b.unit, 1.0) };
            let means: Vec<String> = b.means.iter().map(|m| s.with_unit(*m)).collect();
            beside.push(format!(
                "- {label}: {} is {} in the lower regime's trials and {} in the upper's",
                b.metric, means[0], means[1]
            ));
        }
    }
    let mut out = String::from(
        "**Two regimes.** These cells' trials fall into two groups that one unimodal spread would rarely \
         give (docs/statistics.md, Two regimes in a cell): the cell's mean mixes them, and more trials \
         narrow that mixture without telling what decides a trial's regime.\n\n",
    );
    out.push_str(&markdown_table(&header, &rows, 2));
    if beside.is_empty() {
        out.push_str(
            "\n\nNo other metric of these trials differs between the regimes: what decides them was not \
             measured (`monitor:` records the disks, the CPU and dirty-page writeback per trial).\n",
        );
    } else {
        out.push_str("\n\nWhat differs between the regimes, trial by trial (what may decide them):\n\n");
        out.push_str(&beside.join("\n"));
        out.push('\n');
    }
    if !not_before.is_empty() {
        out.push('\n');
        out.push_str(&not_before.join("\n"));
        out.push('\n');
    }
    Some(out)
}
