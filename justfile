# margin — recipes. `just --list` shows them all.

set shell := ["bash", "-euo", "pipefail", "-c"]

# A debug build: it shares the test build and compiles in minutes rather than the 15–20
# a release build of polars takes; what a benchmark measures is the tool it runs.
# Not `--quiet`: the first build takes minutes, and cargo's progress shows it is working.
margin := "cargo run --bin margin --"

# Show the recipes.
default:
    @just --list

# Run one experiment and write its report: `just experiment fio` (default: dd-write).
experiment name="dd-write": _build-deps (_benchmark name)
    {{ margin }} run experiments/{{ name }}.yaml

# Run every experiment that can run on this machine (the Xen ones need their hosts).
experiments: _build-deps (_benchmark "fio") (_benchmark "sysbench-cpu") (_benchmark "bonnie") (_benchmark "iperf3")
    {{ margin }} run experiments/dd-write.yaml experiments/fio.yaml experiments/sysbench-cpu.yaml experiments/bonnie.yaml experiments/iperf3.yaml

# make and a C compiler build jemalloc, margin's allocator (Cargo.toml), when missing.
_build-deps:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v make > /dev/null || missing+=(make)
    command -v cc > /dev/null || missing+=(gcc libc6-dev)
    just _install "${missing[@]}"

# Install the benchmark a shipped experiment runs, when it is missing (dd is coreutils').
_benchmark name:
    #!/usr/bin/env bash
    set -euo pipefail
    case "{{ name }}" in
        fio) tool=fio package=fio ;;
        sysbench-cpu) tool=sysbench package=sysbench ;;
        bonnie) tool=bonnie++ package=bonnie++ ;;
        iperf3) tool=iperf3 package=iperf3 ;;
        *) exit 0 ;;
    esac
    command -v "$tool" > /dev/null || PATH=$PATH:/usr/sbin command -v "$tool" > /dev/null || just _install "$package"

# `just seeds release` uses the release binary.
# Re-analyse the seed posts: import their figures and rewrite the committed reports/.
seeds profile="debug":
    cargo build --quiet {{ if profile == "release" { "--release" } else if profile == "debug" { "" } else { error("profile: debug or release") } }}
    experiments/data/import.sh "${CARGO_TARGET_DIR:-target}/{{ profile }}/margin" reports

# (after a field was added there); the tests fail while the committed one differs.
# Write schema/summary.schema.json anew from the types of src/summary/.
schema:
    UPDATE_SCHEMA=1 cargo test --lib summary::schema::the_committed_schema_is_the_one_the_types_say

