//! The one cell a set of `factor=level` pairs names (`margin import --set`), or why none
//! or several do, with what exists.

use super::{Cell, Plan};
use crate::diag::suggest;

/// Why `--set` names no single cell; each message lists what exists.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FindCellError {
    /// A key that is no factor; `hint` suggests one (or is empty).
    #[error("--set {key}={value}: `{key}` is not a factor; {hint}")]
    NotAFactor { key: String, value: String, hint: String },
    /// A value that is no level of its factor; its levels in declared order.
    #[error("--set {key}={value}: `{value}` is not a level of `{key}`; its levels are: {}", levels.join(", "))]
    NotALevel { key: String, value: String, levels: Vec<String> },
    /// Each level exists, but no cell has them all (an `exclude` or `where` removed it).
    #[error("no cell has all these levels together (an exclude or where removed it)")]
    NoCell,
    /// Several cells match; `unset` are the factors that tell them apart.
    #[error("{count} cells have these levels; name the cell with --set for: {}", unset.join(", "))]
    Several { count: usize, unset: Vec<String> },
}

impl Plan {
    /// The one cell the `set` levels name; otherwise an error listing what exists.
    pub(crate) fn find_cell(&self, set: &[(String, String)]) -> Result<&Cell, FindCellError> {
        let plan = self;
        for (key, value) in set {
            let Some(k) = plan.keys.iter().position(|k| k == key) else {
                let hint = suggest(key, plan.keys.iter().map(String::as_str)).unwrap_or_default();
                return Err(FindCellError::NotAFactor { key: key.clone(), value: value.clone(), hint });
            };
            // in declared order: the cells follow it
            let mut levels: Vec<&str> = Vec::new();
            for c in &plan.cells {
                for (_, v) in c.levels.iter().filter(|(ck, _)| usize::from(*ck) == k) {
                    if !levels.contains(&v.text.as_str()) {
                        levels.push(&v.text);
                    }
                }
            }
            if !levels.contains(&value.as_str()) {
                return Err(FindCellError::NotALevel {
                    key: key.clone(),
                    value: value.clone(),
                    levels: levels.into_iter().map(str::to_owned).collect(),
                });
            }
        }
        let matching: Vec<&Cell> = plan
            .cells
            .iter()
            .filter(|c| set.iter().all(|(k, v)| plan.levels(c).any(|(ck, cv)| ck == k && cv.text == *v)))
            .collect();
        match matching.as_slice() {
            [one] => Ok(one),
            [] => Err(FindCellError::NoCell),
            many => {
                // the factors that tell the matching cells apart (one of a single level does not)
                let unset: Vec<String> = plan
                    .keys
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !set.iter().any(|(s, _)| s == k))
                    .filter(|k| {
                        let level =
                            |c: &&Cell| plan.levels(c).find(|(ck, _)| ck == k).map(|(_, v)| v.text.clone());
                        many.iter().any(|c| level(c) != level(&many[0]))
                    })
                    .map(str::to_owned)
                    .collect();
                Err(FindCellError::Several { count: many.len(), unset })
            }
        }
    }
}
