//! The shell lexer: following a command template's quoting to give each `{{ … }}` the
//! filter its place needs.
//!
//! Pure text in, text out: what a filter then does with the value is in `quote`.

use std::borrow::Cow;

// The filters the lexer wraps a `{{ … }}` in, by its place (`Templates::new` registers
// them); the prefix keeps them apart from the filters templates name.
pub(super) const IN_SINGLE_QUOTES: &str = "__margin_in_single_quotes";
pub(super) const IN_HEREDOC: &str = "__margin_in_heredoc";
pub(super) const IN_QUOTED_HEREDOC: &str = "__margin_in_quoted_heredoc";
pub(super) const IN_ARITHMETIC: &str = "__margin_in_arithmetic";

/// What the shell makes of the text at some point of a command.
#[derive(Clone, PartialEq, Eq)]
enum Place {
    /// Words: the top level, or inside `$( … )` (with its open parentheses) or backquotes.
    Bare {
        sub: Option<Sub>,
    },
    SingleQuoted,
    /// `$'…'`, where `\` escapes.
    AnsiQuoted,
    DoubleQuoted,
    /// A `#` comment, to the end of the line.
    Comment,
    /// The body of a here-document, to the line that is its delimiter.
    Heredoc {
        delimiter: String,
        quoted: bool,
        tabs: bool,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// `$(`, with the `(` opened inside it since.
    Dollar(u32),
    /// `$((`, likewise.
    Arithmetic(u32),
    Backquote,
}

const BARE: Place = Place::Bare { sub: None };

/// Follow the shell's quoting through the template's text (tags and comments are not
/// text; `{% raw %}` is copied as it is) and wrap each `{{ … }}` in the filter that quotes
/// for its place: bare, it gets the formatter's word; inside quotes, `$( … )`, a comment
/// or a here-document, what that place needs. The text is followed as written: a quote
/// opened in one branch of an `{% if %}` counts for what follows the branch.
pub(super) fn quote_by_place(source: &str) -> Cow<'_, str> {
    if !source.contains(['"', '\'', '#', '<', '$', '`']) {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 64);
    let mut stack = vec![BARE];
    // here-documents named on this line, whose bodies start at the next line
    let mut heredocs: Vec<Place> = Vec::new();
    let mut prev: Option<char> = None;
    let mut rest = source;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{#") || rest.starts_with("{%") {
            let end = tag_end(rest);
            let tag = &rest[..end];
            let body = if is_raw(tag) { raw_end(&rest[end..]) } else { 0 };
            out.push_str(&rest[..end + body]);
            rest = &rest[end + body..];
            continue;
        }
        if rest.starts_with("{{") {
            let end = tag_end(rest);
            quote_expression(&mut out, &rest[..end], &stack);
            rest = &rest[end..];
            prev = Some('}');
            continue;
        }
        let len = follow(&mut stack, &mut heredocs, rest, c, prev);
        out.push_str(&rest[..len]);
        prev = rest[..len].chars().last();
        rest = &rest[len..];
    }
    Cow::Owned(out)
}

/// A `{{ … }}` expression copied to `out`, wrapped in the filter its place (the top
/// of `stack`) needs.
fn quote_expression(out: &mut String, expr: &str, stack: &[Place]) {
    let arithmetic = stack.iter().any(|p| matches!(p, Place::Bare { sub: Some(Sub::Arithmetic(_)) }));
    let delimiter = match stack.last() {
        Some(Place::Heredoc { delimiter, quoted: false, .. }) => Some(delimiter.clone()),
        _ => None,
    };
    // bare, in double quotes, backquotes or a comment the formatter's reference
    // serves as it is; these places need more
    let filter = match stack.last() {
        _ if arithmetic => Some(IN_ARITHMETIC),
        Some(Place::SingleQuoted | Place::AnsiQuoted) => Some(IN_SINGLE_QUOTES),
        Some(Place::Heredoc { quoted: false, .. }) => Some(IN_HEREDOC),
        Some(Place::Heredoc { quoted: true, .. }) => Some(IN_QUOTED_HEREDOC),
        _ => None,
    };
    match (filter, delimiter) {
        (Some(IN_HEREDOC), Some(delimiter)) => {
            wrap(out, expr, &format!("{IN_HEREDOC}({delimiter:?})"));
        }
        (Some(filter), _) => wrap(out, expr, filter),
        (None, _) => out.push_str(expr),
    }
}

