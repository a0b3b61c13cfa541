//! Telemetry checked against known load on this machine: a direct dd's bytes reach the
//! disk under test, a busy loop's CPU time shows in the host's user time, a dd the page
//! cache absorbs is warned about; `monitor:` selects, disables and is validated.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use super::{as_a_user, records, stderr, stdout};

/// `yaml` written to `dir/file` and run there as the README says (`margin run FILE`, the
/// store under `reports/`), which must succeed.
fn run_as_a_user(dir: &Path, file: &str, yaml: &str) {
    std::fs::write(dir.join(file), yaml).unwrap();
    let out = as_a_user(dir).args(["run", file]).output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
}

/// The block device (its name in /proc/diskstats) holding `dir`, from the folder's
/// st_dev and /sys/dev/block/MAJOR:MINOR; `None` on an overlay, tmpfs or the like.
fn block_device(dir: &Path) -> Option<String> {
    let dev = std::fs::metadata(dir).ok()?.dev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let link = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let name = link.file_name()?.to_string_lossy().into_owned();
    let diskstats = std::fs::read_to_string("/proc/diskstats").ok()?;
    diskstats.lines().any(|l| l.split_whitespace().nth(2) == Some(name.as_str())).then_some(name)
}

/// A scratch folder on a real block device, and the device: the temporary directory if
/// it is on one, else the build's target folder, /var/tmp or the home folder.
///
/// A test that needs one fails, saying why, where none is found: it never passes without
/// checking anything (where the folders sat on an overlay, both once passed so).
fn on_a_disk() -> (tempfile::TempDir, String) {
    let mut candidates: Vec<PathBuf> = vec![std::env::temp_dir(), PathBuf::from(env!("CARGO_TARGET_TMPDIR"))];
    candidates.push(PathBuf::from("/var/tmp"));
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home));
    }
    let found = candidates.iter().find_map(|dir| {
        let device = block_device(dir)?;
        Some((tempfile::tempdir_in(dir).ok()?, device))
    });
    found.unwrap_or_else(|| {
        panic!(
            "no writable folder on a block device among {candidates:?} (overlay or tmpfs only?): \
             this test reads the disk's own counters and cannot check anything without one; \
             run it where TMPDIR or HOME is on a disk"
        )
    })
}

/// The two tests that read what the disk wrote during their trials take turns: the
/// direct dd of one is written to the disk while the other's trials must see almost
/// nothing written there (it failed about one run in ten side by side).
static DISK: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_direct_dd_shows_at_least_its_bytes_written_to_the_disk_under_test() {
    let _disk = DISK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (dir, device) = on_a_disk();
    run_as_a_user(
        dir.path(),
        "e.yaml",
        &format!(
            "run: dd if=/dev/zero of={}/direct.bin bs=1M count=16 oflag=direct\nmatrix:\n  bs: [1M]\nparse: dd\nrepetitions: 3\n",
            dir.path().display()
        ),
    );
    let store = dir.path().join("reports/e");
    let trials = records(&store);
    assert_eq!(trials.len(), 3);
    let key = format!("disk_written_bytes:{device}");
    for t in &trials {
        let dd = t["metrics"]["bytes"].as_f64().unwrap();
        assert_eq!(dd, 16.0 * 1024.0 * 1024.0);
        let disk = t["telemetry"]["metrics"][&key].as_f64().unwrap_or(0.0);
        assert!(
            disk >= dd,
            "{device} wrote {disk} B during a trial whose dd wrote {dd} B with oflag=direct: {t}"
        );
        assert_eq!(t["telemetry"]["sources"], serde_json::json!(["cpu", "disks"]), "the default");
        // the evidence: both snapshots, kept before the record
        let text = std::fs::read_to_string(store.join(t["telemetry"]["raw"].as_str().unwrap())).unwrap();
        let raw = &text[t["telemetry"]["offset"].as_u64().unwrap() as usize..];
        let head = format!(
            "margin-telemetry trial {}\nmargin-telemetry before\n==> /proc/stat <==\ncpu ",
            t["trial"].as_str().unwrap()
        );
        assert!(raw.starts_with(&head), "{raw}");
        assert!(raw.contains("\nmargin-telemetry after\n==> /proc/stat <==\n"), "{raw}");
        assert!(raw.contains(&format!(" {device} ")), "{raw}");
    }
    let report = std::fs::read_to_string(store.join("report.md")).unwrap();
    assert!(report.contains("## What the machines did"), "{report}");
    assert!(!report.contains("page cache absorbed"), "a direct dd reached the disk: {report}");
}

