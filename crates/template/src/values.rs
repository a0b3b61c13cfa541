//! Template values: levels as typed minijinja values, and the names one cell's templates
//! see.

use std::collections::BTreeMap;

use minijinja::value::Value;

use vocab::{Scalar, ScalarKind};

/// A level as a template value: numbers and booleans keep their type, so
/// `{% if count > 100 %}` compares numbers; anything else is its text.
pub fn scalar_value(s: &Scalar) -> Value {
    match s.kind {
        ScalarKind::Int => {
            s.text.parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::from(s.text.as_str()))
        }
        ScalarKind::Float => {
            s.text.parse::<f64>().map(Value::from).unwrap_or_else(|_| Value::from(s.text.as_str()))
        }
        ScalarKind::Bool => Value::from(s.text.eq_ignore_ascii_case("true")),
        ScalarKind::Str => Value::from(s.text.as_str()),
    }
}

/// The names a template sees for one cell, in a stable order.
#[derive(Debug, Clone, Default)]
pub struct Context(BTreeMap<String, Value>);

impl Context {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.0.insert(name.to_string(), value);
    }

    pub(super) fn to_value(&self) -> Value {
        Value::from(self.0.clone())
    }

    /// The context with one more entry, for a render only (`name` need not be a name a
    /// template can write).
    pub(super) fn to_value_with(&self, name: &str, value: Value) -> Value {
        let mut map = self.0.clone();
        map.insert(name.to_string(), value);
        Value::from(map)
    }

    pub(super) fn into_value(self) -> Value {
        Value::from(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_keep_their_type() {
        let scalar = |text: &str, kind| Scalar { text: text.into(), kind };
        assert_eq!(scalar_value(&scalar("12", ScalarKind::Int)), Value::from(12));
        assert_eq!(scalar_value(&scalar("1.5", ScalarKind::Float)), Value::from(1.5));
        assert_eq!(scalar_value(&scalar("True", ScalarKind::Bool)), Value::from(true));
        assert_eq!(scalar_value(&scalar("4k", ScalarKind::Str)), Value::from("4k"));
        // a number too large for its type stays the text it was written as
        assert_eq!(
            scalar_value(&scalar("99999999999999999999", ScalarKind::Int)),
            Value::from("99999999999999999999")
        );
    }
}
