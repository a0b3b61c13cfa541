//! The answer at the end of `margin run` and `margin report`: a line per comparison.
//!
//! On a terminal a person reads it, so it is cut to [`ON_A_TERMINAL`] lines: the real
//! differences first (the biggest effect first), then the undecided ones, then the small
//! and the absent ones; then the counts by verdict and where the whole list is. Written
//! to a pipe or a file every comparison is printed, in the report's order: scripts read
//! it, and `| less` pages it.

use std::io::{self, Write};
use std::path::PathBuf;

use crate::report::format::percent;
use crate::report::glance::{RANKED_KINDS, ranked};
use crate::store::Store;
use crate::summary::{ComparisonStat, Summary};
use stats::verdict::VerdictKind;

/// How many comparisons a terminal is shown.
pub const ON_A_TERMINAL: usize = 20;

/// Where the whole list is, said after a cut one.
#[derive(Debug, Clone)]
pub struct Whole {
    /// The command that prints every comparison when its output is not a terminal.
    command: String,
    report: PathBuf,
    summary: PathBuf,
}

impl Whole {
    pub fn new(command: &str, store: &Store) -> Self {
        Whole {
            command: command.to_owned(),
            report: store.dir.join("report.md"),
            summary: store.dir.join("summary.json"),
        }
    }
}

/// The comparisons, a line each: all of them in the report's order, or — `cut`, on a
/// terminal — the first [`ON_A_TERMINAL`] by [`ranked`] (the report's table's order), then
/// what was left out.
pub fn answer(summary: &Summary, cut: Option<&Whole>, out: &mut dyn Write) -> io::Result<()> {
    let Some(whole) = cut else {
        return summary.comparisons.iter().try_for_each(|c| line(c, out));
    };
    let shown = ranked(&summary.comparisons);
    for c in shown.iter().take(ON_A_TERMINAL) {
        line(c, out)?;
    }
    let total = shown.len();
    if total <= ON_A_TERMINAL {
        return Ok(());
    }
    writeln!(
        out,
        "  … and {} more ({ON_A_TERMINAL} of {total} shown, real differences first). All {total}: {}",
        total - ON_A_TERMINAL,
        counts(summary)
    )?;
    let report = if total > crate::report::SHOWN {
        format!("{} lists the first {}", whole.report.display(), crate::report::SHOWN)
    } else {
        format!("and in {}", whole.report.display())
    };
    writeln!(
        out,
        "  every comparison: `{} | less` (off a terminal it prints them all), in {} ({report})",
        whole.command,
        whole.summary.display()
    )
}

fn line(c: &ComparisonStat, out: &mut dyn Write) -> io::Result<()> {
    let context: Vec<String> = c.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let context = if context.is_empty() { String::new() } else { format!(" ({})", context.join(" ")) };
    writeln!(out, "  {}{context}: {}", c.metric, c.sentence)
}

