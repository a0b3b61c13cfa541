//! Gangs through the real binary as a user runs it: two real sshd on loopback are two
//! guests of one machine, run alone and together (started at a barrier), with each
//! member's metrics, the declared aggregates and the measured start skew checked against
//! the raw output; a member that fails fails the gang's trial; bad declarations are
//! file:line:col errors.

use std::path::Path;

use super::hosts::Keys;
use super::{as_a_user, records, stderr, stdout};

fn read(store: &Path, relative: &str) -> String {
    std::fs::read_to_string(store.join(relative)).unwrap_or_default()
}

/// The two `date +%s.%N` stamps a trial's command printed first and last.
fn stamps(text: &str) -> (f64, f64) {
    let lines: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    (lines[0], *lines.last().unwrap())
}

/// dd's own summary line, "N bytes … copied, S s, …": N ÷ S, worked out here.
fn dd_rate(stderr: &str) -> (f64, f64) {
    let line = stderr.lines().find(|l| l.contains("copied")).unwrap();
    let bytes: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
    let after = line.split("copied, ").nth(1).unwrap();
    let seconds: f64 = after.split(" s").next().unwrap().parse().unwrap();
    (bytes, bytes / seconds)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Two guests of one machine, alone and as a gang: the gang's members overlap, start a
/// few milliseconds apart (the skew, measured on the hosts' clock, and recorded), and
/// each member's figures and the aggregates are those of its own raw output; no trial of
/// the machine overlaps another otherwise.
#[test]
fn a_gang_starts_its_members_together_and_aggregates_their_figures() {
    let keys = Keys::new();
    let (a, b) = (keys.start(), keys.start());
    let on_machine = |port: u16| keys.host(port).replacen("{ ", "{ machine: xen1, ", 1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.yaml"),
        format!(
            "hosts:\n  u0: {}\n  u1: {}\n\
             gangs:\n  both:\n    hosts: [u0, u1]\n    aggregate: {{ throughput: sum, bytes: sum }}\n\
             matrix:\n  host: [u0, u1, both]\n\
             run: \"date +%s.%N; dd if=/dev/zero of={{{{ workdir }}}}/f bs=64k count={{{{ 40 if host == 'u0' else 80 }}}} conv=fdatasync; sleep 0.3; date +%s.%N\"\n\
             parse: dd\nrepetitions: 3\n",
            on_machine(a.port),
            on_machine(b.port)
        ),
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "e.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/e");
    let records = records(&store);
    assert_eq!(records.len(), 9);
    let mut spans: Vec<(f64, f64, String)> = Vec::new();
    let mut skews = Vec::new();
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let trial = r["trial"].as_str().unwrap();
        // margin cannot tell what a remote trial wrote itself (the rusage is ssh's) nor
        // what one gang member did, so neither gets `own_written_bytes`
        assert!(r["telemetry"]["metrics"].get("own_written_bytes").is_none(), "{r}");
        if r["host"] != "both" {
            let (start, end) = stamps(&read(&store, r["raw"]["stdout"].as_str().unwrap()));
            spans.push((start, end, r["host"].as_str().unwrap().to_string()));
            continue;
        }
        let m = &r["metrics"];
        let mut member_spans = Vec::new();
        for (host, count) in [("u0", 40.0), ("u1", 80.0)] {
            let (bytes, rate) = dd_rate(&read(&store, &format!("raw/{trial}@{host}.err")));
            assert_eq!(bytes, count * 65536.0);
            assert_eq!(m[format!("bytes@{host}")].as_f64().unwrap(), bytes, "{r}");
            assert!(close(m[format!("throughput@{host}")].as_f64().unwrap(), rate), "{r}");
            member_spans.push(stamps(&read(&store, &format!("raw/{trial}@{host}.out"))));
        }
        let sum = |name: &str| {
            m[format!("{name}@u0")].as_f64().unwrap() + m[format!("{name}@u1")].as_f64().unwrap()
        };
        assert!(close(m["throughput"].as_f64().unwrap(), sum("throughput")), "{r}");
        assert_eq!(m["bytes"].as_f64().unwrap(), 120.0 * 65536.0);
        let walls = (m["wall_time@u0"].as_f64().unwrap(), m["wall_time@u1"].as_f64().unwrap());
        assert_eq!(m["wall_time"].as_f64().unwrap(), walls.0.max(walls.1));
        assert_eq!(r["raw"]["stdout"], format!("raw/{trial}@u0.out"));
        // the members ran at the same time
        let ((s0, e0), (s1, e1)) = (member_spans[0], member_spans[1]);
        assert!(s0 < e1 && s1 < e0, "the members did not overlap: {member_spans:?}");
        // the skew is the hosts' clock at the start of each command: what the commands'
        // own first stamps say, within the time a `date` takes
        let skew = r["telemetry"]["metrics"]["gang_start_skew"].as_f64().unwrap();
        // on loopback a few milliseconds (0.1–2.4 ms measured on the shared 2-core machine)
        assert!((0.0..0.05).contains(&skew), "skew {skew} s");
        // (a `date` on the loaded 2-core machine took up to 40 ms: 0.1 s, still a third of
        // the 0.3 s each member sleeps, which members started one after the other exceed)
        assert!(((s0 - s1).abs() - skew).abs() < 0.1, "stamps {s0} {s1}, skew {skew}");
        skews.push(skew);
        spans.push((s0.min(s1), e0.max(e1), "both".into()));
    }
    eprintln!(
        "gang start skew on loopback: {:?} ms",
        skews.iter().map(|s| (s * 1e4).round() / 10.0).collect::<Vec<_>>()
    );
    // one machine: no two of its trials (alone or the gang's) at the same time
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    for w in spans.windows(2) {
        assert!(w[0].1 <= w[1].0, "two trials of machine xen1 overlapped: {w:?}");
    }
    let report = read(&store, "report.md");
    // the unit follows the figures: ms, or µs when the skews are below a millisecond
    for text in ["### throughput@u0", "### throughput@u1", "| start skew (", "host=both"] {
        assert!(report.contains(text), "{text} missing from the report:\n{report}");
    }
    let plan = as_a_user(dir.path()).args(["plan", "e.yaml"]).output().unwrap();
    assert!(stdout(&plan).contains("host both (gang of u0, u1, started together"), "{}", stdout(&plan));
}

