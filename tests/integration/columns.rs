//! The columns kept beside a large trial log (`runs.columns`, docs/store.md): `status`,
//! `report` and `export` read a store the same with them as from the log alone — after
//! a run appended to it, a record appended after the columns (`status` then reads only
//! the columns a progress needs), with a torn record and records of a changed command in it, and
//! with the columns damaged; the trials carry the default `monitor:`'s telemetry.
//!
//! Run as a user does: a temporary folder as the working directory, relative paths, the
//! default store root (`reports`), no `MARGIN_*` variable set.

use super::{as_a_user as margin, stderr, stdout};

/// Each trial sleeps 30 ms first, past a clock tick: the telemetry's CPU shares need
/// /proc/stat's counters to move during the trial (a trial shorter than a tick has none),
/// and a store of 1 ms trials had none now and then (the test failed so once, on a loaded
/// machine).
const EXP: &str = "matrix:\n  n: [1, 2, 3]\nrun: sleep 0.03; printf 'value=%s\\n' {{ n }}{{ repetition }}\n\
                   metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 3\n";

/// What the three readers say of the store: `status`, `report --json` (the summary), and
/// the tidy table as CSV.
fn read(dir: &std::path::Path) -> [String; 3] {
    let run = |args: &[&str]| {
        let out = margin(dir).args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        stdout(&out)
    };
    [run(&["status", "exp"]), run(&["report", "exp", "--json"]), run(&["export", "exp", "--format", "csv"])]
}

/// The same store read with no columns beside the log.
fn read_from_the_log(dir: &std::path::Path) -> [String; 3] {
    crate::from_the_logs(dir, |copy| {
        let said = read(copy);
        // the copy keeps columns of its own: it was read whole
        assert!(copy.join("reports/exp/runs.columns").exists());
        said
    })
}