/// `120 real differences, 740 inconclusive, …`: every verdict that occurs, in rank order.
pub fn counts(summary: &Summary) -> String {
    let band = percent(summary.settings.threshold_pct);
    let mut parts = Vec::new();
    for kind in RANKED_KINDS {
        let n = summary.comparisons.iter().filter(|c| c.verdict == kind).count();
        if n == 0 {
            continue;
        }
        let words = match kind {
            VerdictKind::Significant if n == 1 => "real difference".to_owned(),
            VerdictKind::Significant => "real differences".to_owned(),
            VerdictKind::UncertainSize if n == 1 => {
                format!("real difference that may or may not exceed ±{band}")
            }
            VerdictKind::UncertainSize => format!("real differences that may or may not exceed ±{band}"),
            VerdictKind::Inconclusive => "inconclusive".to_owned(),
            VerdictKind::Unreplicated => "unreplicated (one boot or session of a level)".to_owned(),
            VerdictKind::Unbounded => "too noisy to bound".to_owned(),
            VerdictKind::Insufficient => "without an error estimate".to_owned(),
            VerdictKind::TooFewForRobust => "too few trials for the robust method".to_owned(),
            VerdictKind::WithinBand => format!("real but within ±{band}"),
            VerdictKind::NoMeaningfulDifference => "no meaningful difference".to_owned(),
        };
        parts.push(format!("{n} {words}"));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::MemoryStore;

    /// A summary with one comparison per `(verdict, ratio)`, named `c0`, `c1`, … in order.
    fn summary(of: &[(VerdictKind, f64)]) -> Summary {
        let mut s = MemoryStore::two_levels_summary();
        let template = s.comparisons.first().cloned().expect("the fixture has a comparison");
        s.comparisons = of
            .iter()
            .enumerate()
            .map(|(i, &(verdict, ratio))| ComparisonStat {
                verdict,
                ratio,
                metric: format!("c{i}"),
                context: Default::default(),
                sentence: format!("{verdict:?}"),
                ..template.clone()
            })
            .collect();
        s
    }

    fn names(comparisons: &[&ComparisonStat]) -> Vec<String> {
        comparisons.iter().map(|c| c.metric.clone()).collect()
    }

    #[test]
    fn real_differences_first_biggest_first_then_the_undecided() {
        use VerdictKind::*;
        let s = summary(&[
            (NoMeaningfulDifference, 1.0),
            (Inconclusive, 1.1),
            (Significant, 1.2),
            (WithinBand, 1.03),
            (Significant, 0.5), // halving: bigger than +20 %
            (Insufficient, 3.0),
            (Significant, 2.0), // doubling weighs as much as halving: the report's order
            (Unbounded, f64::NAN),
            (Inconclusive, 0.7),
            (Significant, f64::NAN),
        ]);
        let order = names(&ranked(&s.comparisons));
        assert_eq!(order, ["c4", "c6", "c2", "c9", "c8", "c1", "c7", "c5", "c3", "c0"]);
        assert_eq!(
            counts(&s),
            "4 real differences, 2 inconclusive, 1 too noisy to bound, 1 without an error estimate, \
             1 real but within ±5.0 %, 1 no meaningful difference"
        );
        assert_eq!(counts(&summary(&[(Significant, 2.0)])), "1 real difference");
    }

    fn printed(s: &Summary, cut: bool) -> Vec<String> {
        let whole = Whole::new("margin report exp", &Store::at(std::path::Path::new("/r/exp")));
        let mut out = Vec::new();
        answer(s, cut.then_some(&whole), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_terminal_sees_twenty_then_the_counts_and_where_the_rest_is() {
        use VerdictKind::*;
        let many: Vec<(VerdictKind, f64)> = (0..150)
            .map(|i| match i % 3 {
                0 => (Inconclusive, 1.1),
                1 => (NoMeaningfulDifference, 1.0),
                _ => (Significant, 1.0 + f64::from(i) / 100.0),
            })
            .collect();
        let s = summary(&many);
        let lines = printed(&s, true);
        assert_eq!(lines.len(), ON_A_TERMINAL + 2, "{lines:#?}");
        // the 20 biggest real differences, biggest first
        assert!(lines[0].starts_with("  c149: Significant"), "{}", lines[0]);
        assert!(lines[..20].iter().all(|l| l.ends_with(": Significant")), "{lines:#?}");
        assert_eq!(
            lines[20],
            "  … and 130 more (20 of 150 shown, real differences first). All 150: 50 real differences, \
             50 inconclusive, 50 no meaningful difference"
        );
        assert_eq!(
            lines[21],
            "  every comparison: `margin report exp | less` (off a terminal it prints them all), in \
             /r/exp/summary.json (/r/exp/report.md lists the first 100)"
        );
        // off a terminal: every one, in the report's order
        let all = printed(&s, false);
        assert_eq!(all.len(), 150);
        assert!(all[0].starts_with("  c0: Inconclusive") && all[149].starts_with("  c149: "), "{all:#?}");
        // few enough: all of them, ranked, nothing more to say
        let few = summary(&[(NoMeaningfulDifference, 1.0), (Significant, 1.5)]);
        assert_eq!(printed(&few, true), ["  c1: Significant", "  c0: NoMeaningfulDifference"]);
        let some = summary(&vec![(Significant, 2.0); 30]);
        assert!(printed(&some, true)[21].ends_with("in /r/exp/summary.json (and in /r/exp/report.md)"));
    }
}
