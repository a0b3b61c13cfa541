use std::process::Command;
use std::time::Instant;

use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::*;

fn run(command: &str, timeout: Option<Duration>) -> (Execution, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let invocation = Invocation {
        command,
        dir: dir.path().to_str().unwrap(),
        stdout: &out,
        stderr: &err,
        timeout,
        sync: true,
        end_group: true,
        env: &[],
    };
    let e = execute(&invocation).unwrap();
    (e, read_raw(&out).unwrap(), read_raw(&err).unwrap())
}

/// A command started from its prepared form gets what std's `Command` gives it: the
/// same variables, in the same order, the invocation's over margin's; and again at
/// the next start, from the form kept.
#[test]
fn a_command_gets_the_environment_std_would_give_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        ("MARGIN_TEST_VARIABLE".to_string(), "a b=c".to_string()),
        ("HOME".to_string(), "/elsewhere".to_string()),
    ];
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let invocation = Invocation {
        command: "env",
        dir: dir.path().to_str().unwrap(),
        stdout: &out,
        stderr: &err,
        timeout: None,
        sync: false,
        end_group: true,
        env: &env,
    };
    let by_std = Command::new(&direct_argv("env").unwrap()[0])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let by_std = String::from_utf8(by_std.stdout).unwrap();
    assert!(by_std.contains("MARGIN_TEST_VARIABLE=a b=c\n"), "{by_std}");
    for _ in 0..2 {
        let e = execute(&invocation).unwrap();
        assert!(e.succeeded(), "{e:?}");
        assert_eq!(read_raw(&out).unwrap(), by_std);
        std::fs::remove_file(&out).unwrap();
    }
}

#[test]
fn output_goes_to_files_and_the_exit_code_is_kept() {
    let (e, out, err) = run("echo hello; echo oops >&2; exit 3", None);
    assert_eq!(e.exit_code, Some(3));
    assert!(!e.succeeded());
    assert_eq!(out, "hello\n");
    assert_eq!(err, "oops\n");
    assert_eq!(e.describe(), "exit code 3");
}

#[test]
fn cpu_time_is_measured() {
    let (e, _, _) = run("i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done", None);
    assert!(e.succeeded());
    let user = e.user.unwrap();
    assert!(user > 0.01, "user {user}");
    assert!(user <= e.wall.as_secs_f64() * 1.05 + 0.01, "user {user} wall {:?}", e.wall);
}

/// Without a pidfd (old kernels, sandboxes), the end is seen by looking every
/// millisecond: within the limit, and not before it comes.
#[test]
fn the_end_is_seen_without_a_pidfd_too() {
    let child = Command::new("sleep").arg("0.2").spawn().unwrap();
    let pid = Pid::from_raw(child.id() as i32);
    let start = Instant::now();
    assert!(!reap::ended_by_looking(pid, start + Duration::from_millis(50)).unwrap());
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert!(reap::ended_by_looking(pid, start + Duration::from_secs(5)).unwrap());
    let seen = start.elapsed();
    assert!(seen >= Duration::from_millis(190) && seen < Duration::from_secs(2), "{seen:?}");
    assert!(reap::reap(pid).unwrap().status.success());
    drop(child); // reaped above
}

/// A trial's CPU time is its own, not that of other children margin reaps meanwhile
/// (the ssh clients of other hosts' trials): a busy loop run and reaped in another
/// thread while a trial sleeps leaves the trial's time near zero.
#[test]
fn cpu_time_is_the_trials_alone() {
    let busy = std::thread::spawn(|| {
        let status = Command::new("sh")
            .args(["-c", "sleep 0.1; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
    });
    let (e, _, _) = run("sleep 0.3; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", None);
    busy.join().unwrap();
    let (user, system) = (e.user.unwrap(), e.system.unwrap());
    let (own, _, _) = run("i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", None);
    let alone = own.user.unwrap() + own.system.unwrap();
    // the trial's own loop, give or take; with the other loop counted it would be twice that
    assert!(user + system < alone * 1.6 + 0.02, "user {user} system {system}; the loop alone {alone}");
    assert!(user + system > alone * 0.5, "user {user} system {system}; the loop alone {alone}");
}

/// The `sleep` processes still running with `marker` as their argument.
fn sleeping(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker) && c.starts_with("sleep"))
        .collect()
}

