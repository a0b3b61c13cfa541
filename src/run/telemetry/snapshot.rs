//! A snapshot of the counters as text: one moment's sources under their headers
//! ([`CounterSnapshot`]), and a trial's two, before and after ([`Snapshots`]), as the raw
//! file keeps them and as a remote trial's stderr brings them, written and read back.

use std::fmt::Write as _;

use super::MARK;

/// The counters of one moment: each source's text under its header.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CounterSnapshot {
    pub parts: Vec<(String, String)>,
}

impl CounterSnapshot {
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.parts.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }

    /// The text `tail -v -n +1` prints for these files (and `xl list` after them).
    fn render(&self, when: &str, out: &mut String) {
        let _ = writeln!(out, "{MARK} {when}");
        for (i, (name, text)) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let _ = writeln!(out, "==> {name} <==");
            out.push_str(text);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }

    /// The sources of a snapshot's text (what follows its `margin-telemetry` line).
    pub(crate) fn parse(text: &str) -> CounterSnapshot {
        let mut parts: Vec<(String, String)> = Vec::new();
        for line in text.split_inclusive('\n') {
            let bare = line.trim_end_matches('\n');
            if let Some(name) = bare.strip_prefix("==> ").and_then(|r| r.strip_suffix(" <==")) {
                // the blank line `tail` puts between two files is not the first's text
                if let Some((_, last)) = parts.last_mut()
                    && last.ends_with("\n\n")
                {
                    last.pop();
                }
                parts.push((name.to_string(), String::new()));
            } else if let Some((_, t)) = parts.last_mut() {
                t.push_str(line);
            }
        }
        CounterSnapshot { parts }
    }
}

/// The counters before and after one trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Snapshots {
    pub before: CounterSnapshot,
    pub after: CounterSnapshot,
}

impl Snapshots {
    /// A trial's block in the session's raw file: a line naming the trial, then
    /// the two snapshots' text, each as `CounterSnapshot::render` writes it.
    pub(crate) fn render_for(&self, trial: &str) -> String {
        // one string of about the right size (the text of the files and a line per part)
        let size: usize =
            self.before.parts.iter().chain(&self.after.parts).map(|(n, t)| n.len() + t.len() + 16).sum();
        let mut out = String::with_capacity(size + trial.len() + 96);
        let _ = writeln!(out, "{MARK} trial {trial}");
        self.before.render("before", &mut out);
        self.after.render("after", &mut out);
        out
    }

    /// The two snapshots' text.
    #[cfg(test)]
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.before.render("before", &mut out);
        self.after.render("after", &mut out);
        out
    }

    /// Read back a raw file (or a remote trial's two blocks put together).
    pub(crate) fn parse(text: &str) -> Snapshots {
        let before_mark = format!("{MARK} before\n");
        let after_mark = format!("\n{MARK} after\n");
        let body = text.strip_prefix(&before_mark).unwrap_or(text);
        let (before, after) = match body.find(&after_mark) {
            Some(at) => (&body[..at + 1], &body[at + after_mark.len()..]),
            None => match body.strip_prefix(&after_mark[1..]) {
                Some(after) => ("", after),
                None => (body, ""),
            },
        };
        Snapshots { before: CounterSnapshot::parse(before), after: CounterSnapshot::parse(after) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the remote shell prints (`tail -v -n +1` on two files) reads as two parts.
    #[test]
    fn tail_output_reads_as_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "one\ntwo\n").unwrap();
        std::fs::write(&b, "three\n").unwrap();
        let out = std::process::Command::new("tail")
            .arg("-v")
            .arg("-n")
            .arg("+1")
            .arg(&a)
            .arg(&b)
            .output()
            .unwrap();
        let s = CounterSnapshot::parse(&String::from_utf8(out.stdout).unwrap());
        assert_eq!(s.parts.len(), 2);
        assert_eq!(s.parts[0].1, "one\ntwo\n");
        assert_eq!(s.parts[1].1, "three\n");
    }
}
