//! Holm's step-down adjustment of the report's p-values for multiplicity.

use crate::StatsError;

/// Holm's step-down adjustment of a family of p-values, in their original order:
/// the i-th smallest is multiplied by (m − i + 1), then a running maximum keeps the
/// adjusted values in the order of the raw ones, capped at 1.
pub fn holm(p_values: &[f64]) -> Result<Vec<f64>, StatsError> {
    if let Some((index, &value)) = p_values.iter().enumerate().find(|(_, p)| !(0.0..=1.0).contains(*p)) {
        return Err(StatsError::InvalidPValue { index, value });
    }
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0_f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    Ok(adjusted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{assert_close, entries, number};

    #[test]
    fn holm_matches_the_reference() {
        for case in entries("holm") {
            let p: Vec<f64> = case["p"].as_array().unwrap().iter().map(number).collect();
            let expected = case["adjusted"].as_array().unwrap();
            for (got, want) in holm(&p).unwrap().iter().zip(expected) {
                assert_close(*got, number(want), &format!("holm({p:?})"));
            }
        }
        assert_eq!(holm(&[]).unwrap(), Vec::<f64>::new());
        assert!(matches!(holm(&[0.1, f64::NAN]), Err(StatsError::InvalidPValue { index: 1, .. })));
        assert!(matches!(holm(&[1.5]), Err(StatsError::InvalidPValue { index: 0, .. })));
    }
}
