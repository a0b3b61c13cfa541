//! What the comparisons answer beyond their verdicts: where a single trial stands against
//! the measured trials of the other side (docs/statistics.md, A single number against
//! measured runs), and each compared level's effect pooled over the contexts it was
//! compared in (docs/statistics.md, Effects across the matrix).

use indexmap::IndexMap;

use crate::summary::{ComparisonStat, Effect, MetricMeta, Prediction};
use stats::StatsSettings;
use stats::compare::{Comparison, Spread, welch_df};
use stats::notation::{change_and_interval, confidence_level};
use stats::observations::Observations;
use stats::pool::{LogRatio, pool};
use stats::prediction::prediction_interval;
use stats::verdict::VerdictKind;
use vocab::MeanKind;
use vocab::display::{scale, significant};

/// Adds to a comparison just made what pooling and a single trial need: its log-ratio,
/// and, when one side (of an `independent` design) is a single trial and the other has
/// two or more, the prediction interval of the other side and the sentence that says
/// where the single trial lies.
pub(crate) fn annotate(
    stat: &mut ComparisonStat,
    (comparison, all): (&Comparison, &Comparison),
    (a, b): (&Observations, &Observations),
    meta: &MetricMeta,
    settings: &StatsSettings,
    independent: bool,
) {
    stat.log_ratio = log_ratio(comparison, stat.verdict);
    stat.log_ratio_all = stat.log_ratio.and_then(|_| log_ratio(all, stat.verdict));
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

/// ln(ratio) with its variance and degrees of freedom, for a comparison with an interval
/// of its own: independent, CV_A²/n_A + CV_B²/n_B (the delta method, on the analysis
/// scale) with Welch–Satterthwaite df; paired, s_d²/k on k − 1 df.
fn log_ratio(c: &Comparison, verdict: VerdictKind) -> Option<LogRatio> {
    if matches!(
        verdict,
        VerdictKind::Insufficient
            | VerdictKind::Unbounded
            | VerdictKind::Unreplicated
            | VerdictKind::TooFewForRobust
    ) || !(c.ratio > 0.0 && c.ratio.is_finite())
    {
        return None;
    }
    let (na, nb) = (c.n_a as f64, c.n_b as f64);
    let (variance, df, per_spread) = match c.spread? {
        Spread::Independent { cv_a, cv_b } => {
            let (va, vb) = (cv_a * cv_a / na, cv_b * cv_b / nb);
            let df = welch_df(va, c.n_a, vb, c.n_b);
            (va + vb, df, 1.0 / na + 1.0 / nb)
        }
        Spread::Paired { sd_log } => (sd_log * sd_log / na, na - 1.0, 1.0 / na),
    };
    (variance > 0.0 && variance.is_finite() && df > 0.0).then_some(LogRatio {
        estimate: c.ratio.ln(),
        variance,
        df,
        per_spread,
    })
}

/// Each compared level's effect for each metric, pooled over the contexts whose
/// comparisons have an interval, where there are two or more, in the comparisons' order.
pub(crate) fn effects(comparisons: &[ComparisonStat], settings: &StatsSettings) -> Vec<Effect> {
    let mut groups: IndexMap<(&str, &str, &str, &str), Vec<&ComparisonStat>> = IndexMap::new();
    for c in comparisons {
        groups.entry((&c.factor, &c.baseline, &c.level, &c.metric)).or_default().push(c);
    }
    let mut out = Vec::new();
    for ((factor, baseline, level, metric), group) in groups {
        let with: Vec<&ComparisonStat> = group.iter().copied().filter(|c| c.log_ratio.is_some()).collect();
        let ratios: Vec<LogRatio> = with.iter().filter_map(|c| c.log_ratio).collect();
        let Some(mut pooled) = pool(&ratios, settings.confidence) else { continue };
        // Whether the effect differs is judged on every value: a cell that lost a value to
        // the outlier rule has a smaller spread, a larger weight in Welch's test, and made
        // it say "differs" at 5.4–5.5 % of equal effects instead of 4.4–4.9 % (8 contexts
        // of 5 trials; docs/statistics.md, Effects across the matrix).
        let all: Vec<LogRatio> = with.iter().filter_map(|c| c.log_ratio_all).collect();
        if let (true, Some(every)) = (all.len() == ratios.len(), pool(&all, settings.confidence)) {
            (pooled.q, pooled.q_p, pooled.i2, pooled.tau2, pooled.p_differs) =
                (every.q, every.q_p, every.i2, every.tau2, every.p_differs);
        }
        let over: Vec<String> = with[0]
            .context
            .iter()
            .filter(|(k, v)| with.iter().any(|c| c.context.get(*k) != Some(*v)))
            .map(|(k, _)| k.clone())
            .collect();
        let differs = pooled.p_differs < settings.alpha();
        let keys = if over.is_empty() { "context".to_owned() } else { over.join(" × ") };
        let tests = format!("{}, I² = {:.0} %", p_clause(pooled.p_differs), pooled.i2 * 100.0);
        let across = if differs {
            format!("the effect differs by {keys} ({tests})")
        } else {
            format!(
                "no sign that it differs by {keys} ({tests}), which with {} contexts does not show that it is \
                 the same",
                pooled.contexts
            )
        };
        let (change, interval) = change_and_interval(pooled.ratio, (pooled.low, pooled.high));
        let sentence = format!(
            "{factor}: {level} vs {baseline} · {metric}: {change} {interval} at {} confidence over {} contexts; {across}",
            confidence_level(settings.confidence),
            pooled.contexts,
        );
        out.push(Effect {
            factor: factor.to_owned(),
            baseline: baseline.to_owned(),
            level: level.to_owned(),
            metric: metric.to_owned(),
            over,
            contexts: pooled.contexts,
            left_out: group.len() - with.len(),
            ratio: pooled.ratio,
            change_pct: (pooled.ratio - 1.0) * 100.0,
            ci_low: pooled.low,
            ci_high: pooled.high,
            confidence: settings.confidence,
            q: pooled.q,
            q_p: pooled.q_p,
            i2_pct: pooled.i2 * 100.0,
            tau2: pooled.tau2,
            p_differs: pooled.p_differs,
            differs,
            sentence,
        });
    }
    out
}

/// `p = 0.0123` or `p < 0.001`.
fn p_clause(p: f64) -> String {
    if p < 0.001 { "p < 0.001".to_owned() } else { format!("p = {}", significant(p, 3)) }
}
