//! The tidy table: one row per trial × metric of the current plan's cells, the levels as
//! columns (DESIGN §8). It is what `margin export` writes and what the summary groups.
//!
//! Warm-ups and failed trials stay in the table, marked by `warmup` and `status`, so an
//! export holds everything the store measured for the current spec; [`Table::groups`]
//! takes only the analysed rows. Records of cells the plan no longer has (the command or
//! parse rules changed, so their numbers measure something else) are left out and
//! counted.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use polars::prelude::*;
use serde::Serialize;

use crate::plan::Plan;
use crate::store::{Status, TrialRecord};

/// Columns every table has besides the levels, in the order they follow them.
pub const FIXED_COLUMNS: [&str; 12] = [
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

/// How many trials the analysis leaves out, and why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TrialCounts {
    /// Measured trials of current cells: their metrics enter the statistics.
    pub analysed: usize,
    /// Warm-up trials (recorded, never analysed).
    pub warmups: usize,
    /// Failed, timed-out or unparsed trials (not warm-ups).
    pub failed: usize,
    /// Records whose cell id the plan no longer has: set aside, the command changed.
    pub stale: usize,
}

/// A level key and the column that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelColumn {
    pub key: String,
    /// The key itself, or `<key>_level` when the key is also a fixed column's name (the
    /// reserved factor `host`, say).
    pub column: String,
}

/// The tidy table of one experiment's store.
#[derive(Debug, Clone)]
pub struct Table {
    frame: DataFrame,
    pub levels: Vec<LevelColumn>,
    pub counts: TrialCounts,
}

/// The analysed values of one cell and metric, in the order the trials started.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Index of the cell in [`Plan::cells`].
    pub cell: usize,
    pub metric: String,
    pub values: Vec<f64>,
    /// Start times (µs since the epoch), parallel to `values`; `None` when unreadable.
    pub started: Vec<Option<i64>>,
    /// Shared rather than copied: a store names a handful of sessions and hosts, and
    /// may hold a million trials.
    pub sessions: Vec<Arc<str>>,
    pub hosts: Vec<Arc<str>>,
}

impl Table {
    /// Builds the table from the store's trial records and the plan of the current spec.
    pub fn build(trials: &[TrialRecord], plan: &Plan) -> PolarsResult<Table> {
        let cells: HashMap<String, usize> =
            plan.cells.iter().enumerate().map(|(i, c)| (c.id.to_string(), i)).collect();
        let levels: Vec<LevelColumn> = plan
            .keys
            .iter()
            .map(|key| {
                let column =
                    if FIXED_COLUMNS.contains(&key.as_str()) { format!("{key}_level") } else { key.clone() };
                LevelColumn { key: key.clone(), column }
            })
            .collect();

        // Each cell's level per key (None where an `include` entry left a key out).
        let cell_levels: Vec<Vec<Option<&str>>> = plan
            .cells
            .iter()
            .map(|cell| {
                let mut row = vec![None; plan.keys.len()];
                for (k, v) in &cell.levels {
                    row[usize::from(*k)] = Some(v.text.as_str());
                }
                row
            })
            .collect();

        let mut counts = TrialCounts::default();
        let mut rows = Rows::default();
        let mut level_values: Vec<Vec<Option<&str>>> = vec![Vec::new(); plan.keys.len()];
        for trial in trials {
            let Some(&index) = cells.get(&trial.cell) else {
                counts.stale += 1;
                continue;
            };
            match (trial.warmup, trial.status.is_measurement()) {
                (true, _) => counts.warmups += 1,
                (false, true) => counts.analysed += 1,
                (false, false) => counts.failed += 1,
            }
            let started = trial
                .started_at
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| t.as_microsecond());
            for (metric, &value) in &trial.metrics {
                for (column, level) in level_values.iter_mut().zip(&cell_levels[index]) {
                    column.push(*level);
                }
                rows.push(trial, metric, value, started);
            }
        }

