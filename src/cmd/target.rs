//! What a command's `FILE|NAME` argument names (`report`, `status`, `export`, `compare`):
//! an experiment file, a store folder read with the experiment file it keeps, or a name
//! of either.

use std::path::{Path, PathBuf};

use super::Error;
use crate::spec::Experiment;
use crate::store::{Kept, Store};

/// What `report`, `status` and `export` were pointed at: the experiment file to read,
/// and the store when the target named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub file: PathBuf,
    /// A store folder (given, or `<root>/NAME` when no experiment file has that name);
    /// `None`: the experiment's own store, `<root>/<name>`.
    pub store: Option<PathBuf>,
    /// Whether `file` is the store's copy, and whose.
    pub kept: Option<Kept>,
}

impl Target {
    fn file(path: &Path) -> Self {
        Target { file: path.to_path_buf(), store: None, kept: None }
    }

    /// The store to read.
    pub fn store(&self, reports: &Path, exp: &Experiment) -> Store {
        match &self.store {
            Some(dir) => Store::at(dir),
            None => Store::new(reports, &exp.name),
        }
    }

    /// The experiment file used, and when it is the store's copy, whose.
    pub fn file_used(&self) -> String {
        let file = self.file.display();
        match self.kept {
            None => file.to_string(),
            Some(Kept::Last) => format!("{file}, the store's copy from its last session"),
            Some(Kept::Earlier) => format!("{file}, the store's newest copy (its last session kept none)"),
        }
    }

    /// The line that says which experiment file was used.
    pub fn used(&self) -> String {
        format!("experiment file {}", self.file_used())
    }
}

/// The error of a command pointed at an experiment whose store is not there (`report`,
/// `compare`, `history`): nothing has run or been imported yet.
pub fn no_store(exp: &Experiment, store: &Store) -> Error {
    Error::Input(format!(
        "{}: no store at {}: nothing has run or been imported yet (`margin run {}`)",
        exp.name,
        store.dir.display(),
        exp.path.display()
    ))
}

/// Find what `target` names, in this order: an experiment file; a store folder (read with
/// the copy of the experiment file it keeps, even when the file it came from has changed
/// since: the copy is what its trials ran with); the name of an experiment under
/// `experiments/` (its stem or its `name:`); the name of a store in `reports`.
/// `command` words the hints.
pub fn resolve(target: &Path, reports: &Path, command: &str) -> Result<Target, Error> {
    if target.is_file() {
        return Ok(Target::file(target));
    }
    if Store::is_store(target) {
        return kept(target, command);
    }
    let name = target.to_string_lossy();
    for ext in ["yaml", "yml"] {
        let candidate = Path::new("experiments").join(format!("{name}.{ext}"));
        if candidate.is_file() {
            return Ok(Target::file(&candidate));
        }
    }
    let mut known = Vec::new();
    for path in experiment_files() {
        if let Ok(exp) = crate::spec::load_file(&path) {
            if exp.name == name {
                return Ok(Target::file(&path));
            }
            known.push(exp.name);
        }
    }
    // a plain name only: `reports` joined with `../x` would be somewhere else
    let plain = matches!(target.components().collect::<Vec<_>>()[..], [std::path::Component::Normal(_)]);
    let store = reports.join(target);
    if plain && Store::is_store(&store) {
        return kept(&store, command);
    }
    known.sort();
    let mut stores: Vec<String> = std::fs::read_dir(reports)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| Store::is_store(p))
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    stores.sort();
    let list = |names: &[String]| if names.is_empty() { "none".to_string() } else { names.join(", ") };
    let what = if target.is_dir() {
        "a folder but not a store (it has no sessions.ndjson or runs.ndjson)"
    } else {
        "not a file"
    };
    Err(Error::Input(format!(
        "`{name}` is {what}, nor the name of an experiment in experiments/ ({}) or of a store in {} ({})",
        list(&known),
        reports.display(),
        list(&stores)
    )))
}

/// A store folder, with the copy of the experiment file it keeps.
fn kept(dir: &Path, command: &str) -> Result<Target, Error> {
    let store = Store::at(dir);
    match store.latest_experiment()? {
        Some((file, kept)) => Ok(Target { file, store: Some(dir.to_path_buf()), kept: Some(kept) }),
        None => Err(Error::Input(format!(
            "{}: the store keeps no copy of the experiment file it was run with (stores written \
             before margin kept one have none), so it cannot be read on its own\n\
             hint: give the experiment file, `margin {command} path/to/{}.yaml` (with `--reports` \
             naming the folder that holds this store); the next `margin run` or `margin import` \
             with it keeps a copy here",
            dir.display(),
            dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "NAME".into())
        ))),
    }
}

/// Every `experiments/*.yaml` (or `.yml`), sorted: the files `status` and name lookups use.
pub(crate) fn experiment_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir("experiments")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}
