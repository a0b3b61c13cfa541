//! How summary.json is written: serde_json's pretty layout (two spaces a level, one key
//! or item a line), except that a list of plain values (numbers, strings, true, false,
//! null) sits on one line: `"values": [186.1, 185.2, 183.3]`. A cell's trial values
//! were one line each, nine lines in ten of a large summary.json; on one line a reader
//! sees a cell on one screen, and the file is a fifth smaller (136 MB rather than 168 MB
//! at 10⁶ trials of four metrics; docs/design.md, summary.json).

use std::cell::Cell;
use std::io::{self, Write};

use rayon::prelude::*;
use serde::{Serialize, Serializer};
use serde_json::ser::{CharEscape, CompactFormatter, Formatter};

use super::Summary;

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

thread_local! {
    /// Set while [`summary_to_writer`] writes everything of a summary but its cells and
    /// its comparisons.
    static LISTS_LEFT_OUT: Cell<bool> = const { Cell::new(false) };
}

/// How [`Summary::cells`] and [`Summary::comparisons`] are written: as the lists they
/// are, or as empty ones while [`summary_to_writer`] writes the rest of the summary around
/// them.
pub(crate) fn left_out<S: Serializer, T: Serialize>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
    match LISTS_LEFT_OUT.get() {
        true => s.collect_seq(std::iter::empty::<&T>()),
        false => s.collect_seq(items),
    }
}

/// Cells or comparisons in a piece of [`summary_to_writer`]: a megabyte or two of text.
const PIECE: usize = 256;

/// Writes a summary as [`to_writer`] does, the same bytes, with its cells (most of a
/// large summary.json: every trial's value) and its comparisons formatted in pieces on all
/// cores, a piece per core at a time, so that no more than those pieces are held: 0.4 s
/// of a report on 10⁶ trials was this file written on one core, what the report waited
/// for last.
pub(crate) fn summary_to_writer<W: Write>(w: W, summary: &Summary) -> io::Result<()> {
    pieces_to_writer(w, summary, PIECE)
}

fn pieces_to_writer<W: Write>(mut w: W, summary: &Summary, piece: usize) -> io::Result<()> {
    if summary.cells.len() + summary.comparisons.len() <= piece {
        return to_writer(w, summary).map_err(io::Error::from);
    }
    // the rest, with `"cells": []` and `"comparisons": []` where the lists go: the only
    // keys at the top level's indentation that are theirs (a string holds no line break:
    // it is escaped)
    LISTS_LEFT_OUT.set(true);
    let shell = to_string(summary);
    LISTS_LEFT_OUT.set(false);
    let shell = shell.map_err(io::Error::from)?;
    let rest = list_in_pieces(&mut w, &shell, "cells", &summary.cells, piece)?;
    let rest = list_in_pieces(&mut w, rest, "comparisons", &summary.comparisons, piece)?;
    w.write_all(rest.as_bytes())
}