#[test]
fn a_busy_loop_shows_in_the_hosts_user_time() {
    let dir = tempfile::tempdir().unwrap();
    run_as_a_user(
        dir.path(),
        "e.yaml",
        "matrix:\n  n: [200000]\nrun: \"i=0; while [ $i -lt {{ n }} ]; do i=$((i+1)); done\"\nrepetitions: 3\nmetrics:\n  user_time: {}\n",
    );
    let cpus = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count() as f64;
    for t in records(&dir.path().join("reports/e")) {
        let m = &t["telemetry"]["metrics"];
        let user = m["cpu_user_pct"].as_f64().unwrap();
        let shares: f64 =
            ["cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_idle_pct"]
                .iter()
                .map(|k| m[*k].as_f64().unwrap())
                .sum();
        assert!(shares <= 100.0 + 1e-9, "{m}");
        // The loop's own CPU time (wait4's, measured apart from /proc/stat) is part of the
        // host's user time: one CPU busy for the whole trial is 100/cpus % of all of them.
        // The machine may be shared, so the loop may have had less than a whole CPU; the
        // host's user time is at least what it used (less a tick of rounding at 100 Hz).
        let (loop_user, wall) =
            (t["metrics"]["user_time"].as_f64().unwrap(), t["wall_time"].as_f64().unwrap());
        let own = 100.0 * loop_user / (wall * cpus);
        let tick = 100.0 * 0.01 / (wall * cpus);
        assert!(
            user >= 0.9 * own - 2.0 * tick,
            "host user {user:.1} % < the loop's own {own:.1} % of {cpus} CPUs (one CPU = {:.1} %): {t}",
            100.0 / cpus
        );
        assert!(loop_user > 0.05, "the loop burnt CPU: {t}");
    }
}

