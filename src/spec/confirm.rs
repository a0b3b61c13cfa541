//! `margin run FILE --confirm A,B`: a change point of a series is suspected until its two
//! sides are measured again, interleaved, until their comparison is settled
//! (docs/series.md, Confirmation). The confirmation is an experiment of its own, made
//! from the file: the series factor cut to the two levels, `until: verdict`, and one
//! comparison of B against A; its store is `<name>-confirm-<A>-<B>` beside the
//! experiment's, so that nothing measured before enters it.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Experiment, load_str};
use crate::diag::Diagnostics;

/// The repetitions of a confirmation whose file does not stop on the answer already: as
/// `until: verdict` with margin's usual bounds.
const REPETITIONS: (u32, u32) = (5, 30);

/// The boots of a confirmation of a booted level whose file boots a fixed number: as
/// `boots: { min, max, until: verdict }` with the bounds docs/experiment-file.md shows.
const BOOTS: (u32, u32) = (3, 12);

/// Why a confirmation cannot be made from the file.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    #[error(
        "--confirm {0}: expected two levels of a series, the one before the change and the one after, as `A,B`"
    )]
    Syntax(String),
    #[error("--confirm: {file} declares no series (`analysis: {{ series: [ {{ factor: F }} ] }}`)")]
    NoSeries { file: String },
    #[error("--confirm {a},{b}: no series of {file} has `{a}` and then `{b}` as neighbouring levels{hint}")]
    NotNeighbours { a: String, b: String, file: String, hint: String },
    #[error("--confirm: the series factor `{factor}` is not a plain list under `matrix:` in {file}")]
    NotAList { factor: String, file: String },
    #[error("--confirm: {0}")]
    Derived(Diagnostics),
}

/// The two levels of `--confirm A,B`.
pub fn parse_pair(text: &str) -> Result<(String, String), ConfirmError> {
    match text.split_once(',') {
        Some((a, b)) if !a.trim().is_empty() && !b.trim().is_empty() && !b.contains(',') => {
            Ok((a.trim().to_owned(), b.trim().to_owned()))
        }
        _ => Err(ConfirmError::Syntax(text.to_owned())),
    }
}

