//! Hosts over OpenSSH: two real sshd daemons on 127.0.0.1 are two hosts. Needs
//! `/usr/sbin/sshd` (Debian's openssh-server, which `.ci/run` installs) and root.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{stderr, stdout};

/// An sshd on a free port of 127.0.0.1 that accepts the test's client key; no change to
/// the system's ssh configuration.
pub(super) struct Sshd {
    child: Child,
    pub(super) port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .status()
        .expect("ssh-keygen (openssh-client) is needed");
    assert!(ok.success());
}

/// The client key pair, shared by the daemons of one test.
pub(super) struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        keygen(&dir.path().join("client"));
        keygen(&dir.path().join("host"));
        Keys { dir }
    }

    /// The folder of the keys: `host` (the daemon's) and `client` (margin's).
    pub(super) fn path(&self) -> &Path {
        self.dir.path()
    }

    fn client(&self) -> PathBuf {
        self.dir.path().join("client")
    }

    pub(super) fn start(&self) -> Sshd {
        let sshd = Path::new("/usr/sbin/sshd");
        assert!(sshd.exists(), "install openssh-server: these tests drive a real sshd");
        // privilege separation needs this directory (a container may lack it)
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = free_port();
        let config = self.dir.path().join(format!("sshd-{port}.conf"));
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host}\nAuthorizedKeysFile {client}.pub\n\
                 PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nPidFile none\n",
                host = self.dir.path().join("host").display(),
                client = self.client().display(),
            ),
        )
        .unwrap();
        let child = Command::new(sshd)
            .arg("-D")
            .arg("-f")
            .arg(&config)
            .arg("-E")
            .arg(self.dir.path().join(format!("sshd-{port}.log")))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(10), "sshd did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Sshd { child, port }
    }

    /// A `hosts:` entry for a daemon on `port`.
    pub(super) fn host(&self, port: u16) -> String {
        let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
        format!(
            "{{ ssh: {user}@127.0.0.1, port: {port}, identity: {}, options: [StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null, LogLevel=ERROR, ConnectTimeout=5] }}",
            self.client().display()
        )
    }
}

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new(yaml: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("e.yaml"), yaml).unwrap();
        Run { dir }
    }

    fn margin(&self, args: &[&str]) -> std::process::Output {
        super::margin()
            .env("MARGIN_REPORTS", self.dir.path().join("reports"))
            .arg(args[0])
            .arg(self.dir.path().join("e.yaml"))
            .args(&args[1..])
            .output()
            .unwrap()
    }

    /// `margin run` started, not waited for; its stdout and stderr as `output` makes them.
    fn spawn(&self, output: fn() -> Stdio) -> Child {
        Command::new(assert_cmd::cargo::cargo_bin!("margin"))
            .env("MARGIN_REPORTS", self.dir.path().join("reports"))
            .arg("run")
            .arg(self.dir.path().join("e.yaml"))
            .stdout(output())
            .stderr(output())
            .spawn()
            .unwrap()
    }

    fn records(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("reports/e/runs.ndjson"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// How long a process that should end has to leave the process table (a killed one takes
/// a moment, more on a loaded machine) before the test fails on it.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// (start, end) of a trial from its record.
fn span(r: &serde_json::Value) -> (f64, f64) {
    let start: jiff::Timestamp = r["started_at"].as_str().unwrap().parse().unwrap();
    let start = start.as_millisecond() as f64 / 1000.0;
    (start, start + r["wall_time"].as_f64().unwrap())
}

#[test]
fn two_hosts_run_in_parallel_one_trial_at_a_time_each() {
    let keys = Keys::new();
    let (a, b) = (keys.start(), keys.start());
    let run = Run::new(&format!(
        "hosts:\n  a: {}\n  b: {}\nmatrix:\n  host: [a, b]\n  n: [1, 2]\n\
         run: \"sleep 0.3; echo value={{{{ n }}}}; echo host={{{{ host }}}}\"\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)' }}\nrepetitions: 3\n",
        keys.host(a.port),
        keys.host(b.port)
    ));
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let records = run.records();
    assert_eq!(records.len(), 12);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let host = r["levels"]["host"].as_str().unwrap();
        assert_eq!(r["host"], host);
        // the remote shell timed the command and its timing line left stderr again
        let wall = r["wall_time"].as_f64().unwrap();
        assert!((0.3..0.3 + 0.25).contains(&wall), "wall {wall}");
        let err = run.dir.path().join("reports/e").join(r["raw"]["stderr"].as_str().unwrap());
        assert!(!std::fs::read_to_string(err).unwrap_or_default().contains("margin-wall"));
        let raw = std::fs::read_to_string(
            run.dir.path().join("reports/e").join(r["raw"]["stdout"].as_str().unwrap()),
        )
        .unwrap();
        assert!(raw.contains(&format!("host={host}")), "{raw}");
    }
    let on = |host: &str| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = records.iter().filter(|r| r["host"] == host).map(span).collect();
        v.sort_by(|x, y| x.0.total_cmp(&y.0));
        v
    };
    let (sa, sb) = (on("a"), on("b"));
    for spans in [&sa, &sb] {
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0 + 0.002, "two trials overlapped on one host: {w:?}");
        }
    }
    let overlap = sa.iter().any(|x| sb.iter().any(|y| x.0 < y.1 && y.0 < x.1));
    assert!(overlap, "hosts did not run in parallel: {sa:?} {sb:?}");
    // facts were gathered on each host, one session per host
    let sessions = std::fs::read_to_string(run.dir.path().join("reports/e/sessions.ndjson")).unwrap();
    let starts: Vec<serde_json::Value> = sessions
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|s: &serde_json::Value| s["event"] == "start")
        .collect();
    let mut hosts: Vec<&str> = starts.iter().map(|s| s["host"].as_str().unwrap()).collect();
    hosts.sort_unstable();
    assert_eq!(hosts, ["a", "b"]);
    assert!(starts.iter().all(|s| s["facts"]["kernel"].is_string() && s["facts"]["cpus"].is_string()));
    let status = run.margin(&["status"]);
    assert!(stdout(&status).contains("4 done"), "{}", stdout(&status));
}

