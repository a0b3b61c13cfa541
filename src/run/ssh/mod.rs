//! The ssh executor: trials on a remote host through the system OpenSSH client.
//!
//! `BatchMode` (never a password prompt), one multiplexed connection per host
//! (`ControlMaster`, a socket in a private directory), `~/.ssh/config` respected, and the
//! host entry's port, user, identity and options. Time limits are enforced on the remote
//! side with `timeout -k`, since killing the local ssh would leave the remote command
//! running. ssh's own failure (exit 255) is a host error, not a benchmark result.

mod executor;
mod marks;
mod shell;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use super::facts::Source;
use super::process::{self, CaptureError, Invocation, ShellError};
use crate::spec::Host;

pub(crate) use marks::SERVICE_MARK;
use shell::{End, Exchange, Shell};

/// Seconds the remote `timeout` waits after its TERM before it KILLs.
const KILL_AFTER: u64 = 5;

/// Time for connecting and other short commands (facts, workdirs).
const SHORT: Duration = Duration::from_secs(60);

/// A host reached over ssh.
pub(crate) struct Ssh {
    name: String,
    /// Everything before the remote command: options, then the destination.
    args: Vec<String>,
    /// A local directory for the scratch of `capture` (ssh needs a working directory).
    local_dir: PathBuf,
    /// The fact files (`facts::FILES`) as one command fetched them, trimmed, those absent
    /// or empty left out; `None` when that command failed (each is then read alone).
    facts: OnceLock<Option<HashMap<String, String>>>,
    /// The store's marker (`orphans::MARKER`), in the environment of every trial and
    /// service on the host, so that the next run finds what a killed one left there.
    marker: Option<(String, String)>,
    /// The host's long-lived shell ([`Shell`]), started at its first command; gone after a
    /// command it did not see to its end, and started again for the next.
    shell: Mutex<Option<Shell>>,
}

impl Ssh {
    /// `control_dir`: a private directory (mode 0700) for the multiplexing sockets.
    pub(crate) fn new(name: &str, host: &Host, destination: &str, control_dir: &Path) -> Self {
        let mut args: Vec<String> =
            ["-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPersist=120"]
                .map(String::from)
                .to_vec();
        args.push("-o".into());
        args.push(format!("ControlPath={}/%C", control_dir.display()));
        args.extend(host_args(host));
        // A connection that died without a word (a host gone, a network cut) is noticed
        // within a minute, instead of a trial waiting on it for ever; after the host's
        // own options, since ssh keeps the first value it is given for each.
        args.extend(["-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"].map(String::from));
        // after `--`: a destination is never read as an option (`check` refuses one
        // beginning with `-` as well)
        args.extend(["--".to_string(), destination.to_string()]);
        Ssh {
            name: name.to_string(),
            args,
            local_dir: control_dir.to_path_buf(),
            facts: OnceLock::new(),
            marker: None,
            shell: Mutex::new(None),
        }
    }

    /// Every command it starts carries `store`'s marker for ssh hosts
    /// (`orphans::REMOTE_MARKER`: this machine's name and the store's path).
    pub(crate) fn marked(mut self, store: &std::path::Path) -> Self {
        self.marker =
            Some((super::orphans::REMOTE_MARKER.to_string(), super::orphans::remote_marker_value(store)));
        self
    }

    /// The invocation's values and the store's marker, as `K=V ` words for the host's shell.
    fn env_words(&self, invocation: &Invocation<'_>) -> String {
        invocation.env.iter().chain(&self.marker).map(|(k, v)| format!("{k}={} ", quote(v))).collect()
    }

    fn argv<'a>(&'a self, remote: &'a str) -> Vec<&'a str> {
        let mut argv: Vec<&str> = vec!["ssh"];
        argv.extend(self.args.iter().map(String::as_str));
        argv.push(remote);
        argv
    }

