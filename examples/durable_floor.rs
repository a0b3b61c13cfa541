//! The floor under `margin run`'s per-trial cost: what any tool must spend to run a
//! trial and make a record of it durable before the next one starts, and nothing else.
//!
//! Each of N trials spawns `true` (output to /dev/null, as `hyperfine -N` does), waits
//! for it, writes one 740-byte line (the size of margin's record for it) over zeros laid
//! ahead, and `fdatasync`s. `bench/run.sh` times it beside `margin run` and hyperfine:
//! margin ÷ floor is what margin itself adds, floor ÷ hyperfine what durability costs on
//! the disk under TMPDIR.
//!
//! At the end it prints `own_cpu_s S`: the CPU time of its own thread (from
//! /proc/thread-self/schedstat, in nanoseconds), without the children's — what
//! `bench/run.sh` sets against margin's own CPU time per trial, which no disk's flush
//! jitter moves.
//!
//! With a third argument `env`, each spawn also adds one variable to the child's
//! environment, as margin adds its store's marker to every command's: std then copies the
//! whole environment into a new one at every spawn, which shows what that costs.
//!
//! usage: durable_floor DIR [N] [env]   (default N: 1000; the log goes in DIR and is removed)

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};

const LINE: usize = 740;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: durable_floor DIR [N] [env]");
        return ExitCode::from(2);
    };
    let n: u64 = match args.next().map(|n| n.parse()) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("durable_floor: N: {e}");
            return ExitCode::from(2);
        }
    };
    let env = args.next().is_some_and(|a| a == "env");
    match run(&dir, n, env) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("durable_floor: {}: {e}", dir.display());
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &std::path::Path, n: u64, env: bool) -> std::io::Result<()> {
    let path = dir.join("durable_floor.log");
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
    file.write_all_at(&vec![0; n as usize * LINE + 4096], 0)?;
    file.sync_all()?;
    let mut line = [b'x'; LINE];
    line[LINE - 1] = b'\n';
    // found on PATH once, as margin does: a bare name would be looked for at every spawn
    let program = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("true"))
        .find(|path| path.is_file())
        .ok_or_else(|| std::io::Error::other("`true` is not on PATH"))?;
    let marker = dir.display().to_string();
    for i in 0..n {
        let mut command = Command::new(&program);
        if env {
            command.env("MARGIN_TRIAL_STORE", &marker);
        }
        let status = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        if !status.success() {
            return Err(std::io::Error::other(format!("`true` ended with {status}")));
        }
        file.write_all_at(&line, i * LINE as u64)?;
        file.sync_data()?;
    }
    std::fs::remove_file(&path)?;
    // the first field: nanoseconds this thread has run (user and system)
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    let ns: u64 = schedstat.split_whitespace().next().and_then(|f| f.parse().ok()).unwrap_or(0);
    println!("own_cpu_s {:.6}", ns as f64 / 1e9);
    Ok(())
}
