//! The robustness campaign's reduced slice (tests/campaign/, `just stress` at full size):
//! few kills, sizes, readers and fuzzed inputs, at a fixed seed, through the real binary.
//! Each part asserts that no guarantee broke, and prints its figures.

#[path = "../campaign/mod.rs"]
mod harness;

use std::path::{Path, PathBuf};

fn margin() -> harness::Margin {
    harness::Margin { bin: PathBuf::from(assert_cmd::cargo::cargo_bin!("margin")) }
}

fn holds(tally: harness::Tally) {
    tally.print();
    assert!(tally.failures.is_empty(), "{}\n{}", tally.line, tally.failures.join("\n"));
}

#[test]
fn kill_9_at_random_moments_loses_nothing() {
    let root = tempfile::tempdir().unwrap();
    let cfg = harness::kill::Config { stores: 2, kills: 3, repetitions: 8, seed: 7 };
    holds(harness::kill::campaign(&margin(), root.path(), &cfg));
}

#[test]
fn a_full_disk_at_three_sizes_stops_naming_the_file_and_resumes() {
    let root = tempfile::tempdir().unwrap();
    let cfg = harness::disk::Config { sizes: 3, smallest: 48, largest: 1024, seed: 7 };
    holds(harness::disk::campaign(&margin(), root.path(), &cfg));
}

#[test]
fn an_io_error_at_a_dozen_write_and_sync_calls_is_reported_or_recovered() {
    let root = tempfile::tempdir().unwrap();
    holds(harness::faults::campaign(&margin(), root.path(), &harness::faults::Config { points: 12 }));
}

#[test]
fn a_read_only_store_refuses_the_run_naming_the_file_and_loses_nothing() {
    let root = tempfile::tempdir().unwrap();
    holds(harness::disk::read_only(&margin(), root.path()));
}

#[test]
fn readers_during_a_write_read_whole_stores() {
    let root = tempfile::tempdir().unwrap();
    holds(harness::readers::campaign(
        &margin(),
        root.path(),
        &harness::readers::Config { readers: 12, seed: 7 },
    ));
}

#[test]
fn fuzzed_outputs_logs_and_experiments_break_no_guarantee() {
    let root = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf();
    let cfg = harness::fuzz::Config { cases: 60, seed: 7, source, keep: None };
    holds(harness::fuzz::campaign(&margin(), root.path(), &cfg));
}

#[test]
fn the_fuzzers_kept_inputs_still_break_no_guarantee() {
    let root = tempfile::tempdir().unwrap();
    let kept = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/campaign");
    let tally = harness::fuzz::replay(&margin(), root.path(), &kept);
    assert!(
        tally.line.contains(" replayed") && !tally.line.starts_with("fuzzer's kept inputs: 0 "),
        "{}",
        tally.line
    );
    holds(tally);
}