    /// Run a short remote command (facts, workdirs, the sweep) in the host's shell and
    /// capture its trimmed stdout; `Err` says why not, as `process::capture_argv` does.
    /// Each of them as an ssh command of its own cost the host an sshd session and a
    /// login shell (0.16 s of CPU with a `.bashrc` that runs `pyenv init`): at 64 hosts
    /// their starts took most of the run.
    fn capture(&self, remote: &str) -> Result<String, CaptureError> {
        let said =
            self.in_shell(remote, Some(std::time::Instant::now() + SHORT)).map_err(CaptureError::Shell)?;
        let last = || {
            let text = String::from_utf8_lossy(&said.err);
            text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string()
        };
        match said.end {
            End::Code(0) => {
                let text = String::from_utf8_lossy(&said.out).trim().to_string();
                if text.is_empty() { Err(CaptureError::NoOutput) } else { Ok(text) }
            }
            End::Code(code) if code > 0 => Err(CaptureError::Failed { code: Some(code), last: last() }),
            End::Code(_) => Err(CaptureError::StatusLost { last: last() }),
            End::TimedOut => Err(CaptureError::NoAnswer(SHORT)),
            End::TooMuch => Err(CaptureError::TooMuch),
            End::Closed(_) => Err(CaptureError::ShellEnded { last: last() }),
        }
    }

    /// Run `script` in the host's long-lived shell, started first when there is none (or
    /// the last one ended, or printed between commands); `Err`: no shell could be started.
    /// The host's thread holds the shell until the command's end lines came.
    fn in_shell(&self, script: &str, deadline: Option<std::time::Instant>) -> Result<Exchange, ShellError> {
        let mut slot = self.shell.lock().unwrap_or_else(PoisonError::into_inner);
        let shell = match slot.take().map(|mut shell| (shell.is_idle(), shell)) {
            Some((true, shell)) => shell,
            Some((false, shell)) => {
                shell.close();
                Shell::open(&self.argv("exec sh"), &self.local_dir)?
            }
            None => Shell::open(&self.argv("exec sh"), &self.local_dir)?,
        };
        let shell = slot.insert(shell);
        // a second Ctrl-C ends it with the rest (`process::kill_running`)
        let _abort = process::OnAbort::new(vec![
            "kill".into(),
            "-KILL".into(),
            "--".into(),
            format!("-{}", shell.child.id()),
        ]);
        let said = shell.exchange(script, deadline);
        if !matches!(said.end, End::Code(_)) {
            *slot = None; // ended: the next command starts another
        }
        Ok(said)
    }
}

/// The host entry's own ssh arguments: port, user, identity, options.
fn host_args(host: &Host) -> Vec<String> {
    let mut args = Vec::new();
    if let Some(port) = host.port {
        args.extend(["-p".into(), port.to_string()]);
    }
    if let Some(user) = &host.user {
        args.extend(["-l".into(), user.clone()]);
    }
    if let Some(identity) = &host.identity {
        args.extend(["-i".into(), expand_home(identity)]);
    }
    for option in &host.options {
        args.extend(["-o".into(), option.value.clone()]);
    }
    args
}

/// An ssh command of its own, on a connection of its own (no multiplexing: a master
/// connection does not survive the host's reboot), for `remote`: what the boot loop
/// probes and reboots with (run/boot/reboot.rs).
pub(crate) fn oneshot_argv(host: &Host, destination: &str, remote: &str) -> Vec<String> {
    let mut argv: Vec<String> =
        ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=no", "-o", "ControlPath=none"]
            .map(String::from)
            .to_vec();
    argv.extend(host_args(host));
    // after the host's options: ssh keeps the first value it is given
    argv.extend(
        ["-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=2"]
            .map(String::from),
    );
    argv.extend(["--".to_string(), destination.to_string(), remote.to_string()]);
    argv
}

/// `MARGIN_SYSROOT` on the host's side: when the host's environment sets it (a test's
/// sshd does, with `SetEnv`), its facts are read under it, as this machine's are.
pub(crate) const REMOTE_ROOT: &str = "${MARGIN_SYSROOT:-}";

fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest).to_string_lossy().into_owned(),
        _ => path.to_string(),
    }
}

fn quote(s: &str) -> String {
    // a NUL cannot pass through a shell at all: dropped, and the rest quoted as usual
    let s = s.replace('\0', "");
    shlex::try_quote(&s).map(|q| q.into_owned()).unwrap_or_else(|_| "''".into())
}

/// The line before each fact file's text in [`Ssh::fetch_facts`]' output.
const FACT_MARK: &str = "margin-fact";

