//! How a change reads: a ratio as a signed percentage, a multiple or a division, in one
//! notation for a change and its interval (docs/statistics.md, Verdicts); percentages and
//! confidence levels as people write them. The report's tables, the verdict sentences of
//! summary.json and the terminal all read a ratio through these, so that one change is
//! never printed two ways.

/// How far a ratio may go as a percentage: past it, a change reads as a multiple.
const MULTIPLE_FROM: f64 = 2.0;

/// How a change and its interval read: one notation for the three numbers, chosen from
/// the whole interval (docs/statistics.md, Verdicts), so that `÷2.2 [÷5.09, -16.7 %]`
/// reads `÷2.2 [÷5.09, ÷1.2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Notation {
    /// A signed percentage: `+12.3 %`, `-54.5 %`.
    Percent,
    /// A multiple: `×2.5`, `×217`, `×0.6`; where the interval reaches twice or more.
    Multiple,
    /// A division: `÷3.1`, `÷1.2`; where the interval reaches half or less and lies
    /// below no change, so that halving reads like doubling.
    Division,
}

impl Notation {
    /// The notation of an interval of ratios (low, high), whichever side of no change its
    /// bounds lie: percentages while it stays within ÷2 and ×2; divisions when it reaches
    /// ÷2 or below and stays below no change (`[÷5.09, ÷1.2]`); multiples when it reaches
    /// ×2 or more, or spans no change from ÷2 or below (`[×0.6, ×82.8]`), so that no
    /// percentage ever reads above +100 % ("×217", never "+21 600 %"). A ratio of negative
    /// means has no multiple: percentages.
    pub(crate) fn of((low, high): (f64, f64)) -> Notation {
        let half = 1.0 / MULTIPLE_FROM;
        if low <= 0.0 || low.is_nan() || high.is_nan() {
            Notation::Percent
        } else if high >= MULTIPLE_FROM || (low <= half && high > 1.0) {
            Notation::Multiple
        } else if low <= half {
            Notation::Division
        } else {
            Notation::Percent
        }
    }
}

/// A ratio (level / baseline) as the change people read, in the one form the report's
/// table, the verdict sentences and the terminal answer share (docs/statistics.md,
/// Verdicts): within ÷2 and ×2 a signed percentage (`+12.3 %`, `-19.9 %`, `-0.42 %`);
/// from twice up a multiple (`×2.5`, `×217`); from half down a division (`÷3.1`), so that
/// halving reads like doubling. Three significant digits, trailing zeros dropped. A
/// change shown with its interval reads in the interval's notation ([`ratio_change_in`]).
pub fn ratio_change(ratio: f64) -> String {
    ratio_change_in(ratio, Notation::of((ratio, ratio)))
}

/// A ratio as a change in the given notation.
pub(crate) fn ratio_change_in(ratio: f64, notation: Notation) -> String {
    if ratio.is_nan() {
        return "—".to_owned();
    }
    match notation {
        Notation::Multiple => format!("×{}", multiple(ratio)),
        Notation::Division => format!("÷{}", multiple(1.0 / ratio)),
        Notation::Percent if ratio.is_infinite() => format!("{}∞ %", if ratio > 0.0 { "+" } else { "-" }),
        Notation::Percent => signed_fraction_as_percent(ratio - 1.0),
    }
}

/// A ratio's interval, both bounds in its notation ([`Notation::of`]): `[-20.9 %, -18.9 %]`,
/// `[×184, ×236]`, `[×0.6, ×82.8]`.
pub fn ratio_interval(bounds: (f64, f64)) -> String {
    let notation = Notation::of(bounds);
    format!("[{}, {}]", ratio_change_in(bounds.0, notation), ratio_change_in(bounds.1, notation))
}

/// A change and its interval in one notation, the interval's: `÷2.2 [÷5.09, ÷1.2]`.
pub fn change_and_interval(ratio: f64, bounds: (f64, f64)) -> (String, String) {
    (ratio_change_in(ratio, Notation::of(bounds)), ratio_interval(bounds))
}

/// 2.5 → `2.5`, 217.4 → `217`, 21.64 → `21.6`, 2.0 → `2`.
fn multiple(x: f64) -> String {
    if !x.is_finite() {
        return "∞".to_owned();
    }
    let decimals = (2 - x.log10().floor() as i32).clamp(0, 9) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text }
}

/// A confidence level as people write it: 0.95 → `95 %`, 0.97 → `97 %`, 0.975 → `97.5 %`,
/// and at most two decimals: 1 − 0.05/3 → `98.33 %` (not 98.3333 %).
pub fn confidence_level(level: f64) -> String {
    format!("{} %", (level * 100.0 * 100.0).round() / 100.0)
}

/// A fraction as a percentage: one decimal, two below 1 %, so small effects keep a
/// significant digit.
pub(crate) fn fraction_as_percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if value.abs() < 1.0 { format!("{value:.2} %") } else { format!("{value:.1} %") }
}

/// A percentage with its sign, for interval bounds on both sides of zero.
fn signed_fraction_as_percent(fraction: f64) -> String {
    let text = fraction_as_percent(fraction);
    if text.starts_with('-') { text } else { format!("+{text}") }
}
