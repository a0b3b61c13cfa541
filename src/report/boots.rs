//! The boots in the report: the Boots section's means — each cell compared across boots,
//! boot by boot, its mean and interval in each boot margin made, and how much its boots
//! differ beyond their trials (the boots themselves are the template's table of
//! `summary.boots`), why adaptive boots stopped for futility, and fixed boots that used
//! their reboots poorly — and the boots that failed, at the top when no trial ran and in
//! Failures.

use super::SHOWN;
use super::figures::typical;
use super::format::{DisplayUnit, cell_text, dash, markdown_table, percent, scale};
use super::metrics::{BOOTS_HEADING as HEADING, fold};
use crate::spec::Experiment;
use crate::summary::{BootDesign, BootRow, BootsStopped, CellStat, Summary};

/// For each metric the report shows (margin's own folded measures left out when others
/// are there), its cells compared across boots, a row per cell and boot: the boot's
/// number and `boot_id` (as the table of boots lists it), its trials, their mean and
/// interval; then how much each cell's boots differ. `None` without such cells.
pub(super) fn means(exp: &Experiment, summary: &Summary) -> Option<String> {
    let confidence = super::format::confidence(summary.settings.interval_confidence);
    let mut parts = Vec::new();
    for meta in summary.metrics.iter().filter(|m| !fold(exp, summary, &m.name)) {
        let cells: Vec<&CellStat> =
            summary.cells.iter().filter(|c| c.metric == meta.name && c.units.is_some()).collect();
        if cells.is_empty() {
            continue;
        }
        let display: DisplayUnit = scale(&meta.unit, typical(cells.iter().map(|c| c.mean)));
        let symbol = if display.symbol.is_empty() { String::new() } else { format!(" ({})", display.symbol) };
        let header: Vec<String> =
            ["cell", "boot", "trials", &format!("mean{symbol}"), "±", "± %"].map(str::to_owned).into();
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut spreads: Vec<String> = Vec::new();
        for c in &cells {
            let Some(u) = &c.units else { continue };
            for (i, b) in u.per_unit.iter().enumerate() {
                let label = if c.label.is_empty() { "(all trials)".to_owned() } else { cell_text(&c.label) };
                rows.push(vec![
                    if i == 0 { label } else { String::new() },
                    boot_name(summary, &b.id),
                    b.n.to_string(),
                    display.number(b.mean),
                    b.moe.map_or_else(|| "no error estimate".to_owned(), |m| display.number(m)),
                    b.moe_pct.map_or_else(dash, percent),
                ]);
            }
            let label = if c.label.is_empty() { "(all trials)" } else { c.label.as_str() };
            spreads.push(match &u.components {
                Some(k) if k.between_cv == 0.0 => format!(
                    "- {label}: its {unit}s differ no more than their trials predict, its trials within a \
                     {unit} by {}",
                    percent(k.within_cv * 100.0),
                    unit = u.unit
                ),
                Some(k) => format!(
                    "- {label}: its {unit}s differ by {} beyond their trials (the CV of their centres), its \
                     trials within a {unit} by {}",
                    percent(k.between_cv * 100.0),
                    percent(k.within_cv * 100.0),
                    unit = u.unit
                ),
                None if u.per_unit.len() < 2 => {
                    format!("- {label}: one {unit}, so how much {unit}s differ is unmeasured", unit = u.unit)
                }
                None => format!(
                    "- {label}: no {unit} of 2 trials, so how much its trials vary within a {unit} is \
                     unmeasured",
                    unit = u.unit
                ),
            });
        }
        let more = rows.len().saturating_sub(SHOWN);
        rows.truncate(SHOWN);
        let mut part = format!(
            "### {} in each boot\n\nEach boot's mean of the cell's trials kept; ± is the half-width of the \
             {confidence} confidence interval of that mean, from the boot's own trials.\n\n{}",
            meta.name,
            markdown_table(&header, &rows, 2)
        );
        if more > 0 {
            part.push_str(&format!("\n\n… {more} more rows in summary.json (`cells[].units`)"));
        }
        part.push_str("\n\n");
        part.push_str(&spreads.join("\n"));
        for d in summary.boot_design.iter().filter(|d| d.metric == meta.name) {
            part.push_str("\n\n");
            part.push_str(&design(d));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return None;
    }
    parts.splice(0..0, summary.boots_stopped.iter().map(stopped));
    Some(parts.join("\n\n"))
}

/// Why a host's adaptive boots stopped short of `max`: more boots could not settle it.
fn stopped(s: &BootsStopped) -> String {
    let needed = match s.needed {
        Some(n) => format!("about {n} boots of each level"),
        None => format!("more than {} boots of each level", stats::components::MAX_BOOTS),
    };
    format!(
        "**Stopped for futility:** margin stopped booting host `{}` after {} boots of each combination of \
         levels (look {} of {}): more boots cannot settle the comparisons across boots — {needed} would be \
         needed, and `max` is {}. The verdicts are those of the boots so far; a stop for futility \
         claims nothing that a look would not (docs/statistics.md, Adaptive boots).",
        s.host, s.blocks, s.look, s.looks, s.max
    )
}

/// That another number of trials per boot would have reached the same standard error
/// for a fraction of the time.
fn design(d: &BootDesign) -> String {
    let (more, fewer) = if (d.better_trials_per_boot as f64) > d.trials_per_boot {
        ("fewer boots, more trials in each", "more trials per boot")
    } else {
        ("more boots, fewer trials in each", "more boots")
    };
    format!(
        "**The reboots were used poorly** for {level} against {baseline}: a reboot took {boot} and a trial \
         {trial}; its trials varied by {within} within a boot and its boots by {between} beyond that. For the \
         same standard error of the comparison, boots of {better} trials each would take about {ratio} × less \
         time than boots of {run} ({more}: {boots} × the boots): next time, {fewer}, or `boots: {{ min, max, \
         until: verdict }}`, which picks the trials per boot from these measurements.",
        level = d.level,
        baseline = d.baseline,
        boot = seconds(d.boot_seconds),
        trial = seconds(d.trial_seconds),
        within = percent(d.within_cv_pct),
        between = percent(d.between_cv_pct),
        better = d.better_trials_per_boot,
        ratio = super::format::significant(d.cost_ratio, 2),
        run = if d.trials_per_boot.fract() == 0.0 {
            format!("{}", d.trials_per_boot)
        } else {
            super::format::significant(d.trials_per_boot, 2)
        },
        boots = super::format::significant(d.boots_ratio, 2),
    )
}

/// Seconds, or milliseconds below one.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{} s", super::format::significant(s, 2))
    } else {
        format!("{} ms", super::format::significant(s * 1000.0, 2))
    }
}

