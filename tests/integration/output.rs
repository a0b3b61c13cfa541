//! A closed stdout (`margin … | head`) ends every command quietly, with exit code 0, as
//! the reader has what it wanted; stderr says nothing a full run does not.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::stderr;

/// What a pipe holds on Linux: a command writing more is still writing when `head` leaves.
const PIPE_BUFFER: usize = 64 * 1024;

/// What `head` reads before it leaves.
const HEAD: usize = 100;

fn margin(reports: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_margin"));
    cmd.args(args).env("MARGIN_REPORTS", reports).current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// `margin … | head -c 100`: the first bytes read, then the read end closed.
fn head(mut cmd: Command) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = [0; HEAD];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    child.wait_with_output().unwrap()
}

/// stdout a pipe whose read end is closed before the command writes a byte.
fn closed(mut cmd: Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer).stderr(Stdio::piped()).output().unwrap()
}

/// A copy of the seed store `xen-bonnie` with each trial ten times over (ids of their
/// own), so that its table is bigger than a pipe holds.
fn big_store(reports: &Path) -> String {
    let store = reports.join("xen-bonnie");
    std::fs::create_dir_all(reports).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/reports/xen-bonnie"))
        .arg(&store)
        .status()
        .unwrap();
    assert!(copied.success());
    let runs = store.join("runs.ndjson");
    let mut text = String::new();
    for line in std::fs::read_to_string(&runs).unwrap().lines() {
        for copy in 0..10 {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["trial"] = format!("{}-{copy}", record["trial"].as_str().unwrap()).into();
            text.push_str(&record.to_string());
            text.push('\n');
        }
    }
    std::fs::write(&runs, text).unwrap();
    store.to_string_lossy().into_owned()
}

#[test]
fn export_into_a_pipe_closed_early_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let store = big_store(&reports);
    for format in ["csv", "ndjson"] {
        let args = ["export", store.as_str(), "--format", format];
        let full = margin(&reports, &args).output().unwrap();
        assert!(full.status.success(), "{}", stderr(&full));
        assert!(
            full.stdout.len() > PIPE_BUFFER + HEAD,
            "{format}: {} bytes fit in the pipe",
            full.stdout.len()
        );
        let out = head(margin(&reports, &args));
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        // the line that says which experiment file was used, nothing more
        assert_eq!(stderr(&out), stderr(&full), "{format}");
    }
}

#[test]
fn every_command_writing_to_stdout_ends_quietly_when_it_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let store = big_store(&reports);
    let commands: [&[&str]; 9] = [
        &["plan", "--all", "experiments/xen-mixed-dd.yaml"],
        &["plan", "--json", "experiments/xen-mixed-dd.yaml"],
        &["schema"],
        &["check", "experiments/xen-dd.yaml"],
        &["status", store.as_str()],
        &["report", store.as_str(), "--json"],
        &["export", store.as_str(), "--format", "parquet"],
        &["export", store.as_str(), "--format", "csv"],
        &["calibrate", "--experiments", "10", "--seed", "3", "--scenario", "^n3-cv5-normal-none$"],
    ];
    for args in commands {
        let full = margin(&reports, args).output().unwrap();
        assert!(full.status.success(), "{args:?}: {}", stderr(&full));
        assert!(!full.stdout.is_empty(), "{args:?} writes to stdout");
        let out = closed(margin(&reports, args));
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), stderr(&full), "{args:?}");
        if matches!(args[0], "plan" | "schema" | "check") {
            assert_eq!(stderr(&out), "", "{args:?}");
        }
    }
}

/// stderr a pipe whose read end is closed (`margin … 2>&1 | head`, the reader gone):
/// the notes a command writes there are lost, but the command does its work.
#[test]
fn a_closed_stderr_loses_the_notes_not_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    let store = big_store(&reports);
    let commands: [&[&str]; 3] = [
        &["report", store.as_str(), "--json"],
        &["export", store.as_str(), "--format", "csv"],
        &["status", store.as_str()],
    ];
    for args in commands {
        let full = margin(&reports, args).output().unwrap();
        assert!(full.status.success(), "{args:?}: {}", stderr(&full));
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = margin(&reports, args).stderr(writer).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(out.stdout, full.stdout, "{args:?}");
    }
}
