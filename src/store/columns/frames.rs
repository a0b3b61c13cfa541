//! A part of `runs.columns/` written as Parquet, through polars: the trial columns of a
//! run of consecutive trials as four tables (docs/store.md lists their columns), each in a
//! folder of its own; `tables.rs` reads them back.
//!
//! Every text column (cell, host, session, monitor sources, metric, unit, secondary
//! name) is a polars `Enum` whose values are the trial columns' names in their order: to
//! pandas or DuckDB a dictionary-encoded string column. The status and the mean are
//! `Enum`s of their own words.

use std::fs;
use std::io;
use std::ops::Range;
use std::path::Path;

use polars::prelude::*;

use super::{FileSum, Part, hex};
use crate::store::derived::bad;
use crate::store::names::Name;
use crate::store::record::Status;
use crate::store::trials::Trials;
use vocab::MeanKind;

/// A part's four tables, each in a folder of its own: a Parquet dataset to pandas,
/// pyarrow, DuckDB or Spark (`pd.read_parquet("runs.columns/metrics")`). The trials' ids
/// are a table of their own: most of the trial table's bytes, which only `export` reads.
pub(super) const KINDS: [&str; 4] = ["trials", "metrics", "telemetry", "ids"];

/// The statuses' words, by their code.
pub(super) const STATUSES: [&str; 5] = ["ok", "failed", "timeout", "parse_error", "imported"];
pub(super) const STATUS: [Status; 5] =
    [Status::Ok, Status::Failed, Status::Timeout, Status::ParseError, Status::Imported];
/// The means' words, by their code.
pub(super) const MEANS: [&str; 2] = ["arithmetic", "harmonic"];
pub(super) const MEAN: [MeanKind; 2] = [MeanKind::Arithmetic, MeanKind::Harmonic];

fn status_code(s: Status) -> u32 {
    STATUS.iter().position(|&x| x == s).expect("every status has its word") as u32
}

fn mean_code(m: MeanKind) -> u32 {
    MEAN.iter().position(|&x| x == m).expect("every mean has its word") as u32
}

/// An `Enum` of `words`, in their order.
pub(super) fn enum_of<'a>(words: impl IntoIterator<Item = &'a str>) -> PolarsResult<DataType> {
    Ok(DataType::from_frozen_categories(FrozenCategories::new(words)?))
}

/// A column of `dtype` (an `Enum`) whose codes are `codes`.
pub(super) fn enum_column(name: &str, codes: Vec<u32>, dtype: &DataType) -> PolarsResult<Column> {
    let physical = DataType::from(dtype.cat_physical()?);
    let codes = Series::new(name.into(), codes).cast(&physical)?;
    Ok(Series::from_cats_and_dtype(&codes, dtype, true)?.into_column())
}

/// Writes the columns of trials `range` of `t` as a part in `dir`: its four files.
pub(super) fn encode(dir: &Path, t: &Trials, range: Range<usize>) -> io::Result<Part> {
    let frames = frames(t, range.clone()).map_err(io::Error::other)?;
    let mut bytes = Vec::with_capacity(KINDS.len());
    for mut frame in frames {
        let mut out = Vec::new();
        ParquetWriter::new(&mut out)
            // Snappy: every Parquet reader has it (pyarrow, DuckDB, Spark, R's arrow)
            .with_compression(ParquetCompression::Snappy)
            .with_statistics(StatisticsOptions::empty())
            .finish(&mut frame)
            .map_err(io::Error::other)?;
        bytes.push(out);
    }
    // named by the first trial and the contents: two writers of the same part write the
    // same files, and a part written anew never overwrites one a manifest lists
    let tag = &hex(&blake3::hash(&bytes[0]))[..12];
    let mut files = Vec::with_capacity(KINDS.len());
    for (kind, bytes) in KINDS.into_iter().zip(&bytes) {
        let name = format!("{kind}/part-{:010}-{tag}.parquet", range.start);
        let path = dir.join(&name);
        fs::create_dir_all(dir.join(kind))?;
        let temporary = dir.join(format!("{name}.{}.tmp", std::process::id()));
        fs::write(&temporary, bytes).and_then(|()| fs::rename(&temporary, &path)).inspect_err(|_| {
            let _ = fs::remove_file(&temporary);
        })?;
        files.push(FileSum { name, len: bytes.len() as u64, blake3: hex(&blake3::hash(bytes)) });
    }
    let rows = t.rows_of(range.clone());
    let values = t.secondary.values_of(range.clone());
    let files: [FileSum; 4] = files.try_into().map_err(|_| bad())?;
    Ok(Part { trials: range.len(), rows: rows.len(), values: values.len(), files })
}

