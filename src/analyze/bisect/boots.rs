//! The bisection replayed across boots: a unit is the mean of one boot's trials of the
//! level's cell (docs/statistics.md, Sessions and boots: the boot is the unit). The
//! labelled trials are grouped by the boot they ran in (their session's `boot_id`), the
//! groups in the order of the trial log; a boot with its `per_boot` trials is one unit,
//! fed as a trial is within a session (to the level asked for next, else set aside). The
//! last boot may have fewer — the bisection was stopped in it: it is left open, for the
//! command to go on in it while the host is still in that boot, or to boot anew.

use std::collections::HashMap;

use super::Replay;
use crate::store::{MetricInfo, TrialRecord};

/// The last boot of the bisection, short of its trials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenBoot {
    pub boot_id: String,
    pub level: usize,
    /// Its measured trials so far (with a value or not: what the run counts).
    pub trials: u32,
}

/// One boot's labelled trials of one level.
struct Group {
    boot_id: String,
    level: usize,
    trials: u32,
    values: Vec<f64>,
    info: Option<MetricInfo>,
}

impl Replay {
    /// Replays `records` across boots; `sessions`: each labelled session's `boot_id`.
    pub(crate) fn feed_boots(
        &mut self,
        records: &[TrialRecord],
        sessions: &HashMap<String, String>,
    ) -> Result<(), String> {
        let per_boot = self.per_boot.unwrap_or(1);
        let mut groups: Vec<Group> = Vec::new();
        for r in records {
            if !r.status.is_measurement() || r.warmup {
                continue;
            }
            let (Some(boot_id), Some(&level)) = (sessions.get(&r.session), self.by_cell.get(&r.cell)) else {
                continue;
            };
            *self.measured.entry(level).or_default() += 1;
            let at = match groups.iter().position(|g| g.boot_id == *boot_id && g.level == level) {
                Some(at) => at,
                None => {
                    groups.push(Group {
                        boot_id: boot_id.clone(),
                        level,
                        trials: 0,
                        values: Vec::new(),
                        info: None,
                    });
                    groups.len() - 1
                }
            };
            let g = &mut groups[at];
            g.trials += 1;
            if let Some(&value) = r.metrics.get(&self.target.metric) {
                g.values.push(value);
                g.info = g.info.take().or_else(|| r.metric_info.get(&self.target.metric).cloned());
            }
        }
        let last = groups.len().saturating_sub(1);
        for (i, g) in groups.into_iter().enumerate() {
            if g.values.len() < per_boot as usize {
                if i == last && g.trials < per_boot {
                    self.open = Some(OpenBoot { boot_id: g.boot_id, level: g.level, trials: g.trials });
                } else {
                    self.unused += g.values.len();
                }
                continue;
            }
            let used = &g.values[..per_boot as usize];
            let mean = boot_mean(used, g.info.as_ref());
            let what = format!("boot `{}`", &g.boot_id[..g.boot_id.len().min(8)]);
            if self.take(g.level, mean, g.info.as_ref(), &what)? {
                self.boot_trials += u64::from(per_boot);
                self.unused += g.values.len() - used.len();
            } else {
                self.unused += g.values.len();
            }
        }
        Ok(())
    }

    /// Across boots: the last boot when the bisection was stopped in it.
    pub(crate) fn open_boot(&self) -> Option<&OpenBoot> {
        self.open.as_ref()
    }

    /// Across boots: a boot's trials (`None` within a session).
    pub(crate) fn per_boot(&self) -> Option<u32> {
        self.per_boot
    }
}

/// A boot's mean on the metric's own scale: the mean of its trials on the analysis scale
/// (the reciprocals of a harmonic metric's rates), mapped back.
fn boot_mean(values: &[f64], info: Option<&MetricInfo>) -> f64 {
    let kind = info.map(|i| i.mean).unwrap_or_default();
    let sum: f64 = values.iter().map(|&v| kind.transform(v)).sum();
    kind.transform(sum / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use vocab::{Better, MeanKind};

    use super::*;

    #[test]
    fn a_boot_mean_is_taken_on_the_analysis_scale() {
        let info = |mean| MetricInfo { unit: "s".into(), better: Better::Lower, mean };
        assert!((boot_mean(&[1.0, 2.0, 3.0], Some(&info(MeanKind::Arithmetic))) - 2.0).abs() < 1e-12);
        // the harmonic mean of 1 and 3: 2 / (1 + 1/3) = 1.5
        assert!((boot_mean(&[1.0, 3.0], Some(&info(MeanKind::Harmonic))) - 1.5).abs() < 1e-12);
    }
}
