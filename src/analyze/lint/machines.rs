//! What the compared machines' facts say beyond the compared factor: facts that differ
//! between the sides and do not define the factor's levels (a confound, or a setting
//! nobody meant to change), and the memory and CPUs each side had (a confound of its
//! own, worth its own line).
//!
//! A fact *defines* an environment factor's levels when the level is read from it (the
//! factor's `fact:`, or a probe whose output is the fact's value, as `nproc` is `cpus`),
//! or when it says which system was booted: a level chosen by a boot changes the boot's
//! command line, and a level that switches the hypervisor (bare against a Xen dom0)
//! changes every fact of the hypervisor. Counters that change within a boot (`xl info`'s
//! free memory, `xl vcpu-list`'s CPU seconds) and the boot id differ between any two
//! sessions: no fact of the machine to compare.

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;

use crate::spec::Experiment;
use crate::store::{BOOT_ID, Event, Name, Names, Snapshot};

/// Facts that differ between any two sessions of one machine.
const VOLATILE: [&str; 3] = [BOOT_ID, "xl_info", "xl_vcpu_list"];
/// Facts of the hypervisor: all differ where a level switches it.
const HYPERVISOR: [&str; 7] =
    ["hypervisor", "xen_role", "xen_version", "xen_cmdline", "dom0_mem", "dom0_max_vcpus", "cmdline"];
/// The command lines a boot is chosen by.
const BOOT: [&str; 2] = ["cmdline", "xen_cmdline"];
/// Memory that differs by less than this share is the same memory (the kernel's own
/// reservations move MemTotal a little between boots and CPU counts).
const MEMORY_TOLERANCE: f64 = 0.05;

/// How two sides' machines differ beyond the factor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Difference {
    /// Facts that differ and do not define the factor's levels.
    pub facts: Vec<String>,
    /// "memory 640 MiB vs 1.92 GiB", "cpus 1 vs 2": the level's first.
    pub resources: Vec<String>,
}

/// A session's facts, or its detected levels: name → value.
type Facts = IndexMap<String, String>;

/// The sessions' facts and detected levels, by session id.
pub(super) struct Machines<'a> {
    exp: &'a Experiment,
    names: &'a Names,
    sessions: HashMap<&'a str, (&'a Facts, &'a Facts)>,
}

impl<'a> Machines<'a> {
    pub(super) fn of(exp: &'a Experiment, snapshot: &'a Snapshot) -> Machines<'a> {
        let sessions = snapshot
            .sessions
            .iter()
            .filter(|s| s.event == Event::Start)
            .map(|s| (s.session.as_str(), (&s.facts, &s.environment)))
            .collect();
        Machines { exp, names: &snapshot.trials.names, sessions }
    }

    fn facts(&self, id: Name) -> Option<&'a Facts> {
        self.sessions.get(self.names.get(id)).map(|s| s.0)
    }

    /// The values of `key` in the sessions `of`, each once.
    fn values(&self, of: &BTreeSet<Name>, key: &str) -> BTreeSet<&'a str> {
        of.iter().filter_map(|&id| self.facts(id)?.get(key)).map(String::as_str).collect()
    }

    /// How the machines of the baseline's sessions and the level's differ beyond `factor`.
    pub(super) fn differ(
        &self,
        baseline: &BTreeSet<Name>,
        level: &BTreeSet<Name>,
        factor: &str,
    ) -> Difference {
        let defining = self.defining(baseline, level, factor);
        let keys: BTreeSet<&str> = baseline
            .iter()
            .chain(level)
            .filter_map(|&id| self.facts(id))
            .flat_map(|f| f.keys().map(String::as_str))
            .filter(|k| !VOLATILE.contains(k) && !defining.contains(k))
            .collect();
        let mut difference = Difference::default();
        for key in keys {
            let (a, b) = (self.values(baseline, key), self.values(level, key));
            if a == b {
                continue;
            }
            match key {
                "memory" => difference.resources.extend(memory(&b, &a)),
                "cpus" => difference.resources.push(format!("cpus {} vs {}", joined(&b), joined(&a))),
                _ => difference.facts.push(key.to_owned()),
            }
        }
        difference
    }

    /// The facts that define `factor`'s levels between these sessions (module docs), and
    /// the host's name.
    fn defining(&self, baseline: &BTreeSet<Name>, level: &BTreeSet<Name>, factor: &str) -> BTreeSet<&'a str> {
        let mut defining = BTreeSet::from(["hostname"]);
        let env = self.exp.spec.environment.iter().find(|(k, _)| k.value == factor).map(|(_, e)| &e.value);
        if factor == "host" {
            defining.insert("host");
        }
        if let Some(fact) = env.and_then(|e| e.fact.as_ref()) {
            defining.insert(fact.value.as_str());
        }
        let switches = |key: &str| self.values(baseline, key) != self.values(level, key);
        if (env.is_some() || factor == "host") && (switches("hypervisor") || switches("xen_role")) {
            defining.extend(HYPERVISOR);
        }
        if env.is_none() {
            return defining;
        }
        defining.extend(BOOT);
        // a probe's output: a fact whose value is a word of the level detected in every
        // session that has both (`nproc` is `cpus`; `xen-768M` holds `dom0_mem`)
        let mut read: HashMap<&'a str, bool> = HashMap::new();
        for &id in baseline.iter().chain(level) {
            let Some((facts, levels)) = self.sessions.get(self.names.get(id)) else { continue };
            let Some(detected) = levels.get(factor) else { continue };
            let words: BTreeSet<&str> = detected.split(|c: char| !c.is_alphanumeric() && c != '.').collect();
            for (key, value) in facts.iter() {
                *read.entry(key.as_str()).or_insert(true) &= words.contains(value.as_str());
            }
        }
        defining.extend(read.into_iter().filter(|&(_, every)| every).map(|(key, _)| key));
        defining
    }
}