impl Ssh {
    /// Every fact file in one remote command: each after a `margin-fact PATH` line.
    fn fetch_facts(&self) -> Option<HashMap<String, String>> {
        let paths: Vec<String> = super::facts::FILES.iter().map(|p| quote(p)).collect();
        let remote = format!(
            "for f in {}; do printf '\\n{FACT_MARK} %s\\n' \"$f\"; cat -- \"{REMOTE_ROOT}$f\" 2>/dev/null; done",
            paths.join(" ")
        );
        Some(fact_files(&self.capture(&remote).ok()?))
    }
}

/// [`Ssh::fetch_facts`]' output as path → trimmed text, the empty left out.
fn fact_files(text: &str) -> HashMap<String, String> {
    let mut files: HashMap<String, String> = HashMap::new();
    let mut current: Option<(&str, String)> = None;
    let mut keep = |current: Option<(&str, String)>| {
        if let Some((path, text)) = current
            && !text.trim().is_empty()
        {
            files.insert(path.to_string(), text.trim().to_string());
        }
    };
    for line in text.split_inclusive('\n') {
        let header = line.trim_end_matches('\n').strip_prefix(FACT_MARK).and_then(|r| r.strip_prefix(' '));
        match header.filter(|path| super::facts::FILES.contains(path)) {
            Some(path) => keep(current.replace((path, String::new()))),
            None => {
                if let Some((_, text)) = current.as_mut() {
                    text.push_str(line);
                }
            }
        }
    }
    keep(current);
    files
}

impl Source for Ssh {
    fn read(&self, path: &str) -> Option<String> {
        if super::facts::FILES.contains(&path)
            && let Some(files) = self.facts.get_or_init(|| self.fetch_facts())
        {
            return files.get(path).cloned();
        }
        self.capture(&format!("cat -- \"{REMOTE_ROOT}\"{}", quote(path))).ok()
    }

    fn run(&self, command: &str) -> Option<String> {
        self.capture(command).ok()
    }

    fn is_root(&self) -> bool {
        self.capture("id -u").is_ok_and(|uid| uid == "0")
    }

    /// Under the host's `MARGIN_SYSROOT`, the toolstack's answers are files of its tree
    /// (`xl-info.txt`), as for this machine (`facts::Local`).
    fn xl(&self, args: &str) -> Option<String> {
        let what = args.split_whitespace().next().unwrap_or_default();
        let file = quote(&format!("/xl-{what}.txt"));
        self.capture(&format!(
            "if [ -n \"${{MARGIN_SYSROOT:-}}\" ]; then cat -- \"$MARGIN_SYSROOT\"{file}; else xl {args}; fi"
        ))
        .ok()
    }
}

#[cfg(test)]
mod tests {
    /// The files of one round trip come apart as each `cat` alone gave them: trimmed,
    /// the absent and the empty missing, a line like a header inside a file kept.
    #[test]
    fn fact_files_come_apart_as_read_one_by_one() {
        let text = "\nmargin-fact /proc/sys/kernel/osrelease\n6.1.0-18-amd64\n\
                    \nmargin-fact /etc/os-release\nPRETTY_NAME=\"Debian\"\nmargin-fact /not/a/fact\n\
                    \nmargin-fact /proc/xen/capabilities\n\
                    \nmargin-fact /proc/cmdline\n  ro quiet \n";
        let files = super::fact_files(text);
        assert_eq!(files["/proc/sys/kernel/osrelease"], "6.1.0-18-amd64");
        assert_eq!(files["/etc/os-release"], "PRETTY_NAME=\"Debian\"\nmargin-fact /not/a/fact");
        assert_eq!(files["/proc/cmdline"], "ro quiet");
        assert!(!files.contains_key("/proc/xen/capabilities"), "empty is absent");
        assert_eq!(files.len(), 3);
    }

    /// What `quote` makes of a string, the shell reads back as that string, a NUL (which
    /// no shell argument can hold) dropped.
    #[test]
    fn quoted_text_reads_back_as_itself() {
        for text in ["plain", "a b; touch x", "it's \"q\" `x` $HOME \\", "nul\0 and ' quote", ""] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf '%s' {}", super::quote(text)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), text.replace('\0', ""), "{text:?}");
        }
    }
}
