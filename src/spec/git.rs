//! Levels from a git range: a factor written `{ git: { repo: ., range: "v1.0..v1.1" } }`
//! has for levels the range's first commit and every commit after it up to the last, on
//! the first-parent line, oldest first, each named by its short hash.
//!
//! The range is resolved when the file is loaded (so `check` and `plan` list the levels),
//! by `git log` in the repository, whose path is relative to the experiment file. A
//! resolution can be pinned: the run stage keeps it beside its copy of the experiment
//! file in the store ([`PIN_FILE`]), and a file loaded with a pin for its factor (same
//! factor, repo and range as written) takes the pinned commits without asking git, so a
//! resumed run or a report after new commits measures and reads the same levels.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::{Level, Located, Spec};
use crate::diag::{Diagnostic, Diagnostics, excerpt};
use vocab::Scalar;

/// The name of the pinned resolutions' file, beside a kept copy of the experiment file.
pub const PIN_FILE: &str = "git-levels.json";

/// `git:` as written in the matrix.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSpec {
    /// The repository, relative to the experiment file (or absolute).
    pub repo: Located<String>,
    /// `FIRST..LAST`: FIRST and the commits after it up to LAST.
    pub range: Located<String>,
}

/// One level of a git factor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// The full hash.
    pub hash: String,
    /// The level: git's abbreviation when the range was resolved.
    pub short: String,
    /// The first line of its message.
    pub subject: String,
}

/// A git factor's resolved levels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitLevels {
    pub factor: String,
    /// `repo` and `range` as the file writes them.
    pub repo: String,
    pub range: String,
    /// The repository's top folder, absolute (`{{ git.FACTOR.repo }}` in templates).
    pub path: PathBuf,
    /// Oldest first.
    pub commits: Vec<Commit>,
}

impl GitLevels {
    /// The commit whose short hash is `level`.
    pub fn commit(&self, level: &str) -> Option<&Commit> {
        self.commits.iter().find(|c| c.short == level)
    }
}

/// Every git factor's level → its commit subject, over all git factors of `git`.
pub fn subjects(git: &[GitLevels]) -> Vec<(String, String)> {
    git.iter().flat_map(|g| g.commits.iter().map(|c| (c.short.clone(), c.subject.clone()))).collect()
}

/// The pins kept beside `file`, if any ([`PIN_FILE`]); unreadable ones are none.
pub(super) fn pins_beside(file: &Path) -> Vec<GitLevels> {
    read_pins(&file.with_file_name(PIN_FILE))
}

/// The pins of a [`PIN_FILE`]; none when it is missing or unreadable.
pub fn read_pins(path: &Path) -> Vec<GitLevels> {
    std::fs::read_to_string(path).ok().and_then(|text| serde_json::from_str(&text).ok()).unwrap_or_default()
}

/// Give each git factor of `spec` its levels: the pinned ones when `pins` has this factor
/// with the same repo and range, else those git resolves now. Returns the resolutions.
pub(super) fn resolve_all(
    file: &Path,
    spec: &mut Spec,
    pins: &[GitLevels],
) -> Result<Vec<GitLevels>, Diagnostics> {
    let base = file.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut problems = Diagnostics::default();
    let mut out = Vec::new();
    for factor in &mut spec.matrix.value.factors {
        let Some(git) = &factor.git else { continue };
        let (name, repo, range) = (&factor.name.value, &git.value.repo, &git.value.range);
        let pinned =
            pins.iter().find(|p| p.factor == *name && p.repo == repo.value && p.range == range.value);
        let levels = match pinned {
            Some(p) => p.clone(),
            None => match resolve(file, &base, name, &git.value) {
                Ok(levels) => levels,
                Err(d) => {
                    problems.push(d);
                    continue;
                }
            },
        };
        factor.levels = levels
            .commits
            .iter()
            .map(|c| Located { value: Level::Scalar(Scalar::str(&c.short)), pos: range.pos, span: None })
            .collect();
        out.push(levels);
    }
    problems.into_result(out)
}

/// `git` in `dir` with `args`; its stdout, or its stderr's last line as the error. The
/// caller's git environment (`GIT_DIR`, set inside git hooks) would point it elsewhere.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("git failed").trim().to_string())
}

