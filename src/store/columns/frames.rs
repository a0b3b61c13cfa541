//! A part of `runs.columns/` as Parquet, through polars: the trial columns of a run of
//! consecutive trials as four tables (docs/store.md lists their columns), each in a
//! folder of its own, and back.
//!
//! Every text column (cell, host, session, monitor sources, metric, unit, secondary
//! name) is a polars `Enum` whose values are the trial columns' names in their order, so
//! its codes are the names' numbers, written as integers: to pandas or DuckDB a
//! dictionary-encoded string column. The status and the mean are `Enum`s of their own
//! words. A part is read back column by column through polars' Parquet decoder as Arrow
//! arrays, each let go once copied into the trial columns (the four tables and the trial
//! table's text and numbers on all cores); a text column's dictionary values are looked up
//! once each, as rows use them, not row by row.

use std::fs;
use std::io::{self, Cursor};
use std::ops::Range;
use std::path::Path;

use polars::io::parquet::read::_internal::to_deserializer;
use polars::io::parquet::read::FileMetadata;
use polars::prelude::*;
use polars_arrow::array::{
    Array, BooleanArray, DictionaryArray, DictionaryKey, PrimitiveArray, Utf8ViewArray,
};
use polars_arrow::datatypes::{ArrowDataType, IntegerType, TimeUnit as ArrowTimeUnit};
use polars_arrow::types::NativeType;
use polars_buffer::Buffer;

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
fn file(dir: &Path, f: &FileSum) -> io::Result<Buffer<u8>> {
    // a name that is not of a part's file in the folder is a damaged manifest
    let (kind, file) = f.name.split_once('/').ok_or_else(bad)?;
    if !KINDS.contains(&kind) || !file.starts_with("part-") || file.contains(['/', '\\']) {
        return Err(bad());
    }
    let bytes = fs::read(dir.join(&f.name))?;
    if bytes.len() as u64 != f.len || hex(&blake3::hash(&bytes)) != f.blake3 {
        return Err(bad());
    }
    Ok(Buffer::from_vec(bytes))
}

/// A part's Parquet file as read: its bytes and metadata, from which each column is
/// decoded on its own, as Arrow arrays, copied out and let go ([`Table::arrays`]): beside
/// the file, the arrays of the columns being copied (two of the trial table's at once),
/// not a frame of them all.
struct Table {
    bytes: Buffer<u8>,
    metadata: Arc<FileMetadata>,
    schema: Arc<ArrowSchema>,
}

/// The Parquet file `f`, with `rows` rows.
fn table(dir: &Path, f: &FileSum, rows: usize) -> io::Result<Table> {
    let bytes = file(dir, f)?;
    let mut reader = ParquetReader::new(Cursor::new(bytes.clone()));
    let metadata = reader.get_metadata().map_err(damaged)?.clone();
    let schema = reader.schema().map_err(damaged)?;
    if metadata.num_rows != rows {
        return Err(bad());
    }
    Ok(Table { bytes, metadata, schema })
}

/// The number of a word among `words`, for a column of a few words of its own.
fn among<'a>(words: &'a [&str]) -> impl Fn(&str) -> Option<u32> + 'a {
    move |w| words.iter().position(|&x| x == w).map(|i| i as u32)
}

impl Table {
    /// Column `name`'s pages, as Arrow arrays: a row group's after another's.
    fn arrays(&self, name: &str) -> io::Result<Vec<Box<dyn Array>>> {
        let field = self.schema.get(name).ok_or_else(bad)?;
        let mut out = Vec::new();
        for group in &self.metadata.row_groups {
            // a column chunk outside the file is a damaged file, not a panic
            let columns = group
                .columns_under_root_iter(name)
                .ok_or_else(bad)?
                .map(|meta| {
                    let range = meta.byte_range();
                    let (start, end) = (usize::try_from(range.start), usize::try_from(range.end));
                    match (start, end) {
                        (Ok(start), Ok(end)) if start <= end && end <= self.bytes.len() => {
                            Ok((meta, self.bytes.clone().sliced(start..end)))
                        }
                        _ => Err(bad()),
                    }
                })
                .collect::<io::Result<_>>()?;
            out.extend(to_deserializer(columns, field.clone(), None).map_err(damaged)?.0);
        }
        if out.iter().map(|a| a.len()).sum::<usize>() != self.metadata.num_rows {
            return Err(bad());
        }
        Ok(out)
    }

    /// The `Enum` column `name` as the numbers `find` gives its words. Its pages are Arrow dictionary
    /// arrays, and each row's key is mapped through its dictionary, a look-up per value
    /// used: polars' own import of an `Enum` hashes every row's text (8 % of a report's
    /// CPU at 10^6 trials).
    fn codes(&self, name: &str, find: &dyn Fn(&str) -> Option<u32>) -> io::Result<Vec<u32>> {
        let mut out = Vec::with_capacity(self.metadata.num_rows);
        for array in self.arrays(name)? {
            match array.dtype() {
                ArrowDataType::Dictionary(IntegerType::UInt8, ..) => keyed::<u8>(&*array, find, &mut out)?,
                ArrowDataType::Dictionary(IntegerType::UInt16, ..) => keyed::<u16>(&*array, find, &mut out)?,
                ArrowDataType::Dictionary(IntegerType::UInt32, ..) => keyed::<u32>(&*array, find, &mut out)?,
                _ => return Err(bad()),
            }
        }
        Ok(out)
    }

