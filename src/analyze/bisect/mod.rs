//! `margin bisect`'s analysis: the bisection ([`stats::bisect::Bisection`]) as a pure
//! function of the trials the store holds. The command runs one trial at a time of the
//! level the bisection asks for, in sessions labelled [`Target::label`]; the state is
//! never stored, it is replayed: the labelled measurements of the bisected cells, in the
//! order of the trial log, each recorded for its level when that is the level the
//! bisection asks for next, and set aside (counted in `unused_trials`, left in the store)
//! when it is not. A run killed at any moment thus resumes where it was: the trial under
//! way either has its record, and is replayed, or has none, and is run again.
//!
//! Values go to [`Bisection::record`] on the metric's own scale, as stored: the
//! bisection's comparisons take the metric's mean kind and work on the analysis scale
//! themselves (the reciprocals of a harmonic metric's rates), as a report's do.

mod boots;
mod stored;
pub(crate) mod target;

use std::collections::{HashMap, HashSet};

use crate::plan::Plan;
use crate::store::{MetricInfo, TrialRecord};
use crate::summary::bisect::{BisectOutput, BisectStep, BisectUnderWay, Verdict};
use stats::bisect::{BisectSettings, Bisection, Next, Outcome, Unit};
use stats::compare::Comparison;
use vocab::Better;

pub(crate) use boots::OpenBoot;
pub(crate) use stored::{ReplayError, replayed, start, stored};
pub(crate) use target::{Ask, Booted, Target, target};

/// The bisection replayed so far.
#[derive(Clone)]
pub(crate) struct Replay {
    target: Target,
    /// A bisected cell's id → its level.
    by_cell: HashMap<String, usize>,
    /// The settings but the metric's direction and mean kind, which its first value
    /// brings (as every record of it carries them).
    base: BisectSettings,
    bisection: Option<Bisection>,
    unit: String,
    /// Labelled measurements of each level's cell, whatever metrics they hold: what the
    /// run's progress counts for the cell.
    measured: HashMap<usize, u32>,
    unused: usize,
    /// Across boots: the trials of a boot whose mean is one unit; `None` within a session.
    per_boot: Option<u32>,
    /// Across boots: the trials the units used, and the last boot when it has fewer
    /// than `per_boot` trials (a bisection stopped in it).
    boot_trials: u64,
    open: Option<OpenBoot>,
    /// The seconds its sessions and boots took ([`BisectOutput::seconds`]).
    seconds: f64,
}

impl Replay {
    /// A bisection of `target` at the experiment's confidence and δ, nothing replayed;
    /// refuses settings the bisection cannot take before any trial runs.
    pub(crate) fn new(
        target: Target,
        plan: &Plan,
        confidence: f64,
        threshold: f64,
    ) -> Result<Replay, String> {
        let base = BisectSettings { confidence, threshold, unit: Unit::Trial, ..BisectSettings::default() };
        Bisection::new(target.good, target.bad, base.clone())
            .map_err(|e| format!("{}: {e}", target.experiment))?;
        let by_cell = target
            .cells
            .iter()
            .enumerate()
            .filter_map(|(level, cell)| cell.map(|c| (plan.cells[c].id.to_string(), level)))
            .collect();
        Ok(Replay {
            target,
            by_cell,
            base,
            bisection: None,
            unit: String::new(),
            measured: HashMap::new(),
            unused: 0,
            per_boot: None,
            boot_trials: 0,
            open: None,
            seconds: 0.0,
        })
    }

