//! `margin calibrate`: the calibration suite, printed as a table (or JSON).

use std::io::Write;
use std::time::Instant;

use super::{Error, io};
use crate::calibrate::{self, table};

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub calibrate: calibrate::Options,
    pub json: bool,
}

/// Runs the suite; the table's rows appear as their scenarios finish.
pub fn run(options: &Options, out: &mut dyn Write) -> Result<(), Error> {
    let started = Instant::now();
    let selected = calibrate::select(&options.calibrate.filters).len();
    if !options.json && selected > 0 {
        out.write_all(table::header(&options.calibrate, selected).as_bytes()).map_err(io)?;
        out.flush().map_err(io)?;
    }
    let mut written = Ok(());
    let report = calibrate::run(&options.calibrate, |result| {
        if !options.json && written.is_ok() {
            written = out.write_all(table::row(result).as_bytes()).and_then(|()| out.flush());
        }
    })
    .map_err(Error::Input)?;
    written.map_err(io)?;
    if options.json {
        serde_json::to_writer_pretty(&mut *out, &report).map_err(|e| io(e.into()))?;
        writeln!(out).map_err(io)?;
    } else {
        let seconds = started.elapsed().as_secs_f64();
        if !report.scenarios.is_empty() {
            out.write_all(table::footer(&report.scenarios, seconds).as_bytes()).map_err(io)?;
        }
        out.write_all(calibrate::answers::tables(&report.answers).as_bytes()).map_err(io)?;
        if let Some(r) = &report.regimes {
            out.write_all(calibrate::regimes::tables(r, report.experiments).as_bytes()).map_err(io)?;
        }
        if let Some(d) = &report.drift {
            out.write_all(calibrate::drift::tables(d, report.experiments).as_bytes()).map_err(io)?;
        }
        if let Some(o) = &report.order {
            out.write_all(calibrate::order::tables(o, report.experiments).as_bytes()).map_err(io)?;
        }
    }
    Ok(())
}
