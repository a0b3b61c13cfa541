//! The secondary metrics of telemetry (docs/design.md §6.9) in the trial columns: each
//! trial's names once per distinct list of them — a run's trials mostly share one, the
//! default `monitor:` nine names — and its values in a row. Eight bytes a value and eight
//! a trial, where a (trial, name, value) triple per value was sixteen a value (144 MB at
//! 10⁶ trials of default telemetry, now 80).

use super::names::{Interned, Name};

/// Every trial's secondary metrics, in log order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SecondaryMetrics {
    /// Each distinct list of names, in order of first appearance (the empty list too).
    pub(super) shapes: Interned<[Name]>,
    /// Trial `i`'s list of names: `shapes[shape[i]]`.
    pub(super) shape: Vec<u32>,
    /// Trial `i`'s values are `values[end[i - 1]..end[i]]`, named in its list's order.
    end: Vec<usize>,
    pub(super) values: Vec<f64>,
}

impl SecondaryMetrics {
    /// Whether no trial has any.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Trial `i`'s names and values.
    pub fn of(&self, i: usize) -> (&[Name], &[f64]) {
        let start = if i == 0 { 0 } else { self.end[i - 1] };
        (self.shapes.get(self.shape[i] as usize), &self.values[start..self.end[i]])
    }

    /// The number of trial `i`'s list of names: trials with the same number have the
    /// same names in the same order.
    pub fn shape_of(&self, i: usize) -> usize {
        self.shape[i] as usize
    }

    /// Every (trial, name, value), in log order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, Name, f64)> + '_ {
        (0..self.shape.len()).flat_map(move |i| {
            let (names, values) = self.of(i);
            names.iter().zip(values).map(move |(&n, &v)| (i, n, v))
        })
    }

    /// Adds the next trial's, `names` in its record's order with their `values`.
    pub(super) fn push(&mut self, names: &[Name], values: &[f64]) {
        // the previous trial's list, most of the time: no hashing
        let same = self.shape.last().filter(|&&s| self.shapes.get(s as usize) == names);
        let shape = match same {
            Some(&s) => s,
            None => self.shapes.intern(names),
        };
        self.shape.push(shape);
        self.values.extend_from_slice(values);
        self.end.push(self.values.len());
    }

    /// Adds `other`'s trials after these, their names numbered by `map`.
    pub(super) fn append(&mut self, other: &SecondaryMetrics, map: impl Fn(&Name) -> Name) {
        let shapes: Vec<u32> = other
            .shapes
            .items
            .iter()
            .map(|names| self.shapes.intern(&names.iter().map(&map).collect::<Vec<Name>>()))
            .collect();
        let offset = self.values.len();
        self.shape.extend(other.shape.iter().map(|&s| shapes[s as usize]));
        self.values.extend_from_slice(&other.values);
        self.end.extend(other.end.iter().map(|e| e + offset));
    }

    /// Made from the columns' lists (`store::columns`): each list of names, each trial's
    /// list's number, and the values. None unless they fit together: every number a list,
    /// no list twice, and as many values as the trials' lists have names.
    pub(super) fn from_parts(shapes: Vec<Box<[Name]>>, shape: Vec<u32>, values: Vec<f64>) -> Option<Self> {
        let shapes = Interned::from_items(shapes)?;
        let mut end = Vec::with_capacity(shape.len());
        let mut at = 0usize;
        for &s in &shape {
            at = at.checked_add(shapes.items.get(s as usize)?.len())?;
            end.push(at);
        }
        (at == values.len()).then_some(SecondaryMetrics { shapes, shape, end, values })
    }

    /// Where the values of trials `range` lie in [`SecondaryMetrics::values`].
    pub(super) fn values_of(&self, range: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let start = if range.start == 0 { 0 } else { self.end[range.start - 1] };
        let end = if range.is_empty() { start } else { self.end[range.end - 1] };
        start..end
    }

    /// The number of trials.
    pub(super) fn trials(&self) -> usize {
        self.shape.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(i: usize) -> Name {
        Name::new(i)
    }

    /// What goes in comes out by trial, a list of names kept once however many trials
    /// share it, and the parts the columns keep make the same thing again.
    #[test]
    fn trials_keep_their_names_and_values_and_share_their_lists() {
        let mut s = SecondaryMetrics::default();
        s.push(&[n(1), n(2)], &[1.0, 2.0]);
        s.push(&[], &[]);
        s.push(&[n(1), n(2)], &[3.0, 4.0]);
        s.push(&[n(2), n(1)], &[5.0, 6.0]);
        s.push(&[n(1), n(2)], &[7.0, 8.0]);
        assert_eq!(s.shapes.len(), 3, "{:?}", s.shapes);
        assert_eq!(s.of(0), (&[n(1), n(2)][..], &[1.0, 2.0][..]));
        assert_eq!(s.of(1), (&[][..], &[][..]));
        assert_eq!(s.of(3), (&[n(2), n(1)][..], &[5.0, 6.0][..]));
        assert_eq!(s.of(4), (&[n(1), n(2)][..], &[7.0, 8.0][..]));
        assert_eq!(s.shape_of(0), s.shape_of(4));
        let all: Vec<(usize, Name, f64)> = s.iter().collect();
        assert_eq!(all.len(), 8);
        assert_eq!(all[2], (2, n(1), 3.0));
        let again = SecondaryMetrics::from_parts(s.shapes.items.clone(), s.shape.clone(), s.values.clone());
        assert_eq!(again.as_ref(), Some(&s));
        // parts that do not fit: a number past the lists, a value too many, a list twice
        assert!(SecondaryMetrics::from_parts(s.shapes.items.clone(), vec![3], vec![]).is_none());
        assert!(SecondaryMetrics::from_parts(s.shapes.items.clone(), vec![1], vec![1.0]).is_none());
        let twice = vec![s.shapes.items[0].clone(), s.shapes.items[0].clone()];
        assert!(SecondaryMetrics::from_parts(twice, vec![0], vec![1.0, 2.0]).is_none());
    }

    /// Appending numbers the other's names anew and keeps one list per distinct names:
    /// the same as pushing its trials one by one.
    #[test]
    fn appending_is_pushing_one_by_one() {
        let mut a = SecondaryMetrics::default();
        a.push(&[n(1)], &[1.0]);
        let mut b = SecondaryMetrics::default();
        b.push(&[n(0)], &[2.0]);
        b.push(&[n(5), n(0)], &[3.0, 4.0]);
        let map = |x: &Name| if x.index() == 0 { n(1) } else { n(7) };
        let mut appended = a.clone();
        appended.append(&b, map);
        let mut pushed = a;
        pushed.push(&[n(1)], &[2.0]);
        pushed.push(&[n(7), n(1)], &[3.0, 4.0]);
        assert_eq!(appended, pushed);
        assert_eq!(appended.shapes.len(), 2);
    }
}
