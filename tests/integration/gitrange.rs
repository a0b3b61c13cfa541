//! Levels from a git range, built per level by `setup:`, as docs/series.md shows: a
//! repository made in the test whose commits change the loop count of a benchmark
//! script, a series of its commits and a bisection of them, a level whose build fails,
//! and the range's errors.

use std::path::Path;
use std::process::Command;

use super::{as_a_user, records, stderr, stdout};

/// `git` in `repo` with `args`, its author, committer and dates fixed; its stdout.
fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .envs([
            ("GIT_AUTHOR_NAME", "t"),
            ("GIT_AUTHOR_EMAIL", "t@example.com"),
            ("GIT_COMMITTER_NAME", "t"),
            ("GIT_COMMITTER_EMAIL", "t@example.com"),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z"),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The benchmark: it does `loops` units of work and prints the count, with 2 % of
/// normal noise drawn from a seed of the commit's number and the trial's repetition, so
/// the value is the same whatever order the trials run in.
const BENCH: &str = r#"n=$(cat n); loops=$(cat loops)
awk -v n="$n" -v c="$1" -v loops="$loops" 'BEGIN { srand(n * 1000 + c); u = rand(); w = rand();
  z = sqrt(-2 * log(u + 1e-12)) * cos(6.283185307 * w); printf "work %.3f\n", loops * (1 + 0.02 * z) }'
"#;

/// A repository in `dir/repo` of `n` commits, tagged `v1` on the first: commit `i`
/// (from 0) writes `i` into `n`; from commit `slow_at` on the loop runs 10 % more; the
/// build script of commit `broken` fails (the next one mends it). The short hashes,
/// oldest first.
fn repository(dir: &Path, n: usize, slow_at: usize, broken: Option<usize>) -> Vec<String> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("bench.sh"), BENCH).unwrap();
    for i in 0..n {
        let loops = if i >= slow_at { 1100 } else { 1000 };
        std::fs::write(repo.join("n"), format!("{i}\n")).unwrap();
        std::fs::write(repo.join("loops"), format!("{loops}\n")).unwrap();
        let build = if Some(i) == broken {
            "echo 'bench.c:12: error: expected ; before }' >&2; exit 1\n"
        } else {
            "chmod +x bench.sh\n"
        };
        std::fs::write(repo.join("build.sh"), build).unwrap();
        let subject = match i {
            _ if i == slow_at => "Run the loop 10 % longer".to_owned(),
            _ if Some(i) == broken => "Break the build".to_owned(),
            _ => format!("Change {i}"),
        };
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", &subject]);
        if i == 0 {
            git(&repo, &["tag", "v1"]);
        }
    }
    git(&repo, &["log", "--reverse", "--format=%h"]).lines().map(str::to_owned).collect()
}

/// The experiment of docs/series.md: every commit of `v1..main` built into a folder of
/// its own (once: a later session finds it built), its work count measured.
fn experiment(dir: &Path, extra: &str) {
    std::fs::create_dir_all(dir.join("experiments")).unwrap();
    let yaml = format!(
        r#"matrix:
  commit: {{ git: {{ repo: ../repo, range: "v1..main" }} }}
vars:
  build: "{{{{ git.commit.repo }}}}/../builds/{{{{ commit }}}}"
setup: >-
  test -d {{{{ build }}}} || {{ rm -rf {{{{ build }}}}.tmp && mkdir -p {{{{ build }}}}.tmp &&
  git -C {{{{ git.commit.repo }}}} archive {{{{ commit }}}} | tar -x -C {{{{ build }}}}.tmp &&
  (cd {{{{ build }}}}.tmp && sh build.sh) && mv {{{{ build }}}}.tmp {{{{ build }}}}; }}
run: cd {{{{ build }}}} && sh bench.sh {{{{ repetition }}}}
metrics:
  work: {{ regex: 'work ([\d.]+)', better: lower }}
{extra}"#
    );
    std::fs::write(dir.join("experiments/x.yaml"), yaml).unwrap();
}