/// A member that fails fails the gang's trial, naming it; a member whose `prepare` fails
/// keeps every member's command from starting.
#[test]
fn a_failing_member_fails_the_gangs_trial_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.yaml"),
        "hosts: { a: {}, b: {} }\ngangs:\n  pair: { hosts: [a, b] }\nmatrix:\n  host: [pair]\n  fail: [run, prepare]\n\
         prepare: \"test {{ fail }} != prepare -o {{ host }} != b\"\n\
         run: \"echo ran on {{ host }}; test {{ fail }} != run -o {{ host }} != b\"\n\
         repetitions: 2\nmax_failures: 2\nmonitor: none\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "e.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/e");
    let records = records(&store);
    assert_eq!(records.len(), 4);
    for r in &records {
        assert_eq!(r["status"], "failed", "{r}");
        let error = r["error"].as_str().unwrap();
        let trial = r["trial"].as_str().unwrap();
        match r["levels"]["fail"].as_str().unwrap() {
            "run" => {
                assert!(error.starts_with("host `b`: the run command: exit code 1"), "{error}");
                assert_eq!(read(&store, &format!("raw/{trial}@a.out")), "ran on a\n");
                assert_eq!(read(&store, &format!("raw/{trial}@b.out")), "ran on b\n");
            }
            _ => {
                assert!(error.starts_with("host `b`: `prepare` failed: exit code 1"), "{error}");
                // prepared, but never started: the barrier let no command go
                assert!(!store.join(format!("raw/{trial}@a.out")).exists());
                assert!(r["raw"].is_null(), "{r}");
            }
        }
    }
}

