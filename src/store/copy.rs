//! The experiment files a store was run with, kept inside it: `experiments/<spec hash>/`
//! holds the file under its own name (so that loading the copy gives the same `name`),
//! and the report template it names when that lies beside or below it. One copy per
//! spec hash, written before the first trial of a session, never replaced nor removed:
//! with it, `margin report|status|export reports/NAME` need nothing but the store.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use super::{Store, StoreError, sync_dir};
use crate::spec::Experiment;

/// The spec hash of an experiment file's text (sessions record it): blake3, in hex.
pub fn spec_hash(source: &str) -> String {
    blake3::hash(source.as_bytes()).to_hex().to_string()
}

/// Whether `text` can be a spec hash, and so a folder name under `experiments/`: 64
/// lowercase hex digits (a hash read from a log is never trusted as a path).
fn is_hash(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Which copy a store's experiment file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The one the store's last session ran with.
    Last,
    /// An earlier session's: the last one kept none (an older margin wrote it).
    Earlier,
}

impl Store {
    /// The folder of the kept experiment files, one folder per spec hash.
    pub fn experiments_dir(&self) -> PathBuf {
        self.dir.join("experiments")
    }

    /// Whether `dir` is a store: it has a log or kept experiment files.
    pub fn is_store(dir: &Path) -> bool {
        ["sessions.ndjson", "runs.ndjson"].iter().any(|log| dir.join(log).is_file())
            || dir.join("experiments").is_dir()
    }

    /// Keep a copy of the experiment file, and of its report template when the template's
    /// path stays beside or below the file, in `experiments/<spec hash>/`. Each is
    /// written to a temporary file, made durable and renamed into place; one already
    /// there is left as it is. Returns the copy of the experiment file.
    pub fn keep_experiment(&self, exp: &Experiment) -> Result<PathBuf, StoreError> {
        let dir = self.experiments_dir().join(spec_hash(&exp.source));
        let name = match exp.path.file_name() {
            Some(name) => PathBuf::from(name),
            None => PathBuf::from(format!("{}.yaml", exp.name)),
        };
        // The template first: a reader that finds the experiment file finds it complete.
        if let Some(template) = &exp.spec.report.template
            && let Some(rel) = below(Path::new(&template.value))
        {
            let from = exp.path.parent().unwrap_or(Path::new("")).join(&template.value);
            // validation has read it; gone since, it is the experiment file's problem
            if let Ok(bytes) = fs::read(&from) {
                keep(&dir.join(rel), &bytes)?;
            }
        }
        // the git factors' levels as resolved now, pinned for every later reader
        if !exp.git.is_empty() {
            let json = serde_json::to_vec_pretty(&exp.git).unwrap_or_default();
            keep(&dir.join(crate::spec::git::PIN_FILE), &json)?;
        }
        let copy = dir.join(name);
        keep(&copy, exp.source.as_bytes())?;
        Ok(copy)
    }

    /// The git factors' levels pinned for the experiment file of text `source` (by the
    /// first session that ran it, docs/series.md); empty when none are.
    pub fn pinned_levels(&self, source: &str) -> Vec<crate::spec::git::GitLevels> {
        let dir = self.experiments_dir().join(spec_hash(source));
        crate::spec::git::read_pins(&dir.join(crate::spec::git::PIN_FILE))
    }

    /// The kept experiment file of this spec hash: the YAML file at the top of its folder
    /// whose text has that hash.
    pub fn kept_experiment(&self, hash: &str) -> Option<PathBuf> {
        if !is_hash(hash) {
            return None;
        }
        let mut files: Vec<PathBuf> = fs::read_dir(self.experiments_dir().join(hash))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        files.into_iter().find(|p| fs::read_to_string(p).is_ok_and(|text| spec_hash(&text) == hash))
    }

    /// The kept experiment file to read this store with: the last session's, else the
    /// newest kept for an earlier session, else the newest kept at all; `None` when the
    /// store keeps none (stores written before margin kept them).
    pub fn latest_experiment(&self) -> Result<Option<(PathBuf, Kept)>, StoreError> {
        let (sessions, _) = self.session_records()?;
        let mut hashes: Vec<String> = Vec::new();
        for s in sessions.iter().rev() {
            if !hashes.contains(&s.spec_hash) {
                hashes.push(s.spec_hash.clone());
            }
        }
        // folders no session names (a log moved aside): the newest first
        let mut others: Vec<(std::time::SystemTime, String)> = fs::read_dir(self.experiments_dir())
            .map(|d| {
                d.filter_map(|e| {
                    let e = e.ok()?;
                    let name = e.file_name().into_string().ok()?;
                    Some((e.metadata().and_then(|m| m.modified()).ok()?, name))
                })
                .filter(|(_, name)| is_hash(name) && !hashes.contains(name))
                .collect()
            })
            .unwrap_or_default();
        others.sort_by(|a, b| b.cmp(a));
        let last = hashes.first().cloned();
        hashes.extend(others.into_iter().map(|(_, name)| name));
        Ok(hashes.iter().find_map(|hash| {
            let kept = if last.as_ref() == Some(hash) { Kept::Last } else { Kept::Earlier };
            self.kept_experiment(hash).map(|path| (path, kept))
        }))
    }
}

