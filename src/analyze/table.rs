//! The tidy table: one row per trial × metric of the current plan's cells, the levels as
//! columns. It is what `margin export` writes and what the summary groups.
//!
//! Warm-ups and failed trials stay in the table, marked by `warmup` and `status`, so an
//! export holds everything the store measured for the current spec; [`groups`] takes only
//! the analysed rows, straight from the trial columns (the report does not build the
//! frame). Records of cells the plan no longer has (the command or
//! parse rules changed, so their numbers measure something else) are left out and
//! counted.

use std::sync::Arc;

use polars::prelude::*;

use super::prior::{Prior, before_on_host};
use crate::plan::Plan;
use crate::store::{Name, Started, Status, Trials};
use crate::summary::TrialCounts;

/// Columns every table has besides the levels, in the order they follow them.
pub(crate) const FIXED_COLUMNS: [&str; 12] = [
    "metric",
    "value",
    "unit",
    "status",
    "warmup",
    "host",
    "started_at",
    "cell",
    "repetition",
    "session",
    "round",
    "trial",
];

/// A level key and the column that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LevelColumn {
    pub key: String,
    /// The key itself, or `<key>_level` when the key is also a fixed column's name (the
    /// reserved factor `host`, say).
    pub column: String,
}

/// The tidy table of one experiment's store. The frame holds the text columns as numbers
/// (the cell's index in the plan, the trial's in the log, names of [`Trials::names`]):
/// grouping and sorting a million trials' rows by number is what keeps the report fast.
/// [`Table::frame`] spells them out for export.
#[derive(Debug, Clone)]
pub(crate) struct Table<'a> {
    frame: DataFrame,
    trials: &'a Trials,
    plan: &'a Plan,
    pub levels: Vec<LevelColumn>,
}

/// The analysed values of one cell and metric, in the order the trials started.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Group {
    /// Index of the cell in [`Plan::cells`].
    pub cell: usize,
    pub metric: Name,
    pub values: Vec<f64>,
    /// The trials the values came from, parallel to `values`.
    pub rows: Arc<Rows>,
}

/// When, where and in which session each of a group's values was measured. A cell's
/// metrics come from the same trials as a rule, so their groups share one (a report holds
/// these once per trial rather than once per value: a quarter of it for four metrics).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Rows {
    /// Start times (µs since the epoch), none when unreadable.
    pub started: Vec<Started>,
    /// Sessions and hosts, names of [`Trials::names`].
    pub sessions: Vec<Name>,
    pub hosts: Vec<Name>,
    /// Places in their rounds (the records' `position`; 0 where the trials do not say).
    pub positions: Vec<u32>,
    /// The cell of the trial that ran just before on the same host in the same session
    /// (a warm-up or failed one too), a name of [`Trials::names`]; none for a session's
    /// first trial on its host. What may decide a trial's regime (docs/statistics.md, What
    /// decides a regime).
    pub before: Vec<Prior>,
}

impl<'a> Table<'a> {
    /// Builds the table from the store's trials and the plan of the current spec.
    pub(crate) fn build(trials: &'a Trials, plan: &'a Plan) -> PolarsResult<Table<'a>> {
        let levels: Vec<LevelColumn> = plan
            .keys
            .iter()
            .map(|key| {
                let column =
                    if FIXED_COLUMNS.contains(&key.as_str()) { format!("{key}_level") } else { key.clone() };
                LevelColumn { key: key.clone(), column }
            })
            .collect();
        let cells = trials.cells_in(plan);

