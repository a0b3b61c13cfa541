//! One simulated experiment: trials drawn with a known truth, written into an in-memory
//! store as a run (or, for sessions, several boots) would write them, with adaptive
//! repetitions decided round by round by the runner's own rule; then analysed by
//! [`statistics`], the analysis the report is built on, and its comparison read.

use rand::Rng;
use rand::SeedableRng;
use rand_pcg::Pcg64;
use statrs::distribution::{ContinuousCDF, Normal};

use super::CalibrateError;
use super::scenario::{Layout, Scenario, Shape, TrialsPerCell};
use crate::analyze::boot_rule;
use crate::analyze::stopping::Rule;
use crate::analyze::{MemoryStore, statistics};
use crate::store::Status;
use stats::verdict::VerdictKind;
use vocab::MeanKind;

/// The work behind one trial of a rate (MB): its value is this over the trial's time.
pub const WORK: f64 = 100.0;
/// The spread of the blocks' true centres in a paired layout (sd of their logs).
pub const BLOCK_SD_LOG: f64 = 0.3;
/// The name of the simulated metric.
pub const METRIC: &str = "value";

/// A scenario made ready to simulate: its experiment parsed once, its stopping rule.
#[derive(Debug, Clone)]
pub struct PreparedScenario {
    pub scenario: Scenario,
    /// The experiment with an empty store, cloned for every simulated experiment.
    pub empty: MemoryStore,
    rule: Rule,
}

impl PreparedScenario {
    pub fn new(scenario: &Scenario) -> Result<PreparedScenario, CalibrateError> {
        let mut empty =
            MemoryStore::load("experiments/calibrate.yaml", &scenario.yaml()).map_err(|source| {
                CalibrateError::Experiment { what: format!("scenario {}", scenario.name), source }
            })?;
        let (unit, better, mean) = scenario.metric();
        empty.metric(METRIC, unit, better, mean);
        let rule = Rule::new(&empty.exp, &empty.plan, empty.exp.spec.repetitions());
        Ok(PreparedScenario { scenario: scenario.clone(), empty, rule })
    }
}

/// One cell's simulated trials, as they were recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct SimCell {
    /// `a` (the baseline) or `b`.
    pub level: &'static str,
    /// The paired block, if any.
    pub block: Option<String>,
    /// The metric's values in trial order (rates for a harmonic metric).
    pub values: Vec<f64>,
}

/// What margin's analysis said about one simulated experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimOutcome {
    /// The ratio's interval; `None` when margin gives none (unbounded, no estimate).
    pub interval: Option<(f64, f64)>,
    pub ratio: f64,
    pub verdict: VerdictKind,
    pub p_value: Option<f64>,
    /// Some cell had a value set aside as an outlier.
    pub set_aside: bool,
    /// Trials recorded, and the cells they went to.
    pub trials: u64,
    pub cells: u64,
    /// The boots (sessions) of both levels, when compared across them.
    pub units: u64,
}

/// A simulated experiment: its store, its cells, and the analysis (or why there is none).
#[derive(Debug, Clone)]
pub struct Simulated {
    pub store: MemoryStore,
    pub cells: Vec<SimCell>,
    pub outcome: Result<SimOutcome, String>,
}

