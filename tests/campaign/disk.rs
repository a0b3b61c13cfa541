//! `margin run` with its store on a full disk, at many sizes: the run stops with an error
//! naming the file it could not write (exit 2), nothing before it is lost, and the same
//! command completes the store once there is room again. And the same for a store whose
//! file system is remounted read-only between two runs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Margin, Rng, Tally, duplicates, folder, lost, ok_per_cell, records, store};

pub(crate) struct Config {
    /// Disk sizes, spread geometrically from `smallest` to `largest` KiB.
    pub(crate) sizes: usize,
    pub(crate) smallest: u64,
    pub(crate) largest: u64,
    pub(crate) seed: u64,
}

const CELLS: usize = 3;
const REPETITIONS: usize = 10;

/// Three cells of ten trials, each printing 20 kB: about 0.7 MB of raw output in all.
const EXPERIMENT: &str = "matrix:\n  n: [1, 2, 3]\n\
    run: echo value=1; head -c 20000 /dev/zero | tr '\\0' x\n\
    metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n\
    repetitions: 10\n";

/// Mounts a tmpfs of `$2` KiB on `$1/reports`, runs margin (`$3`) there as a user would,
/// copies the store out to `$1/copy`, and exits with margin's code (99: no tmpfs).
const SCRIPT: &str = "mkdir -p \"$1/reports\" && mount -t tmpfs -o size=\"$2\"k tmpfs \"$1/reports\" || exit 99; \
    cd \"$1\" && \"$3\" run exp.yaml > \"$1/run.stdout\" 2> \"$1/run.stderr\"; rc=$?; \
    cp -a \"$1/reports\" \"$1/copy\"; umount \"$1/reports\"; exit $rc";

pub(crate) fn campaign(margin: &Margin, root: &Path, cfg: &Config) -> Tally {
    let mut rng = Rng::new(cfg.seed);
    let mut failures = Vec::new();
    let (mut stopped, mut fitted, mut panics, mut lost_n, mut dup_n, mut resumed) = (0, 0, 0, 0, 0, 0);
    let mut sizes: Vec<u64> = (0..cfg.sizes)
        .map(|i| {
            let f = (i as f64 + rng.unit()) / cfg.sizes as f64;
            (cfg.smallest as f64 * (cfg.largest as f64 / cfg.smallest as f64).powf(f)).round() as u64
        })
        .collect();
    sizes.sort_unstable();
    for &kib in &sizes {
        let dir = folder(root, &format!("disk-{kib}k"), EXPERIMENT);
        let rc = match mounted_run(margin, &dir, kib) {
            Ok(rc) => rc,
            Err(why) => {
                return Tally { line: format!("full disk: not tried ({why})"), failures: Vec::new() };
            }
        };
        let stderr = std::fs::read_to_string(dir.join("run.stderr")).unwrap_or_default();
        if stderr.contains("panicked at") || rc == Some(101) {
            panics += 1;
            failures.push(format!("{kib} KiB: a panic: {}", dir.join("run.stderr").display()));
        }
        match rc {
            Some(0) => fitted += 1,
            Some(2)
                if stderr.contains("the disk is full")
                    && names_a_file(&stderr)
                    && !stderr.contains(".partial") =>
            {
                stopped += 1
            }
            _ => failures.push(format!("{kib} KiB: exit {rc:?}, expected 0 or 2 naming the file: {stderr}")),
        }
        // Room again: the copy goes back where the store was, and the same command resumes.
        let copied = dir.join("copy").join("exp");
        let (before, _) = records(&copied);
        if copied.exists() {
            let _ = std::fs::rename(&copied, store(&dir, "exp"));
        }
        let out = margin.output(&dir, &["run", "exp.yaml"], Duration::from_secs(300));
        let (after, _) = records(&store(&dir, "exp"));
        let gone = lost(&before, &after);
        let doubled = duplicates(&after);
        lost_n += gone;
        dup_n += doubled;
        let per_cell = ok_per_cell(&after);
        let complete = per_cell.len() == CELLS && per_cell.values().all(|&n| n == REPETITIONS);
        match out {
            Some(out) if out.status.success() && complete && gone + doubled == 0 => resumed += 1,
            Some(out) => failures.push(format!(
                "{kib} KiB, resumed: exit {:?}, ok per cell {per_cell:?}, {gone} lost, {doubled} duplicated: {}",
                out.status.code(),
                super::said(&out)
            )),
            None => failures.push(format!("{kib} KiB: the resumed run hung")),
        }
    }
    let line = format!(
        "full disk at {} sizes (tmpfs {}–{} KiB, {CELLS} cells × {REPETITIONS} trials of 20 kB): {stopped} runs stopped \
         naming the file, {fitted} fitted, {panics} panics, {lost_n} trials lost, {dup_n} duplicated, {resumed} of {} \
         resumed to completion",
        sizes.len(),
        sizes.first().unwrap_or(&0),
        sizes.last().unwrap_or(&0),
        sizes.len()
    );
    Tally { line, failures }
}

