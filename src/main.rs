//! The `margin` binary: parse arguments, call the library, print errors, pick the exit code.

use std::io::{BufWriter, IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use margin::cli::Cli;
use margin::cmd;

/// jemalloc rather than glibc's malloc (Cargo.toml says why).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, which it reads from this symbol when it starts (its `malloc_conf`):
/// pages freed go back to the system after 50 ms unused, not after its default decay of
/// 10 s, which outlives a report; an arena per physical core (`percpu_arena:phycpu`)
/// rather than four per core, so that what one thread frees another reuses; and memory
/// asked for in huge pages where the kernel has them (`thp:always`): a report keeps little
/// more than its live heap resident, without a tenth of its CPU going to the kernel taking
/// pages back and zeroing new ones (the figures: docs/performance.md, Memory and the
/// allocator). A C string, as jemalloc reads it; the one `unsafe` outside the spawn module, an attribute:
/// the name is jemalloc's, and nothing else defines it.
#[allow(unsafe_code)]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 66] = b"dirty_decay_ms:50,muzzy_decay_ms:0,percpu_arena:phycpu,thp:always\0";

fn main() -> ExitCode {
    // a descriptor margin's parent left open must not reach a command margin runs (a
    // `restart` that leaves a daemon behind would hold it for ever); best effort
    let _ = margin::run::process::keep_inherited_descriptors();
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