#[test]
fn a_host_down_leaves_the_other_to_finish_and_is_reported() {
    let keys = Keys::new();
    let a = keys.start();
    let closed = free_port();
    let run = Run::new(&format!(
        "hosts:\n  a: {}\n  gone: {}\nmatrix:\n  host: [a, gone]\nrun: echo ok\nrepetitions: 2\n",
        keys.host(a.port),
        keys.host(closed)
    ));
    let out = run.margin(&["run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("1 of 2 cells complete"), "{text}");
    assert!(text.contains("host gone failed: host `gone` unreachable"), "{text}");
    assert!(text.contains("Connection refused"), "{text}");
    assert_eq!(run.records().len(), 2);
    let report = std::fs::read_to_string(run.dir.path().join("reports/e/report.md")).unwrap();
    assert!(report.contains("host=gone: host `gone` unreachable"), "{report}");
    // --host runs one host's cells
    let out = run.margin(&["run", "--host", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run.margin(&["run", "--host", "nowhere"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("its hosts are: a, gone"), "{}", stderr(&out));
}

#[test]
fn a_remote_timeout_leaves_no_process_behind() {
    let keys = Keys::new();
    let a = keys.start();
    let marker = format!("43.{}", std::process::id());
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\nrun: sleep {marker} & sleep {marker}\nrepetitions: 1\ntimeout: 1s\nmax_failures: 1\n",
        keys.host(a.port)
    ));
    let start = Instant::now();
    let out = run.margin(&["run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(20));
    let records = run.records();
    assert_eq!(records[0]["status"], "timeout", "{}", records[0]);
    // the "remote" host is this machine: look for the sleeps in its process table
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&marker) == 0),
        "a remote sleep outlived its timeout by {GONE_WITHIN:?}: {} left",
        super::running(&marker)
    );
}

#[test]
fn shell_metacharacters_survive_the_ssh_quoting_layer() {
    let keys = Keys::new();
    let a = keys.start();
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("pwned");
    let levels = [
        format!("a b; touch {}", pwned.display()),
        format!("$(touch {})", pwned.display()),
        "it's \"quoted\" `x` \\ $HOME * ?".to_string(),
    ];
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\n  x: [{:?}, {:?}, {:?}]\nrun: printf '%s|%s' {{{{ x }}}} \"{{{{ x }}}}\"\nrepetitions: 1\n",
        keys.host(a.port),
        levels[0],
        levels[1],
        levels[2]
    ));
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(!pwned.exists(), "a level ran as a command on the host");
    let mut printed: Vec<String> = run
        .records()
        .iter()
        .map(|r| {
            std::fs::read_to_string(
                run.dir.path().join("reports/e").join(r["raw"]["stdout"].as_str().unwrap()),
            )
            .unwrap()
        })
        .collect();
    printed.sort();
    // bare and inside the command's double quotes alike
    let mut expected: Vec<String> = levels.iter().map(|l| format!("{l}|{l}")).collect();
    expected.sort();
    assert_eq!(printed, expected);
}

