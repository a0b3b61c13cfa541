//! A store is self-contained: it keeps the experiment file it was run with, so `margin
//! report|status|export` read it without that file, and say which file they used. And
//! on a terminal the answer is cut to what a person reads.
//!
//! Run as a user does: a temporary folder as the working directory, relative paths, the
//! default store root (`reports`), no `MARGIN_*` variable set.

use std::path::{Path, PathBuf};

use super::{stderr, stdout};

const EXP: &str = "matrix:\n  n: [1, 2]\nrun: printf 'value=%s\\n' {{ n }}{{ repetition }}\n\
                   metrics:\n  value: { regex: 'value=(\\d+)', better: higher }\nrepetitions: 3\n\
                   analysis:\n  compare:\n    - { factor: n, baseline: 1 }\n";

/// A working directory with `experiments/exp.yaml`.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new(yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("experiments")).unwrap();
        std::fs::write(dir.path().join("experiments/exp.yaml"), yaml).unwrap();
        Project { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// margin in the project's folder, with nothing of margin's preset.
    fn margin(&self, args: &[&str]) -> std::process::Output {
        super::as_a_user(self.dir.path()).args(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> std::process::Output {
        let out = self.margin(args);
        assert!(out.status.success(), "margin {args:?}:\n{}\n{}", stdout(&out), stderr(&out));
        out
    }

    /// margin on a terminal (`script` gives it one): what the terminal showed, lines
    /// without their carriage returns.
    fn on_a_terminal(&self, args: &[&str]) -> Vec<String> {
        let margin = assert_cmd::cargo::cargo_bin!("margin");
        let command = format!("{} {}", margin.display(), args.join(" "));
        let out = super::without_margin_env(&mut std::process::Command::new("script"))
            .args(["-qec", &command, "/dev/null"])
            .current_dir(self.dir.path())
            .output()
            .expect("script (bsdutils) runs a command on a terminal");
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{command}:\n{shown}");
        shown.lines().map(|l| l.trim_end_matches('\r').to_owned()).collect()
    }

    /// The kept experiment files: `experiments/<hash>/<name>` of the store, sorted.
    fn copies(&self) -> Vec<PathBuf> {
        let root = self.path("reports/exp/experiments");
        let mut out = Vec::new();
        for hash in std::fs::read_dir(&root).unwrap() {
            for file in std::fs::read_dir(hash.unwrap().path()).unwrap() {
                out.push(file.unwrap().path().strip_prefix(self.dir.path()).unwrap().to_path_buf());
            }
        }
        out.sort();
        out
    }
}

fn the_copy(p: &Project) -> String {
    let copies = p.copies();
    assert_eq!(copies.len(), 1, "{copies:?}");
    copies[0].display().to_string()
}

#[test]
fn report_status_and_export_read_a_store_without_its_experiment_file() {
    let p = Project::new(EXP);
    p.ok(&["run", "experiments/exp.yaml"]);
    // kept under its own name, in a folder named by the spec hash the sessions record
    let copy = the_copy(&p);
    assert!(copy.starts_with("reports/exp/experiments/") && copy.ends_with("/exp.yaml"), "{copy}");
    assert_eq!(std::fs::read_to_string(p.path(&copy)).unwrap(), EXP);
    let sessions = std::fs::read_to_string(p.path("reports/exp/sessions.ndjson")).unwrap();
    let hash = Path::new(&copy).parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    assert!(sessions.contains(&format!("\"spec_hash\":\"{hash}\"")), "{sessions}");

    std::fs::rename(p.path("experiments/exp.yaml"), p.path("exp.yaml.old")).unwrap();
    std::fs::remove_file(p.path("reports/exp/report.md")).unwrap();
    let used = format!("experiment file {copy}, the store's copy from its last session");

    let out = p.ok(&["report", "reports/exp"]);
    let text = stdout(&out);
    assert!(text.starts_with("exp: "), "{text}");
    assert!(text.lines().nth(1).is_some_and(|l| l.trim() == used), "{text}");
    assert!(text.contains("value: 2 is "), "the answer: {text}");
    let report =
        std::fs::read_to_string(p.path("reports/exp/report.md")).expect("the report is written again");
    assert!(report.contains(&format!("Experiment file `{copy}`")), "{report}");

    let out = p.ok(&["status", "reports/exp"]);
    let text = stdout(&out);
    assert!(text.starts_with(&format!("exp ({copy}, the store's copy from its last session)\n")), "{text}");
    assert!(text.contains("cells: 2 — 2 done"), "{text}");

    let out = p.ok(&["export", "reports/exp", "--format", "csv"]);
    let csv = stdout(&out);
    assert!(csv.lines().count() > 6 && csv.contains("value"), "{csv}");
    assert!(stderr(&out).contains(&used), "{}", stderr(&out));

    let out = p.ok(&["report", "reports/exp", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is summary.json alone");
    assert_eq!(json["experiment"], "exp");
    assert!(stderr(&out).contains(&used), "{}", stderr(&out));

    // NAME: no experiment file has it, so the store of that name in the store root
    let out = p.ok(&["report", "exp"]);
    let text = stdout(&out);
    assert!(text.contains("the store's copy from its last session"), "{text}");
    assert!(text.contains(&format!("{hash}/exp.yaml")), "{text}");
    let out = p.ok(&["status", "exp"]);
    assert!(stdout(&out).contains("cells: 2 — 2 done"), "{}", stdout(&out));
    // `status` alone lists the stores no experiment file names, by the copy they keep
    let out = p.ok(&["status"]);
    let text = stdout(&out);
    let header = text.lines().next().unwrap_or_default();
    assert!(
        header.starts_with("exp (/")
            && header.ends_with(&format!("{copy}, the store's copy from its last session)")),
        "{text}"
    );
    assert!(text.contains("cells: 2 — 2 done"), "{text}");

    // a store folder anywhere, under any name, with --reports elsewhere
    std::fs::rename(p.path("reports/exp"), p.path("moved")).unwrap();
    let out = p.ok(&["report", "moved", "--reports", "elsewhere"]);
    assert!(stdout(&out).contains("the store's copy"), "{}", stdout(&out));
    assert!(p.path("moved/report.md").is_file());
    assert!(!p.path("elsewhere").exists(), "nothing is written anywhere else");
}

#[test]
fn a_changed_experiment_gets_a_copy_of_its_own_and_the_store_reads_the_last() {
    let p = Project::new(EXP);
    p.ok(&["run", "experiments/exp.yaml"]);
    let first = the_copy(&p);
    let modified = std::fs::metadata(p.path(&first)).unwrap().modified().unwrap();
    p.ok(&["run", "experiments/exp.yaml"]);
    assert_eq!(p.copies(), [PathBuf::from(&first)], "the same file: one copy");
    assert_eq!(std::fs::metadata(p.path(&first)).unwrap().modified().unwrap(), modified, "left as it was");

    let second_text = EXP.replace("repetitions: 3", "repetitions: 4");
    std::fs::write(p.path("experiments/exp.yaml"), &second_text).unwrap();
    p.ok(&["run", "experiments/exp.yaml"]);
    let copies = p.copies();
    assert_eq!(copies.len(), 2, "{copies:?}");
    assert_eq!(std::fs::read_to_string(p.path(&first)).unwrap(), EXP, "the first copy is kept as it was");
    let second = copies.iter().find(|c| c.display().to_string() != first).unwrap().display().to_string();
    assert_eq!(std::fs::read_to_string(p.path(&second)).unwrap(), second_text);

    // edited again but not run: the store folder reads with what its trials ran with, the
    // name with the experiment file
    std::fs::write(p.path("experiments/exp.yaml"), EXP.replace("repetitions: 3", "repetitions: 6")).unwrap();
    let out = p.ok(&["report", "reports/exp"]);
    assert!(
        stdout(&out).contains(&format!("experiment file {second}, the store's copy")),
        "{}",
        stdout(&out)
    );
    let out = p.ok(&["report", "exp"]);
    assert!(stdout(&out).contains("experiment file experiments/exp.yaml\n"), "{}", stdout(&out));
    let out = p.ok(&["report", "experiments/exp.yaml", "--json"]);
    assert!(stderr(&out).contains("experiment file experiments/exp.yaml"), "{}", stderr(&out));
}

#[test]
fn a_store_without_a_copy_or_an_unknown_name_is_a_clear_error() {
    let p = Project::new(EXP);
    p.ok(&["run", "experiments/exp.yaml"]);
    // as a store written before margin kept copies
    std::fs::rename(p.path("reports/exp/experiments"), p.path("kept-aside")).unwrap();
    std::fs::rename(p.path("experiments/exp.yaml"), p.path("exp.yaml.old")).unwrap();
    for command in ["report", "status", "export"] {
        let mut args = vec![command, "reports/exp"];
        if command == "export" {
            args.extend(["--format", "csv"]);
        }
        let out = p.margin(&args);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("reports/exp: the store keeps no copy of the experiment file"), "{err}");
        assert!(
            err.contains(&format!("hint: give the experiment file, `margin {command} path/to/exp.yaml`")),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = p.margin(&["report", "nothing"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("`nothing` is not a file, nor the name of an experiment in experiments/ (none)"),
        "{err}"
    );
    assert!(err.contains("reports (exp)"), "the stores there are listed: {err}");
    // a folder that is not a store
    let out = p.margin(&["report", "experiments"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is a folder but not a store"), "{}", stderr(&out));
}

#[test]
fn import_keeps_a_copy_too() {
    let p = Project::new(EXP);
    std::fs::write(p.path("out.txt"), "value=7\n").unwrap();
    p.ok(&["import", "experiments/exp.yaml", "--set", "n=1", "out.txt"]);
    let copy = the_copy(&p);
    assert_eq!(std::fs::read_to_string(p.path(&copy)).unwrap(), EXP);
    std::fs::remove_file(p.path("experiments/exp.yaml")).unwrap();
    let out = p.ok(&["status", "reports/exp"]);
    assert!(stdout(&out).contains("1 measured (1 imported)"), "{}", stdout(&out));
}

/// `report.template` is relative to the experiment file: the store keeps the template
/// beside its copy, so the report is the same without either.
#[test]
fn the_report_template_beside_the_file_is_kept_with_it() {
    let p = Project::new(&format!("{EXP}report: {{ template: templates/short.md.j2 }}\n"));
    std::fs::create_dir(p.path("experiments/templates")).unwrap();
    std::fs::write(p.path("experiments/templates/short.md.j2"), "# {{ summary.experiment }}, in short\n")
        .unwrap();
    p.ok(&["run", "experiments/exp.yaml"]);
    std::fs::remove_dir_all(p.path("experiments")).unwrap();
    std::fs::remove_file(p.path("reports/exp/report.md")).unwrap();
    p.ok(&["report", "reports/exp"]);
    assert_eq!(std::fs::read_to_string(p.path("reports/exp/report.md")).unwrap(), "# exp, in short\n");
}

/// 25 levels against the first: 24 comparisons, more than a terminal is shown.
fn many() -> String {
    let levels: Vec<String> = (1..=25).map(|n| n.to_string()).collect();
    EXP.replace("[1, 2]", &format!("[{}]", levels.join(", "))).replace("repetitions: 3", "repetitions: 2")
}

fn comparison_lines(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.starts_with("  value: ")).count()
}

#[test]
fn a_terminal_is_shown_twenty_comparisons_then_the_counts_and_where_the_rest_are() {
    let p = Project::new(&many());
    let out = p.ok(&["run", "experiments/exp.yaml"]);
    // not a terminal: every comparison, for scripts
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(comparison_lines(&lines), 24, "{lines:#?}");
    let out = p.ok(&["report", "exp"]);
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(comparison_lines(&lines), 24, "{lines:#?}");

    for args in [&["report", "exp"][..], &["run", "experiments/exp.yaml"][..]] {
        let shown = p.on_a_terminal(args);
        assert_eq!(comparison_lines(&shown), 20, "{args:?}: {shown:#?}");
        // the biggest difference first: 25 against 1
        let first = shown.iter().find(|l| l.starts_with("  value: ")).unwrap();
        assert!(first.starts_with("  value: 25 is "), "{first}");
        let more =
            shown.iter().position(|l| l.starts_with("  … and 4 more (20 of 24 shown")).unwrap_or_else(|| {
                panic!("{args:?}: {shown:#?}");
            });
        assert!(shown[more].contains("All 24: 24 real differences"), "{}", shown[more]);
        let command = if args[0] == "run" { "experiments/exp.yaml" } else { "exp" };
        assert!(
            shown[more + 1].starts_with(&format!("  every comparison: `margin report {command} | less`")),
            "{}",
            shown[more + 1]
        );
        assert!(shown[more + 1].contains("reports/exp/summary.json"), "{}", shown[more + 1]);
    }
}