/// Bad declarations: each a file:line:col error with a hint, exit 2, all in one go.
#[test]
fn bad_gangs_are_errors_naming_where() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.yaml"),
        "hosts: { a: {}, b: {} }\n\
         gangs:\n  solo: { hosts: [a] }\n  typo: { hosts: [a, bb] }\n  twice: { hosts: [a, a] }\n\
         \x20 agg: { hosts: [a, b], aggregate: { thruput: sum, wall_time: avg } }\n  idle: { hosts: [a, b] }\n\
         matrix:\n  host: [solo, typo, twice, agg]\nrun: \"true\"\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["check", "e.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for expected in [
        "e.yaml:3:9: gang `solo` has 1 host: a gang runs two or more hosts at once",
        "e.yaml:4:22: gang `typo`: host `bb` is not declared under `hosts:`",
        "e.yaml:5:23: gang `twice`: host `a` is listed twice",
        "e.yaml:6:38: gang `agg`: no trial reports the metric `thruput` to aggregate",
        "e.yaml:6:63: gang `agg`: unknown aggregate `avg` for `wall_time`",
        "e.yaml:7:3: gang `idle` is declared but no level of `host` names it",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in\n{err}");
    }
    assert!(err.contains("the trials report: wall_time, user_time, system_time"), "{err}");
}

/// A run, as a user runs it, of a gang `pair` of two hosts of this machine (`a` says 3,
/// `b` says 4, their sum aggregated) beside `a` alone.
/// Each trial sleeps 50 ms: the CPU counters of /proc/stat tick at 100 Hz, so a trial of
/// a millisecond often sees no tick and gets no CPU percentages at all.
fn pair_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.yaml"),
        "hosts: { a: {}, b: {} }\ngangs:\n  pair: { hosts: [a, b], aggregate: { rate: sum } }\nmatrix:\n  host: [a, pair]\n\
         run: \"sleep 0.05; echo rate {{ 3 if host == 'a' else 4 }}\"\nmetrics:\n  rate: { regex: 'rate (\\d+)' }\nrepetitions: 2\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "e.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    dir
}

