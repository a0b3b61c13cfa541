//! Facts about a host (docs/design.md §6.8), and the environment levels detected from them.
//!
//! Facts are read through a [`Source`], so that the same code serves the local machine
//! ([`Local`]) and a host over ssh (the ssh executor, which fetches all of [`FILES`] in one
//! round trip). The local source reads under a configurable root (`MARGIN_SYSROOT`), so
//! tests present fixture trees of a Xen dom0, a domU, a KVM guest and bare metal.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;

use super::process;
use crate::spec::Experiment;
use vocab::Scalar;

/// Where facts come from.
pub trait Source {
    /// The text of a file such as `/proc/cpuinfo`, if it exists.
    fn read(&self, path: &str) -> Option<String>;
    /// The trimmed output of a command, if it succeeds and prints something.
    fn run(&self, command: &str) -> Option<String>;
    /// Whether trials run as root (dropping caches needs it).
    fn is_root(&self) -> bool;
    /// What the Xen toolstack prints for `xl ARGS` (`info`, `vcpu-list Domain-0`).
    fn xl(&self, args: &str) -> Option<String> {
        self.run(&format!("xl {args}"))
    }
}

/// `MARGIN_SYSROOT` set to something that is not a folder.
#[derive(Debug, thiserror::Error)]
#[error("MARGIN_SYSROOT={}: not a folder (it stands for / when reading the host's facts)", .0.display())]
pub struct SysrootError(PathBuf);

/// `MARGIN_SYSROOT`, when set, must be a folder: a mistyped one would read as a machine
/// with no facts at all.
pub fn check_sysroot() -> Result<(), SysrootError> {
    match std::env::var_os("MARGIN_SYSROOT") {
        Some(root) if !Path::new(&root).is_dir() => Err(SysrootError(PathBuf::from(root))),
        _ => Ok(()),
    }
}

/// The machine margin runs on, seen through `root` (`/` unless `MARGIN_SYSROOT`).
#[derive(Debug, Clone)]
pub struct Local {
    pub root: PathBuf,
    pub dir: PathBuf,
}

impl Local {
    pub fn new(dir: &Path) -> Self {
        let root =
            std::env::var_os("MARGIN_SYSROOT").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
        Local { root, dir: dir.to_path_buf() }
    }
}

impl Source for Local {
    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path.trim_start_matches('/'))).ok()
    }

    fn run(&self, command: &str) -> Option<String> {
        process::capture(command, &self.dir, Duration::from_secs(30))
    }

    fn is_root(&self) -> bool {
        nix::unistd::geteuid().is_root()
    }

    /// Under a `MARGIN_SYSROOT`, the toolstack's answers are files of the tree too
    /// (`xl-info.txt`, `xl-vcpu-list.txt`), as a dom0's `xl` would print them.
    fn xl(&self, args: &str) -> Option<String> {
        if self.root == Path::new("/") {
            return self.run(&format!("xl {args}"));
        }
        let what = args.split_whitespace().next().unwrap_or_default();
        self.read(&format!("xl-{what}.txt")).map(|t| t.trim().to_string()).filter(|t| !t.is_empty())
    }
}

/// Every file [`gather`] may read: an ssh host sends them all in one round trip
/// (`Ssh::read`), rather than one `cat` each, which made a fleet's start a thousand ssh
/// commands (64 hosts in a benchmark of many hosts, bench/hosts.sh).
pub(crate) const FILES: &[&str] = &[
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/random/boot_id",
    "/etc/os-release",
    "/proc/sys/kernel/hostname",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/cmdline",
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    "/sys/hypervisor/type",
    "/proc/xen/capabilities",
    "/sys/class/dmi/id/sys_vendor",
    "/sys/class/dmi/id/product_name",
    "/sys/devices/system/clocksource/clocksource0/available_clocksource",
];

/// Gather the facts of docs/design.md §6.8. Missing files give missing facts, never errors.
pub fn gather(src: &dyn Source) -> IndexMap<String, String> {
    let mut f = IndexMap::new();
    let mut put = |k: &str, v: Option<String>| {
        if let Some(v) = v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty()) {
            f.insert(k.to_string(), v);
        }
    };
    put("kernel", src.read("/proc/sys/kernel/osrelease"));
    // Which boot: trials of one boot share its state, so the boot, not the trial, is the
    // unit that varies between levels measured in different boots (docs/statistics.md,
    // Sessions and boots).
    put(crate::store::BOOT_ID, src.read("/proc/sys/kernel/random/boot_id"));
    put("os", src.read("/etc/os-release").and_then(|t| os_release(&t)));
    put("arch", Some(std::env::consts::ARCH.to_string()));
    put("hostname", src.read("/proc/sys/kernel/hostname"));
    let cpuinfo = src.read("/proc/cpuinfo").unwrap_or_default();
    put("cpu_model", cpuinfo_field(&cpuinfo, "model name"));
    let cpus = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    put("cpus", (cpus > 0).then(|| cpus.to_string()));
    put("memory", src.read("/proc/meminfo").and_then(|m| mem_total_bytes(&m)).map(|b| b.to_string()));
    let (hypervisor, role) = hypervisor(src, &cpuinfo);
    put("hypervisor", Some(hypervisor.to_string()));
    put("xen_role", Some(role.to_string()));
    put("cmdline", src.read("/proc/cmdline"));
    put(
        "governor",
        src.read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
            .or_else(|| Some("none".to_string())),
    );
    put("root", Some(src.is_root().to_string()));
    if role == "dom0"
        && let Some(info) = src.xl("info")
    {
        for (key, fact) in [("xen_version", "xen_version"), ("xen_commandline", "xen_cmdline")] {
            put(fact, xl_field(&info, key));
        }
        let cmdline = xl_field(&info, "xen_commandline").unwrap_or_default();
        put("dom0_mem", xen_option(&cmdline, "dom0_mem"));
        put("dom0_max_vcpus", xen_option(&cmdline, "dom0_max_vcpus"));
        put("xl_info", Some(info));
        put("xl_vcpu_list", src.xl("vcpu-list Domain-0"));
    }
    f
}

