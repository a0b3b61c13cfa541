//! Every repository path the documentation names exists: docs/*.md, README.md and the `//!`
//! module docs of `src/` and `crates/*/src/`.
//!
//! What counts as a repository path, and why:
//! - a word starting with a top folder of the repository (`src/`, `crates/`, `tests/`,
//!   `docs/`, `lab/`, `bench/`, `experiments/`, `schema/`, `reports/`, `examples/`, `.ci/`),
//!   backquoted or in prose: a reader types it into a shell or an editor as it stands;
//! - a backquoted name of a Rust file without its folder (`ssh.rs`, `cmd/plan.rs`): some
//!   file of the repository must end so, since the text around it gives the folder;
//! - a Markdown link's target that is not a URL, relative to the file that links;
//! - a placeholder stops the check at the folder above it: a part in angle brackets
//!   (`reports/<name>/`), with `*` or `{` (`experiments/*.yaml`), or a name in capitals
//!   (`experiments/NAME.yaml`);
//! - `reports/NAME/…` is a store: the folder need not be in the repository when a shipped
//!   experiment (`experiments/NAME.yaml`, `lab/experiments/NAME.yaml`) writes it, and what
//!   is inside a store is the store's own layout (docs/store.md), not checked here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's top folders a path in the docs starts with.
const TOPS: [&str; 11] =
    ["src", "crates", "tests", "docs", "lab", "bench", "experiments", "schema", "reports", "examples", ".ci"];

#[test]
fn every_path_the_docs_name_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = repository_files(root);
    let mut dead = Vec::new();
    for doc in documents(root) {
        let text = std::fs::read_to_string(&doc).unwrap();
        let rust = doc.extension().is_some_and(|e| e == "rs");
        let shown = doc.strip_prefix(root).unwrap().display().to_string();
        for (number, line) in text.lines().enumerate() {
            let line = if rust {
                match line.trim_start().strip_prefix("//!") {
                    Some(doc_line) => doc_line,
                    None => continue,
                }
            } else {
                line
            };
            for named in paths_in(line) {
                if !exists(root, &files, doc.parent().unwrap(), &named) {
                    dead.push(format!("{shown}:{}: {}", number + 1, named.text()));
                }
            }
        }
    }
    assert!(
        dead.is_empty(),
        "{} paths in the docs name nothing in the repository (write the path as it is now, or drop it):\n{}",
        dead.len(),
        dead.join("\n")
    );
}

/// The extraction on a line of each kind: what is a path, what is a placeholder, what is
/// not a path at all.
#[test]
fn what_counts_as_a_path() {
    let found = |line: &str| paths_in(line).iter().map(|p| p.text().to_string()).collect::<Vec<_>>();
    assert_eq!(
        found("run `lab/boot.sh bare` (see src/run/process/, tests/data/sysroot/xen-dom0)."),
        ["lab/boot.sh", "src/run/process/", "tests/data/sysroot/xen-dom0"]
    );
    assert_eq!(found("`reports/<name>/report.md`, `experiments/NAME.yaml`"), ["reports/", "experiments/"]);
    assert_eq!(
        found("`experiments/<spec hash>/<file name>` and `src/cmd/*.rs`"),
        ["experiments/", "src/cmd/"]
    );
    assert_eq!(found("`process.rs` (spawn), `ssh/shell.rs`, `cargo test`"), ["process.rs", "ssh/shell.rs"]);
    assert_eq!(
        found("[the store](store.md#guarantees), [x](https://example.org/x.md), [`y`](crate::y::Y)"),
        ["store.md"]
    );
    assert_eq!(found("[docs/lab.md](docs/lab.md)"), ["docs/lab.md", "docs/lab.md"]);
    assert_eq!(
        found("unit tests and input/output, src/main.rs:12, `src/lib.rs`'s docs"),
        ["src/main.rs", "src/lib.rs"]
    );
    assert!(found("the reports of `margin report` and 1/2 of the tests").is_empty());
}

/// A path as the docs write it, and how it is found from there.
#[derive(Debug, PartialEq)]
enum Named {
    /// From the repository's root (its first part a top folder).
    Rooted(String),
    /// A Rust file named without (all of) its folders: the end of some file's path.
    Tail(String),
    /// A Markdown link's target, relative to the linking file's folder.
    Linked(String),
}

impl Named {
    fn text(&self) -> &str {
        match self {
            Named::Rooted(p) | Named::Tail(p) | Named::Linked(p) => p,
        }
    }
}