/// A boot as the table of boots names it, "3 `8d84eb4c`", or the unit's id when margin did
/// not make that boot (a session of its own, a boot before the plan's first).
fn boot_name(summary: &Summary, id: &str) -> String {
    let short = short_id(id);
    match summary.boots.iter().find(|b| b.boot_id.as_deref() == Some(id)) {
        Some(b) => format!("{} `{short}`", b.boot),
        None => format!("`{short}`"),
    }
}

/// A boot's id as the report shows it: a kernel's `boot_id` (a uuid) by its first 8
/// characters, as the table of boots does; an id of another form (an import's name for
/// its boot) whole.
pub(super) fn short_id(id: &str) -> String {
    let uuid = id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4;
    if uuid { id.chars().take(8).collect() } else { id.to_owned() }
}

/// The boots that failed: refused (they came back in other levels) or lost (they never
/// came back), each try once.
pub(super) fn failed(summary: &Summary) -> impl Iterator<Item = &BootRow> {
    summary.boots.iter().filter(|b| b.outcome == "rejected" || b.outcome == "lost")
}

/// What the report's top says where there is no comparison: that every boot margin asked
/// for failed and why (each reason once, with its boots), when no trial ran in any boot;
/// that the experiment file asks for no comparison; or that no baseline has analysed
/// trials yet.
pub(super) fn no_answer(exp: &Experiment, summary: &Summary) -> String {
    let failed: Vec<&BootRow> = failed(summary).collect();
    let measured = summary.boots.iter().any(|b| b.outcome == "verified" && b.trials > 0);
    if !failed.is_empty() && !measured {
        // each reason once, with the boots it refused
        let mut reasons: indexmap::IndexMap<(&str, &str, &str), indexmap::IndexMap<u32, u32>> =
            indexmap::IndexMap::new();
        for b in &failed {
            let why = b.why.as_deref().unwrap_or("no reason recorded");
            *reasons
                .entry((b.host.as_str(), b.outcome.as_str(), why))
                .or_default()
                .entry(b.boot)
                .or_default() += 1;
        }
        let lines: Vec<String> = reasons
            .iter()
            .map(|((host, outcome, why), boots)| {
                let which = if boots.len() == 1 { "boot" } else { "boots" };
                let boots: Vec<String> = boots
                    .iter()
                    .map(
                        |(boot, tries)| {
                            if *tries > 1 { format!("{boot} ({tries} tries)") } else { boot.to_string() }
                        },
                    )
                    .collect();
                let outcome = if *outcome == "rejected" { "refused" } else { "lost" };
                format!("- host `{host}`, {which} {}: {outcome}: {why}", boots.join(", "))
            })
            .collect();
        let tries = if failed.len() == 1 { "1 try".to_owned() } else { format!("{} tries", failed.len()) };
        return format!(
            "No answer: no trial ran, because every boot margin asked for failed ({tries}); a refused boot \
             came back in other levels than wanted and runs no trial ({HEADING} and Failures, below, list \
             them):\n\n{}",
            lines.join("\n")
        );
    }
    if exp.spec.analysis.compare.is_empty() {
        "No comparisons: the experiment file asks for none (`analysis.compare`).".to_owned()
    } else if summary.cells.is_empty() {
        "No comparisons yet: no trial has been analysed (Failures and Pending cells, below, say why)."
            .to_owned()
    } else {
        "No comparisons yet: no baseline of `analysis.compare` has analysed trials.".to_owned()
    }
}

/// The Failures section's table of the boots that failed, each try a row.
pub(super) fn failed_table(summary: &Summary) -> Option<String> {
    let rows: Vec<Vec<String>> = failed(summary)
        .map(|b| {
            vec![
                cell_text(&b.host),
                if b.attempt > 1 { format!("{} (try {})", b.boot, b.attempt) } else { b.boot.to_string() },
                cell_text(&b.wanted),
                if b.outcome == "rejected" { "refused".to_owned() } else { b.outcome.clone() },
                cell_text(b.why.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let header = ["host", "boot", "wanted", "outcome", "why"].map(str::to_owned);
    Some(markdown_table(&header, &rows, header.len()))
}
