//! Change points in an ordered series of levels (docs/statistics.md, Change points in a
//! series): where the metric stepped, by how much (a ratio with its interval), the levels
//! grouped into segments, or "no change" with the smallest step the data could have found.
//!
//! Each level brings its units: the trials of one session, or one value per boot when the
//! levels were measured in boots of their own (each boot's mean, [`crate::units::unit_means`]),
//! as comparisons use them. Everything is computed on the analysis scale (the reciprocals
//! of a harmonic metric) and on the log of the means, so a step is a ratio, as margin's
//! comparisons read.
//!
//! The method is binary segmentation: in a segment of levels, every split between two
//! adjacent levels gives the t statistic of the log-ratio of the two sides' means, with
//! the spread pooled over every level of the series; the largest |t| is a change when it
//! passes the Bonferroni bound over the segment's splits at the series' error rate, and the
//! two sides are searched again. Under a series without change only the first test can
//! fire, so at most `alpha` of such series get any change point.

use serde::Serialize;

use crate::observations::Observations;
use crate::outliers::{self, OutlierRule};
use crate::{StatsError, dist};
use vocab::MeanKind;

pub mod sequence;
#[cfg(test)]
mod tests;

/// The share of series without change that may get a change point (family-wise over the
/// series): 1 %.
pub const FALSE_CHANGES: f64 = 0.01;

/// The steps' intervals are at 1 − this × (1 − confidence) (97 % for 95 %): a change point
/// is placed where the data make the step look largest, which narrows the interval around
/// it as stopping on the margin does (docs/statistics.md, Change points in a series: at
/// 95 % the steps found at their level were covered 93.5–95.3 % of the time).
pub const STEP_ALPHA_SHARE: f64 = 0.6;

/// The Bonferroni bound is taken at this share of the series' α: for normal units α itself
/// would keep the promise (each split's t is Student's), but heavy-tailed units (t₃, 10
/// trials a level) give a split by one or a few levels a tail beyond Student's at the bound's
/// level, and at α itself 1.26–1.40 % of such series without change got a change point
/// (docs/statistics.md, Change points in a series).
pub const BOUND_SHARE: f64 = 0.5;

/// The fewest levels a series needs.
pub const MIN_LEVELS: usize = 2;

/// Why a series could not be analysed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SeriesError {
    #[error("a series needs at least {MIN_LEVELS} levels, found {found}")]
    TooFewLevels { found: usize },
    #[error(
        "level #{level} has a {found} mean, the series' first a {expected} one: one metric has one kind of mean"
    )]
    MixedMeanKinds { level: usize, expected: MeanKind, found: MeanKind },
    #[error("level #{level}'s mean is {mean}: a ratio needs positive means")]
    NonPositiveMean { level: usize, mean: f64 },
    #[error("setting `{name}` is {value}, expected {expected}")]
    InvalidSetting { name: &'static str, value: f64, expected: &'static str },
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// The knobs of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeriesSettings {
    /// The share of series without change that may get a change point ([`FALSE_CHANGES`]).
    pub alpha: f64,
    /// The confidence of the segments' intervals (0.95); the steps' are wider (`step_confidence`).
    pub confidence: f64,
    /// The power at which the detectable step is quoted (0.80).
    pub power: f64,
}

impl Default for SeriesSettings {
    fn default() -> Self {
        SeriesSettings { alpha: FALSE_CHANGES, confidence: 0.95, power: 0.80 }
    }
}

impl SeriesSettings {
    fn validate(&self) -> Result<(), SeriesError> {
        let check = |name, value: f64, ok: bool, expected| {
            if ok { Ok(()) } else { Err(SeriesError::InvalidSetting { name, value, expected }) }
        };
        check("alpha", self.alpha, self.alpha > 0.0 && self.alpha < 1.0, "a probability in (0, 1)")?;
        let c = self.confidence;
        check("confidence", c, c > 0.0 && c < 1.0, "a level strictly between 0 and 1")?;
        check("power", self.power, (0.5..1.0).contains(&self.power), "a probability in [0.5, 1)")
    }
}

