//! Each comparison's answer in words, as the report opens with them: its title, the
//! sentence of its verdict, and the details behind it (the sides, p, the detectable
//! effect, what the outliers would change).

use serde::Serialize;

use super::format::{confidence, p_clause, percent, plural, scale};
use super::{glance, telemetry};
use crate::summary::{Arm, ComparisonStat, Summary};

#[derive(Debug, Serialize)]
pub(super) struct Answer {
    title: String,
    sentence: String,
    detail: String,
}

pub(super) fn answer(summary: &Summary, c: &ComparisonStat) -> Answer {
    let mut title = format!("{} · {}", glance::comparison(c), c.metric);
    if !c.context.is_empty() {
        title.push_str(&format!(" ({})", c.context_text()));
    }
    let confidence = confidence(summary.settings.interval_confidence);
    let side = |name: &str, arm: &Arm| {
        let display = scale(&c.unit, arm.mean);
        if let Some(m) = &arm.median {
            let display = scale(&c.unit, m.value);
            return match (m.ci_low, m.ci_high) {
                (Some(low), Some(high)) => format!(
                    "{name} median {} [{}, {}] ({confidence} order-statistic interval)",
                    display.with_unit(m.value),
                    display.number(low),
                    display.number(high)
                ),
                _ => format!(
                    "{name} median {} (n = {}: too few for a {confidence} interval of the median, which takes 6)",
                    display.with_unit(m.value),
                    arm.n
                ),
            };
        }
        match (arm.moe, arm.moe_pct) {
            (Some(moe), Some(pct)) => {
                format!("{name} {} (±{})", display.plus_minus(arm.mean, moe), percent(pct))
            }
            _ => format!("{name} {} (n = {}: no error estimate)", display.with_unit(arm.mean), arm.n),
        }
    };
    let mut detail =
        vec![format!("{}, {}", side(&c.baseline, &c.baseline_arm), side(&c.level, &c.level_arm))];
    match (&c.paired_by, c.pairs.len()) {
        (Some(by), k) => detail.push(format!("paired by {by} ({})", plural(k, "pair", "pairs"))),
        (None, _) => detail.push(format!("n = {} and {}", c.baseline_arm.n, c.level_arm.n)),
    }
    if let Some(p) = c.p_value {
        let adjusted = c
            .p_adjusted
            .filter(|a| *a != p)
            .map(|a| format!(" ({})", p_clause("Holm", a)))
            .unwrap_or_default();
        detail.push(format!("{}{adjusted}", p_clause("p", p)));
    }
    if let Some(mde) = c.mde_pct {
        detail.push(format!("detectable at 80 % power: {}", percent(mde)));
    }
    if let Some(kept) = c.verdict_with_outliers {
        detail.push(format!("with the outliers kept: {}", kept.words()));
    }
    if let Some(without) = c.verdict_without_outliers {
        detail.push(format!("with the flagged outliers set aside: {}", without.words()));
    }
    if let Some(flag) = telemetry::not_converged(summary, c) {
        detail.push(flag);
    }
    Answer { title, sentence: c.sentence.clone(), detail: detail.join("; ") }
}
