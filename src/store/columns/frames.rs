//! A part of `runs.columns/` as Parquet, through polars: the trial columns of a run of
//! consecutive trials as four tables (docs/store.md lists their columns), each in a
//! folder of its own, and back.
//!
//! Every text column (cell, host, session, monitor sources, metric, unit, secondary
//! name) is a polars `Enum` whose values are the trial columns' names in their order, so
//! its codes are the names' numbers, written as integers: to pandas or DuckDB a
//! dictionary-encoded string column. The status and the mean are `Enum`s of their own
//! words. A part is read back column by column through polars' public `ParquetReader`
//! (a projection of one column, the file's metadata parsed once), each column let go once
//! copied into the trial columns (the four tables and the trial table's text and numbers
//! on all cores). A text column's codes are its `Enum`'s own numbers, taken as they are
//! once its categories are found to be the manifest's names (or the first of them).

use std::fs;
use std::io::{self, Cursor};
use std::ops::Range;
use std::path::Path;

use polars::io::parquet::read::FileMetadata;
use polars::prelude::*;

use super::{FileSum, Manifest, Part, damaged, hex};
use crate::store::derived::bad;
use crate::store::ids::Ids;
use crate::store::names::{Interned, Name, Names};
use crate::store::record::Status;
use crate::store::secondary::SecondaryMetrics;
use crate::store::trials::{Failed, Needed, Started, Trials};
use vocab::MeanKind;

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
    // each name once: a repeated one is a damaged manifest
    let names = m.names.iter().map(|s| s.clone().into_boxed_str()).collect();
    let names = Names(Interned::from_items(names).ok_or_else(bad)?);
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
    t.names = names;
    t.keep(needed);
    Ok(t)
}

/// A part's file, when it is as the manifest says.
fn file(dir: &Path, f: &FileSum) -> io::Result<Vec<u8>> {
    // a name that is not of a part's file in the folder is a damaged manifest
    let (kind, file) = f.name.split_once('/').ok_or_else(bad)?;
    if !KINDS.contains(&kind) || !file.starts_with("part-") || file.contains(['/', '\\']) {
        return Err(bad());
    }
    let bytes = fs::read(dir.join(&f.name))?;
    if bytes.len() as u64 != f.len || hex(&blake3::hash(&bytes)) != f.blake3 {
        return Err(bad());
    }
    Ok(bytes)
}

/// A part's Parquet file as read: its bytes and metadata, from which each column is
/// decoded on its own by polars' reader, copied out and let go ([`Table::column`]):
/// beside the file, the columns being copied (two of the trial table's at once), not a
/// frame of them all.
struct Table {
    bytes: Vec<u8>,
    metadata: Arc<FileMetadata>,
}

/// The Parquet file `f`, with `rows` rows.
fn table(dir: &Path, f: &FileSum, rows: usize) -> io::Result<Table> {
    let bytes = file(dir, f)?;
    let metadata = ParquetReader::new(Cursor::new(&*bytes)).get_metadata().map_err(damaged)?.clone();
    if metadata.num_rows != rows {
        return Err(bad());
    }
    // a column chunk outside the file is a damaged file, not a panic (polars' reader
    // slices the file by these ranges unchecked)
    let len = bytes.len() as u64;
    let inside = metadata
        .row_groups
        .iter()
        .flat_map(|g| g.byte_ranges_iter())
        .all(|r| r.start <= r.end && r.end <= len);
    if !inside {
        return Err(bad());
    }
    Ok(Table { bytes, metadata })
}

/// Whether `dtype` is an `Enum` whose categories are `words`, in their order, or the
/// first of them (`prefix`).
fn categories_are<'a>(dtype: &DataType, words: impl ExactSizeIterator<Item = &'a str>, prefix: bool) -> bool {
    let DataType::Enum(categories, _) = dtype else { return false };
    let categories = categories.categories();
    let fits = if prefix { categories.len() <= words.len() } else { categories.len() == words.len() };
    fits && categories.values_iter().zip(words).all(|(c, w)| c == w)
}

impl Table {
    /// Column `name`, without nulls unless `nulls`, through polars' Parquet reader.
    fn column(&self, name: &str, nulls: bool) -> io::Result<Series> {
        let mut reader = ParquetReader::new(Cursor::new(&*self.bytes))
            .with_columns(Some(vec![name.to_owned()]))
            .read_parallel(ParallelStrategy::None);
        reader.set_metadata(self.metadata.clone());
        let frame = reader.finish().map_err(damaged)?;
        if frame.width() != 1 || frame.height() != self.metadata.num_rows {
            return Err(bad());
        }
        let column = frame.into_columns().pop().ok_or_else(bad)?;
        let series = column.take_materialized_series();
        if !nulls && series.null_count() != 0 {
            return Err(bad());
        }
        Ok(series)
    }

