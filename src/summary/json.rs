//! How summary.json is written: serde_json's pretty layout (two spaces a level, one key
//! or item a line), except that a list of plain values (numbers, strings, true, false,
//! null) sits on one line: `"values": [186.1, 185.2, 183.3]`. A cell's trial values
//! were one line each, nine lines in ten of a large summary.json; on one line a reader
//! sees a cell on one screen, and the file is a fifth smaller (136 MB rather than 168 MB
//! at 10⁶ trials of four metrics; docs/design.md, summary.json).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

/// Writes `value` as summary.json is written.
pub(crate) fn to_writer<W: Write, T: Serialize + ?Sized>(writer: W, value: &T) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(writer, Layout::default()))
}

/// [`to_writer`] into a string.
pub(crate) fn to_string<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::new();
    to_writer(&mut out, value)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// The layout: serde_json's `PrettyFormatter`, with lists of plain values on one line.
/// Whether a list is one line is known at its first item, so the separator before an item
/// waits until the item begins.
#[derive(Default)]
struct Layout {
    /// Nesting depth: the indentation of the next line.
    level: usize,
    /// Whether the innermost open list or object has an item yet.
    has_value: bool,
    /// For each open list: whether it is on one line (`None` until its first item).
    lists: Vec<Option<bool>>,
    /// An item of the innermost list is about to begin: whether it is the first.
    item: Option<bool>,
}

impl Layout {
    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    /// Before anything that begins a value: the separator of a list item, if one waits.
    /// `plain`: the value is a number, string, boolean or null rather than a list or object.
    fn item<W: ?Sized + Write>(&mut self, w: &mut W, plain: bool) -> io::Result<()> {
        let Some(first) = self.item.take() else { return Ok(()) };
        let list = self.lists.last_mut().expect("an item is in a list");
        let one_line = *list.get_or_insert(plain);
        match (one_line, first) {
            (true, true) => Ok(()),
            (true, false) => w.write_all(b", "),
            (false, first) => {
                w.write_all(if first { b"\n" } else { b",\n" })?;
                self.indent(w)
            }
        }
    }

    fn plain<W: ?Sized + Write>(
        &mut self,
        w: &mut W,
        write: impl FnOnce(&mut CompactFormatter, &mut W) -> io::Result<()>,
    ) -> io::Result<()> {
        self.item(w, true)?;
        write(&mut CompactFormatter, w)
    }
}

