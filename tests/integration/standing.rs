//! Where the cells stand, kept beside the trial log (`runs.progress`, docs/store.md):
//! `status` and `plan` read it instead of the log while the log has not changed, and say
//! what the log says — before and after a run appends to it.
//!
//! Run as a user does: a temporary folder as the working directory, relative paths, the
//! default store root (`reports`), no `MARGIN_*` variable set.

use std::os::unix::fs::FileExt;

use super::{as_a_user as margin, stderr, stdout};

const EXP: &str = "matrix:\n  n: [1, 2, 3]\nrun: printf 'value=%s\\n' {{ n }}{{ repetition }}\n\
                   metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\n\
                   repetitions: { min: 5, max: 140, target: 0.1% }\nmonitor: none\n";

fn says(dir: &std::path::Path, args: &[&str]) -> String {
    let out = margin(dir).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

/// `status` and `plan` of a copy of the store holding its logs alone.
fn from_the_log(dir: &std::path::Path) -> [String; 2] {
    crate::from_the_logs(dir, |copy| {
        [says(copy, &["status", "exp"]), says(copy, &["plan", "experiments/exp.yaml"])]
    })
}

#[test]
fn status_reads_where_the_cells_stand_until_the_log_changes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/exp.yaml"), EXP).unwrap();
    // 100 trials a cell, short of what the file's adaptive rule asks for
    let out =
        margin(dir.path()).args(["run", "experiments/exp.yaml", "--repetitions", "100"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = dir.path().join("reports/exp/runs.progress");
    let log = dir.path().join("reports/exp/runs.ndjson");

    let read =
        |dir: &std::path::Path| [says(dir, &["status", "exp"]), says(dir, &["plan", "experiments/exp.yaml"])];
    let first = read(dir.path());
    assert!(first[0].contains("300 measured"), "{}", first[0]);
    assert!(first[0].contains("3 to run here"), "{}", first[0]);
    assert!(kept.exists(), "status keeps where the cells stand");
    assert_eq!(read(dir.path()), first);
    assert_eq!(from_the_log(dir.path()), first);

    // Not a byte of the log is read while it has not changed: its middle scrambled in
    // place (no margin command ever writes so) leaves the answer as it was.
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&log).unwrap();
    let len = file.metadata().unwrap().len();
    assert!(len > 140 << 10, "{len} bytes: the middle is past the hashed ends");
    let mut middle = vec![0u8; 4096];
    file.read_exact_at(&mut middle, len / 2).unwrap();
    file.write_all_at(&vec![b'#'; 4096], len / 2).unwrap();
    assert_eq!(read(dir.path()), first, "read from runs.progress");
    file.write_all_at(&middle, len / 2).unwrap();

    // a run appends: read from the log again, and kept anew
    let out = margin(dir.path()).args(["run", "experiments/exp.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let after = read(dir.path());
    assert_ne!(after, first);
    assert!(after[0].contains("3 done"), "{}", after[0]);
    assert_eq!(after, from_the_log(dir.path()));
    assert_eq!(read(dir.path()), after);

    // damaged, it is ignored and written anew
    let mut bytes = std::fs::read(&kept).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x10;
    std::fs::write(&kept, &bytes).unwrap();
    assert_eq!(read(dir.path()), after);
    assert_ne!(std::fs::read(&kept).unwrap(), bytes, "rebuilt");
}

/// After kill -9 the log ends in the zeros its run laid ahead (docs/store.md, "The trial
/// log"), and a resumed run writes its records over them, leaving the file's length and
/// its last 64 KiB as they were. `status` must see those records all the same: what it
/// keeps beside the log is keyed to where the log's text ends, not to the file's size
/// (`status` once said 142 measured of 154 after such a kill).
#[test]
fn status_counts_what_a_run_wrote_over_the_zeros_a_killed_run_left() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/exp.yaml"), EXP).unwrap();
    let run = |n: &str| {
        let out =
            margin(dir.path()).args(["run", "experiments/exp.yaml", "--repetitions", n]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    };
    let log = dir.path().join("reports/exp/runs.ndjson");
    run("60");
    let before = std::fs::read(&log).unwrap();
    run("100");
    let after = std::fs::read(&log).unwrap();
    assert!(after.starts_with(&before) && before.len() > 64 << 10, "a run appends to the log");

    // the log as a run killed after 180 trials leaves it: its records, then zeros
    let reserve = after.len() - before.len() + (128 << 10);
    let mut killed = before.clone();
    killed.resize(before.len() + reserve, 0);
    std::fs::write(&log, &killed).unwrap();
    let first = says(dir.path(), &["status", "exp"]);
    assert!(first.contains("trials: 180 measured"), "{first}");

    // the resumed run writes its 120 records over the zeros, then is killed again
    let file = std::fs::OpenOptions::new().write(true).open(&log).unwrap();
    file.write_all_at(&after[before.len()..], before.len() as u64).unwrap();
    drop(file);
    assert_eq!(std::fs::metadata(&log).unwrap().len(), killed.len() as u64, "the same length");
    let second = says(dir.path(), &["status", "exp"]);
    assert!(second.contains("trials: 300 measured"), "{second}");
    assert_eq!(second, from_the_log(dir.path())[0], "status says what the log says");
}
