//! `margin export`: the tidy table written for pandas, R, DuckDB or Spark.

use std::fmt;
use std::io::Write;
use std::str::FromStr;

use polars::prelude::*;

use super::table::Table;

/// The formats `margin export --format` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    /// Binary: the caller should refuse to write it to a terminal.
    Parquet,
    /// One JSON object per line.
    Ndjson,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Csv, Format::Parquet, Format::Ndjson];

    pub fn name(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Parquet => "parquet",
            Format::Ndjson => "ndjson",
        }
    }

    /// Whether the output is text that may go to standard output.
    pub fn is_text(self) -> bool {
        self != Format::Parquet
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown export format `{0}`; expected one of: csv, parquet, ndjson")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// Writes the whole table (warm-ups and failed trials included, marked by `warmup` and
/// `status`) to `out` in `format`.
pub(crate) fn export<W: Write>(table: &Table, format: Format, out: W) -> PolarsResult<()> {
    let mut frame = table.frame()?;
    match format {
        Format::Csv => CsvWriter::new(out).include_header(true).finish(&mut frame),
        // Snappy rather than polars' default zstd: every parquet reader has it (Spark,
        // DuckDB, pandas through pyarrow or fastparquet, R's arrow).
        Format::Parquet => ParquetWriter::new(out)
            .with_compression(ParquetCompression::Snappy)
            .finish(&mut frame)
            .map(|_| ()),
        Format::Ndjson => JsonWriter::new(out).with_json_format(JsonFormat::JsonLines).finish(&mut frame),
    }
}
