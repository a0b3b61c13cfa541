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
