//! No import cycles between a crate's modules, checked from the `use` lines and paths in `src/`
//! and in each leaf crate's `crates/*/src/`; the leaves' place in the crates' order; the
//! length of every source file.
//!
//! A module that (through others) imports itself cannot be understood, tested or moved
//! on its own, so this test keeps the graph a DAG. It reads the source
//! text rather than asking the compiler, so it needs nothing beyond std.
//!
//! The rules, and why:
//! - every `.rs` file under `src/` is a module (`a/b.rs` → `a::b`, `a/mod.rs` → `a`,
//!   `lib.rs` → the crate root); `main.rs` and `bin/` are the binary, not the library;
//! - test-only code is left out (files named `tests.rs` or under a `tests/` folder,
//!   modules declared under `#[cfg(test)]`, and every `#[cfg(test)]` item such as the
//!   inline `mod tests { … }`): tests may reach anywhere, that is no design dependency;
//! - comments and string literals are blanked first, so a path in a doc never counts;
//! - a reference is any path starting with `crate::`, `super::`, `self::` or the name of
//!   a child module, in a `use` tree (with its brace groups) or inline in code; it points
//!   at the deepest file module that is a prefix of it (`crate::parse::Better` → `parse`);
//! - edge M → T for each reference, except T == M and T an ancestor of M (a child using
//!   its parent's items is the parent's own business), and except from the crate root
//!   (lib.rs only declares modules). A parent using its descendants does count.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A module's path inside the crate, empty for the crate root.
type ModPath = Vec<String>;

/// Names in scope that stand for a module: what a `use` bound them to.
type Aliases = BTreeMap<String, ModPath>;

/// Module name → the modules it references → where (file, line and the path as written).
type Edges = BTreeMap<String, BTreeMap<String, Vec<Reference>>>;

#[test]
fn module_graph_has_no_import_cycles() {
    let mut cycles = String::new();
    for src in source_roots() {
        let report = cycle_report(&scan_crate(&src).edges);
        if !report.is_empty() {
            let _ = writeln!(cycles, "in {}:{report}", src.strip_prefix(root()).unwrap().display());
        }
    }
    assert!(
        cycles.is_empty(),
        "import cycles between modules; break each by moving or dropping an import shown:\n{cycles}"
    );
}

/// The repository, whose `src/` is the main crate's.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `src/` folder of every crate of the workspace: the main crate's, then the leaves'
/// under `crates/`.
fn source_roots() -> Vec<PathBuf> {
    let mut leaves: Vec<PathBuf> = leaf_crates().into_iter().map(|dir| dir.join("src")).collect();
    leaves.insert(0, root().join("src"));
    leaves
}

/// The folders under `crates/`, each a leaf crate.
fn leaf_crates() -> Vec<PathBuf> {
    let crates = root().join("crates");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&crates)
        .unwrap_or_else(|e| panic!("{}: {e}", crates.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 3, "only {} crates under crates/: {dirs:?}", dirs.len());
    dirs
}

/// The leaves need nothing of margin, and margin's crates have one order (docs/design.md,
/// Crates): each leaf lists as margin's crates only those allowed below it, so cargo
/// refuses an import against the direction; none lists polars (a leaf builds and tests in
/// seconds); each takes the workspace's lints (`unsafe_code` and `unreachable_pub` denied).
/// A new crate under `crates/` is refused until it is given its place here.
#[test]
fn leaf_crates_depend_only_on_the_leaves_below_them() {
    let below: BTreeMap<&str, &[&str]> =
        BTreeMap::from([("vocab", &[][..]), ("stats", &["vocab"][..]), ("template", &["vocab"][..])]);
    let mut wrong = Vec::new();
    for dir in leaf_crates() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        let Some(allowed) = below.get(name.as_str()) else {
            wrong.push(format!("crates/{name}: a crate without a place in this test's order"));
            continue;
        };
        let (ours, polars) = margin_and_polars_dependencies(&manifest);
        if !ours.iter().all(|dep| allowed.contains(&dep.as_str())) {
            wrong.push(format!("crates/{name} depends on {ours:?}; allowed: {allowed:?}"));
        }
        if polars {
            wrong.push(format!("crates/{name} depends on polars"));
        }
        if !manifest.contains("\n[lints]\nworkspace = true\n") {
            wrong.push(format!("crates/{name}: no `[lints] workspace = true`"));
        }
    }
    assert!(wrong.is_empty(), "leaf crates out of their order:\n{}", wrong.join("\n"));
}

/// margin's crates (those under `crates/`, by the dependency key every import spells) a
/// manifest's dependency tables name, and whether they name polars.
fn margin_and_polars_dependencies(manifest: &str) -> (Vec<String>, bool) {
    let mut table = "";
    let mut ours = Vec::new();
    let mut polars = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if !table.ends_with("dependencies]") {
            continue;
        }
        let key = line.split(['=', '.']).next().unwrap_or_default().trim();
        if LEAVES.contains(&key) || key.starts_with("margin") {
            ours.push(key.to_owned());
        }
        polars |= key == "polars";
    }
    (ours, polars)
}

/// The dependency keys of margin's leaf crates: `stats::…` in an import is visibly a crate.
const LEAVES: [&str; 3] = ["vocab", "stats", "template"];

