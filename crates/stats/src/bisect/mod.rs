//! Bisection (docs/statistics.md, Bisection): which level of an ordered series made a
//! metric worse, found step by step with a stated error rate. A state machine a command
//! drives: [`Bisection::next`] says which level to measure next (one unit: a trial, or a
//! boot's mean when the version is booted), [`Bisection::record`] takes the value, and
//! every decision is taken at a look fixed in advance, so the state (serde) can be logged
//! and a resumed bisection asks for exactly what the interrupted one would have.
//!
//! First the two ends are measured in alternation until their comparison is settled as
//! `until: verdict` settles one (wholly beyond ±δ or wholly within it); only a
//! regression goes on. Then each step measures the midpoint of the current good and bad
//! ends, interleaved with them, and compares it with each end as the report compares two
//! cells (Fieller's interval of the ratio): it is like good once its interval against
//! the bad end excludes no change on the better side while the one against the good end
//! does not, like bad the other way round, and unknown when it differs from both or its
//! budget is spent (the next step then tries the untested level nearest the middle, a
//! neighbour; the range may end narrowed rather than guessed). The error is spent in
//! advance (docs/statistics.md, Bisection): a false regression needs one of the ends'
//! looks to miss on one side, a wrong level one of the steps' looks, each at a
//! Bonferroni share of α over the looks, and of the steps over at most ⌈log₂ gaps⌉ +
//! `extra_steps` of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::compare::{Comparison, compare_independent};
use super::observations::Observations;
use super::verdict::{VerdictKind, classify};
use super::{StatsError, StatsSettings};
use vocab::{Better, MeanKind};

/// What one observation of a level is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// One trial; the levels share a session.
    Trial,
    /// The mean of one boot's trials; each level is booted anew (docs/statistics.md,
    /// Sessions and boots: the boot is the unit).
    Boot,
}

/// A test's budget: looked at after `min` rounds, then each time the rounds have grown
/// by ×1.5 (rounded up), and at `max` (the schedule of `until: verdict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    pub min: u32,
    pub max: u32,
}

impl Budget {
    /// The rounds looked at, ascending.
    pub fn looks(&self) -> Vec<u32> {
        let mut looks = vec![self.min];
        let mut n = self.min;
        while n < self.max {
            n = ((f64::from(n) * 1.5).ceil() as u32).max(n + 1).min(self.max);
            looks.push(n);
        }
        looks
    }
}

/// The knobs of a bisection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BisectSettings {
    /// α = 1 − confidence: a regression claimed where there is none at most α, a wrong
    /// level named (or a range narrowed to that misses it) at most α/2.
    pub confidence: f64,
    /// δ: the ends differing by less do not make a regression.
    pub threshold: f64,
    pub better: Better,
    pub mean: MeanKind,
    pub unit: Unit,
    /// Rounds of the ends' comparison; a round is one unit of each end.
    pub ends: Budget,
    /// Rounds of a step; a round is the good end, `per_round` units of the midpoint
    /// split around the bad end.
    pub step: Budget,
    pub per_round: u32,
    /// Steps allowed beyond ⌈log₂(bad − good)⌉, for the neighbours of unknown ones.
    pub extra_steps: u32,
}

impl Default for BisectSettings {
    fn default() -> Self {
        BisectSettings {
            confidence: 0.95,
            threshold: 0.05,
            better: Better::Lower,
            mean: MeanKind::Arithmetic,
            unit: Unit::Trial,
            ends: Budget { min: 5, max: 40 },
            step: Budget { min: 2, max: 8 },
            per_round: 6,
            extra_steps: 1,
        }
    }
}

