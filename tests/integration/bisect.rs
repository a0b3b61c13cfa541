//! `margin bisect`: which level of an ordered factor made a metric worse, run as the
//! README says (in the user's folder, the default store `reports/`, nothing preset).

use std::collections::BTreeMap;

use super::{as_a_user, logged, records, stderr, stdout, unique_cell_repetitions, wait_until};

/// An experiment of `n` levels `v01`…whose value is 100 until level `step_at` and
/// `100 × factor` from there, with normal noise of 3 % drawn from a seed of the level and
/// the trial's repetition: the same values whatever order the trials ran in, and a trial
/// run again after an interruption gives the value it would have given.
fn series(dir: &std::path::Path, n: u32, step_at: u32, factor: f64) {
    let levels: Vec<String> = (1..=n).map(|v| format!("v{v:02}")).collect();
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    std::fs::write(
        dir.join("experiments/x.yaml"),
        format!(
            r#"matrix:
  version: [{levels}]
run: >-
  awk -v level={{{{ version }}}} -v c={{{{ repetition }}}} 'BEGIN {{ v = substr(level, 2) + 0;
  srand(v * 1000 + c); u = rand(); w = rand(); z = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * w);
  printf "value %.6f\n", 100 * (v >= {step_at} ? {factor} : 1) * (1 + 0.03 * z) }}'
metrics:
  value: {{ regex: 'value ([\d.]+)', better: lower }}
repetitions: 4
analysis:
  series:
    - {{ factor: version }}
"#,
            levels = levels.join(", "),
        ),
    )
    .unwrap();
}

/// `margin bisect experiments/x.yaml --factor version` with `extra`, in `dir`.
fn bisect(dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["bisect", "experiments/x.yaml", "--factor", "version"];
    args.extend_from_slice(extra);
    as_a_user(dir).args(args).output().unwrap()
}