#[test]
fn dependencies_are_read_from_the_dependency_tables_only() {
    let manifest = "[package]\nname = \"margin-x\"\n[features]\nmargin = []\n[dependencies]\n\
                    vocab.workspace = true\nserde = \"1\"\n[dev-dependencies]\n\
                    stats = { package = \"margin-stats\", path = \"../stats\" }\npolars = \"1\"\n";
    assert_eq!(margin_and_polars_dependencies(manifest), (vec!["vocab".into(), "stats".into()], true));
}

/// The data flows one way (docs/design.md §9): the stages that produce the data never
/// import the ones that consume it. (The statistics core and the vocabulary stay free of
/// the pipeline as crates of their own: `leaf_crates_depend_only_on_the_leaves_below_them`.)
#[test]
fn earlier_stages_never_import_later_ones() {
    let graph = scan_crate(&root().join("src"));
    let rules: [(&[&str], &[&str]); 2] = [
        (
            &["spec", "plan", "parse", "run", "store"],
            &["analyze", "report", "summary", "outlook", "cmd", "calibrate"],
        ),
        // the report formats the summary the analysis made; it computes nothing itself
        (&["report"], &["analyze", "run", "store", "outlook", "cmd", "calibrate"]),
    ];
    let top = |m: &str| m.split("::").next().unwrap_or_default().to_string();
    let mut backward = Vec::new();
    for (from, never) in rules {
        for (module, targets) in &graph.edges {
            if !from.contains(&top(module).as_str()) {
                continue;
            }
            for (target, refs) in targets {
                if never.contains(&top(target).as_str()) {
                    let r = &refs[0];
                    backward.push(format!("{module} → {target}: {}:{} `{}`", r.file, r.line, r.written));
                }
            }
        }
    }
    assert!(backward.is_empty(), "imports against the data flow:\n{}", backward.join("\n"));
}

/// The command layer stays thin (docs/design.md §9): a command's file holds its options,
/// the loading, the calls into the library, the output and the mapping of errors; what
/// a command computes lives in the stage it belongs to. Counted whole, imports and unit
/// tests included. (Every other file's limits, 600 lines of code and 700 in all: below.)
#[test]
fn command_files_stay_within_250_lines() {
    const MOST: usize = 250;
    let mut paths = Vec::new();
    rust_files(&root().join("src/cmd"), &mut paths);
    assert!(paths.len() > 5, "only {} files under src/cmd: {paths:?}", paths.len());
    let long: Vec<String> =
        longer_than(&paths, MOST).map(|(path, lines)| format!("{}: {lines} lines", path.display())).collect();
    assert!(
        long.is_empty(),
        "command files over {MOST} lines; move what the command computes into its stage:\n{}",
        long.join("\n")
    );
}

/// Files of one job (docs/design.md §9, issue 38): no file in `src/` or `crates/*/src/` holds more than 600
/// lines of code before its test module, counting the lines that are neither blank nor
/// only a comment, and leaving out a `#[cfg(test)] mod … { … }` that ends the file. Test
/// files (`tests.rs`, or under a `tests/` folder) are exempt.
#[test]
fn source_files_stay_within_600_lines_of_code() {
    const MOST: usize = 600;
    let paths = src_files();
    let is_test =
        |rel: &Path| rel.file_name().is_some_and(|f| f == "tests.rs") || rel.iter().any(|p| p == "tests");
    let mut counted = 0;
    let mut long = Vec::new();
    for path in &paths {
        let rel = path.strip_prefix(root()).unwrap();
        if is_test(rel) {
            continue;
        }
        counted += 1;
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lines = lines_of_code(&text);
        if lines > MOST {
            long.push(format!("{}: {lines} lines of code", rel.display()));
        }
    }
    assert!(counted > 100, "only {counted} files counted under src: {paths:?}");
    let leaves = paths.iter().filter(|p| p.strip_prefix(root().join("crates")).is_ok()).count();
    assert!(leaves > 30, "only {leaves} files counted under crates/*/src");
    assert!(long.is_empty(), "files over {MOST} lines of code; split them by job:\n{}", long.join("\n"));
}

/// Files of one job, tests included (issue 38): no file in `src/` or `crates/*/src/` is longer than 700
/// lines, counted whole (blank lines, comments, imports and test modules too), test files
/// (`tests.rs`, and those under a `tests/` folder) as much as the others. A file's tests
/// that would take it past this go beside it, into `tests.rs` or a `tests/` folder.
#[test]
fn source_files_stay_within_700_lines() {
    const MOST: usize = 700;
    let paths = src_files();
    assert!(paths.len() > 100, "only {} files under src: {paths:?}", paths.len());
    let long: Vec<String> = longer_than(&paths, MOST)
        .map(|(path, lines)| format!("{}: {lines} lines", path.strip_prefix(root()).unwrap().display()))
        .collect();
    assert!(long.is_empty(), "files over {MOST} lines; split them by job:\n{}", long.join("\n"));
}

