//! JSON text written by hand where serde's machinery costs more than the work: the trial
//! record (once per trial, docs/store.md) and `margin plan --json` (once per cell). Each
//! writes what serde_json would, byte for byte: their tests compare the two.

/// `text` as a JSON string, quotes included, as serde_json writes it: at once when
/// nothing in it needs an escape (almost always), else through serde_json.
pub(crate) fn push_string(out: &mut Vec<u8>, text: &str) {
    if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        // writing a str into a Vec cannot fail
        let _ = serde_json::to_writer(&mut *out, text);
        return;
    }
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// An integer in decimal (serde_json's own formatter, itoa).
pub(crate) fn push_integer(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}
