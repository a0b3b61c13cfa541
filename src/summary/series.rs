//! A series (`series`): one metric along the levels of an ordered factor in one context,
//! the change points found with their steps, the segments between them, or how large a
//! step would have been found (docs/statistics.md, Change points in a series).

use indexmap::IndexMap;
use serde::Serialize;

use stats::series::Series;

/// One metric along one series factor, in one combination of the other factors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct SeriesStat {
    pub factor: String,
    pub metric: String,
    pub unit: String,
    /// The levels of the other factors.
    pub context: IndexMap<String, String>,
    /// What one observation of a level is: `trial` (the levels shared their sessions),
    /// `boot` or `session` (each level ran in boots or sessions of its own: each one's
    /// mean is an observation).
    pub observation: &'static str,
    /// The levels analysed, in the series' order; `levels[i]` of [`Series::levels`] is
    /// this list's `i`-th.
    pub level_names: Vec<String>,
    /// Levels of the factor with no analysed trials in this context (left out, the series
    /// goes on without them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    #[serde(flatten)]
    pub series: Series,
}