    /// The same bisection across boots: each unit the mean of a boot's `per_boot` trials.
    pub(crate) fn across_boots(self, per_boot: u32) -> Replay {
        let base = BisectSettings { unit: Unit::Boot, ..self.base.clone() };
        Replay { base, per_boot: Some(per_boot.max(1)), ..self }
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// Replays `records` (the next ones of the trial log, in its order); `sessions`: the
    /// ids of the sessions labelled with the bisection's label.
    pub(crate) fn feed(&mut self, records: &[TrialRecord], sessions: &HashSet<String>) -> Result<(), String> {
        for r in records {
            if !(r.status.is_measurement() && !r.warmup && sessions.contains(&r.session)) {
                continue;
            }
            let Some(&level) = self.by_cell.get(&r.cell) else { continue };
            *self.measured.entry(level).or_default() += 1;
            let Some(&value) = r.metrics.get(&self.target.metric) else { continue };
            let info = r.metric_info.get(&self.target.metric);
            if !self.take(level, value, info, &format!("trial #{}", r.repetition))? {
                self.unused += 1;
            }
        }
        Ok(())
    }

    /// Skips the level asked for next, as long as it is one of `failed` (cells whose
    /// `setup`, the level's build, failed in a labelled session: `git bisect skip`); the
    /// command calls it before each record it replays and after the last. An end cannot
    /// be skipped: the bisection needs both.
    pub(crate) fn skip_failed(&mut self, failed: &HashSet<String>) -> Result<(), String> {
        loop {
            let Next::Measure(level) = self.next() else { return Ok(()) };
            let Some(cell) = self.by_cell.iter().find(|(_, l)| **l == level).map(|(c, _)| c) else {
                return Ok(());
            };
            if !failed.contains(cell) {
                return Ok(());
            }
            let t = &self.target;
            let name = format!("{}={}", t.factor, t.levels[level]);
            match &mut self.bisection {
                Some(b) if level != t.good && level != t.bad => {
                    b.skip(level).map_err(|e| format!("{name}: {e}"))?
                }
                _ => {
                    return Err(format!(
                        "{name}: its `setup` (the build) failed, and it is an end of the bisection, which \
                         cannot be skipped; its output is in the store's raw/ folder; fix the build, or bisect \
                         from another level (`--good`, `--bad`)"
                    ));
                }
            }
        }
    }

    /// Records one unit of `level` (`what`: which, for an error) when it is the level the
    /// bisection asks for next; `false` when it is not (set aside).
    fn take(
        &mut self,
        level: usize,
        value: f64,
        info: Option<&MetricInfo>,
        what: &str,
    ) -> Result<bool, String> {
        if self.next() != Next::Measure(level) {
            return Ok(false);
        }
        let bisection = match &mut self.bisection {
            Some(b) => b,
            None => {
                let settings = BisectSettings {
                    better: info.map_or(Better::Lower, |i| i.better),
                    mean: info.map(|i| i.mean).unwrap_or_default(),
                    ..self.base.clone()
                };
                self.unit = info.map(|i| i.unit.clone()).unwrap_or_default();
                let b =
                    Bisection::new(self.target.good, self.target.bad, settings).map_err(|e| e.to_string())?;
                self.bisection.insert(b)
            }
        };
        bisection.record(level, value).map_err(|e| {
            format!(
                "{}={} {what}: {} = {value}: {e}; the bisection cannot go on with this value",
                self.target.factor, self.target.levels[level], self.target.metric
            )
        })?;
        Ok(true)
    }

    /// What to measure next (the good end before any value), or the answer.
    pub(crate) fn next(&self) -> Next {
        match &self.bisection {
            Some(b) => b.next(),
            None => Next::Measure(self.target.good),
        }
    }

    /// Values recorded so far, over every level.
    pub(crate) fn units(&self) -> u64 {
        self.bisection.as_ref().map_or(0, Bisection::units)
    }

    /// Where the bisection stands while it has not answered (`None` once it has);
    /// `command`: the one that goes on with it.
    pub(crate) fn under_way(&self, command: String) -> Option<BisectUnderWay> {
        let Next::Measure(level) = self.next() else { return None };
        let t = &self.target;
        let units = self.units();
        Some(BisectUnderWay {
            factor: t.factor.clone(),
            good: t.levels[t.good].clone(),
            bad: t.levels[t.bad].clone(),
            label: t.label.clone(),
            decided: self.bisection.as_ref().map_or(0, |b| b.steps().len()),
            trials: if self.per_boot.is_some() { self.boot_trials } else { units },
            boots: self.per_boot.map(|_| units),
            next: t.levels[level].clone(),
            seconds: self.seconds,
            command,
        })
    }

    /// The labelled measurements of `level`'s cell so far.
    pub(crate) fn measured(&self, level: usize) -> u32 {
        self.measured.get(&level).copied().unwrap_or(0)
    }

    /// The answer, once the bisection is over.
    pub(crate) fn answer(&self) -> Option<BisectOutput> {
        let b = self.bisection.as_ref()?;
        let Next::Done(answer) = b.next() else { return None };
        let t = &self.target;
        let name = |level: usize| t.levels[level].clone();
        let verdict = match answer.outcome {
            Outcome::Found => Verdict::Found,
            Outcome::Narrowed => Verdict::Narrowed,
            Outcome::NoRegression => Verdict::NoRegression,
            Outcome::Improvement => Verdict::Improvement,
            Outcome::Inconclusive => Verdict::Inconclusive,
        };
        let confidence = b.settings().confidence;
        let located = b.step_found().unwrap_or_else(|| b.compare(t.good, t.bad, confidence)).ok();
        let (ratio, bounds) = ratio_and_bounds(located.as_ref());
        let per_boot = self.per_boot;
        let steps = b
            .steps()
            .iter()
            .map(|s| BisectStep {
                trials: s.units * per_boot.unwrap_or(1),
                boots: per_boot.map(|_| s.units),
                level: s.level.map(name),
                good: name(s.good),
                bad: name(s.bad),
                decision: s.decision,
                units: s.units,
                looks: s.looks,
                confidence: s.confidence,
                against_good: s.against_good,
                against_bad: s.against_bad,
            })
            .collect();
        Some(BisectOutput {
            experiment: t.experiment.clone(),
            factor: t.factor.clone(),
            metric: t.metric.clone(),
            unit: self.unit.clone(),
            better: b.settings().better,
            fixed: t.fixed.clone(),
            label: t.label.clone(),
            verdict,
            good: name(t.good),
            bad: name(t.bad),
            last_good: answer.last_good.map(name),
            first_bad: answer.first_bad.map(name),
            ratio,
            ci_low: bounds.map(|(low, _)| low),
            ci_high: bounds.map(|(_, high)| high),
            confidence,
            threshold_pct: b.settings().threshold * 100.0,
            steps,
            trials: if per_boot.is_some() { self.boot_trials } else { b.units() },
            boots: per_boot.map(|_| b.units()),
            trials_per_boot: per_boot,
            levels_measured: b.levels_measured(),
            levels: t.bad - t.good + 1,
            seconds: self.seconds,
            unused_trials: self.unused,
        })
    }
}

/// A comparison's ratio and its bounded interval, as ratios.
fn ratio_and_bounds(c: Option<&Comparison>) -> (Option<f64>, Option<(f64, f64)>) {
    let Some(c) = c else { return (None, None) };
    let bounds = c.interval.effect().map(|(low, high)| (low + 1.0, high + 1.0));
    (Some(c.ratio).filter(|r| r.is_finite()), bounds)
}

#[cfg(test)]
mod tests;
