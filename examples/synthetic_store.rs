//! A synthetic experiment and store for `bench/report.sh`: `LEVELS × LEVELS` cells of
//! `TRIALS` trials each (100 × 100 × 100 = 1 000 000 trials by default), written in the
//! very format `margin run` writes, so that `margin report` can be timed at scale.
//!
//! ```text
//! cargo run --release --example synthetic_store -- OUT_DIR [LEVELS [TRIALS [METRICS [SHAPE]]]]
//! ```
//!
//! writes `OUT_DIR/synthetic.yaml`, the store `OUT_DIR/reports/synthetic/` and the same
//! values as a CSV, `OUT_DIR/synthetic.csv` (one row per trial: `blocks`, `variant`,
//! `round`, then one column per metric), for `bench/compare.sh` to hand to pandas.
//! METRICS is `4` (the default: wall, user and system time and dd's throughput, and the
//! secondary metrics of the default `monitor:` (CPU shares, the disk's bytes, the dirty
//! pages before and the trial's own writes), as a run records them) or `1` (the
//! throughput alone, no telemetry: what pandas is given too). The cell
//! ids, levels and metric annotations come from the library (spec → plan → parse recipe),
//! so they are what a real run of that file would record. The values are drawn from a
//! seeded RNG: most cells are quiet, some noisy, some have slow outlier trials, and the
//! compared variants differ by a few percent, so every kind of verdict and warning has
//! work to do. The trials run in rounds, every cell once per round in a shuffled order,
//! back to back, as `order: interleaved` would run them.
//!
//! SHAPE is `matrix` (the default: `LEVELS × LEVELS` cells, each variant compared with
//! `v00`), `series` (one size, `LEVELS` variants as an ordered factor whose change points
//! the report searches: `bench/series.sh`) or `compared` (the same `LEVELS` cells, each
//! variant compared with `v00` instead: as many trials, the report of today).

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use indexmap::IndexMap;
use jiff::{SignedDuration, Timestamp};
use margin::parse::Recipe;
use margin::run::facts;
use margin::store::levels_map;
use margin::store::{Event, MetricInfo, SessionRecord, Status, Store, Telemetry, TrialRecord};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use vocab::{Better, MeanKind};

/// Fixed, so that every benchmark run reads the same store.
const SEED: u64 = 0x5eed_0005;
/// The experiment's name, and so the store's folder.
const NAME: &str = "synthetic";
/// What the session start says; the trials follow it back to back.
const SESSION_START: &str = "2025-01-06T09:00:00Z";

