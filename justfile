# margin — recipes. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

margin := "cargo run --quiet --release --"

# Show the recipes.
default:
    @just --list

# Plan (and, once the runner lands, run) one experiment: `just experiment dd-write`.
experiment name="dd-write":
    {{ margin }} check experiments/{{ name }}.yaml
    {{ margin }} plan experiments/{{ name }}.yaml

# Validate every experiment file.
check:
    {{ margin }} check experiments/*.yaml

# The whole test suite.
test:
    cargo test --all-targets

# Exactly what CI checks: formatting, lints with warnings denied, tests.
ci:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings
    cargo test --all-targets

# Benchmarks (release build): planning a matrix of 1 000 000 cells, and reporting on a
# store of 1 000 000 trials.
# The store generator is an example, built in the test profile: a release build of it
# would rebuild polars with the dev-dependencies' features, and its speed is not measured.
bench:
    cargo build --release --quiet --bin margin
    cargo build --quiet --example synthetic_store
    bench/plan.sh "${CARGO_TARGET_DIR:-target}/release/margin"
    bench/report.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/debug/examples/synthetic_store"
