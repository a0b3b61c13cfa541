//! The lexer the scan reads code through: comments and literals blanked, tokens with
//! their lines, `#[cfg(test)]` items dropped.

/// The source with comments removed and every string, byte string, raw string and char
/// literal replaced by `""` or `''`; newlines are kept so lines still count right.
/// Lifetimes and labels (`'a`) stay as they are.
pub(super) fn strip_comments_and_literals(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut out = String::with_capacity(src.len());
    // Newlines inside what is dropped, so the lines after keep their numbers.
    let keep_newlines = |out: &mut String, from: usize, to: usize| {
        out.extend(chars[from..to.min(chars.len())].iter().filter(|&&c| c == '\n'));
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let (start, mut depth) = (i, 0);
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            keep_newlines(&mut out, start, i);
        } else if c == '"' {
            let start = i;
            i = end_of_quoted(&chars, i, '"');
            out.push_str("\"\"");
            keep_newlines(&mut out, start, i);
        } else if c == '\'' {
            // A char literal is `'x'` or starts `'\`; anything else is a lifetime or label.
            if at(i + 1) == '\\' || (at(i + 1) != '\0' && at(i + 2) == '\'') {
                i = end_of_quoted(&chars, i, '\'');
                out.push_str("''");
            } else {
                out.push(c);
                i += 1;
            }
        } else if c.is_ascii_digit() {
            // A number with its suffix (`0b1`, `1e5`, `8u8`), so no part of it reads as a prefix.
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                out.push(chars[i]);
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw_hashes = chars[i..].iter().take_while(|&&h| h == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + raw_hashes) == '"' {
                // r"…", r#"…"#: ends at a quote followed by as many hashes, no escapes.
                let close: Vec<char> =
                    std::iter::once('"').chain(std::iter::repeat_n('#', raw_hashes)).collect();
                let mut j = i + raw_hashes + 1;
                while j < chars.len() && !chars[j..].starts_with(&close) {
                    j += 1;
                }
                out.push_str("\"\"");
                keep_newlines(&mut out, start, j);
                i = j + close.len();
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let from = i;
                i = end_of_quoted(&chars, i, '"');
                out.push_str("\"\"");
                keep_newlines(&mut out, from, i);
            } else if word == "b" && at(i) == '\'' {
                i = end_of_quoted(&chars, i, '\'');
                out.push_str("''");
            } else if word == "r" && raw_hashes == 1 && (at(i + 1).is_alphabetic() || at(i + 1) == '_') {
                i += 1; // a raw identifier `r#type`: the identifier is what follows
            } else {
                out.push_str(&word);
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index just past the literal opened by `quote` at `open`, honouring `\` escapes.
pub(super) fn end_of_quoted(chars: &[char], open: usize, quote: char) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// A word, `::`, or one other character, with the line it is on.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Token {
    pub(super) text: String,
    pub(super) line: usize,
}

impl Token {
    pub(super) fn is_word(&self) -> bool {
        self.text.starts_with(|c: char| c.is_alphanumeric() || c == '_')
    }
}

/// Tokens of stripped source (see [`strip_comments_and_literals`]).
pub(super) fn tokenize(stripped: &str) -> Vec<Token> {
    let chars: Vec<char> = stripped.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c == '\n' {
            line += 1;
            i += 1;
            continue;
        } else if c.is_whitespace() {
            i += 1;
            continue;
        } else if c.is_alphanumeric() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            i += 1;
        }
        tokens.push(Token { text: chars[start..i].iter().collect(), line });
    }
    tokens
}

/// Tokens without their `#[cfg(test)]` items, and what that says about test-only modules.
pub(super) struct Lexed {
    pub(super) tokens: Vec<Token>,
    /// Children declared `#[cfg(test)] mod name;`, whose files are test-only.
    pub(super) test_children: Vec<String>,
    /// The file opens with `#![cfg(test)]`.
    pub(super) whole_file_is_test: bool,
}

pub(super) fn without_test_items(tokens: &[Token]) -> Lexed {
    let texts: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
    let cfg_test = ["[", "cfg", "(", "test", ")", "]"];
    let mut lexed = Lexed { tokens: Vec::new(), test_children: Vec::new(), whole_file_is_test: false };
    let mut i = 0;
    while i < tokens.len() {
        if texts[i] == "#" && texts[i + 1..].starts_with(&["!"]) && texts[i + 2..].starts_with(&cfg_test) {
            lexed.whole_file_is_test = true;
        }
        if !(texts[i] == "#" && texts[i + 1..].starts_with(&cfg_test)) {
            lexed.tokens.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += 1 + cfg_test.len();
        // Further attributes of the same item (`#[test]`, `#[allow(…)]`).
        while texts.get(i) == Some(&"#") && texts.get(i + 1) == Some(&"[") {
            i = past_group(&texts, i + 1);
        }
        let item_start = i;
        if texts.get(i) == Some(&"pub") {
            i += 1;
            if texts.get(i) == Some(&"(") {
                i = past_group(&texts, i);
            }
        }
        if texts.get(i) == Some(&"mod") && texts.get(i + 2) == Some(&";") {
            lexed.test_children.push(texts[i + 1].to_owned());
            i += 3;
            continue;
        }
        // The item ends at a `;` outside brackets, or where its first `{ … }` closes, or
        // (a field, a last statement) before the bracket closing what it is in.
        i = item_start;
        let mut depth = 0usize;
        while i < texts.len() {
            match texts[i] {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" if depth == 0 => break,
                ")" | "]" => depth -= 1,
                "}" => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                ";" if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
    }
    lexed
}

/// The index just past the bracket group opening at `open`.
pub(super) fn past_group(texts: &[&str], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, text) in texts.iter().enumerate().skip(open) {
        match *text {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    texts.len()
}
