//! One cell's values for one metric, validated, with the scale its statistics work on.

use super::StatsError;
use crate::vocab::MeanKind;

impl MeanKind {
    /// Maps a value between the metric's scale and the analysis scale. The map is its
    /// own inverse (1/x for a harmonic mean), so it serves both directions.
    pub fn transform(self, x: f64) -> f64 {
        match self {
            MeanKind::Arithmetic => x,
            MeanKind::Harmonic => x.recip(),
        }
    }

    /// Maps an interval on the analysis scale to the metric's scale. 1/x reverses order,
    /// so the bounds swap; a lower bound at or below zero has no reciprocal and the upper
    /// end becomes unbounded (+∞).
    pub fn transform_interval(self, low: f64, high: f64) -> (f64, f64) {
        match self {
            MeanKind::Arithmetic => (low, high),
            MeanKind::Harmonic if low > 0.0 => (high.recip(), low.recip()),
            MeanKind::Harmonic => (high.recip(), f64::INFINITY),
        }
    }
}

/// A cell's trial values in trial order, all finite, with the mean kind fixed once.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Observations {
    kind: MeanKind,
    values: Vec<f64>,
    analysed: Vec<f64>,
}

impl Observations {
    /// Validates the values: at least one, all finite, all positive for a harmonic mean.
    pub(crate) fn new(values: &[f64], kind: MeanKind) -> Result<Observations, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        for (index, &value) in values.iter().enumerate() {
            if !value.is_finite() {
                return Err(StatsError::NotFinite { index, value });
            }
            if kind == MeanKind::Harmonic && value <= 0.0 {
                return Err(StatsError::NotPositive { index, value });
            }
        }
        Ok(Observations {
            kind,
            values: values.to_vec(),
            analysed: values.iter().map(|&x| kind.transform(x)).collect(),
        })
    }

    /// The same trials minus those at `indices` (e.g. the outliers set aside).
    pub(crate) fn without(&self, indices: &[usize]) -> Result<Observations, StatsError> {
        let len = self.values.len();
        if let Some(&index) = indices.iter().find(|&&i| i >= len) {
            return Err(StatsError::IndexOutOfRange { index, len });
        }
        let kept: Vec<f64> = (0..len).filter(|i| !indices.contains(i)).map(|i| self.values[i]).collect();
        Observations::new(&kept, self.kind)
    }

    pub(crate) fn kind(&self) -> MeanKind {
        self.kind
    }

    /// Number of trials (never zero).
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The values as measured, in trial order.
    pub(crate) fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values on the scale the statistics work on: the values themselves for an
    /// arithmetic mean, their reciprocals for a harmonic one.
    pub(crate) fn analysed(&self) -> &[f64] {
        &self.analysed
    }
}