/// The four tables of trials `range`: `trials`, `metrics`, `telemetry`, `ids`.
fn frames(t: &Trials, range: Range<usize>) -> PolarsResult<[DataFrame; 4]> {
    let names = enum_of(t.names.0.items.iter().map(|s| &**s))?;
    let statuses = enum_of(STATUSES)?;
    let means = enum_of(MEANS)?;
    let codes = |column: &[Name]| -> Vec<u32> { column.iter().map(|n| n.index() as u32).collect() };
    let r = range.clone();
    let started =
        Int64Chunked::from_iter_options("started_at".into(), t.started[r.clone()].iter().map(|s| s.get()))
            .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
            .into_column();
    let trial: Vec<u32> = r.clone().map(|i| i as u32).collect();
    let trials = DataFrame::new(
        r.len(),
        vec![
            Column::new("trial".into(), trial.clone()),
            enum_column("cell", codes(&t.cell[r.clone()]), &names)?,
            enum_column("host", codes(&t.host[r.clone()]), &names)?,
            enum_column("session", codes(&t.session[r.clone()]), &names)?,
            enum_column("status", t.status[r.clone()].iter().map(|&s| status_code(s)).collect(), &statuses)?,
            Column::new("warmup".into(), t.warmup[r.clone()].to_vec()),
            Column::new("repetition".into(), t.repetition[r.clone()].to_vec()),
            Column::new("round".into(), t.round[r.clone()].to_vec()),
            Column::new("position".into(), t.position[r.clone()].to_vec()),
            started,
            Column::new("wall_time".into(), t.wall_time[r.clone()].to_vec()),
            enum_column("monitored", codes(&t.monitored[r.clone()]), &names)?,
            Column::new("telemetry_shape".into(), t.secondary.shape[r.clone()].to_vec()),
        ],
    )?;
    let rows = t.rows_of(r.clone());
    let row_trial: Vec<u32> = r.clone().flat_map(|i| t.rows(i).map(move |_| i as u32)).collect();
    let metrics = DataFrame::new(
        rows.len(),
        vec![
            Column::new("trial".into(), row_trial),
            enum_column("metric", codes(&t.metric[rows.clone()]), &names)?,
            Column::new("value".into(), t.value[rows.clone()].to_vec()),
            enum_column("unit", codes(&t.unit[rows.clone()]), &names)?,
            enum_column("mean", t.mean[rows].iter().map(|&m| mean_code(m)).collect(), &means)?,
        ],
    )?;
    let (mut value_trial, mut value_name, mut value) = (Vec::new(), Vec::new(), Vec::new());
    for i in r.clone() {
        let (names, values) = t.secondary.of(i);
        for (n, v) in names.iter().zip(values) {
            value_trial.push(i as u32);
            value_name.push(n.index() as u32);
            value.push(*v);
        }
    }
    let telemetry = DataFrame::new(
        value.len(),
        vec![
            Column::new("trial".into(), value_trial),
            enum_column("name", value_name, &names)?,
            Column::new("value".into(), value),
        ],
    )?;
    let ids = DataFrame::new(
        r.len(),
        vec![
            Column::new("trial".into(), trial),
            Column::new("id".into(), r.map(|i| t.id(i).into_owned()).collect::<Vec<String>>()),
        ],
    )?;
    Ok([trials, metrics, telemetry, ids])
}