#[test]
fn a_timeout_kills_the_whole_group() {
    let marker = format!("{}.{}", 300 + std::process::id() % 100, std::process::id());
    let start = Instant::now();
    let (e, _, _) =
        run(&format!("sleep {marker} & sleep {marker}; echo never"), Some(Duration::from_millis(300)));
    assert!(e.timed_out);
    assert!(start.elapsed() < Duration::from_secs(5), "the wait did not hang on a grandchild");
    std::thread::sleep(Duration::from_millis(100));
    assert!(sleeping(&marker).is_empty(), "still running: {:?}", sleeping(&marker));
}

/// A probe that hangs is killed with everything it started, as a trial is.
#[test]
fn a_capture_that_times_out_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("{}.{}", 400 + std::process::id() % 100, std::process::id());
    let start = Instant::now();
    let command = format!("sleep {marker} & sleep {marker}; echo never");
    let got = capture_argv(&["sh", "-c", &command], dir.path(), Duration::from_millis(300));
    assert!(matches!(got, Err(CaptureError::NoAnswer(_))), "{got:?}");
    assert_eq!(got.unwrap_err().to_string(), "no answer within 0 s");
    assert!(start.elapsed() < Duration::from_secs(5), "the wait did not hang on a grandchild");
    std::thread::sleep(Duration::from_millis(100));
    assert!(sleeping(&marker).is_empty(), "still running: {:?}", sleeping(&marker));
}

/// A capture that ends leaves what it started running (ssh's master connection), and
/// does not wait for it: its output is not a pipe that the background process holds.
#[test]
fn a_capture_does_not_wait_for_what_it_leaves_running() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("{}.{}", 500 + std::process::id() % 100, std::process::id());
    let start = Instant::now();
    let command = format!("sleep {marker} & echo started");
    let got = capture_argv(&["sh", "-c", &command], dir.path(), Duration::from_secs(5));
    assert_eq!(got.unwrap(), "started");
    assert!(start.elapsed() < Duration::from_secs(3), "waited for the background sleep");
    // the background shell may not have become `sleep` yet
    let seen = Instant::now();
    while sleeping(&marker).is_empty() && seen.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(sleeping(&marker).len(), 1, "the background sleep was killed");
    for pid in std::fs::read_dir("/proc").unwrap().filter_map(|d| d.ok()?.file_name().into_string().ok()) {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).replace('\0', " ").starts_with(&format!("sleep {marker}")) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid.parse().unwrap()), Signal::SIGKILL);
        }
    }
}

#[test]
fn a_capture_says_the_exit_status_and_the_end_of_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let t = Duration::from_secs(5);
    let got = capture_argv(&["sh", "-c", "echo out; echo first >&2; echo last >&2; exit 3"], dir.path(), t);
    let said = |argv: &[&str]| capture_argv(argv, dir.path(), t).unwrap_err();
    let exit_3 = got.unwrap_err();
    assert!(matches!(&exit_3, CaptureError::Failed { code: Some(3), last } if last == "last"), "{exit_3:?}");
    assert_eq!(exit_3.to_string(), "exit code 3: last");
    assert_eq!(said(&["sh", "-c", "exit 4"]).to_string(), "exit code 4");
    let signal = said(&["sh", "-c", "kill -9 $$"]);
    assert!(matches!(signal, CaptureError::Failed { code: None, .. }), "{signal:?}");
    assert_eq!(signal.to_string(), "a signal");
    let missing = said(&["/no/such/program"]).to_string();
    assert!(missing.starts_with("cannot start /no/such/program: "), "{missing}");
    assert_eq!(said(&[]).to_string(), "nothing to run");
    assert_eq!(said(&["true"]).to_string(), "no output");
}

#[test]
fn a_command_killed_by_a_signal_says_which() {
    let (e, out, _) = run("echo before; kill -9 $$", None);
    assert_eq!((e.exit_code, e.signal, e.timed_out), (None, Some(9), false));
    assert_eq!(out, "before\n");
    assert_eq!(e.describe(), "killed by signal 9");
}

