#!/usr/bin/env bash
# Planning speed and memory: `margin plan` on a matrix of 10^6 cells (six factors of ten
# levels, plus a zipped group and an exclude), the plan written as JSON to /dev/null and
# as text to /dev/null. Goal (docs/performance.md): `plan --json` ≤ 1 s, in no more memory
# than before (241 MB on 877e1e0).
set -euo pipefail
margin=${1:?usage: bench/plan.sh path/to/margin}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
levels="[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"
cat > "$dir/million.yaml" <<YAML
matrix:
  a: $levels
  b: $levels
  c: $levels
  d: $levels
  e: $levels
  io:
    - { bs: 4k, count: 16384 }
    - { bs: 64k, count: 1024 }
    - { bs: 1M, count: 64 }
    - { bs: 4M, count: 16 }
    - { bs: 16M, count: 4 }
    - { bs: 32M, count: 2 }
    - { bs: 64M, count: 1 }
    - { bs: 128k, count: 512 }
    - { bs: 256k, count: 256 }
    - { bs: 512k, count: 128 }
  exclude:
    - { a: 0, bs: 4k }
run: "dd if=/dev/zero of={{ workdir }}/f bs={{ bs }} count={{ count }} conv=fdatasync # {{ a }}{{ b }}{{ c }}{{ d }}{{ e }}"
parse: dd
repetitions: 5
YAML

# shellcheck source=bench/measure.sh
source "$(dirname "$0")/measure.sh"

echo "margin plan, 1 000 000 combinations − 10 000 excluded = 990 000 cells"
for i in 1 2 3; do
  measure "plan --json  run $i" "$margin" plan --json --max-cells 2000000 "$dir/million.yaml"
done
for i in 1 2 3; do
  measure "plan --all   run $i" "$margin" plan --all --max-cells 2000000 "$dir/million.yaml"
done
measure "check        run 1" "$margin" check --max-cells 2000000 "$dir/million.yaml"

echo "the same with a where filter (minijinja evaluated per cell) keeping half the cells"
sed 's/^parse: dd$/parse: dd\nwhere: "(a + b) % 2 == 0"/' "$dir/million.yaml" > "$dir/filtered.yaml"
for i in 1 2; do
  measure "plan --json where run $i" "$margin" plan --json --max-cells 2000000 "$dir/filtered.yaml"
done