impl BisectSettings {
    fn validate(&self) -> Result<(), BisectError> {
        let bad = |name, value: f64, expected| {
            Err(BisectError::Stats(StatsError::InvalidSetting { name, value, expected }))
        };
        // above ½, so that the ends' looks at 1 − 2α/K stay above 0
        if !(self.confidence > 0.5 && self.confidence < 1.0) {
            return bad("confidence", self.confidence, "a level strictly between 0.5 and 1");
        }
        if !(self.threshold >= 0.0 && self.threshold.is_finite()) {
            return bad("threshold", self.threshold, "a non-negative fraction");
        }
        // a look needs a spread on each side
        if self.ends.min < 2 || self.ends.max < self.ends.min {
            return bad("ends", f64::from(self.ends.min), "min ≥ 2 rounds and max ≥ min");
        }
        if self.step.min < 1 || self.step.max < self.step.min {
            return bad("step", f64::from(self.step.min), "min ≥ 1 round and max ≥ min");
        }
        if self.per_round < 1 || self.per_round * self.step.min < 2 {
            return bad(
                "per_round",
                f64::from(self.per_round),
                "≥ 1, and ≥ 2 midpoint units at the first look",
            );
        }
        Ok(())
    }
}

/// Why a bisection refused a request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BisectError {
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error("a bisection needs the bad level after the good one, found good {good} and bad {bad}")]
    Range { good: usize, bad: usize },
    #[error("the bisection asked for level {expected}, got a value of level {got}")]
    NotAsked { expected: usize, got: usize },
    #[error("the bisection is over: nothing more is measured")]
    Over,
    #[error("level {level} is not the midpoint being measured: only it can be skipped")]
    NotSkippable { level: usize },
}

/// What became of a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The ends' comparison: the bad end is worse beyond ±δ.
    Regression,
    /// The ends' comparison: within ±δ.
    NoRegression,
    /// The ends' comparison: the "bad" end is better beyond ±δ.
    Improvement,
    /// The ends' comparison: its budget spent without settling.
    Inconclusive,
    /// A step: the midpoint measures like the good end.
    LikeGood,
    /// A step: the midpoint measures like the bad end.
    LikeBad,
    /// A step: its budget spent, the midpoint between the two.
    Unknown,
    /// A step: the level could not be measured (its build failed).
    Skipped,
}

/// One test of the bisection, as the log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The level tested; `None` for the ends' comparison.
    pub level: Option<usize>,
    /// The good and bad ends it was measured against.
    pub good: usize,
    pub bad: usize,
    pub decision: Decision,
    /// Units measured in this test, of every level.
    pub units: u32,
    /// Looks taken (the last one decided).
    pub looks: u32,
    /// The confidence of each look's interval.
    pub confidence: f64,
    /// At the last look, the interval of the tested level's ratio to the good end (for
    /// the ends' comparison: of bad / good).
    pub against_good: Option<(f64, f64)>,
    /// At the last look, the interval of the tested level's ratio to the bad end; `None`
    /// for the ends' comparison.
    pub against_bad: Option<(f64, f64)>,
}

/// How the bisection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The first bad level, right after the last good one.
    Found,
    /// The change lies between `last_good` and `first_bad`, the levels between unknown,
    /// skipped or untested once the steps were spent.
    Narrowed,
    /// The ends do not differ beyond ±δ.
    NoRegression,
    /// The bad end is better than the good one beyond ±δ.
    Improvement,
    /// The ends' comparison was not settled within its budget.
    Inconclusive,
}

/// The answer, once the bisection is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub outcome: Outcome,
    /// For found and narrowed: the change lies between these (adjacent when found).
    pub last_good: Option<usize>,
    pub first_bad: Option<usize>,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Measure one unit of this level, then [`Bisection::record`] it.
    Measure(usize),
    Done(Answer),
}

/// Where the bisection is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
enum Phase {
    /// Comparing the ends; `taken` units so far.
    Ends {
        taken: u32,
        looks: u32,
    },
    /// Testing `level`; `taken` units so far in this step.
    Step {
        level: usize,
        taken: u32,
        looks: u32,
    },
    Done {
        answer: Answer,
    },
}

