//! The Markdown `margin compare` prints: the two sides, the verdict table (the report's
//! glance table), what could not be compared, how the machines differ, the warnings and
//! the gate, from the [`Versus`] the analysis made.

use super::format::{cell_text, markdown_table};
use super::glance;
use crate::summary::Summary;
use crate::summary::versus::{BASELINE, CANDIDATE, SideInfo, Versus};

/// The fact that names the boot a session ran in (the store's `BOOT_ID`, which the report
/// does not import: it formats the summary and reads no store).
const BOOT_ID: &str = "boot_id";

/// A side in one line: `reports/dd-write (label=v1): 1 session, 10 trials`.
fn side_line(name: &str, s: &SideInfo) -> String {
    let selection = s.selection.as_ref().map_or_else(|| " (every trial)".to_owned(), |x| format!(" (`{x}`)"));
    let sessions = s.sessions.len();
    format!(
        "- **{name}**: `{}`{selection}, experiment `{}`: {sessions} session{}, {} trial{}",
        s.store,
        s.experiment,
        if sessions == 1 { "" } else { "s" },
        s.trials,
        if s.trials == 1 { "" } else { "s" },
    )
}

/// The Markdown `compare` prints: the sides, the verdict table (the report's glance
/// table), what could not be compared, how the machines differ, the warnings, the gate.
pub(crate) fn markdown(o: &Versus, summary: &Summary) -> String {
    let mut text = String::from("# margin compare: candidate vs baseline\n\n");
    text.push_str(&side_line(BASELINE, &o.baseline));
    text.push('\n');
    text.push_str(&side_line(CANDIDATE, &o.candidate));
    text.push_str("\n\n");
    let shown = glance::ranked(&summary.comparisons);
    if shown.is_empty() {
        text.push_str("Nothing compared.\n\n");
    } else {
        text.push_str(&glance::table(summary, &shown));
        // a table ends at a blank line (CommonMark tables): the legend is a paragraph
        text.push_str("\n\n");
        text.push_str(&glance::legend(summary, &shown));
        text.push_str("\n\n");
        for c in &shown {
            text.push_str(&format!("- {} · {}: {}\n", c.metric, c.context_text(), c.sentence));
        }
        text.push('\n');
    }
    if !o.not_comparable.is_empty() {
        text.push_str("## Not comparable\n\nCells whose trials ran with different commands, vars, parser or metric rules (their cell ids differ), never compared:\n\n");
        for n in &o.not_comparable {
            text.push_str(&format!(
                "- {}: baseline {}, candidate {}\n",
                n.cell,
                n.baseline_ids.join(", "),
                n.candidate_ids.join(", ")
            ));
        }
        text.push('\n');
    }
    for (what, cells) in
        [("Only in the baseline", &o.only_baseline), ("Only in the candidate", &o.only_candidate)]
    {
        if !cells.is_empty() {
            text.push_str(&format!("## {what}\n\n"));
            for c in cells {
                text.push_str(&format!("- {c}\n"));
            }
            text.push('\n');
        }
    }
    text.push_str("## Environment\n\n");
    if o.environment_differences.is_empty() {
        text.push_str("The two sides' sessions recorded the same facts (host, kernel, CPU, boot, margin's version…).\n\n");
    } else {
        let header: Vec<String> = ["fact", BASELINE, CANDIDATE].map(str::to_owned).to_vec();
        let rows: Vec<Vec<String>> = o
            .environment_differences
            .iter()
            .map(|d| {
                let values =
                    |v: &[String]| if v.is_empty() { "—".to_owned() } else { cell_text(&v.join(", ")) };
                let fact = if d.fact == BOOT_ID { "boot_id (the boot)".to_owned() } else { d.fact.clone() };
                vec![fact, values(&d.baseline), values(&d.candidate)]
            })
            .collect();
        text.push_str("Facts that differ between the two sides' sessions:\n\n");
        text.push_str(&markdown_table(&header, &rows, header.len()));
        text.push_str("\n\n");
    }
    if !o.warnings.is_empty() {
        text.push_str(
            "## Warnings\n\nThe analysis's own, worded for the factor `side`: sides run one after the other \
             are measured in disjoint time windows by design, and drift between the runs is in the change \
             (docs/compare.md, Environment).\n\n",
        );
        for w in &o.warnings {
            text.push_str(&format!("- {}\n", w.message));
        }
        text.push('\n');
    }
    if let Some(fail_on) = o.fail_on {
        let word = fail_on.word();
        if o.failed.is_empty() {
            text.push_str(&format!("Gate `--fail-on {word}`: passed.\n"));
        } else {
            text.push_str(&format!("Gate `--fail-on {word}`: **failed** ({}).\n", o.failed.len()));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_fact_is_the_stores() {
        assert_eq!(BOOT_ID, crate::store::BOOT_ID);
    }
}