/// `unsafe` only where margin starts a process (issue 38): no file of the crates' `src/`
/// but `src/run/process/spawn.rs` has the keyword (comments and strings aside), and that
/// one denies an `unsafe` block without its `// SAFETY:` comment. One exception, an
/// attribute and no code: the binary names jemalloc's options by the symbol jemalloc
/// reads (`#[unsafe(export_name = "_rjem_malloc_conf")]` in src/main.rs, once).
#[test]
fn unsafe_code_lives_in_the_spawn_module_alone() {
    const SPAWN: &str = "src/run/process/spawn.rs";
    const MAIN: &str = "src/main.rs";
    let mut found: Vec<String> = Vec::new();
    for path in src_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let rel = path.strip_prefix(root()).unwrap().display().to_string();
        let tokens = tokenize(&strip_comments_and_literals(&text));
        let lines: Vec<usize> = tokens.iter().filter(|t| t.text == "unsafe").map(|t| t.line).collect();
        if rel == SPAWN {
            assert!(!lines.is_empty(), "{SPAWN} starts processes with no `unsafe`: has it moved?");
            assert!(
                text.contains("#![deny(clippy::undocumented_unsafe_blocks)]"),
                "{SPAWN} must deny undocumented unsafe blocks"
            );
        } else if rel == MAIN {
            let attribute = text.matches("#[unsafe(export_name = \"_rjem_malloc_conf\")]").count();
            assert!(
                lines.len() == attribute && attribute <= 1,
                "{MAIN}: `unsafe` at lines {lines:?}, beyond the one attribute that names jemalloc's options"
            );
        } else if !lines.is_empty() {
            found.push(format!("{rel}: lines {lines:?}"));
        }
    }
    assert!(found.is_empty(), "`unsafe` outside {SPAWN}:\n{}", found.join("\n"));
}

/// README.md is read in five minutes: at most 300 lines (issue 38); the figures' history
/// belongs in docs/performance.md.
#[test]
fn the_readme_stays_within_300_lines() {
    let readme = [root().join("README.md")];
    let long: Vec<usize> = longer_than(&readme, 300).map(|(_, lines)| lines).collect();
    assert!(long.is_empty(), "README.md has {long:?} lines, more than 300: move detail to docs/");
}

/// Every `.rs` file under the crates' `src/` folders.
fn src_files() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for src in source_roots() {
        rust_files(&src, &mut paths);
    }
    paths
}

/// The files of `paths` longer than `most` lines, counted whole, with how long they are.
fn longer_than(paths: &[PathBuf], most: usize) -> impl Iterator<Item = (&Path, usize)> {
    paths.iter().filter_map(move |path| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lines = text.lines().count();
        (lines > most).then_some((path.as_path(), lines))
    })
}

/// The lines of `text` neither blank nor only a comment, before a test module that ends
/// the file (`#[cfg(test)]`, then `mod NAME {` at the top level, closed by the first `}`
/// at the top level with nothing but blank lines after it).
fn lines_of_code(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let trailing_tests = (0..lines.len()).find(|&i| {
        lines[i] == "#[cfg(test)]"
            && lines.get(i + 1).is_some_and(|l| l.starts_with("mod ") && l.trim_end().ends_with('{'))
            && (i + 2..lines.len())
                .find(|&j| lines[j] == "}")
                .is_some_and(|end| lines[end + 1..].iter().all(|l| l.trim().is_empty()))
    });
    lines[..trailing_tests.unwrap_or(lines.len())]
        .iter()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .count()
}

#[test]
fn lines_of_code_leave_out_blanks_comments_and_a_trailing_test_module() {
    let text = "//! doc\n\nfn a() {}\n    // note\n#[cfg(test)]\nmod x;\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n\n";
    assert_eq!(lines_of_code(text), 3, "fn a, and the test-only `mod x;` with its attribute");
    // a test module with code after it is no trailing one: all counted
    let middle = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\nfn b() {}\n";
    assert_eq!(lines_of_code(middle), 6);
}

/// A checker that silently finds nothing must fail: the scan sees the modules and the
/// dependencies that are the crate's skeleton (commands store and analyse, runs plan).
#[test]
fn scan_finds_the_crate_modules_and_their_references() {
    let graph = scan_crate(&root().join("src"));
    let edges: usize = graph.edges.values().map(BTreeMap::len).sum();
    assert!(graph.modules.len() > 30, "only {} modules: {:?}", graph.modules.len(), graph.modules);
    assert!(edges > 50, "only {edges} edges: {:#?}", graph.edges.keys());
    for module in ["analyze", "calibrate", "parse", "run::facts", "spec", "store"] {
        assert!(graph.modules.contains(module), "{module} missing from {:?}", graph.modules);
    }
    for test_only in ["store::tests", "run::facts::tests", "analyze::fixture"] {
        assert!(!graph.modules.contains(test_only), "{test_only} is test-only");
    }
    let targets = |from: &str| -> BTreeSet<String> {
        graph.edges.iter().filter(|(m, _)| m.starts_with(from)).flat_map(|(_, t)| t.keys().cloned()).collect()
    };
    assert!(targets("cmd").iter().any(|t| t.starts_with("store")), "cmd → store: {:?}", targets("cmd"));
    assert!(targets("cmd").iter().any(|t| t.starts_with("analyze")), "cmd → analyze: {:?}", targets("cmd"));
    assert!(targets("run").iter().any(|t| t.starts_with("plan")), "run → plan: {:?}", targets("run"));
    // and a leaf crate's, from its own root
    let stats = scan_crate(&root().join("crates/stats/src"));
    for module in ["compare", "robust::shift", "observations"] {
        assert!(stats.modules.contains(module), "{module} missing from {:?}", stats.modules);
    }
    assert!(!stats.modules.contains("reference"), "stats' reference is test-only");
    let from_robust: BTreeSet<&String> = stats.edges["robust::shift"].keys().collect();
    assert!(from_robust.iter().any(|t| *t == "elementary"), "robust::shift → elementary: {from_robust:?}");
}

