//! The JSON Schema of summary.json, `schema/summary.schema.json`: derived from the types
//! of [`crate::summary`] (schemars, in the tests only), checked to be the committed one,
//! and every committed summary.json validated against it (jsonschema). After a change to
//! the types, `just schema` (`UPDATE_SCHEMA=1 cargo test --lib summary::schema`) writes it
//! anew.

use std::path::{Path, PathBuf};

use schemars::Schema;
use schemars::generate::SchemaSettings;

use super::Summary;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/summary.schema.json");

/// Every object with named fields is closed (`additionalProperties: false`): a field the
/// types do not declare is a drift a script would not know of. Maps (levels, context)
/// keep their own schema of values. See [`reopen_refs`] for the one exception.
fn closed(schema: &mut Schema) {
    schemars::transform::transform_subschemas(&mut closed, schema);
    if let Some(object) = schema.as_object_mut()
        && object.contains_key("properties")
        && !object.contains_key("additionalProperties")
    {
        object.insert("additionalProperties".into(), false.into());
    }
}

/// A newtype variant of an internally tagged enum (`{"kind": "trend", "rho": …}`) is its
/// tag's `properties` beside a `$ref` to the content's type: `additionalProperties` sees
/// only the tag there, and the content's own would refuse the tag. Such a schema is closed
/// with `unevaluatedProperties` instead, which sees through the `$ref`, and the `$ref`'s
/// target left open (collected in `targets`).
fn reopen_refs(value: &mut serde_json::Value, targets: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(object) => {
            if object.contains_key("properties")
                && let Some(target) = object.get("$ref").and_then(|r| r.as_str()).map(str::to_owned)
                && object.remove("additionalProperties").is_some()
            {
                object.insert("unevaluatedProperties".into(), false.into());
                targets.push(target);
            }
            object.values_mut().for_each(|v| reopen_refs(v, targets));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| reopen_refs(v, targets)),
        _ => {}
    }
}

/// The schema the types say, as the committed file holds it.
fn generated() -> String {
    let settings = SchemaSettings::draft2020_12().for_serialize().with_transform(closed);
    let mut schema = settings.into_generator().into_root_schema_for::<Summary>();
    let object = schema.as_object_mut().expect("a struct's schema is an object");
    object.insert(
        "description".into(),
        "summary.json, written by `margin report` and `margin run` beside report.md \
         (docs/design.md §8). Generated from the types of src/summary/: `just schema`."
            .into(),
    );
    let mut value = serde_json::to_value(&schema).expect("a schema serialises");
    let mut targets = Vec::new();
    reopen_refs(&mut value, &mut targets);
    for target in targets {
        if let Some(def) = value.pointer_mut(&target.replacen('#', "", 1)).and_then(|d| d.as_object_mut()) {
            def.remove("additionalProperties");
        }
    }
    let mut text = serde_json::to_string_pretty(&value).expect("a schema serialises");
    text.push('\n');
    text
}

#[test]
fn the_committed_schema_is_the_one_the_types_say() {
    let now = generated();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(COMMITTED, &now).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(COMMITTED).unwrap_or_default();
    assert!(
        committed == now,
        "schema/summary.schema.json is not the schema of the types of src/summary/: regenerate it with \
         `just schema` (UPDATE_SCHEMA=1 cargo test --lib summary::schema) and commit it"
    );
}

/// Every summary.json in the repository outside `target/`.
fn committed_summaries(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" && name != ".git" {
            committed_summaries(&path, out);
        } else if name == "summary.json" {
            out.push(path);
        }
    }
}

/// The errors of `instance` against the schema, one line each.
pub(crate) fn problems(schema: &serde_json::Value, instance: &serde_json::Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema is valid JSON Schema");
    validator.iter_errors(instance).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

#[test]
fn every_committed_summary_follows_the_schema() {
    // the types' schema, so that a summary and the types are checked even before
    // the committed file is regenerated (the test above says when it is stale)
    let schema: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let mut files = Vec::new();
    committed_summaries(Path::new(env!("CARGO_MANIFEST_DIR")), &mut files);
    files.sort();
    assert!(files.len() >= 4, "the seed reports' summaries: {files:?}");
    for file in files {
        let instance: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let problems = problems(&schema, &instance);
        assert!(problems.is_empty(), "{}:\n{}", file.display(), problems.join("\n"));
    }
}

#[test]
fn the_schema_catches_a_missing_field_an_unknown_one_and_a_wrong_verdict() {
    let schema: serde_json::Value = serde_json::from_str(&generated()).unwrap();
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/reports/xen-dd/summary.json");
    let good: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert!(problems(&schema, &good).is_empty());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("settings");
    assert!(
        problems(&schema, &missing).iter().any(|p| p.contains("settings")),
        "{:?}",
        problems(&schema, &missing)
    );
    let mut unknown = good.clone();
    unknown["trials"]["skipped"] = 3.into();
    assert!(
        problems(&schema, &unknown).iter().any(|p| p.contains("skipped")),
        "{:?}",
        problems(&schema, &unknown)
    );
    let mut verdict = good.clone();
    verdict["comparisons"][0]["verdict"] = "probably".into();
    assert!(!problems(&schema, &verdict).is_empty());
    // a tagged newtype (a trend flag) is closed too, through its `$ref`
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/reports/xen-bonnie/summary.json");
    let mut bonnie: serde_json::Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    let trend = bonnie["cells"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|c| c["flags"].as_array_mut().unwrap().iter_mut())
        .find(|f| f["kind"] == "trend")
        .expect("the bonnie seed has a trend");
    trend["slope"] = 1.into();
    assert!(
        problems(&schema, &bonnie).iter().any(|p| p.contains("slope")),
        "{:?}",
        problems(&schema, &bonnie)
    );
}