/// `path` without `.` components when it stays beside or below its folder (no `..`, not
/// absolute); `None` otherwise.
fn below(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Write `bytes` to `path` durably unless something is there already: a temporary file
/// beside it, `fsync`, rename, `fsync` of the folder. Folders made on the way are made
/// durable too. Whether it was written.
fn keep(path: &Path, bytes: &[u8]) -> Result<bool, StoreError> {
    if fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dirs(dir).map_err(|e| StoreError::io(dir, e))?;
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let written = File::create(&tmp).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
    written.map_err(|e| StoreError::io(&tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, e))?;
    sync_dir(dir).map_err(|e| StoreError::io(dir, e))?;
    Ok(true)
}

/// `create_dir_all`, with each folder it makes recorded durably in its parent.
fn create_dirs(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    create_dirs(parent)?;
    match fs::create_dir(dir) {
        Ok(()) => sync_dir(parent),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(dir: &Path, file: &str, text: &str) -> Experiment {
        let path = dir.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text).unwrap();
        crate::spec::load_file(&path).unwrap()
    }

    const YAML: &str = "matrix:\n  n: [1, 2]\nrun: echo {{ n }}\n";

    #[test]
    fn a_copy_per_spec_hash_under_the_files_own_name_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(&dir.path().join("reports"), "exp");
        let exp = experiment(dir.path(), "experiments/exp.yaml", YAML);
        let copy = store.keep_experiment(&exp).unwrap();
        assert_eq!(copy, store.dir.join("experiments").join(spec_hash(YAML)).join("exp.yaml"));
        assert_eq!(fs::read_to_string(&copy).unwrap(), YAML);
        // loading the copy gives the same experiment name
        assert_eq!(crate::spec::load_file(&copy).unwrap().name, "exp");
        // kept once: a second keep leaves it, even if someone altered it
        fs::write(&copy, "altered").unwrap();
        assert_eq!(store.keep_experiment(&exp).unwrap(), copy);
        assert_eq!(fs::read_to_string(&copy).unwrap(), "altered");
        // an altered copy no longer has its hash, so it is not read as that one
        assert_eq!(store.kept_experiment(&spec_hash(YAML)), None);
        // no temporary file is left behind
        let names: Vec<_> =
            fs::read_dir(copy.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("exp.yaml")]);
    }

    #[test]
    fn the_last_sessions_copy_is_the_one_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(&dir.path().join("reports"), "exp");
        assert!(!Store::is_store(&store.dir));
        assert!(store.latest_experiment().unwrap().is_none(), "no store, no copy");
        let old = experiment(dir.path(), "a/exp.yaml", YAML);
        let new_text = format!("{YAML}repetitions: 3\n");
        let new = experiment(dir.path(), "b/exp.yaml", &new_text);
        let old_copy = store.keep_experiment(&old).unwrap();
        let new_copy = store.keep_experiment(&new).unwrap();
        assert!(Store::is_store(&store.dir));
        // no session names either: the newest folder
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        File::open(new_copy.parent().unwrap()).unwrap().set_modified(later).unwrap();
        assert_eq!(store.latest_experiment().unwrap(), Some((new_copy.clone(), Kept::Earlier)));
        let session = |hash: &str| super::super::SessionRecord {
            spec_hash: hash.to_owned(),
            ..super::super::SessionRecord::start("s".into(), "local".into(), &new, 1)
        };
        let mut log = store.session_appender().unwrap();
        log.append(&session(&spec_hash(&new_text))).unwrap();
        log.append(&session(&spec_hash(YAML))).unwrap();
        assert_eq!(store.latest_experiment().unwrap(), Some((old_copy.clone(), Kept::Last)));
        // the last session's copy is missing (an older margin): an earlier session's
        log.append(&session(&"0".repeat(64))).unwrap();
        assert_eq!(store.latest_experiment().unwrap(), Some((old_copy, Kept::Earlier)));
        // a hash in the log is never a path
        log.append(&session("../../b")).unwrap();
        assert_eq!(store.kept_experiment("../../b"), None);
        assert!(new_copy.is_file());
    }

    #[test]
    fn a_template_beside_or_below_is_kept_one_above_is_not() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("e/t")).unwrap();
        fs::write(dir.path().join("e/t/r.md.j2"), "# {{ summary.experiment }}\n").unwrap();
        fs::write(dir.path().join("up.md.j2"), "# up\n").unwrap();
        let store = Store::new(&dir.path().join("reports"), "exp");
        let text = format!("{YAML}report: {{ template: ./t/r.md.j2 }}\n");
        let copy = store.keep_experiment(&experiment(dir.path(), "e/exp.yaml", &text)).unwrap();
        assert_eq!(
            fs::read_to_string(copy.parent().unwrap().join("t/r.md.j2")).unwrap(),
            "# {{ summary.experiment }}\n"
        );
        crate::spec::load_file(&copy).expect("the copy loads: its template is beside it");
        let text = format!("{YAML}report: {{ template: ../up.md.j2 }}\n");
        let copy = store.keep_experiment(&experiment(dir.path(), "e/exp.yaml", &text)).unwrap();
        assert!(copy.is_file());
        assert_eq!(below(Path::new("../up.md.j2")), None);
        assert_eq!(below(Path::new("/abs/t.j2")), None);
        assert_eq!(below(Path::new("./a/./b.j2")), Some(PathBuf::from("a/b.j2")));
    }
}
