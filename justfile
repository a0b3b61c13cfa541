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

# Re-analyse the seed posts: import their figures (experiments/data/) and rewrite the
# committed reports under reports/ (`just seeds release` with the release binary).
seeds profile="debug":
    cargo build --quiet {{ if profile == "release" { "--release" } else if profile == "debug" { "" } else { error("profile: debug or release") } }}
    experiments/data/import.sh "${CARGO_TARGET_DIR:-target}/{{ profile }}/margin" reports

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

# Benchmarks (release build): planning a matrix of 1 000 000 cells.
bench:
    cargo build --release --quiet
    bench/plan.sh "${CARGO_TARGET_DIR:-target}/release/margin"
