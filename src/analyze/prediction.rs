//! Where a single trial stands against the measured trials of the other side of a
//! comparison (docs/statistics.md, A single number against measured runs).

use crate::summary::{ComparisonStat, MetricMeta, Prediction};
use stats::StatsSettings;
use stats::notation::confidence_level;
use stats::observations::Observations;
use stats::prediction::prediction_interval;
use stats::verdict::VerdictKind;
use vocab::MeanKind;
use vocab::display::scale;

/// Adds to a comparison just made, when one side (of an `independent` design) is a single
/// trial and the other has two or more, the prediction interval of the other side and the
/// sentence that says where the single trial lies.
pub(crate) fn predict(
    stat: &mut ComparisonStat,
    (a, b): (&Observations, &Observations),
    meta: &MetricMeta,
    settings: &StatsSettings,
    independent: bool,
) {
    if !independent {
        return;
    }
    let (single, measured, single_level, measured_level) = match (a.len(), b.len()) {
        (1, n) if n >= 2 => (a, b, &stat.baseline, &stat.level),
        (n, 1) if n >= 2 => (b, a, &stat.level, &stat.baseline),
        _ => return,
    };
    let Some(interval) = prediction_interval(measured, settings.confidence) else { return };
    let value = single.values()[0];
    let prediction = Prediction {
        single_level: single_level.clone(),
        value,
        measured_level: measured_level.clone(),
        measured_n: measured.len(),
        confidence: settings.confidence,
        low: interval.low,
        high: interval.high.is_finite().then_some(interval.high),
        place: interval.place(value),
        far: interval.far(value),
    };
    let clause = prediction_clause(&prediction, &stat.factor, meta, stat.replication.is_some());
    stat.sentence = match stat.verdict {
        VerdictKind::Unreplicated => format!("{}; {clause}", stat.sentence),
        _ => format!(
            "{clause}; with one trial of {} the change has no interval of its own: 2 trials give one, 5 a \
             dependable one",
            prediction.single_level
        ),
    };
    stat.prediction = Some(Box::new(prediction));
}

/// "the single trial of sync=none, 501.7 MB/s, lies far above the 95 % prediction
/// interval of one more trial of sync=fdatasync, [88.12, 97.30] MB/s (from its 5 trials,
/// assuming …)".
fn prediction_clause(p: &Prediction, factor: &str, meta: &MetricMeta, across_units: bool) -> String {
    let display = scale(&meta.unit, p.value);
    let range = scale(&meta.unit, p.low);
    let high = p.high.map_or_else(|| "∞".to_owned(), |h| range.number(h));
    let unit = if range.symbol.is_empty() { String::new() } else { format!(" {}", range.symbol) };
    let place = p.place.words(p.far);
    let scale_note = match meta.mean_kind {
        MeanKind::Arithmetic => "",
        MeanKind::Harmonic => " in time per unit of work (a harmonic mean's scale)",
    };
    let boots = if across_units { "; a trial in another boot may vary more" } else { "" };
    format!(
        "the single trial of {factor}={}, {}, lies {place} the {} prediction interval of one more trial of \
         {factor}={}, [{}, {high}]{unit} (from its {} trials; it assumes that the single trial varies as they \
         do, normally{scale_note}{boots})",
        p.single_level,
        display.with_unit(p.value),
        confidence_level(p.confidence),
        p.measured_level,
        range.number(p.low),
        p.measured_n,
    )
}