#[test]
fn simple_commands_skip_the_shell_and_keep_their_meaning() {
    let argv = direct_argv("true").unwrap();
    assert!(argv[0].ends_with("/true") && argv.len() == 1, "{argv:?}");
    let argv = direct_argv("dd if=/dev/zero of='/tmp/a b' bs=1k count=3").unwrap();
    assert!(argv[0].ends_with("/dd"), "{argv:?}");
    assert_eq!(argv[1..], ["if=/dev/zero", "of=/tmp/a b", "bs=1k", "count=3"]);
    for shell in [
        "echo $HOME",
        "true; false",
        "a > b",
        "ls *",
        "X=1 env",
        "cd /tmp",
        "echo a\\nb",
        "printf x",
        "no-such-program-here",
        "sleep 1 &",
        // relative to the workdir, as the shell takes it
        "./bench.sh 4",
    ] {
        assert_eq!(direct_argv(shell), None, "{shell}");
    }
    let (e, out, _) = run("dd if=/dev/zero bs=3 count=1 status=none", None);
    assert!(e.succeeded());
    assert_eq!(out, "\0\0\0");
    let (e, _, err) = run("ls /no/such/dir", None);
    assert_eq!(e.exit_code, Some(2));
    assert!(err.contains("No such file"), "{err}");
}

/// What a trial leaves running in its process group is killed when it ends, and said.
#[test]
fn what_a_trial_leaves_running_is_killed() {
    let marker = format!("{}.{}", 40 + std::process::id() % 1000, 3);
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|d| std::fs::read(d.ok()?.path().join("cmdline")).ok())
            .filter(|c| String::from_utf8_lossy(c).contains(&format!("sleep\0{marker}")))
            .count()
    };
    let (e, out, _) = run(&format!("sleep {marker} & echo started"), None);
    assert!(e.succeeded() && e.left_running, "{e:?}");
    assert_eq!(out, "started\n");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(running(), 0, "the background sleep outlived its trial");
    let (e, _, _) = run("true", None);
    assert!(!e.left_running);
}

#[test]
fn a_relative_program_is_found_in_the_workdir_as_the_shell_would() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hello.sh");
    std::fs::write(&script, "#!/bin/sh\necho hello \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let invocation = Invocation {
        command: "./hello.sh there",
        dir: dir.path().to_str().unwrap(),
        stdout: &out,
        stderr: &err,
        timeout: None,
        sync: false,
        end_group: true,
        env: &[],
    };
    let e = execute(&invocation).unwrap();
    assert!(e.succeeded(), "{e:?}: {}", read_raw(&err).unwrap());
    assert_eq!(read_raw(&out).unwrap(), "hello there\n");
    // not there: a failed trial (the shell's 127), not an error that stops the run
    let invocation = Invocation { command: "./missing.sh", ..invocation };
    assert_eq!(execute(&invocation).unwrap().exit_code, Some(127));
}

/// A script without `#!`, named by its path: the kernel will not run it, and it runs
/// under `sh` as `posix_spawnp` and the shell run it (spawn.rs starts it again).
#[test]
fn a_script_without_a_shebang_runs_under_sh() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("plain.sh");
    std::fs::write(&script, "echo plain \"$1\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let command = format!("{} there", script.display());
    assert!(direct_argv(&command).is_some(), "started without sh: {command}");
    let (e, out, err) = run(&command, None);
    assert!(e.succeeded(), "{e:?}: {err}");
    assert_eq!(out, "plain there\n");
}

/// Run `test` in a thread of its own that blocks SIGUSR1: a command started from it
/// must not inherit that (std's `Command` gives none blocked).
fn in_a_thread_blocking_sigusr1(test: impl FnOnce() + Send + 'static) {
    std::thread::spawn(|| {
        let mut blocked = nix::sys::signal::SigSet::empty();
        blocked.add(Signal::SIGUSR1);
        blocked.thread_block().unwrap();
        test();
    })
    .join()
    .unwrap();
}