/// What the scan of `src/` found: the (non-test) modules and the references between them.
struct Graph {
    modules: BTreeSet<String>,
    edges: Edges,
}

/// One place a module refers to another.
#[derive(Clone, Debug)]
struct Reference {
    file: String,
    line: usize,
    written: String,
}

/// One source file, lexed and without its test-only items.
struct SourceFile {
    rel: String,
    module: ModPath,
    tokens: Vec<Token>,
    test_only: bool,
}

fn scan_crate(src: &Path) -> Graph {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    assert!(!paths.is_empty(), "no .rs files under {}", src.display());
    let mut files = Vec::new();
    let mut test_modules: BTreeSet<ModPath> = BTreeSet::new();
    for path in paths {
        let rel_path = path.strip_prefix(src).unwrap();
        let Some(module) = module_path(rel_path) else { continue };
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let lexed = without_test_items(&tokenize(&strip_comments_and_literals(&text)));
        // `#[cfg(test)] mod fixture;` in the parent makes `fixture` (and below) test-only.
        test_modules
            .extend(lexed.test_children.iter().map(|child| [module.clone(), vec![child.clone()]].concat()));
        files.push(SourceFile {
            rel: src.strip_prefix(root()).unwrap_or(src).join(rel_path).display().to_string(),
            test_only: is_test_file(rel_path) || lexed.whole_file_is_test,
            module,
            tokens: lexed.tokens,
        });
    }
    for file in &mut files {
        file.test_only |= test_modules.iter().any(|t| file.module.starts_with(t));
    }
    files.retain(|f| !f.test_only);
    let modules: BTreeSet<ModPath> = files.iter().map(|f| f.module.clone()).chain([Vec::new()]).collect();

    let mut edges = Edges::new();
    for file in files.iter().filter(|f| !f.module.is_empty()) {
        for (target, found) in file_targets(&file.module, &file.tokens, &modules) {
            let written = found.segments.join("::");
            let written = if found.in_use { format!("use {written}") } else { written };
            edges
                .entry(display(&file.module))
                .or_default()
                .entry(display(&target))
                .or_default()
                .push(Reference { file: file.rel.clone(), line: found.line, written });
        }
    }
    Graph { modules: modules.iter().filter(|m| !m.is_empty()).map(|m| display(m)).collect(), edges }
}

/// The modules one file's code refers to, each with the reference, without those the
/// edge rules leave out: the module itself and its ancestors (the crate root included).
fn file_targets(module: &[String], tokens: &[Token], modules: &BTreeSet<ModPath>) -> Vec<(ModPath, Found)> {
    let found = find_references(tokens);
    // Names a `use` binds to a module (`use crate::plan;` then `plan::render::…`), per
    // inline module; explicit ones shadow those a glob brings (`use super::*`).
    let mut aliases: BTreeMap<Vec<String>, Aliases> = BTreeMap::new();
    let mut globs = Vec::new();
    for f in found.iter().filter(|f| f.in_use) {
        let here = [module, &f.scope].concat();
        let Some((target, true)) = resolve(&f.segments, &here, modules, &Aliases::new()) else { continue };
        if f.glob {
            globs.push((f.scope.clone(), target));
        } else if let Some(name) = &f.binds {
            aliases.entry(f.scope.clone()).or_default().insert(name.clone(), target);
        }
    }
    for (scope, glob) in globs {
        for child in modules.iter().filter(|m| m.len() == glob.len() + 1 && m.starts_with(&glob)) {
            aliases
                .entry(scope.clone())
                .or_default()
                .entry(child[glob.len()].clone())
                .or_insert_with(|| child.clone());
        }
    }
    let none = Aliases::new();
    found
        .into_iter()
        .filter_map(|f| {
            let here = [module, &f.scope].concat();
            let (target, _) = resolve(&f.segments, &here, modules, aliases.get(&f.scope).unwrap_or(&none))?;
            // The module itself, or an ancestor: a child using its parent's items.
            (!module.starts_with(&target)).then_some((target, f))
        })
        .collect()
}

/// Every `.rs` file under `dir`, sorted so the report reads the same on every run.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under `src/` is (`None` for the binary's files).
fn module_path(rel: &Path) -> Option<ModPath> {
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts == ["main.rs"] || parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let file = parts.pop()?;
    if parts.is_empty() && file == "lib.rs" {
        return Some(Vec::new());
    }
    if file != "mod.rs" {
        parts.push(file.strip_suffix(".rs")?.to_owned());
    }
    Some(parts)
}

fn is_test_file(rel: &Path) -> bool {
    rel.file_name().is_some_and(|f| f == "tests.rs")
        || rel.parent().is_some_and(|d| d.iter().any(|p| p == "tests"))
}

