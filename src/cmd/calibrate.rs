//! `margin calibrate`: the calibration suite, printed as a table (or JSON).

use std::io::Write;
use std::time::Instant;

use super::{Error, io};
use crate::calibrate::{self, table};

/// `margin calibrate`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CalibrateArgs {
    /// Simulated experiments per scenario and true change.
    #[arg(long, value_name = "N", default_value_t = calibrate::DEFAULT_EXPERIMENTS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub experiments: u64,
    /// Seed of the simulation: the same seed gives the same numbers.
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Run only the scenarios whose name contains this (`^` anchors it at the name's
    /// start, `$` at its end; repeat for several).
    #[arg(long, value_name = "FILTER")]
    pub scenario: Vec<String>,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Runs the suite; the table's rows appear as their scenarios finish.
pub fn run(args: &CalibrateArgs, out: &mut dyn Write) -> Result<(), Error> {
    let options =
        calibrate::Options { experiments: args.experiments, seed: args.seed, filters: args.scenario.clone() };
    let json = args.json;
    let started = Instant::now();
    let selected = calibrate::select(&options.filters).len();
    if !json && selected > 0 {
        out.write_all(table::header(&options, selected).as_bytes()).map_err(io)?;
        out.flush().map_err(io)?;
    }
    let mut written = Ok(());
    let report = calibrate::run(&options, |result| {
        if !json && written.is_ok() {
            written = out.write_all(table::row(result).as_bytes()).and_then(|()| out.flush());
        }
    })
    .map_err(|e| Error::Input(e.to_string()))?;
    written.map_err(io)?;
    if json {
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
        if let Some(s) = &report.series {
            out.write_all(calibrate::series::tables(s, report.experiments).as_bytes()).map_err(io)?;
        }
        if let Some(b) = &report.bisect {
            out.write_all(calibrate::bisect::tables(b, report.experiments).as_bytes()).map_err(io)?;
        }
        if let Some(r) = &report.runs {
            out.write_all(calibrate::runs::tables(r, report.experiments).as_bytes()).map_err(io)?;
        }
    }
    Ok(())
}
