//! The answer at a glance: the comparisons ranked (real differences first, the biggest
//! first) and the table a row per comparison the report opens with. The terminal answer
//! (`cmd::answer`) ranks by the same [`ranked`].

use std::cmp::Ordering;

use super::format::{cell_text, markdown_table, percent};
use crate::summary::{ComparisonStat, Prediction, Summary};
use stats::notation::{change_and_interval, ratio_change};
use stats::verdict::VerdictKind;
use vocab::Method;

/// Every verdict, in the order a ranked list shows them: real differences, then the
/// undecided (which more trials may settle), then the small and the absent differences.
pub(crate) const RANKED_KINDS: [VerdictKind; 9] = [
    VerdictKind::Significant,
    VerdictKind::UncertainSize,
    VerdictKind::Inconclusive,
    VerdictKind::Unreplicated,
    VerdictKind::Unbounded,
    VerdictKind::Insufficient,
    VerdictKind::TooFewForRobust,
    VerdictKind::WithinBand,
    VerdictKind::NoMeaningfulDifference,
];

/// Where a verdict goes in a ranked list: its place in [`RANKED_KINDS`].
fn rank(kind: VerdictKind) -> usize {
    RANKED_KINDS.iter().position(|k| *k == kind).unwrap_or(RANKED_KINDS.len())
}

/// How big a change is: |ln ratio|, so that halving weighs as much as doubling; a ratio
/// without a size (none, zero, infinite) comes last.
fn size(c: &ComparisonStat) -> f64 {
    if c.ratio.is_finite() && c.ratio > 0.0 { c.ratio.ln().abs() } else { f64::NEG_INFINITY }
}

/// The comparisons by [`rank`], the biggest change first within one; ties keep the
/// report's order.
pub(crate) fn ranked(comparisons: &[ComparisonStat]) -> Vec<&ComparisonStat> {
    let mut out: Vec<&ComparisonStat> = comparisons.iter().collect();
    out.sort_by(|a, b| {
        rank(a.verdict)
            .cmp(&rank(b.verdict))
            .then_with(|| size(b).partial_cmp(&size(a)).unwrap_or(Ordering::Equal))
    });
    out
}

/// A verdict in a table cell: a mark and a word or two (docs/statistics.md, Verdicts).
pub(crate) fn mark(kind: VerdictKind) -> &'static str {
    match kind {
        VerdictKind::Significant => "✔ real",
        VerdictKind::UncertainSize => "✔ real, size unsettled",
        VerdictKind::WithinBand => "≈ real, within margin",
        VerdictKind::NoMeaningfulDifference => "≈ within margin",
        VerdictKind::Inconclusive => "? inconclusive",
        VerdictKind::Unbounded => "? too noisy",
        VerdictKind::Unreplicated => "⚠ unreplicated",
        VerdictKind::Insufficient => "– no error estimate",
        VerdictKind::TooFewForRobust => "– too few for robust",
    }
}

/// `host: domu vs dom0`.
pub(crate) fn comparison(c: &ComparisonStat) -> String {
    format!("{}: {} vs {}", c.factor, c.level, c.baseline)
}

/// The header of [`table`]'s CI column: the level the intervals are computed at, named
/// "(adaptive)" when adaptive stopping raised it above the nominal level (the settings
/// line under the title says why).
pub(crate) fn ci_header(summary: &Summary) -> String {
    let (level, adaptive) = interval_level(summary);
    format!("{level} CI{adaptive}")
}

/// The level every interval of the report is computed at, and ` (adaptive)` when adaptive
/// stopping raised it above the nominal level.
pub(crate) fn interval_level(summary: &Summary) -> (String, &'static str) {
    let s = &summary.settings;
    let adaptive = if s.interval_confidence > s.confidence + 1e-9 { " (adaptive)" } else { "" };
    (super::format::confidence(s.interval_confidence), adaptive)
}

