#!/usr/bin/env bash
# margin against the tools a user would reach for instead, on the same work, with the
# ratios (docs/performance.md):
#
# 1. `margin report` on a store of LEVELS × LEVELS cells × TRIALS trials (default
#    100 × 100 × 100 = 1 000 000 trials, dd's throughput, 9 900 comparisons) against
#    bench/compare.py, pandas + scipy computing the same statistics from a CSV of the same
#    values (examples/synthetic_store.rs writes both), and against bench/compare_duckdb.py,
#    DuckDB + scipy computing them from the same CSV (DuckDB the group-bys and per-cell
#    aggregates, numpy and scipy the inference, with compare.py's constants and Holm).
#    Each runs once first (the store, the CSV and the Python modules in the page cache;
#    margin's first read parses the whole log and keeps its columns, which the later ones
#    read), then three times each in turns;
#    the medians of wall time and peak memory (GNU time's maximum resident set) and their
#    ratios are printed. Afterwards (untimed) compare.py checks that its ratios, intervals
#    and Holm-adjusted p-values are margin's to 1e-6: the two compute the same statistics.
#    The same check runs on compare_duckdb.py's, which must also count the same outliers
#    as compare.py and agree with its numbers to 1e-6 (compare_duckdb.py --agree).
#    Beside them, when it is built (`cargo build --release --example polars_grouping`,
#    next to MARGIN as release/examples/polars_grouping), a polars lazy query that could
#    take over margin's own grouping: the per-cell aggregates alone (n, sum, mean, sd,
#    median, MAD, min, max, sessions) grouped by the integer cell code over the same
#    store's runs.columns/, in the same turns: what polars would spend before any of
#    margin's statistics.
# 2. `margin run` of 1 000 trials of `true`, every record durable, against
#    `hyperfine -N --runs 1000 true` (which keeps nothing): bench/run.sh, three rounds in
#    turns, every ratio and their median.
#
# pandas, scipy and duckdb are installed with pip into a virtual environment of this
# benchmark's own, COMPARE_VENV (default ~/.cache/margin/compare-venv), made on the first
# run (duckdb is added to one made before it was used): that needs python3 with its venv
# module (Debian: apt-get install python3-venv) and pip's usual package index.
# hyperfine: apt-get install hyperfine (part 2 has no ratio without).
#
# usage: bench/compare.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]
set -euo pipefail
usage="usage: bench/compare.sh path/to/margin path/to/synthetic_store [LEVELS [TRIALS]]"
margin=${1:?$usage}
generator=${2:?$usage}
levels=${3:-100}
trials=${4:-100}
here=$(cd "$(dirname "$0")" && pwd)
venv=${COMPARE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/margin/compare-venv}
[ -x /usr/bin/time ] || { echo "bench/compare.sh needs GNU time for peak memory (apt-get install time)" >&2; exit 2; }

if ! "$venv/bin/python" -c 'import pandas, scipy' 2> /dev/null; then
  echo "installing pandas and scipy into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pandas scipy
fi
if ! "$venv/bin/python" -c 'import duckdb' 2> /dev/null; then
  echo "installing duckdb into $venv"
  "$venv/bin/pip" install --quiet duckdb
fi
python=$venv/bin/python
"$python" -c 'import pandas, scipy, sys; print(f"python {sys.version.split()[0]}, pandas {pandas.__version__}, scipy {scipy.__version__}")'
"$python" -c 'import duckdb, numpy; print(f"duckdb {duckdb.__version__}, numpy {numpy.__version__}")'

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$generator" "$dir" "$levels" "$trials" 1 > /dev/null
echo "$((levels * levels)) cells × $trials trials, one metric: runs.ndjson $(du -h "$dir/reports/synthetic/runs.ndjson" | cut -f1), synthetic.csv $(du -h "$dir/synthetic.csv" | cut -f1)"

