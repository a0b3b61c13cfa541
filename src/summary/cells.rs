//! One cell × metric of summary.json (`cells`): its statistics, its values, and its two
//! regimes when it has them.

use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use stats::components::{Components, UnitsNeeded};
use stats::stability::StabilityFlag;
use vocab::MeanKind;

/// One cell × metric: its field names are a contract with scripts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CellStat {
    /// The cell id.
    pub cell: String,
    pub label: String,
    pub levels: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub mean_kind: MeanKind,
    /// Trials kept (outliers set aside are not counted).
    pub n: usize,
    pub mean: f64,
    pub sd: Option<f64>,
    /// sd / mean, a fraction.
    pub cv: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub mad: f64,
    pub ci_low: Option<f64>,
    /// `None` also when a harmonic mean's interval has no finite upper end.
    pub ci_high: Option<f64>,
    /// Margin of error ± in the metric's unit.
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    /// n = 2: the t quantile is 12.7 and the interval very wide.
    pub very_wide: bool,
    pub median_ci_low: Option<f64>,
    pub median_ci_high: Option<f64>,
    /// Values left out of the statistics by the outlier rule, in trial order.
    pub set_aside: Vec<f64>,
    /// Values the rule flags but keeps (the cell is too small to set them aside).
    pub flagged: Vec<f64>,
    pub runs_needed: Option<usize>,
    /// Set when reaching the target would take more than this many runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs_needed_exceeds: Option<usize>,
    pub flags: Vec<StabilityFlag>,
    /// Every analysed value, in the order the trials started.
    // The analysis' own list, shared: a report on 10⁶ trials held a second copy here.
    #[serde(serialize_with = "shared_values")]
    pub values: Arc<[f64]>,
    pub sessions: usize,
    /// The cell's trials are two regimes (docs/statistics.md, Two regimes in a cell): its
    /// mean mixes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    // boxed: most cells have none
    pub regimes: Option<Box<RegimesStat>>,
    /// The cell is compared across boots (or sessions: docs/statistics.md, Sessions and
    /// boots): its mean in each of them, and the boots its own mean would need.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<Box<CellUnits>>,
}

/// A cell's trials boot by boot, where its comparisons count boots rather than trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CellUnits {
    /// `boot`, or `session` where a session named no boot.
    pub unit: &'static str,
    /// Each boot's trials kept, in the order the boots ran.
    pub per_unit: Vec<UnitMean>,
    /// The spread of the trials within a boot and of the boots' centres, relative to the
    /// mean, with 2 boots or more and one of 2 trials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
    /// The boots, and trials in each, that would bring the interval of the cell's mean
    /// (of its boots' means) to the target margin; absent beyond 100 boots, or without
    /// components.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed: Option<UnitsNeeded>,
}

/// One boot's (or session's) trials of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct UnitMean {
    /// The boot's `boot_id` (or the session's id).
    pub id: String,
    pub n: usize,
    pub mean: f64,
    /// The interval of the mean of its trials, as the cell's own is made.
    pub moe: Option<f64>,
    pub moe_pct: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

impl CellStat {
    /// The flagged values the report shows as outliers (its table, crossed in the plot):
    /// none in a cell of two regimes, where the values far from the mean are the other
    /// regime's (the cell's regimes give them), not outliers to look at one by one.
    pub fn flagged_outliers(&self) -> &[f64] {
        if self.regimes.is_none() { &self.flagged } else { &[] }
    }

    /// Whether the cell is two regimes that the trial before on its host decides
    /// (its `regimes.before`).
    pub fn decided_by_trial_before(&self) -> bool {
        self.regimes.as_ref().and_then(|r| r.before.as_ref()).is_some_and(|b| b.decides)
    }
}

/// A cell whose trials fall into two regimes, as the test of docs/statistics.md (Two
/// regimes in a cell) found them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimesStat {
    /// The split ratio W (the share of the spread left within the two groups) and the
    /// critical value for this n it fell below.
    pub split_ratio: f64,
    pub critical: f64,
    /// The lower regime, then the upper, on the metric's scale.
    pub regimes: Vec<RegimeStat>,
    /// Between the two regimes (the geometric mean of the lower's largest value and the
    /// upper's smallest): where a comparison divides the trials of its sides.
    pub boundary: f64,
    /// The regimes are the cell's sessions (boots): two or more, each of whose trials
    /// all lie in one regime.
    pub by_session: bool,
    /// The cell's other metrics (telemetry included) whose regimes differ: what may
    /// decide the regime.
    pub beside: Vec<RegimeBeside>,
    /// What ran just before each trial on its host, against the regimes (docs/statistics.md,
    /// What decides a regime); absent when the trials had fewer than two kinds of trial
    /// before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<RegimeBefore>,
}

/// The trial before each of a regime cell's trials, against its regime: whether what ran
/// just before on the host decides the regime.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeBefore {
    /// The permutation test's p-value (the G-test's beyond 2000 trials) of "the regime
    /// does not depend on the trial before".
    pub p_value: f64,
    /// p ≤ 0.01: the trial before decides the regime, as far as the test can tell.
    pub decides: bool,
    /// The share of trials in the regime most common after their kind of trial before.
    pub predicted: f64,
    /// Each kind of trial before (`this cell`, another cell's label, or nothing), the most
    /// trials first, with its trials in the lower regime and in the upper.
    pub after: Vec<RegimeAfter>,
}

/// One kind of trial before and the regimes of the trials after it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeAfter {
    pub after: String,
    pub lower: usize,
    pub upper: usize,
}

/// One regime of a cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeStat {
    /// Positions of its trials among the cell's values (0 is the first), in trial order.
    pub trials: Vec<usize>,
    pub n: usize,
    /// n / the cell's trials, a fraction.
    pub share: f64,
    /// Its mean (of the metric's kind) and interval, and its extremes.
    pub mean: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub min: f64,
    pub max: f64,
}

/// Another metric of the same trials, by regime: its mean in the lower regime's trials
/// and in the upper's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RegimeBeside {
    pub metric: String,
    pub unit: String,
    pub means: Vec<f64>,
}

/// A shared list of values written as the list it is (serde writes an `Arc` only with its
/// `rc` feature, which would rebuild every crate that uses serde).
fn shared_values<S: serde::Serializer>(values: &Arc<[f64]>, s: S) -> Result<S::Ok, S::Error> {
    values[..].serialize(s)
}
