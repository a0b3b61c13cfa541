//! Boots (or sessions) as the observations of a comparison between levels measured in
//! disjoint ones (docs/statistics.md, Sessions and boots): each unit's mean, when the
//! levels are not paired; each unit's log-values less their blocks' centres, when they
//! are. A unit is an index here: the caller numbers a side's units in the order it first
//! meets them, and the results keep that order.

use super::StatsError;
use super::elementary::mean;
use super::observations::Observations;
use vocab::MeanKind;

/// An unpaired side across disjoint boots: each boot's mean of its values (`groups`, on
/// the analysis scale), on the metric's scale.
pub fn unit_means(groups: &[Vec<f64>], kind: MeanKind) -> Result<Observations, StatsError> {
    let values: Vec<f64> = groups.iter().map(|v| kind.transform(mean(v))).collect();
    Observations::new(&values, kind)
}

/// One side of a paired comparison across disjoint boots: each boot's log-values (on
/// the analysis scale) less their blocks' centres, and the boot's mean of them.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitLogs {
    /// Per boot, each trial's ln(value) − its block's centre.
    pub residuals: Vec<Vec<f64>>,
    /// Per boot, the mean over its blocks of the block's mean residual: every block
    /// weighs alike, however many trials it had.
    pub means: Vec<f64>,
}

/// One side's values of one block: per unit that ran it, (the unit's number among the
/// side's units, its values on the analysis scale).
pub type Block = Vec<(usize, Vec<f64>)>;

/// Both sides' [`UnitLogs`], from each side's blocks (the same blocks, in the same order,
/// on both sides). A block's centre is the mean, over both sides' boots, of a boot's mean
/// log-value in that block, so with every block in every boot the centres cancel in the
/// difference between the sides and the boots' means carry the variation between boots.
pub fn unit_logs(sides: [&[Block]; 2]) -> [UnitLogs; 2] {
    let logs = |blocks: &[Block]| -> Vec<Vec<(usize, Vec<f64>)>> {
        blocks
            .iter()
            .map(|block| block.iter().map(|(u, v)| (*u, v.iter().map(|x| x.ln()).collect())).collect())
            .collect()
    };
    let (la, lb) = (logs(sides[0]), logs(sides[1]));
    let centres: Vec<f64> = la
        .iter()
        .zip(&lb)
        .map(|(a, b)| {
            let means: Vec<f64> = a.iter().chain(b).map(|(_, v)| mean(v)).collect();
            mean(&means)
        })
        .collect();
    let side = |blocks: &[Vec<(usize, Vec<f64>)>]| -> UnitLogs {
        let count = blocks.iter().flatten().map(|(u, _)| u + 1).max().unwrap_or(0);
        let mut by_unit: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); count];
        for (block, centre) in blocks.iter().zip(&centres) {
            for (unit, v) in block {
                let entry = &mut by_unit[*unit];
                entry.0.extend(v.iter().map(|x| x - centre));
                entry.1.push(mean(v) - centre);
            }
        }
        UnitLogs {
            means: by_unit.iter().map(|(_, m)| mean(m)).collect(),
            residuals: by_unit.into_iter().map(|(r, _)| r).collect(),
        }
    };
    [side(&la), side(&lb)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_means_are_each_units_mean_on_the_metrics_scale() {
        let o = unit_means(&[vec![1.0, 3.0], vec![4.0]], MeanKind::Arithmetic).unwrap();
        assert_eq!(o.values(), &[2.0, 4.0]);
        // harmonic: the groups hold reciprocals; their mean, carried back
        let o = unit_means(&[vec![0.5, 0.25]], MeanKind::Harmonic).unwrap();
        assert!((o.values()[0] - 1.0 / 0.375).abs() < 1e-12, "{:?}", o.values());
        assert_eq!(unit_means(&[], MeanKind::Arithmetic), Err(StatsError::Empty));
    }

    /// Two blocks whose levels differ by a factor of 10, each boot 2× the one before on
    /// both sides: the centres cancel, and each boot's mean is its own log-offset.
    #[test]
    fn unit_logs_take_out_the_blocks_centres() {
        let e = std::f64::consts::E;
        // side A: boots 0 and 1 (values e^0, e^1 in block 0; 10·e^0, 10·e^1 in block 1)
        let a: Vec<Block> =
            vec![vec![(0, vec![1.0]), (1, vec![e])], vec![(0, vec![10.0]), (1, vec![10.0 * e])]];
        // side B: boots 0 and 1, e² and e³ times A's first boot
        let e2 = e * e;
        let b: Vec<Block> = vec![
            vec![(0, vec![e2]), (1, vec![e2 * e])],
            vec![(0, vec![10.0 * e2]), (1, vec![10.0 * e2 * e])],
        ];
        let [la, lb] = unit_logs([&a, &b]);
        // every block's centre is the mean of 0, 1, 2, 3 (+ ln 10) = 1.5 (+ ln 10)
        let close = |got: &[f64], want: &[f64]| {
            assert_eq!(got.len(), want.len(), "{got:?}");
            assert!(got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12), "{got:?} vs {want:?}");
        };
        close(&la.means, &[-1.5, -0.5]);
        close(&lb.means, &[0.5, 1.5]);
        close(&la.residuals[0], &[-1.5, -1.5]);
        close(&lb.residuals[1], &[1.5, 1.5]);
        // a unit first met in the second block keeps its number's place
        let one: Vec<Block> = vec![vec![(1, vec![1.0])], vec![(0, vec![1.0])]];
        let [lo, _] = unit_logs([&one, &one]);
        assert_eq!(lo.means.len(), 2);
    }
}
