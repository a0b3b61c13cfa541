//! Failure reasons compared across cells: two cells fail "the same way" when the first
//! lines of their errors read the same once what differs from cell to cell is set aside —
//! numbers, paths, long hexadecimal ids, and the cell's own levels. `margin run` stops on
//! it (docs/design.md §6.4) and groups abandoned cells by it, as the report does.

/// How many cells, each without a trial before this run, must have failed the same way —
/// with no trial of the run measured and no failure of another reason — for `margin run`
/// to stop a host's session early (docs/design.md §6.4).
pub(crate) const STOP_AFTER_CELLS: usize = 3;

/// The start of the reason of every cell a run stopped early: `margin run`'s summary says
/// it once, not once a cell.
pub(crate) const STOPPED: &str = "every cell so far fails the same way: ";

/// Why a run stopped early, with the first failure's whole error.
pub(crate) fn stopped(first: &str, trials: u32) -> String {
    let trials = if trials == 1 { "1 trial".to_string() } else { format!("{trials} trials") };
    // a multi-line error (a parse error quotes the output) ends on a line of its own
    let sep = if first.contains('\n') { "\n" } else { "; " };
    format!("{STOPPED}{first}{sep}stopped after {trials}; fix the file and run again (nothing is lost)")
}

/// The key two failures of the same reason share: the error's first line with every path
/// (a word with a `/`), every hexadecimal run of 8 digits or more, every run of digits and
/// each of `levels` (as a whole word) replaced by a placeholder.
///
/// `the run command: exit code 2: ls: cannot access '/data/3': No such file` and the same
/// of `/data/4` give one key; `exit code 1` and `exit code 2` too, since an exit status is
/// a number like any other (the message after it tells them apart).
pub(crate) fn same_way(why: &str, levels: &[&str]) -> String {
    let line = why.lines().next().unwrap_or_default();
    let mut text: String = split_keep(line).into_iter().map(word_key).collect();
    // then the levels that are words (a number or a path is already set aside, and
    // setting it aside first keeps `exit code 2` of a cell whose level is 2 the same as
    // that of the others), longest first, so that a level inside another stays
    let mut levels: Vec<&str> = levels.iter().copied().filter(|l| !l.trim().is_empty()).collect();
    levels.sort_by_key(|l| std::cmp::Reverse(l.len()));
    for level in levels {
        text = replace_word(&text, level, "<level>");
    }
    text
}

/// The levels of a cell's label (`k=v k=v`, `Plan::label`), for [`same_way`].
pub(crate) fn levels_of_label(label: &str) -> Vec<&str> {
    label.split(' ').filter_map(|kv| kv.split_once('=')).map(|(_, v)| v).collect()
}

/// At most five labels, then how many more: `a, b, c, d, e and 415 more`.
pub(crate) fn some_of(labels: &[&str]) -> String {
    const SHOWN: usize = 5;
    let shown = labels[..labels.len().min(SHOWN)].join(", ");
    match labels.len().saturating_sub(SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The labels of `(label, reason)` pairs grouped by reason, in the order each reason
/// first appears: the same reason is the same first line once what differs by cell is
/// set aside (`reason::same_way`: numbers, paths, the cell's levels; the lines after
/// quote each trial's own output), and a group is said with the whole reason of its first
/// cell.
pub(crate) fn by_reason(pairs: &[(String, String)]) -> Vec<(&str, Vec<&str>)> {
    let mut groups: indexmap::IndexMap<String, (&str, Vec<&str>)> = indexmap::IndexMap::new();
    for (label, why) in pairs {
        let key = same_way(why, &levels_of_label(label));
        groups.entry(key).or_insert((why.as_str(), Vec::new())).1.push(label.as_str());
    }
    groups.into_values().collect()
}

/// `text` with every occurrence of `word` that no letter, digit or `_` touches replaced.
fn replace_word(text: &str, word: &str, by: &str) -> String {
    let inner = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        // what precedes the match: in `rest`, or already written out
        let before = rest[..at].chars().last().or_else(|| out.chars().last());
        let after = rest[at + word.len()..].chars().next();
        out.push_str(&rest[..at]);
        if inner(before) || inner(after) {
            out.push_str(word);
        } else {
            out.push_str(by);
        }
        rest = &rest[at + word.len()..];
    }
    out.push_str(rest);
    out
}

/// The text cut into words and what separates them (spaces, quotes, brackets, commas),
/// every piece kept, so that joining them gives the text back.
fn split_keep(text: &str) -> Vec<&str> {
    let separator = |c: char| c.is_whitespace() || "'\"`()[]{}<>,;".contains(c);
    let mut pieces = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if separator(c) {
            if start < i {
                pieces.push(&text[start..i]);
            }
            pieces.push(&text[i..i + c.len_utf8()]);
            start = i + c.len_utf8();
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// A word as the key has it: a path as `<path>`, a long hexadecimal id as `<id>` (also
/// as a part of the word between `-`, `_`, `.`, `:`, `=` or `@`), every run of digits as
/// `#`.
fn word_key(word: &str) -> String {
    if word.contains('/') && word != "/" {
        return "<path>".to_string();
    }
    let mut out = String::with_capacity(word.len());
    let mut part = String::new();
    for c in word.chars().chain(std::iter::once('\0')) {
        if c == '\0' || "-_.:=@".contains(c) {
            out.push_str(&part_key(&part));
            part.clear();
            if c != '\0' {
                out.push(c);
            }
        } else {
            part.push(c);
        }
    }
    out
}

fn part_key(part: &str) -> String {
    if part.len() >= 8
        && part.chars().all(|c| c.is_ascii_hexdigit())
        && part.chars().any(|c| c.is_ascii_digit())
    {
        return "<id>".to_string();
    }
    let mut out = String::with_capacity(part.len());
    let mut digits = false;
    for c in part.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('#');
            }
            digits = true;
        } else {
            out.push(c);
            digits = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::same_way;

    #[test]
    fn what_differs_by_cell_is_set_aside() {
        let a = "the run command: exit code 2: /usr/bin/ls: cannot access '/nonexistent/1': No such file or directory";
        let b = "the run command: exit code 2: /usr/bin/ls: cannot access '/nonexistent/2': No such file or directory";
        assert_eq!(same_way(a, &["1"]), same_way(b, &["2"]));
        assert_eq!(
            same_way(a, &[]),
            "the run command: exit code #: <path> cannot access '<path>': No such file or directory"
        );
        // a level that is a word of the message, and only as a whole word
        let a = "dd: invalid number: 'fast'";
        let b = "dd: invalid number: 'slow'";
        assert_eq!(same_way(a, &["fast"]), same_way(b, &["slow"]));
        assert_ne!(same_way(a, &[]), same_way(b, &[]));
        assert_eq!(same_way("breakfast: fast", &["fast"]), "breakfast: <level>");
        // the workdir's name and a trial's id
        let a = "cannot create the workdir: 0123abcd4567ef89-01a23d34: exists";
        let b = "cannot create the workdir: 89ab01cdef234567-01a23d35: exists";
        assert_eq!(same_way(a, &[]), same_way(b, &[]));
        // only the first line: the lines after quote each trial's own output
        assert_eq!(same_way("regex: found no match\n  stdout| value=1", &[]), "regex: found no match");
    }

    #[test]
    fn different_reasons_stay_apart() {
        let a = "the run command: exit code 1: sh: fio: not found";
        let b = "the run command: exit code 1: sh: dd: not found";
        assert_ne!(same_way(a, &[]), same_way(b, &[]));
        assert_ne!(same_way("timed out after 5 s", &[]), same_way("regex: found no match", &[]));
    }
}
