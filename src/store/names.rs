//! Interned text of the trial columns: each distinct string once, numbered.

use std::collections::HashMap;

/// A piece of text stored once in [`Names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(u32);

impl Name {
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The `n`-th name of a [`Names`] known to hold that many.
    pub(super) fn new(n: usize) -> Name {
        Name(n as u32)
    }
}

/// Interned text: each distinct string once, numbered in order of first appearance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Names {
    pub(super) text: Vec<Box<str>>,
    index: HashMap<Box<str>, Name>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> Name {
        if let Some(&name) = self.index.get(s) {
            return name;
        }
        let name = Name(u32::try_from(self.text.len()).expect("fewer than 4 billion distinct names"));
        self.text.push(s.into());
        self.index.insert(s.into(), name);
        name
    }

    pub fn get(&self, name: Name) -> &str {
        &self.text[name.index()]
    }

    /// The name of `s`, if some record holds it.
    pub fn find(&self, s: &str) -> Option<Name> {
        self.index.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The `n`-th name (of [`Names::len`]).
    pub fn nth(&self, n: usize) -> Name {
        assert!(n < self.text.len(), "name {n} of {}", self.text.len());
        Name(n as u32)
    }
}