/// Telemetry over ssh rides on the trial's own remote command: the counters come back
/// in the same connection, are taken out of stderr (the tool's own output stays exactly
/// as it printed it) and kept raw; a direct dd's bytes show on a disk.
#[test]
fn a_remote_hosts_telemetry_comes_back_with_its_trial() {
    let keys = Keys::new();
    let a = keys.start();
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\nrun: dd if=/dev/zero of=remote.bin bs=1M count=4 oflag=direct\nparse: dd\nrepetitions: 2\nmonitor: [cpu, disks, vmstat, net]\n",
        keys.host(a.port)
    ));
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let store = run.dir.path().join("reports/e");
    for r in run.records() {
        let t = &r["telemetry"];
        assert_eq!(t["sources"], serde_json::json!(["cpu", "disks", "vmstat", "net"]), "{r}");
        let m = t["metrics"].as_object().unwrap();
        let shares: f64 =
            ["cpu_user_pct", "cpu_system_pct", "cpu_iowait_pct", "cpu_steal_pct", "cpu_idle_pct"]
                .iter()
                .filter_map(|k| m.get(*k).and_then(|v| v.as_f64()))
                .sum();
        assert!(shares == 0.0 || (shares - 100.0).abs() < 1e-6, "{r}");
        assert!(m.contains_key("vm_pages_written"), "{r}");
        // the host's dirty pages before the trial, read there as they are here
        assert!(m["dirty_before_bytes"].as_f64().is_some_and(|b| b >= 0.0), "{r}");
        let written =
            m.iter().filter(|(k, _)| k.starts_with("disk_written_bytes:")).map(|(_, v)| v.as_f64().unwrap());
        assert!(written.fold(0.0, f64::max) >= 4.0 * 1024.0 * 1024.0, "{r}");
        // the ssh connection itself moved bytes over loopback during the trial
        assert!(m.contains_key("net_rx_bytes:lo") || m.contains_key("net_tx_bytes:lo"), "{r}");
        let text = std::fs::read_to_string(store.join(t["raw"].as_str().unwrap())).unwrap();
        let raw = &text[t["offset"].as_u64().unwrap() as usize..];
        let head = format!(
            "margin-telemetry trial {}\nmargin-telemetry before\n==> /proc/stat <==\n",
            r["trial"].as_str().unwrap()
        );
        assert!(raw.starts_with(&head), "{raw}");
        assert!(raw.contains("\nmargin-telemetry after\n==> /proc/stat <==\n"), "{raw}");
        assert!(raw.contains("==> /proc/net/dev <=="), "{raw}");
        assert!(raw.contains("\n==> /proc/meminfo <==\nDirty:"), "{raw}");
        let err = std::fs::read_to_string(store.join(r["raw"]["stderr"].as_str().unwrap())).unwrap();
        assert!(err.starts_with("4+0 records in\n4+0 records out\n"), "{err}");
        assert!(!err.contains("margin-"), "{err}");
        assert_eq!(r["metrics"]["bytes"], 4194304.0);
    }
}

