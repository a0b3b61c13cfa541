//! What no lint can say of the code's shape: no import cycle between a crate's modules
//! (checked from the `use` lines and paths in `src/` and in each leaf crate's
//! `crates/*/src/`), the data flowing one way between the stages, the leaves' place in the
//! crates' order, the one place `unsafe_code` may be allowed, and the length of every
//! source file. What a lint can hold is held by one, in Cargo.toml's `[workspace.lints]`
//! and clippy.toml: `unsafe_code` and an `unsafe` block without its `// SAFETY:` comment
//! denied, no function over 120 lines (`clippy::too_many_lines`), no `dbg!` nor `todo!`.
//!
//! A module that (through others) imports itself cannot be understood, tested or moved
//! on its own, so this test keeps the graph a DAG. It reads the source text ([`lex`],
//! then [`scan`]; [`cycles`] reports them) rather than asking the compiler, so it needs
//! nothing beyond std; [`checker`] tests those pieces on small inputs.
//!
//! The rules of the scan, and why:
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

mod checker;
mod cycles;
mod lex;
mod scan;

use cycles::*;
use lex::*;
use scan::*;

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

/// Files of one job (docs/design.md §9): no file in `src/` or `crates/*/src/` holds more than 600
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

/// Files of one job, tests included: no file in `src/` or `crates/*/src/` is longer than 700
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

/// `unsafe` only where margin starts a process. The workspace's lints (Cargo.toml) deny
/// `unsafe_code`, and `clippy::undocumented_unsafe_blocks` an `unsafe` block without its
/// `// SAFETY:` comment, so `unsafe` compiles only where `unsafe_code` is allowed; what no
/// lint says is where that may be: in `src/run/process/spawn.rs`, and once in the binary,
/// on the attribute that names jemalloc's options by the symbol jemalloc reads
/// (`#[unsafe(export_name = "_rjem_malloc_conf")]` in src/main.rs). Comments aside.
#[test]
fn unsafe_code_is_allowed_in_the_spawn_module_alone() {
    const SPAWN: &str = "src/run/process/spawn.rs";
    const MAIN: &str = "src/main.rs";
    let mut found: Vec<String> = Vec::new();
    for path in src_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let rel = path.strip_prefix(root()).unwrap().display().to_string();
        let allowed: Vec<usize> = (1..)
            .zip(text.lines())
            .filter(|(_, line)| line.contains("unsafe_code") && !line.trim_start().starts_with("//"))
            .map(|(n, _)| n)
            .collect();
        if rel == SPAWN {
            assert!(!allowed.is_empty(), "{SPAWN} allows no `unsafe_code`: has the spawn moved?");
        } else if rel == MAIN {
            assert!(
                allowed.len() == 1 && text.contains("#[unsafe(export_name = \"_rjem_malloc_conf\")]"),
                "{MAIN}: `unsafe_code` at lines {allowed:?}, beyond the one attribute that names jemalloc's options"
            );
        } else if !allowed.is_empty() {
            found.push(format!("{rel}: lines {allowed:?}"));
        }
    }
    assert!(found.is_empty(), "`unsafe_code` allowed outside {SPAWN}:\n{}", found.join("\n"));
}

/// README.md is read in five minutes: at most 300 lines; the figures' history
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
    for test_only in ["store::tests", "run::facts::tests", "summary::schema"] {
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