/// A bisection between a good and a bad level (indices of the series), with every value
/// measured so far. Serialisable: a store can log it and resume from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bisection {
    settings: BisectSettings,
    /// The current good and bad ends.
    good: usize,
    bad: usize,
    /// Most steps allowed, and α per step.
    max_steps: u32,
    /// Each level's units in the order measured.
    values: BTreeMap<usize, Vec<f64>>,
    /// Levels tested and not decided (unknown or skipped): no further step tries them.
    undecided: Vec<usize>,
    steps: Vec<Step>,
    phase: Phase,
}

impl Bisection {
    /// A bisection of the levels from `good` to `bad`.
    pub fn new(good: usize, bad: usize, settings: BisectSettings) -> Result<Bisection, BisectError> {
        settings.validate()?;
        if bad <= good {
            return Err(BisectError::Range { good, bad });
        }
        let gaps = (bad - good) as f64;
        let max_steps = gaps.log2().ceil() as u32 + settings.extra_steps;
        Ok(Bisection {
            settings,
            good,
            bad,
            max_steps: max_steps.max(1),
            values: BTreeMap::new(),
            undecided: Vec::new(),
            steps: Vec::new(),
            phase: Phase::Ends { taken: 0, looks: 0 },
        })
    }

    pub fn settings(&self) -> &BisectSettings {
        &self.settings
    }

    /// The tests so far, the ends' comparison first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The units of `level` measured so far.
    pub fn values(&self, level: usize) -> &[f64] {
        self.values.get(&level).map_or(&[], Vec::as_slice)
    }

    /// Units measured, over every level.
    pub fn units(&self) -> u64 {
        self.values.values().map(|v| v.len() as u64).sum()
    }

    /// Levels measured at all.
    pub fn levels_measured(&self) -> usize {
        self.values.values().filter(|v| !v.is_empty()).count()
    }

    /// The most steps (tests after the ends') this bisection may take.
    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// The confidence of each look of the ends' comparison: 2α over its looks. A false
    /// regression needs one look's interval to miss on one side: at most α.
    pub fn ends_confidence(&self) -> f64 {
        let alpha = 1.0 - self.settings.confidence;
        1.0 - 2.0 * alpha / self.settings.ends.looks().len() as f64
    }

    /// The confidence of each look of a step: α over the steps and a step's looks. A
    /// wrong decision needs one look's interval to miss on one side: at most α/2 over
    /// the whole bisection.
    pub fn step_confidence(&self) -> f64 {
        let alpha = 1.0 - self.settings.confidence;
        1.0 - alpha / f64::from(self.max_steps) / self.settings.step.looks().len() as f64
    }

    /// What to measure next, or the answer.
    pub fn next(&self) -> Next {
        match &self.phase {
            Phase::Ends { taken, .. } => Next::Measure(if taken % 2 == 0 { self.good } else { self.bad }),
            Phase::Step { level, taken, .. } => Next::Measure(self.in_round(*level, *taken)),
            Phase::Done { answer } => Next::Done(answer.clone()),
        }
    }

    /// The level at position `taken` of a step's rounds: good, half the midpoint's
    /// units, bad, the other half.
    fn in_round(&self, level: usize, taken: u32) -> usize {
        let k = self.settings.per_round;
        let at = taken % (k + 2);
        let first = k.div_ceil(2);
        if at == 0 {
            self.good
        } else if at == first + 1 {
            self.bad
        } else {
            level
        }
    }

