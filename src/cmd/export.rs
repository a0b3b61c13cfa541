//! `margin export NAME --format …`: the tidy table of a store (one row per trial ×
//! metric) to stdout or a file, from the store only.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use super::args::Reports;
use super::target::resolve;
use super::{Error, io, load_all, to_stderr};
use crate::analyze::{self, Format, Table};

/// `margin export`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The experiment file, a store folder or a name, as for `report`.
    pub target: PathBuf,
    /// csv, parquet or ndjson.
    #[arg(long, value_parser = parse_format)]
    pub format: Format,
    /// Write to this file instead of stdout (parquet needs it on a terminal).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub reports: Reports,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse().map_err(|e: <Format as std::str::FromStr>::Err| e.to_string())
}

/// `margin export`: the tidy table to stdout or a file.
pub fn run(args: &ExportArgs) -> Result<(), Error> {
    let ExportArgs { target, format, output, reports: Reports { root: reports } } = args;
    let (format, output) = (*format, output.as_deref());
    let t = resolve(target, reports, "export")?;
    let (exp, plan) = load_all(std::slice::from_ref(&t.file), usize::MAX)?.remove(0);
    // stdout may be the table itself
    to_stderr(format_args!("{}: {}", exp.name, t.used()));
    let store = t.store(reports, &exp);
    let snapshot = store.load()?;
    let table = Table::build(&snapshot.trials, &plan)
        .map_err(|source| Error::Table { experiment: exp.name.clone(), source })?;
    match output {
        Some(path) => {
            let f = std::fs::File::create(path)
                .map_err(|source| Error::File { path: path.to_path_buf(), source })?;
            analyze::export(&table, format, std::io::BufWriter::new(f))
                .map_err(|source| Error::Export { path: Some(path.to_path_buf()), source })
        }
        None if format == Format::Parquet && std::io::stdout().is_terminal() => Err(Error::Input(
            "parquet is binary: write it to a file with `-o FILE` (or redirect stdout)".into(),
        )),
        None => {
            let mut stdout = Watched { inner: std::io::stdout().lock(), error: None };
            let exported = analyze::export(&table, format, &mut stdout);
            match (exported, stdout.error) {
                // polars words a failed write its own way: a closed pipe must stay one
                (_, Some(e)) => Err(Error::Output(e)),
                (Err(source), None) => Err(Error::Export { path: None, source }),
                (Ok(()), None) => stdout.inner.flush().map_err(io),
            }
        }
    }
}

/// A writer that keeps (a copy of) the first error of the writer it wraps, for writers
/// whose callers turn it into an error of their own.
struct Watched<W> {
    inner: W,
    error: Option<std::io::Error>,
}

impl<W: Write> Watched<W> {
    fn watch<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        // `write_all` retries an interrupted write itself
        if let Err(e) = &result
            && self.error.is_none()
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
        }
        result
    }
}

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.watch(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.watch(result)
    }
}