/// Follow `c`, the character at the start of `rest` (after `prev`), through the places
/// in `stack` and the here-documents named on this line: how many bytes it takes.
fn follow(
    stack: &mut Vec<Place>,
    heredocs: &mut Vec<Place>,
    rest: &str,
    c: char,
    prev: Option<char>,
) -> usize {
    let top = stack.last().cloned().unwrap_or(BARE);
    let next = rest[c.len_utf8()..].chars().next();
    let mut len = c.len_utf8();
    match (&top, c) {
        (Place::Heredoc { delimiter, tabs, .. }, _) if prev.is_none_or(|p| p == '\n') => {
            let line = rest.split('\n').next().unwrap_or(rest);
            let line_text = if *tabs { line.trim_start_matches('\t') } else { line };
            if line_text == delimiter {
                stack.pop();
                len = line.len();
            }
        }
        (Place::Heredoc { .. }, _) => {}
        (Place::Comment, '\n') => {
            stack.pop();
            stack.extend(heredocs.drain(..).rev());
        }
        (Place::Comment, _) => {}
        (Place::SingleQuoted, '\'') => {
            stack.pop();
        }
        (Place::SingleQuoted, _) => {}
        (Place::AnsiQuoted, '\\') => len += next.map_or(0, char::len_utf8),
        (Place::AnsiQuoted, '\'') => {
            stack.pop();
        }
        (Place::AnsiQuoted, _) => {}
        (Place::Bare { .. } | Place::DoubleQuoted, '\\') => {
            // the next character is taken literally — unless it starts a template tag
            if !["{{", "{%", "{#"].iter().any(|t| rest[1..].starts_with(t)) {
                len += next.map_or(0, char::len_utf8);
            }
        }
        (_, '$') if rest.starts_with("$((") => {
            stack.push(Place::Bare { sub: Some(Sub::Arithmetic(0)) });
            len += 2;
        }
        (_, '$') if next == Some('(') => {
            stack.push(Place::Bare { sub: Some(Sub::Dollar(0)) });
            len += 1;
        }
        (Place::Bare { sub: Some(Sub::Arithmetic(depth)) }, '(') => {
            *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Arithmetic(depth + 1)) };
        }
        (Place::Bare { sub: Some(Sub::Arithmetic(depth)) }, ')') => {
            if *depth == 0 {
                stack.pop();
                len += usize::from(next == Some(')'));
            } else {
                *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Arithmetic(depth - 1)) };
            }
        }
        (Place::Bare { sub: Some(Sub::Backquote) }, '`') => {
            stack.pop();
        }
        (Place::Bare { .. } | Place::DoubleQuoted, '`') => {
            stack.push(Place::Bare { sub: Some(Sub::Backquote) })
        }
        (Place::DoubleQuoted, '"') => {
            stack.pop();
        }
        (Place::DoubleQuoted, _) => {}
        (Place::Bare { .. }, '$') if next == Some('\'') => {
            stack.push(Place::AnsiQuoted);
            len += 1;
        }
        (Place::Bare { .. }, '\'') => stack.push(Place::SingleQuoted),
        (Place::Bare { .. }, '"') => stack.push(Place::DoubleQuoted),
        (Place::Bare { sub: Some(Sub::Dollar(depth)) }, '(') => {
            *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Dollar(depth + 1)) };
        }
        (Place::Bare { sub: Some(Sub::Dollar(depth)) }, ')') => {
            if *depth == 0 {
                stack.pop();
            } else {
                *stack.last_mut().expect("a place") = Place::Bare { sub: Some(Sub::Dollar(depth - 1)) };
            }
        }
        (Place::Bare { .. }, '#') if prev.is_none_or(|p| p.is_whitespace() || ";&|()".contains(p)) => {
            stack.push(Place::Comment);
        }
        (Place::Bare { .. }, '<') if rest.starts_with("<<") && !rest.starts_with("<<<") => {
            let (taken, heredoc) = heredoc_start(rest);
            len = taken;
            heredocs.extend(heredoc);
        }
        (Place::Bare { .. }, '\n') => stack.extend(heredocs.drain(..).rev()),
        (Place::Bare { .. }, _) => {}
    }
    len
}

/// `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`, `<< WORD` at the start of `text`: how
/// much of it the operator and its word take, and the here-document it opens.
fn heredoc_start(text: &str) -> (usize, Option<Place>) {
    let mut i = 2;
    let tabs = text[i..].starts_with('-');
    if tabs {
        i += 1;
    }
    i += text[i..].len() - text[i..].trim_start_matches([' ', '\t']).len();
    let word_len =
        text[i..].find(|c: char| c.is_whitespace() || ";&|<>()".contains(c)).unwrap_or(text.len() - i);
    let word = &text[i..i + word_len];
    if word.is_empty() || word.contains("{{") {
        return (i, None);
    }
    let quoted = word.contains(['\'', '"', '\\']);
    let delimiter: String = word.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
    (i + word_len, Some(Place::Heredoc { delimiter, quoted, tabs }))
}

