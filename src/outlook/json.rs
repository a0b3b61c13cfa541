//! `margin plan --json`: the plan as one JSON object, its cells written one by one.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::CellOutlook;
use crate::jsontext::{push_integer, push_string};
use crate::plan::{FactorSummary, Plan, host_of};
use crate::run;
use crate::spec::{Experiment, Repetitions};

#[derive(Serialize)]
struct JsonHead<'a> {
    experiment: &'a str,
    file: String,
    repetitions: JsonRepetitions,
    warmup: u32,
    trials: JsonRange,
    factors: &'a [FactorSummary],
    /// The hosts the cells run on and the machine each is on (hosts of one machine take
    /// turns: docs/design.md §6.1).
    hosts: Vec<JsonHost>,
}

#[derive(Serialize)]
struct JsonHost {
    name: String,
    /// The ssh destination, or null for this machine.
    ssh: Option<String>,
    machine: String,
    /// The other hosts of the same machine, with which it takes turns.
    shares_machine_with: Vec<String>,
    /// A gang's hosts, started together (docs/experiment-file.md, gangs); its `machine`
    /// is theirs, each once, joined with ", ".
    #[serde(skip_serializing_if = "Option::is_none")]
    gang: Option<Vec<String>>,
}

#[derive(Serialize)]
struct JsonRange {
    min: u64,
    max: u64,
}

#[derive(Serialize)]
struct JsonRepetitions {
    min: u32,
    max: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<f64>,
}

/// The plan as one JSON object; cells are written one by one so a million cells do not
/// need a second copy in memory. A cell: `id`, `levels` (key to level, as written),
/// `added_by_include`, `host`, `machine` (`run::machine_of`), `state` (`done`, `here`: runs
/// on this host, or `pending`), `pending` (why, when it is), `trials_done`,
/// `estimate_seconds` (when not done and known).
pub(crate) fn write_json(
    exp: &Experiment,
    file: &Path,
    plan: &Plan,
    outlook: &[CellOutlook],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let (min, max) = plan.repetitions.bounds();
    let target = match &plan.repetitions {
        Repetitions::Adaptive { target, .. } => Some(target.0),
        Repetitions::Fixed(_) | Repetitions::Verdict { .. } => None,
    };
    let (tmin, tmax) = plan.trials();
    let mut machines: Vec<(&str, String)> = Vec::new();
    for cell in &plan.cells {
        let host = host_of(plan, cell);
        if !machines.iter().any(|(h, _)| *h == host) {
            machines.push((host, run::machines_of(exp, host).join(", ")));
        }
    }
    let shares = |a: &str, b: &str| {
        let theirs = run::machines_of(exp, b);
        run::machines_of(exp, a).iter().any(|m| theirs.contains(m))
    };
    let hosts = machines
        .iter()
        .map(|(host, machine)| JsonHost {
            name: host.to_string(),
            ssh: run::ssh_entry(exp, host).map(|(_, dest)| dest.to_string()),
            machine: machine.clone(),
            shares_machine_with: machines
                .iter()
                .filter(|(h, _)| h != host && shares(host, h))
                .map(|(h, _)| h.to_string())
                .collect(),
            gang: exp.spec.gang(host).map(|g| g.members().into_iter().map(String::from).collect()),
        })
        .collect();
    let head = JsonHead {
        experiment: &plan.experiment,
        file: file.display().to_string(),
        repetitions: JsonRepetitions { min, max, target },
        warmup: plan.warmup,
        trials: JsonRange { min: tmin, max: tmax },
        factors: &plan.factors,
        hosts,
    };
    let head = serde_json::to_string(&head)?;
    // splice the cells array into the head object
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    write!(out, ",\"cell_count\":{},\"cells\":[", plan.cells.len())?;
    // Each cell's object is written by hand into one buffer, the keys quoted once: through
    // serde, building a map of the levels per cell cost most of `plan --json` on a million
    // cells, to be done within a second. The output is the same, byte for byte
    // (tests/integration/plan.rs).
    let keys: Vec<String> = plan.keys.iter().map(|k| json_string(k)).collect();
    let machines: Vec<(&str, String, String)> =
        machines.iter().map(|(h, m)| (*h, json_string(h), json_string(m))).collect();
    // cells go out 64 KiB at a time, which the BufWriter passes on without copying them
    let mut buf: Vec<u8> = Vec::with_capacity(FLUSH_AT + 4096);
    for (i, (cell, o)) in plan.cells.iter().zip(outlook).enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(b"{\"id\":\"");
        push_hex(&mut buf, cell.id.0);
        buf.extend_from_slice(b"\",\"levels\":{");
        for (j, (k, v)) in cell.levels.iter().enumerate() {
            if j > 0 {
                buf.push(b',');
            }
            buf.extend_from_slice(keys[usize::from(*k)].as_bytes());
            buf.push(b':');
            push_string(&mut buf, &v.text);
        }
        let host = host_of(plan, cell);
        let (host, machine) = match machines.iter().find(|(h, _, _)| *h == host) {
            Some((_, host, machine)) => (host.as_str(), machine.as_str()),
            None => ("\"\"", "\"\""),
        };
        let state = match (o.done, &o.pending) {
            (true, _) => "done",
            (false, Some(_)) => "pending",
            (false, None) => "here",
        };
        buf.extend_from_slice(b"},\"added_by_include\":");
        buf.extend_from_slice(if cell.added { b"true" } else { b"false" });
        for (name, value) in [("host", host), ("machine", machine)] {
            buf.extend_from_slice(b",\"");
            buf.extend_from_slice(name.as_bytes());
            buf.extend_from_slice(b"\":");
            buf.extend_from_slice(value.as_bytes());
        }
        buf.extend_from_slice(b",\"state\":\"");
        buf.extend_from_slice(state.as_bytes());
        buf.push(b'"');
        if let Some(pending) = &o.pending {
            buf.extend_from_slice(b",\"pending\":");
            push_string(&mut buf, pending);
        }
        buf.extend_from_slice(b",\"trials_done\":");
        push_integer(&mut buf, o.ok);
        if let Some(estimate) = o.estimate.filter(|_| !o.done) {
            buf.extend_from_slice(b",\"estimate_seconds\":");
            serde_json::to_writer(&mut buf, &estimate)?;
        }
        buf.push(b'}');
        if buf.len() >= FLUSH_AT {
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    out.write_all(&buf)?;
    writeln!(out, "]}}")
}

/// How much of `plan --json`'s cells is gathered before it is written.
const FLUSH_AT: usize = 64 * 1024;

/// A cell id as `CellId`'s `Display` writes it: 16 hex digits, lowercase.
fn push_hex(buf: &mut Vec<u8>, id: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    buf.extend((0..16).rev().map(|i| DIGITS[(id >> (i * 4)) as usize & 0xf]));
}

/// `text` as a JSON string, quotes included.
fn json_string(text: &str) -> String {
    let mut buf = Vec::with_capacity(text.len() + 2);
    push_string(&mut buf, text);
    String::from_utf8(buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_written_as_displayed() {
        for id in [0, 1, 0xabc, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut buf = Vec::new();
            push_hex(&mut buf, id);
            assert_eq!(String::from_utf8(buf).unwrap(), vocab::CellId(id).to_string());
        }
    }

    #[test]
    fn json_strings_are_serde_jsons() {
        for text in
            ["", "4k", "bs=4k count=1", "naïve ∑", "a\"b", "back\\slash", "tab\there", "nl\n", "\u{7f}\u{1}"]
        {
            assert_eq!(json_string(text), serde_json::to_string(text).unwrap(), "{text:?}");
        }
    }
}
