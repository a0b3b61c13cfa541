//! The front door, as a new user meets it: the repository's own files, the default store
//! (`reports`, relative), relative paths to experiment files, nothing of margin's preset in
//! the environment, and the exact command line of `just experiment`.
//!
//! The other tests point `MARGIN_REPORTS` at an absolute temporary folder; that hid a
//! relative store root that broke every trial writing into `{{ workdir }}`.

use std::path::{Path, PathBuf};

use super::{as_a_user, records, stderr, stdout};

/// A copy of the repository's committed files (its `git ls-files`, or the folders the
/// experiments need where there is no git), as a fresh clone would hold them.
fn copy_of_the_repository() -> tempfile::TempDir {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = tempfile::tempdir().unwrap();
    let listed = std::process::Command::new("git").arg("-C").arg(root).args(["ls-files", "-z"]).output();
    let files: Vec<PathBuf> = match listed {
        Ok(out) if out.status.success() && !out.stdout.is_empty() => out
            .stdout
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| PathBuf::from(String::from_utf8_lossy(f).into_owned()))
            .collect(),
        _ => ["justfile", "experiments/dd-write.yaml", "schema/experiment.schema.json"]
            .iter()
            .map(PathBuf::from)
            .collect(),
    };
    for file in files {
        let from = root.join(&file);
        // a file deleted in the working tree but still listed: a clone would not have it either
        if !from.is_file() || file.starts_with("reports") {
            continue;
        }
        let to = copy.path().join(&file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    copy
}

/// Every trial ok, and a report with a verdict for each level compared with the baseline.
fn assert_a_good_dd_run(out: &std::process::Output, store: &Path, trials: usize) {
    assert!(out.status.success(), "{}\n{}", stdout(out), stderr(out));
    let records = records(store);
    assert_eq!(records.len(), trials, "{}", stdout(out));
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
    }
    // the workdir the command wrote into was the store's, absolute
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    assert!(report.contains("fdatasync") && report.contains("direct"), "{report}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(store.join("summary.json")).unwrap()).unwrap();
    let comparisons = summary["comparisons"].as_array().expect("comparisons in summary.json");
    // sync: fdatasync and direct against none, in each of the three block sizes
    assert_eq!(comparisons.len(), 6, "{summary}");
    let kinds = [
        "insufficient",
        "unbounded",
        "significant",
        "uncertain_size",
        "within_band",
        "no_meaningful_difference",
        "inconclusive",
    ];
    for c in comparisons {
        // two trials a side: an error estimate, so never "insufficient"
        let verdict = c["verdict"].as_str().unwrap_or_default();
        assert!(kinds[1..].contains(&verdict), "{c}");
    }
}

#[test]
fn the_default_experiment_runs_in_a_copy_of_the_repository_with_the_default_store() {
    let repo = copy_of_the_repository();
    let out = as_a_user(repo.path())
        .args(["run", "experiments/dd-write.yaml", "--repetitions", "2"])
        .output()
        .unwrap();
    // 9 cells, 2 trials and a warm-up each, in `reports/` of the working directory
    assert_a_good_dd_run(&out, &repo.path().join("reports/dd-write"), 9 * 3);
    // the default store is where the README says: nothing went elsewhere
    assert!(!repo.path().join("experiments/reports").exists());
}

#[test]
fn a_relative_experiment_path_from_another_folder_keeps_the_store_there() {
    let repo = copy_of_the_repository();
    let elsewhere = repo.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let out = as_a_user(&elsewhere)
        .args(["run", "../experiments/dd-write.yaml", "--repetitions", "2", "--reports", "stores"])
        .output()
        .unwrap();
    assert_a_good_dd_run(&out, &elsewhere.join("stores/dd-write"), 9 * 3);
    // and `status` and `report` from there find it by the same relative root
    let status = as_a_user(&elsewhere)
        .args(["status", "../experiments/dd-write.yaml", "--reports", "stores"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}\n{}", stdout(&status), stderr(&status));
    assert!(stdout(&status).contains("dd-write"), "{}", stdout(&status));
}

/// The body of a recipe of the justfile: the lines indented under `header`.
fn recipe(justfile: &str, header: &str) -> Vec<String> {
    let mut lines = justfile.lines().skip_while(|l| !l.starts_with(header));
    assert!(lines.next().is_some(), "the justfile has no recipe `{header}`");
    lines.take_while(|l| l.starts_with("    ")).map(|l| l.trim().to_string()).collect()
}

/// `just experiment`, exactly as the justfile has it (its `margin` variable is the debug
/// binary under test, `cargo run --bin margin --`), with its default argument.
#[test]
fn just_experiments_command_line_runs_the_default_experiment() {
    let repo = copy_of_the_repository();
    let justfile = std::fs::read_to_string(repo.path().join("justfile")).unwrap();
    let margin = justfile
        .lines()
        .find_map(|l| l.strip_prefix("margin := "))
        .expect("the justfile defines `margin`")
        .trim_matches('"');
    assert!(margin.starts_with("cargo run") && margin.ends_with("--"), "{margin}");
    let header = "experiment name=";
    let default = justfile
        .lines()
        .find_map(|l| l.strip_prefix(header))
        .and_then(|rest| rest.split('"').nth(1))
        .expect("`experiment` has a default name");
    let body = recipe(&justfile, header);
    assert_eq!(body.len(), 1, "{body:?}");
    let line = body[0].replace("{{ name }}", default);
    let args = line.strip_prefix("{{ margin }} ").expect("the recipe runs margin");
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_eq!(args, ["run", "experiments/dd-write.yaml"]);
    let out = as_a_user(repo.path()).args(&args).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = repo.path().join("reports/dd-write");
    let records = records(&store);
    // adaptive: 5 to 20 trials per cell after one warm-up
    assert!((9 * 6..=9 * 21).contains(&records.len()), "{}", records.len());
    assert!(records.iter().all(|r| r["status"] == "ok"));
    assert!(stdout(&out).contains("report"), "{}", stdout(&out));
}