/// Resolve one git factor now.
fn resolve(file: &Path, base: &Path, factor: &str, spec: &GitSpec) -> Result<GitLevels, Diagnostic> {
    let (repo, range) = (&spec.repo, &spec.range);
    let dir = base.join(&repo.value);
    let at_repo = |message: String, hint: &str| Diagnostic::new(file, repo.pos, message).with_hint(hint);
    if !dir.is_dir() {
        return Err(at_repo(
            format!("`git.repo`: `{}` is not a folder ({})", excerpt(&repo.value), dir.display()),
            "the repository's path is relative to the experiment file",
        ));
    }
    let top = git(&dir, &["rev-parse", "--show-toplevel"]).map_err(|e| {
        at_repo(
            format!("`git.repo`: `{}` is not a git repository: {e}", excerpt(&repo.value)),
            "name the folder of a git repository (or one inside it), relative to the experiment file",
        )
    })?;
    let at_range = |message: String, hint: String| Diagnostic::new(file, range.pos, message).with_hint(hint);
    let Some((first, last)) = range
        .value
        .split_once("..")
        .filter(|(a, b)| !a.trim().is_empty() && !b.trim().is_empty() && !b.starts_with('.'))
    else {
        return Err(at_range(
            format!("`git.range`: expected `FIRST..LAST`, found `{}`", excerpt(&range.value)),
            "two commits, tags or branches, like `v1.0..v1.1` or `HEAD~20..HEAD`: FIRST and the commits after it up to LAST".into(),
        ));
    };
    let (first, last) = (first.trim(), last.trim());
    for end in [first, last] {
        let spec = format!("{end}^{{commit}}");
        if git(&dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &spec]).is_err() {
            return Err(at_range(
                format!("`git.range`: `{}` does not resolve to a commit in {}", excerpt(end), top.trim()),
                format!("`git -C {} log --oneline` lists its commits, `git tag` its tags", repo.value),
            ));
        }
    }
    let format = "--format=%H%x00%h%x00%s";
    let head = git(&dir, &["log", "-1", "--no-show-signature", format, "--end-of-options", first]);
    let rest = git(
        &dir,
        &[
            "log",
            "--first-parent",
            "--reverse",
            "--no-show-signature",
            format,
            "--end-of-options",
            &format!("{first}..{last}"),
        ],
    );
    let (head, rest) = match (head, rest) {
        (Ok(h), Ok(r)) => (h, r),
        (Err(e), _) | (_, Err(e)) => {
            return Err(at_range(
                format!("`git.range`: git log failed: {e}"),
                "check the range with `git log`".into(),
            ));
        }
    };
    let mut commits: Vec<Commit> = head.lines().chain(rest.lines()).filter_map(commit).collect();
    if commits.len() < 2 {
        return Err(at_range(
            format!("`git.range`: `{}` holds no commit after `{first}`", excerpt(&range.value)),
            format!(
                "`{last}` is `{first}` or one of its ancestors; a range goes from the older commit to the newer"
            ),
        ));
    }
    commits.dedup_by(|a, b| a.hash == b.hash);
    Ok(GitLevels {
        factor: factor.to_string(),
        repo: repo.value.clone(),
        range: range.value.clone(),
        path: PathBuf::from(top.trim()),
        commits,
    })
}

/// A line of `git log --format=%H%x00%h%x00%s`.
fn commit(line: &str) -> Option<Commit> {
    let mut parts = line.splitn(3, '\0');
    let (hash, short) = (parts.next()?, parts.next()?);
    Some(Commit {
        hash: hash.to_string(),
        short: short.to_string(),
        subject: parts.next().unwrap_or("").to_string(),
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::commit;

    #[test]
    fn a_log_line_is_a_commit_and_its_subject_may_hold_anything() {
        let c = commit("0123abcd\u{0}0123abc\u{0}Fix | the loop: 10 %").unwrap();
        assert_eq!(
            (c.hash.as_str(), c.short.as_str(), c.subject.as_str()),
            ("0123abcd", "0123abc", "Fix | the loop: 10 %")
        );
        assert_eq!(commit("0123abcd").map(|c| c.short), None);
    }

    #[test]
    fn a_factor_is_a_list_or_a_git_range_and_nothing_else() {
        let load = |factor: &str| {
            super::super::load_str(Path::new("g.yaml"), &format!("matrix:\n  c: {factor}\nrun: echo\n"))
                .unwrap_err()
                .to_string()
        };
        assert!(load("{ svn: { repo: . } }").contains("g.yaml:2:"), "{}", load("{ svn: { repo: . } }"));
        assert!(load("{ svn: { repo: . } }").contains("unknown key `svn` in a factor"));
        assert!(load("{ git: { repo: . } }").contains("range"), "{}", load("{ git: { repo: . } }"));
        assert!(
            load("{ git: { repo: ./nowhere, range: a..b } }")
                .contains("`git.repo`: `./nowhere` is not a folder")
        );
    }
}