/// A seed for experiment `index` of a scenario at a truth: depends on nothing else, so a
/// scenario gives the same numbers whether it runs alone or in the whole suite, on any
/// number of threads.
pub fn experiment_seed(seed: u64, scenario: &str, truth: usize, index: u64) -> u64 {
    // FNV-1a of the name, then SplitMix64's finaliser over the parts.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in scenario.bytes() {
        h = (h ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut x = seed;
    for part in [h, truth as u64, index] {
        x = splitmix(x ^ splitmix(part));
    }
    x
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Simulates and analyses one experiment with the compared level's true ratio `ratio`.
pub fn simulate(prepared: &PreparedScenario, ratio: f64, seed: u64) -> Simulated {
    let (store, cells) = simulate_trials(prepared, ratio, seed);
    let outcome = analyse(&store, &cells);
    Simulated { store, cells, outcome }
}

/// One cell of a simulated experiment: its level (`a`, the baseline, or `b`), its block,
/// and the true centre of the quantity drawn.
type Truth = (&'static str, Option<String>, f64);

/// The trials of one simulated experiment, recorded in a store, before any analysis.
pub fn simulate_trials(prepared: &PreparedScenario, ratio: f64, seed: u64) -> (MemoryStore, Vec<SimCell>) {
    let s = &prepared.scenario;
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut store = prepared.empty.clone();
    let truths = truths(s, ratio, &mut rng);
    let mut trials = Trials::new(s, &truths, &store, &mut rng);
    let (rng, store_ref) = (&mut rng, &mut store);
    match (s.trials, s.layout) {
        (TrialsPerCell::Fixed { n }, Layout::Sessions { per_level, between, .. }) => {
            // Boots alternate between the levels; each shifts all its trials alike, in
            // every block it runs.
            for session in 1..=per_level {
                trials.boot_each_level(store_ref, rng, session, between, n);
            }
        }
        (TrialsPerCell::Boots { per_boot, min, max, cost, futility }, Layout::Sessions { between, .. }) => {
            trials.adaptive_boots(store_ref, rng, (per_boot, min, max, cost), between, futility);
        }
        (TrialsPerCell::Boots { .. }, _) => unreachable!("adaptive boots are simulated on sessions"),
        (TrialsPerCell::Fixed { n }, _) => {
            store_ref.session("s1", "sim", &[("kernel", "sim")]);
            for _ in 0..n {
                for cell in 0..truths.len() {
                    trials.add(store_ref, rng, cell, 0.0);
                }
            }
        }
        (TrialsPerCell::Adaptive { .. } | TrialsPerCell::Verdict { .. }, _) => {
            trials.rounds(store_ref, rng, &prepared.rule);
        }
    }

    let values = trials.values;
    let cells: Vec<SimCell> = truths
        .into_iter()
        .zip(values)
        .map(|((level, block, _), values)| SimCell { level, block, values })
        .collect();
    (store, cells)
}

/// The cells: (level, block, true centre of the drawn quantity); each block's centre
/// drawn from `rng`.
fn truths(s: &Scenario, ratio: f64, rng: &mut Pcg64) -> Vec<Truth> {
    let mut cells: Vec<Truth> = Vec::new();
    let level_centre = |level: &str, base: f64| match (level, s.mean) {
        ("a", _) => base,
        (_, MeanKind::Arithmetic) => base * ratio,
        // a rate R times higher takes 1/R of the time
        (_, MeanKind::Harmonic) => base / ratio,
    };
    let blocks = s.blocks();
    if blocks.is_empty() {
        for level in ["a", "b"] {
            cells.push((level, None, level_centre(level, s.centre)));
        }
    } else {
        for block in &blocks {
            let centre = s.centre * (BLOCK_SD_LOG * standard_normal(rng)).exp();
            for level in ["a", "b"] {
                cells.push((level, Some(block.clone()), level_centre(level, centre)));
            }
        }
    }
    cells
}

/// How the trials of a simulated experiment's cells are drawn and recorded, and the
/// values drawn so far.
struct Trials<'a> {
    s: &'a Scenario,
    cells: &'a [Truth],
    /// A contaminated cell: which of its trials is moved, and by how many sd.
    contamination: Vec<Option<(u32, f64)>>,
    /// Each cell's levels and id, looked up in the plan once rather than at every trial.
    levels: Vec<Vec<(&'a str, &'a str)>>,
    ids: Vec<String>,
    /// Each cell's values in trial order.
    values: Vec<Vec<f64>>,
}

impl<'a> Trials<'a> {
    /// The cells' levels and ids in `store`'s plan, and which are contaminated (drawn
    /// from `rng`).
    fn new(s: &'a Scenario, cells: &'a [Truth], store: &MemoryStore, rng: &mut Pcg64) -> Trials<'a> {
        let max_trials = match s.trials {
            TrialsPerCell::Fixed { n } => n,
            TrialsPerCell::Adaptive { max, .. } | TrialsPerCell::Verdict { max, .. } => max,
            TrialsPerCell::Boots { max, .. } => stats::components::MAX_TRIALS_PER_BOOT as u32 * max,
        };
        let per_session = match s.layout {
            Layout::Sessions { per_level, .. } => max_trials * per_level,
            _ => max_trials,
        };
        let contamination: Vec<Option<(u32, f64)>> = cells
            .iter()
            .map(|_| match s.shape {
                Shape::Contaminated { share } if unit_open(rng) < share => {
                    let at = (unit_open(rng) * f64::from(per_session)) as u32;
                    let size = 3.0 + 7.0 * unit_open(rng);
                    let sign = if unit_open(rng) < 0.5 { -1.0 } else { 1.0 };
                    Some((at.min(per_session - 1), sign * size))
                }
                _ => None,
            })
            .collect();
        let factor = s.factor();
        let levels_of = |cell: usize| -> Vec<(&'a str, &'a str)> {
            let (level, block, _) = &cells[cell];
            let mut levels = vec![(factor, *level)];
            if let Some(block) = block {
                levels.push(("block", block.as_str()));
            }
            if let TrialsPerCell::Boots { .. } = s.trials {
                levels.push(("host", "sim"));
            }
            levels
        };
        let levels: Vec<Vec<(&str, &str)>> = (0..cells.len()).map(levels_of).collect();
        let ids: Vec<String> = levels.iter().map(|l| store.cell(l)).collect();
        Trials { s, cells, contamination, levels, ids, values: vec![Vec::new(); cells.len()] }
    }

    /// Draws and records the next trial of `cell`, its centre shifted by `offset` sd.
    fn add(&mut self, store: &mut MemoryStore, rng: &mut Pcg64, cell: usize, offset: f64) {
        let s = self.s;
        let centre = self.cells[cell].2;
        let sd = s.cv * centre;
        let index = self.values[cell].len() as u32;
        let mut x = draw(s.shape, centre + offset * sd, sd, rng);
        if let Some((at, shift)) = self.contamination[cell]
            && at == index
        {
            x += shift * sd;
        }
        let value = match s.mean {
            MeanKind::Arithmetic => x,
            MeanKind::Harmonic => WORK / x,
        };
        self.values[cell].push(value);
        store.record(self.ids[cell].clone(), &self.levels[cell], &[(METRIC, value)], Status::Ok);
    }

    /// Boot number `boot` of each level, `a` then `b`: a session whose trials are all
    /// shifted by one draw of `between` sd, `n` trials in each of the level's cells.
    fn boot_each_level(&mut self, store: &mut MemoryStore, rng: &mut Pcg64, boot: u32, between: f64, n: u32) {
        for level in ["a", "b"] {
            let id = format!("{level}{boot}");
            store.session(&id, "sim", &[("kernel", level)]);
            let offset = between * standard_normal(rng);
            for cell in (0..self.cells.len()).filter(|&c| self.cells[c].0 == level) {
                for _ in 0..n {
                    self.add(store, rng, cell, offset);
                }
            }
        }
    }

    /// The runner's blocks: each level booted once a block; from block `min` on, a look
    /// at each count of the schedule, and the trials per boot decided once after the
    /// first `min` blocks, by the runner's own rule.
    fn adaptive_boots(
        &mut self,
        store: &mut MemoryStore,
        rng: &mut Pcg64,
        (per_boot, min, max, cost): (u32, u32, u32, f64),
        between: f64,
        futility: Option<f64>,
    ) {
        let looks = crate::spec::look_schedule(min, max);
        let mut m = per_boot;
        for block in 1..=max {
            let done = block - 1;
            let (exp, plan) = (&store.exp, &store.plan);
            if done >= min
                && looks.contains(&done)
                && boot_rule::look(exp, plan, &store.snapshot, max, futility) != crate::run::BootLook::Open
            {
                break;
            }
            if done == min {
                m = boot_rule::further_trials(exp, plan, &store.snapshot, cost).unwrap_or(2);
            }
            self.boot_each_level(store, rng, block, between, m);
        }
    }

    /// The runner's rounds: every unfinished cell gets one trial, then the rule decides
    /// from the records (the cell's own, or, until a verdict, those of every cell of its
    /// comparison) which cells are done.
    fn rounds(&mut self, store: &mut MemoryStore, rng: &mut Pcg64, rule: &Rule) {
        store.session("s1", "sim", &[("kernel", "sim")]);
        let plan_index: Vec<usize> = self
            .ids
            .iter()
            .map(|id| {
                let at = store.plan.cells.iter().position(|c| c.id.to_string() == *id);
                at.expect("every simulated cell is a cell of the plan")
            })
            .collect();
        let mut progress = crate::store::ProgressByCell::new();
        let mut done = vec![false; self.cells.len()];
        while done.iter().any(|d| !d) {
            for cell in 0..self.cells.len() {
                if done[cell] {
                    continue;
                }
                self.add(store, rng, cell, 0.0);
                let record = store.records.last().expect("a trial was just recorded");
                progress.entry(plan_index[cell]).or_default().add_record(record);
            }
            for cell in 0..self.cells.len() {
                let p = &progress[&plan_index[cell]];
                done[cell] = done[cell] || rule.is_done(plan_index[cell], p, &progress);
            }
        }
    }
}

/// Runs margin's analysis over the store and reads its one comparison.
pub fn analyse(store: &MemoryStore, cells: &[SimCell]) -> Result<SimOutcome, String> {
    let summary = statistics(&store.exp, &store.plan, &store.snapshot).map_err(|e| e.to_string())?;
    let comparison = match &summary.comparisons[..] {
        [c] => c,
        other => {
            let warnings: Vec<String> = summary.warnings.iter().map(|w| w.message.clone()).collect();
            return Err(format!("{} comparisons; warnings: {}", other.len(), warnings.join("; ")));
        }
    };
    let interval = match (comparison.ci_low, comparison.ci_high) {
        (Some(low), Some(high)) => Some((low, high)),
        _ => None,
    };
    let trials: usize = cells.iter().map(|c| c.values.len()).sum();
    let trials = trials as u64;
    let units = comparison.replication.as_ref().map_or(0, |r| (r.baseline_units + r.level_units) as u64);
    Ok(SimOutcome {
        interval,
        ratio: comparison.ratio,
        verdict: comparison.verdict,
        p_value: comparison.p_value,
        set_aside: summary.cells.iter().any(|c| !c.set_aside.is_empty()),
        trials,
        cells: cells.len() as u64,
        units,
    })
}

/// A uniform number strictly inside (0, 1).
pub fn unit_open(rng: &mut Pcg64) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// A standard normal value, by inverting its distribution function.
pub fn standard_normal(rng: &mut Pcg64) -> f64 {
    Normal::standard().inverse_cdf(unit_open(rng))
}

/// One value of `shape` with this mean and sd.
pub fn draw(shape: Shape, mean: f64, sd: f64, rng: &mut Pcg64) -> f64 {
    match shape {
        Shape::Normal | Shape::Contaminated { .. } => mean + sd * standard_normal(rng),
        Shape::LogNormal => {
            let var_log = (1.0 + (sd / mean).powi(2)).ln();
            mean * (var_log.sqrt() * standard_normal(rng) - var_log / 2.0).exp()
        }
        Shape::StudentT3 => {
            let z = standard_normal(rng);
            let chi2: f64 = (0..3).map(|_| standard_normal(rng).powi(2)).sum();
            // t₃ = z / √(χ²₃/3) has variance 3
            mean + sd * z / (chi2 / 3.0).sqrt() / 3f64.sqrt()
        }
        Shape::Quantised => (mean + sd * standard_normal(rng)).round(),
    }
}

/// The true ratio of the analysed means at a nominal ratio: the nominal one, except for
/// quantised values, whose expected value is that of the rounded normal.
pub fn true_ratio(scenario: &Scenario, ratio: f64) -> f64 {
    match scenario.shape {
        Shape::Quantised => {
            let (a, b) = (scenario.centre, scenario.centre * ratio);
            rounded_mean(b, scenario.cv * b) / rounded_mean(a, scenario.cv * a)
        }
        _ => ratio,
    }
}

/// E[round(X)] for X normal(mean, sd): Σ k·P(k − ½ < X < k + ½).
pub fn rounded_mean(mean: f64, sd: f64) -> f64 {
    let normal = Normal::new(mean, sd).expect("a positive sd");
    let (low, high) = ((mean - 12.0 * sd).floor() as i64, (mean + 12.0 * sd).ceil() as i64);
    (low..=high).map(|k| k as f64 * (normal.cdf(k as f64 + 0.5) - normal.cdf(k as f64 - 0.5))).sum()
}