/// `reparse` parses each member's raw output again into `metric@host` and makes the
/// aggregates again: the records come out as the run wrote them.
#[test]
fn reparse_keeps_a_gangs_members_and_aggregates() {
    let dir = pair_run();
    let store = dir.path().join("reports/e");
    let before = records(&store);
    let pair: Vec<&serde_json::Value> = before.iter().filter(|r| r["host"] == "pair").collect();
    assert_eq!(pair.len(), 2);
    for r in &pair {
        assert_eq!(
            (r["metrics"]["rate@a"].as_f64(), r["metrics"]["rate@b"].as_f64()),
            (Some(3.0), Some(4.0))
        );
        assert_eq!(r["metrics"]["rate"].as_f64(), Some(7.0));
    }
    let out = as_a_user(dir.path()).args(["reparse", "e.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("reparsed 4 trials: 0 changed"), "{}", stdout(&out));
    assert_eq!(records(&store), before);
}

/// `margin export` carries the secondary metrics (telemetry, a gang's start skew, each
/// member's counters) as rows marked `secondary`, in every format, beside the main
/// metrics (each member's and the aggregates): the values of the records.
#[test]
fn export_carries_the_secondary_metrics_and_the_members_metrics() {
    let dir = pair_run();
    let records = records(&dir.path().join("reports/e"));
    // what the rows must be: every record's metrics, then its secondary metrics
    let mut expected: Vec<(String, String, f64, bool)> = Vec::new();
    for r in &records {
        let trial = r["trial"].as_str().unwrap().to_string();
        for (m, v) in r["metrics"].as_object().unwrap() {
            expected.push((trial.clone(), m.clone(), v.as_f64().unwrap(), false));
        }
    }
    for r in &records {
        let trial = r["trial"].as_str().unwrap().to_string();
        for (m, v) in r["telemetry"]["metrics"].as_object().unwrap() {
            expected.push((trial.clone(), m.clone(), v.as_f64().unwrap(), true));
        }
    }
    assert!(expected.iter().any(|(_, m, _, s)| *s && m == "gang_start_skew"), "{records:?}");
    assert!(expected.iter().any(|(_, m, _, s)| *s && m == "cpu_user_pct@b"), "{records:?}");
    let out = as_a_user(dir.path()).args(["export", "e.yaml", "--format", "ndjson"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> =
        stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut got: Vec<(String, String, f64, bool)> = rows
        .iter()
        .map(|r| {
            let key = (r["trial"].as_str().unwrap().to_string(), r["metric"].as_str().unwrap().to_string());
            (key.0, key.1, r["value"].as_f64().unwrap(), r["secondary"].as_bool().unwrap())
        })
        .collect();
    let order = |v: &mut Vec<(String, String, f64, bool)>| {
        v.sort_by(|x, y| (x.3, &x.0, &x.1).cmp(&(y.3, &y.0, &y.1)));
    };
    order(&mut got);
    order(&mut expected);
    assert_eq!(got, expected);
    let skew = rows.iter().find(|r| r["metric"] == "gang_start_skew").unwrap();
    assert_eq!(
        (skew["unit"].as_str(), skew["host"].as_str(), skew["host_level"].as_str()),
        (Some("s"), Some("pair"), Some("pair"))
    );
    let cpu = rows.iter().find(|r| r["metric"] == "cpu_user_pct@a").unwrap();
    assert_eq!(cpu["unit"], "%");
    // parquet: the same rows, read back with polars
    let out = as_a_user(dir.path())
        .args(["export", "e.yaml", "--format", "parquet", "-o", "t.parquet"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let file = std::fs::File::open(dir.path().join("t.parquet")).unwrap();
    use polars::prelude::SerReader;
    let frame = polars::prelude::ParquetReader::new(file).finish().unwrap();
    assert_eq!(frame.height(), rows.len());
    let secondary = frame.column("secondary").unwrap().bool().unwrap();
    assert_eq!(secondary.sum().unwrap() as usize, expected.iter().filter(|e| e.3).count());
}

/// `run --dry-run` shows a gang's cell as what each member would run, rendered as itself
/// (its name, its own workdir `<cell>@<host>-SESSION`), not as one local command.
#[test]
fn a_dry_run_renders_each_members_command_on_its_host() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.yaml"),
        "hosts:\n  a: {}\n  b: {}\ngangs:\n  both:\n    hosts: [a, b]\n\
         matrix:\n  host: [a, both]\nvars: { who: \"{{ host }}\" }\nrun: \"echo {{ who }} in {{ workdir }}\"\nrepetitions: 2\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "g.yaml", "--dry-run"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("host=both: 2 trials of gang `both` (a, b started together)"), "{text}");
    for m in ["a", "b"] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("on {m}: ")))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains(&format!("`echo {m} in ")) && line.contains(&format!("@{m}-SESSION`")),
            "{line}"
        );
    }
    assert!(!dir.path().join("reports/g/runs.ndjson").exists(), "a dry run runs nothing");
}

/// A gang's members' commands are rendered once per session, as a single host's are,
/// unless they name `repetition`: then each trial renders its own.
#[test]
fn a_gangs_commands_that_name_the_repetition_render_per_trial() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("g.yaml"),
        "hosts:\n  a: {}\n  b: {}\ngangs:\n  both:\n    hosts: [a, b]\n\
         matrix:\n  host: [both]\nvars: { me: \"{{ host }}\" }\n\
         run: \"echo {{ me }} {{ repetition }}\"\nrepetitions: 3\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "g.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = dir.path().join("reports/g");
    let mut seen = Vec::new();
    for r in records(&store) {
        assert_eq!(r["status"], "ok", "{r}");
        let rep = r["repetition"].as_u64().unwrap();
        for m in ["a", "b"] {
            let text = read(&store, &format!("raw/{}@{m}.out", r["trial"].as_str().unwrap()));
            assert_eq!(text.lines().next().unwrap(), format!("{m} {rep}"), "{r}");
        }
        seen.push(rep);
    }
    assert_eq!(seen, [1, 2, 3]);
}
