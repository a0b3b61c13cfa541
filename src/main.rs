//! The `margin` binary: parse arguments, call the library, print errors, pick the exit code.

use std::io::{BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use margin::cli::Cli;
use margin::cmd;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let mut out = BufWriter::new(stdout.lock());
    let result = cli.command.run(terminal, &mut out);
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