fn display(module: &[String]) -> String {
    if module.is_empty() { "crate".to_owned() } else { module.join("::") }
}

/// The source with comments removed and every string, byte string, raw string and char
/// literal replaced by `""` or `''`; newlines are kept so lines still count right.
/// Lifetimes and labels (`'a`) stay as they are.
fn strip_comments_and_literals(src: &str) -> String {
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
fn end_of_quoted(chars: &[char], open: usize, quote: char) -> usize {
    let mut i = open + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// A word, `::`, or one other character, with the line it is on.
#[derive(Clone, Debug, PartialEq)]
struct Token {
    text: String,
    line: usize,
}

impl Token {
    fn is_word(&self) -> bool {
        self.text.starts_with(|c: char| c.is_alphanumeric() || c == '_')
    }
}

/// Tokens of stripped source (see [`strip_comments_and_literals`]).
fn tokenize(stripped: &str) -> Vec<Token> {
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
struct Lexed {
    tokens: Vec<Token>,
    /// Children declared `#[cfg(test)] mod name;`, whose files are test-only.
    test_children: Vec<String>,
    /// The file opens with `#![cfg(test)]`.
    whole_file_is_test: bool,
}

fn without_test_items(tokens: &[Token]) -> Lexed {
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
fn past_group(texts: &[&str], open: usize) -> usize {
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

/// A path in the code that may name a module: its segments as written, where, and the
/// inline modules (`mod reap { … }`) it sits in, since `super` counts from those.
#[derive(Debug, Default, PartialEq)]
struct Found {
    segments: Vec<String>,
    line: usize,
    scope: Vec<String>,
    in_use: bool,
    /// For a `use`: the name it binds (the last segment, or the one after `as`).
    binds: Option<String>,
    /// For a `use`: it ends in `*`.
    glob: bool,
}

/// Every path of two or more segments, and every path a `use` tree spells out.
fn find_references(tokens: &[Token]) -> Vec<Found> {
    let mut found = Vec::new();
    let mut scope: Vec<(String, usize)> = Vec::new(); // inline module, brace depth inside it
    let mut depth = 0usize;
    let mut i = 0;
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    while i < tokens.len() {
        let names = || scope.iter().map(|(name, _)| name.clone()).collect::<Vec<_>>();
        match text(i) {
            "use" => {
                let mut paths = Vec::new();
                i += 1;
                use_tree(tokens, &mut i, Vec::new(), &mut paths);
                let scope = names();
                found.extend(paths.into_iter().map(|f| Found { scope: scope.clone(), in_use: true, ..f }));
                continue;
            }
            "mod" if tokens.get(i + 1).is_some_and(Token::is_word) && text(i + 2) == "{" => {
                depth += 1;
                scope.push((text(i + 1).to_owned(), depth));
                i += 3;
                continue;
            }
            "{" => depth += 1,
            "}" => {
                if scope.last().is_some_and(|(_, d)| *d == depth) {
                    scope.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ if tokens[i].is_word() && text(i.wrapping_sub(1)) != "::" && text(i + 1) == "::" => {
                let mut segments = vec![tokens[i].text.clone()];
                let mut line = tokens[i].line;
                while text(i + 1) == "::" && tokens.get(i + 2).is_some_and(Token::is_word) {
                    segments.push(tokens[i + 2].text.clone());
                    line = tokens[i + 2].line;
                    i += 2;
                }
                if segments.len() > 1 {
                    found.push(Found { segments, line, scope: names(), ..Found::default() });
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// One `use` tree from `*i` (after `use`, or inside braces), every path it spells out
/// pushed with the line of its last segment; `*i` ends after the tree (and its `;`).
fn use_tree(tokens: &[Token], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Found>) {
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    let line = |i: usize| tokens.get(i).map_or(0, |t| t.line);
    if text(*i) == "::" {
        prefix.push(String::new()); // `use ::extern_crate::…`: never a module of ours
        *i += 1;
    }
    loop {
        match text(*i) {
            "{" => {
                *i += 1;
                while !matches!(text(*i), "}" | "") {
                    let before = *i;
                    use_tree(tokens, i, prefix.clone(), out);
                    if text(*i) == "," || *i == before {
                        *i += 1; // past the comma, or past a token no tree starts with
                    }
                }
                *i += 1;
                break;
            }
            "*" => {
                out.push(Found { segments: prefix, line: line(*i), glob: true, ..Found::default() });
                *i += 1;
                break;
            }
            "self" if !prefix.is_empty() => {
                // `use a::{self, …}` names `a` itself.
                let binds = prefix.last().cloned();
                out.push(Found { segments: prefix, line: line(*i), binds, ..Found::default() });
                *i += 1;
                break;
            }
            word if tokens.get(*i).is_some_and(Token::is_word) => {
                prefix.push(word.to_owned());
                *i += 1;
                if text(*i) == "::" {
                    *i += 1;
                    continue;
                }
                let binds = Some(word.to_owned());
                out.push(Found { segments: prefix, line: line(*i - 1), binds, ..Found::default() });
                break;
            }
            _ => return, // not a tree we understand: leave the tokens to the general scan
        }
    }
    if text(*i) == "as" {
        if let Some(last) = out.last_mut() {
            last.binds = Some(text(*i + 1).to_owned()).filter(|name| name != "_");
        }
        *i += 2;
    }
    if text(*i) == ";" {
        *i += 1;
    }
}

/// The file module `segments` (written in the module `here`, inline modules included)
/// points into: the deepest one that is a prefix of the path, and whether the whole path
/// is that module. `None` when the path does not start at a module of this crate
/// (`std::…`, `Self::…`, a type's associated item).
fn resolve(
    segments: &[String],
    here: &[String],
    modules: &BTreeSet<ModPath>,
    aliases: &Aliases,
) -> Option<(ModPath, bool)> {
    let (mut at, mut rest) = match segments.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &segments[1..]),
        Some("self") => (here.to_vec(), &segments[1..]),
        Some("super") => (here.to_vec(), segments),
        // A child module, then a name a `use` bound (a child cannot share a name with one).
        Some(first) if modules.contains(&[here, &[first.to_owned()]].concat()) => (here.to_vec(), segments),
        Some(first) if aliases.contains_key(first) => (aliases[first].clone(), &segments[1..]),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        at.pop()?;
        rest = &rest[1..];
    }
    // Up from an inline module to the file it is in.
    while !at.is_empty() && !modules.contains(&at) {
        at.pop();
    }
    let mut whole = true;
    for segment in rest {
        at.push(segment.clone());
        if !modules.contains(&at) {
            at.pop();
            whole = false;
            break;
        }
    }
    Some((at, whole))
}

/// Every cycle, as text: per strongly connected component of more than one module (a
/// group where each module reaches every other), its members, its shortest cycle, then
/// every other import inside it (each lies on a cycle too), each edge with an example
/// reference. Empty when there are none.
fn cycle_report(edges: &Edges) -> String {
    let mut report = String::new();
    let components: Vec<Vec<String>> =
        strongly_connected(edges).into_iter().filter(|component| component.len() > 1).collect();
    let example = |from: &str, to: &str| {
        let refs = &edges[from][to];
        let more = if refs.len() > 1 { format!(" (+{} more)", refs.len() - 1) } else { String::new() };
        format!("{from} → {to}: {}:{} `{}`{more}", refs[0].file, refs[0].line, refs[0].written)
    };
    for (n, component) in components.iter().enumerate() {
        let members: BTreeSet<&str> = component.iter().map(String::as_str).collect();
        let _ =
            writeln!(report, "\ncycle group {} ({} modules): {}", n + 1, members.len(), component.join(", "));
        let cycle = shortest_cycle(edges, &members);
        let _ = writeln!(report, "   {}", cycle.join(" → "));
        let on_cycle: BTreeSet<(&str, &str)> =
            cycle.windows(2).map(|p| (p[0].as_str(), p[1].as_str())).collect();
        for pair in cycle.windows(2) {
            let _ = writeln!(report, "     {}", example(&pair[0], &pair[1]));
        }
        let others: Vec<(&str, &str)> = members
            .iter()
            .flat_map(|&from| edges[from].keys().map(move |to| (from, to.as_str())))
            .filter(|edge| members.contains(edge.1) && !on_cycle.contains(edge))
            .collect();
        if !others.is_empty() {
            let _ = writeln!(report, "   other imports inside the group:");
        }
        for (from, to) in others {
            let _ = writeln!(report, "     {}", example(from, to));
        }
    }
    if !components.is_empty() {
        let _ = write!(report, "\n{} cycle group(s)", components.len());
    }
    report
}

/// The shortest cycle through a component's members, from and back to the same module.
fn shortest_cycle(edges: &Edges, members: &BTreeSet<&str>) -> Vec<String> {
    let mut shortest: Option<Vec<String>> = None;
    for &from in members {
        for to in edges[from].keys().filter(|t| members.contains(t.as_str())) {
            let back =
                shortest_path(edges, members, to, from).expect("members of one component reach each other");
            if shortest.as_ref().is_none_or(|s| back.len() + 1 < s.len()) {
                shortest = Some(std::iter::once(from.to_owned()).chain(back).collect());
            }
        }
    }
    shortest.expect("a component of more than one module has an edge inside it")
}

/// The shortest path `from` → … → `to` among `members`, both ends included.
fn shortest_path(edges: &Edges, members: &BTreeSet<&str>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to.to_owned()];
            let mut step = to;
            while step != from {
                step = came_from[step];
                path.push(step.to_owned());
            }
            path.reverse();
            return Some(path);
        }
        for next in edges.get(at).into_iter().flat_map(BTreeMap::keys) {
            if members.contains(next.as_str()) && next != from && !came_from.contains_key(next.as_str()) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
fn strongly_connected(edges: &Edges) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            let edges = self.edges;
            for w in edges.get(v).into_iter().flat_map(BTreeMap::keys) {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    self.low.insert(v, self.low[v].min(self.low[w.as_str()]));
                } else if self.on_stack.contains(w.as_str()) {
                    self.low.insert(v, self.low[v].min(self.index[w.as_str()]));
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                component.sort();
                self.components.push(component);
            }
        }
    }
    let mut tarjan = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in edges.keys() {
        if !tarjan.index.contains_key(v.as_str()) {
            tarjan.visit(v);
        }
    }
    tarjan.components.sort();
    tarjan.components
}

/// The checker's pieces on small inputs, so that it cannot quietly stop seeing things.
mod checker {
    use super::*;

    fn words(segments: &str) -> Vec<String> {
        segments.split("::").map(str::to_owned).collect()
    }

    fn paths(src: &str) -> Vec<String> {
        let lexed = without_test_items(&tokenize(&strip_comments_and_literals(src)));
        find_references(&lexed.tokens).iter().map(|f| f.segments.join("::")).collect()
    }

    fn modules(names: &[&str]) -> BTreeSet<ModPath> {
        names.iter().map(|n| words(n)).chain([Vec::new()]).collect()
    }

    #[test]
    fn comments_and_literals_are_blanked_lines_kept() {
        let src =
            "a // crate::x::y\n/* crate::p /* nested */ q */ b\n\"crate::s\" r#\"crate::\"t\"#\nc '\"' d\n";
        assert_eq!(strip_comments_and_literals(src), "a \n  b\n\"\" \"\"\nc '' d\n");
        let src =
            "fn f<'a>(x: &'a str) { 'outer: loop {} } b\"q\\\"\" b'\\'' br##\"x\"#y\"## r#type '\\u{41}'";
        assert_eq!(
            strip_comments_and_literals(src),
            "fn f<'a>(x: &'a str) { 'outer: loop {} } \"\" '' \"\" type ''"
        );
        assert_eq!(strip_comments_and_literals("/// crate::doc\n//! crate::inner\nx"), "\n\nx");
        let tokens = tokenize(&strip_comments_and_literals("a\n\"two\nlines\"\nb /*\n*/ c"));
        let lines: Vec<(&str, usize)> = tokens.iter().map(|t| (t.text.as_str(), t.line)).collect();
        assert_eq!(lines, [("a", 1), ("\"", 2), ("\"", 2), ("b", 4), ("c", 5)]);
    }

    #[test]
    fn use_trees_with_nested_brace_groups() {
        let src = "pub(crate) use crate::{analyze::{stats, verdict::Verdict as V}, plan::{self}, store::*};\n\
                   pub use super::lint;\nuse std::io::{self, Read};\nuse ::serde::Serialize;";
        assert_eq!(
            paths(src),
            [
                "crate::analyze::stats",
                "crate::analyze::verdict::Verdict",
                "crate::plan",
                "crate::store",
                "super::lint",
                "std::io",
                "std::io::Read",
                "::serde::Serialize",
            ]
        );
        assert_eq!(paths("use crate::{a, # b};"), ["crate::a", "crate::b"]); // never hangs
        let lexed = without_test_items(&tokenize("use crate::{\n  a::b,\n  c,\n};\nx"));
        let lines: Vec<usize> = find_references(&lexed.tokens).iter().map(|f| f.line).collect();
        assert_eq!(lines, [2, 3]);
    }

    #[test]
    fn inline_paths_anywhere_in_code() {
        let src = "fn f() { let s = crate::store::Store::open(&x)?; super::super::x::y(); Vec::<u8>::new(); \
                   self::z::w; v.iter().collect::<Vec<_>>(); <crate::p::Q as T>::f(); }";
        assert_eq!(
            paths(src),
            ["crate::store::Store::open", "super::super::x::y", "self::z::w", "crate::p::Q"]
        );
    }

    #[test]
    fn test_items_are_dropped_test_modules_noted() {
        let src = "use crate::a;\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod fixture;\n\
                   #[cfg(test)]\n#[test]\nfn t() { crate::b::c(); }\n#[cfg(test)]\nuse crate::d::{e, f};\n\
                   #[cfg(test)]\nstruct S(crate::g::H);\nfn keep() { crate::k::l(); }\n\
                   #[cfg(test)]\nmod tests {\n use crate::m;\n fn x() { if y { crate::n::o() } }\n}\n";
        let lexed = without_test_items(&tokenize(&strip_comments_and_literals(src)));
        assert_eq!(lexed.test_children, ["tests", "fixture"]);
        assert!(!lexed.whole_file_is_test);
        let found: Vec<String> =
            find_references(&lexed.tokens).iter().map(|f| f.segments.join("::")).collect();
        assert_eq!(found, ["crate::a", "crate::k::l"]);
        assert!(without_test_items(&tokenize("#![cfg(test)]\nuse x;")).whole_file_is_test);
        // A test-only field or statement ends where what holds it closes, which stays.
        let lexed =
            without_test_items(&tokenize("mod m { struct S { #[cfg(test)] f: crate::a::B } } crate::c::d"));
        let found: Vec<String> =
            find_references(&lexed.tokens).iter().map(|f| f.segments.join("::")).collect();
        assert_eq!(
            (found, lexed.tokens.iter().filter(|t| t.text == "}").count()),
            (vec!["crate::c::d".into()], 2)
        );
    }

    #[test]
    fn files_name_modules() {
        let module = |p: &str| module_path(Path::new(p)).map(|m| display(&m));
        assert_eq!(module("lib.rs").as_deref(), Some("crate"));
        assert_eq!(module("a/b.rs").as_deref(), Some("a::b"));
        assert_eq!(module("a/mod.rs").as_deref(), Some("a"));
        assert_eq!(module("a/b/mod.rs").as_deref(), Some("a::b"));
        assert_eq!(module("main.rs"), None);
        assert_eq!(module("bin/tool.rs"), None);
        assert!(is_test_file(Path::new("a/tests.rs")));
        assert!(is_test_file(Path::new("a/tests/helpers.rs")));
        assert!(!is_test_file(Path::new("a/testing.rs")));
    }

    #[test]
    fn paths_resolve_to_the_deepest_file_module() {
        let known = modules(&["a", "a::b", "a::b::c", "d", "a::e"]);
        let at = |path: &str, here: &str| {
            let here = if here.is_empty() { Vec::new() } else { words(here) };
            resolve(&words(path), &here, &known, &Aliases::new()).map(|(m, _)| display(&m))
        };
        assert_eq!(at("crate::a::b::c::f", "d").as_deref(), Some("a::b::c"));
        assert_eq!(at("crate::a::Better", "d").as_deref(), Some("a"));
        assert_eq!(at("crate::Thing", "d").as_deref(), Some("crate"));
        // In a/b.rs (`a::b`) super is `a`; in a/mod.rs (`a`) it is the crate root.
        assert_eq!(at("super::e::x", "a::b").as_deref(), Some("a::e"));
        assert_eq!(at("super::d::x", "a").as_deref(), Some("d"));
        assert_eq!(at("super::super::e", "a::b::c").as_deref(), Some("a::e"));
        assert_eq!(at("super::super::d", "a::b::c").as_deref(), Some("a"));
        assert_eq!(at("super::super::super", "a"), None);
        // An inline `mod reap { … }` in a/b.rs: its super is `a::b`, the file itself.
        assert_eq!(at("super::c::x", "a::b::reap").as_deref(), Some("a::b::c"));
        assert_eq!(at("self::x", "a::b::reap").as_deref(), Some("a::b"));
        // A bare path names a child module only; anything else is not ours.
        assert_eq!(at("b::c::f", "a").as_deref(), Some("a::b::c"));
        assert_eq!(at("d::x", "a"), None);
        assert_eq!(at("std::io::Read", "a"), None);
        assert_eq!(at("Self::new", "a"), None);
        // Whether the path is the module itself: only those can be bound to a name.
        let whole = |path: &str| resolve(&words(path), &[], &known, &Aliases::new()).map(|(_, whole)| whole);
        assert_eq!(whole("crate::a::b"), Some(true));
        assert_eq!(whole("crate::a::b::Item"), Some(false));
    }

    #[test]
    fn names_a_use_binds_stand_for_their_module() {
        let known = modules(&["cmd", "cmd::check", "plan", "plan::render", "run", "run::exec", "store"]);
        let src = "use crate::plan;\nuse crate::run::{self as r};\nuse super::*;\n\
                   use crate::store::Store as Plan;\n\
                   fn f() { plan::render::go(); r::exec::x(); check::Y; Plan::open(); }\n\
                   mod inner { fn g() { plan::render::no(); } }";
        let lexed = without_test_items(&tokenize(&strip_comments_and_literals(src)));
        let targets: Vec<(String, usize)> = file_targets(&words("cmd::plan"), &lexed.tokens, &known)
            .into_iter()
            .map(|(module, found)| (display(&module), found.line))
            .collect();
        let expected =
            [("plan", 1), ("run", 2), ("store", 4), ("plan::render", 5), ("run::exec", 5), ("cmd::check", 5)];
        assert_eq!(targets, expected.map(|(m, line)| (m.to_owned(), line)));
    }

    #[test]
    fn inline_modules_scope_super() {
        let src =
            "mod reap { use super::x; fn f() { if a { b } super::y::z(); } }\nfn g() { super::w::v(); }";
        let lexed = without_test_items(&tokenize(src));
        let found: Vec<(String, Vec<String>)> =
            find_references(&lexed.tokens).into_iter().map(|f| (f.segments.join("::"), f.scope)).collect();
        let reap = vec!["reap".to_owned()];
        assert_eq!(
            found,
            [("super::x".into(), reap.clone()), ("super::y::z".into(), reap), ("super::w::v".into(), vec![])]
        );
    }

    #[test]
    fn cycles_are_found_and_every_edge_shown() {
        let mut edges = Edges::new();
        let reference = Reference { file: "src/x.rs".into(), line: 3, written: "use crate::y".into() };
        for (from, to) in [("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "f"), ("f", "e")]
        {
            edges.entry(from.into()).or_default().entry(to.into()).or_default().push(reference.clone());
        }
        edges.entry("x".into()).or_default();
        assert_eq!(strongly_connected(&edges).into_iter().filter(|c| c.len() > 1).count(), 2);
        let report = cycle_report(&edges);
        let expected = "
cycle group 1 (3 modules): a, b, c
   a → b → a
     a → b: src/x.rs:3 `use crate::y`
     b → a: src/x.rs:3 `use crate::y`
   other imports inside the group:
     b → c: src/x.rs:3 `use crate::y`
     c → a: src/x.rs:3 `use crate::y`

cycle group 2 (2 modules): e, f
   e → f → e
     e → f: src/x.rs:3 `use crate::y`
     f → e: src/x.rs:3 `use crate::y`

2 cycle group(s)";
        assert_eq!(report, expected);
        edges.remove("b");
        edges.remove("e");
        assert_eq!(cycle_report(&edges), "");
    }
}