        let rows = trials.metric.len();
        let mut cell = Vec::with_capacity(rows);
        let mut trial = Vec::with_capacity(rows);
        let mut kept = Vec::with_capacity(rows);
        for i in 0..trials.len() {
            let Some(&index) = cells.get(&trials.cell[i]) else { continue };
            for row in trials.rows(i) {
                cell.push(index as u32);
                trial.push(i as u32);
                kept.push(row);
            }
        }
        let by_trial =
            |f: &dyn Fn(usize) -> u32| -> Vec<u32> { trial.iter().map(|&t| f(t as usize)).collect() };
        let by_row =
            |column: &[Name]| -> Vec<u32> { kept.iter().map(|&r| column[r].index() as u32).collect() };
        let started = Int64Chunked::from_iter_options(
            "started_at".into(),
            trial.iter().map(|&t| trials.started[t as usize].get()),
        )
        .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
        .into_column();
        let columns = vec![
            Column::new("metric".into(), by_row(&trials.metric)),
            Column::new("value".into(), kept.iter().map(|&r| trials.value[r]).collect::<Vec<f64>>()),
            Column::new("unit".into(), by_row(&trials.unit)),
            Column::new("status".into(), by_trial(&|t| trials.status[t] as u32)),
            Column::new(
                "warmup".into(),
                trial.iter().map(|&t| trials.warmup[t as usize]).collect::<Vec<bool>>(),
            ),
            Column::new("host".into(), by_trial(&|t| trials.host[t].index() as u32)),
            started,
            Column::new("cell".into(), cell),
            Column::new("repetition".into(), by_trial(&|t| trials.repetition[t])),
            Column::new("session".into(), by_trial(&|t| trials.session[t].index() as u32)),
            Column::new("round".into(), by_trial(&|t| trials.round[t])),
            Column::new("position".into(), by_trial(&|t| trials.position.get(t).copied().unwrap_or(0))),
            Column::new("trial".into(), trial),
        ];
        let frame = DataFrame::new(kept.len(), columns)?;
        Ok(Table { frame, trials, plan, levels })
    }

    /// The tidy table, for export: the levels, then [`FIXED_COLUMNS`] with their text, then
    /// `secondary`: the rows of the trials' main metrics (false), then those of their
    /// secondary metrics (true: telemetry, a gang's start skew, each member's counters;
    /// docs/design.md §8), which the analysis never groups.
    pub(crate) fn frame(&self) -> PolarsResult<DataFrame> {
        let (trials, plan) = (self.trials, self.plan);
        let mut cells: Vec<usize> =
            self.frame.column("cell")?.u32()?.into_no_null_iter().map(|c| c as usize).collect();
        let mut trial: Vec<usize> =
            self.frame.column("trial")?.u32()?.into_no_null_iter().map(|t| t as usize).collect();
        let name = |column: &str| -> PolarsResult<Vec<&str>> {
            let codes = self.frame.column(column)?.u32()?;
            Ok(codes.into_no_null_iter().map(|n| trials.names.get(trials.names.nth(n as usize))).collect())
        };
        let (mut metric, mut unit) = (name("metric")?, name("unit")?);
        let mut value: Vec<f64> = self.frame.column("value")?.f64()?.into_no_null_iter().collect();
        let main = value.len();
        let current = trials.cells_in(plan);
        for (i, name, v) in trials.secondary.iter() {
            let Some(&cell) = current.get(&trials.cell[i]) else { continue };
            let m = trials.names.get(name);
            cells.push(cell);
            trial.push(i);
            metric.push(m);
            value.push(v);
            unit.push(vocab::secondary_unit(m));
        }
        let mut columns: Vec<Column> = Vec::new();
        for (k, level) in self.levels.iter().enumerate() {
            // each cell's level (None where an `include` entry left the key out)
            let of_cell: Vec<Option<&str>> = plan
                .cells
                .iter()
                .map(|c| {
                    c.levels.iter().find(|(key, _)| usize::from(*key) == k).map(|(_, v)| v.text.as_str())
                })
                .collect();
            let values: Vec<Option<&str>> = cells.iter().map(|&c| of_cell[c]).collect();
            columns.push(Column::new(level.column.as_str().into(), values));
        }
        let cell_ids: Vec<String> = plan.cells.iter().map(|c| c.id.to_string()).collect();
        let of = |f: &dyn Fn(usize) -> u32| -> Vec<u32> { trial.iter().map(|&t| f(t)).collect() };
        let text = |f: &dyn Fn(usize) -> Name| -> Vec<&str> {
            trial.iter().map(|&t| trials.names.get(f(t))).collect()
        };
        let started = Int64Chunked::from_iter_options(
            "started_at".into(),
            trial.iter().map(|&t| trials.started[t].get()),
        )
        .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
        .into_column();
        let height = value.len();
        columns.extend([
            Column::new("metric".into(), metric),
            Column::new("value".into(), value),
            Column::new("unit".into(), unit),
            Column::new(
                "status".into(),
                trial.iter().map(|&t| status_name(trials.status[t])).collect::<Vec<_>>(),
            ),
            Column::new("warmup".into(), trial.iter().map(|&t| trials.warmup[t]).collect::<Vec<bool>>()),
            Column::new("host".into(), text(&|t| trials.host[t])),
            started,
            Column::new("cell".into(), cells.iter().map(|&c| cell_ids[c].as_str()).collect::<Vec<_>>()),
            Column::new("repetition".into(), of(&|t| trials.repetition[t])),
            Column::new("session".into(), text(&|t| trials.session[t])),
            Column::new("round".into(), of(&|t| trials.round[t])),
            trial_ids(trials, &trial),
            Column::new("secondary".into(), (0..height).map(|i| i >= main).collect::<Vec<bool>>()),
        ]);
        DataFrame::new(height, columns)
    }

    /// The analysed rows (measured, not warm-ups) grouped by cell and metric, each group's
    /// values in the order the trials started (then in log order); groups ordered by the
    /// cell's place in the plan, then metric. The report groups with [`groups`], straight
    /// from the trials; this, from the frame, is what the tests hold it to.
    #[cfg(test)]
    pub(crate) fn groups(&self) -> PolarsResult<Vec<Group>> {
        let measured =
            col("status").eq(lit(Status::Ok as u32)).or(col("status").eq(lit(Status::Imported as u32)));
        // One sort key, cell then metric, and a stable sort: the rows were built in log
        // order, so each group's rows stay in it (sorting on several columns at once makes
        // polars compare encoded rows byte by byte, the slowest part of a report).
        let key =
            (col("cell").cast(DataType::UInt64) * lit(1u64 << 32)) + col("metric").cast(DataType::UInt64);
        let analysed = self
            .frame
            .clone()
            .lazy()
            .filter(measured.and(col("warmup").not()))
            .select([
                key.alias("key"),
                col("cell"),
                col("metric"),
                col("value"),
                col("started_at"),
                col("session"),
                col("host"),
                col("position"),
                col("trial"),
            ])
            .sort(["key"], SortMultipleOptions::default().with_maintain_order(true))
            .collect()?;

        let cell = analysed.column("cell")?.u32()?;
        let metric = analysed.column("metric")?.u32()?;
        let value = analysed.column("value")?.f64()?;
        let started = analysed.column("started_at")?.datetime()?.physical();
        let session = analysed.column("session")?.u32()?;
        let host = analysed.column("host")?.u32()?;
        let position = analysed.column("position")?.u32()?;
        let trial = analysed.column("trial")?.u32()?;
        let before = before_on_host(self.trials);
        let names = &self.trials.names;

        let mut groups: Vec<(Group, Rows)> = Vec::new();
        let rows = cell
            .into_no_null_iter()
            .zip(metric.into_no_null_iter())
            .zip(value.into_no_null_iter())
            .zip(started.iter())
            .zip(session.into_no_null_iter())
            .zip(host.into_no_null_iter())
            .zip(position.into_no_null_iter())
            .zip(trial.into_no_null_iter());
        for (((((((c, m), v), t), s), h), p), i) in rows {
            let (c, m) = (c as usize, names.nth(m as usize));
            let same = groups.last().is_some_and(|(g, _)| g.cell == c && g.metric == m);
            if !same {
                let group = Group { cell: c, metric: m, values: Vec::new(), rows: Arc::default() };
                groups.push((group, Rows::default()));
            }
            let (group, rows) = groups.last_mut().expect("a group was just pushed");
            group.values.push(v);
            rows.started.push(Started::new(t));
            rows.sessions.push(names.nth(s as usize));
            rows.hosts.push(names.nth(h as usize));
            rows.positions.push(p);
            rows.before.push(before[i as usize]);
        }
        Ok(groups
            .into_iter()
            .map(|(group, rows)| {
                // each in the order its trials started (log order breaks ties; no start
                // time last)
                let mut order: Vec<usize> = (0..group.values.len()).collect();
                order.sort_by_key(|&i| rows.started[i]);
                Group {
                    values: order.iter().map(|&i| group.values[i]).collect(),
                    rows: Arc::new(Rows {
                        started: order.iter().map(|&i| rows.started[i]).collect(),
                        sessions: order.iter().map(|&i| rows.sessions[i]).collect(),
                        hosts: order.iter().map(|&i| rows.hosts[i]).collect(),
                        positions: order.iter().map(|&i| rows.positions[i]).collect(),
                        before: order.iter().map(|&i| rows.before[i]).collect(),
                    }),
                    ..group
                }
            })
            .collect())
    }
}

