//! The matrix's checks: factors and their levels, zipped groups, `include` and `exclude`,
//! and the environment factors read off the host.

use std::collections::HashSet;

use super::Checker;
use crate::diag::{Pos, excerpt, suggest};
use crate::spec::{Level, Located};
use vocab::FACTS;

impl Checker<'_> {
    pub(super) fn matrix(&mut self) {
        let exp = self.exp;
        let m = &exp.spec.matrix.value;
        if m.factors.is_empty() && m.include.is_empty() {
            self.error_hint(
                exp.spec.matrix.pos,
                "the matrix has no factors",
                Some("add at least one factor, like `bs: [4k, 1M]`, or `include` entries".into()),
            );
        }
        let mut seen: Vec<(&str, &str)> = Vec::new(); // (name, where it is defined)
        for f in &m.factors {
            let name = f.name.value.as_str();
            self.name_rules(f.name.pos, name, "factor");
            if f.levels.is_empty() {
                self.error_hint(
                    f.list_pos,
                    format!("factor `{}` has no levels", excerpt(name)),
                    Some(format!("list at least one level, like `{name}: [a, b]`")),
                );
                continue;
            }
            let zip = f.is_zip();
            if zip {
                self.zip_group_rules(f);
                for key in f.zip_keys() {
                    self.duplicate_name(&mut seen, key, name, f.name.pos);
                }
            } else {
                self.duplicate_name(&mut seen, name, name, f.name.pos);
            }
            let mut texts: HashSet<String> = HashSet::new();
            for level in &f.levels {
                match (&level.value, zip) {
                    (Level::Scalar(s), false) => {
                        if !texts.insert(s.text.clone()) {
                            self.error(
                                level.pos,
                                format!(
                                    "level `{}` appears twice in factor `{}`",
                                    excerpt(&s.text),
                                    excerpt(name)
                                ),
                            );
                        }
                    }
                    (Level::Zip(_), true) => {}
                    _ => self.error_hint(
                        level.pos,
                        format!("factor `{}` mixes plain levels and maps", excerpt(name)),
                        Some("in a zipped group every level is a map with the same keys".into()),
                    ),
                }
            }
        }
        for entry in &m.exclude {
            self.exclude_entry(entry);
        }
        for entry in &m.include {
            if entry.value.is_empty() {
                self.error(entry.pos, "an empty `include` entry adds nothing");
            }
            for key in entry.value.keys() {
                self.name_rules(key.pos, &key.value, "include key");
                if let Some(keys) = self.zip_group(&key.value) {
                    self.error_hint(
                        key.pos,
                        format!("`{}` is a zipped group; include its keys instead", excerpt(&key.value)),
                        Some(format!("its keys are: {}", keys.join(", "))),
                    );
                }
            }
        }
    }

    fn duplicate_name<'s>(
        &mut self,
        seen: &mut Vec<(&'s str, &'s str)>,
        key: &'s str,
        owner: &'s str,
        pos: Pos,
    ) {
        if let Some((_, other)) = seen.iter().find(|(k, _)| *k == key) {
            let msg = if *other == key {
                format!("duplicate factor `{}`", excerpt(key))
            } else {
                format!(
                    "duplicate factor `{}`: it is already a key of the zipped group `{}`",
                    excerpt(key),
                    excerpt(other)
                )
            };
            self.error(pos, msg);
        } else {
            seen.push((key, owner));
        }
    }

    fn zip_group_rules(&mut self, f: &crate::spec::Factor) {
        let keys: Vec<&str> = f.zip_keys();
        for level in &f.levels {
            let Level::Zip(map) = &level.value else {
                continue;
            };
            let these: Vec<&str> = map.keys().map(|k| k.value.as_str()).collect();
            let mut a = these.clone();
            let mut b = keys.clone();
            a.sort_unstable();
            b.sort_unstable();
            if a != b {
                self.error_hint(
                    level.pos,
                    format!(
                        "this level of zipped group `{}` has keys {{{}}}",
                        f.name.value,
                        these.join(", ")
                    ),
                    Some(format!("every level of the group needs the same keys: {{{}}}", keys.join(", "))),
                );
            }
            for k in map.keys() {
                self.name_rules(k.pos, &k.value, "zipped key");
            }
        }
    }

    fn exclude_entry(&mut self, entry: &Located<crate::spec::Combination>) {
        if entry.value.is_empty() {
            self.error(entry.pos, "an empty `exclude` entry would remove every cell");
        }
        let known: Vec<String> = self
            .spec()
            .matrix
            .value
            .factors
            .iter()
            .flat_map(|f| if f.is_zip() { f.zip_keys() } else { vec![f.name.value.as_str()] })
            .map(str::to_string)
            .collect();
        for (key, value) in &entry.value {
            if let Some(keys) = self.zip_group(&key.value) {
                self.error_hint(
                    key.pos,
                    format!("`{}` is a zipped group; exclude by one of its keys", excerpt(&key.value)),
                    Some(format!("its keys are: {}", keys.join(", "))),
                );
                continue;
            }
            let Some(levels) = self.levels_of(&key.value) else {
                let hint = suggest(&key.value, known.iter().map(String::as_str));
                self.error_hint(
                    key.pos,
                    format!("exclude names unknown factor `{}`", excerpt(&key.value)),
                    hint,
                );
                continue;
            };
            if !levels.iter().any(|l| l.text == value.value.text) {
                let list: Vec<&str> = levels.iter().map(|l| l.text.as_str()).collect();
                let hint = suggest(&value.value.text, list);
                self.error_hint(
                    value.pos,
                    format!(
                        "exclude: `{}` is not a level of `{}`, so this entry matches nothing",
                        excerpt(&value.value.text),
                        excerpt(&key.value)
                    ),
                    hint,
                );
            }
        }
    }

    pub(super) fn environment(&mut self) {
        let exp = self.exp;
        for (name, env) in &exp.spec.environment {
            let e = &env.value;
            if name.value == "host" {
                self.error_hint(
                    name.pos,
                    "`host` cannot be an environment factor",
                    Some("the `host` factor picks an entry of `hosts:`; it is set, not detected".into()),
                );
                continue;
            }
            let levels = match self.levels_of(&name.value) {
                Some(levels) if exp.spec.matrix.value.factors.iter().any(|f| f.name.value == name.value) => {
                    levels
                }
                _ => {
                    let factors: Vec<&str> =
                        exp.spec.matrix.value.factors.iter().map(|f| f.name.value.as_str()).collect();
                    self.error_hint(
                        name.pos,
                        format!(
                            "environment factor `{}` is not a factor of the matrix",
                            excerpt(&name.value)
                        ),
                        suggest(&name.value, factors)
                            .or_else(|| Some(format!("add it to the matrix: `{}: [...]`", name.value))),
                    );
                    continue;
                }
            };
            let level_texts: Vec<&str> = levels.iter().map(|l| l.text.as_str()).collect();
            match (&e.fact, &e.probe) {
                (Some(_), Some(_)) | (None, None) => self.error(
                    env.pos,
                    format!(
                        "environment factor `{}` needs exactly one of `fact` or `probe`",
                        excerpt(&name.value)
                    ),
                ),
                (Some(fact), None) if !FACTS.contains(&fact.value.as_str()) => {
                    let hint = suggest(&fact.value, FACTS.iter().copied());
                    self.error_hint(fact.pos, format!("unknown fact `{}`", excerpt(&fact.value)), hint);
                }
                (None, Some(probe)) if probe.value.trim().is_empty() => {
                    self.error(probe.pos, "the probe command is empty");
                }
                _ => {}
            }
            for target in e.map.values().chain(e.default.iter()) {
                if !level_texts.contains(&target.value.text.as_str()) {
                    let hint = suggest(&target.value.text, level_texts.iter().copied());
                    self.error_hint(
                        target.pos,
                        format!(
                            "`{}` is not a level of factor `{}`",
                            excerpt(&target.value.text),
                            excerpt(&name.value)
                        ),
                        hint,
                    );
                }
            }
        }
    }
}
