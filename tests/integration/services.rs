//! Services on this machine through the real binary: the shipped iperf3 experiment run as
//! a user runs it, and a service that never outlives margin — stopped after the first
//! Ctrl-C, killed with a second one, and killed by the kernel when margin is.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{as_a_user, stderr, stdout};

/// Wait until `marker` runs, or fail after 10 s.
fn wait_running(marker: &str) {
    assert!(
        super::wait_until(Duration::from_secs(10), || super::running(marker) > 0),
        "{marker} never started"
    );
}

/// Whether `marker` is gone within 10 s (a killed process takes a moment to leave /proc).
fn gone(marker: &str) -> bool {
    super::wait_until(Duration::from_secs(10), || super::running(marker) == 0)
}

/// The shipped experiments/iperf3.yaml, copied into a folder and run there as the README
/// says (`margin run iperf3.yaml`, the default store): one iperf3 server serves every
/// trial, its output is under raw/, and it is gone after the run.
#[test]
fn the_iperf3_experiment_runs_its_server_as_a_service() {
    assert!(Path::new("/usr/bin/iperf3").exists(), "install iperf3: this test drives a real server");
    let dir = tempfile::tempdir().unwrap();
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/iperf3.yaml");
    let text = std::fs::read_to_string(shipped).unwrap();
    std::fs::write(dir.path().join("iperf3.yaml"), &text).unwrap();
    let out = as_a_user(dir.path()).args(["run", "iperf3.yaml", "--repetitions", "1"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/iperf3");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(store.join("runs.ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // four cells, each a warm-up and a trial
    assert_eq!(records.len(), 8);
    assert!(
        records
            .iter()
            .all(|r| r["status"] == "ok" && r["metrics"]["receiver.throughput"].as_f64().unwrap() > 1e6)
    );
    let services: Vec<String> = std::fs::read_dir(store.join("raw"))
        .unwrap()
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".server.service.out"))
        .collect();
    assert_eq!(services.len(), 1, "one server for the run: {services:?}");
    let served = std::fs::read_to_string(store.join("raw").join(&services[0])).unwrap();
    assert!(served.contains("Server listening on 5301"), "{served}");
    // the eight tests (the ready check only looks for the listening socket)
    assert_eq!(served.matches("Accepted connection from").count(), 8, "{served}");
    assert!(gone("-p\u{0}5301"), "the iperf3 server outlived the run");
}

/// An experiment whose service is a `sleep` marked with `marker`, and trials of 0.2 s.
fn spawn_with_service(dir: &Path, marker: &str) -> Child {
    std::fs::write(
        dir.join("e.yaml"),
        format!("services:\n  server:\n    run: sleep {marker}\nmatrix:\n  n: [1, 2]\nrun: sleep 0.2\nrepetitions: 50\n"),
    )
    .unwrap();
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("margin"));
    super::without_margin_env(&mut cmd).current_dir(dir).args(["run", "e.yaml"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap()
}

fn signal(child: &Child, signal: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
}

/// Ctrl-C: the trial under way finishes, the service is stopped with the session, exit
/// 130; a second Ctrl-C kills it with the trial; margin killed outright takes it along.
#[test]
fn a_service_never_outlives_margin() {
    use nix::sys::signal::Signal;
    for (case, signals) in [
        ("one Ctrl-C", vec![Signal::SIGINT]),
        ("two", vec![Signal::SIGINT, Signal::SIGINT]),
        ("SIGKILL", vec![Signal::SIGKILL]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let marker = format!(
            "{}.{}",
            70 + std::process::id() % 1000,
            signals.len() + 3 * usize::from(case == "SIGKILL")
        );
        let mut child = spawn_with_service(dir.path(), &marker);
        wait_running(&format!("sleep\u{0}{marker}"));
        // with the service up, a trial done and the next under way when the signals come
        assert!(
            super::wait_until(Duration::from_secs(20), || super::logged(&dir.path().join("reports/e")) > 0),
            "{case}: no trial was recorded within 20 s"
        );
        std::thread::sleep(Duration::from_millis(100)); // into the next trial (0.2 s)
        for s in signals {
            signal(&child, s);
            std::thread::sleep(Duration::from_millis(50));
        }
        let status = child.wait().unwrap();
        match case {
            "SIGKILL" => assert_eq!(status.code(), None, "{case}"),
            _ => assert_eq!(status.code(), Some(130), "{case}"),
        }
        assert!(gone(&format!("sleep\u{0}{marker}")), "{case}: the service outlived margin");
    }
}
