//! Link the `margin` binary at a fixed address (not position-independent) on Linux.
//!
//! A position-independent executable has its pointers patched by the dynamic loader at
//! every start: with polars inside, some 130 000 relocations, a few tens of milliseconds
//! before `main` — paid by every `margin plan` or `status`, and by every run, whose start
//! and end are part of the overhead the runner benchmark compares with `hyperfine -N`.
//! At a fixed address there is nothing to patch.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