/// Writes `shell` up to the bracket that opens its top-level list `key`, then the list's
/// `items` (a list of objects), each after a line break and the indentation (a comma
/// before all but the first), formatted in pieces on all cores; returns what follows the
/// bracket. An empty list writes no item: the shell's `[]` is its text.
fn list_in_pieces<'s, W: Write, T: Serialize + Sync>(
    w: &mut W,
    shell: &'s str,
    key: &str,
    items: &[T],
    piece: usize,
) -> io::Result<&'s str> {
    let head = format!("\n  \"{key}\": [");
    let at = shell
        .find(&format!("{head}]"))
        .ok_or_else(|| io::Error::other(format!("summary.json without its {key}")))?;
    w.write_all(&shell.as_bytes()[..at + head.len()])?;
    let rest = &shell[at + head.len()..];
    if items.is_empty() {
        return Ok(rest);
    }
    let threads = rayon::current_num_threads().max(1);
    // The waves of pieces are formatted on a thread of their own while the writer writes
    // the wave before: the kernel's copy of a file this size into the page cache took as
    // long as formatting it, and the cores waited for it between waves. The writer stays
    // on this thread (it may be stdout's lock).
    std::thread::scope(|scope| -> io::Result<()> {
        let (send, formatted) = std::sync::mpsc::sync_channel::<serde_json::Result<Vec<u8>>>(threads);
        scope.spawn(move || {
            for (wave, these) in items.chunks(piece * threads).enumerate() {
                let texts: Vec<serde_json::Result<Vec<u8>>> = these
                    .par_chunks(piece)
                    .enumerate()
                    .map(|(k, items)| {
                        let mut out = Vec::new();
                        for (i, item) in items.iter().enumerate() {
                            // as the list's items are written: at the list's depth
                            let first = wave == 0 && k == 0 && i == 0;
                            let layout = Layout {
                                level: 2,
                                lists: vec![Some(false)],
                                item: Some(first),
                                has_value: false,
                            };
                            item.serialize(&mut serde_json::Serializer::with_formatter(&mut out, layout))?;
                        }
                        Ok(out)
                    })
                    .collect();
                for text in texts {
                    // a writer that stopped has its error to give
                    if send.send(text).is_err() {
                        return;
                    }
                }
            }
        });
        // the formatter ends when the writer stops taking (its receiver dropped on error)
        for text in formatted {
            w.write_all(&text.map_err(io::Error::from)?)?;
        }
        Ok(())
    })?;
    // the end of a list of objects: a line break and the key's indentation (the bracket
    // is the shell's)
    w.write_all(b"\n  ")?;
    Ok(rest)
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

    /// A summary written with its cells and comparisons in pieces is the same text, byte
    /// for byte, as written whole: pieces of one item, of a few, and the last piece short;
    /// and with either list empty.
    #[test]
    fn the_lists_written_in_pieces_are_the_summary_written_whole() {
        use crate::analyze::{MemoryStore, summarize_store};
        use vocab::{Better, MeanKind};
        let yaml = "matrix:\n  a: [1, 2, 3, 4, 5, 6, 7]\n  b: [x, y, z]\nrun: \"true\"\nanalysis:\n  compare:\n    - factor: a\n      baseline: '1'\n";
        let mut m = MemoryStore::new("pieces.yaml", yaml);
        m.metric("rate", "B/s", Better::Higher, MeanKind::Arithmetic).session("s1", "h1", &[]);
        for round in 0..4 {
            for a in 1..=7 {
                for b in ["x", "y", "z"] {
                    let v = 100.0 + (a * 7 + round) as f64 + if b == "y" { 0.5 } else { 0.0 };
                    m.trial(&[("a", &a.to_string()), ("b", b)], &[("rate", v), ("latency", 1.0 / v)]);
                }
            }
        }
        let summary = summarize_store(&m.exp, &m.plan, &m.snapshot, &[]).unwrap();
        assert_eq!(summary.cells.len(), 42);
        let whole = to_string(&summary).unwrap();
        assert!(whole.contains("\n  \"cells\": [\n    {"), "the cells are a list of objects");
        assert!(whole.contains("\n  \"comparisons\": [\n    {"), "the comparisons are a list of objects");
        assert!(summary.comparisons.len() > 5, "{} comparisons", summary.comparisons.len());
        for piece in [1, 5, 41, 42, 100] {
            let mut out = Vec::new();
            pieces_to_writer(&mut out, &summary, piece).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), whole, "pieces of {piece}");
        }
        // either list empty: its `[]` as written whole
        for (no_cells, no_comparisons) in [(false, true), (true, false)] {
            let mut other = summary.clone();
            if no_cells {
                other.cells.clear();
            }
            if no_comparisons {
                other.comparisons.clear();
            }
            let whole = to_string(&other).unwrap();
            for piece in [1, 5] {
                let mut out = Vec::new();
                pieces_to_writer(&mut out, &other, piece).unwrap();
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    whole,
                    "pieces of {piece}, {no_cells} {no_comparisons}"
                );
            }
        }
        // a disk that fills while the pieces are written: its error, not a hang or a panic
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        for room in [0, 100, whole.len() / 2, whole.len() - 10] {
            let e = pieces_to_writer(Full(room), &summary, 1).expect_err("the disk is full");
            assert_eq!(e.kind(), io::ErrorKind::StorageFull, "room for {room} bytes");
        }
        pieces_to_writer(Full(whole.len()), &summary, 1).expect("room for all of it");
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