/// What the series says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SeriesVerdict {
    /// One or more change points.
    Changes,
    /// No change point: [`Series::detectable`] says how large a step would have been found.
    NoChange,
    /// Every level has one unit: how much units vary is unmeasured, and nothing is claimed.
    Unreplicated,
}

/// A mean with its interval, on the metric's scale (`None` without an error estimate).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MeanEstimate {
    pub mean: f64,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// One level of the series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LevelSummary {
    pub units: usize,
    /// The level's mean and its interval from the spread pooled over the series.
    #[serde(flatten)]
    pub estimate: MeanEstimate,
}

/// Levels `first..=last` (indices into the series) that share one mean.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Segment {
    pub first: usize,
    pub last: usize,
    pub units: usize,
    #[serde(flatten)]
    pub estimate: MeanEstimate,
}

/// A change between level `after` and level `after + 1`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangePoint {
    /// The last level before the change.
    pub after: usize,
    /// The later segment's mean over the earlier's, on the metric's scale.
    pub ratio: f64,
    /// Its interval at [`Series::step_confidence`].
    pub low: f64,
    pub high: f64,
    /// The t statistic of the log-ratio when it was found, and the bound it passed.
    pub t: f64,
    pub critical: f64,
    /// The split's p-value, Bonferroni-adjusted over the splits of the segment it was found
    /// in, and over [`BOUND_SHARE`]: a change point is found when it is below α.
    pub p_value: f64,
}

/// The smallest steps the data could have found with the settings' power.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Detectable {
    /// A step half-way through the series' units, as a fraction (0.05: a 5 % step, either way).
    pub middle: f64,
    /// A step after the first level or before the last, whichever is harder to see.
    pub edge: f64,
}

/// The analysis of one series.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Series {
    pub verdict: SeriesVerdict,
    pub mean_kind: MeanKind,
    pub levels: Vec<LevelSummary>,
    pub segments: Vec<Segment>,
    pub change_points: Vec<ChangePoint>,
    /// For [`SeriesVerdict::NoChange`]: how large a step would have been found.
    pub detectable: Option<Detectable>,
    /// The units' spread within a level relative to its mean, pooled over the levels
    /// (`None` when unreplicated), and its degrees of freedom (units − levels).
    pub cv: Option<f64>,
    pub df: usize,
    pub alpha: f64,
    /// The confidence of the segments' and levels' intervals.
    pub confidence: f64,
    /// The confidence of the steps' intervals: 1 − [`STEP_ALPHA_SHARE`] × (1 − confidence).
    pub step_confidence: f64,
}

/// A level's trials less those `rule` sets aside (margin's default, the studentized
/// deviation beyond its Bonferroni cutoff; docs/statistics.md, Outliers): the values a
/// cell's statistics use, and what a level should bring to the series. For MAD and IQR,
/// which only flag, `rule` should be [`OutlierRule::None`].
pub fn kept(sample: &Observations, rule: &OutlierRule) -> Result<Observations, StatsError> {
    sample.without(&outliers::find_outliers_scored(sample, rule, None).set_aside)
}

/// Each level's sums on the analysis scale: units, their sum, and the sum of the squared
/// relative deviations from the level's mean.
struct Sums {
    count: Vec<f64>,
    total: Vec<f64>,
    /// Prefix sums: `prefix_count[k]` over levels `0..k`.
    prefix_count: Vec<f64>,
    prefix_total: Vec<f64>,
}

impl Sums {
    fn new(levels: &[Observations]) -> Result<(Sums, f64), SeriesError> {
        let mut count = Vec::with_capacity(levels.len());
        let mut total = Vec::with_capacity(levels.len());
        let mut relative_squares = 0.0;
        for (level, o) in levels.iter().enumerate() {
            let x = o.analysed();
            let sum: f64 = x.iter().sum();
            let mean = sum / x.len() as f64;
            if !(mean > 0.0 && mean.is_finite()) {
                return Err(SeriesError::NonPositiveMean { level, mean: o.kind().transform(mean) });
            }
            relative_squares += x.iter().map(|v| (v / mean - 1.0).powi(2)).sum::<f64>();
            count.push(x.len() as f64);
            total.push(sum);
        }
        let prefix = |v: &[f64]| {
            let mut p = Vec::with_capacity(v.len() + 1);
            p.push(0.0);
            let mut running = 0.0;
            for x in v {
                running += x;
                p.push(running);
            }
            p
        };
        let (prefix_count, prefix_total) = (prefix(&count), prefix(&total));
        Ok((Sums { count, total, prefix_count, prefix_total }, relative_squares))
    }