/// The paths a line of text names, in the order written.
fn paths_in(line: &str) -> Vec<Named> {
    let mut found = Vec::new();
    // Markdown links first, then the line without them (their text is read again below)
    let mut rest = String::new();
    let mut tail = line;
    while let Some(at) = tail.find("](") {
        rest.push_str(&tail[..at + 1]);
        let after = &tail[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split('#').next().unwrap_or("");
        if is_file_link(target) {
            found.push(Named::Linked(target.to_string()));
        }
        tail = after.get(end + 1..).unwrap_or("");
    }
    rest.push_str(tail);
    // a placeholder in angle brackets may hold spaces: one word of it, before splitting
    let rest = blank_angle_brackets(&rest);
    for (index, part) in rest.split('`').enumerate() {
        let quoted = index % 2 == 1;
        for word in part.split_whitespace() {
            let word = word.trim_start_matches(['(', '[', '"', '\'']);
            if let Some(path) = rooted(word) {
                found.push(Named::Rooted(path));
            } else if quoted && let Some(path) = rust_tail(word) {
                found.push(Named::Tail(path));
            }
        }
    }
    found
}

/// A link's target that names a file: not a URL, not rustdoc's link to an item
/// (`crate::summary::Summary`, `mod@holm`, `Observations`).
fn is_file_link(target: &str) -> bool {
    !target.contains("://")
        && !target.contains("::")
        && !target.contains(['@', ':'])
        && target.contains(['/', '.'])
}

/// `<…>` replaced by `<>`, spaces inside included.
fn blank_angle_brackets(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    for c in text.chars() {
        match c {
            '<' if !inside => {
                inside = true;
                out.push_str("<>");
            }
            '>' if inside => inside = false,
            _ if inside => {}
            _ => out.push(c),
        }
    }
    out
}

/// A word starting with a top folder: the path up to its first placeholder, without the
/// punctuation, line numbers and items after it (`src/main.rs:12,` → `src/main.rs`).
fn rooted(word: &str) -> Option<String> {
    let word = word.strip_prefix("./").unwrap_or(word);
    let (top, _) = word.split_once('/')?;
    if !TOPS.contains(&top) {
        return None;
    }
    let word = word.split([':', ',', ';', ')', ']', '`', '"', '\'', '#']).next().unwrap_or("");
    let word = word.trim_end_matches(['.', '…']);
    let mut path = String::new();
    for part in word.split_inclusive('/') {
        if is_placeholder(part.trim_end_matches('/')) {
            break;
        }
        path.push_str(part);
    }
    Some(path)
}

/// A backquoted Rust file named from inside a folder (`ssh.rs`, `ssh/shell.rs`).
fn rust_tail(word: &str) -> Option<String> {
    let word = word.split([':', ',', ';', ')', '\'']).next().unwrap_or("");
    let shaped = word.strip_suffix(".rs").is_some_and(|stem| {
        stem.split('/').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    });
    shaped.then(|| word.to_string())
}

/// A part of a path that stands for any name: `<name>`, `*.yaml`, `{a,b}`, `NAME.yaml`.
fn is_placeholder(part: &str) -> bool {
    let stem = part.split('.').next().unwrap_or(part);
    part.contains(['<', '*', '{', '$'])
        || (stem.len() > 1 && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_') && stem != "README")
}

/// Whether what `named` names is in the repository (`files`: its files, relative to
/// `root`); a link is read from `from`, the folder of the file that holds it.
fn exists(root: &Path, files: &BTreeSet<String>, from: &Path, named: &Named) -> bool {
    match named {
        Named::Rooted(path) => store_of_a_shipped_experiment(root, path) || root.join(path).exists(),
        Named::Tail(tail) => files.iter().any(|f| f == tail || f.ends_with(&format!("/{tail}"))),
        Named::Linked(target) => from.join(target).exists(),
    }
}

/// `reports/NAME/…` where a shipped experiment writes `reports/NAME`.
fn store_of_a_shipped_experiment(root: &Path, path: &str) -> bool {
    let Some(name) = path.strip_prefix("reports/").and_then(|p| p.split('/').next()) else {
        return false;
    };
    !name.is_empty()
        && ["experiments", "lab/experiments"]
            .iter()
            .any(|dir| root.join(dir).join(format!("{name}.yaml")).is_file())
}

/// The files whose paths are checked: docs/*.md, README.md, every `.rs` under `src/` and
/// `crates/*/src/`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.push(root.join("README.md"));
    let mut sources = vec![root.join("src")];
    for krate in std::fs::read_dir(root.join("crates")).unwrap() {
        sources.push(krate.unwrap().path().join("src"));
    }
    for dir in sources {
        walk(&dir, &mut |p| {
            if p.extension().is_some_and(|e| e == "rs") {
                docs.push(p.to_path_buf());
            }
        });
    }
    docs.sort();
    docs
}

/// Every file under the repository's top folders, as a path from `root`.
fn repository_files(root: &Path) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    for top in TOPS {
        walk(&root.join(top), &mut |p| {
            files.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        });
    }
    files
}

fn walk(dir: &Path, visit: &mut impl FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}
