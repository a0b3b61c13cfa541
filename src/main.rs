//! The `margin` binary: parse arguments, call the library, print errors, pick the exit code.

use std::io::{BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use margin::cli::{Cli, Command};
use margin::cmd;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = BufWriter::new(stdout.lock());
    let result = match &cli.command {
        Command::Check { files, max_cells } => cmd::check::run(files, *max_cells, &mut out),
        Command::Plan { file, all, json, max_cells, reports } => {
            let options = cmd::plan::PlanOptions {
                file,
                all: *all,
                json: *json,
                max_cells: *max_cells,
                terminal,
                reports: &reports.root,
            };
            cmd::plan::run(&options, &mut out)
        }
        Command::Run {
            files,
            fresh,
            seed,
            repetitions,
            dry_run,
            keep_workdir,
            host,
            label,
            max_cells,
            reports,
        } => {
            let options = cmd::run::Options {
                files: files.clone(),
                reports: reports.root.clone(),
                run: margin::run::RunOptions {
                    seed: *seed,
                    repetitions: *repetitions,
                    keep_workdir: *keep_workdir,
                    fresh: *fresh,
                    host: host.clone(),
                    label: label.clone(),
                },
                dry_run: *dry_run,
                max_cells: *max_cells,
                terminal,
            };
            // Lines of a long run should appear as they happen, not when the buffer fills.
            let mut direct = std::io::stdout();
            cmd::run::run(&options, &mut direct)
        }
        Command::Import { file, set, host, started_at, raw, member, reports } => {
            let options = cmd::import::Options {
                file: file.clone(),
                set: set.clone(),
                host: host.clone(),
                started_at: *started_at,
                raw: raw.clone(),
                members: member.clone(),
                reports: reports.root.clone(),
            };
            cmd::import::run(&options, &mut out)
        }
        Command::Reparse { file, reports } => cmd::reparse::run(file, &reports.root, &mut out),
        Command::Status { files, reports } => cmd::status::run(files, &reports.root, &mut out),
        Command::Report { target, json, reports } => {
            cmd::report::run(target, *json, terminal, &reports.root, &mut out)
        }
        Command::Compare { targets, baseline, candidate, fail_on, json, reports } => {
            let options = cmd::compare::Options {
                targets: targets.clone(),
                baseline: baseline.clone(),
                candidate: candidate.clone(),
                fail_on: *fail_on,
                json: *json,
                reports: reports.root.clone(),
            };
            cmd::compare::run(&options, &mut out)
        }
        Command::Export { target, format, output, reports } => {
            cmd::report::export(target, *format, output.as_deref(), &reports.root)
        }
        Command::Schema => cmd::schema(&mut out).map_err(cmd::Error::Output),
        Command::Calibrate { experiments, seed, scenario, json } => {
            let options = cmd::calibrate::Options {
                calibrate: margin::calibrate::Options {
                    experiments: *experiments,
                    seed: *seed,
                    filters: scenario.clone(),
                },
                json: *json,
            };
            cmd::calibrate::run(&options, &mut out)
        }
    };
    let flushed = out.flush();
    match result.and_then(|()| flushed.map_err(cmd::Error::Output)) {
        Ok(()) => ExitCode::SUCCESS,
        // `margin plan … | head` closes the pipe early: that is not a failure.
        Err(e) if e.is_closed_stdout() => ExitCode::SUCCESS,
        Err(e) => {
            // `eprintln!` would panic on a closed stderr; there is nowhere left to say it
            let _ = writeln!(std::io::stderr(), "{}", e.message());
            ExitCode::from(e.exit_code())
        }
    }
}
