//! How the two sides' machines differ: the facts their sessions recorded, side by side.

use std::collections::BTreeSet;

use indexmap::IndexMap;

use crate::store::{Event, SessionRecord};
use crate::summary::versus::FactDifference;

/// The facts (and margin's version and the boot) whose values differ between the sides'
/// sessions; the host name is one of them when the machines differ.
pub(super) fn differences(a: &[SessionRecord], b: &[SessionRecord]) -> Vec<FactDifference> {
    let facts = |sessions: &[SessionRecord]| -> IndexMap<String, BTreeSet<String>> {
        let mut out: IndexMap<String, BTreeSet<String>> = IndexMap::new();
        for s in sessions.iter().filter(|s| s.event == Event::Start) {
            out.entry("host".to_owned()).or_default().insert(s.host.clone());
            out.entry("margin_version".to_owned()).or_default().insert(s.margin_version.clone());
            for (k, v) in &s.facts {
                out.entry(k.clone()).or_default().insert(v.clone());
            }
        }
        out
    };
    let (fa, fb) = (facts(a), facts(b));
    let mut keys: Vec<&String> = fa.keys().collect();
    keys.extend(fb.keys().filter(|k| !fa.contains_key(*k)));
    let empty = BTreeSet::new();
    keys.into_iter()
        .filter(|k| fa.get(*k).unwrap_or(&empty) != fb.get(*k).unwrap_or(&empty))
        .map(|k| FactDifference {
            fact: k.clone(),
            baseline: fa.get(k).unwrap_or(&empty).iter().cloned().collect(),
            candidate: fb.get(k).unwrap_or(&empty).iter().cloned().collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::MemoryStore;

    #[test]
    fn only_facts_that_differ_are_listed() {
        let mut store = MemoryStore::load("e.yaml", "matrix: { a: [x] }\nrun: 'true'\n").unwrap();
        for (id, kernel) in [("s1", "6.1"), ("s2", "6.1"), ("s3", "6.12")] {
            store.session(id, "local", &[("kernel", kernel), ("cpus", "2")]);
        }
        let s = &store.snapshot.sessions;
        let d = differences(&s[..1], &s[1..]);
        assert_eq!(d.len(), 1, "{d:?}");
        let values = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            (d[0].fact.as_str(), &d[0].baseline, &d[0].candidate),
            ("kernel", &values(&["6.1"]), &values(&["6.1", "6.12"]))
        );
        assert!(differences(&s[..1], &s[1..2]).is_empty());
    }
}