#[test]
fn a_large_store_reads_the_same_with_its_columns_as_from_its_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    std::fs::write(dir.path().join("experiments/exp.yaml"), EXP).unwrap();
    let out = margin(dir.path()).args(["run", "experiments/exp.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let log = dir.path().join("reports/exp/runs.ndjson");
    let columns = dir.path().join("reports/exp/runs.columns");
    // however small, the first report keeps the columns: the trials are in Parquet
    assert!(columns.join("_manifest.json").exists(), "the run's report keeps the columns");

    // Grown past 1 MiB as a long run would: more trials of each cell, their values drawn
    // around the real ones; a record of a command since changed (another cell id, set
    // aside), and one torn by a crash.
    let text = std::fs::read_to_string(&log).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut grown = text.clone();
    for k in 0..2400u64 {
        let mut r = records[(k % records.len() as u64) as usize].clone();
        let value = r["metrics"]["value"].as_f64().unwrap();
        r["trial"] = format!("01940000-0000-7000-8000-{k:012}").into();
        r["repetition"] = (4 + k / records.len() as u64).into();
        r["metrics"]["value"] = (value * (1.0 + ((k * 7919) % 101) as f64 / 1000.0)).into();
        if k == 700 {
            r["cell"] = "00000000deadbeef".into();
        }
        // trials that failed: a report names them by their ids, which a report's read of
        // the columns takes alone (docs/store.md, Reading for a report)
        if k % 97 == 5 {
            r["status"] = "failed".into();
            r["exit_code"] = 1.into();
            r["error"] = format!("exit code 1 (trial {k})").into();
            r["metrics"] = serde_json::json!({});
        }
        grown.push_str(&serde_json::to_string(&r).unwrap());
        grown.push('\n');
        if k == 1200 {
            grown.push_str("{\"schema\":1,\"trial\":\"torn by a crash\n");
        }
    }
    std::fs::write(&log, &grown).unwrap();
    assert!(grown.len() > 1 << 20, "{} bytes", grown.len());

    let first = read(dir.path());
    assert!(columns.join("_manifest.json").exists(), "the first read keeps the columns");
    // the default `monitor:` recorded telemetry: its secondary metrics are in the columns
    assert!(first[2].contains("cpu_user_pct"), "{}", first[2]);
    assert!(first[0].contains("2384 measured"), "{}", first[0]);
    assert!(first[1].contains("\"stale\": 1"), "the record of the changed command is set aside");
    assert!(first[1].contains("\"trial\": \"01940000-0000-7000-8000-000000000102\""), "a failure by its id");
    let second = read(dir.path());
    assert_eq!(first, second, "read from the columns");
    assert_eq!(first, read_from_the_log(dir.path()));

    // a run appends to the store: the new trials are read after the columns
    let out =
        margin(dir.path()).args(["run", "experiments/exp.yaml", "--repetitions", "900"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let after = read(dir.path());
    assert_ne!(after, first);
    assert_eq!(after, read_from_the_log(dir.path()));

    // a record appended since the columns were kept: `status` reads of the columns those
    // a cell's progress needs, then that line (docs/store.md, Where the cells stand)
    let text = std::fs::read_to_string(&log).unwrap();
    let mut r: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    r["trial"] = "01940000-0000-7000-8000-999999999999".into();
    r["repetition"] = 901.into();
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, format!("{}\n", serde_json::to_string(&r).unwrap()).as_bytes())
        .unwrap();
    let appended = read(dir.path());
    assert_ne!(appended[0], after[0], "one trial more: {}", appended[0]);
    assert_eq!(appended, read_from_the_log(dir.path()));
    let after = appended;

    // damaged columns are ignored and rebuilt: a part's table of trials with a byte flipped
    let parts = |kind: &str| -> Vec<std::path::PathBuf> {
        let mut files: Vec<_> =
            std::fs::read_dir(columns.join(kind)).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        files
    };
    assert!(!parts("trials").is_empty());
    let first_part = parts("trials")[0].clone();
    let mut bytes = std::fs::read(&first_part).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&first_part, &bytes).unwrap();
    assert_eq!(read(dir.path()), after);
    // written anew as one part: the damaged file is gone
    for kind in ["trials", "metrics", "telemetry", "ids"] {
        assert_eq!(parts(kind).len(), 1, "{kind}: {:?}", parts(kind));
    }
    assert_ne!(std::fs::read(&parts("trials")[0]).unwrap(), bytes, "rebuilt");
    assert_eq!(
        parts(""),
        ["_manifest.json", "ids", "metrics", "telemetry", "trials"].map(|n| columns.join(n))
    );
    // nothing left behind but the columns and where the cells stand
    let mut names: Vec<String> = std::fs::read_dir(dir.path().join("reports/exp"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("runs."))
        .collect();
    names.sort();
    assert_eq!(names, ["runs.columns", "runs.ndjson", "runs.progress"]);
}

/// A summary of more cells than summary.json is written a piece at a time (256 cells a
/// piece, on all cores: src/summary/json.rs) is the very text `report --json` prints
/// whole, byte for byte.
#[test]
fn a_summary_of_many_cells_is_the_file_report_json_prints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("experiments")).unwrap();
    let levels = (0..20).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
    let exp = format!(
        "matrix:\n  a: [{levels}]\n  b: [{levels}]\nrun: printf 'value=%s\\n' {{{{ a }}}}{{{{ repetition }}}}\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)', better: higher }}\nrepetitions: 2\n"
    );
    std::fs::write(dir.path().join("experiments/many.yaml"), exp).unwrap();
    let out = margin(dir.path()).args(["run", "experiments/many.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = margin(dir.path()).args(["report", "experiments/many.yaml", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(dir.path().join("reports/many/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&written).unwrap();
    // 400 cells, each with its value and the times the run measures: several pieces
    let rows = summary["cells"].as_array().unwrap().len();
    assert!(rows >= 400, "{rows} cell × metric rows");
    assert!(written == stdout(&out), "summary.json differs from what `report --json` prints");
}
