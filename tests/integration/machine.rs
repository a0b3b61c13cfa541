//! The rebootable test machine of the boots tests: a real sshd on loopback whose
//! "reboot", a BMC script each test gives, stops it, lays out a new boot under the
//! daemon's `MARGIN_SYSROOT` (a new boot_id, the facts or the version booted) and starts
//! it again. Needs `/usr/sbin/sshd` and root, as the hosts tests do.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::hosts::{Keys, free_port};
use super::{as_a_user, stderr};

pub(crate) struct Machine {
    keys: Keys,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) port: u16,
}

impl Machine {
    /// Up, booted by `bmc` (a bash script, `FIXTURES` in it the sysroot fixtures' folder)
    /// called as `machine.sh boot FIRST`; its calls are counted from the next.
    pub(crate) fn new(bmc: &str, first: &str) -> Self {
        let keys = Keys::new();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let _ = std::fs::create_dir_all("/run/sshd");
        std::fs::write(
            dir.path().join("sshd.conf"),
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {keys}/host\nAuthorizedKeysFile {keys}/client.pub\n\
                 PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 UsePAM no\nStrictModes no\nPidFile {dir}/sshd.pid\nSetEnv MARGIN_SYSROOT={dir}/root\n",
                keys = keys.path().display(),
                dir = dir.path().display(),
            ),
        )
        .unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysroot");
        let script = dir.path().join("machine.sh");
        std::fs::write(&script, bmc.replace("FIXTURES", &fixtures.display().to_string())).unwrap();
        let m = Machine { keys, dir, port };
        m.call(&["chmod", "+x", &script.display().to_string()]);
        m.call(&[&script.display().to_string(), "boot", first]);
        m.touch("calls", "");
        m
    }

    /// Runs `argv`, which must succeed.
    pub(crate) fn call(&self, argv: &[&str]) {
        let out = Command::new(argv[0]).args(&argv[1..]).output().unwrap();
        assert!(out.status.success(), "{argv:?}: {}", stderr(&out));
    }

    /// The BMC script.
    pub(crate) fn script(&self) -> PathBuf {
        self.dir.path().join("machine.sh")
    }

    /// Writes the file `name` of the machine's folder (what its script reads).
    pub(crate) fn touch(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join(name), text).unwrap();
    }

    /// The script's calls since the machine came up, one line each.
    pub(crate) fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls")).unwrap().lines().map(String::from).collect()
    }

    /// A `hosts:` entry for the machine, without `boot:`.
    pub(crate) fn entry(&self) -> String {
        self.keys.host(self.port)
    }

    /// A `hosts:` entry for the machine with this `boot:` recipe (a flow mapping's inside).
    pub(crate) fn host(&self, boot: &str) -> String {
        format!("{}, boot: {{ {boot} }} }}", self.entry().trim_end_matches('}').trim_end())
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.path().join("sshd.pid")) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
    }
}

/// The records of one of a store's logs (`boots.ndjson`, `runs.ndjson`, …); none when it
/// is not there yet.
pub(crate) fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// margin with `args`, as a user runs it in `dir`, killed with SIGKILL once boot `boot`
/// is requested in `store` (the machine then rebooting), within `within`.
pub(crate) fn kill_once_boot_is_requested(
    dir: &Path,
    args: &[&str],
    store: &Path,
    boot: u64,
    within: Duration,
) {
    let mut child = as_a_user(dir).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + within;
    loop {
        let boots = lines(&store.join("boots.ndjson"));
        if boots.iter().any(|b| b["boot"] == boot && b["event"] == "requested") {
            break;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("margin ended ({status}) before boot {boot}: {boots:?}");
        }
        assert!(Instant::now() < deadline, "boot {boot} was never requested: {boots:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
