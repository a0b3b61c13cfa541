use std::path::{Path, PathBuf};

use super::*;
use crate::spec::load_str;

/// A fixture tree read as the machine is, through `MARGIN_SYSROOT`'s source: files
/// under the tree, and the toolstack's answers from its `xl-*.txt`.
fn fixture(tree: &str) -> Local {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sysroot").join(tree);
    Local { root, dir: std::env::temp_dir() }
}

fn facts(tree: &str) -> IndexMap<String, String> {
    gather(&fixture(tree))
}

#[test]
fn xen_dom0() {
    let f = facts("xen-dom0");
    assert_eq!(f["hypervisor"], "xen");
    assert_eq!(f["xen_role"], "dom0");
    assert_eq!(f["kernel"], "2.6.20-1.2933.fc6xen");
    assert_eq!(f["boot_id"], "6f1c2a8e-3b4d-4e5f-9a0b-1c2d3e4f5a6b");
    assert_eq!(f["os"], "Fedora Core 6 (Zod)");
    assert_eq!(f["cpu_model"], "Dual-Core AMD Opteron(tm) Processor 2210");
    assert_eq!(f["cpus"], "2");
    assert_eq!(f["memory"], (2097152u64 * 1024).to_string());
    assert_eq!(f["xen_version"], "4.17.2");
    assert_eq!(f["dom0_mem"], "2048M");
    assert_eq!(f["dom0_max_vcpus"], "2");
    assert!(f["xl_vcpu_list"].contains("Domain-0"));
    assert_eq!(f["governor"], "none");
    assert_eq!(f["root"], nix::unistd::geteuid().is_root().to_string());
}

#[test]
fn xen_domu() {
    let f = facts("xen-domu");
    assert_eq!(f["hypervisor"], "xen");
    assert_eq!(f["xen_role"], "domU");
    assert!(!f.contains_key("xen_version"), "xl runs on dom0 only");
}

#[test]
fn kvm_guest() {
    let f = facts("kvm-guest");
    assert_eq!(f["hypervisor"], "kvm");
    assert_eq!(f["xen_role"], "none");
    assert_eq!(f["cpus"], "2");
    assert_eq!(f["os"], "Debian GNU/Linux 12 (bookworm)");
}

/// A KVM guest without DMI tables (Firecracker): the cpuinfo `hypervisor` flag says it is
/// a guest, KVM's clock says whose.
#[test]
fn kvm_guest_without_dmi() {
    let f = facts("kvm-guest-no-dmi");
    assert_eq!(f["hypervisor"], "kvm");
    assert_eq!(f["xen_role"], "none");
    assert_eq!(f["cpus"], "2");
}

#[test]
fn bare_metal() {
    let f = facts("bare");
    assert_eq!(f["hypervisor"], "none");
    assert_eq!(f["xen_role"], "none");
    assert_eq!(f["governor"], "performance");
    assert_eq!(f["kernel"], "2.6.20-1.2933.fc6");
}

fn experiment() -> Experiment {
    let yaml = r#"
matrix:
  kernel: [xen, bare]
  dom0_mem: [2048M, unlimited]
  bs: [1k]
environment:
  kernel: { fact: hypervisor, map: { xen: xen, none: bare } }
  dom0_mem: { fact: dom0_mem, default: unlimited }
run: echo
"#;
    load_str(Path::new("env.yaml"), yaml).unwrap()
}

#[test]
fn environment_levels_are_detected_and_gate_cells() {
    let exp = experiment();
    let dom0 = fixture("xen-dom0");
    let d = detect(&exp, &gather(&dom0), &dom0);
    assert_eq!(d.levels["kernel"], "xen");
    assert_eq!(d.levels["dom0_mem"], "2048M");
    let bare = fixture("bare");
    let b = detect(&exp, &gather(&bare), &bare);
    assert_eq!(b.levels["kernel"], "bare");
    assert_eq!(b.levels["dom0_mem"], "unlimited", "no xl on bare metal: the default");

    let plan = crate::plan::expand(&exp, 100).unwrap();
    let reasons: Vec<Option<String>> =
        plan.cells.iter().map(|c| pending_reason(&d, plan.levels(c))).collect();
    assert_eq!(
        reasons,
        [
            None,
            Some("needs dom0_mem=unlimited; this host is dom0_mem=2048M".to_string()),
            Some("needs kernel=bare; this host is kernel=xen".to_string()),
            Some("needs kernel=bare dom0_mem=unlimited; this host is kernel=xen dom0_mem=2048M".to_string()),
        ]
    );
}

#[test]
fn a_probe_that_fails_without_default_leaves_the_factor_unknown() {
    let yaml = "matrix:\n  tool: [xl, none]\nenvironment:\n  tool: { probe: 'exit 1' }\nrun: echo\n";
    let exp = load_str(Path::new("p.yaml"), yaml).unwrap();
    let local = Local { root: PathBuf::from("/"), dir: std::env::temp_dir() };
    let d = detect(&exp, &IndexMap::new(), &local);
    assert!(d.levels.is_empty());
    let plan = crate::plan::expand(&exp, 100).unwrap();
    let reason = pending_reason(&d, plan.levels(&plan.cells[0])).unwrap();
    assert_eq!(
        reason,
        "cannot tell this host's tool: the probe failed or printed nothing, and there is no default"
    );
    let probe = "matrix:\n  tool: [xl, none]\nenvironment:\n  tool: { probe: 'echo none' }\nrun: echo\n";
    let exp = load_str(Path::new("p.yaml"), probe).unwrap();
    assert_eq!(detect(&exp, &IndexMap::new(), &local).levels["tool"], "none");
}

/// A host whose every file exists, noting which ones were read.
struct Recording(std::cell::RefCell<Vec<String>>);

impl Source for Recording {
    fn read(&self, path: &str) -> Option<String> {
        self.0.borrow_mut().push(path.to_string());
        Some("xen\ncontrol_d\nmodel name : x\nprocessor : 0\nMemTotal: 1 kB\nPRETTY_NAME=\"x\"\n".into())
    }
    fn run(&self, _command: &str) -> Option<String> {
        None
    }
    fn is_root(&self) -> bool {
        true
    }
}

/// `FILES` lists every file `gather` reads (an ssh host fetches them in one round trip):
/// one missing from it would cost a round trip of its own, not a wrong fact.
#[test]
fn gather_reads_only_the_files_listed() {
    let src = Recording(std::cell::RefCell::new(Vec::new()));
    gather(&src);
    let read = src.0.borrow();
    assert!(read.len() >= 10, "{read:?}");
    for path in read.iter() {
        assert!(super::FILES.contains(&path.as_str()), "{path} is read but not in facts::FILES");
    }
}