/// "memory 640 MiB vs 1.92 GiB" when the level's memory (`level`) and the baseline's
/// differ by more than [`MEMORY_TOLERANCE`].
fn memory(level: &BTreeSet<&str>, baseline: &BTreeSet<&str>) -> Option<String> {
    let range = |values: &BTreeSet<&str>| {
        let bytes: Vec<u64> = values.iter().filter_map(|v| v.trim().parse().ok()).collect();
        Some((*bytes.iter().min()?, *bytes.iter().max()?))
    };
    let (l, b) = (range(level)?, range(baseline)?);
    let apart = |low: (u64, u64), high: (u64, u64)| (low.1 as f64) < (1.0 - MEMORY_TOLERANCE) * high.0 as f64;
    if !apart(l, b) && !apart(b, l) {
        return None;
    }
    let text = |(lo, hi): (u64, u64)| {
        if lo == hi { size(lo) } else { format!("{} to {}", size(lo), size(hi)) }
    };
    Some(format!("memory {} vs {}", text(l), text(b)))
}

/// Bytes of memory as a person reads them: `640 MiB`, `1.92 GiB`.
pub(super) fn size(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    }
}

fn joined(values: &BTreeSet<&str>) -> String {
    values.iter().copied().collect::<Vec<_>>().join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{MemoryStore, summarize_store};
    use crate::summary::WarningKind;
    use vocab::{Better, MeanKind};

    /// Seed 002 in the lab, as its boots recorded it: bare (QEMU's `kvm`) against a Xen
    /// dom0 of 768M, the factor read by a probe. What makes a dom0 a dom0 is no confound;
    /// its memory is, on a line of its own; a kernel release of its own is one too.
    #[test]
    fn facts_that_define_the_levels_are_no_confound_and_memory_gets_its_own_line() {
        let yaml = "matrix:\n  kernel: [bare, xen-768M]\nenvironment:\n  kernel: { probe: 'xl info | grep -o dom0_mem' }\n\
                    run: 'true'\nanalysis:\n  compare: [{ factor: kernel, baseline: bare }]\n";
        let mut m = MemoryStore::new("lab.yaml", yaml);
        m.metric("time", "s", Better::Lower, MeanKind::Arithmetic);
        let bare: &[(&str, &str)] = &[
            ("kernel", "6.1.0-57-amd64"),
            ("memory", "2060410880"),
            ("hypervisor", "kvm"),
            ("xen_role", "none"),
            ("cmdline", "root=/dev/vda1 console=ttyS0"),
        ];
        let dom0: &[(&str, &str)] = &[
            ("kernel", "6.1.0-58-amd64"),
            ("memory", "670797824"),
            ("hypervisor", "xen"),
            ("xen_role", "dom0"),
            ("cmdline", "root=/dev/vda1 console=hvc0"),
            ("xen_version", "4.17.7"),
            ("xen_cmdline", "dom0_mem=768M,max:768M dom0_max_vcpus=2"),
            ("dom0_mem", "768M"),
            ("dom0_max_vcpus", "2"),
            ("xl_info", "free_memory : 1256"),
        ];
        for boot in 0..4 {
            let (kernel, facts) = if boot % 2 == 0 { ("bare", bare) } else { ("xen-768M", dom0) };
            let mut facts = facts.to_vec();
            let boot_id = format!("boot-{boot}");
            facts.push(("boot_id", &boot_id));
            m.session(&format!("s{boot}"), "lab", &facts);
            let session = m.snapshot.sessions.last_mut().unwrap();
            session.environment.insert("kernel".into(), kernel.into());
            for i in 0..3 {
                m.trial(&[("kernel", kernel)], &[("time", 1.0 + f64::from(i) / 100.0)]);
            }
        }
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        let differ: Vec<&str> = summary
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::HostsDiffer)
            .map(|w| w.message.as_str())
            .collect();
        assert_eq!(differ.len(), 2, "{differ:?}");
        assert!(differ[0].ends_with("those too — xen-768M vs bare: kernel"), "{}", differ[0]);
        assert!(
            differ[1].starts_with("kernel: the compared machines had different memory or CPUs"),
            "{}",
            differ[1]
        );
        assert!(differ[1].ends_with("— xen-768M vs bare: memory 640 MiB vs 1.92 GiB"), "{}", differ[1]);
    }

    #[test]
    fn memory_differs_beyond_the_kernels_own_reservations() {
        let set = |v: &[&'static str]| v.iter().copied().collect::<BTreeSet<&str>>();
        assert_eq!(
            memory(&set(&["670797824"]), &set(&["2060410880"])).as_deref(),
            Some("memory 640 MiB vs 1.92 GiB")
        );
        assert_eq!(
            memory(&set(&["670797824", "934000000"]), &set(&["2060410880"])).as_deref(),
            Some("memory 640 MiB to 891 MiB vs 1.92 GiB")
        );
        // vcpus 1 against 2 in a domU: 0.1 % apart
        assert_eq!(memory(&set(&["346624000"]), &set(&["346329088"])), None);
    }
}
