//! The checker's pieces on small inputs, so that it cannot quietly stop seeing things.

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
    let src = "a // crate::x::y\n/* crate::p /* nested */ q */ b\n\"crate::s\" r#\"crate::\"t\"#\nc '\"' d\n";
    assert_eq!(strip_comments_and_literals(src), "a \n  b\n\"\" \"\"\nc '' d\n");
    let src = "fn f<'a>(x: &'a str) { 'outer: loop {} } b\"q\\\"\" b'\\'' br##\"x\"#y\"## r#type '\\u{41}'";
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
    assert_eq!(paths(src), ["crate::store::Store::open", "super::super::x::y", "self::z::w", "crate::p::Q"]);
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
    let found: Vec<String> = find_references(&lexed.tokens).iter().map(|f| f.segments.join("::")).collect();
    assert_eq!(found, ["crate::a", "crate::k::l"]);
    assert!(without_test_items(&tokenize("#![cfg(test)]\nuse x;")).whole_file_is_test);
    // A test-only field or statement ends where what holds it closes, which stays.
    let lexed =
        without_test_items(&tokenize("mod m { struct S { #[cfg(test)] f: crate::a::B } } crate::c::d"));
    let found: Vec<String> = find_references(&lexed.tokens).iter().map(|f| f.segments.join("::")).collect();
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
    let src = "mod reap { use super::x; fn f() { if a { b } super::y::z(); } }\nfn g() { super::w::v(); }";
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
    for (from, to) in [("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("d", "a"), ("e", "f"), ("f", "e")] {
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