median() { # median NUMBER…
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
timed() { # timed OUT COMMAND…: "seconds KiB" of COMMAND into OUT, its output discarded
  local out=$1; shift
  /usr/bin/time -f "%e %M" -o "$out" "$@" > /dev/null 2> "$out.err" || { cat "$out.err" >&2; return 1; }
}
report=(env MARGIN_REPORTS="$dir/reports" "$margin" report "$dir/synthetic.yaml")
pandas=("$python" "$here/compare.py" "$dir/synthetic.csv" --harmonic throughput)
duckdb=("$python" "$here/compare_duckdb.py" "$dir/synthetic.csv" --harmonic throughput)
# the first report parses the whole log (and keeps its columns beside it, docs/store.md)
timed "$dir/t" "${report[@]}"
read -r s kib < "$dir/t"
printf 'first margin report (the whole log parsed, its columns kept): %.2f s, %d KiB\n' "$s" "$kib"
timed "$dir/t" "${pandas[@]}"
timed "$dir/t" "${duckdb[@]}"
grouping=$(dirname "$margin")/examples/polars_grouping
[ -x "$grouping" ] || grouping=
m_s=() m_kib=() p_s=() p_kib=() d_s=() d_kib=() g_s=() g_kib=()
for i in 1 2 3; do
  timed "$dir/t" "${report[@]}"
  read -r s kib < "$dir/t"; m_s+=("$s"); m_kib+=("$kib")
  timed "$dir/t" "${pandas[@]}"
  read -r s kib < "$dir/t"; p_s+=("$s"); p_kib+=("$kib")
  printf 'turn %d: margin report %.2f s, %d KiB; pandas + scipy %.2f s, %d KiB\n' \
    "$i" "${m_s[-1]}" "${m_kib[-1]}" "${p_s[-1]}" "${p_kib[-1]}"
  timed "$dir/t" "${duckdb[@]}"
  read -r s kib < "$dir/t"; d_s+=("$s"); d_kib+=("$kib")
  printf 'turn %d: DuckDB + scipy %.2f s, %d KiB\n' "$i" "${d_s[-1]}" "${d_kib[-1]}"
  if [ -n "$grouping" ]; then
    timed "$dir/t" "$grouping" "$dir/reports/synthetic" 1
    read -r s kib < "$dir/t"; g_s+=("$s"); g_kib+=("$kib")
    printf 'turn %d: the polars lazy query, aggregates alone %.2f s, %d KiB\n' "$i" "${g_s[-1]}" "${g_kib[-1]}"
  fi
done
ms=$(median "${m_s[@]}") mk=$(median "${m_kib[@]}") ps=$(median "${p_s[@]}") pk=$(median "${p_kib[@]}")
printf 'report, medians of 3: margin %.2f s, %.0f MB; pandas + scipy %.2f s, %.0f MB\n' \
  "$ms" "$(echo "$mk / 1024" | bc -l)" "$ps" "$(echo "$pk / 1024" | bc -l)"
printf 'ratio margin / pandas + scipy: time %.2f (goal ≤ 0.2), memory %.2f (goal ≤ 0.5)\n' \
  "$(echo "$ms / $ps" | bc -l)" "$(echo "$mk / $pk" | bc -l)"
ds=$(median "${d_s[@]}") dk=$(median "${d_kib[@]}")
printf 'report, medians of 3: DuckDB + scipy %.2f s, %.0f MB\n' "$ds" "$(echo "$dk / 1024" | bc -l)"
printf 'ratio margin / DuckDB + scipy: time %.2f (goal ≤ 0.35), memory %.2f\n' \
  "$(echo "$ms / $ds" | bc -l)" "$(echo "$mk / $dk" | bc -l)"
if [ -n "$grouping" ]; then
  gs=$(median "${g_s[@]}") gk=$(median "${g_kib[@]}")
  printf 'the polars lazy query (aggregates alone), median of 3: %.2f s, %.0f MB: %.2f × margin'"'"'s whole report\n' \
    "$gs" "$(echo "$gk / 1024" | bc -l)" "$(echo "$gs / $ms" | bc -l)"
fi
"$python" "$here/compare.py" "$dir/synthetic.csv" --harmonic throughput --out "$dir/pandas.csv" | tee "$dir/pandas.txt"
"$python" "$here/compare.py" --check "$dir/pandas.csv" "$dir/reports/synthetic/summary.json"
# the same check of DuckDB's numbers, and against compare.py's: the same outliers counted
# (the MAD labels are in no comparison), the same comparisons to 1e-6
"$python" "$here/compare_duckdb.py" "$dir/synthetic.csv" --harmonic throughput --out "$dir/duckdb.csv" > "$dir/duckdb.txt"
sed 's/^/DuckDB + scipy: /' "$dir/duckdb.txt"
cmp -s "$dir/pandas.txt" "$dir/duckdb.txt" || { echo "bench/compare.sh: DuckDB + scipy and pandas + scipy count differently" >&2; exit 1; }
"$python" "$here/compare.py" --check "$dir/duckdb.csv" "$dir/reports/synthetic/summary.json" | sed 's/^/DuckDB + scipy: /'
"$python" "$here/compare_duckdb.py" --agree "$dir/duckdb.csv" "$dir/pandas.csv" | sed 's/^/DuckDB + scipy: /'

# margin run against hyperfine: bench/run.sh, three rounds in turns (it says when
# hyperfine is missing)
echo "margin run, 1000 trials of true, against hyperfine -N --runs 1000 true (bench/run.sh, 3 rounds):"
"$here/run.sh" "$margin" 3