/// The analysed rows of the current cells grouped by cell and metric, read straight from
/// the trial columns, and the trials counted: the groups `Table::groups` makes of the frame
/// (the tests' reference), in the same order, without building it. A report holds each
/// analysed value once here, in its group, rather than in a frame of every row plus the
/// frame's filtered and sorted copies (docs/design.md §9: polars serves export, not the
/// report).
pub(crate) fn groups(trials: &Trials, plan: &Plan) -> (Vec<Group>, TrialCounts) {
    use rayon::prelude::*;
    // Cell by cell, on every core: each cell's trials in log order (`Trials::by_cell`), its
    // groups (one per metric: a few) found among its own.
    let by_cell = trials.by_cell(plan);
    let started = |t: u32| trials.started[t as usize];
    let before = before_on_host(trials);
    let mut cells: Vec<(usize, TrialCounts, Vec<Group>)> = (0..by_cell.len())
        .into_par_iter()
        .map(|k| {
            let (cell, these) = by_cell.get(k);
            // What each trial is, read first in a loop of its own: a cell's trials lie far
            // apart in the columns, and a loop that only reads lets the processor have many
            // of its cache misses under way at once.
            let what: Vec<(bool, bool, std::ops::Range<usize>)> = these
                .iter()
                .map(|&t| {
                    (
                        trials.warmup[t as usize],
                        trials.status[t as usize].is_measurement(),
                        trials.rows(t as usize),
                    )
                })
                .collect();
            let mut counts = TrialCounts::default();
            for &(warmup, measurement, _) in &what {
                match (warmup, measurement) {
                    (true, _) => counts.warmups += 1,
                    (false, true) => counts.analysed += 1,
                    (false, false) => counts.failed += 1,
                }
            }
            // a group is given room for all the cell's analysed trials at once (a metric
            // appears once a trial) rather than grown, copied at every doubling
            let mut metrics: Vec<(Name, Members)> = Vec::new();
            for (&t, (warmup, measurement, rows)) in these.iter().zip(what) {
                if warmup || !measurement {
                    continue;
                }
                for r in rows {
                    let metric = trials.metric[r];
                    let g = match metrics.iter().position(|(m, _)| *m == metric) {
                        Some(g) => g,
                        None => {
                            let room = counts.analysed;
                            let room = Members {
                                trials: Vec::with_capacity(room),
                                values: Vec::with_capacity(room),
                            };
                            metrics.push((metric, room));
                            metrics.len() - 1
                        }
                    };
                    metrics[g].1.trials.push(t);
                    metrics[g].1.values.push(trials.value[r]);
                }
            }
            // The frame's order: by cell, then metric name.
            metrics.sort_by_key(|(m, _)| m.index());
            // Each group in the order its trials started (a stable sort: log order breaks
            // ties; no start time last), and one list of rows for a cell's groups of the
            // same trials. Trials are logged as they end, so the sort is almost always a
            // check that finds them sorted, once per cell.
            let mut shared: Vec<Shared> = Vec::new();
            let groups = metrics
                .into_iter()
                .map(|(metric, Members { trials: these, values })| {
                    let known = shared.iter().position(|(t, ..)| *t == these);
                    let k = known.unwrap_or_else(|| {
                        let sorted = these.is_sorted_by_key(|&t| started(t));
                        let order = (!sorted).then(|| {
                            let mut order: Vec<usize> = (0..these.len()).collect();
                            order.sort_by_key(|&i| started(these[i]));
                            order
                        });
                        let at: Vec<usize> = match &order {
                            Some(order) => order.iter().map(|&i| these[i] as usize).collect(),
                            None => these.iter().map(|&t| t as usize).collect(),
                        };
                        let rows = Arc::new(Rows {
                            started: at.iter().map(|&t| trials.started[t]).collect(),
                            sessions: at.iter().map(|&t| trials.session[t]).collect(),
                            hosts: at.iter().map(|&t| trials.host[t]).collect(),
                            positions: at
                                .iter()
                                .map(|&t| trials.position.get(t).copied().unwrap_or(0))
                                .collect(),
                            before: at.iter().map(|&t| before[t]).collect(),
                        });
                        shared.push((these, order, rows));
                        shared.len() - 1
                    });
                    let (_, order, rows) = &shared[k];
                    let values = match order {
                        Some(order) => order.iter().map(|&i| values[i]).collect(),
                        None => values,
                    };
                    Group { cell, metric, values, rows: Arc::clone(rows) }
                })
                .collect();
            (cell, counts, groups)
        })
        .collect();
    cells.sort_unstable_by_key(|&(cell, ..)| cell);
    let mut counts = TrialCounts { stale: by_cell.outside, ..TrialCounts::default() };
    for (_, c, _) in &cells {
        counts.analysed += c.analysed;
        counts.warmups += c.warmups;
        counts.failed += c.failed;
    }
    (cells.into_iter().flat_map(|(.., groups)| groups).collect(), counts)
}

