//! The robustness campaign (docs/store.md, Guarantees): kill -9 at random moments, a full
//! disk at many sizes, readers during a write, and a fuzzer of the parsers, the trial log
//! and the experiment loader — all against the real `margin` binary, started as a user
//! starts it (in a folder, default store, no `MARGIN_*` variable).
//!
//! `just stress` runs it at full size (`examples/stress.rs`); `just test` runs a reduced
//! slice at a fixed seed (`tests/integration/campaign.rs`). Each part returns a [`Tally`]:
//! its one-line figures, and a line per broken guarantee.

pub(crate) mod disk;
pub(crate) mod faults;
pub(crate) mod fuzz;
pub(crate) mod kill;
pub(crate) mod readers;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng as _, SeedableRng};

/// The binary under test.
pub(crate) struct Margin {
    pub(crate) bin: PathBuf,
}

impl Margin {
    /// `margin ARGS…` in `dir`, with no `MARGIN_*` variable: the store is `dir/reports`.
    pub(crate) fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        without_margin_env(&mut cmd).current_dir(dir).args(args).stdin(Stdio::null());
        cmd
    }

    /// Runs `margin ARGS…` in `dir` to its end, or kills it after `limit`: `None` then.
    pub(crate) fn output(&self, dir: &Path, args: &[&str], limit: Duration) -> Option<Output> {
        self.wait(self.command(dir, args), limit)
    }

    /// Runs `cmd` to its end, or kills it after `limit`: `None` then.
    pub(crate) fn wait(&self, mut cmd: Command, limit: Duration) -> Option<Output> {
        let mut child =
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("the margin binary starts");
        // Drain both pipes on threads, so a chatty run never blocks on a full pipe.
        let out = child.stdout.take().map(drain);
        let err = child.stderr.take().map(drain);
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for margin") {
                break Some(status);
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let stdout = out.map(|t| t.join().unwrap_or_default()).unwrap_or_default();
        let stderr = err.map(|t| t.join().unwrap_or_default()).unwrap_or_default();
        status.map(|status| Output { status, stdout, stderr })
    }
}

/// `cmd` with every `MARGIN_*` variable of this process's environment removed.
pub(crate) fn without_margin_env(cmd: &mut Command) -> &mut Command {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MARGIN_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Whether margin panicked: Rust's exit code for a panic, or its message.
pub(crate) fn panicked(out: &Output) -> bool {
    out.status.code() == Some(101) || String::from_utf8_lossy(&out.stderr).contains("panicked at")
}

/// What one part of the campaign found.
pub(crate) struct Tally {
    /// The one-line summary of its figures.
    pub(crate) line: String,
    /// Each broken guarantee, with what is needed to see it again.
    pub(crate) failures: Vec<String>,
}

impl Tally {
    pub(crate) fn print(&self) {
        println!("{}", self.line);
        for failure in &self.failures {
            println!("  FAILED: {failure}");
        }
    }
}

/// The campaign's random choices: the same seed gives the same moments, sizes and inputs.
pub(crate) struct Rng(rand_pcg::Pcg64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(rand_pcg::Pcg64::seed_from_u64(seed))
    }

    /// A whole number in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }

    /// A number in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.0.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// An experiment's store under `dir`, as a user's run makes it.
pub(crate) fn store(dir: &Path, name: &str) -> PathBuf {
    dir.join("reports").join(name)
}

/// Every record of a store's trial log that parses, and how many lines do not. Zeros at
/// the end are the room a run lays ahead of its records (docs/store.md), not a line.
pub(crate) fn records(store: &Path) -> (Vec<serde_json::Value>, usize) {
    let bytes = std::fs::read(store.join("runs.ndjson")).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let mut torn = 0;
    let mut out = Vec::new();
    for line in text.trim_end_matches('\0').lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str(line) {
            Ok(v) => out.push(v),
            Err(_) => torn += 1,
        }
    }
    (out, torn)
}

/// How many records repeat a (cell, repetition) that an earlier record holds.
pub(crate) fn duplicates(records: &[serde_json::Value]) -> usize {
    let mut seen = HashSet::new();
    records.iter().filter(|r| !seen.insert((r["cell"].to_string(), r["repetition"].to_string()))).count()
}

/// How many of `before` are missing from `after`.
pub(crate) fn lost(before: &[serde_json::Value], after: &[serde_json::Value]) -> usize {
    before.iter().filter(|r| !after.contains(r)).count()
}

/// Trials measured (status `ok`, warmups left out) per cell.
pub(crate) fn ok_per_cell(records: &[serde_json::Value]) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| r["status"] == "ok" && r["warmup"] != true) {
        *out.entry(r["cell"].to_string()).or_insert(0) += 1;
    }
    out
}

/// A fresh folder holding `exp.yaml`.
pub(crate) fn folder(root: &Path, name: &str, yaml: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("a campaign folder");
    std::fs::write(dir.join("exp.yaml"), yaml).expect("the experiment file");
    dir
}

/// The last lines of a command's error output (where its error is, after its progress),
/// for a failure's message.
pub(crate) fn said(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}