/// Where the kernel refuses `clone`, `posix_spawnp` starts the command, and it gets
/// the same as by `clone`: the folder, the environment, no signal blocked (even from
/// a thread that blocks one), its output in the files.
#[test]
fn the_posix_spawn_start_gives_what_the_clone_start_gives() {
    use std::os::fd::AsRawFd;
    in_a_thread_blocking_sigusr1(|| {
        let dir = tempfile::tempdir().unwrap();
        let env = [("MARGIN_TEST_VARIABLE".to_string(), "a b".to_string())];
        let null = std::fs::File::open("/dev/null").unwrap();
        // through the shell, and directly (sh itself may change the mask it passes on)
        let commands: [&[&str]; 2] =
            [&["sh", "-c", "pwd; echo \"$MARGIN_TEST_VARIABLE\""], &["grep", "SigBlk", "/proc/self/status"]];
        let mut outputs = Vec::new();
        for by_clone in [true, false] {
            let mut output = String::new();
            for argv in commands {
                let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
                let prepared =
                    spawn::PreparedCommand::new(&argv, dir.path().to_str().unwrap(), &env).unwrap();
                let (out, err) = (memory_file("out").unwrap(), memory_file("err").unwrap());
                let pid = if by_clone {
                    let started = spawn::start(&prepared, &out, &err).unwrap();
                    assert!(started.pidfd.is_some());
                    started.pid
                } else {
                    spawn::spawned(&prepared, [null.as_raw_fd(), out.as_raw_fd(), err.as_raw_fd()]).unwrap()
                };
                assert!(reap::reap(pid).unwrap().status.success());
                let kept = dir.path().join("kept");
                persist(out, &kept, false).unwrap();
                output += &read_raw(&kept).unwrap();
            }
            outputs.push(output);
        }
        let expected = format!("{}\na b\nSigBlk:\t0000000000000000\n", dir.path().display());
        assert_eq!(outputs, [expected.clone(), expected]);
    });
}

/// A program gone since it was found fails as the shell says it (127), a failed
/// trial, not a command that could not start.
#[test]
fn a_program_gone_fails_as_the_shell_says() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("gone");
    std::fs::copy(direct_argv("true").unwrap()[0].as_str(), &program).unwrap();
    let command = program.display().to_string();
    assert!(direct_argv(&command).is_some(), "started without sh: {command}");
    assert!(run(&command, None).0.succeeded());
    std::fs::remove_file(&program).unwrap();
    let (e, _, err) = run(&command, None);
    assert_eq!((e.exit_code, e.not_started), (Some(127), None), "{err}");
    assert!(err.contains("not found"), "{err}");
}

/// On this machine a command starts by `clone` (spawn.rs), which gives its pidfd; from
/// a thread that blocks a signal, it gets none blocked, as std's `Command` gives it.
#[test]
fn a_start_by_clone_gives_the_pidfd_and_no_signal_blocked() {
    in_a_thread_blocking_sigusr1(|| {
        let dir = tempfile::tempdir().unwrap();
        let (out, err) = (memory_file("out").unwrap(), memory_file("err").unwrap());
        let prepared =
            spawn::PreparedCommand::new(&["true".to_string()], dir.path().to_str().unwrap(), &[]).unwrap();
        let started = spawn::start(&prepared, &out, &err).unwrap();
        assert!(started.pidfd.is_some(), "started by posix_spawnp: no pidfd");
        assert!(
            reap::ended_within(started.pid, started.pidfd.as_ref(), Some(Duration::from_secs(5))).unwrap()
        );
        assert!(reap::reap(started.pid).unwrap().status.success());
        let (e, out, _) = run("grep SigBlk /proc/self/status", None);
        assert!(e.succeeded(), "{e:?}");
        assert_eq!(out, "SigBlk:\t0000000000000000\n");
    });
}

#[test]
fn capture_trims_and_fails_softly() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(capture("printf '  xen \\n'", dir.path(), Duration::from_secs(5)).as_deref(), Some("xen"));
    assert_eq!(capture("exit 1", dir.path(), Duration::from_secs(5)), None);
    assert_eq!(capture("true", dir.path(), Duration::from_secs(5)), None);
    assert_eq!(capture("sleep 5", dir.path(), Duration::from_millis(100)), None);
}
