//! The summary as a report template sees it: `summary`, summary.json as written, with
//! each field turned into template values only when a template reads it. The built-in
//! template reads a few small fields; turning every cell and comparison of a large store
//! into template values was the report's largest allocation (171 MB of a 10⁶-trial,
//! four-metric report's 450 MB peak), spent on nothing. A template of the user's that
//! reads `summary.cells` gets them, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr, Serde, Value};

use crate::summary::Summary;

/// `summary` in a template's context.
#[derive(Debug)]
pub(crate) struct LazySummary {
    summary: Arc<Summary>,
    /// The fields read so far: a field read in a loop is converted once.
    converted: Mutex<HashMap<&'static str, Value>>,
}

/// summary.json's fields, in its order.
const FIELDS: [&str; 16] = [
    "experiment",
    "description",
    "settings",
    "trials",
    "metrics",
    "cells",
    "comparisons",
    "effects",
    "warnings",
    "pending",
    "failures",
    "cell_failures",
    "environment",
    "reproduce",
    "telemetry",
    "boots",
];

impl LazySummary {
    pub(crate) fn value(summary: Arc<Summary>) -> Value {
        Value::from_object(LazySummary { summary, converted: Mutex::default() })
    }

    /// The fields summary.json has (telemetry only when there is some).
    fn fields(&self) -> impl Iterator<Item = &'static str> + '_ {
        FIELDS.into_iter().filter(|f| match *f {
            "telemetry" => !self.summary.telemetry.is_empty(),
            "boots" => !self.summary.boots.is_empty(),
            _ => true,
        })
    }

    /// Field `name` as template values, as the whole summary converted at once
    /// would have it.
    fn field(&self, name: &str) -> Option<Value> {
        let s = &*self.summary;
        Some(match name {
            "experiment" => Value::from(Serde(&s.experiment)),
            "description" => Value::from(Serde(&s.description)),
            "settings" => Value::from(Serde(&s.settings)),
            "trials" => Value::from(Serde(&s.trials)),
            "metrics" => Value::from(Serde(&s.metrics)),
            "cells" => Value::from(Serde(&s.cells)),
            "comparisons" => Value::from(Serde(&s.comparisons)),
            "effects" => Value::from(Serde(&s.effects)),
            "warnings" => Value::from(Serde(&s.warnings)),
            "pending" => Value::from(Serde(&s.pending)),
            "failures" => Value::from(Serde(&s.failures)),
            "cell_failures" => Value::from(Serde(&s.cell_failures)),
            "environment" => Value::from(Serde(&s.environment)),
            "reproduce" => Value::from(Serde(&s.reproduce)),
            "telemetry" if !s.telemetry.is_empty() => Value::from(Serde(&s.telemetry)),
            "boots" if !s.boots.is_empty() => Value::from(Serde(&s.boots)),
            _ => return None,
        })
    }
}

impl Object for LazySummary {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = self.fields().find(|f| Some(*f) == key.as_str())?;
        let mut converted = self.converted.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(value) = converted.get(name) {
            return Some(value.clone());
        }
        let value = self.field(name)?;
        converted.insert(name, value.clone());
        Some(value)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.fields().map(Value::from).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_summary;

    /// Every field reads as the whole summary converted at once would have it, no field
    /// is missing and none is extra: a field added to summary.json and not here fails.
    #[test]
    fn the_lazy_summary_is_the_summary() {
        for summary in sample_summary() {
            let eager = Value::from(Serde(&summary));
            let lazy = LazySummary::value(Arc::new(summary));
            let keys = |v: &Value| -> Vec<String> {
                v.try_iter().unwrap().map(|k| k.as_str().unwrap().to_owned()).collect()
            };
            assert_eq!(keys(&lazy), keys(&eager));
            assert!(keys(&eager).len() >= 14);
            for key in keys(&eager) {
                let (a, b) = (lazy.get_attr(&key).unwrap(), eager.get_attr(&key).unwrap());
                assert_eq!(a, b, "{key}");
                assert_eq!(format!("{a:?}"), format!("{b:?}"), "{key}");
            }
            assert!(lazy.get_attr("nothing").unwrap().is_undefined());
        }
    }
}