/// An experiment with an iperf3 server as a service on host `srv` and client trials on
/// host `cli` (two sshd on 127.0.0.1), on a free port; `extra` is added to its text.
fn iperf3_service(keys: &Keys, srv: &Sshd, cli: &Sshd, port: u16, run: &str, extra: &str) -> Run {
    assert!(Path::new("/usr/bin/iperf3").exists(), "install iperf3: these tests drive a real server");
    Run::new(&format!(
        "hosts:\n  srv: {}\n  cli: {}\n\
         services:\n  server:\n    host: srv\n    run: iperf3 -s -B 127.0.0.1 -p {port}\n    \
         ready: iperf3 -c 127.0.0.1 -p {port} -n 1K\n    ready_timeout: 10s\n\
         matrix:\n  host: [cli]\n  streams: [1, 2]\n\
         run: {run}\nparse: iperf3\nrepetitions: 3\norder: sequential\n{extra}",
        keys.host(srv.port),
        keys.host(cli.port),
    ))
}

/// The service's raw output files in the store (stdout, stderr), one pair per start.
fn service_outputs(run: &Run) -> Vec<(String, String)> {
    let raw = run.dir.path().join("reports/e/raw");
    let mut names: Vec<String> = std::fs::read_dir(&raw)
        .unwrap()
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".server.service.err"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| {
            let read = |name: &str| std::fs::read_to_string(raw.join(name)).unwrap_or_default();
            (read(&n.replace(".err", ".out")), read(n))
        })
        .collect()
}

/// A real iperf3 server as a service on one host, client trials on another: started once
/// and ready before the first trial, its output kept under raw/, no trial of the server's
/// host meanwhile, and gone after the run.
#[test]
fn an_iperf3_server_serves_the_trials_of_another_host_and_is_gone_after() {
    let keys = Keys::new();
    let (srv, cli) = (keys.start(), keys.start());
    let port = free_port();
    let run = iperf3_service(
        &keys,
        &srv,
        &cli,
        port,
        &format!("iperf3 -c {{{{ services.server.address }}}} -p {port} -t 1 -P {{{{ streams }}}} -J"),
        "",
    );
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let records = run.records();
    assert_eq!(records.len(), 6);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["host"], "cli");
        let bits = r["metrics"]["receiver.throughput"].as_f64().unwrap();
        assert!(bits > 1e6, "{r}");
    }
    // one start for the session: the server saw the ready check and the six tests
    let outputs = service_outputs(&run);
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    let (server_out, server_err) = &outputs[0];
    assert!(server_out.contains(&format!("Server listening on {port}")), "{server_out}");
    assert_eq!(server_out.matches("Accepted connection from").count(), 7, "{server_out}");
    assert!(!server_err.contains("margin-service"), "margin's line stayed in the output: {server_err}");
    // stopped and reaped: no server on that port
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&format!("-p\0{port}")) == 0),
        "the iperf3 server outlived the run by {GONE_WITHIN:?}"
    );
}

