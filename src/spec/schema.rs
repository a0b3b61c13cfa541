//! The JSON Schema of the experiment file, for editors (yaml-language-server) and CI.
//!
//! Written by hand: the file's shape (ordered factor maps, zipped groups, percentages)
//! says more in a schema than derived types would. A test keeps it in step with [`Spec`].
//!
//! [`Spec`]: super::Spec

/// The schema as JSON text.
pub fn json_schema() -> &'static str {
    include_str!("schema.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &serde_json::Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    /// serde lists the keys it accepts in its "unknown field" message; the schema's
    /// top-level properties must be the same list.
    #[test]
    fn schema_lists_exactly_the_keys_the_loader_accepts() {
        let schema: serde_json::Value = serde_json::from_str(json_schema()).unwrap();
        let err = serde_saphyr::from_str::<super::super::Spec>("zzz_unknown: 1\n").unwrap_err();
        let msg = err.without_snippet().to_string();
        let list = msg.split("expected one of").nth(1).unwrap();
        let list = list.split(" at line").next().unwrap();
        let mut accepted: Vec<String> =
            list.split(',').map(|s| s.trim().trim_matches('`').to_string()).collect();
        accepted.sort();
        assert_eq!(keys(&schema["properties"]), accepted);
    }

    #[test]
    fn schema_parser_and_fact_lists_match_the_code() {
        let schema: serde_json::Value = serde_json::from_str(json_schema()).unwrap();
        let parsers: Vec<&str> = schema["properties"]["parse"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(parsers, vocab::PARSERS);
        let facts: Vec<&str> = schema["$defs"]["environmentFactor"]["properties"]["fact"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(facts, vocab::FACTS);
    }
}
