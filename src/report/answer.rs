//! Each comparison's answer in words, as the report opens with them: its title, the
//! sentence of its verdict, and the details behind it (the sides, p, the detectable
//! effect, what the outliers would change).

use serde::Serialize;

use super::format::{confidence, p_clause, percent, plural, scale};
use super::{glance, telemetry};
use crate::summary::{Arm, ComparisonStat, Replication, Summary};

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
    // what a side's ± spans: its boots' means where they are the observations, the
    // trials within its boots where one side had one boot
    let of = |units: usize| match &c.replication {
        Some(r) if r.baseline_units >= 2 && r.level_units >= 2 => format!(", its {}s' means", r.unit),
        Some(r) if units == 1 => format!(", within its {}", r.unit),
        Some(r) => format!(", its trials within their {}s", r.unit),
        None => String::new(),
    };
    let units = |baseline: bool| {
        c.replication.as_ref().map_or(0, |r| if baseline { r.baseline_units } else { r.level_units })
    };
    let side = |name: &str, arm: &Arm, of: String| {
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
                format!("{name} {} (±{}{of})", display.plus_minus(arm.mean, moe), percent(pct))
            }
            _ => format!("{name} {} (n = {}: no error estimate)", display.with_unit(arm.mean), arm.n),
        }
    };
    let mut detail = vec![format!(
        "{}, {}",
        side(&c.baseline, &c.baseline_arm, of(units(true))),
        side(&c.level, &c.level_arm, of(units(false)))
    )];
    if let Some(by) = &c.paired_by {
        detail.push(format!("paired by {by} ({})", plural(c.pairs.len(), "pair", "pairs")));
    }
    match (&c.replication, &c.paired_by) {
        // across boots the boots are what the interval counts: said as boots, with their
        // trials, and whose spread the ± above holds
        (Some(r), _) => detail.push(units_words(r)),
        (None, Some(_)) => {}
        (None, None) => detail.push(format!("n = {} and {}", c.baseline_arm.n, c.level_arm.n)),
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

/// "3 boots and 3 boots, 9 trials each (3 a boot)": the units behind each side of a
/// comparison across boots (or sessions), and the trials in them.
fn units_words(r: &Replication) -> String {
    let unit = |n: usize| plural(n, r.unit, &format!("{}s", r.unit));
    let trials = if r.baseline_trials == r.level_trials {
        format!("{} each", plural(r.baseline_trials, "trial", "trials"))
    } else {
        format!("{} and {} trials", r.baseline_trials, r.level_trials)
    };
    let per = match r.trials_per_unit {
        // one unit a side: its trials are the side's
        _ if r.baseline_units == 1 && r.level_units == 1 => String::new(),
        (most, fewest) if most == fewest => format!(" ({most} a {})", r.unit),
        (most, fewest) => format!(" ({fewest}–{most} a {})", r.unit),
    };
    format!("{} and {}, {trials}{per}", unit(r.baseline_units), unit(r.level_units))
}
