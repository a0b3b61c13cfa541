//! `just stress`: the robustness campaign at full size against a margin binary (README,
//! the store; docs/store.md, Guarantees) — kill -9 at 100 random moments, a full disk at
//! 10 sizes, an I/O error at 100 of a run's write and sync calls, 50 readers during a
//! write, and the fuzzer of the parsers, the trial log and
//! the experiment loader. Prints one line of figures per part and exits 1 when any
//! guarantee broke. `just test` runs a reduced slice (tests/integration/campaign.rs).
//!
//! usage: stress MARGIN [--seed S] [--cases N] [--keep DIR] [PART…]
//!        PART: kill, disk, faults, readers, fuzz, replay (default: all)

#[path = "../tests/campaign/mod.rs"]
mod campaign;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The margin binary under test.
    margin: PathBuf,
    /// The seed of every random choice: the same seed, the same moments and inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Mutated inputs per fuzzer target.
    #[arg(long, default_value_t = 3000)]
    cases: usize,
    /// Keep the inputs that break a guarantee here (tests/data/campaign makes them
    /// regression tests).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// The parts to run.
    #[arg(value_parser = ["kill", "disk", "faults", "readers", "fuzz", "replay"])]
    parts: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let margin = campaign::Margin { bin: std::fs::canonicalize(&args.margin).unwrap_or(args.margin.clone()) };
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = match tempfile::tempdir() {
        Ok(root) => root,
        Err(e) => {
            eprintln!("stress: a temporary folder: {e}");
            return ExitCode::from(2);
        }
    };
    let wants = |part: &str| args.parts.is_empty() || args.parts.iter().any(|p| p == part);
    let mut broken = 0;
    let mut report = |tally: campaign::Tally| {
        tally.print();
        broken += tally.failures.len();
    };
    if wants("kill") {
        let cfg = campaign::kill::Config { stores: 25, kills: 4, repetitions: 30, seed: args.seed };
        report(campaign::kill::campaign(&margin, root.path(), &cfg));
    }
    if wants("disk") {
        let cfg = campaign::disk::Config { sizes: 10, smallest: 32, largest: 2048, seed: args.seed };
        report(campaign::disk::campaign(&margin, root.path(), &cfg));
        report(campaign::disk::read_only(&margin, root.path()));
    }
    if wants("faults") {
        report(campaign::faults::campaign(&margin, root.path(), &campaign::faults::Config { points: 100 }));
    }
    if wants("readers") {
        let cfg = campaign::readers::Config { readers: 50, seed: args.seed };
        report(campaign::readers::campaign(&margin, root.path(), &cfg));
    }
    if wants("fuzz") {
        let cfg = campaign::fuzz::Config {
            cases: args.cases,
            seed: args.seed,
            source: source.clone(),
            keep: args.keep.clone(),
        };
        report(campaign::fuzz::campaign(&margin, root.path(), &cfg));
    }
    if wants("replay") {
        report(campaign::fuzz::replay(&margin, root.path(), &source.join("tests/data/campaign")));
    }
    if broken > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