/// The README's way: `margin run FILE` in a folder, the store under `reports/`. A new
/// file each trial: ext4 writes a file truncated and rewritten back on close
/// (`auto_da_alloc`), which is the disk's doing, not the page cache's. 256 MiB a trial:
/// the warning needs the disk to write under a tenth of that meanwhile, and other
/// processes' writes (the other tests, a build) must not reach it; at 64 MiB they did,
/// one run in five on a busy machine.
#[test]
fn a_dd_into_the_page_cache_is_warned_about_as_a_user_runs_it() {
    let _disk = DISK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    run_as_a_user(
        dir.path(),
        "cached.yaml",
        "matrix:\n  bs: [1M]\nrun: dd if=/dev/zero of=cached-{{ repetition }}.bin bs={{ bs }} count=256\nparse: dd\nrepetitions: 5\n",
    );
    let report = std::fs::read_to_string(dir.path().join("reports/cached/report.md")).unwrap();
    assert!(report.contains("the page cache absorbed the writes"), "{report}");
    assert!(report.contains("bs=1M: dd reported "), "{report}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("reports/cached/summary.json")).unwrap(),
    )
    .unwrap();
    assert!(summary["warnings"].as_array().unwrap().iter().any(|w| w["kind"] == "page_cache"), "{summary}");
    let cell = &summary["telemetry"]["cells"][0];
    assert_eq!(cell["trials"], 5);
    assert!(cell["values"]["cpu_user_pct"]["mean"].is_number(), "{cell}");
    // never a verdict's metric unless named
    assert!(
        summary["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| !m["name"].as_str().unwrap().starts_with("cpu_"))
    );
}

#[test]
fn monitor_none_reads_nothing_and_a_named_secondary_metric_is_a_main_one() {
    let dir = tempfile::tempdir().unwrap();
    run_as_a_user(
        dir.path(),
        "off.yaml",
        "matrix:\n  x: [1]\nrun: \"true\"\nrepetitions: 2\nmonitor: none\n",
    );
    run_as_a_user(
        dir.path(),
        "on.yaml",
        "matrix:\n  x: [1]\nrun: sleep 0.05\nrepetitions: 2\nmonitor: [cpu, vmstat]\nmetrics:\n  cpu_idle_pct: { better: higher }\n",
    );
    for t in records(&dir.path().join("reports/off")) {
        assert!(t.get("telemetry").is_none(), "{t}");
    }
    let raw: Vec<String> = std::fs::read_dir(dir.path().join("reports/off/raw"))
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    assert!(raw.iter().all(|f| !f.ends_with(".telemetry")), "{raw:?}");
    for t in records(&dir.path().join("reports/on")) {
        assert_eq!(t["telemetry"]["sources"], serde_json::json!(["cpu", "vmstat"]));
        assert!(t["telemetry"]["metrics"]["vm_pages_written"].is_number(), "{t}");
        assert!(t["telemetry"]["metrics"].get("disk_written_bytes:vda").is_none());
        assert_eq!(t["metrics"]["cpu_idle_pct"], t["telemetry"]["metrics"]["cpu_idle_pct"], "{t}");
        assert_eq!(t["metric_info"]["cpu_idle_pct"]["unit"], "%");
    }
    let summary = std::fs::read_to_string(dir.path().join("reports/on/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert!(summary["metrics"].as_array().unwrap().iter().any(|m| m["name"] == "cpu_idle_pct"), "{summary}");
}

#[test]
fn a_bad_monitor_is_an_error_at_its_place_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "matrix:\n  x: [1]\nrun: \"true\"\nmonitor: [cpu, disk]\nmetrics:\n  net_rx_bytes:lo: {}\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["check", "bad.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("bad.yaml:4:16: monitor: unknown source `disk`"), "{err}");
    assert!(err.contains("did you mean `disks`?"), "{err}");
    assert!(err.contains("bad.yaml:6:3: metric `net_rx_bytes:lo` is read from `net` telemetry"), "{err}");
    std::fs::write(dir.path().join("word.yaml"), "matrix:\n  x: [1]\nrun: \"true\"\nmonitor: off\n").unwrap();
    let out = as_a_user(dir.path()).args(["check", "word.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("word.yaml:4:10: monitor: expected `none` or a list of sources, found `off`"),
        "{}",
        stderr(&out)
    );
}

/// A real fio run with `--steadystate`: the criterion it cannot meet in its runtime
/// (a slope of 0.0001 %) flags every trial of its level, next to the cell and the verdicts.
#[test]
fn fio_steadystate_not_attained_marks_the_cell_and_its_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    run_as_a_user(
        dir.path(),
        "ss.yaml",
        "matrix:\n  ss: ['iops:50%', 'iops_slope:0.0001%']\n\
         run: fio --directory={{ workdir }} --size=4M --bs=4k --ioengine=psync --name=ss --rw=randread --time_based --runtime=3 --steadystate={{ ss }} --ss_dur=2 --output-format=json\n\
         parse: fio\nmetrics:\n  ss.read.iops: {}\nrepetitions: 2\nanalysis:\n  compare:\n    - factor: ss\n      baseline: 'iops:50%'\n",
    );
    for t in records(&dir.path().join("reports/ss")) {
        let slope = t["levels"]["ss"] == "iops_slope:0.0001%";
        let flags = t.get("flags").cloned().unwrap_or_default();
        assert_eq!(flags == serde_json::json!(["not_converged"]), slope, "{t}");
    }
    let report = std::fs::read_to_string(dir.path().join("reports/ss/report.md")).unwrap();
    assert!(report.contains("ss=iops_slope:0.0001% (measurement not converged: 2 of 2)"), "{report}");
    assert!(report.contains("measurement not converged (2 trials: the tool said so)"), "{report}");
    assert!(report.contains("| no: 2 of 2 |"), "{report}");
    assert!(
        report.contains("measurement not converged: the tool said its result had not settled"),
        "{report}"
    );
}

/// What the disk wrote against what the trial itself wrote (its `ru_oublock`): a plain
/// trial that writes 8 MiB with `conv=fdatasync` records those 8 MiB as its own and gets
/// no warning; a trial that writes 1 MiB while a background `dd oflag=direct` rewrites a
/// file on the same disk gets "another process wrote to the disk during the trial".
#[test]
fn another_process_writing_to_the_disk_under_test_is_warned_about() {
    let _disk = DISK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (dir, device) = on_a_disk();
    let summary_of = |name: &str| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("reports/{name}/summary.json"))).unwrap(),
        )
        .unwrap()
    };
    let foreign = |s: &serde_json::Value| {
        s["warnings"].as_array().unwrap().iter().find(|w| w["kind"] == "foreign_writes").cloned()
    };
    // alone: short trials, so that other processes of the machine have little time to write
    run_as_a_user(
        dir.path(),
        "plain.yaml",
        "matrix:\n  bs: [1M]\nrun: dd if=/dev/zero of=plain.bin bs={{ bs }} count=8 conv=fdatasync\nparse: dd\nrepetitions: 3\n",
    );
    for t in records(&dir.path().join("reports/plain")) {
        let own = t["telemetry"]["metrics"]["own_written_bytes"].as_f64().unwrap();
        let dd = t["metrics"]["bytes"].as_f64().unwrap();
        // dd's 8 MiB, and the few bytes of raw output margin saved
        assert!(own >= dd && own < dd + 65536.0, "own {own} against dd's {dd}: {t}");
        assert!(t["telemetry"]["metrics"]["dirty_before_bytes"].is_number(), "{t}");
    }
    let plain = summary_of("plain");
    assert!(foreign(&plain).is_none(), "{}", plain["warnings"]);
    // with a direct dd rewriting 256 MiB on the same disk in a loop meanwhile
    let background = std::process::Command::new("sh")
        .args(["-c", "while :; do dd if=/dev/zero of=bg.bin bs=1M count=256 oflag=direct conv=notrunc 2>/dev/null; done"])
        .current_dir(dir.path())
        .process_group(0)
        .spawn()
        .unwrap();
    let group = nix::unistd::Pid::from_raw(background.id() as i32);
    // writing before the run starts: its first block is in the file
    let writing = super::wait_until(std::time::Duration::from_secs(10), || {
        std::fs::metadata(dir.path().join("bg.bin")).is_ok_and(|m| m.len() > 0)
    });
    if !writing {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        panic!("the background dd wrote nothing to bg.bin within 10 s");
    }
    std::fs::write(
        dir.path().join("shared.yaml"),
        "matrix:\n  bs: [1M]\nrun: dd if=/dev/zero of=shared.bin bs={{ bs }} count=1 conv=fdatasync; sleep 0.5\nparse: dd\nrepetitions: 3\n",
    )
    .unwrap();
    let out = as_a_user(dir.path()).args(["run", "shared.yaml"]).output().unwrap();
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let mut background = background;
    let _ = background.wait();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let key = format!("disk_written_bytes:{device}");
    for t in records(&dir.path().join("reports/shared")) {
        let m = &t["telemetry"]["metrics"];
        let (own, disk) = (m["own_written_bytes"].as_f64().unwrap(), m[&key].as_f64().unwrap_or(0.0));
        assert!(disk > own + 32.0 * 1048576.0, "{device} wrote {disk} against the trial's {own}: {t}");
    }
    let shared = summary_of("shared");
    let warning =
        foreign(&shared).unwrap_or_else(|| panic!("no foreign_writes warning: {}", shared["warnings"]));
    let text = warning["message"].as_str().unwrap();
    assert!(text.starts_with("another process wrote to the disk during the trial"), "{text}");
    assert!(text.contains("bs=1M (") && text.contains(&format!("{device} wrote ")), "{text}");
    let report = std::fs::read_to_string(dir.path().join("reports/shared/report.md")).unwrap();
    assert!(report.contains("another process wrote to the disk during the trial"), "{report}");
}