    /// The column `name` of `T`s, without nulls.
    fn values<T: NativeType>(&self, name: &str) -> io::Result<Vec<T>> {
        let mut out = Vec::with_capacity(self.metadata.num_rows);
        for array in self.arrays(name)? {
            let array = array.as_any().downcast_ref::<PrimitiveArray<T>>().ok_or_else(bad)?;
            if array.null_count() != 0 {
                return Err(bad());
            }
            out.extend_from_slice(array.values());
        }
        Ok(out)
    }

    /// The boolean column `name`, without nulls.
    fn flags(&self, name: &str) -> io::Result<Vec<bool>> {
        let mut out = Vec::with_capacity(self.metadata.num_rows);
        for array in self.arrays(name)? {
            let array = array.as_any().downcast_ref::<BooleanArray>().ok_or_else(bad)?;
            if array.null_count() != 0 {
                return Err(bad());
            }
            out.extend(array.values_iter());
        }
        Ok(out)
    }

    /// The starts (`started_at`, µs since the epoch, UTC): none where null, or
    /// `i64::MIN`, a time no record's start reads as.
    fn starts(&self) -> io::Result<Vec<Started>> {
        let mut out = Vec::with_capacity(self.metadata.num_rows);
        for array in self.arrays("started_at")? {
            if !matches!(array.dtype(), ArrowDataType::Timestamp(ArrowTimeUnit::Microsecond, _)) {
                return Err(bad());
            }
            let array = array.as_any().downcast_ref::<PrimitiveArray<i64>>().ok_or_else(bad)?;
            let start = |s: i64| Started::new(Some(s).filter(|&s| s != i64::MIN));
            match array.null_count() {
                0 => out.extend(array.values().iter().map(|&s| start(s))),
                _ => out.extend(array.iter().map(|s| s.map_or(Started::new(None), |&s| start(s)))),
            }
        }
        Ok(out)
    }

    /// An `Enum` column over the names: their numbers.
    fn names(&self, name: &str, names: &Names) -> io::Result<Vec<Name>> {
        let find = |w: &str| names.find(w).map(|n| n.index() as u32);
        Ok(self.codes(name, &find)?.into_iter().map(|c| Name::new(c as usize)).collect())
    }
}

/// The rows of the dictionary array `array` (keys of type `K`, no nulls, its values
/// text) as the numbers `find` gives its words, after `out`'s.
fn keyed<K: DictionaryKey>(
    array: &dyn Array,
    find: &dyn Fn(&str) -> Option<u32>,
    out: &mut Vec<u32>,
) -> io::Result<()> {
    let array = array.as_any().downcast_ref::<DictionaryArray<K>>().ok_or_else(bad)?;
    let values = array.values().as_any().downcast_ref::<Utf8ViewArray>().ok_or_else(bad)?;
    if array.null_count() != 0 || values.null_count() != 0 {
        return Err(bad());
    }
    // each dictionary value looked up when a row first uses it (a names column's
    // dictionary is every name of the store, most of them another part's or another
    // column's); a value that is not one of the words is a damaged file
    const UNSEEN: u32 = u32::MAX;
    let mut number = vec![UNSEEN; values.len()];
    for &key in array.keys().values().iter() {
        let key: usize = key.try_into().map_err(|_| bad())?;
        let slot = number.get_mut(key).ok_or_else(bad)?;
        if *slot == UNSEEN {
            *slot = find(values.value(key)).ok_or_else(bad)?;
        }
        out.push(*slot);
    }
    Ok(())
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
                    .codes("status", &among(&STATUSES))?
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
                repetition: table.values("repetition")?,
                started: table.starts()?,
                wall_time: table.values("wall_time")?,
                shapes: if more { table.values("telemetry_shape")? } else { Vec::new() },
                position: if more { table.values("position")? } else { Vec::new() },
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
        out.round = table.values("round")?;
        drop(table);
        // the ids' strings, which only `export` reads, through polars
        let ids_file = ParquetReader::new(Cursor::new(file(dir, &part.files[3])?))
            .with_columns(Some(vec!["id".to_string()]))
            .finish()
            .map_err(damaged)?;
        let id = ids_file.column("id").map_err(damaged)?;
        if ids_file.height() != part.trials || id.null_count() != 0 {
            return Err(bad());
        }
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
        trial: table.values("trial")?,
        metric: table.names("metric", names)?,
        value: table.values("value")?,
        mean: table.codes("mean", &among(&MEANS))?.into_iter().map(|c| MEAN[c as usize]).collect(),
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
            _ => table(dir, &part.files[2], part.values)?.values("value").map(Some),
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