# Validate every experiment file.
check:
    {{ margin }} check experiments/*.yaml

# `cargo test -p margin-stats` runs one leaf crate's tests alone (docs/design.md, Crates).
# The whole test suite, every crate of the workspace (installs what it drives first), then
# pandas and DuckDB reading a store's columns as a user would (tests/interop/run.sh: pip
# installs them into a venv).
test: _build-deps test-deps
    cargo test --workspace --all-targets
    cargo build --quiet --bin margin
    tests/interop/run.sh "${CARGO_TARGET_DIR:-target}/debug/margin"

# fio, sshd/ssh for the remote-host tests, iperf3 and ss for the services tests, git for
# the first-run test's copy, a C compiler for the campaign's I/O-error shim, python3's
# venv for pandas and DuckDB (tests/interop).
# Install the tools the tests drive for real (Debian packages).
test-deps:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v fio > /dev/null || missing+=(fio)
    [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
    command -v ssh-keygen > /dev/null || missing+=(openssh-client)
    [ -x /usr/bin/iperf3 ] || missing+=(iperf3)
    command -v ss > /dev/null || missing+=(iproute2)
    command -v git > /dev/null || missing+=(git)
    command -v cc > /dev/null || missing+=(gcc)
    python3 -c 'import venv, ensurepip' 2> /dev/null || missing+=(python3-venv)
    just _install "${missing[@]}"

# hyperfine (bench/run.sh), GNU time for peak memory, python3's venv for pandas + scipy
# (bench/compare.sh), sshd (bench/hosts.sh).
# Install what the benchmarks drive beside margin (Debian packages).
bench-deps:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v hyperfine > /dev/null || missing+=(hyperfine)
    [ -x /usr/bin/time ] || missing+=(time)
    python3 -c 'import venv, ensurepip' 2> /dev/null || missing+=(python3-venv)
    [ -x /usr/sbin/sshd ] || missing+=(openssh-server)
    command -v ssh-keygen > /dev/null || missing+=(openssh-client)
    just _install "${missing[@]}"

# Debian packages, with apt-get (as root, or through sudo); nothing when none is missing.
_install *packages:
    #!/usr/bin/env bash
    set -euo pipefail
    packages=({{ packages }})
    [ ${#packages[@]} -eq 0 ] && exit 0
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if command -v apt-get > /dev/null; then
        $sudo apt-get update
        $sudo apt-get install -y --no-install-recommends "${packages[@]}"
    else
        echo "these are needed (Debian package names): ${packages[*]}" >&2
        exit 1
    fi

# Formatting, lints with warnings denied, the developers' documentation without a
# warning (broken links), the shell and Python scripts beside the Rust (shellcheck and
# ruff: .ci/scripts, which installs ruff into a venv of its own), tests.
# Exactly what CI checks.
ci: _build-deps test-deps
    command -v shellcheck > /dev/null || just _install shellcheck
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items
    .ci/scripts
    cargo test --workspace --all-targets

# Planning a matrix of 1 000 000 cells, the per-trial overhead of `margin run` against
# hyperfine and the durable floor, the trial loop against the floors in pairs
# (bench/loop.sh), reporting on 1 000 000 trials, margin against pandas + scipy, DuckDB +
# scipy and hyperfine side by side (bench/compare.sh installs pandas, scipy and duckdb into
# a virtual environment of its own on its first run), how reading a store grows from 10⁵ to 10⁶
# trials (bench/growth.sh), a series of 1 000 levels against as many trials compared
# (bench/series.sh), and the calibration suite. The store generator is an example
# built in the test profile (a release build of it would rebuild polars with the
# dev-dependencies' features, and its speed is not measured); the durable floor is built
# in release, as margin is.
# Benchmarks (release build; installs what they drive first).
bench: _build-deps bench-deps
    cargo build --release --quiet --bin margin
    # the floor built as margin is, so that margin ÷ floor holds no debug build's slowness
    cargo build --release --quiet --example durable_floor
    cargo build --release --quiet --example polars_grouping
    cargo build --quiet --example synthetic_store
    bench/plan.sh "${CARGO_TARGET_DIR:-target}/release/margin"
    bench/run.sh "${CARGO_TARGET_DIR:-target}/release/margin" 5 "${CARGO_TARGET_DIR:-target}/release/examples/durable_floor"
    bench/loop.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/release/examples/durable_floor" 20
    bench/report.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/debug/examples/synthetic_store"
    # many hosts: sshd daemons on loopback, which need root and openssh-server (`just test-deps`)
    if [ "$(id -u)" = 0 ] && [ -x /usr/sbin/sshd ]; then bench/hosts.sh "${CARGO_TARGET_DIR:-target}/release/margin"; else echo "bench/hosts.sh skipped: needs root and /usr/sbin/sshd"; fi
    bench/compare.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/debug/examples/synthetic_store"
    # 10⁵ and 10⁶ trials; `bench/growth.sh MARGIN GENERATOR 32 100 316` adds 10⁷ (6 GB of log)
    bench/growth.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/debug/examples/synthetic_store" 32 100
    bench/series.sh "${CARGO_TARGET_DIR:-target}/release/margin" "${CARGO_TARGET_DIR:-target}/debug/examples/synthetic_store"
    just calibrate

# kill -9 at 100 random moments, a full disk at 10 sizes, 50 readers during a write, and
# the fuzzer of the parsers, the trial log and the experiment loader (`just stress fuzz
# --cases 20000 --seed 2`; `--keep tests/data/campaign` keeps what breaks a guarantee as a
# regression test). One line of figures per part; exit 1 when a guarantee broke.
# The robustness campaign against the real binary (debug build; docs/store.md, Guarantees).
stress *args:
    cargo build --quiet --bin margin --example stress
    "${CARGO_TARGET_DIR:-target}/debug/examples/stress" "${CARGO_TARGET_DIR:-target}/debug/margin" {{ args }}

# Arguments go to `margin calibrate` (`just calibrate --scenario adaptive --experiments
# 500`); docs/statistics.md, Calibration, explains the table.
# The calibration suite (release build, minutes): error rates on simulated experiments.
calibrate *args:
    cargo build --release --bin margin
    "${CARGO_TARGET_DIR:-target}/release/margin" calibrate {{ args }}

# `just lab bare`, `just lab xen dom0_mem=768M`, `just lab xen --port 2223` (lab/boot.sh
# tells its arguments). The image is built once into ~/.cache/margin/lab (minutes; again
# when lab/build.sh changes), each boot on a fresh qcow2 overlay of it; docs/lab.md.
# A real Xen lab under QEMU: build the image if needed, boot it, print the ssh line.
lab kind="xen" *args: _lab-deps
    lab/build.sh
    lab/boot.sh {{ kind }} {{ args }}

# `just lab-reboot bare`, `just lab-reboot xen dom0_mem=2048M --mem 3072`: the disk kept.
# Reboot the lab into another entry (what margin's boot recipes run; lab/reboot.sh).
lab-reboot *args:
    lab/reboot.sh {{ args }}

# Boots the lab as a Xen dom0 (dom0_mem=768M), runs lab/experiments/lab-dd.yaml as a user
# does, checks the facts margin read off the real dom0 (`xl info`); then margin reboots the
# lab by a recipe that boots the wrong entry, is killed while it waits, resumes and refuses
# the boot (lab-wrong-boot.yaml); lab-dd.yaml again in that bare boot. About 5–10 minutes
# under TCG (docs/lab.md, Testing margin against it); .ci/run runs it.
# margin against the lab's real Xen.
lab-test: _lab-deps
    lab/build.sh
    lab/test.sh

# Boots the lab bare and runs lab/experiments/lab-boots.yaml as a user does: margin reboots
# the lab into each of 6 boots (bare, xen-768M, xen-1024M, twice each, balanced), checks
# each, runs the cells' shares; the script checks the boot log and the summary. 12–25
# minutes under TCG (docs/lab.md, margin reboots the lab itself).
# margin doing every boot, in the lab.
lab-boots: _lab-deps
    lab/build.sh
    lab/boots.sh

# Boots the lab bare and runs lab/experiments/lab-adaptive.yaml as a user does: margin
# reboots the lab in blocks (bare, xen-768M) until the comparison across boots is settled
# at a look, or 4 boots of each; the script checks the boot log, the trials per boot and
# the summary. 10–30 minutes under TCG (docs/lab.md).
# Adaptive boots, in the lab.
lab-adaptive: _lab-deps
    lab/build.sh
    lab/adaptive.sh

# Boots the lab as a Xen dom0 and runs `margin bisect lab/experiments/lab-bisect.yaml
# --factor dom0_mem` as a user does: margin reboots the lab into the dom0_mem each step
# asks for until it names the first too small; the script checks the boot log, each boot's
# trials and the answer. About an hour under TCG (docs/lab.md, A bisection across boots).
lab-bisect: _lab-deps
    lab/build.sh
    lab/bisect.sh

# Boots the lab bare and runs lab/experiments/lab-systems.yaml as a user does: margin reboots
# the lab into each of 6 boots (bare, a Xen dom0 alone, the dom0 running the PV guest
# margin-domu where the trial runs; twice each, balanced); the script checks the boot log
# and the summary. 20–40 minutes under TCG (docs/lab.md, bare, dom0 and domU in one run).
# Bare against dom0 against domU in one run, in the lab.
lab-systems: _lab-deps
    lab/build.sh
    lab/systems.sh

# Boots the lab as a Xen dom0 and runs lab/experiments/lab-domu.yaml as a user does: margin
# restarts the PV domU margin-domu through its dom0 (`boot: { by: dom0 }`, `xl create` with
# 1 or 2 vCPUs) and checks each guest boot; the script checks the boot log, the vCPUs read
# in each guest and the trials. 5–15 minutes under TCG (docs/lab.md).
# A PV domU booted by margin through its dom0, in the lab.
lab-domu: _lab-deps
    lab/build.sh
    lab/domu.sh

# Boots the lab as a Xen dom0, starts the PV domU margin-domu from it and runs
# lab/experiments/lab-dom0-domu.yaml as a user does: seed 002's dd in the dom0 and in the
# guest, two hosts of one `machine:`, with telemetry; the script checks from the store that
# their trials never overlapped, what the dom0's `xl list` saw of the guest meanwhile, and
# the page cache. 5–12 minutes under TCG (docs/lab.md).
# A dom0 and its domU taking turns on one machine, in the lab.
lab-dom0-domu: _lab-deps
    lab/build.sh
    lab/dom0-domu.sh

# Boots the lab as a Xen dom0, starts margin-domu and runs lab/experiments/lab-bonnie.yaml
# as a user does: bonnie++ (O_DIRECT, 128 MiB) in the dom0 and in the guest, taking turns.
# About 25 minutes under TCG (docs/lab.md).
# Seed 000's bonnie++, dom0 against domU, in the lab.
lab-bonnie: _lab-deps
    lab/build.sh
    lab/bonnie.sh

# Boots the lab as a Xen dom0, starts margin-domu and margin-domu2 and runs
# lab/experiments/lab-gang.yaml as a user does: dd in each guest alone and in both at once
# (the gang `guests`); the script checks the members' and the summed throughput and the
# start skew margin measured. 6–12 minutes under TCG (docs/lab.md).
# Seed 001's two guests at once (a gang), in the lab.
lab-gang: _lab-deps
    lab/build.sh
    lab/gang.sh

# Boots the lab bare and runs lab/experiments/lab-regimes.yaml as a user does: dd 64 MiB
# without a sync flag (bs 64k and 1M interleaved), the guest's dirty limits set so that a
# write lands in the page cache after a trial of its own cell and is throttled to the
# disk's speed after the other cell's; the script checks that the 1M cell is reported as
# two regimes with their shares and no "more trials" advice. 5–6 minutes under TCG
# (333 s measured, the margin run 280 s of it; docs/lab.md, Two regimes on purpose).
# Two regimes in a cell on purpose (page cache or throttled writeback), in the lab.
lab-regimes: _lab-deps
    lab/build.sh
    lab/regimes.sh

# Stop the lab (`just lab-stop --port 2223`): a clean shutdown, else QEMU killed.
lab-stop *args:
    lab/stop.sh {{ args }}

# QEMU, mmdebstrap and the disk tools the lab needs (Debian packages).
_lab-deps:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    if ! command -v qemu-system-x86_64 > /dev/null; then
        # qemu-system-x86 and qemu-utils of one release: a backported qemu-utils (as some
        # machines come with) breaks the release's qemu-system-common, so it is pinned to
        # the version of the qemu-system-x86 to be installed (a downgrade, if need be)
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        echo "lab: installing QEMU (qemu-system-x86, qemu-utils) with apt-get: the lab's machine" >&2
        $sudo apt-get update
        version=$(apt-cache policy qemu-system-x86 | awk '/Candidate:/ { print $2 }')
        $sudo apt-get install -y --no-install-recommends --allow-downgrades "qemu-system-x86=$version" "qemu-utils=$version"
    fi
    command -v qemu-img > /dev/null || missing+=(qemu-utils)
    command -v mmdebstrap > /dev/null || missing+=(mmdebstrap)
    PATH=$PATH:/usr/sbin command -v sfdisk > /dev/null || missing+=(fdisk)
    PATH=$PATH:/usr/sbin command -v mkfs.ext4 > /dev/null || missing+=(e2fsprogs)
    command -v ssh > /dev/null || missing+=(openssh-client)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "lab: installing ${missing[*]} with apt-get: what builds the lab's image (mmdebstrap: a Debian system from packages; its disk)" >&2
    fi
    just _install "${missing[@]}"