/// The factor levels every comparison of `shown` holds fixed alike (`size=5000`): said
/// once under the table rather than in every row, to keep its cells short.
pub(crate) fn common_context(shown: &[&ComparisonStat]) -> Vec<(String, String)> {
    let Some(first) = shown.first() else { return Vec::new() };
    first
        .context
        .iter()
        .filter(|(k, v)| shown.iter().all(|c| c.context.get(*k) == Some(*v)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The table the report opens with: a row per comparison of `shown` (ranked), with the
/// metric, the comparison and its context (the levels that differ between rows; no
/// column when none do), the change with its interval, the verdict.
pub(crate) fn table(summary: &Summary, shown: &[&ComparisonStat]) -> String {
    let common = common_context(shown);
    let context = |c: &ComparisonStat| {
        let varying: Vec<String> = c
            .context
            .iter()
            .filter(|(k, v)| !common.iter().any(|(ck, cv)| ck == *k && cv == *v))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if varying.is_empty() { "—".to_owned() } else { cell_text(&varying.join(" ")) }
    };
    let with_context = shown.iter().any(|c| c.context.len() > common.len());
    let mut header = vec!["metric".to_owned(), "comparison".to_owned()];
    if with_context {
        header.push("context".to_owned());
    }
    header.extend(["change".to_owned(), ci_header(summary), "verdict".to_owned()]);
    let with_method = any_robust(shown);
    if with_method {
        header.push("method".to_owned());
    }
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|c| {
            // the change in its interval's notation, so that the three numbers read one way
            let (change, interval) = match (c.ci_low, c.ci_high, &c.prediction) {
                (Some(low), Some(high), _) => change_and_interval(c.ratio, (low, high)),
                (_, _, Some(p)) => (ratio_change(c.ratio), prediction_cell(p, &c.unit)),
                _ => (ratio_change(c.ratio), "—".to_owned()),
            };
            let mut row = vec![cell_text(&c.metric), cell_text(&comparison(c))];
            if with_context {
                row.push(context(c));
            }
            row.extend([change, interval, mark(c.verdict).to_owned()]);
            if with_method {
                row.push(method_cell(c).to_owned());
            }
            row
        })
        .collect();
    markdown_table(&header, &rows, header.len())
}

/// Whether any comparison of `shown` was computed by the robust method.
fn any_robust(shown: &[&ComparisonStat]) -> bool {
    shown.iter().any(|c| c.method == Method::Robust)
}

/// The method behind a verdict, in the table's method column.
fn method_cell(c: &ComparisonStat) -> &'static str {
    match c.method {
        Method::Robust => "robust: ranks",
        Method::Parametric => "parametric: means",
    }
}

/// Where a single trial lies against the other side's prediction interval, in the
/// interval's column: `far above PI [88.12, 97.30] MB/s`.
fn prediction_cell(p: &Prediction, unit: &str) -> String {
    let range = super::format::scale(unit, p.low);
    let high = p.high.map_or_else(|| "∞".to_owned(), |h| range.number(h));
    let place = p.place.words(p.far);
    cell_text(format!("{place} PI [{}, {high}] {}", range.number(p.low), range.symbol).trim_end())
}

/// The line under the table: what its columns mean here.
pub(crate) fn legend(summary: &Summary, shown: &[&ComparisonStat]) -> String {
    let common: Vec<String> = common_context(shown).iter().map(|(k, v)| format!("{k}={v}")).collect();
    let held = if common.is_empty() {
        String::new()
    } else {
        format!("Every comparison at {}. ", cell_text(&common.join(" ")))
    };
    let prediction = if shown.iter().any(|c| c.prediction.is_some() && c.ci_low.is_none()) {
        format!(
            " PI: one side is a single trial; where it lies against the {} prediction interval of one more \
             trial of the other side.",
            super::format::confidence(summary.settings.interval_confidence)
        )
    } else {
        String::new()
    };
    let (change, method) = if any_robust(shown) {
        (
            "the level's mean against the baseline's (robust: the Hodges–Lehmann shift of the logs, a \
             median of the ratios between their trials)",
            " Method: parametric, the means by Fieller's interval (paired: the t-interval of the \
             log-ratios); robust, ranks by the Mann–Whitney interval (paired: the signed-rank interval), \
             every value kept.",
        )
    } else {
        (
            "the level's mean against the baseline's",
            " Every verdict by the parametric method: the means, by Fieller's interval (paired: the \
             t-interval of the log-ratios).",
        )
    };
    format!(
        "{held}Change: {change}, past ×2 as a multiple and below \
         ÷2 as a division; — where there is no interval (each comparison's sentence below says \
         why). The margin is the practical threshold ±{}. Real differences first, the biggest first.{method}{prediction}",
        percent(summary.settings.threshold_pct)
    )
}
