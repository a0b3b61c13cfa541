//! The report's opening lines: how many trials were analysed (and left out, and why), and
//! the settings they were analysed with.

use std::collections::HashSet;

use super::format::{confidence, percent, plural};
use crate::summary::Summary;
use stats::outliers::OutlierRule;
use vocab::Method;

pub(super) fn counts_line(summary: &Summary) -> String {
    let t = &summary.trials;
    let cells: HashSet<&str> = summary.cells.iter().map(|c| c.cell.as_str()).collect();
    let mut parts = vec![format!(
        "{} analysed in {}",
        plural(t.analysed, "trial", "trials"),
        plural(cells.len(), "cell", "cells")
    )];
    if t.warmups > 0 {
        parts.push(format!("{} (not analysed)", plural(t.warmups, "warm-up", "warm-ups")));
    }
    if t.failed > 0 {
        parts.push(format!("{} failed", t.failed));
    }
    if t.stale > 0 {
        parts.push(format!("{} set aside: the command changed", plural(t.stale, "record", "records")));
    }
    if !summary.pending.is_empty() {
        parts.push(format!("{} pending", plural(summary.pending.len(), "cell", "cells")));
    }
    parts.join(" · ")
}

pub(super) fn settings_line(summary: &Summary) -> String {
    let s = &summary.settings;
    let outliers = match s.outliers {
        OutlierRule::Mad { cutoff } => format!("outliers: modified z-score above {cutoff}"),
        OutlierRule::Iqr { cutoff } => format!("outliers: beyond {cutoff} IQR of the quartiles"),
        OutlierRule::None => "outliers: none set aside".to_owned(),
        OutlierRule::Studentized { rate } => format!(
            "outliers: set aside by the studentized rule (a clean cell loses a value {} of the time), \
             labelled above a modified z-score of {}",
            percent(rate * 100.0),
            stats::outliers::MAD_CUTOFF
        ),
    };
    let adjusted = summary.comparisons.iter().filter(|c| c.p_adjusted.is_some()).count();
    let mut line = format!(
        "Confidence {}; practical threshold ±{}; {outliers}; runs needed aim at ±{}.",
        confidence(s.confidence),
        percent(s.threshold_pct),
        percent(s.target_pct)
    );
    if !s.looks.is_empty() {
        let looks: Vec<String> = s.looks.iter().map(u32::to_string).collect();
        line.push_str(&format!(
            " The cells stop once their comparisons are resolved (`until: verdict`), looked at after {} \
             trials, so the intervals are computed at {} (α/{} at each look) to keep false claims within {}.",
            looks.join(", "),
            confidence(s.interval_confidence),
            s.looks.len(),
            percent((1.0 - s.confidence) * 100.0)
        ));
    } else if !s.boot_looks.is_empty() {
        let looks: Vec<String> = s.boot_looks.iter().map(u32::to_string).collect();
        line.push_str(&format!(
            " Each level is booted again until the comparisons across boots are resolved (`boots: {{ until: \
             verdict }}`), looked at after {} boots of each, so the intervals are computed at {} (α/{} at each \
             look) to keep false claims within {}.",
            looks.join(", "),
            confidence(s.interval_confidence),
            s.boot_looks.len(),
            percent((1.0 - s.confidence) * 100.0)
        ));
    } else if s.interval_confidence > s.confidence {
        line.push_str(&format!(
            " The cells stop adaptively, so their intervals are computed at {} to keep {} coverage.",
            confidence(s.interval_confidence),
            confidence(s.confidence)
        ));
    }
    let robust: Vec<&str> =
        summary.metrics.iter().filter(|m| m.method == Method::Robust).map(|m| m.name.as_str()).collect();
    if !robust.is_empty() {
        let which = if robust.len() == summary.metrics.len() {
            "Every metric is".to_owned()
        } else {
            format!("{} {}", robust.join(", "), if robust.len() == 1 { "is" } else { "are" })
        };
        line.push_str(&format!(
            " {which} compared by the robust method: ranks of every value (no outlier set aside), the \
             Hodges–Lehmann shift with its Mann–Whitney interval and the U test's p (paired: the \
             signed-rank interval and test), the medians with their order-statistic intervals."
        ));
    }
    if adjusted > 1 {
        line.push_str(&format!(
            " p-values are Holm-adjusted across the {adjusted} comparisons of this report."
        ));
    }
    line
}