    /// Units and mean of levels `a..b`.
    fn span(&self, a: usize, b: usize) -> (f64, f64) {
        let n = self.prefix_count[b] - self.prefix_count[a];
        (n, (self.prefix_total[b] - self.prefix_total[a]) / n)
    }

    /// The log-ratio of the means of `k..b` over `a..k` and its standard error in units of
    /// the pooled relative sd.
    fn split(&self, a: usize, k: usize, b: usize) -> (f64, f64) {
        let (n_left, left) = self.span(a, k);
        let (n_right, right) = self.span(k, b);
        ((right / left).ln(), (1.0 / n_left + 1.0 / n_right).sqrt())
    }
}

/// The Bonferroni bound for the largest |t| over the `splits` splits of a segment:
/// Student's t quantile at 1 − α' / (2·splits), α' = [`BOUND_SHARE`] × α.
fn critical(alpha: f64, splits: usize, df: f64) -> Option<f64> {
    dist::t_quantile(1.0 - BOUND_SHARE * alpha / (2.0 * splits as f64), df)
}

/// t of a standardised log-ratio z (the log-ratio over its standard error in units of the
/// pooled sd) at the pooled sd; ±∞ or 0 where the units do not vary at all (the data pin
/// each level's mean down).
fn t_of(z: f64, sd: f64) -> f64 {
    if sd > 0.0 {
        z / sd
    } else if z == 0.0 {
        0.0
    } else {
        z.signum() * f64::INFINITY
    }
}