/// The service killed in the middle of a cell: the next trial fails with that reason,
/// the service is started again and the trials after it succeed; with `max_failures: 1`
/// the cell is abandoned instead. No server is left running either way.
#[test]
fn a_service_killed_mid_cell_fails_the_next_trial_and_is_restarted_or_the_cell_abandoned() {
    let keys = Keys::new();
    let (srv, cli) = (keys.start(), keys.start());
    let port = free_port();
    // the second trial of `streams=1` kills the server (srv is this machine) and waits
    // until it is gone; `[i]perf3` does not match the trial's own command line
    let killing = |port: u16| {
        let client =
            format!("iperf3 -c {{{{ services.server.address }}}} -p {port} -t 1 -P {{{{ streams }}}} -J");
        let server = format!("'[i]perf3 -s -B 127.0.0.1 -p {port}'");
        format!(
            "\"{client}{{% if repetition == 2 and streams == 1 %}} && pkill -f {server} && while pgrep -f {server} > /dev/null; do sleep 0.05; done{{% endif %}}\""
        )
    };
    let kill = killing(port);
    let run = iperf3_service(&keys, &srv, &cli, port, &kill, "max_failures: 3\n");
    let out = run.margin(&["run"]);
    // a trial failed: exit 1
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let records = run.records();
    let of = |streams: &str| -> Vec<&serde_json::Value> {
        records.iter().filter(|r| r["levels"]["streams"] == streams).collect()
    };
    let statuses: Vec<&str> = of("1").iter().map(|r| r["status"].as_str().unwrap()).collect();
    // three successful trials make the cell; the failed one counts against max_failures
    assert_eq!(statuses, ["ok", "ok", "failed", "ok"], "{records:?}");
    let failed = of("1")[2];
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with("service `server` on host `srv` ended before this trial: "), "{error}");
    assert!(!error.contains("margin-service"), "{error}");
    assert!(failed["raw"].is_null(), "{failed}");
    assert!(of("2").iter().all(|r| r["status"] == "ok"), "{records:?}");
    // started twice: the second start served the rest
    assert_eq!(service_outputs(&run).len(), 2);
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&format!("-p\0{port}")) == 0),
        "the iperf3 server outlived the run by {GONE_WITHIN:?}"
    );

    // max_failures: 1 — the same death abandons the cell, and the other cell still runs
    let port = free_port();
    let kill = killing(port);
    let run = iperf3_service(&keys, &srv, &cli, port, &kill, "max_failures: 1\n");
    let out = run.margin(&["run"]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains(
            "abandoned host=cli streams=1: 1 failure; the last: service `server` on host `srv` ended before this trial"
        ),
        "{text}"
    );
    let records = run.records();
    let statuses: Vec<&str> = records
        .iter()
        .filter(|r| r["levels"]["streams"] == "1")
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "failed"]);
    assert_eq!(records.iter().filter(|r| r["levels"]["streams"] == "2" && r["status"] == "ok").count(), 3);
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&format!("-p\0{port}")) == 0),
        "the iperf3 server outlived the run by {GONE_WITHIN:?}"
    );
}

/// While a service runs, its host runs no other trial: `srv`'s own trials fall before the
/// service's first client trial or after its last, never among them, although the two
/// hosts otherwise run in parallel.
#[test]
fn a_services_host_runs_no_trial_of_its_own_while_it_serves() {
    let keys = Keys::new();
    let (srv, cli) = (keys.start(), keys.start());
    let marker = format!("44.{}", std::process::id());
    let run = Run::new(&format!(
        "hosts:\n  srv: {}\n  cli: {}\n\
         services:\n  server:\n    host: srv\n    run: sleep {marker}\n    when: \"host == 'cli'\"\n\
         matrix:\n  host: [cli, srv]\nrun: sleep 0.3\nrepetitions: 4\n",
        keys.host(srv.port),
        keys.host(cli.port),
    ));
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let records = run.records();
    assert_eq!(records.len(), 8);
    let spans =
        |host: &str| -> Vec<(f64, f64)> { records.iter().filter(|r| r["host"] == host).map(span).collect() };
    let served = spans("cli");
    let (first, last) = (
        served.iter().map(|s| s.0).fold(f64::INFINITY, f64::min),
        served.iter().map(|s| s.1).fold(0.0, f64::max),
    );
    for (start, end) in spans("srv") {
        assert!(
            end <= first + 0.002 || start >= last - 0.002,
            "srv ran a trial while serving: {start}..{end} within {first}..{last}"
        );
    }
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&format!("sleep\0{marker}")) == 0),
        "the service outlived the run by {GONE_WITHIN:?}"
    );
}