impl Formatter for Layout {
    fn write_null<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.plain(w, |f, w| f.write_null(w))
    }
    fn write_bool<W: ?Sized + Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.plain(w, |f, w| f.write_bool(w, v))
    }
    fn write_i8<W: ?Sized + Write>(&mut self, w: &mut W, v: i8) -> io::Result<()> {
        self.plain(w, |f, w| f.write_i8(w, v))
    }
    fn write_i16<W: ?Sized + Write>(&mut self, w: &mut W, v: i16) -> io::Result<()> {
        self.plain(w, |f, w| f.write_i16(w, v))
    }
    fn write_i32<W: ?Sized + Write>(&mut self, w: &mut W, v: i32) -> io::Result<()> {
        self.plain(w, |f, w| f.write_i32(w, v))
    }
    fn write_i64<W: ?Sized + Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        self.plain(w, |f, w| f.write_i64(w, v))
    }
    fn write_i128<W: ?Sized + Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        self.plain(w, |f, w| f.write_i128(w, v))
    }
    fn write_u8<W: ?Sized + Write>(&mut self, w: &mut W, v: u8) -> io::Result<()> {
        self.plain(w, |f, w| f.write_u8(w, v))
    }
    fn write_u16<W: ?Sized + Write>(&mut self, w: &mut W, v: u16) -> io::Result<()> {
        self.plain(w, |f, w| f.write_u16(w, v))
    }
    fn write_u32<W: ?Sized + Write>(&mut self, w: &mut W, v: u32) -> io::Result<()> {
        self.plain(w, |f, w| f.write_u32(w, v))
    }
    fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        self.plain(w, |f, w| f.write_u64(w, v))
    }
    fn write_u128<W: ?Sized + Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        self.plain(w, |f, w| f.write_u128(w, v))
    }
    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        self.plain(w, |f, w| f.write_f32(w, v))
    }
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        self.plain(w, |f, w| f.write_f64(w, v))
    }
    fn write_number_str<W: ?Sized + Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.plain(w, |f, w| f.write_number_str(w, v))
    }
    fn begin_string<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.plain(w, |f, w| f.begin_string(w))
    }
    fn write_raw_fragment<W: ?Sized + Write>(&mut self, w: &mut W, fragment: &str) -> io::Result<()> {
        self.plain(w, |f, w| f.write_raw_fragment(w, fragment))
    }
    fn write_char_escape<W: ?Sized + Write>(&mut self, w: &mut W, escape: CharEscape) -> io::Result<()> {
        CompactFormatter.write_char_escape(w, escape)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.item(w, false)?;
        self.level += 1;
        self.has_value = false;
        self.lists.push(None);
        w.write_all(b"[")
    }
    fn begin_array_value<W: ?Sized + Write>(&mut self, _: &mut W, first: bool) -> io::Result<()> {
        self.item = Some(first);
        Ok(())
    }
    fn end_array_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        let one_line = self.lists.pop().flatten().unwrap_or(true);
        if self.has_value && !one_line {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(b"]")
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.item(w, false)?;
        self.level += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        w.write_all(if first { b"\n" } else { b",\n" })?;
        self.indent(w)
    }
    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(b"}")
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn lists_of_plain_values_sit_on_one_line_and_the_rest_is_serde_jsons_pretty_layout() {
        let value = json!({
            "cell": "a",
            "values": [1.5, 2.25, -3e-7],
            "flags": [],
            "levels": {"blocks": "1", "empty": {}},
            "mixed": ["x", {"y": 1}, null],
            "cells": [{"n": 1, "set_aside": [true, false]}, []],
        });
        // (serde_json's maps keep their keys sorted)
        let expected = r#"{
  "cell": "a",
  "cells": [
    {
      "n": 1,
      "set_aside": [true, false]
    },
    []
  ],
  "flags": [],
  "levels": {
    "blocks": "1",
    "empty": {}
  },
  "mixed": ["x", {
      "y": 1
    }, null],
  "values": [1.5, 2.25, -3e-7]
}"#;
        assert_eq!(to_string(&value).unwrap(), expected);
    }

    /// Any JSON value: the keys and the nesting of summary.json's kinds of content.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("JSON numbers are finite", |f| f.is_finite()).prop_map(Value::from),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\]{0,4}", inner), 0..6)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    /// Removes the whitespace outside strings, as a check that only it differs.
    fn squeezed(text: &str) -> String {
        let (mut out, mut in_string, mut escaped) = (String::new(), false, false);
        for c in text.chars() {
            if in_string {
                match (escaped, c) {
                    (true, _) => escaped = false,
                    (false, '\\') => escaped = true,
                    (false, '"') => in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                in_string = true;
            } else if c.is_whitespace() {
                continue;
            }
            out.push(c);
        }
        out
    }

    proptest! {
        /// The text reads back as the same value, differs from serde_json's pretty text
        /// in whitespace only, and is serde_json's pretty text exactly when no list holds
        /// a plain value first.
        #[test]
        fn reads_back_the_same_and_differs_from_pretty_in_whitespace_only(value in value()) {
            let ours = to_string(&value).unwrap();
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            prop_assert_eq!(serde_json::from_str::<Value>(&ours).unwrap(), value.clone());
            prop_assert_eq!(squeezed(&ours), squeezed(&pretty));
            fn plain_first(v: &Value) -> bool {
                match v {
                    Value::Array(items) => {
                        items.first().is_some_and(|i| !i.is_array() && !i.is_object())
                            || items.iter().any(plain_first)
                    }
                    Value::Object(entries) => entries.values().any(plain_first),
                    _ => false,
                }
            }
            if !plain_first(&value) {
                prop_assert_eq!(ours, pretty);
            }
        }
    }
}
