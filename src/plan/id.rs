//! Stable cell ids: a hash of the cell's levels and of the rules that produce its
//! numbers (commands, vars, parser, metric extractors), independent of YAML key order.
//!
//! Repetitions, warm-ups, analysis and report settings are left out on purpose: raising
//! the repetitions must resume a cell, not orphan its trials.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::spec::Spec;
use vocab::{CellId, Scalar, ScalarKind};

/// The hash of everything but the levels, computed once per plan.
pub(super) fn rules_hash(spec: &Spec) -> blake3::Hash {
    let commands: BTreeMap<&str, &str> = spec.commands().map(|(k, v)| (k, v.value.as_str())).collect();
    let vars: BTreeMap<&str, &str> =
        spec.vars.iter().map(|(k, v)| (k.value.as_str(), v.value.as_str())).collect();
    let metrics: BTreeMap<&str, serde_json::Value> = spec
        .metrics
        .iter()
        .map(|(k, m)| {
            let m = &m.value;
            let text = |v: &Option<crate::spec::Located<String>>| v.as_ref().map(|v| v.value.clone());
            let rule = serde_json::json!({
                "regex": text(&m.regex), "json": text(&m.json), "from": text(&m.from), "unit": text(&m.unit),
            });
            (k.value.as_str(), rule)
        })
        .collect();
    let mut canonical = serde_json::json!({
        "v": 1,
        "commands": commands,
        "vars": vars,
        "parse": spec.parse.as_ref().map(|p| p.value.as_str()),
        "metrics": metrics,
    });
    // A service's commands produce the numbers too (the server's options); written only
    // when there are services, so that the ids of experiments without them stay.
    if !spec.services.is_empty() {
        let services: BTreeMap<&str, serde_json::Value> = spec
            .services
            .iter()
            .map(|(k, s)| {
                let s = &s.value;
                let commands: BTreeMap<&str, &str> =
                    s.commands().map(|(k, v)| (k, v.value.as_str())).collect();
                let host = s.host.as_ref().map(|h| h.value.as_str());
                let when = s.when.as_ref().map(|w| w.value.as_str());
                (k.value.as_str(), serde_json::json!({ "host": host, "commands": commands, "when": when }))
            })
            .collect();
        canonical["services"] = serde_json::json!(services);
    }
    blake3::hash(canonical.to_string().as_bytes())
}

/// Hash the rules and the levels sorted by key name, each field length-prefixed.
///
/// The fields are laid end to end in one buffer and hashed at once: the same bytes, so
/// the same id, as feeding them to a hasher one by one, which cost most of planning a
/// million cells (BLAKE3 is a tree hash over the bytes, whatever the chunks they arrive
/// in).
pub(super) fn cell_id(rules: &blake3::Hash, keys: &[String], levels: &[(u16, Arc<Scalar>)]) -> CellId {
    let mut sorted: Vec<(&str, &Scalar)> =
        levels.iter().map(|(k, v)| (keys[*k as usize].as_str(), v.as_ref())).collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let size = sorted.iter().map(|(k, v)| 17 + k.len() + v.text.len()).sum::<usize>();
    let mut bytes = Vec::with_capacity(32 + size);
    bytes.extend_from_slice(rules.as_bytes());
    for (key, value) in sorted {
        bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(match value.kind {
            ScalarKind::Str => 0,
            ScalarKind::Int => 1,
            ScalarKind::Float => 2,
            ScalarKind::Bool => 3,
        });
        bytes.extend_from_slice(&(value.text.len() as u64).to_le_bytes());
        bytes.extend_from_slice(value.text.as_bytes());
    }
    let hash = blake3::hash(&bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    CellId(u64::from_be_bytes(first))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of the fields fed one by one (how ids were made first): the
    /// buffer hashed at once must give the very same ids, or stored trials lose their cells.
    fn incremental(rules: &blake3::Hash, fields: &[(&str, &Scalar)]) -> CellId {
        let mut h = blake3::Hasher::new();
        h.update(rules.as_bytes());
        for (key, value) in fields {
            h.update(&(key.len() as u64).to_le_bytes());
            h.update(key.as_bytes());
            h.update(&[value.kind as u8]);
            h.update(&(value.text.len() as u64).to_le_bytes());
            h.update(value.text.as_bytes());
        }
        let mut first = [0u8; 8];
        first.copy_from_slice(&h.finalize().as_bytes()[..8]);
        CellId(u64::from_be_bytes(first))
    }

    #[test]
    fn one_buffer_hashes_as_the_fields_one_by_one() {
        let rules = blake3::hash(b"rules");
        let keys: Vec<String> = ["zeta", "a", "count"].map(String::from).to_vec();
        // long enough values that the bytes span several BLAKE3 chunks (1 KiB each)
        for len in [0usize, 1, 63, 64, 1000, 3000] {
            let levels: Vec<(u16, Arc<Scalar>)> = vec![
                (0, Arc::new(Scalar { text: "x".repeat(len), kind: ScalarKind::Str })),
                (1, Arc::new(Scalar { text: "4096".into(), kind: ScalarKind::Int })),
                (2, Arc::new(Scalar { text: "true".into(), kind: ScalarKind::Bool })),
            ];
            let sorted = [("a", &*levels[1].1), ("count", &*levels[2].1), ("zeta", &*levels[0].1)];
            assert_eq!(cell_id(&rules, &keys, &levels), incremental(&rules, &sorted), "len {len}");
        }
    }
}