/// An ssh host that prints without end: its output is bounded as a local trial's is (the
/// ssh client's output goes to the same memory files), the trial fails with the reason,
/// nothing is left running there, and the run goes on with the next cell.
#[test]
fn an_ssh_host_that_prints_without_end_fails_its_trial_and_the_run_goes_on() {
    let keys = Keys::new();
    let a = keys.start();
    let marker = format!("margin-flood-{}", std::process::id());
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\n  t: [flood, fine]\n\
         run: \"{{% if t == 'flood' %}}yes {marker}{{% else %}}echo value=1{{% endif %}}\"\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)' }}\nrepetitions: 1\nmax_failures: 1\norder: sequential\n",
        keys.host(a.port)
    ));
    let out = run.margin(&["run"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let records = run.records();
    let by = |t: &str| records.iter().find(|r| r["levels"]["t"] == t).unwrap().clone();
    let flood = by("flood");
    assert_eq!(flood["status"], "failed", "{flood}");
    assert!(flood["error"].as_str().unwrap().contains("stopped after printing more than 256 MiB"), "{flood}");
    assert_eq!(by("fine")["status"], "ok");
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&marker) == 0),
        "the remote command outlived its connection by {GONE_WITHIN:?}"
    );
}

/// A remote service outlives a `kill -9` of margin (its local ssh client dies, the remote
/// command does not); the next run of the store finds it on the host by the store's
/// marker in its environment and ends it before its first trial.
#[test]
fn a_remote_service_left_by_a_killed_run_is_ended_by_the_next() {
    let keys = Keys::new();
    let srv = keys.start();
    let marker = format!("{}.{}", 300 + std::process::id() % 1000, 9);
    let run = Run::new(&format!(
        "hosts:\n  srv: {}\nservices:\n  server:\n    host: srv\n    run: sleep {marker}\n\
         matrix:\n  n: [1, 2]\nrun: sleep 0.2\nrepetitions: 30\n",
        keys.host(srv.port)
    ));
    let pattern = format!("sleep\u{0}{marker}");
    let mut child = run.spawn(Stdio::null);
    let start = Instant::now();
    while super::running(&pattern) == 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "the service never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // killed while it serves: once a trial has run with it
    assert!(
        super::wait_until(Duration::from_secs(30), || super::logged(&run.dir.path().join("reports/e")) > 0),
        "no trial was recorded within 30 s of the service's start"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // time for a wrong end to show: the service must still be there after it
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(super::running(&pattern), 1, "the remote service should have outlived kill -9");
    let out = run.margin(&["run", "--repetitions", "6"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        said.contains("on host `srv`: a run that was killed left it running") && said.contains(&marker),
        "{said}"
    );
    assert!(
        super::wait_until(GONE_WITHIN, || super::running(&pattern) == 0),
        "a service outlived the runs by {GONE_WITHIN:?}"
    );
}

/// A host's trials run in one long-lived remote shell: a command that kills it (`kill -9
/// 0` ends its whole process group there, the shell with it) fails its trial with the
/// reason, without hanging and without stopping the host; the next trial gets a new
/// shell. Output that ends without a newline, and an exit status, come back as printed.
#[test]
fn a_killed_remote_shell_fails_its_trial_and_the_next_gets_a_new_one() {
    let keys = Keys::new();
    let a = keys.start();
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\n  t: [fine, die, after]\n\
         run: \"{{% if t == 'die' %}}kill -9 0{{% else %}}printf 'value=%s' $$; printf 'to err' >&2{{% endif %}}\"\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)' }}\nrepetitions: 2\nmax_failures: 2\norder: sequential\n",
        keys.host(a.port)
    ));
    let start = Instant::now();
    let out = run.margin(&["run"]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(60), "it hung");
    let records = run.records();
    let of = |t: &str| records.iter().filter(|r| r["levels"]["t"] == t).cloned().collect::<Vec<_>>();
    let die = of("die");
    assert_eq!(die.len(), 2, "{records:?}");
    for r in &die {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(
            r["error"].as_str().unwrap().contains("the remote shell ended before the command did"),
            "{r}"
        );
    }
    let (fine, after) = (of("fine"), of("after"));
    assert_eq!(fine.len() + after.len(), 4, "{records:?}");
    for r in fine.iter().chain(&after) {
        assert_eq!(r["status"], "ok", "{r}");
        // exactly what the command printed: no newline added, nothing of margin's
        let dir = run.dir.path().join("reports/e");
        let raw = &r["raw"];
        let outp = std::fs::read_to_string(dir.join(raw["stdout"].as_str().unwrap())).unwrap();
        let errp = std::fs::read_to_string(dir.join(raw["stderr"].as_str().unwrap())).unwrap();
        assert_eq!(outp, format!("value={}", r["metrics"]["value"].as_f64().unwrap()), "{r}");
        assert_eq!(errp, "to err", "{r}");
    }
    // each trial is a shell of its own under the one that stays: other pids every time
    let pids: std::collections::HashSet<String> =
        fine.iter().chain(&after).map(|r| r["metrics"]["value"].to_string()).collect();
    assert_eq!(pids.len(), 4, "{records:?}");
}