/// What the default `monitor:` (cpu, disks) adds to a local trial's record: the host's CPU
/// shares, the busiest disk's bytes, the dirty pages when it began and the trial's own
/// writes (a dd with conv=fdatasync: the disk wrote about what the trial wrote).
fn telemetry(session: &str, bytes: f64, wall: f64, rng: &mut Pcg64) -> Telemetry {
    let user = 1.0 + 2.0 * rng.random::<f64>();
    let system = 20.0 + 10.0 * rng.random::<f64>();
    let iowait = 15.0 + 10.0 * rng.random::<f64>();
    let steal = 0.5 * rng.random::<f64>();
    let metrics = [
        ("cpu_user_pct", user),
        ("cpu_system_pct", system),
        ("cpu_iowait_pct", iowait),
        ("cpu_steal_pct", steal),
        ("cpu_idle_pct", 100.0 - user - system - iowait - steal),
        ("disk_read_bytes:vda", (4096.0 * (8.0 * rng.random::<f64>()).floor())),
        (
            "disk_written_bytes:vda",
            bytes * (1.0 + 0.01 * rng.random::<f64>()) + 4096.0 * (wall * 100.0).floor(),
        ),
        ("dirty_before_bytes", 4096.0 * (64.0 * rng.random::<f64>()).floor()),
        ("own_written_bytes", bytes),
    ];
    Telemetry {
        sources: vec!["cpu".into(), "disks".into()],
        metrics: metrics.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
        raw: Some(format!("raw/{session}.telemetry")),
        offset: Some(0),
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: synthetic_store OUT_DIR [LEVELS [TRIALS [METRICS (1 or 4) [SHAPE]]]]";
    let out = PathBuf::from(args.next().context(usage)?);
    let mut number = |default: usize| -> Result<usize> {
        args.next().map_or(Ok(default), |a| a.parse().with_context(|| format!("`{a}`: {usage}")))
    };
    let (levels, trials, metric_count) = (number(100)?, number(100)?, number(4)?);
    if levels < 2 || trials < 1 {
        bail!("at least 2 levels per factor (one is the baseline) and 1 trial: {usage}");
    }
    if metric_count != 1 && metric_count != 4 {
        bail!("METRICS is 1 (the throughput) or 4 (with wall, user and system time): {usage}");
    }
    let shape = match args.next().as_deref() {
        None | Some("matrix") => Shape::Matrix,
        Some("series") => Shape::Series,
        Some("compared") => Shape::Compared,
        Some(other) => bail!("`{other}`: SHAPE is matrix, series or compared: {usage}"),
    };

    fs::create_dir_all(&out).with_context(|| out.display().to_string())?;
    let file = out.join(format!("{NAME}.yaml"));
    fs::write(&file, experiment(levels, trials, shape)).with_context(|| file.display().to_string())?;
    let exp = margin::spec::load_file(&file).map_err(|d| anyhow::anyhow!("{file:?}: {d:?}"))?;
    let plan = margin::plan::expand(&exp, usize::MAX).map_err(|d| anyhow::anyhow!("{d:?}"))?;

    let store = Store::new(&out.join("reports"), &exp.name);
    fs::create_dir_all(&store.dir).with_context(|| store.dir.display().to_string())?;
    let start: Timestamp = SESSION_START.parse()?;
    let mut rng = Pcg64::seed_from_u64(SEED);
    let session = uuid_v7(start, &mut rng);
    let throughput = throughput_info(&exp.spec)?;
    let seconds = MetricInfo { unit: "s".into(), better: Better::Lower, mean: MeanKind::Arithmetic };

    // The records go through one large buffer rather than `Appender`, which makes every
    // line durable before the next: a million fdatasyncs would take longer than the run.
    let runs = store.runs_path();
    let mut writer = BufWriter::with_capacity(1 << 20, File::create(&runs).context("runs.ndjson")?);
    let csv_path = out.join(format!("{NAME}.csv"));
    let mut csv = BufWriter::with_capacity(1 << 20, File::create(&csv_path).context("synthetic.csv")?);
    let names: &[&str] = if metric_count == 1 {
        &["throughput"]
    } else {
        &["wall_time", "user_time", "system_time", "throughput"]
    };
    writeln!(csv, "blocks,variant,round,{}", names.join(","))?;
    let levels_of: Vec<IndexMap<String, String>> = plan.cells.iter().map(|c| levels_map(&plan, c)).collect();
    let steps = (shape != Shape::Matrix).then_some(levels);
    let models: Vec<Model> =
        levels_of.iter().map(|l| Model::new(l, steps, &mut rng)).collect::<Result<_>>()?;
    let mut order: Vec<usize> = (0..plan.cells.len()).collect();
    let mut clock = start;
    for round in 1..=trials {
        order.shuffle(&mut rng);
        for (position, &index) in order.iter().enumerate() {
            let model = &models[index];
            let rate = model.draw(round, &mut rng);
            let wall = model.bytes / rate + 0.002;
            let trial = uuid_v7(clock, &mut rng);
            let (raw, _, _) = store.raw_paths(&trial);
            // drawn whether kept or not, so that the throughput is the same with 1 metric or 4
            let (user, system) =
                (0.001 + 0.002 * rng.random::<f64>(), wall * (0.2 + 0.1 * rng.random::<f64>()));
            let all =
                [("wall_time", wall), ("user_time", user), ("system_time", system), ("throughput", rate)];
            let kept: Vec<(&str, f64)> = all.into_iter().filter(|(n, _)| names.contains(n)).collect();
            // drawn whether kept or not too
            let telemetry = telemetry(&session, model.bytes, wall, &mut rng);
            let info = |name: &str| if name == "throughput" { throughput.clone() } else { seconds.clone() };
            let cell = plan.cells[index].id.to_string();
            let levels = levels_of[index].clone();
            let record = TrialRecord {
                repetition: round as u32,
                round: round as u32,
                position: position as u32 + 1,
                started_at: Some(clock.to_string()),
                exit_code: Some(0),
                metrics: kept.iter().map(|&(n, v)| (n.to_string(), v)).collect(),
                metric_info: kept.iter().map(|&(n, _)| (n.to_string(), info(n))).collect(),
                wall_time: wall,
                raw: Some(raw),
                telemetry: (metric_count == 4).then_some(telemetry),
                ..TrialRecord::new(trial, cell, levels, "local".into(), session.clone(), Status::Ok)
            };
            serde_json::to_writer(&mut writer, &record)?;
            writer.write_all(b"\n")?;
            let level = |key: &str| levels_of[index].get(key).map_or("", String::as_str);
            write!(csv, "{},{},{round}", level("blocks"), level("variant"))?;
            for (_, value) in &kept {
                write!(csv, ",{value}")?;
            }
            writeln!(csv)?;
            clock = clock.checked_add(SignedDuration::from_secs_f64(wall))?;
        }
    }
    writer.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    csv.into_inner().map_err(|e| e.into_error())?.sync_all()?;

    let source = facts::Local::new(&std::env::temp_dir());
    let session_record = |event, at: Timestamp| SessionRecord {
        event,
        at: at.to_string(),
        facts: if event == Event::Start { facts::gather(&source) } else { IndexMap::new() },
        outcome: (event == Event::End).then(|| "completed".into()),
        ..SessionRecord::start(session.clone(), "local".into(), &exp, SEED)
    };
    let mut sessions = String::new();
    for record in [session_record(Event::Start, start), session_record(Event::End, clock)] {
        writeln!(sessions, "{}", serde_json::to_string(&record)?)?;
    }
    fs::write(store.sessions_path(), sessions).context("sessions.ndjson")?;
    println!(
        "{}: {} cells × {trials} trials in {} and {}",
        file.display(),
        plan.cells.len(),
        runs.display(),
        csv_path.display()
    );
    Ok(())
}

/// What the synthetic experiment asks of its variants.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// `LEVELS` sizes × `LEVELS` variants, each variant compared with `v00` in each size.
    Matrix,
    /// One size, the variants a series whose change points the report searches.
    Series,
    /// One size, each variant compared with `v00`: the trials of a series, today's report.
    Compared,
}