    /// Records one unit of `level`, which must be the one [`Bisection::next`] asked for;
    /// returns the decision when this unit completed a look that decided.
    pub fn record(&mut self, level: usize, value: f64) -> Result<Option<Decision>, BisectError> {
        let expected = match self.next() {
            Next::Measure(l) => l,
            Next::Done(_) => return Err(BisectError::Over),
        };
        if level != expected {
            return Err(BisectError::NotAsked { expected, got: level });
        }
        let index = self.values(level).len();
        if !value.is_finite() {
            return Err(StatsError::NotFinite { index, value }.into());
        }
        if self.settings.mean == MeanKind::Harmonic && value <= 0.0 {
            return Err(StatsError::NotPositive { index, value }.into());
        }
        self.values.entry(level).or_default().push(value);
        let before = self.phase.clone();
        let result = match before {
            Phase::Ends { taken, looks } => self.ends_unit(taken + 1, looks),
            Phase::Step { level, taken, looks } => self.step_unit(level, taken + 1, looks),
            Phase::Done { .. } => Err(BisectError::Over),
        };
        if result.is_err() {
            // a look that cannot be computed (a mean at or below 0 has no ratio) changes
            // nothing: the looks fail before they decide
            self.values.entry(level).or_default().pop();
            self.phase = before;
        }
        result
    }

    fn ends_unit(&mut self, taken: u32, looks: u32) -> Result<Option<Decision>, BisectError> {
        self.phase = Phase::Ends { taken, looks };
        let schedule = self.settings.ends.looks();
        if !taken.is_multiple_of(2) || schedule.get(looks as usize) != Some(&(taken / 2)) {
            return Ok(None);
        }
        let looks = looks + 1;
        let confidence = self.ends_confidence();
        let comparison = self.compare(self.good, self.bad, confidence)?;
        let against_good = ratio_bounds(&comparison);
        let worse = match self.settings.better {
            Better::Lower => comparison.ratio > 1.0,
            Better::Higher => comparison.ratio < 1.0,
        };
        let last = looks as usize == schedule.len();
        let decision = match classify(&comparison, self.settings.threshold) {
            VerdictKind::Significant if worse => Decision::Regression,
            VerdictKind::Significant => Decision::Improvement,
            VerdictKind::WithinBand | VerdictKind::NoMeaningfulDifference => Decision::NoRegression,
            _ if last => Decision::Inconclusive,
            _ => {
                self.phase = Phase::Ends { taken, looks };
                return Ok(None);
            }
        };
        self.steps.push(Step {
            level: None,
            good: self.good,
            bad: self.bad,
            decision,
            units: taken,
            looks,
            confidence,
            against_good,
            against_bad: None,
        });
        match decision {
            Decision::Regression => self.next_step(),
            Decision::Improvement => self.finish(Outcome::Improvement),
            Decision::NoRegression => self.finish(Outcome::NoRegression),
            _ => self.finish(Outcome::Inconclusive),
        }
        Ok(Some(decision))
    }

    fn step_unit(&mut self, level: usize, taken: u32, looks: u32) -> Result<Option<Decision>, BisectError> {
        self.phase = Phase::Step { level, taken, looks };
        let round = self.settings.per_round + 2;
        let schedule = self.settings.step.looks();
        if !taken.is_multiple_of(round) || schedule.get(looks as usize) != Some(&(taken / round)) {
            return Ok(None);
        }
        let looks = looks + 1;
        let confidence = self.step_confidence();
        let against_good = self.compare(self.good, level, confidence)?;
        let against_bad = self.compare(self.bad, level, confidence)?;
        // a side excluded: the interval of the ratio wholly on one side of no change
        let (not_good, not_bad) = (self.beyond(&against_good, true), self.beyond(&against_bad, false));
        let last = looks as usize == schedule.len();
        let decision = match (not_good, not_bad) {
            (false, true) => Decision::LikeGood,
            (true, false) => Decision::LikeBad,
            // differs from both: between them, which one step cannot be
            (true, true) => Decision::Unknown,
            _ if last => Decision::Unknown,
            _ => {
                self.phase = Phase::Step { level, taken, looks };
                return Ok(None);
            }
        };
        self.steps.push(Step {
            level: Some(level),
            good: self.good,
            bad: self.bad,
            decision,
            units: taken,
            looks,
            confidence,
            against_good: ratio_bounds(&against_good),
            against_bad: ratio_bounds(&against_bad),
        });
        match decision {
            Decision::LikeGood => self.good = level,
            Decision::LikeBad => self.bad = level,
            _ => self.undecided.push(level),
        }
        self.next_step();
        Ok(Some(decision))
    }