/// The connection lost in the middle of a trial (the host's sshd and its sessions
/// killed): the trial is no result, the host stops with ssh's reason, and the run ends
/// instead of waiting on it.
#[test]
fn a_connection_lost_mid_trial_stops_the_host_with_the_reason() {
    let keys = Keys::new();
    let mut a = keys.start();
    let marker = format!("27.{}", std::process::id() % 1000);
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\nrun: sleep {marker}\nrepetitions: 3\n",
        keys.host(a.port)
    ));
    let child = run.spawn(Stdio::piped);
    let start = Instant::now();
    while super::running(&format!("sleep\u{0}{marker}")) == 0 {
        assert!(start.elapsed() < Duration::from_secs(30), "the trial never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // the daemon and everything under it (its sessions, what they run), found before the
    // daemon goes (its orphans would be init's)
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse().ok()?;
            let status = std::fs::read_to_string(entry.path().join("status")).ok()?;
            let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"))?.trim().parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut tree = vec![a.child.id() as i32];
    while let Some(more) = parents.iter().find(|(pid, ppid)| tree.contains(ppid) && !tree.contains(pid)) {
        tree.push(more.0);
    }
    let _ = a.child.kill();
    for pid in &tree[1..] {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
    }
    let out = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60), "it waited on a lost connection");
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("host a failed: ssh to `a`:"), "{said}");
    assert!(run.records().iter().all(|r| r["status"] == "ok"), "{:?}", run.records());
    // the remote sleep lost its connection, not its life (the next run's sweep would end
    // it, `a_remote_service_left_by_a_killed_run_is_ended_by_the_next`): ended here
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&format!("sleep\u{0}{marker}"))
            && let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>()
        {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// What a trial leaves running that still prints is that trial's output, as over a
/// one-shot ssh command (its end waits for the output to end): never the next trial's,
/// although both run in the host's one remote shell.
#[test]
fn what_a_remote_trial_leaves_printing_stays_in_its_own_output() {
    let keys = Keys::new();
    let a = keys.start();
    let run = Run::new(&format!(
        "hosts:\n  a: {}\nmatrix:\n  host: [a]\n  t: [leave, next]\n\
         run: \"{{% if t == 'leave' %}}(sleep 0.4; echo late=9) & echo value=1{{% else %}}sleep 0.8; echo value=2{{% endif %}}\"\n\
         metrics:\n  value: {{ regex: 'value=(\\d+)' }}\nrepetitions: 2\norder: sequential\n",
        keys.host(a.port)
    ));
    let out = run.margin(&["run"]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let dir = run.dir.path().join("reports/e");
    for r in run.records() {
        let printed = std::fs::read_to_string(dir.join(r["raw"]["stdout"].as_str().unwrap())).unwrap();
        match r["levels"]["t"].as_str().unwrap() {
            "leave" => assert_eq!(printed, "value=1\nlate=9\n", "{r}"),
            _ => assert_eq!(printed, "value=2\n", "{r}"),
        }
    }
}