/// Finds the change points of a series of levels, in their order; `levels[i]` holds level
/// i's units (trials, or boots' means) on the metric's scale.
pub fn find_changes(levels: &[Observations], settings: &SeriesSettings) -> Result<Series, SeriesError> {
    settings.validate()?;
    if levels.len() < MIN_LEVELS {
        return Err(SeriesError::TooFewLevels { found: levels.len() });
    }
    let kind = levels[0].kind();
    if let Some((level, o)) = levels.iter().enumerate().find(|(_, o)| o.kind() != kind) {
        return Err(SeriesError::MixedMeanKinds { level, expected: kind, found: o.kind() });
    }
    let (sums, relative_squares) = Sums::new(levels)?;
    let units: usize = levels.iter().map(Observations::len).sum();
    let df = units - levels.len();
    let estimate = |n: f64, mean: f64, sd: Option<f64>, t: Option<f64>| -> MeanEstimate {
        match (sd, t) {
            (Some(sd), Some(t)) => {
                let h = t * sd / n.sqrt();
                let (low, high) = kind.transform_interval(mean * (-h).exp(), mean * h.exp());
                MeanEstimate { mean: kind.transform(mean), low: Some(low), high: Some(high) }
            }
            _ => MeanEstimate { mean: kind.transform(mean), low: None, high: None },
        }
    };
    let step_confidence = 1.0 - STEP_ALPHA_SHARE * (1.0 - settings.confidence);
    let sd = (df > 0).then(|| (relative_squares / df as f64).sqrt());
    let t_interval = sd.and_then(|_| dist::t_quantile(1.0 - (1.0 - settings.confidence) / 2.0, df as f64));
    let level_summaries: Vec<LevelSummary> = (0..levels.len())
        .map(|i| LevelSummary {
            units: levels[i].len(),
            estimate: estimate(sums.count[i], sums.total[i] / sums.count[i], sd, t_interval),
        })
        .collect();
    let segment = |first: usize, last: usize| {
        let (n, mean) = sums.span(first, last + 1);
        Segment { first, last, units: n as usize, estimate: estimate(n, mean, sd, t_interval) }
    };
    let (Some(sd), Some(_)) = (sd, t_interval) else {
        return Ok(Series {
            verdict: SeriesVerdict::Unreplicated,
            mean_kind: kind,
            levels: level_summaries,
            segments: vec![segment(0, levels.len() - 1)],
            change_points: Vec::new(),
            detectable: None,
            cv: None,
            df,
            alpha: settings.alpha,
            confidence: settings.confidence,
            step_confidence,
        });
    };
    let dff = df as f64;
    let t_step = dist::t_quantile(1.0 - (1.0 - step_confidence) / 2.0, dff).unwrap_or(f64::INFINITY);

    // binary segmentation, with a stack of segments [a, b) still to search
    let mut found: Vec<(usize, f64, f64, f64)> = Vec::new();
    let mut stack = vec![(0, levels.len())];
    while let Some((a, b)) = stack.pop() {
        if b - a < 2 {
            continue;
        }
        let splits = b - a - 1;
        let Some(c) = critical(settings.alpha, splits, dff) else { continue };
        // the split of the largest |log-ratio / se|: the largest |t| (sd is the series'),
        // and where the units do not vary at all (every t infinite) the clearest step
        let mut best: Option<(usize, f64)> = None;
        for k in a + 1..b {
            let (d, se) = sums.split(a, k, b);
            let z = d / se;
            if best.is_none_or(|(_, bz)| z.abs() > bz.abs()) {
                best = Some((k, z));
            }
        }
        if let Some((k, z)) = best
            && let t = t_of(z, sd)
            && t.abs() > c
        {
            let p = dist::t_two_sided_p(t, dff).map_or(0.0, |p| (p * splits as f64 / BOUND_SHARE).min(1.0));
            found.push((k, t, c, p));
            stack.push((k, b));
            stack.push((a, k));
        }
    }
    found.sort_by_key(|f| f.0);

    // the segments between the change points, and each step between two of them
    let mut starts: Vec<usize> = vec![0];
    starts.extend(found.iter().map(|f| f.0));
    starts.push(levels.len());
    let segments: Vec<Segment> = starts.windows(2).map(|w| segment(w[0], w[1] - 1)).collect();
    let change_points: Vec<ChangePoint> = found
        .iter()
        .enumerate()
        .map(|(i, &(k, t, c, p))| {
            let (d, se) = sums.split(starts[i], k, starts[i + 2]);
            let h = t_step * sd * se;
            let (low, high) = kind.transform_interval((d - h).exp(), (d + h).exp());
            ChangePoint {
                after: k - 1,
                ratio: kind.transform(d.exp()),
                low,
                high,
                t,
                critical: c,
                p_value: p,
            }
        })
        .collect();
    let detectable = change_points.is_empty().then(|| detectable(&sums, levels.len(), sd, dff, settings));
    Ok(Series {
        verdict: if change_points.is_empty() { SeriesVerdict::NoChange } else { SeriesVerdict::Changes },
        mean_kind: kind,
        levels: level_summaries,
        segments,
        change_points,
        detectable: detectable.flatten(),
        cv: Some(sd),
        df,
        alpha: settings.alpha,
        confidence: settings.confidence,
        step_confidence,
    })
}

/// (c + t_power)·sd·√(1/n_left + 1/n_right), the step that passes the bound c with the
/// settings' power (the other splits can only add to it), half-way through the units and
/// at the harder end.
fn detectable(sums: &Sums, count: usize, sd: f64, df: f64, settings: &SeriesSettings) -> Option<Detectable> {
    let factor = critical(settings.alpha, count - 1, df)? + dist::t_quantile(settings.power, df)?;
    let step = |k: usize| (factor * sd * sums.split(0, k, count).1).exp_m1();
    let half = sums.prefix_count[count] / 2.0;
    let middle = (1..count)
        .min_by(|&i, &j| (sums.prefix_count[i] - half).abs().total_cmp(&(sums.prefix_count[j] - half).abs()))
        .unwrap_or(1);
    Some(Detectable { middle: step(middle), edge: step(1).max(step(count - 1)) })
}
