//! One cell's values for one metric, validated, with the scale its statistics work on.

use std::sync::Arc;

use super::StatsError;
use vocab::MeanKind;

/// A cell's trial values in trial order, all finite, with the mean kind fixed once.
///
/// The values are shared, not copied, by a clone and by [`Observations::without`] nothing:
/// a report holds every cell's values, all and kept, and most cells set nothing aside.
/// The analysis scale is kept apart only where it differs (a harmonic mean's reciprocals).
#[derive(Debug, Clone, PartialEq)]
pub struct Observations {
    kind: MeanKind,
    values: Arc<[f64]>,
    /// The reciprocals, for a harmonic mean; `None` for an arithmetic one, whose
    /// analysis scale is the values themselves.
    reciprocals: Option<Arc<[f64]>>,
}

impl Observations {
    /// Validates the values: at least one, all finite, all positive for a harmonic mean.
    pub fn new(values: &[f64], kind: MeanKind) -> Result<Observations, StatsError> {
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
        let reciprocals = match kind {
            MeanKind::Arithmetic => None,
            MeanKind::Harmonic => Some(values.iter().map(|&x| kind.transform(x)).collect()),
        };
        Ok(Observations { kind, values: values.into(), reciprocals })
    }

    /// The same trials minus those at `indices` (e.g. the outliers set aside).
    pub fn without(&self, indices: &[usize]) -> Result<Observations, StatsError> {
        let len = self.values.len();
        if let Some(&index) = indices.iter().find(|&&i| i >= len) {
            return Err(StatsError::IndexOutOfRange { index, len });
        }
        if indices.is_empty() {
            return Ok(self.clone());
        }
        let kept: Vec<f64> = (0..len).filter(|i| !indices.contains(i)).map(|i| self.values[i]).collect();
        Observations::new(&kept, self.kind)
    }

    pub fn kind(&self) -> MeanKind {
        self.kind
    }

    /// Number of trials (never zero).
    #[expect(clippy::len_without_is_empty, reason = "never empty: `new` refuses no values")]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// The values as measured, in trial order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values as measured, shared rather than copied: what summary.json's cell
    /// holds, the same allocation as the analysis' (a report holds every value once).
    pub fn shared_values(&self) -> Arc<[f64]> {
        Arc::clone(&self.values)
    }

    /// The values on the scale the statistics work on: the values themselves for an
    /// arithmetic mean, their reciprocals for a harmonic one.
    pub fn analysed(&self) -> &[f64] {
        self.reciprocals.as_deref().unwrap_or(&self.values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_analysis_scale_is_the_values_or_their_reciprocals() {
        let a = Observations::new(&[2.0, 4.0], MeanKind::Arithmetic).unwrap();
        assert_eq!(a.analysed(), &[2.0, 4.0]);
        let h = Observations::new(&[2.0, 4.0], MeanKind::Harmonic).unwrap();
        assert_eq!((h.values(), h.analysed()), (&[2.0, 4.0][..], &[0.5, 0.25][..]));
        assert_eq!(h.without(&[0]).unwrap().analysed(), &[0.25]);
    }

    #[test]
    fn setting_nothing_aside_shares_the_values() {
        let all = Observations::new(&[1.0, 2.0, 3.0], MeanKind::Harmonic).unwrap();
        let kept = all.without(&[]).unwrap();
        assert_eq!(kept, all);
        assert!(Arc::ptr_eq(&kept.values, &all.values));
        let fewer = all.without(&[1]).unwrap();
        assert_eq!((fewer.values(), fewer.len()), (&[1.0, 3.0][..], 2));
        assert!(all.without(&[3]).is_err());
    }
}
