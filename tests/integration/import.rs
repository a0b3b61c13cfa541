//! `margin import` and `margin reparse` on the seeds' own outputs.

use super::{margin, stderr, stdout};

fn records(store: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(store.join("runs.ndjson"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn seed_000_dnetc_imports_once_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let import = |kernel: &str, core: u32| {
        margin()
            .env("MARGIN_REPORTS", dir.path())
            .args(["import", "experiments/xen-dnetc.yaml", "--set", &format!("kernel={kernel}")])
            .args(["--set", "contest=RC5-72", "--set", &format!("core={core}")])
            .arg(format!("experiments/data/seed000/dnetc-{kernel}-rc5-72-core{core}.txt"))
            .output()
            .unwrap()
    };
    for kernel in ["bare", "xen"] {
        for core in 0..5 {
            let out = import(kernel, core);
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(stdout(&out).contains("1 trial imported into"), "{}", stdout(&out));
        }
    }
    let again = import("xen", 2);
    assert!(again.status.success());
    assert!(stdout(&again).contains("already imported"), "{}", stdout(&again));
    let store = dir.path().join("xen-dnetc");
    let recs = records(&store);
    assert_eq!(recs.len(), 10);
    // the seed's figures: bare core 0 took 0.00:00:16.60, xen core 0 0.00:00:16.99
    let time = |kernel: &str, core: &str| {
        recs.iter()
            .find(|r| r["levels"]["kernel"] == kernel && r["levels"]["core"] == core)
            .map(|r| r["metrics"]["time"].as_f64().unwrap())
            .unwrap()
    };
    assert_eq!(time("bare", "0"), 16.60);
    assert_eq!(time("xen", "0"), 16.99);
    for r in &recs {
        assert_eq!(r["status"], "imported");
        assert!(r["source"].as_str().unwrap().starts_with("experiments/data/seed000/dnetc-"));
        assert_eq!(r["source_hash"].as_str().unwrap().len(), 64);
        let copy = std::fs::read_to_string(store.join(r["raw"]["stdout"].as_str().unwrap())).unwrap();
        assert_eq!(copy, std::fs::read_to_string(r["source"].as_str().unwrap()).unwrap());
    }
}

#[test]
fn a_file_of_several_rows_gives_several_trials() {
    let dir = tempfile::tempdir().unwrap();
    let out = margin()
        .env("MARGIN_REPORTS", dir.path())
        .args(["import", "experiments/xen-bonnie.yaml", "--set", "host=domu", "--set", "disk=lvm"])
        .arg("experiments/data/seed000/bonnie-domu-lvm.csv")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("8 trials imported into host=domu disk=lvm"), "{}", stdout(&out));
    let recs = records(&dir.path().join("xen-bonnie"));
    assert_eq!(recs.len(), 8);
    let reps: Vec<u64> = recs.iter().map(|r| r["repetition"].as_u64().unwrap()).collect();
    assert_eq!(reps, (1..=8).collect::<Vec<_>>());
    assert!(recs.iter().all(|r| r["host"] == "domu"));
    // the input is kept once, whatever the number of results in it: every trial points
    // at the one copy, and its position says which row it is
    let store = dir.path().join("xen-bonnie");
    let raw: Vec<_> = std::fs::read_dir(store.join("raw")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(raw.len(), 1, "{raw:?}");
    assert_eq!(
        std::fs::read(&raw[0]).unwrap(),
        std::fs::read("experiments/data/seed000/bonnie-domu-lvm.csv").unwrap()
    );
    assert!(recs.iter().all(|r| r["raw"] == recs[0]["raw"]), "one copy for all");
    let positions: Vec<u64> = recs.iter().map(|r| r["position"].as_u64().unwrap()).collect();
    assert_eq!(positions, (1..=8).collect::<Vec<_>>());
    // and reparse reads each row back from the one copy
    let before: Vec<_> = recs.iter().map(|r| r["metrics"].clone()).collect();
    let out = margin()
        .env("MARGIN_REPORTS", dir.path())
        .args(["reparse", "experiments/xen-bonnie.yaml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("reparsed 8 trials: 0 changed"), "{}", stdout(&out));
    let after: Vec<_> = records(&store).iter().map(|r| r["metrics"].clone()).collect();
    assert_eq!(before, after);
    assert!(before.windows(2).any(|w| w[0] != w[1]), "the rows differ, so the positions matter");
}

#[test]
fn bad_levels_and_unparsable_files_import_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| margin().env("MARGIN_REPORTS", dir.path()).args(args).output().unwrap();
    let out = run(&["import", "experiments/xen-dnetc.yaml", "--set", "kernel=metal", "x.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`metal` is not a level of `kernel`; its levels are: xen, bare"),
        "{}",
        stderr(&out)
    );
    let out = run(&["import", "experiments/xen-dnetc.yaml", "--set", "kernel=xen", "x.txt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("6 cells have these levels; name the cell with --set for: contest, core"));
    let out = run(&[
        "import",
        "experiments/xen-dnetc.yaml",
        "--set",
        "kernel=xen",
        "--set",
        "contest=RC5-72",
        "--set",
        "core=1",
        "experiments/data/seed000/dnetc-xen-rc5-72-core1.txt",
        "experiments/data/seed001/iozone-u0.txt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("iozone-u0.txt: dnetc: found no dnetc -bench core result in the output, which begins:"),
        "{err}"
    );
    assert!(err.contains("Iozone"), "the first lines are quoted: {err}");
    assert!(records(&dir.path().join("xen-dnetc")).is_empty(), "one bad file imports nothing");
}

#[test]
fn reparse_restores_values_from_the_raw_outputs_and_keeps_the_old_log() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("e.yaml");
    std::fs::write(
        &exp,
        "matrix:\n  n: [1, 2]\nrun: echo value={{ n }}\nmetrics:\n  value: { regex: 'value=(\\d+)' }\nrepetitions: 2\n",
    )
    .unwrap();
    let reports = dir.path().join("reports");
    let m = || {
        let mut c = margin();
        c.env("MARGIN_REPORTS", &reports);
        c
    };
    assert!(m().arg("run").arg(&exp).output().unwrap().status.success());
    // an older, buggy parser had recorded wrong values and a parse error
    let log = reports.join("e/runs.ndjson");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    lines[0]["metrics"]["value"] = serde_json::json!(999.0);
    lines[1]["status"] = serde_json::json!("parse_error");
    lines[1]["metrics"].as_object_mut().unwrap().remove("value");
    // and a power cut had torn a last record
    let broken: String = lines.iter().map(|l| format!("{l}\n")).collect::<String>() + "{\"torn";
    std::fs::write(&log, &broken).unwrap();

    let out = m().arg("reparse").arg(&exp).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("reparsed 4 trials: 2 changed (1 parse errors fixed, 0 now failing to parse)"),
        "{text}"
    );
    assert!(text.contains("warning: ") && text.contains("e/runs.ndjson:5: skipped a record"), "{text}");
    assert!(text.contains("the lines that do not parse (1) stay in it, not in the new log"), "{text}");
    let fixed = records(&reports.join("e"));
    assert_eq!(fixed.len(), 4);
    for r in &fixed {
        assert_eq!(r["status"], "ok");
        assert_eq!(r["metrics"]["value"].as_f64().unwrap().to_string(), r["levels"]["n"].as_str().unwrap());
        assert!(r["metrics"]["wall_time"].as_f64().unwrap() > 0.0, "measured values stay");
    }
    let aside: Vec<_> = std::fs::read_dir(reports.join("e"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".before-reparse.ndjson"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read_to_string(&aside[0]).unwrap(), broken);
}

#[test]
fn started_at_is_the_trials_time_and_is_validated() {
    let dir = tempfile::tempdir().unwrap();
    let import = |when: Option<&str>, host: &str| {
        let mut cmd = margin();
        cmd.env("MARGIN_REPORTS", dir.path()).args(["import", "experiments/xen-iozone.yaml"]);
        cmd.args(["--set", &format!("host={host}")]);
        if let Some(when) = when {
            cmd.args(["--started-at", when]);
        }
        cmd.arg(format!("experiments/data/seed001/iozone-{host}.txt")).output().unwrap()
    };
    let out = import(Some("Thu Nov 23 18:25:53 2006"), "u0");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected an RFC 3339 time"), "{}", stderr(&out));
    assert!(records(&dir.path().join("xen-iozone")).is_empty());

    assert!(import(Some("2006-11-23 18:25:53"), "u0").status.success());
    assert!(import(Some("2006-11-24T09:05:23+00:00"), "dom0").status.success());
    assert!(import(None, "u1").status.success());
    let recs = records(&dir.path().join("xen-iozone"));
    let at = |host: &str| recs.iter().find(|r| r["host"] == host).unwrap()["started_at"].clone();
    assert_eq!(at("u0"), "2006-11-23T18:25:53Z");
    assert_eq!(at("dom0"), "2006-11-24T09:05:23Z");
    assert!(at("u1").is_null(), "unknown, not the time of the import");

    let out = margin()
        .env("MARGIN_REPORTS", dir.path())
        .args(["report", "experiments/xen-iozone.yaml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report = std::fs::read_to_string(dir.path().join("xen-iozone/report.md")).unwrap();
    assert!(
        report.contains("host: u0 vs dom0 were measured in disjoint time windows (dom0 2006-11-24 09:05:23 UTC; u0 2006-11-23 18:25:53 UTC)"),
        "{report}"
    );
    assert!(report.contains("host: when u1 vs dom0 were measured is unknown"), "{report}");
}

/// A file given twice in one import (or a copy of it under another name) is one output:
/// imported once, so that an import killed and run again ends with the same trials.
#[test]
fn the_same_content_twice_in_one_import_is_imported_once() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy-of-core0.txt");
    std::fs::copy("experiments/data/seed000/dnetc-bare-rc5-72-core0.txt", &copy).unwrap();
    let out = margin()
        .env("MARGIN_REPORTS", dir.path())
        .args(["import", "experiments/xen-dnetc.yaml", "--set", "kernel=bare"])
        .args(["--set", "contest=RC5-72", "--set", "core=0"])
        .arg("experiments/data/seed000/dnetc-bare-rc5-72-core0.txt")
        .arg(&copy)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("copy-of-core0.txt: already imported into"), "{}", stdout(&out));
    assert_eq!(records(&dir.path().join("xen-dnetc")).len(), 1);
}

/// The figure `Children see throughput for 10 {what} = N KB/sec` of an iozone output, in
/// bytes per second, read here from the text.
fn iozone_children(text: &str, what: &str) -> f64 {
    let line = text.lines().find(|l| l.contains("Children see") && l.contains(what)).unwrap();
    let kb: f64 = line.split('=').nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    kb * 1024.0
}

/// Seed 001's two guests, measured at once, imported as one trial of the gang `guests`
/// the way the README says (default store, relative paths): each member's output kept as
/// a gang's run keeps it, its figures as `metric@host`, the declared sums as the metric
/// itself, no skew invented; the same pair again is skipped; `reparse` gives the same.
#[test]
fn a_gang_trial_imports_from_one_output_per_member() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::copy(format!("{root}/experiments/xen-iozone.yaml"), dir.path().join("e.yaml")).unwrap();
    for m in ["u0", "u1"] {
        std::fs::copy(
            format!("{root}/experiments/data/seed001/iozone-{m}.txt"),
            dir.path().join(format!("{m}.txt")),
        )
        .unwrap();
    }
    let import = |extra: &[&str]| {
        super::as_a_user(dir.path())
            .args(["import", "e.yaml", "--set", "host=guests"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = import(&["--member", "u1=u1.txt", "--member", "u0=u0.txt"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 gang trial imported into host=guests"), "{}", stdout(&out));
    let store = dir.path().join("reports/e");
    let recs = records(&store);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["host"], "guests");
    assert_eq!(r["status"], "imported");
    assert!(r["telemetry"].is_null(), "no skew is invented: {r}");
    assert!(r["metrics"].get("wall_time").is_none(), "{r}");
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("start skew is unknown"), "{warnings}");
    let trial = r["trial"].as_str().unwrap();
    let m = &r["metrics"];
    let mut sums = [0.0; 2];
    for host in ["u0", "u1"] {
        let text = std::fs::read_to_string(dir.path().join(format!("{host}.txt"))).unwrap();
        let kept = std::fs::read_to_string(store.join(format!("raw/{trial}@{host}.out"))).unwrap();
        assert_eq!(kept, text, "the member's output is kept as it was");
        for (i, (metric, what)) in
            [("initial_writers.children", "initial writers"), ("rewriters.children", "rewriters")]
                .iter()
                .enumerate()
        {
            let expected = iozone_children(&text, what);
            let got = m[format!("{metric}@{host}")].as_f64().unwrap();
            assert!((got - expected).abs() < 1e-6 * expected, "{metric}@{host}: {got} vs {expected}");
            sums[i] += expected;
        }
    }
    for (metric, sum) in [("initial_writers.children", sums[0]), ("rewriters.children", sums[1])] {
        let got = m[metric].as_f64().unwrap();
        assert!((got - sum).abs() < 1e-6 * sum, "{metric}: {got} vs the members' sum {sum}");
        assert_eq!(r["metric_info"][metric]["unit"], "B/s");
    }
    assert!(m.get("initial_writers.min").is_none(), "only the declared aggregates: {m}");
    assert_eq!(r["raw"]["stdout"], format!("raw/{trial}@u0.out"));
    // the same two outputs again: skipped
    let again = import(&["--member", "u0=u0.txt", "--member", "u1=u1.txt"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("already imported"), "{}", stdout(&again));
    assert_eq!(records(&store).len(), 1);
    let reparse = super::as_a_user(dir.path()).args(["reparse", "e.yaml"]).output().unwrap();
    assert!(reparse.status.success(), "{}", stderr(&reparse));
    assert_eq!(records(&store)[0]["metrics"], *m, "reparse gives the same figures");
    let report = super::as_a_user(dir.path()).args(["report", "e.yaml"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(store.join("report.md")).unwrap();
    assert!(md.contains("### initial_writers.children@u1") && md.contains("| host=guests |"), "{md}");
}

/// A gang's import names what is wrong with its members, exits 2 and stores nothing.
#[test]
fn a_gang_import_names_a_wrong_member() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    std::fs::copy(format!("{root}/experiments/xen-iozone.yaml"), dir.path().join("e.yaml")).unwrap();
    let u0 = format!("u0={root}/experiments/data/seed001/iozone-u0.txt");
    let u1 = format!("u1={root}/experiments/data/seed001/iozone-u1.txt");
    let dnetc = format!("u1={root}/experiments/data/seed000/dnetc-bare-rc5-72-core0.txt");
    let cases: [(&str, Vec<&str>, &str); 8] = [
        ("host=guests", vec!["--member", &u0, "--member", "u9=x"], "`u9` is not a member of gang `guests`"),
        (
            "host=guests",
            vec!["--member", &u0, "--member", "dom0=x"],
            "`dom0` is a host of the experiment but not a member",
        ),
        ("host=guests", vec!["--member", &u0], "no output given for u1; add --member u1=FILE"),
        ("host=guests", vec!["--member", &u0, "--member", &u0, "--member", &u1], "given twice"),
        ("host=guests", vec!["--member", "u0"], "write it as host=file"),
        ("host=guests", vec![&u0[3..]], "give them as --member u0=FILE --member u1=FILE"),
        ("host=u0", vec!["--member", &u0], "is not a gang's cell (its host is `u0`)"),
        (
            "host=guests",
            vec!["--member", &u0, "--member", &dnetc],
            "dnetc-bare-rc5-72-core0.txt: iozone: found no iozone",
        ),
    ];
    for (cell, args, expected) in cases {
        let out = super::as_a_user(dir.path())
            .args(["import", "e.yaml", "--set", cell])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(expected), "{args:?}: expected `{expected}` in:\n{}", stderr(&out));
        assert!(!dir.path().join("reports/e/runs.ndjson").exists(), "{args:?} stored something");
    }
}

/// Seed 000's dnetc figures, every core of a kernel from that kernel's one boot: imported
/// one output at a time, each import is a unit of its own (as if every figure had a boot of
/// its own) and the pairs by core look replicated; `--boot` names the boot the outputs
/// share, and the comparison across boots is then `unreplicated`, as the post's one boot
/// per kernel is.
#[test]
fn imports_naming_one_boot_per_kernel_are_unreplicated_across_boots() {
    // a user's folder: the experiment file and the seed's outputs, the default store
    let project = || {
        let dir = tempfile::tempdir().unwrap();
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::create_dir_all(dir.path().join("experiments/data/seed000")).unwrap();
        std::fs::copy(repo.join("experiments/xen-dnetc.yaml"), dir.path().join("experiments/xen-dnetc.yaml"))
            .unwrap();
        for kernel in ["bare", "xen"] {
            for core in 0..5 {
                let data = format!("experiments/data/seed000/dnetc-{kernel}-rc5-72-core{core}.txt");
                std::fs::copy(repo.join(&data), dir.path().join(&data)).unwrap();
            }
        }
        dir
    };
    let verdict = |dir: &std::path::Path, boot: bool| {
        for kernel in ["bare", "xen"] {
            for core in 0..5 {
                let mut cmd = super::as_a_user(dir);
                cmd.args(["import", "experiments/xen-dnetc.yaml"])
                    .args(["--set", &format!("kernel={kernel}"), "--set", "contest=RC5-72"])
                    .args(["--set", &format!("core={core}")]);
                if boot {
                    cmd.args(["--boot", &format!("quadopt-{kernel}")]);
                }
                let out = cmd
                    .arg(format!("experiments/data/seed000/dnetc-{kernel}-rc5-72-core{core}.txt"))
                    .output();
                let out = out.unwrap();
                assert!(out.status.success(), "{}", stderr(&out));
            }
        }
        let out =
            super::as_a_user(dir).args(["report", "experiments/xen-dnetc.yaml", "--json"]).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let c =
            summary["comparisons"].as_array().unwrap().iter().find(|c| c["context"]["contest"] == "RC5-72");
        let c = c.unwrap_or_else(|| panic!("no RC5-72 comparison: {}", summary["comparisons"]));
        (c["verdict"].as_str().unwrap().to_owned(), c["sentence"].as_str().unwrap().to_owned())
    };
    let (each, one) = (project(), project());
    let (without, sentence) = verdict(each.path(), false);
    assert_eq!(without, "inconclusive", "{sentence}");
    let (with, sentence) = verdict(one.path(), true);
    assert_eq!(with, "unreplicated", "{sentence}");
    assert!(sentence.contains("bare was measured in one boot, and so was xen"), "{sentence}");
    // the boot is recorded as the import's session's boot_id
    let sessions = std::fs::read_to_string(one.path().join("reports/xen-dnetc/sessions.ndjson")).unwrap();
    assert!(sessions.lines().any(|l| l.contains(r#""boot_id":"quadopt-xen""#)), "{sessions}");

    // a name that is not one word is refused before anything is stored
    let bad = project();
    let out = super::as_a_user(bad.path())
        .args(["import", "experiments/xen-dnetc.yaml"])
        .args(["--set", "kernel=xen", "--set", "contest=RC5-72", "--set", "core=0", "--boot", "boot one"])
        .arg("experiments/data/seed000/dnetc-xen-rc5-72-core0.txt")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected a name for the boot the outputs came from, one word"),
        "{}",
        stderr(&out)
    );
    assert!(!bad.path().join("reports").exists());
}
