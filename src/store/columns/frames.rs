//! A part of `runs.columns/` as Parquet, through polars: the trial columns of a run of
//! consecutive trials as four tables (docs/store.md lists their columns), each in a
//! folder of its own, and back.
//!
//! Every text column (cell, host, session, monitor sources, metric, unit, secondary
//! name) is a polars `Enum` whose values are the trial columns' names in their order, so
//! its codes are the names' numbers: written and read as integers, no text hashed, and to
//! pandas or DuckDB a dictionary-encoded string column. The status and the mean are
//! `Enum`s of their own words.

use std::fs;
use std::io::{self, Cursor};
use std::ops::Range;
use std::path::Path;

use polars::prelude::*;

use super::{FileSum, Manifest, Part, damaged, hex};
use crate::store::derived::bad;
use crate::store::ids::Ids;
use crate::store::names::{Interned, Name, Names};
use crate::store::record::Status;
use crate::store::secondary::SecondaryMetrics;
use crate::store::trials::{Failed, Needed, Started, Trials};
use crate::vocab::MeanKind;

/// A part's four tables, each in a folder of its own: a Parquet dataset to pandas,
/// pyarrow, DuckDB or Spark (`pd.read_parquet("runs.columns/metrics")`). The trials' ids
/// are a table of their own: most of the trial table's bytes, which only `export` reads.
pub(super) const KINDS: [&str; 4] = ["trials", "metrics", "telemetry", "ids"];

/// The statuses' words, by their code.
const STATUSES: [&str; 5] = ["ok", "failed", "timeout", "parse_error", "imported"];
const STATUS: [Status; 5] =
    [Status::Ok, Status::Failed, Status::Timeout, Status::ParseError, Status::Imported];
/// The means' words, by their code.
const MEANS: [&str; 2] = ["arithmetic", "harmonic"];
const MEAN: [MeanKind; 2] = [MeanKind::Arithmetic, MeanKind::Harmonic];

fn status_code(s: Status) -> u32 {
    STATUS.iter().position(|&x| x == s).expect("every status has its word") as u32
}

fn mean_code(m: MeanKind) -> u32 {
    MEAN.iter().position(|&x| x == m).expect("every mean has its word") as u32
}

/// An `Enum` of `words`, in their order.
fn enum_of<'a>(words: impl IntoIterator<Item = &'a str>) -> PolarsResult<DataType> {
    Ok(DataType::from_frozen_categories(FrozenCategories::new(words)?))
}

