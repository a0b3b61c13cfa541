//! A part of `runs.columns/` read back ([`decode`]): column by column through polars'
//! public `ParquetReader` (a projection of one column, the file's metadata parsed once),
//! each column let go once copied into the trial columns (the four tables and the trial
//! table's text and numbers on all cores). A text column's codes are its `Enum`'s own
//! numbers, taken as they are once its categories are found to be the manifest's names
//! (or the first of them).

use std::fs;
use std::io::{self, Cursor};
use std::path::Path;

use polars::io::parquet::read::FileMetadata;
use polars::prelude::*;

use super::frames::{KINDS, MEAN, MEANS, STATUS, STATUSES};
use super::{FileSum, Manifest, Part, damaged, hex};
use crate::store::derived::bad;
use crate::store::ids::Ids;
use crate::store::names::{Interned, Name, Names};
use crate::store::record::Status;
use crate::store::secondary::SecondaryMetrics;
use crate::store::trials::{Failed, Needed, Started, Trials};
use vocab::MeanKind;

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

#[cfg(test)]
mod tests {
    use super::super::frames::{enum_column, enum_of};
    use super::*;

    /// `frame` as a part's table of trials in `dir`, in row groups of `group` rows.
    fn written(dir: &Path, frame: &mut DataFrame, group: usize) -> FileSum {
        let mut out = Vec::new();
        ParquetWriter::new(&mut out).with_row_group_size(Some(group)).finish(frame).unwrap();
        let name = "trials/part-0000000000-test.parquet".to_owned();
        fs::create_dir_all(dir.join("trials")).unwrap();
        fs::write(dir.join(&name), &out).unwrap();
        FileSum { name, len: out.len() as u64, blake3: hex(&blake3::hash(&out)) }
    }

    #[test]
    fn a_text_column_reads_as_its_words_numbers_across_row_groups() {
        let dir = tempfile::tempdir().unwrap();
        let words = ["a", "b", "c"];
        let codes: Vec<u32> = (0..20_000).map(|i| [1, 0, 2, 0][(i / 5_000 + i) % 4]).collect();
        let cell = enum_column("cell", codes.clone(), &enum_of(words).unwrap()).unwrap();
        let numbers: Vec<u32> = (0..20_000).collect();
        let mut frame = DataFrame::new(20_000, vec![cell, Column::new("trial".into(), &numbers)]).unwrap();
        // three row groups, each with its own dictionary
        let f = written(dir.path(), &mut frame, 7_000);
        let read = table(dir.path(), &f, 20_000).unwrap();
        assert_eq!(read.codes("cell", words.into_iter(), false).unwrap(), codes);
        assert_eq!(read.codes("cell", ["a", "b", "c", "d"].into_iter(), true).unwrap(), codes);
        assert_eq!(read.values::<UInt32Type>("trial").unwrap(), numbers);
        // categories that are not the words, a column of another type, a missing one
        assert!(read.codes("cell", ["a", "b"].into_iter(), true).is_err());
        assert!(read.codes("cell", ["a", "c", "b"].into_iter(), false).is_err());
        assert!(read.values::<Float64Type>("trial").is_err());
        assert!(read.values::<UInt32Type>("round").is_err());
        // a file of another number of rows, or not as the manifest says
        assert!(table(dir.path(), &f, 19_999).is_err());
        assert!(table(dir.path(), &FileSum { len: f.len - 1, ..f.clone() }, 20_000).is_err());
    }
}
