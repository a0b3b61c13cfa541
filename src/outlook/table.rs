//! `margin plan`'s table: the plan's outline (cells here, done, pending, the hosts and
//! services, the time left), its factors, and a line per cell with its state.

use std::io::Write;
use std::path::Path;

use super::{CellOutlook, hosts_summary};
use crate::plan::Plan;
use crate::spec::Experiment;
use vocab::display::duration;

/// `3/5 here`, `5/5 done`, `0/5 pending`: trials measured of the minimum, and where;
/// then the time the cell's remaining trials should take, from its earlier trials (or
/// all cells' when it has none yet), `?` before any trial ran.
fn state(plan: &Plan, o: &CellOutlook) -> (String, String) {
    let (min, _) = plan.repetitions.bounds();
    let word = match (o.done, &o.pending) {
        (true, _) => "done",
        (false, Some(_)) => "pending",
        (false, None) => "here",
    };
    let left = match o.estimate {
        _ if o.done => "-".to_string(),
        None => "?".to_string(),
        Some((lo, hi)) if (hi - lo).abs() < 0.05 => duration(lo),
        Some((lo, hi)) => format!("{}–{}", duration(lo), duration(hi)),
    };
    (format!("{:>6}  {word:7}", format!("{}/{min}", o.ok)), left)
}

/// The plan as `margin plan` prints it on a terminal or into a file: at most `limit` cells.
pub(crate) fn write_text(
    exp: &Experiment,
    file: &Path,
    plan: &Plan,
    outlook: &[CellOutlook],
    limit: usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "experiment {} ({})", plan.experiment, file.display())?;
    writeln!(out, "{plan}")?;
    let done = outlook.iter().filter(|o| o.done).count();
    let pending: Vec<(usize, &str)> =
        outlook.iter().enumerate().filter_map(|(i, o)| o.pending.as_deref().map(|p| (i, p))).collect();
    let here = outlook.len() - done - pending.len();
    writeln!(out, "on this host: {here} cells to run, {done} done, {} pending", pending.len())?;
    if plan.keys.iter().any(|k| k == "host") {
        for (host, how, cells, done) in hosts_summary(exp, plan, outlook) {
            writeln!(out, "  host {host} ({how}): {cells} cells, {done} done, {} to run", cells - done)?;
        }
    }
    // what runs beside the trials, and where (docs/experiment-file.md, services)
    for (name, service) in &exp.spec.services {
        let (host, address) = exp.spec.service_place(&service.value);
        let cells = match &service.value.when {
            Some(when) => format!("the cells where `{}`", when.value),
            None => "every cell".to_string(),
        };
        writeln!(out, "  service {} on host {host} ({address}), for {cells}", name.value)?;
    }
    let (lo, hi) = outlook
        .iter()
        .filter(|o| o.pending.is_none())
        .filter_map(|o| o.estimate)
        .fold((0.0, 0.0), |(a, b), (lo, hi)| (a + lo, b + hi));
    if here > 0 {
        if outlook.iter().any(|o| o.estimate.is_some()) {
            let range = if (hi - lo).abs() < 0.05 {
                duration(lo)
            } else {
                format!("{} – {}", duration(lo), duration(hi))
            };
            writeln!(out, "estimated time here: {range} (from earlier trials)")?;
        } else {
            writeln!(out, "estimated time here: unknown until the first trials have run")?;
        }
    }
    writeln!(out)?;
    writeln!(out, "factors:")?;
    let width = plan.factors.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for f in &plan.factors {
        writeln!(out, "  {:width$}  {}", f.name, f.levels.join(", "))?;
    }
    writeln!(out)?;
    if !pending.is_empty() {
        let mut reasons: Vec<(&str, usize)> = Vec::new();
        for (_, why) in &pending {
            match reasons.iter_mut().find(|(r, _)| r == why) {
                Some(entry) => entry.1 += 1,
                None => reasons.push((why, 1)),
            }
        }
        writeln!(out, "pending (another host or boot; results accumulate):")?;
        for (why, n) in reasons {
            writeln!(out, "  {n} {}: {why}", if n == 1 { "cell" } else { "cells" })?;
        }
        writeln!(out)?;
    }
    writeln!(out, "cells:")?;
    let shown = &plan.cells[..plan.cells.len().min(limit)];
    let states: Vec<(String, String)> = outlook.iter().take(shown.len()).map(|o| state(plan, o)).collect();
    let left_width = states.iter().map(|(_, left)| left.chars().count()).max().unwrap_or(0).max(9);
    let mut widths: Vec<usize> = plan.keys.iter().map(|k| k.chars().count()).collect();
    for cell in shown {
        for (k, v) in &cell.levels {
            let w = &mut widths[*k as usize];
            *w = (*w).max(v.text.chars().count());
        }
    }
    let mut header = format!("  {:16}  {:>6}  {:7}  {:>left_width$}", "id", "trials", "state", "time left");
    for (k, w) in plan.keys.iter().zip(&widths) {
        header.push_str(&format!("  {k:w$}"));
    }
    writeln!(out, "{}", header.trim_end())?;
    for (cell, (state, left)) in shown.iter().zip(&states) {
        let mut line = format!("  {}  {state}  {left:>left_width$}", cell.id);
        let mut i = 0;
        for (k, w) in widths.iter().enumerate() {
            let text = match cell.levels.get(i) {
                Some((key, v)) if *key as usize == k => {
                    i += 1;
                    v.text.as_str()
                }
                _ => "-",
            };
            line.push_str(&format!("  {text:w$}"));
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    if shown.len() < plan.cells.len() {
        writeln!(out, "  … {} more cells (`--all` lists them all)", plan.cells.len() - shown.len())?;
    }
    Ok(())
}
