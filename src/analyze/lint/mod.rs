//! Methodology warnings (docs/statistics.md, One cell; Sessions and boots): the seeds' mistakes.
//!
//! `dd` that measures the page cache, test files the page cache can hold, too few trials,
//! unstable cells, levels measured at different times or on machines that differ in more
//! than the compared factor, and levels whose trials all come from one session. Warnings
//! never change a verdict; they say what the numbers cannot.
//!
//! One file per kind: [`cells`] (a cell's trials: too few, unstable, a trend within its
//! sessions — [`trend`] —, two regimes), [`commands`] (the `run` command as it ran: dd
//! without a sync flag, a test file the page cache can hold), [`tools`] (the benchmark
//! tools a command line runs, whether they sync, and the size of what they write),
//! [`comparisons`] (time windows, machines — [`machines`]: facts beyond those that define
//! the factor, memory and CPUs —, sessions, outliers). Here: the store's own warnings,
//! and how a warning lists cells and writes a value.

mod cells;
mod commands;
mod comparisons;
mod machines;
mod tools;
mod trend;

pub(crate) use cells::cell_warnings;
pub(crate) use commands::command_warnings;
pub(super) use commands::rendered_run;
pub(crate) use comparisons::comparison_warnings;
pub(super) use tools::dd_writes_file;

use crate::store::Snapshot;
use crate::summary::{TrialCounts, Warning, WarningKind};

/// A cell warning lists at most this many cells by name, then counts the rest.
const LISTED: usize = 8;

/// "a, b, c and 4 more".
pub(super) fn list(items: &[String]) -> String {
    let shown = items.iter().take(LISTED).cloned().collect::<Vec<_>>().join("; ");
    match items.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown}; and {more} more"),
    }
}

/// Torn records, stale records and what the parsers noticed (each distinct message once,
/// with how many trials said it).
pub(crate) fn store_warnings(snapshot: &Snapshot, counts: &TrialCounts) -> Vec<Warning> {
    let mut warnings: Vec<Warning> =
        snapshot.warnings.iter().map(|w| Warning::new(WarningKind::Store, w.clone())).collect();
    if counts.stale > 0 {
        let records = if counts.stale == 1 { "record was" } else { "records were" };
        warnings.push(Warning::new(
            WarningKind::Stale,
            format!(
                "{} {records} set aside: the command changed (their cell is not in the current plan); \
                 they stay in the store",
                counts.stale
            ),
        ));
    }
    warnings.extend(snapshot.trials.warnings.iter().map(|(w, &n)| {
        let trials = if n == 1 { "1 trial".to_owned() } else { format!("{n} trials") };
        Warning::new(WarningKind::Trial, format!("{trials}: {w}"))
    }));
    warnings
}

/// A value in a warning: in the display unit the report's tables use for the metric's
/// unit (`262.8 MB/s`, `149.9 ms`: [`vocab::display::scale`]), with four
/// significant digits; a unit it does not know, four significant digits and the unit,
/// whatever its scale.
fn short(value: f64, unit: &str) -> String {
    if matches!(unit, "B/s" | "bit/s" | "op/s" | "B" | "s") {
        return vocab::display::scale(unit, value).with_unit(value);
    }
    let number = if value == 0.0 || !value.is_finite() {
        value.to_string()
    } else if !(1e-3..1e5).contains(&value.abs()) {
        format!("{value:.3e}")
    } else {
        let digits = (3 - value.abs().log10().floor() as i32).clamp(0, 6) as usize;
        format!("{value:.digits$}")
    };
    if unit.is_empty() { number } else { format!("{number} {unit}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_read_at_any_scale() {
        // the units the report's tables scale, as they scale them (a warning once quoted
        // "2.628e8 B/s" beside a table in MB/s)
        assert_eq!(short(1_761_729_679.78, "B/s"), "1.762 GB/s");
        assert_eq!(short(262_800_000.0, "B/s"), "262.8 MB/s");
        assert_eq!(short(0.149_873_53, "s"), "149.9 ms");
        assert_eq!(short(0.0, "s"), "0 ns");
        assert_eq!(short(-0.000_2, "s"), "-200.0 µs");
        // others: four significant digits at any scale
        assert_eq!(short(957.43, ""), "957.4");
        assert_eq!(short(1.5e7, "events"), "1.500e7 events");
    }

    #[test]
    fn lists_are_cut_after_a_few_items() {
        let items: Vec<String> = (1..=10).map(|i| i.to_string()).collect();
        assert_eq!(list(&items), "1; 2; 3; 4; 5; 6; 7; 8; and 2 more");
        assert_eq!(list(&items[..2]), "1; 2");
    }
}