        let height = rows.value.len();
        let mut columns: Vec<Column> = levels
            .iter()
            .zip(level_values)
            .map(|(level, values)| Column::new(level.column.as_str().into(), values))
            .collect();
        columns.extend(rows.into_columns());
        Ok(Table { frame: DataFrame::new(height, columns)?, levels, counts })
    }

    /// The whole table, for export.
    pub fn frame(&self) -> &DataFrame {
        &self.frame
    }

    /// The analysed rows (measured, not warm-ups) grouped by cell and metric, each group's
    /// values in the order the trials started; groups ordered by cell id, then metric.
    pub fn groups(&self, plan: &Plan) -> PolarsResult<Vec<Group>> {
        let measured = col("status")
            .eq(lit(status_name(Status::Ok)))
            .or(col("status").eq(lit(status_name(Status::Imported))));
        let analysed = self
            .frame
            .clone()
            .lazy()
            .filter(measured.and(col("warmup").not()))
            .select([
                col("cell"),
                col("metric"),
                col("value"),
                col("started_at"),
                col("session"),
                col("host"),
                col("trial"),
            ])
            .sort(
                ["cell", "metric", "started_at", "trial"],
                SortMultipleOptions::default().with_nulls_last(true),
            )
            .collect()?;

        let cells: HashMap<String, usize> =
            plan.cells.iter().enumerate().map(|(i, c)| (c.id.to_string(), i)).collect();
        let cell = analysed.column("cell")?.str()?;
        let metric = analysed.column("metric")?.str()?;
        let value = analysed.column("value")?.f64()?;
        let started = analysed.column("started_at")?.datetime()?.physical();
        let session = analysed.column("session")?.str()?;
        let host = analysed.column("host")?.str()?;

        let mut names: HashSet<Arc<str>> = HashSet::new();
        let mut shared = |name: Option<&str>| -> Arc<str> {
            let name = name.unwrap_or_default();
            if let Some(known) = names.get(name) {
                return known.clone();
            }
            let new: Arc<str> = name.into();
            names.insert(new.clone());
            new
        };
        let mut groups: Vec<Group> = Vec::new();
        let rows = cell
            .iter()
            .zip(metric.iter())
            .zip(value.iter())
            .zip(started.iter())
            .zip(session.iter())
            .zip(host.iter());
        for (((((c, m), v), t), s), h) in rows {
            let (Some(c), Some(m), Some(v)) = (c, m, v) else { continue };
            let Some(&index) = cells.get(c) else { continue };
            let same = groups.last().is_some_and(|g| g.cell == index && g.metric == m);
            if !same {
                groups.push(Group {
                    cell: index,
                    metric: m.to_owned(),
                    values: Vec::new(),
                    started: Vec::new(),
                    sessions: Vec::new(),
                    hosts: Vec::new(),
                });
            }
            let group = groups.last_mut().expect("a group was just pushed");
            group.values.push(v);
            group.started.push(t);
            group.sessions.push(shared(s));
            group.hosts.push(shared(h));
        }
        Ok(groups)
    }
}

/// The spelling of a status in the store and the table (`ok`, `parse_error`, …).
pub fn status_name(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Timeout => "timeout",
        Status::ParseError => "parse_error",
        Status::Imported => "imported",
    }
}

/// The fixed columns, filled row by row. The text borrows from the records: with a
/// million trials, an owned copy of every string would cost more than the table itself.
#[derive(Default)]
struct Rows<'a> {
    metric: Vec<&'a str>,
    value: Vec<f64>,
    unit: Vec<&'a str>,
    status: Vec<&'static str>,
    warmup: Vec<bool>,
    host: Vec<&'a str>,
    started_at: Vec<Option<i64>>,
    cell: Vec<&'a str>,
    repetition: Vec<u32>,
    session: Vec<&'a str>,
    round: Vec<u32>,
    trial: Vec<&'a str>,
}

impl<'a> Rows<'a> {
    fn push(&mut self, trial: &'a TrialRecord, metric: &'a str, value: f64, started: Option<i64>) {
        self.metric.push(metric);
        self.value.push(value);
        self.unit.push(trial.metric_info.get(metric).map_or("", |i| i.unit.as_str()));
        self.status.push(status_name(trial.status));
        self.warmup.push(trial.warmup);
        self.host.push(&trial.host);
        self.started_at.push(started);
        self.cell.push(&trial.cell);
        self.repetition.push(trial.repetition);
        self.session.push(&trial.session);
        self.round.push(trial.round);
        self.trial.push(&trial.trial);
    }

    /// The columns in [`FIXED_COLUMNS`] order; `started_at` as a UTC timestamp, which
    /// parquet, pandas and DuckDB all read as such.
    fn into_columns(self) -> Vec<Column> {
        let started = Int64Chunked::from_iter_options("started_at".into(), self.started_at.into_iter())
            .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
            .into_column();
        vec![
            Column::new("metric".into(), self.metric),
            Column::new("value".into(), self.value),
            Column::new("unit".into(), self.unit),
            Column::new("status".into(), self.status),
            Column::new("warmup".into(), self.warmup),
            Column::new("host".into(), self.host),
            started,
            Column::new("cell".into(), self.cell),
            Column::new("repetition".into(), self.repetition),
            Column::new("session".into(), self.session),
            Column::new("round".into(), self.round),
            Column::new("trial".into(), self.trial),
        ]
    }
}
