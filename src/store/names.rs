//! What the trial columns keep once and number: each distinct name ([`Names`]), and each
//! distinct list of a trial's secondary names (`store::secondary`).

use std::collections::HashMap;
use std::hash::Hash;

/// Items kept once each, numbered in order of first appearance.
#[derive(Debug, PartialEq)]
pub(super) struct Interned<T: ?Sized + Eq + Hash> {
    pub(super) items: Vec<Box<T>>,
    index: HashMap<Box<T>, u32>,
}

// by hand: a derive would ask `T: Clone`, which `str` and slices are not
impl<T: ?Sized + Eq + Hash> Clone for Interned<T>
where
    Box<T>: Clone,
{
    fn clone(&self) -> Self {
        Interned { items: self.items.clone(), index: self.index.clone() }
    }
}

impl<T: ?Sized + Eq + Hash> Default for Interned<T> {
    fn default() -> Self {
        Interned { items: Vec::new(), index: HashMap::new() }
    }
}

impl<T: ?Sized + Eq + Hash> Interned<T>
where
    Box<T>: for<'x> From<&'x T> + Clone,
{
    /// The number of `item`, kept if it is new.
    pub(super) fn intern(&mut self, item: &T) -> u32 {
        if let Some(&n) = self.index.get(item) {
            return n;
        }
        let n = u32::try_from(self.items.len()).expect("fewer than 4 billion distinct items");
        self.items.push(item.into());
        self.index.insert(item.into(), n);
        n
    }

    /// The number of `item`, if it is kept.
    pub(super) fn find(&self, item: &T) -> Option<u32> {
        self.index.get(item).copied()
    }

    pub(super) fn get(&self, n: usize) -> &T {
        &self.items[n]
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// Items read back from `runs.columns`, in their order; none if one is there twice (a
    /// damaged file: each was kept once).
    pub(super) fn from_items(items: Vec<Box<T>>) -> Option<Self> {
        let mut index = HashMap::with_capacity(items.len());
        for (n, item) in items.iter().enumerate() {
            if index.insert(item.clone(), u32::try_from(n).ok()?).is_some() {
                return None;
            }
        }
        Some(Interned { items, index })
    }
}

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
pub struct Names(pub(super) Interned<str>);

impl Names {
    pub fn intern(&mut self, s: &str) -> Name {
        Name(self.0.intern(s))
    }

    pub fn get(&self, name: Name) -> &str {
        self.0.get(name.index())
    }

    /// The name of `s`, if some record holds it.
    pub fn find(&self, s: &str) -> Option<Name> {
        self.0.find(s).map(Name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }

    /// The `n`-th name (of [`Names::len`]).
    pub fn nth(&self, n: usize) -> Name {
        assert!(n < self.0.len(), "name {n} of {}", self.0.len());
        Name(n as u32)
    }
}