/// `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"` → the name.
fn os_release(text: &str) -> Option<String> {
    text.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=")).map(|v| v.trim().trim_matches('"').to_string())
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// (`none` | `xen` | `kvm` | `vmware` | `hyperv` | `virtualbox` | `guest`, `dom0` | `domU` | `none`).
fn hypervisor(src: &dyn Source, cpuinfo: &str) -> (&'static str, &'static str) {
    let xen_type = src.read("/sys/hypervisor/type").map(|t| t.trim().to_string());
    let capabilities = src.read("/proc/xen/capabilities");
    if xen_type.as_deref() == Some("xen") || capabilities.is_some() {
        let dom0 = capabilities.is_some_and(|c| c.contains("control_d"));
        return ("xen", if dom0 { "dom0" } else { "domU" });
    }
    let flagged = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"));
    let vendor = [
        src.read("/sys/class/dmi/id/sys_vendor").unwrap_or_default(),
        src.read("/sys/class/dmi/id/product_name").unwrap_or_default(),
    ]
    .join(" ");
    let guest = match () {
        _ if vendor.contains("QEMU") || vendor.contains("KVM") => "kvm",
        _ if vendor.contains("VMware") => "vmware",
        _ if vendor.contains("Microsoft") => "hyperv",
        _ if vendor.contains("innotek") || vendor.contains("VirtualBox") => "virtualbox",
        _ if vendor.contains("Xen") => "xen",
        // no DMI (Firecracker, some clouds): KVM's paravirtual clock gives it away
        _ if flagged && kvm_clock(src) => "kvm",
        _ if flagged => "guest",
        _ => "none",
    };
    (guest, if guest == "xen" { "domU" } else { "none" })
}

/// Whether the kernel offers KVM's paravirtual clock, which only a KVM guest has.
fn kvm_clock(src: &dyn Source) -> bool {
    src.read("/sys/devices/system/clocksource/clocksource0/available_clocksource")
        .is_some_and(|c| c.split_whitespace().any(|s| s == "kvm-clock"))
}

/// `xen_version : 4.17.2` from `xl info`.
fn xl_field(info: &str, key: &str) -> Option<String> {
    info.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// `dom0_mem=2048M,max:2048M` in the Xen command line → `2048M`.
fn xen_option(cmdline: &str, name: &str) -> Option<String> {
    cmdline.split_whitespace().find_map(|w| {
        let value = w.strip_prefix(name)?.strip_prefix('=')?;
        Some(value.split(',').next().unwrap_or(value).to_string())
    })
}

/// What this host is, for each environment factor: the detected level or why not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    pub levels: IndexMap<String, String>,
    /// Factors whose level could not be detected, with the reason.
    pub unknown: IndexMap<String, String>,
}

/// Resolve the experiment's `environment:` factors on this host.
pub fn detect(exp: &Experiment, facts: &IndexMap<String, String>, src: &dyn Source) -> Detected {
    let mut d = Detected { levels: IndexMap::new(), unknown: IndexMap::new() };
    for (name, env) in &exp.spec.environment {
        let e = &env.value;
        let raw = match (&e.fact, &e.probe) {
            (Some(fact), _) => facts.get(&fact.value).cloned(),
            (None, Some(probe)) => src.run(&probe.value),
            (None, None) => None,
        };
        let value = match raw {
            Some(v) => Some(
                e.map
                    .iter()
                    .find(|(k, _)| k.value == v)
                    .map(|(_, level)| level.value.text.clone())
                    .unwrap_or(v),
            ),
            None => e.default.as_ref().map(|d| d.value.text.clone()),
        };
        match value {
            Some(v) => {
                d.levels.insert(name.value.clone(), v);
            }
            None => {
                let why = match (&e.fact, &e.probe) {
                    (Some(fact), _) => format!("fact `{}` is not known on this host", fact.value),
                    _ => "the probe failed or printed nothing, and there is no default".to_string(),
                };
                d.unknown.insert(name.value.clone(), why);
            }
        }
    }
    d
}

/// Why a cell cannot run on this host, or `None` when it can.
pub fn pending_reason<'a>(
    detected: &Detected,
    mut levels: impl Iterator<Item = (&'a str, &'a Scalar)>,
) -> Option<String> {
    let mut needs = Vec::new();
    let mut here = Vec::new();
    let mut unknown = Vec::new();
    for (key, level) in levels.by_ref() {
        if let Some(v) = detected.levels.get(key) {
            if *v != level.text {
                needs.push(format!("{key}={level}"));
                here.push(format!("{key}={v}"));
            }
        } else if let Some(why) = detected.unknown.get(key) {
            unknown.push(format!("{key}: {why}"));
        }
    }
    if !unknown.is_empty() {
        return Some(format!("cannot tell this host's {}", unknown.join("; ")));
    }
    (!needs.is_empty()).then(|| format!("needs {}; this host is {}", needs.join(" "), here.join(" ")))
}

#[cfg(test)]
mod tests;