/// The store's measured trials per level of `version`.
fn trials_per_level(dir: &std::path::Path) -> BTreeMap<String, usize> {
    let mut per = BTreeMap::new();
    for r in records(&dir.join("reports/x")) {
        *per.entry(r["levels"]["version"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    per
}

#[test]
fn a_step_of_ten_percent_at_the_eleventh_of_sixteen_levels_is_found_there() {
    let began = std::time::Instant::now();
    let dir = tempfile::tempdir().unwrap();
    series(dir.path(), 16, 11, 1.10);
    let out = bisect(dir.path(), &[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("found: `v11` made value worse: +"), "{first}");
    assert!(first.ends_with("; last good `v10`"), "{first}");
    assert!(text.contains("| ends | v01 → v16"), "{text}");
    // the trials are the store's, each with its raw output, in the bisection's sessions
    let store = dir.path().join("reports/x");
    let recorded = records(&store);
    assert!(recorded.iter().all(|r| r["status"] == "ok"));
    let raw = recorded[0]["raw"]["stdout"].as_str().unwrap();
    assert!(std::fs::read_to_string(store.join(raw)).unwrap().starts_with("value "), "{raw}");
    let sessions = std::fs::read_to_string(store.join("sessions.ndjson")).unwrap();
    assert!(sessions.contains(r#""label":"bisect:version:v01..v16""#), "{sessions}");
    // the JSON says the same, from the store alone: nothing more is run
    let again = bisect(dir.path(), &["--json"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(records(&store).len(), recorded.len(), "a finished bisection runs nothing more");
    let v: serde_json::Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(
        (v["verdict"].as_str(), v["first_bad"].as_str(), v["last_good"].as_str()),
        (Some("found"), Some("v11"), Some("v10"))
    );
    let (low, high) = (v["ci_low"].as_f64().unwrap(), v["ci_high"].as_f64().unwrap());
    assert!(low < 1.10 && 1.10 < high, "[{low}, {high}] misses ×1.10");
    let measured = v["levels_measured"].as_u64().unwrap();
    assert!(measured < 16 && measured == trials_per_level(dir.path()).len() as u64, "{v}");
    assert_eq!(v["trials"].as_u64().unwrap() as usize, recorded.len());
    assert_eq!(v["steps"][0]["decision"], "regression");
    // the time it took: its sessions, the trials' own time and more, no more than it ran
    let wall: f64 = recorded.iter().map(|r| r["wall_time"].as_f64().unwrap()).sum();
    let seconds = v["seconds"].as_f64().unwrap();
    assert!(wall > 0.0 && seconds >= wall, "{seconds} s spent, the trials {wall} s: {v}");
    assert!(seconds <= began.elapsed().as_secs_f64(), "{seconds} s spent in a test of {:?}", began.elapsed());
    // the normal report reads the bisection's trials, and its Bisect section gives the
    // same answer, steps and totals as the command
    let report = as_a_user(dir.path()).args(["report", "experiments/x.yaml"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(store.join("report.md")).unwrap();
    let section = &md[md.find("\n## Bisect\n").unwrap_or_else(|| panic!("{md}"))..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |i| i + 1)];
    assert!(section.contains("### `version` from `v01` to `v16`"), "{section}");
    let answer = stdout(&bisect(dir.path(), &[]));
    assert!(section.contains(answer.trim_end()), "{answer}\n{section}");
    assert_eq!(records(&store).len(), recorded.len(), "the report runs nothing");
}

#[test]
fn without_a_step_there_is_no_regression_and_only_the_ends_are_measured() {
    let dir = tempfile::tempdir().unwrap();
    series(dir.path(), 16, 99, 1.0);
    let out = bisect(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("no regression between `v01` and `v16`: value "), "{text}");
    assert!(text.contains("within ±5.0 %"), "{text}");
    assert!(stderr(&out).contains("bisect: no regression between"), "{}", stderr(&out));
    let per = trials_per_level(dir.path());
    assert_eq!(per.keys().collect::<Vec<_>>(), ["v01", "v16"], "{per:?}");
    let json = bisect(dir.path(), &["--json"]);
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["verdict"], "no_regression");
    assert!(v["first_bad"].is_null() && v["last_good"].is_null(), "{v}");
}

#[test]
fn a_bisection_killed_midway_resumes_to_the_answer_of_one_never_stopped() {
    let whole = tempfile::tempdir().unwrap();
    series(whole.path(), 16, 11, 1.10);
    let uninterrupted = bisect(whole.path(), &["--json"]);
    assert!(uninterrupted.status.success(), "{}", stderr(&uninterrupted));
    let dir = tempfile::tempdir().unwrap();
    series(dir.path(), 16, 11, 1.10);
    let store = dir.path().join("reports/x");
    let mut child = as_a_user(dir.path())
        .args(["bisect", "experiments/x.yaml", "--factor", "version", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // past the ends' first look, into the steps
    assert!(wait_until(std::time::Duration::from_secs(60), || logged(&store) >= 25), "no trials logged");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = logged(&store);
    assert!(before < records(&whole.path().join("reports/x")).len(), "killed after the end");
    let resumed = bisect(dir.path(), &["--json"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let (a, b): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(&stdout(&uninterrupted)).unwrap(),
        serde_json::from_str(&stdout(&resumed)).unwrap(),
    );
    for key in ["verdict", "first_bad", "last_good", "ratio", "ci_low", "ci_high", "trials", "steps"] {
        assert_eq!(a[key], b[key], "{key}");
    }
    assert_eq!(b["unused_trials"], 0);
    assert_eq!(trials_per_level(dir.path()), trials_per_level(whole.path()), "no level measured twice");
    unique_cell_repetitions(&records(&store));
}

#[test]
fn bad_input_is_refused_with_its_flag_named_and_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    series(dir.path(), 6, 4, 1.1);
    let cases: [(&[&str], &str); 5] = [
        (
            &["--good", "v07"],
            "--good v07: `v07` is not a level of `version` in experiments/x.yaml; its levels are: v01",
        ),
        (
            &["--good", "v04", "--bad", "v02"],
            "--good v04 --bad v02: the good level must come before the bad one",
        ),
        (&["--metric", "valu"], "--metric valu: experiments/x.yaml has no metric `valu`"),
        (&["--set", "size=1k"], "--set size=1k: experiments/x.yaml has no factor `size`"),
        (&["--set", "version"], "--set version: write it as factor=level"),
    ];
    for (extra, said) in cases {
        let out = bisect(dir.path(), extra);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(said), "{extra:?}: {}", stderr(&out));
    }
    let out =
        as_a_user(dir.path()).args(["bisect", "experiments/x.yaml", "--factor", "versoin"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--factor versoin: experiments/x.yaml has no factor `versoin`"),
        "{}",
        stderr(&out)
    );
    // a factor of two levels, and another factor of several levels left unset
    std::fs::write(
        dir.path().join("experiments/two.yaml"),
        "matrix:\n  version: [a, b, c]\n  size: [1k, 4k]\n  mode: [x, y]\nrun: 'echo value 1'\nmetrics:\n  value: { regex: 'value ([\\d.]+)' }\n",
    )
    .unwrap();
    let out =
        as_a_user(dir.path()).args(["bisect", "experiments/two.yaml", "--factor", "size"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`size` has 2 level(s) (1k, 4k); a bisection needs 3 or more"),
        "{}",
        stderr(&out)
    );
    let out = as_a_user(dir.path())
        .args(["bisect", "experiments/two.yaml", "--factor", "version", "--set", "mode=y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("must be fixed: add --set size=LEVEL (1k, 4k)"), "{}", stderr(&out));
    // an environment factor: a fact of the host, measured across boots
    std::fs::write(
        dir.path().join("experiments/env.yaml"),
        "matrix:\n  kernel: [bare, xen, kvm]\nenvironment:\n  kernel: { fact: hypervisor, map: { xen: xen, none: bare, kvm: kvm } }\nrun: 'echo value 1'\nmetrics:\n  value: { regex: 'value ([\\d.]+)' }\n",
    )
    .unwrap();
    let out = as_a_user(dir.path())
        .args(["bisect", "experiments/env.yaml", "--factor", "kernel"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("`kernel` is an environment factor"), "{}", stderr(&out));
    assert!(stderr(&out).contains("across boots"), "{}", stderr(&out));
    // a host that boots: there the unit would be a boot
    std::fs::write(
        dir.path().join("experiments/booted.yaml"),
        "matrix:\n  host: [box]\n  kernel: [bare, xen]\n  version: [v1, v2, v3]\nenvironment:\n  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }\nhosts:\n  box: { ssh: root@box.example, boot: { reboot: reboot, boots: 4 } }\nrun: 'echo value 1'\nmetrics:\n  value: { regex: 'value ([\\d.]+)' }\n",
    )
    .unwrap();
    let out = as_a_user(dir.path())
        .args(["bisect", "experiments/booted.yaml", "--factor", "version", "--set", "kernel=xen"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("in experiments/booted.yaml, the cells run on host `box`, which boots"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("reports").exists(), "bad input stored something");
}

#[test]
fn another_factor_fixed_with_set_bisects_its_own_cells_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("experiments")).unwrap();
    // a step of 15 % at v4, with 4k blocks only
    std::fs::write(
        dir.path().join("experiments/x.yaml"),
        r#"matrix:
  version: [v1, v2, v3, v4, v5, v6]
  size: [1k, 4k]
run: >-
  awk -v level={{ version }} -v size={{ size }} -v c={{ repetition }} 'BEGIN { v = substr(level, 2) + 0;
  srand(v * 1000 + c); u = rand(); w = rand(); z = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * w);
  printf "value %.6f\n", 100 * (v >= 4 && size == "4k" ? 1.15 : 1) * (1 + 0.03 * z) }'
metrics:
  value: { regex: 'value ([\d.]+)', better: lower }
"#,
    )
    .unwrap();
    let out = bisect(dir.path(), &["--set", "size=4k", "--json"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((v["verdict"].as_str(), v["first_bad"].as_str()), (Some("found"), Some("v4")), "{v}");
    assert_eq!(v["fixed"]["size"], "4k");
    let recorded = records(&dir.path().join("reports/x"));
    assert!(recorded.iter().all(|r| r["levels"]["size"] == "4k"), "a 1k cell was measured");
}
