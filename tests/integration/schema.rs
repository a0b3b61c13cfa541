//! `margin schema`: valid JSON Schema that describes the shipped experiments' keys.

use super::{margin, stdout};

#[test]
fn schema_is_json_and_covers_the_shipped_experiment() {
    let out = margin().arg("schema").output().unwrap();
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(schema["required"], serde_json::json!(["matrix", "run"]));
    let props = schema["properties"].as_object().unwrap();
    for key in [
        "matrix",
        "where",
        "environment",
        "hosts",
        "vars",
        "run",
        "parse",
        "metrics",
        "repetitions",
        "analysis",
    ] {
        assert!(props.contains_key(key), "{key}");
    }
    // The committed copy editors point at is the same text.
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/experiment.schema.json"))
            .unwrap();
    assert_eq!(
        committed.trim_end(),
        stdout(&out).trim_end(),
        "run `margin schema > schema/experiment.schema.json`"
    );
}

/// A summary.json written now, by a real run, follows the committed schema of
/// summary.json (`schema/summary.schema.json`, generated from the types of src/summary/).
#[test]
fn a_fresh_summary_follows_the_committed_summary_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("two.yaml"),
        "matrix:\n  what: [a, b]\nrun: 'printf \"%s\" {{ what }} > /dev/null'\nrepetitions: 3\n\
         analysis:\n  compare:\n    - { factor: what, baseline: a }\n",
    )
    .unwrap();
    let out = super::as_a_user(dir.path()).args(["run", "two.yaml"]).output().unwrap();
    assert!(out.status.success(), "{}", super::stderr(&out));
    let out = super::as_a_user(dir.path()).args(["report", "two.yaml", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", super::stderr(&out));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/summary.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> =
        validator.iter_errors(&summary).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(problems.is_empty(), "{}\n(stale? `just schema`)", problems.join("\n"));
    assert_eq!(summary["comparisons"][0]["factor"], "what");
}
