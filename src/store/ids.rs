//! Trial ids as the trial columns keep them: the 16 bytes of a UUID where the id is one
//! written the way margin writes them (lower-case hex with hyphens: every id a run or an
//! import makes, version 7), the text itself otherwise. A million trials' ids are 16 MB
//! this way, where their text and its ends took 44 (docs/store.md).

use std::borrow::Cow;

/// In a trial's slot of [`Ids::packed`]: its id is in [`Ids::other`]. The UUID of these
/// bits (all ones) is kept as text too, so that a slot holding them is never a UUID.
pub(super) const OTHER: [u8; 16] = [0xff; 16];

/// Every trial's id, in log order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Ids {
    /// A UUID's bytes per trial, or [`OTHER`].
    pub(super) packed: Vec<[u8; 16]>,
    /// The ids that are not a UUID in margin's form, with their trial's index, in log order.
    pub(super) other: Vec<(usize, Box<str>)>,
}

/// The UUID `id` is, when reading it back gives the same text.
fn uuid_of(id: &str) -> Option<[u8; 16]> {
    if id.len() != uuid::fmt::Hyphenated::LENGTH {
        return None;
    }
    let uuid = uuid::Uuid::try_parse(id).ok()?;
    let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    let same = &*uuid.hyphenated().encode_lower(&mut text) == id;
    Some(*uuid.as_bytes()).filter(|b| same && *b != OTHER)
}

/// The id of trial `i`, whose slot holds `bytes`, with the texts of the trials whose ids
/// are not UUIDs (`other`); `None` when its slot says it has a text and it has none.
pub(super) fn text(bytes: [u8; 16], i: usize, other: &[(usize, Box<str>)]) -> Option<Cow<'_, str>> {
    match bytes {
        OTHER => {
            let at = other.binary_search_by_key(&i, |(t, _)| *t).ok()?;
            Some(Cow::Borrowed(&other[at].1))
        }
        bytes => Some(Cow::Owned(uuid::Uuid::from_bytes(bytes).hyphenated().to_string())),
    }
}

impl Ids {
    pub(super) fn len(&self) -> usize {
        self.packed.len()
    }

    pub(super) fn push(&mut self, id: &str) {
        match uuid_of(id) {
            Some(bytes) => self.packed.push(bytes),
            None => {
                self.other.push((self.packed.len(), id.into()));
                self.packed.push(OTHER);
            }
        }
    }

    /// The id of trial `i`.
    pub(super) fn get(&self, i: usize) -> Cow<'_, str> {
        text(self.packed[i], i, &self.other).expect("each OTHER slot has its text")
    }

    /// `other`'s ids after these.
    pub(super) fn append(&mut self, other: Ids) {
        let offset = self.packed.len();
        self.packed.extend(other.packed);
        self.other.extend(other.other.into_iter().map(|(t, id)| (t + offset, id)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_as_written_whatever_their_form() {
        let v7 = uuid::Uuid::now_v7().hyphenated().to_string();
        let written = [
            v7.as_str(),
            "t2000",
            "01936d2f-8f3e-7cc1-9a51-3c1b5a0e9d2f",
            // a UUID, but not in margin's form: kept as text, so that it reads back as given
            "01936D2F-8F3E-7CC1-9A51-3C1B5A0E9D2F",
            "01936d2f8f3e7cc19a513c1b5a0e9d2f",
            "{01936d2f-8f3e-7cc1-9a51-3c1b5a0e9d2f}",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "",
            "é",
        ];
        let mut ids = Ids::default();
        for id in written {
            ids.push(id);
        }
        let read: Vec<Cow<'_, str>> = (0..ids.len()).map(|i| ids.get(i)).collect();
        assert_eq!(read, written);
        assert_eq!(ids.other.len(), 7, "two are UUIDs in margin's form");

        let mut both = ids.clone();
        both.append(ids.clone());
        assert_eq!((0..both.len()).map(|i| both.get(i)).collect::<Vec<_>>(), [written, written].concat());
    }
}
