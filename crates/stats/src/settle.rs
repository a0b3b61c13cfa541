//! What would settle an unsettled verdict, in the sentence's words: how many more trials,
//! or boots of how many trials (from the variance components), or why more of either
//! would not (docs/statistics.md, Verdicts; Sessions and boots).

use super::StatsSettings;
use super::compare::Comparison;
use super::components::{Advice, Components, advise};
use super::notation::fraction_as_percent;

/// What one more replicate of a level is: a trial, or a boot (a session where margin
/// cannot tell the boot) of about `trials` trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Replicate<'a> {
    Trial,
    /// `components`: each level's variance components within and between its units, when
    /// both have two or more; then the advice comes from them ([`advise`]).
    Unit {
        unit: &'a str,
        trials: usize,
        components: Option<(Components, Components)>,
        units: usize,
    },
}

impl Replicate<'_> {
    /// "about 3 more trials per level", "about 2 more boots of each level, 5 trials each".
    fn more(&self, n: usize) -> String {
        match *self {
            Replicate::Trial if n == 1 => "about 1 more trial per level".to_owned(),
            Replicate::Trial => format!("about {n} more trials per level"),
            Replicate::Unit { unit, trials, .. } => more_units(unit, n, trials),
        }
    }

    /// How to spread further runs so that the interval's half-width falls to `target`,
    /// from the variance components (docs/statistics.md, Sessions and boots).
    pub(super) fn advice(&self, target: f64, settings: &StatsSettings) -> Option<Advice> {
        match *self {
            Replicate::Unit { components: Some((a, b)), units, .. } => {
                advise(&a, &b, units, target, settings.confidence)
            }
            _ => None,
        }
    }
}

/// "about 2 more boots of each level, 5 trials each,".
fn more_units(unit: &str, n: usize, trials: usize) -> String {
    let each = if trials == 1 { "1 trial".to_owned() } else { format!("{trials} trials") };
    let units = if n == 1 { unit.to_owned() } else { format!("{unit}s") };
    format!("about {n} more {units} of each level, {each} each,")
}

/// The sentence's advice from the variance components: how many boots of how many
/// trials, how sure, and whether more trials per boot would help.
pub(super) fn advice_words(unit: &str, advice: &Advice) -> String {
    let more = more_units(unit, advice.more_units, advice.trials_per_unit);
    let sure = format!(
        "{} would settle it {} times in 10 if {unit}s and trials vary as measured",
        more.trim_end_matches(','),
        (advice.assurance * 10.0).floor()
    );
    if advice.between_dominates {
        format!(
            "{sure}; the {unit}s differ more than their trials do, so more trials per {unit} would not help"
        )
    } else {
        sure
    }
}

/// When no number of boots margin would advise ([`super::components::MAX_BOOTS`]) settles
/// it: how much the boots differ, and what would help instead of booting on.
pub(super) fn too_many_units(unit: &str, a: &Components, b: &Components) -> String {
    format!(
        "its {unit}s differ by about {} between them (their trials within a {unit} by {}): more than {} \
         {unit}s of each level would be needed to settle it; find what changes from {unit} to {unit} and \
         hold it fixed",
        fraction_as_percent(a.between_cv.max(b.between_cv)),
        fraction_as_percent(a.within_cv.max(b.within_cv)),
        super::components::MAX_BOOTS
    )
}

/// "about 4 more trials per level would settle it"; where that takes a level past the
/// experiment's `max:` trials a cell, it says so and what would help instead, rather than
/// a count no run of this file will reach (the default experiment once read "about 8937
/// more trials per level" with `max: 20`).
pub(super) fn beyond_the_maximum(
    n: usize,
    comparison: &Comparison,
    settings: &StatsSettings,
    replicate: Replicate<'_>,
) -> String {
    let settle = format!("{} would settle it", replicate.more(n));
    match (replicate, settings.max_trials) {
        (Replicate::Trial, Some(max)) if comparison.n_a.max(comparison.n_b) + n > max => format!(
            "{settle}, past the experiment's maximum of {max} trials a cell: more trials alone will not \
             settle it here; less noise (the warnings and the stability section say where it comes from) \
             or a wider band (`analysis.threshold`) would"
        ),
        _ => settle,
    }
}

/// "about 4 more trials per level would settle it", from [`super::compare::trials_to_settle`]'s count.
pub(super) fn settle_words(more: Option<usize>, band: &str, replicate: Replicate<'_>) -> String {
    match more {
        Some(0) => format!("the difference lies close to {band}, so only many more trials would settle it"),
        Some(n) => format!("{} would settle it", replicate.more(n)),
        None => "it would take more trials than are practical to settle it".to_owned(),
    }
}