/// The experiment file: dd writes of `blocks` MiB by `variant`, every variant compared
/// with `v00` within each size, or the variants a series. dd's own parser reads the
/// throughput.
fn experiment(levels: usize, trials: usize, shape: Shape) -> String {
    let list = |f: &dyn Fn(usize) -> String| (0..levels).map(f).collect::<Vec<_>>().join(", ");
    let sizes = if shape == Shape::Matrix { levels } else { 1 };
    let analysis = if shape == Shape::Series {
        "  series:\n    - factor: variant\n"
    } else {
        "  compare:\n    - factor: variant\n      baseline: v00\n"
    };
    format!(
        "description: Synthetic store for bench/report.sh, {sizes} × {levels} cells of {trials} trials.
matrix:
  blocks: [{blocks}]
  variant: [{variants}]
run: 'dd if=/dev/zero of={{{{ workdir }}}}/f bs=1M count={{{{ blocks }}}} conv=fdatasync # {{{{ variant }}}}'
parse: dd
metrics:
  throughput: {{ better: higher }}
repetitions: {trials}
order: interleaved
analysis:
{analysis}",
        blocks = (1..=sizes).map(|i| i.to_string()).collect::<Vec<_>>().join(", "),
        variants = list(&|i| format!("v{i:02}")),
    )
}

/// How a real run annotates the throughput: the experiment's recipe applied to a dd
/// summary line.
fn throughput_info(spec: &margin::spec::Spec) -> Result<MetricInfo> {
    let recipe = Recipe::from_spec(spec).map_err(|(name, e)| anyhow::anyhow!("{name}: {e}"))?;
    let parsed = recipe.apply("", "1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.01 s, 105 MB/s\n")?;
    let metric = parsed.samples.into_iter().flat_map(|s| s.metrics).find(|m| m.name == "throughput");
    let metric = metric.context("the dd recipe read no throughput")?;
    Ok(MetricInfo { unit: metric.unit.symbol().into(), better: metric.better, mean: metric.mean })
}

/// What a cell's trials are drawn from.
struct Model {
    /// Bytes each trial writes.
    bytes: f64,
    /// The true throughput, B/s.
    rate: f64,
    /// Relative spread of a trial around it.
    cv: f64,
    /// Rounds whose trial is slowed down to a third: an outlier.
    slow: Vec<usize>,
}

impl Model {
    /// The model of the cell with these levels (`blocks: 1…`, `variant: v00…`). With
    /// `steps` (the number of variants, one size), the variants step +5 % a third of the
    /// way along and −8 % two thirds along, so that a series has changes to find.
    fn new(levels: &IndexMap<String, String>, steps: Option<usize>, rng: &mut Pcg64) -> Result<Model> {
        let level = |key: &str| levels.get(key).with_context(|| format!("a cell without `{key}`"));
        let blocks: usize = level("blocks")?.parse()?;
        let variant: usize = level("variant")?.trim_start_matches('v').parse()?;
        let base = 150e6 + 100e6 * (blocks as f64 * 0.37).sin().abs();
        // Variants -4 % … +4 % from the baseline, a fifth of them equal to it.
        let effect = match steps {
            None => 1.0 + 0.02 * ((variant % 5) as f64 - 2.0) * f64::from(variant != 0),
            Some(count) if variant < count / 3 => 1.0,
            Some(count) if variant < 2 * count / 3 => 1.05,
            Some(_) => 0.966,
        };
        let noisy = rng.random::<f64>() < 0.1;
        let slow = if rng.random::<f64>() < 0.05 { vec![1 + rng.random_range(0..3), 7] } else { Vec::new() };
        let cv = if noisy { 0.15 } else { 0.02 };
        Ok(Model { bytes: blocks as f64 * 1048576.0, rate: base * effect, cv, slow })
    }

    /// One trial's throughput, in round `round`.
    fn draw(&self, round: usize, rng: &mut Pcg64) -> f64 {
        let slowdown = if self.slow.contains(&round) { 3.0 } else { 1.0 };
        (self.rate * (1.0 + self.cv * normal(rng))).max(self.rate * 0.05) / slowdown
    }
}

/// A standard normal deviate (Box–Muller).
fn normal(rng: &mut Pcg64) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>();
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A UUID v7 stamped with `at`, its random part from the seeded RNG.
fn uuid_v7(at: Timestamp, rng: &mut Pcg64) -> String {
    let millis = u64::try_from(at.as_millisecond()).unwrap_or(0);
    uuid::Builder::from_unix_timestamp_millis(millis, &rng.random()).into_uuid().to_string()
}
