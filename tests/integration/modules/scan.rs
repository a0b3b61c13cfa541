//! The scan of a crate's `src/`: its file modules, and the references between them found
//! in the lexed code (`use` trees and paths), resolved to the modules they point into.

use super::*;

/// What the scan of `src/` found: the (non-test) modules and the references between them.
pub(super) struct Graph {
    pub(super) modules: BTreeSet<String>,
    pub(super) edges: Edges,
}

/// One place a module refers to another.
#[derive(Clone, Debug)]
pub(super) struct Reference {
    pub(super) file: String,
    pub(super) line: usize,
    pub(super) written: String,
}

/// One source file, lexed and without its test-only items.
pub(super) struct SourceFile {
    pub(super) rel: String,
    pub(super) module: ModPath,
    pub(super) tokens: Vec<Token>,
    pub(super) test_only: bool,
}

pub(super) fn scan_crate(src: &Path) -> Graph {
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
        // `#[cfg(test)] mod schema;` in the parent makes `schema` (and below) test-only.
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
pub(super) fn file_targets(
    module: &[String],
    tokens: &[Token],
    modules: &BTreeSet<ModPath>,
) -> Vec<(ModPath, Found)> {
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

/// The module a file under `src/` is (`None` for the binary's files).
pub(super) fn module_path(rel: &Path) -> Option<ModPath> {
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

pub(super) fn is_test_file(rel: &Path) -> bool {
    rel.file_name().is_some_and(|f| f == "tests.rs")
        || rel.parent().is_some_and(|d| d.iter().any(|p| p == "tests"))
}

pub(super) fn display(module: &[String]) -> String {
    if module.is_empty() { "crate".to_owned() } else { module.join("::") }
}

/// A path in the code that may name a module: its segments as written, where, and the
/// inline modules (`mod reap { … }`) it sits in, since `super` counts from those.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Found {
    pub(super) segments: Vec<String>,
    pub(super) line: usize,
    pub(super) scope: Vec<String>,
    pub(super) in_use: bool,
    /// For a `use`: the name it binds (the last segment, or the one after `as`).
    pub(super) binds: Option<String>,
    /// For a `use`: it ends in `*`.
    pub(super) glob: bool,
}

/// Every path of two or more segments, and every path a `use` tree spells out.
pub(super) fn find_references(tokens: &[Token]) -> Vec<Found> {
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
pub(super) fn use_tree(tokens: &[Token], i: &mut usize, mut prefix: Vec<String>, out: &mut Vec<Found>) {
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
pub(super) fn resolve(
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