#[test]
fn a_series_of_thirty_commits_built_per_level_finds_the_commit_that_slowed_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let hashes = repository(dir.path(), 30, 19, Some(7));
    experiment(dir.path(), "repetitions: 4\nanalysis:\n  series:\n    - { factor: commit }\n");
    let plan = as_a_user(dir.path()).args(["plan", "experiments/x.yaml"]).output().unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(stdout(&plan).contains(&hashes.join(", ")), "the levels, oldest first:\n{}", stdout(&plan));

    let out = as_a_user(dir.path()).args(["run", "experiments/x.yaml"]).output().unwrap();
    // the broken build is a failed cell: the run says so with exit 1
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let report = std::fs::read_to_string(dir.path().join("reports/x/report.md")).unwrap();
    let (before, after) = (&hashes[18], &hashes[19]);
    let said = format!("between `{before}` (“Change 18”) and `{after}` (“Run the loop 10 % longer”): +");
    assert!(report.contains("**Changed once** along 29 levels"), "{report}");
    assert!(report.contains(&said), "{said}\n{report}");
    let left_out = format!("is in Failures): `{}` (“Break the build”).", hashes[7]);
    assert!(report.contains(&left_out), "{left_out}\n{report}");
    assert!(report.contains("`setup` failed: exit code 1: bench.c:12: error"), "{report}");
    assert!(
        report.contains(&format!("| `{}` | Break the build", hashes[7])),
        "the commits' table:\n{report}"
    );
    // the build's output is kept in the store
    let raw = dir.path().join("reports/x/raw");
    let kept = std::fs::read_dir(&raw)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .any(|text| text.contains("bench.c:12: error: expected ;"));
    assert!(kept, "the failed build's output in {}", raw.display());
    // the step's interval covers the +10 % the commit made
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("reports/x/summary.json")).unwrap())
            .unwrap();
    let change = &summary["series"][0]["change_points"][0];
    let (low, high) = (change["low"].as_f64().unwrap(), change["high"].as_f64().unwrap());
    assert!(low < 1.10 && 1.10 < high, "{change}");

    // the command the report gives confirms it: the range cut to the two commits
    let pair = format!("{before},{after}");
    let confirm =
        as_a_user(dir.path()).args(["run", "experiments/x.yaml", "--confirm", &pair]).output().unwrap();
    let text = stdout(&confirm);
    assert!(confirm.status.success(), "{text}\n{}", stderr(&confirm));
    assert!(text.contains(&format!("work: confirmed: {after} is worse than {before}")), "{text}");
}

#[test]
fn sixty_four_commits_bisected_with_a_build_per_level_name_the_slowing_one_skipping_a_broken_build() {
    let dir = tempfile::tempdir().unwrap();
    // the first midpoint, level 31 of 0…63, does not build
    let hashes = repository(dir.path(), 64, 41, Some(31));
    experiment(dir.path(), "repetitions: 4\n");
    let bisect = |json: bool| {
        let mut args = vec!["bisect", "experiments/x.yaml", "--factor", "commit"];
        if json {
            args.push("--json");
        }
        as_a_user(dir.path()).args(args).output().unwrap()
    };
    let out = bisect(true);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let answer: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer["verdict"], "found", "{answer}");
    assert_eq!(answer["first_bad"], hashes[41].as_str(), "{answer}");
    assert_eq!(answer["last_good"], hashes[40].as_str(), "{answer}");
    let measured = answer["levels_measured"].as_u64().unwrap();
    assert!(measured <= 10, "{measured} levels measured");
    let skipped: Vec<&serde_json::Value> =
        answer["steps"].as_array().unwrap().iter().filter(|s| s["decision"] == "skipped").collect();
    assert_eq!(skipped.len(), 1, "{answer}");
    assert_eq!(skipped[0]["level"], hashes[31].as_str());
    let first_bad = answer["commits"].as_array().unwrap().iter().find(|c| c["short"] == hashes[41].as_str());
    assert_eq!(first_bad.unwrap()["subject"], "Run the loop 10 % longer", "{answer}");
    // the levels measured are those the store holds trials of
    let mut levels: Vec<String> = records(&dir.path().join("reports/x"))
        .iter()
        .map(|r| r["levels"]["commit"].as_str().unwrap().to_owned())
        .collect();
    levels.sort();
    levels.dedup();
    assert_eq!(levels.len() as u64, measured);
    assert!(!levels.contains(&hashes[31]), "the broken level has no trial");
    assert!(stderr(&out).contains("failed: skipped, as `git bisect skip`"), "{}", stderr(&out));

    // done: the same command answers from the store, in Markdown
    let again = bisect(false);
    let text = stdout(&again);
    // what docs/bisect.md shows
    let _ = std::fs::write(std::env::temp_dir().join("margin-bisect-gitrange.md"), &text);
    assert!(again.status.success(), "{text}\n{}", stderr(&again));
    let first = text.lines().next().unwrap();
    assert!(
        first
            .starts_with(&format!("found: `{}` (“Run the loop 10 % longer”) made work worse: +", hashes[41])),
        "{first}"
    );
    assert!(first.ends_with(&format!("last good `{}` (“Change 40”)", hashes[40])), "{first}");
    assert!(
        text.contains(&format!("Skipped, as `git bisect skip`: `{}` (“Break the build”)", hashes[31])),
        "{text}"
    );
}