/// A cell's group's trials in log order, the order they were put in (`None`: already
/// in it), and their rows: for the cell's other groups of the same trials.
type Shared = (Vec<u32>, Option<Vec<usize>>, Arc<Rows>);

/// One group's trials (indices into the trial columns) and their values, in log order.
#[derive(Default)]
struct Members {
    trials: Vec<u32>,
    values: Vec<f64>,
}

/// The `trial` column: each row's trial id. A trial's rows lie together (its metrics, then
/// its secondary metrics together too), and an id kept as a UUID's bytes is spelt anew
/// when asked for: once per run of rows of one trial, not once per row.
fn trial_ids(trials: &Trials, trial: &[usize]) -> Column {
    let mut ids = StringChunkedBuilder::new("trial".into(), trial.len());
    let mut last: Option<(usize, std::borrow::Cow<'_, str>)> = None;
    for &t in trial {
        if last.as_ref().is_none_or(|(l, _)| *l != t) {
            last = Some((t, trials.id(t)));
        }
        ids.append_value(&last.as_ref().expect("set above").1);
    }
    ids.finish().into_column()
}

/// The spelling of a status in the store and the table (`ok`, `parse_error`, …).
pub(crate) fn status_name(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Timeout => "timeout",
        Status::ParseError => "parse_error",
        Status::Imported => "imported",
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::analyze::MemoryStore;
    use crate::store::Status;
    use vocab::{Better, MeanKind};

    /// A store with every kind of row the grouping must sort out: two metrics (one of them
    /// missing from some trials), warm-ups, failures, imports, records of a cell the plan
    /// no longer has, two sessions on two hosts, trials logged out of start order, ties
    /// and unknown start times.
    pub(in crate::analyze) fn varied(seed: u64) -> MemoryStore {
        let mut f = MemoryStore::new(
            "experiments/grouping.yaml",
            "matrix: { a: [x, y, z], b: ['1', '2'] }\nrun: \"true\"\nanalysis: { compare: [{ factor: a, baseline: x }] }\n",
        );
        f.metric("rate", "B/s", Better::Higher, MeanKind::Harmonic);
        f.metric("time", "s", Better::Lower, MeanKind::Arithmetic);
        let mut state = seed;
        let mut next = move |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let levels = [("x", "1"), ("x", "2"), ("y", "1"), ("y", "2"), ("z", "1"), ("z", "2")];
        for (session, host) in [("s1", "h1"), ("s2", "h2")] {
            f.session(session, host, &[]);
            for _ in 0..60 {
                let (a, b) = levels[next(6) as usize];
                let rate = 100.0 + next(50) as f64;
                // odd seeds: some trials without a time (their cell's two groups differ)
                if seed % 2 == 1 && next(4) == 0 {
                    f.trial(&[("a", a), ("b", b)], &[("rate", rate)]);
                } else {
                    f.trial(&[("a", a), ("b", b)], &[("time", 1.0 + next(9) as f64), ("rate", rate)]);
                }
            }
            f.record("00000000deadbeef".into(), &[("a", "x"), ("b", "1")], &[("rate", 1.0)], Status::Ok);
        }
        // another spelling of a current cell's id is that cell
        let alias = format!("0{}", f.cell(&[("a", "y"), ("b", "2")]));
        f.record(alias, &[("a", "y"), ("b", "2")], &[("rate", 120.0)], Status::Ok);
        let starts: Vec<Option<String>> = f.records.iter().map(|r| r.started_at.clone()).collect();
        for (i, r) in f.records.iter_mut().enumerate() {
            match next(10) {
                0 => r.warmup = true,
                1 => r.status = Status::Failed,
                2 => r.status = Status::Imported,
                3 => r.started_at = None,
                4 => r.started_at = starts[next(starts.len() as u64) as usize].clone(),
                5 => r.started_at = starts[i.saturating_sub(1)].clone(),
                _ => {}
            }
        }
        f.snapshot.trials = Trials::from_records(&f.records);
        f
    }

    /// The groups straight from the columns are the frame's, and the counts are the
    /// trials' own.
    #[test]
    fn grouping_the_columns_gives_the_frames_groups() {
        for seed in 0..20 {
            let f = varied(seed);
            let trials = &f.snapshot.trials;
            let (groups, counts) = groups(trials, &f.plan);
            let table = Table::build(trials, &f.plan).unwrap();
            assert_eq!(groups, table.groups().unwrap(), "seed {seed}");
            assert!(
                groups.len() > 6 && groups.iter().any(|g| g.rows.started.contains(&Started::NONE)),
                "seed {seed}"
            );
            // a cell's metrics measured by the same trials share one list of them
            let mut shared = 0;
            for (a, b) in groups.iter().zip(&groups[1..]).filter(|(a, b)| a.cell == b.cell) {
                assert_eq!(Arc::ptr_eq(&a.rows, &b.rows), a.rows == b.rows, "seed {seed}");
                shared += usize::from(Arc::ptr_eq(&a.rows, &b.rows));
            }
            assert!(seed % 2 == 1 || shared > 0, "seed {seed}: no cell has two metrics of the same trials");

            let id = |r: &crate::store::TrialRecord| u64::from_str_radix(&r.cell, 16).ok();
            let current = |r: &crate::store::TrialRecord| f.plan.cells.iter().any(|c| id(r) == Some(c.id.0));
            let stale = f.records.iter().filter(|r| !current(r)).count();
            let warmups = f.records.iter().filter(|r| current(r) && r.warmup).count();
            let failed =
                f.records.iter().filter(|r| current(r) && !r.warmup && !r.status.is_measurement()).count();
            assert_eq!(
                (counts.stale, counts.warmups, counts.failed, counts.analysed),
                (stale, warmups, failed, f.records.len() - stale - warmups - failed),
                "seed {seed}"
            );
            assert_eq!(stale, 2);

            // each cell's progress counts the same measurements, spelt either way
            let (progress, set_aside) = crate::store::progress(&f.plan, trials);
            assert_eq!(set_aside, stale);
            for (i, cell) in f.plan.cells.iter().enumerate() {
                let same = |r: &crate::store::TrialRecord| id(r) == Some(cell.id.0);
                let ok =
                    f.records.iter().filter(|r| same(r) && !r.warmup && r.status.is_measurement()).count();
                assert_eq!(progress.get(&i).map_or(0, |p| p.ok as usize), ok, "seed {seed}");
                let rate: usize =
                    groups.iter().filter(|g| g.cell == i).map(|g| g.values.len()).max().unwrap_or(0);
                assert_eq!(rate, ok, "every measured trial has a rate");
                // and is what the run keeps as it goes: each record added in log order
                let mut kept: Option<crate::store::CellProgress> = None;
                for r in f.records.iter().filter(|r| same(r)) {
                    kept.get_or_insert_default().add_record(r);
                }
                assert_eq!(progress.get(&i), kept.as_ref(), "seed {seed}, cell {i}");
            }
            // without the values (a fixed number of repetitions reads none): the same
            // counts and wall times, and no value
            let (counted, aside) = crate::store::progress_labelled(&f.plan, trials, &[], None, false);
            assert_eq!((counted.len(), aside), (progress.len(), set_aside), "seed {seed}");
            for (i, p) in &progress {
                let c = &counted[i];
                assert!(c.values.is_empty() && c.kinds.is_empty(), "seed {seed}, cell {i}");
                assert_eq!((c.attempts, c.ok, c.mean_wall), (p.attempts, p.ok, p.mean_wall), "seed {seed}");
            }
        }
    }
}