/// A level as written in the matrix, as `--confirm` names it.
fn level_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The confirmation of the change between levels `a` and `b` (neighbours, in this order,
/// in one of `exp`'s series), as an experiment whose store lies under `reports`.
pub fn confirmation(exp: &Experiment, a: &str, b: &str, reports: &Path) -> Result<Experiment, ConfirmError> {
    let file = exp.path.display().to_string();
    if exp.spec.analysis.series.is_empty() {
        return Err(ConfirmError::NoSeries { file });
    }
    let options = serde_saphyr::options! {
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
    };
    let mut doc: Value = serde_saphyr::from_str_with_options(&exp.source, options)
        .map_err(|e| ConfirmError::NotAList { factor: e.to_string(), file: file.clone() })?;
    let mut pairs = Vec::new();
    let mut found = None;
    for s in &exp.spec.analysis.series {
        let factor = &s.value.factor.value;
        let at = format!("/matrix/{}", pointer_escape(factor));
        if let Some(g) = exp.git_factor(factor) {
            // a git range cut to the two commits: neighbours on its first-parent line
            let texts: Vec<&str> = g.commits.iter().map(|c| c.short.as_str()).collect();
            pairs.extend(texts.windows(2).map(|w| format!("{},{}", w[0], w[1])));
            if let Some(i) = texts.windows(2).position(|w| w[0] == a && w[1] == b) {
                let range = format!("{}..{}", g.commits[i].hash, g.commits[i + 1].hash);
                doc["matrix"][factor.as_str()] = json!({ "git": { "repo": g.path, "range": range } });
                found = Some((factor.clone(), json!(a)));
                break;
            }
            continue;
        }
        let Some(Value::Array(levels)) = doc.pointer(&at).cloned() else {
            return Err(ConfirmError::NotAList { factor: factor.clone(), file });
        };
        let texts: Vec<String> = levels.iter().map(level_text).collect();
        pairs.extend(texts.windows(2).map(|w| format!("{},{}", w[0], w[1])));
        if let Some(i) = texts.windows(2).position(|w| w[0] == a && w[1] == b) {
            doc["matrix"][factor.as_str()] = json!([levels[i].clone(), levels[i + 1].clone()]);
            found = Some((factor.clone(), levels[i].clone()));
            break;
        }
    }
    let Some((factor, baseline)) = found else {
        let hint = match pairs.as_slice() {
            [] => String::new(),
            some => format!(" (neighbours: {})", some.iter().take(6).cloned().collect::<Vec<_>>().join("; ")),
        };
        return Err(ConfirmError::NotNeighbours { a: a.into(), b: b.into(), file, hint });
    };
    let name = format!("{}-confirm-{}-{}", exp.name, file_part(a), file_part(b));
    derive(&mut doc, &name, &factor, baseline, exp);
    let source = format!(
        "# The confirmation of {}'s change between {factor}={a} and {factor}={b}: `margin run {} --confirm {a},{b}`.\n{}\n",
        exp.name,
        exp.path.display(),
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    );
    let path = kept_path(reports, &name, &source);
    load_str(&path, &source).map_err(ConfirmError::Derived)
}

/// The file: named, one comparison of the two levels, stopping on its answer, no series.
fn derive(doc: &mut Value, name: &str, factor: &str, baseline: Value, exp: &Experiment) {
    doc["name"] = json!(name);
    doc["description"] = json!(format!(
        "{}: the two levels on either side of a suspected change point of `{factor}`, measured again \
         in alternation until their comparison is settled.",
        exp.name
    ));
    let booted = boot_recipes(doc);
    let verdict = matches!(exp.spec.repetitions(), super::Repetitions::Verdict { .. });
    if booted.is_empty() {
        if !verdict {
            doc["repetitions"] = json!({ "min": REPETITIONS.0, "max": REPETITIONS.1, "until": "verdict" });
        }
    } else {
        // Fresh boots of both levels, in balanced blocks, until the comparison across the
        // boots is settled: adaptive boots, beside which the boots decide, not the trials.
        for host in booted {
            let boots = &mut doc["hosts"][host.as_str()]["boot"]["boots"];
            if boots.get("until").is_none() {
                *boots = json!({ "min": BOOTS.0, "max": BOOTS.1, "until": "verdict" });
            }
        }
        if let super::Repetitions::Verdict { min, .. } = exp.spec.repetitions() {
            doc["repetitions"] = json!(min);
        }
    }
    if !doc["analysis"].is_object() {
        doc["analysis"] = json!({});
    }
    let analysis = &mut doc["analysis"];
    analysis["compare"] = json!([{ "factor": factor, "baseline": baseline }]);
    if let Some(map) = analysis.as_object_mut() {
        map.remove("series");
    }
}

/// The hosts whose `boot:` recipe reboots them into the levels: a series factor of the
/// environment is measured in boots of its own there.
fn boot_recipes(doc: &Value) -> Vec<String> {
    let Some(hosts) = doc.get("hosts").and_then(Value::as_object) else {
        return Vec::new();
    };
    hosts
        .iter()
        .filter(|(_, h)| h.get("boot").is_some_and(Value::is_object))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Where the store keeps the confirmation's file (`experiments/<spec hash>/`): its path,
/// so that the report's "How to reproduce" names a file that exists.
fn kept_path(reports: &Path, name: &str, source: &str) -> PathBuf {
    let hash = blake3::hash(source.as_bytes()).to_hex().to_string();
    reports.join(name).join("experiments").join(hash).join(format!("{name}.yaml"))
}

/// A level as part of a folder name: what is not a letter, digit, `.`, `_` or `-` as `_`.
fn file_part(level: &str) -> String {
    level.chars().map(|c| if c.is_ascii_alphanumeric() || ".-_".contains(c) { c } else { '_' }).collect()
}

/// A key as a JSON pointer's part.
fn pointer_escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(yaml: &str) -> Experiment {
        load_str(Path::new("s.yaml"), yaml).unwrap_or_else(|d| panic!("{d}"))
    }

    const SERIES: &str = "matrix:\n  version: [v1, v2, v3, v4]\n  bs: [4k, 1M]\nrun: echo {{ version }}\n\
                          analysis:\n  series: [ { factor: version } ]\n";

    #[test]
    fn a_confirmation_measures_the_two_levels_until_their_comparison_is_settled() {
        let c = confirmation(&exp(SERIES), "v2", "v3", Path::new("reports")).unwrap();
        assert_eq!(c.name, "s-confirm-v2-v3");
        let plan = crate::plan::expand(&c, 1000).unwrap();
        assert_eq!(plan.cells.len(), 4, "two versions × two block sizes");
        assert!(matches!(c.spec.repetitions(), crate::spec::Repetitions::Verdict { min: 5, max: 30 }));
        assert_eq!(c.spec.analysis.compare.len(), 1);
        assert_eq!(c.spec.analysis.compare[0].value.baseline.value.to_string(), "v2");
        assert!(c.spec.analysis.series.is_empty());
        assert!(c.path.starts_with("reports/s-confirm-v2-v3/experiments"), "{}", c.path.display());
    }

    /// A level booted by margin is confirmed in fresh boots of both levels, as many as
    /// settle the comparison (adaptive boots), the file's trials per boot kept.
    #[test]
    fn a_booted_level_is_confirmed_in_boots_until_the_comparison_is_settled() {
        let booted = "hosts:\n  m:\n    ssh: root@m\n    boot: { restart: ./boot.sh, boots: 2 }\n\
                      matrix:\n  host: [m]\n  mem: [1G, 2G, 3G]\nenvironment:\n  mem: { probe: free }\n\
                      repetitions: { min: 6, max: 20, until: verdict }\nrun: echo\n\
                      analysis:\n  series: [ { factor: mem } ]\n";
        let c = confirmation(&exp(booted), "2G", "3G", Path::new("r")).unwrap();
        let (_, host) = c.spec.hosts.iter().find(|(name, _)| name.value == "m").unwrap();
        let boot = host.value.boot.as_ref().unwrap();
        let boots = boot.value.boots.as_ref().unwrap();
        assert!(matches!(boots.value, crate::spec::boot::BootsSpec::Adaptive { .. }), "{:?}", boots.value);
        assert!(
            matches!(c.spec.repetitions(), crate::spec::Repetitions::Fixed(6)),
            "{:?}",
            c.spec.repetitions()
        );
        assert_eq!(crate::plan::expand(&c, 1000).unwrap().cells.len(), 2);
    }

    #[test]
    fn levels_that_are_not_neighbours_or_no_series_are_refused() {
        let e = exp(SERIES);
        let err = confirmation(&e, "v1", "v3", Path::new("r")).unwrap_err().to_string();
        assert!(err.contains("neighbouring") && err.contains("v1,v2; v2,v3; v3,v4"), "{err}");
        let err = confirmation(&e, "v3", "v2", Path::new("r")).unwrap_err().to_string();
        assert!(err.contains("neighbouring"), "{err}");
        let plain = exp("matrix:\n  version: [v1, v2, v3]\nrun: echo\n");
        assert!(matches!(
            confirmation(&plain, "v1", "v2", Path::new("r")),
            Err(ConfirmError::NoSeries { .. })
        ));
        assert!(parse_pair("v1").is_err() && parse_pair("v1,").is_err() && parse_pair("a,b,c").is_err());
        assert_eq!(parse_pair("v1, v2").unwrap(), ("v1".into(), "v2".into()));
    }
}