/// Whether a `{% … %}` tag is `{% raw %}`.
fn is_raw(tag: &str) -> bool {
    let inner = tag.trim_start_matches("{%").trim_end_matches("%}");
    inner.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace()) == "raw"
}

/// The length of a `{% raw %}` block's body and its `{% endraw %}` tag.
fn raw_end(text: &str) -> usize {
    let mut from = 0;
    while let Some(i) = text[from..].find("{%") {
        let start = from + i;
        let end = start + tag_end(&text[start..]);
        let inner = text[start..end].trim_start_matches("{%").trim_end_matches("%}");
        if inner.trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace()) == "endraw" {
            return end;
        }
        from = end;
    }
    text.len()
}

/// The length of the `{{ … }}`, `{% … %}` or `{# … #}` at the start of `text`, through its
/// closing braces (string literals inside it may hold braces); all of `text` when it is
/// never closed.
fn tag_end(text: &str) -> usize {
    let close = match &text[..2] {
        "{{" => b'}',
        "{%" => b'%',
        _ => b'#',
    };
    let bytes = text.as_bytes();
    let mut i = 2;
    let mut quote = None;
    while i < bytes.len() {
        match (quote, bytes[i]) {
            (Some(_), b'\\') if close != b'#' && i + 1 < bytes.len() => i += 1,
            (Some(q), b) if b == q => quote = None,
            (None, b'"' | b'\'') if close != b'#' => quote = Some(bytes[i]),
            (None, b) if b == close && bytes.get(i + 1) == Some(&b'}') => return i + 2,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// `{{ x | f }}` → `{{ (x | f) | filter }}`, keeping `-`/`+` whitespace control.
fn wrap(out: &mut String, expr: &str, filter: &str) {
    let Some(inner) = expr.strip_prefix("{{").and_then(|e| e.strip_suffix("}}")) else {
        out.push_str(expr); // never closed: minijinja says so
        return;
    };
    let (open, inner) = match inner.strip_prefix(['-', '+']) {
        Some(rest) => (&inner[..1], rest),
        None => ("", inner),
    };
    let (inner, close) = match inner.strip_suffix(['-', '+']) {
        Some(rest) => (rest, &inner[inner.len() - 1..]),
        None => (inner, ""),
    };
    out.push_str(&format!("{{{{{open} ({inner}) | {filter} {close}}}}}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_shell_quoting_is_left_as_it_is() {
        assert!(matches!(quote_by_place("dd bs={{ bs }} of={{ f }}"), Cow::Borrowed(_)));
    }

    #[test]
    fn each_place_gets_its_filter() {
        let cases = [
            ("echo \"{{ x }}\" {{ x }}", "echo \"{{ x }}\" {{ x }}"),
            ("echo '{{ x }}'", "echo '{{ ( x ) | __margin_in_single_quotes }}'"),
            ("echo $'a\\'{{ x }}'", "echo $'a\\'{{ ( x ) | __margin_in_single_quotes }}'"),
            ("echo '{{- x | upper -}}'", "echo '{{- ( x | upper ) | __margin_in_single_quotes -}}'"),
            ("echo $(( {{ n }} + 1 ))", "echo $(( {{ ( n ) | __margin_in_arithmetic }} + 1 ))"),
            ("cat <<EOF\n{{ x }}\nEOF", "cat <<EOF\n{{ ( x ) | __margin_in_heredoc(\"EOF\") }}\nEOF"),
            ("cat <<'EOF'\n{{ x }}\nEOF", "cat <<'EOF'\n{{ ( x ) | __margin_in_quoted_heredoc }}\nEOF"),
            // the here-document ends at its delimiter's line, the comment at the line's end
            (
                "cat <<EOF\nEOF\necho '{{ x }}'",
                "cat <<EOF\nEOF\necho '{{ ( x ) | __margin_in_single_quotes }}'",
            ),
            ("# it's\necho {{ x }}", "# it's\necho {{ x }}"),
            // tags, comments and raw blocks are not shell text
            ("echo {# ' #}{{ x }}", "echo {# ' #}{{ x }}"),
            ("echo {% raw %}'{% endraw %}{{ x }}", "echo {% raw %}'{% endraw %}{{ x }}"),
            ("{% set q = \"'\" %}echo {{ x }}", "{% set q = \"'\" %}echo {{ x }}"),
        ];
        for (source, expected) in cases {
            assert_eq!(quote_by_place(source), expected, "{source}");
        }
    }
}
