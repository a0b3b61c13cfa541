//! The binary runs on jemalloc with the options src/main.rs gives it (docs/performance.md,
//! Memory and the allocator): asked to confirm its options as it starts, jemalloc prints
//! them, the binary's among them.

use super::{margin, stderr};

#[test]
fn the_binary_runs_on_jemalloc_giving_freed_pages_back_soon_from_shared_arenas_in_huge_pages() {
    let out = margin().arg("--version").env("_RJEM_MALLOC_CONF", "confirm_conf:true").output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    // jemalloc lists each source of options it read; the binary's is "the global variable"
    let ours = err
        .lines()
        .find(|l| l.contains("global variable malloc_conf"))
        .unwrap_or_else(|| panic!("jemalloc did not read the binary's options:\n{err}"));
    assert!(ours.contains("\"dirty_decay_ms:50,muzzy_decay_ms:0,percpu_arena:phycpu,thp:always\""), "{ours}");
    // and applied them
    for option in ["dirty_decay_ms:50", "muzzy_decay_ms:0", "percpu_arena:phycpu", "thp:always"] {
        assert!(err.contains(&format!("-- Set conf value: {option}\n")), "{option} not set:\n{err}");
    }
}