/// A store on a tmpfs of its own: a first run completes 10 trials per cell, the file
/// system is remounted read-only, a second run asks for 12 (`$4` is what it printed),
/// the file system is made writable again and a third run completes the 12; the store is
/// copied out to `$1/copy` before the namespace ends. Exits with the second run's code.
const READ_ONLY: &str = "mkdir -p \"$1/reports\" && mount -t tmpfs -o size=8m tmpfs \"$1/reports\" || exit 99; \
    cd \"$1\" && \"$3\" run exp.yaml > /dev/null 2>&1 && cp -a reports/exp \"$1/first\" \
    && mount -o remount,ro \"$1/reports\" || exit 98; \
    \"$3\" run exp.yaml --repetitions 12 > /dev/null 2> \"$4\"; rc=$?; \
    mount -o remount,rw \"$1/reports\" && \"$3\" run exp.yaml --repetitions 12 > /dev/null 2>&1 || rc=97; \
    cp -a reports \"$1/copy\"; umount \"$1/reports\"; exit $rc";

/// The read-only part: a run on a read-only store is refused with exit 2 naming the
/// file, nothing stored changes, and the next run once it is writable completes.
pub(crate) fn read_only(margin: &Margin, root: &Path) -> Tally {
    let dir = folder(root, "read-only", EXPERIMENT);
    let said = dir.join("second.stderr");
    let rc = match in_namespace(
        READ_ONLY,
        &[
            dir.to_str().unwrap_or_default(),
            "0",
            margin.bin.to_str().unwrap_or_default(),
            said.to_str().unwrap_or_default(),
        ],
    ) {
        Ok(rc) => rc,
        Err(why) => {
            return Tally { line: format!("read-only store: not tried ({why})"), failures: Vec::new() };
        }
    };
    let mut failures = Vec::new();
    let text = std::fs::read_to_string(&said).unwrap_or_default();
    let (first, _) = records(&dir.join("first"));
    let (last, _) = records(&dir.join("copy").join("exp"));
    if rc != Some(2) || !text.contains("Read-only file system") || !text.contains('/') {
        failures.push(format!("a run on a read-only store: exit {rc:?}, expected 2 naming the file: {text}"));
    }
    if text.contains("panicked at") {
        failures.push(format!("a run on a read-only store panicked: {text}"));
    }
    let per_cell = ok_per_cell(&last);
    let complete = per_cell.len() == CELLS && per_cell.values().all(|&n| n == 12);
    if lost(&first, &last) + duplicates(&last) > 0 || !complete {
        failures.push(format!(
            "after the store was writable again: {} lost, {} duplicated, ok per cell {per_cell:?}",
            lost(&first, &last),
            duplicates(&last)
        ));
    }
    let line = format!(
        "read-only store: the run refused with exit {rc:?} ({}), {} of {} stored trials kept, and completed to 12 per cell once writable ({})",
        if text.contains("Read-only file system") { "naming the file" } else { "not naming the file" },
        first.len() - lost(&first, &last),
        first.len(),
        if complete { "yes" } else { "no" }
    );
    Tally { line, failures }
}

/// Whether an error message names the file it could not write: a raw output, a log or
/// the report's files.
fn names_a_file(stderr: &str) -> bool {
    ["/raw/", ".ndjson", "report.md", "summary.json", ".svg", ".json"].iter().any(|f| stderr.contains(f))
}

/// The run on a tmpfs: mounted directly as root, else in a user namespace of our own.
/// `Ok(code)`, or why there is no tmpfs to fill.
fn mounted_run(margin: &Margin, dir: &Path, kib: u64) -> Result<Option<i32>, String> {
    let args = [dir.to_str().unwrap_or_default(), &kib.to_string(), margin.bin.to_str().unwrap_or_default()];
    in_namespace(SCRIPT, &args)
}

/// `script` under `sh` with `args`: as root directly, else in a user namespace of our own
/// where mounting is allowed. `Ok(code)`, or why it could not mount (its exit 98 or 99).
fn in_namespace(script: &str, args: &[&str]) -> Result<Option<i32>, String> {
    let root = nix::unistd::geteuid().is_root();
    let mut cmd = if root {
        Command::new("sh")
    } else {
        let mut cmd = Command::new("unshare");
        cmd.args(["--user", "--map-root-user", "--mount", "sh"]);
        cmd
    };
    let status = super::without_margin_env(&mut cmd)
        .args(["-c", script, "sh"])
        .args(args)
        .status()
        .map_err(|e| format!("sh: {e}"))?;
    match status.code() {
        Some(98) => Err("the tmpfs could not be remounted read-only".into()),
        Some(99) => Err(if root {
            "mount -t tmpfs failed as root".into()
        } else {
            "not root, and no user namespace with a tmpfs".into()
        }),
        code => Ok(code),
    }
}