/// A column of `dtype` (an `Enum`) whose codes are `codes`.
fn enum_column(name: &str, codes: Vec<u32>, dtype: &DataType) -> PolarsResult<Column> {
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

/// The trial columns of the parts `m` lists, those `needed` says (the others empty).
pub(super) fn decode(dir: &Path, m: &Manifest, needed: Needed) -> io::Result<Trials> {
    let names: Vec<Box<str>> = m.names.iter().map(|s| s.clone().into_boxed_str()).collect();
    let mut t = Trials::default();
    let (mut first, mut shapes_of) = (0usize, Vec::new());
    for part in &m.parts {
        decode_part(dir, part, needed, &names, first, &mut t, &mut shapes_of)?;
        first += part.trials;
    }
    let count = names.len();
    let name = |n: u32| if (n as usize) < count { Ok(Name::new(n as usize)) } else { Err(bad()) };
    t.metrics = m.metrics.iter().map(|(n, i)| Ok((name(*n)?, i.clone()))).collect::<io::Result<_>>()?;
    t.failed = m
        .failed
        .iter()
        .map(|f| Failed {
            trial: f.trial,
            id: (needed == Needed::Report).then(|| f.id.clone()),
            exit_code: f.exit_code,
            error: f.error.clone(),
            started_at: f.started_at.clone(),
        })
        .collect();
    t.warnings = m.warnings.iter().cloned().collect();
    t.flags = m.flags.iter().map(|(trial, f)| Ok((*trial, name(*f)?))).collect::<io::Result<_>>()?;
    if needed != Needed::Progress {
        let shapes = m
            .shapes
            .iter()
            .map(|s| s.iter().map(|&n| name(n)).collect::<io::Result<Vec<Name>>>().map(Vec::into_boxed_slice))
            .collect::<io::Result<Vec<_>>>()?;
        let values = std::mem::take(&mut t.secondary.values);
        t.secondary = SecondaryMetrics::from_parts(shapes, shapes_of, values).ok_or_else(bad)?;
    }
    // each name once: a repeated one is a damaged manifest
    t.names = Names(Interned::from_items(names).ok_or_else(bad)?);
    t.keep(needed);
    Ok(t)
}

/// A part's file, when it is as the manifest says.
fn file(dir: &Path, f: &FileSum) -> io::Result<Cursor<Vec<u8>>> {
    // a name that is not of a part's file in the folder is a damaged manifest
    let (kind, file) = f.name.split_once('/').ok_or_else(bad)?;
    if !KINDS.contains(&kind) || !file.starts_with("part-") || file.contains(['/', '\\']) {
        return Err(bad());
    }
    let bytes = fs::read(dir.join(&f.name))?;
    if bytes.len() as u64 != f.len || hex(&blake3::hash(&bytes)) != f.blake3 {
        return Err(bad());
    }
    Ok(Cursor::new(bytes))
}

/// The columns named of the Parquet file `f`, with `rows` rows.
fn table(dir: &Path, f: &FileSum, columns: &[&str], rows: usize) -> io::Result<DataFrame> {
    let frame = ParquetReader::new(file(dir, f)?)
        .with_columns(Some(columns.iter().map(|c| c.to_string()).collect()))
        .finish()
        .map_err(damaged)?;
    if frame.height() != rows || frame.width() != columns.len() {
        return Err(bad());
    }
    Ok(frame)
}

/// The trial table's columns of a part, as read (those not needed empty).
#[derive(Default)]
struct TrialColumns {
    cell: Vec<Name>,
    session: Vec<Name>,
    status: Vec<Status>,
    warmup: Vec<bool>,
    repetition: Vec<u32>,
    started: Vec<Started>,
    wall_time: Vec<f64>,
    host: Vec<Name>,
    monitored: Vec<Name>,
    shapes: Vec<u32>,
    position: Vec<u32>,
    ids: Option<Ids>,
    round: Vec<u32>,
}

/// The metric table's columns of a part, as read.
#[derive(Default)]
struct MetricColumns {
    trial: Vec<u32>,
    metric: Vec<Name>,
    value: Vec<f64>,
    mean: Vec<MeanKind>,
    unit: Vec<Name>,
}

/// Column `name` of `frame`, in one chunk; no nulls but in `started_at`.
fn col(frame: &DataFrame, name: &str) -> io::Result<Series> {
    let c = frame.column(name).map_err(damaged)?;
    if c.null_count() != 0 && name != "started_at" {
        return Err(bad());
    }
    Ok(c.as_materialized_series().clone())
}

/// The values of a column without nulls, chunk by chunk: a read's pages are chunks of their
/// own, copied once into the vector (a rechunk first copied them all into one more).
fn values<T: PolarsNumericType>(ca: &ChunkedArray<T>) -> Vec<T::Native> {
    let mut out = Vec::with_capacity(ca.len());
    for chunk in ca.downcast_iter() {
        out.extend_from_slice(chunk.values());
    }
    out
}

/// The codes of a column without nulls of a narrower type, as `u32`, chunk by chunk.
fn widened<T: PolarsNumericType<Native: Into<u32>>>(ca: &ChunkedArray<T>) -> Vec<u32> {
    ca.downcast_iter().flat_map(|chunk| chunk.values().iter().map(|&c| c.into())).collect()
}

/// A `UInt32` column's values.
fn small(s: &Series) -> io::Result<Vec<u32>> {
    Ok(values(s.u32().map_err(damaged)?))
}

/// A `Float64` column's values.
fn numbers(s: &Series) -> io::Result<Vec<f64>> {
    Ok(values(s.f64().map_err(damaged)?))
}

/// An `Enum` column over the names: their numbers.
fn of_names(s: &Series, names: &[Box<str>]) -> io::Result<Vec<Name>> {
    Ok(enum_codes(s, names.iter().map(|s| &**s))?.into_iter().map(|c| Name::new(c as usize)).collect())
}

/// The trial table of `part`: the columns `needed` says.
fn trial_columns(dir: &Path, part: &Part, needed: Needed, names: &[Box<str>]) -> io::Result<TrialColumns> {
    let mut columns = vec!["cell", "session", "status", "warmup", "repetition", "started_at", "wall_time"];
    if needed != Needed::Progress {
        columns.extend(["host", "monitored", "telemetry_shape", "position"]);
    }
    if needed == Needed::All {
        columns.push("round");
    }
    let frame = table(dir, &part.files[0], &columns, part.trials)?;
    let get = |name: &str| col(&frame, name);
    let status = enum_codes(&get("status")?, STATUSES)?;
    let started = get("started_at")?;
    let started = started.datetime().map_err(damaged)?;
    if started.time_unit() != TimeUnit::Microseconds {
        return Err(bad());
    }
    let mut out = TrialColumns {
        cell: of_names(&get("cell")?, names)?,
        session: of_names(&get("session")?, names)?,
        status: status.into_iter().map(|c| STATUS[c as usize]).collect(),
        // no nulls: `col` checked
        warmup: get("warmup")?.bool().map_err(damaged)?.iter().map(Option::unwrap_or_default).collect(),
        repetition: small(&get("repetition")?)?,
        // i64::MIN is no time a record's start reads as: none
        started: match started.physical().null_count() {
            0 => started
                .physical()
                .downcast_iter()
                .flat_map(|chunk| chunk.values().iter())
                .map(|&s| Started::new(Some(s).filter(|&s| s != i64::MIN)))
                .collect(),
            _ => started.physical().iter().map(|s| Started::new(s.filter(|&s| s != i64::MIN))).collect(),
        },
        wall_time: numbers(&get("wall_time")?)?,
        ..TrialColumns::default()
    };
    if needed != Needed::Progress {
        out.host = of_names(&get("host")?, names)?;
        out.monitored = of_names(&get("monitored")?, names)?;
        out.shapes = small(&get("telemetry_shape")?)?;
        out.position = small(&get("position")?)?;
    }
    if needed == Needed::All {
        let ids_table = table(dir, &part.files[3], &["id"], part.trials)?;
        let mut ids = Ids::default();
        for id in col(&ids_table, "id")?.str().map_err(damaged)?.iter().map(Option::unwrap_or_default) {
            ids.push(id);
        }
        out.ids = Some(ids);
        out.round = small(&get("round")?)?;
    }
    Ok(out)
}

/// The metric table of `part`: the columns `needed` says.
fn metric_columns(dir: &Path, part: &Part, needed: Needed, names: &[Box<str>]) -> io::Result<MetricColumns> {
    let mut columns = vec!["trial", "metric", "value", "mean"];
    if needed == Needed::All {
        columns.push("unit");
    }
    let frame = table(dir, &part.files[1], &columns, part.rows)?;
    let get = |name: &str| col(&frame, name);
    let mean = enum_codes(&get("mean")?, MEANS)?;
    Ok(MetricColumns {
        trial: small(&get("trial")?)?,
        metric: of_names(&get("metric")?, names)?,
        value: numbers(&get("value")?)?,
        mean: mean.into_iter().map(|c| MEAN[c as usize]).collect(),
        unit: if needed == Needed::All { of_names(&get("unit")?, names)? } else { Vec::new() },
    })
}

/// Appends the columns of `part`, whose first trial is `first`, to `t` (its names the
/// manifest's `names`), and its trials' secondary shapes to `shapes`. The tables
/// are read and taken apart at once, each frame let go as soon as its columns are out.
fn decode_part(
    dir: &Path,
    part: &Part,
    needed: Needed,
    names: &[Box<str>],
    first: usize,
    t: &mut Trials,
    shapes: &mut Vec<u32>,
) -> io::Result<()> {
    let ((trials, metrics), telemetry) = rayon::join(
        || {
            rayon::join(
                || trial_columns(dir, part, needed, names),
                || metric_columns(dir, part, needed, names),
            )
        },
        || match needed {
            Needed::Progress => Ok(None),
            _ => numbers(&col(&table(dir, &part.files[2], &["value"], part.values)?, "value")?).map(Some),
        },
    );
    let (trials, metrics, telemetry) = (trials?, metrics?, telemetry?);
    join(&mut t.cell, trials.cell);
    join(&mut t.session, trials.session);
    join(&mut t.status, trials.status);
    join(&mut t.warmup, trials.warmup);
    join(&mut t.repetition, trials.repetition);
    join(&mut t.started, trials.started);
    join(&mut t.wall_time, trials.wall_time);
    join(&mut t.host, trials.host);
    join(&mut t.monitored, trials.monitored);
    join(shapes, trials.shapes);
    join(&mut t.position, trials.position);
    if let Some(ids) = trials.ids {
        t.ids.append(ids);
    }
    join(&mut t.round, trials.round);

    // each trial's rows: the metrics' trials in order, each one of the part's
    let rows_before = t.metric.len();
    let row_trial = metrics.trial;
    let mut at = 0;
    for i in first..first + part.trials {
        while at < row_trial.len() && row_trial[at] as usize == i {
            at += 1;
        }
        t.row_end.push(rows_before + at);
    }
    if at != row_trial.len() {
        return Err(bad());
    }
    join(&mut t.metric, metrics.metric);
    join(&mut t.value, metrics.value);
    join(&mut t.mean, metrics.mean);
    join(&mut t.unit, metrics.unit);
    if let Some(values) = telemetry {
        join(&mut t.secondary.values, values);
    }
    Ok(())
}

/// `more` after `column`'s values: taken whole when `column` is empty (the first part,
/// often the only one), not copied.
fn join<T>(column: &mut Vec<T>, mut more: Vec<T>) {
    if column.is_empty() {
        *column = more;
    } else {
        column.append(&mut more);
    }
}

/// The codes of the `Enum` column `s`, when its values are the first of `words`.
fn enum_codes<'a>(s: &Series, words: impl IntoIterator<Item = &'a str>) -> io::Result<Vec<u32>> {
    let DataType::Enum(categories, _) = s.dtype() else { return Err(bad()) };
    let mut words = words.into_iter();
    if !categories.categories().values_iter().all(|c| words.next() == Some(c)) {
        return Err(bad());
    }
    let physical = s.to_physical_repr();
    let codes: Vec<u32> = match physical.dtype() {
        DataType::UInt8 => widened(physical.u8().map_err(damaged)?),
        DataType::UInt16 => widened(physical.u16().map_err(damaged)?),
        _ => values(physical.u32().map_err(damaged)?),
    };
    let len = categories.categories().len() as u32;
    if codes.iter().any(|&c| c >= len) {
        return Err(bad());
    }
    Ok(codes)
}
