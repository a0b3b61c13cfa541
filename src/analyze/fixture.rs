//! Test support: the in-memory store under the name the tests know, and the seed files.

use std::path::Path;

pub(crate) use super::memory::MemoryStore as Fixture;

impl Fixture {
    /// Loads one of `tests/data/report/`.
    pub fn file(name: &str) -> Fixture {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report").join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        Fixture::new(&format!("experiments/{name}"), &text)
    }
}