#[test]
fn the_levels_run_stay_those_of_the_store_after_new_commits() {
    let dir = tempfile::tempdir().unwrap();
    let hashes = repository(dir.path(), 4, 2, None);
    experiment(dir.path(), "repetitions: 1\n");
    let out = as_a_user(dir.path()).args(["run", "experiments/x.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let repo = dir.path().join("repo");
    std::fs::write(repo.join("n"), "4\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "A commit after the run"]);
    let new = git(&repo, &["log", "-1", "--format=%h"]).trim().to_owned();
    // `check` reads the range anew; `plan`, `run` and `report` the levels the store ran
    let check = as_a_user(dir.path()).args(["check", "experiments/x.yaml"]).output().unwrap();
    assert!(stdout(&check).contains("5 cells"), "{}", stdout(&check));
    let plan = as_a_user(dir.path()).args(["plan", "experiments/x.yaml"]).output().unwrap();
    assert!(stdout(&plan).contains(&hashes.join(", ")), "{}", stdout(&plan));
    assert!(!stdout(&plan).contains(&new), "{}", stdout(&plan));
    let again = as_a_user(dir.path()).args(["run", "experiments/x.yaml"]).output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(records(&dir.path().join("reports/x")).len(), 4, "nothing run again, the new commit not run");
    // the store reads itself without the repository
    std::fs::rename(&repo, dir.path().join("moved")).unwrap();
    let report = as_a_user(dir.path()).args(["report", "reports/x"]).output().unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
}

#[test]
fn a_range_that_does_not_resolve_is_refused_at_its_place_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    repository(dir.path(), 3, 2, None);
    std::fs::create_dir_all(dir.path().join("notrepo")).unwrap();
    experiment(dir.path(), "");
    let file = dir.path().join("experiments/x.yaml");
    let yaml = std::fs::read_to_string(&file).unwrap();
    let cases = [
        (
            "v1..nope",
            "../repo",
            "experiments/x.yaml:2:42: `git.range`: `nope` does not resolve to a commit in",
        ),
        (
            "main..v1",
            "../repo",
            "experiments/x.yaml:2:42: `git.range`: `main..v1` holds no commit after `main`",
        ),
        ("v1", "../repo", "experiments/x.yaml:2:42: `git.range`: expected `FIRST..LAST`, found `v1`"),
        (
            "v1..main",
            "../notrepo",
            "experiments/x.yaml:2:26: `git.repo`: `../notrepo` is not a git repository",
        ),
    ];
    for (range, repo, said) in cases {
        let text = yaml.replace("v1..main", range).replace("../repo", repo);
        std::fs::write(&file, text).unwrap();
        for command in ["check", "run"] {
            let out = as_a_user(dir.path()).args([command, "experiments/x.yaml"]).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{command} {range} {repo}: {}", stderr(&out));
            let all = format!("{}{}", stdout(&out), stderr(&out));
            assert!(all.contains(said), "{command}: {said}\n{all}");
            assert!(all.contains("hint: "), "{all}");
        }
        assert!(!dir.path().join("reports").exists(), "nothing stored");
    }
}