    /// Marks the midpoint being tested as unmeasurable (its build failed, as `git bisect
    /// skip`); the next step tries another level. A skip after a look spent that look's
    /// α, so it counts as a step.
    pub fn skip(&mut self, level: usize) -> Result<(), BisectError> {
        let (taken, looks) = match self.phase {
            Phase::Step { level: l, taken, looks } if l == level => (taken, looks),
            Phase::Done { .. } => return Err(BisectError::Over),
            _ => return Err(BisectError::NotSkippable { level }),
        };
        self.undecided.push(level);
        self.steps.push(Step {
            level: Some(level),
            good: self.good,
            bad: self.bad,
            decision: Decision::Skipped,
            units: taken,
            looks,
            confidence: self.step_confidence(),
            against_good: None,
            against_bad: None,
        });
        self.next_step();
        Ok(())
    }

    /// Steps that spent α: every test after the ends', but a skip before its first look.
    fn steps_spent(&self) -> u32 {
        self.steps
            .iter()
            .filter(|s| s.level.is_some() && (s.decision != Decision::Skipped || s.looks > 0))
            .count() as u32
    }

    /// Starts the next step, or ends: found when the ends are adjacent, narrowed when
    /// every level between is undecided or the steps are spent.
    fn next_step(&mut self) {
        let (good, bad) = (self.good, self.bad);
        if bad == good + 1 {
            return self.finish(Outcome::Found);
        }
        let middle = (good + bad) / 2;
        let candidate =
            (good + 1..bad).filter(|l| !self.undecided.contains(l)).min_by_key(|&l| (l.abs_diff(middle), l));
        match candidate {
            Some(level) if self.steps_spent() < self.max_steps => {
                self.phase = Phase::Step { level, taken: 0, looks: 0 };
            }
            _ => self.finish(Outcome::Narrowed),
        }
    }

    fn finish(&mut self, outcome: Outcome) {
        let located = matches!(outcome, Outcome::Found | Outcome::Narrowed);
        let answer = Answer {
            outcome,
            last_good: located.then_some(self.good),
            first_bad: located.then_some(self.bad),
        };
        self.phase = Phase::Done { answer };
    }

    /// The step the answer locates: the first bad level against the last good one (ratio
    /// first bad / last good), at the bisection's confidence; `None` before the end or
    /// without a regression.
    pub fn step_found(&self) -> Option<Result<Comparison, StatsError>> {
        let Phase::Done { answer } = &self.phase else { return None };
        let (good, bad) = (answer.last_good?, answer.first_bad?);
        Some(self.compare(good, bad, self.settings.confidence))
    }

    /// The comparison of level `b` with level `a` (ratio b / a) as the report compares
    /// two cells: Fieller's interval with Welch's degrees of freedom, at `confidence`.
    pub fn compare(&self, a: usize, b: usize, confidence: f64) -> Result<Comparison, StatsError> {
        let settings =
            StatsSettings { confidence, threshold: self.settings.threshold, ..StatsSettings::default() };
        let a = Observations::new(self.values(a), self.settings.mean)?;
        let b = Observations::new(self.values(b), self.settings.mean)?;
        compare_independent(&a, &b, &settings)
    }

    /// Whether the comparison's interval lies wholly on the worse side of no change
    /// (`worse`), or wholly on the better side.
    fn beyond(&self, comparison: &Comparison, worse: bool) -> bool {
        let Some((low, high)) = ratio_bounds(comparison) else { return false };
        let higher_is_worse = self.settings.better == Better::Lower;
        if worse == higher_is_worse { low > 1.0 } else { high < 1.0 }
    }
}

/// A bounded interval of the ratio.
fn ratio_bounds(comparison: &Comparison) -> Option<(f64, f64)> {
    comparison.interval.effect().map(|(low, high)| (low + 1.0, high + 1.0))
}

#[cfg(test)]
mod tests;