    /// The `Enum` column `name` as its codes: the numbers of its words among `words`,
    /// which its categories must be (or the first of, with `prefix`). polars looks each
    /// row's text up among the categories as it reads the column; a text no category
    /// holds becomes a null, refused here.
    fn codes<'a>(
        &self,
        name: &str,
        words: impl ExactSizeIterator<Item = &'a str>,
        prefix: bool,
    ) -> io::Result<Vec<u32>> {
        let series = self.column(name, false)?;
        if !categories_are(series.dtype(), words, prefix) {
            return Err(bad());
        }
        let codes = series.to_physical_repr().cast(&DataType::UInt32).map_err(damaged)?;
        let codes = codes.u32().map_err(damaged)?;
        let mut out = Vec::with_capacity(codes.len());
        codes.data_views().for_each(|v| out.extend_from_slice(v));
        Ok(out)
    }

    /// The column `name` of `T`s, without nulls.
    fn values<T: PolarsNumericType>(&self, name: &str) -> io::Result<Vec<T::Native>> {
        let series = self.column(name, false)?;
        let values = series.unpack::<T>().map_err(damaged)?;
        let mut out = Vec::with_capacity(values.len());
        values.data_views().for_each(|v| out.extend_from_slice(v));
        Ok(out)
    }

    /// The boolean column `name`, without nulls.
    fn flags(&self, name: &str) -> io::Result<Vec<bool>> {
        let series = self.column(name, false)?;
        Ok(series.bool().map_err(damaged)?.iter().map(Option::unwrap_or_default).collect())
    }

    /// The starts (`started_at`, µs since the epoch, UTC): none where null, or
    /// `i64::MIN`, a time no record's start reads as.
    fn starts(&self) -> io::Result<Vec<Started>> {
        let series = self.column("started_at", true)?;
        if !matches!(series.dtype(), DataType::Datetime(TimeUnit::Microseconds, _)) {
            return Err(bad());
        }
        let micros = series.datetime().map_err(damaged)?.physical();
        let mut out = Vec::with_capacity(micros.len());
        match micros.null_count() {
            0 => micros.data_views().for_each(|v| out.extend(v.iter().map(|&s| Started::new(Some(s))))),
            _ => out.extend(micros.iter().map(Started::new)),
        }
        Ok(out)
    }

    /// An `Enum` column over the names: their numbers.
    fn names(&self, name: &str, names: &Names) -> io::Result<Vec<Name>> {
        let words = names.0.items.iter().map(|s| &**s);
        Ok(self.codes(name, words, true)?.into_iter().map(|c| Name::new(c as usize)).collect())
    }
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

/// The trial table of `part`: the columns `needed` says.
fn trial_columns(dir: &Path, part: &Part, needed: Needed, names: &Names) -> io::Result<TrialColumns> {
    let table = table(dir, &part.files[0], part.trials)?;
    let more = needed != Needed::Progress;
    // the text columns on one core, the numbers on another
    let (text, numbers) = rayon::join(
        || -> io::Result<TrialColumns> {
            Ok(TrialColumns {
                cell: table.names("cell", names)?,
                session: table.names("session", names)?,
                status: table
                    .codes("status", STATUSES.into_iter(), false)?
                    .into_iter()
                    .map(|c| STATUS[c as usize])
                    .collect(),
                host: if more { table.names("host", names)? } else { Vec::new() },
                monitored: if more { table.names("monitored", names)? } else { Vec::new() },
                ..TrialColumns::default()
            })
        },
        || -> io::Result<TrialColumns> {
            Ok(TrialColumns {
                warmup: table.flags("warmup")?,
                repetition: table.values::<UInt32Type>("repetition")?,
                started: table.starts()?,
                wall_time: table.values::<Float64Type>("wall_time")?,
                shapes: if more { table.values::<UInt32Type>("telemetry_shape")? } else { Vec::new() },
                position: if more { table.values::<UInt32Type>("position")? } else { Vec::new() },
                ..TrialColumns::default()
            })
        },
    );
    let text = text?;
    let mut out = TrialColumns {
        cell: text.cell,
        session: text.session,
        status: text.status,
        host: text.host,
        monitored: text.monitored,
        ..numbers?
    };
    if needed == Needed::All {
        out.round = table.values::<UInt32Type>("round")?;
        drop(table);
        // the ids' strings, which only `export` reads, through polars
        let id = self::table(dir, &part.files[3], part.trials)?.column("id", false)?;
        let mut ids = Ids::default();
        for id in id.str().map_err(damaged)?.iter().map(Option::unwrap_or_default) {
            ids.push(id);
        }
        out.ids = Some(ids);
    }
    Ok(out)
}

/// The metric table of `part`: the columns `needed` says.
fn metric_columns(dir: &Path, part: &Part, needed: Needed, names: &Names) -> io::Result<MetricColumns> {
    let table = table(dir, &part.files[1], part.rows)?;
    Ok(MetricColumns {
        trial: table.values::<UInt32Type>("trial")?,
        metric: table.names("metric", names)?,
        value: table.values::<Float64Type>("value")?,
        mean: table.codes("mean", MEANS.into_iter(), false)?.into_iter().map(|c| MEAN[c as usize]).collect(),
        unit: if needed == Needed::All { table.names("unit", names)? } else { Vec::new() },
    })
}

/// Appends the columns of `part`, whose first trial is `first`, to `t` (its names the
/// manifest's `names`), and its trials' secondary shapes to `shapes`. The tables
/// are read and taken apart at once, each column's arrays let go as soon as it is copied
/// out.
fn decode_part(
    dir: &Path,
    part: &Part,
    needed: Needed,
    names: &Names,
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
            _ => table(dir, &part.files[2], part.values)?.values::<Float64Type>("value").map(Some),
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
