# margin — recipes. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

# A debug build: it shares the test build and compiles in minutes rather than the 15–20
# a release build of polars takes; what a benchmark measures is the tool it runs.
margin := "cargo run --quiet --"

# Show the recipes.
default:
    @just --list

# Run one experiment and write its report: `just experiment fio` (default: dd-write).
experiment name="dd-write":
    {{ margin }} run experiments/{{ name }}.yaml

# Run every experiment that can run on this machine (the Xen ones need their hosts).
experiments:
    {{ margin }} run experiments/dd-write.yaml experiments/fio.yaml experiments/sysbench-cpu.yaml experiments/bonnie.yaml experiments/iperf3.yaml

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

# Benchmarks (release build): planning 10⁶ cells, per-trial overhead against hyperfine.
bench:
    cargo build --release --quiet
    bench/plan.sh "${CARGO_TARGET_DIR:-target}/release/margin"
    bench/run.sh "${CARGO_TARGET_DIR:-target}/release/margin"
