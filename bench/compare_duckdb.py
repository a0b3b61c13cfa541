"""What a DuckDB + scipy user would write to get margin's statistics from a CSV of trials.

bench/compare.sh times this script beside bench/compare.py (pandas + scipy) against
`margin report` on the same values. It computes what compare.py computes, split the way a
data engineer would split it: DuckDB reads the CSV and does every group-by and per-cell
aggregate, numpy and scipy the inference on the per-cell arrays it returns.

In DuckDB: the cells (in the order they first appear, as pandas' groupby(sort=False));
the analysis scale (reciprocals of a metric named in --harmonic); in each round of
margin's default outlier rule, each cell's n, mean, sum of squared deviations and its
value farthest from the mean (ties: the earlier trial), and the UPDATE that sets the
rule's values aside; then per cell n, mean, sd and variance of the values kept, median,
MAD (median absolute deviation), min, max, the number set aside and the number listed
(set aside, or labelled by the modified z-score 0.6745 |x - median| / MAD > 3.5); and
each variant paired with v00 within its block size.
In numpy and scipy, as compare.py does: the rule's studentized score against t(n - 2)
at 1 - RATE / (2n), the t-interval of each cell's mean, Fieller's interval of each
ratio at Welch's degrees of freedom, Welch's t-test, the way back from the reciprocals,
and Holm's adjustment across all comparisons (compare.holm itself, with compare.py's
constants).

usage: python compare_duckdb.py DATA.csv [--harmonic NAME]... [--out RESULTS.csv]
       python compare_duckdb.py --agree RESULTS.csv OTHER.csv

--out writes the comparisons in compare.py's format (blocks, variant, metric, ratio,
ci_low, ci_high, p, p_holm), so `compare.py --check RESULTS.csv summary.json` checks them
against margin's. --agree (untimed) compares two such files, this script's and
compare.py's: the largest relative difference of each column, and fails beyond 1e-6.
"""

import csv
import importlib
import sys
import types

import duckdb
import numpy as np
from scipy import stats


def _compare():
    """bench/compare.py, whose constants and holm() are used here as they are. It imports
    pandas, which nothing here uses: while it is imported, a stand-in that imports pandas
    on first use is put in sys.modules, so that importing compare.py does not load pandas
    (0.4 s and 30 MB a DuckDB user would not spend)."""
    if "pandas" in sys.modules:
        import compare

        return compare

    class Deferred(types.ModuleType):
        def __getattr__(self, name):
            return getattr(importlib.import_module("pandas"), name)

    sys.modules["pandas"] = Deferred("pandas")
    try:
        import compare
    finally:
        del sys.modules["pandas"]
    return compare


compare = _compare()
CONFIDENCE, CUTOFF, RATE, BASELINE = compare.CONFIDENCE, compare.CUTOFF, compare.RATE, compare.BASELINE
BLOCKS, VARIANT = compare.KEYS


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def literal(text):
    return "'" + text.replace("'", "''") + "'"


def fetch(con, sql, *parameters):
    """A query's columns as numpy arrays, NULL as NaN in the numeric ones."""
    columns = con.execute(sql, list(parameters)).fetchnumpy()
    return {k: np.ma.filled(v.astype(float), np.nan) if np.ma.isMaskedArray(v) else v for k, v in columns.items()}


def load(con, path):
    """The CSV into DuckDB, its cells numbered in the order they first appear; returns the
    metrics' names and the number of trials."""
    con.execute(
        f"CREATE TABLE trials AS SELECT * FROM read_csv({literal(path)}, header = true, "
        f"types = {{{literal(BLOCKS)}: 'VARCHAR', {literal(VARIANT)}: 'VARCHAR'}})"
    )
    con.execute(
        f"CREATE TABLE cells AS SELECT {ident(BLOCKS)} AS blocks, {ident(VARIANT)} AS variant, count(*) AS n0, "
        f"row_number() OVER (ORDER BY min(rowid)) - 1 AS g FROM trials GROUP BY 1, 2"
    )
    names = [row[0] for row in con.execute("SELECT column_name FROM (DESCRIBE trials)").fetchall()]
    metrics = [c for c in names if c not in (BLOCKS, VARIANT, "round")]
    (trials,) = con.execute("SELECT count(*) FROM trials").fetchone()
    return metrics, trials


def prepare(con, metric, harmonic):
    """Table `a`: each trial's cell, index and value on the analysis scale (reciprocals of
    a harmonic metric), all kept so far."""
    x = f"t.{ident(metric)}::DOUBLE"
    con.execute(
        f"CREATE OR REPLACE TABLE a AS SELECT c.g, t.rowid AS i, {'1 / ' + x if harmonic else x} AS y, true AS kept "
        f"FROM trials t JOIN cells c ON t.{ident(BLOCKS)} = c.blocks AND t.{ident(VARIANT)} = c.variant"
    )


def set_aside(con):
    """margin's default outlier rule, as compare.set_aside: within each cell, the value
    farthest from the mean of those left goes when its externally studentized deviation
    exceeds t(n - 2) at 1 - RATE / (2n), repeated while at most a fifth of the cell (from 5
    values) has gone. DuckDB aggregates each round's cells still at work and sets the values
    aside; scipy decides which go."""
    n0 = fetch(con, "SELECT n0 FROM cells ORDER BY g")["n0"]
    allowed = np.where(n0 >= 5, np.floor(n0 * 0.2), 0)
    gone = np.zeros(len(n0))
    active = np.flatnonzero(allowed > 0)
    while len(active):
        r = fetch(
            con,
            """WITH live AS (SELECT g, i, y FROM a WHERE kept AND g IN (SELECT unnest($1::BIGINT[]))),
            m AS (SELECT g, count(*) AS n, avg(y) AS mean FROM live GROUP BY g),
            d AS (SELECT g, n, i, y - mean AS d FROM live JOIN m USING (g))
            SELECT g, n, sum(d * d) AS ss, arg_max(i, (abs(d), -i)) AS k, arg_max(d, (abs(d), -i)) AS dk
            FROM d GROUP BY g, n""",
            active,
        )
        g, ng, ss, k, dk = r["g"], r["n"].astype(float), r["ss"], r["k"], r["dk"]
        others = ss - ng / (ng - 1) * dk * dk
        spread = others > ss * 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.abs(ng / (ng - 1) * dk) / np.sqrt(others / (ng - 2) * (1 + 1 / (ng - 1)))
            cutoff = stats.t.ppf(1 - RATE / (2 * ng), ng - 2)
        out = spread & (ng >= 3) & (score > cutoff)
        if out.any():
            con.execute("UPDATE a SET kept = false WHERE i IN (SELECT unnest($1::BIGINT[]))", [k[out]])
        gone[g[out]] += 1
        active = g[out][gone[g[out]] < allowed[g[out]]]


def cells(con, harmonic):
    """Per-cell statistics of one metric, as compare.cells: n, mean, sd and the t-interval
    of the values kept; median, min, max and the MAD labels of them all. DuckDB keeps the
    per-cell aggregates as table `s` for the comparisons."""
    con.execute(
        """CREATE OR REPLACE TABLE s AS
        SELECT g, count(*) FILTER (kept) AS n, avg(y) FILTER (kept) AS mean,
               stddev_samp(y) FILTER (kept) AS sd, var_samp(y) FILTER (kept) AS var,
               median(y) AS median, mad(y) AS mad, min(y) AS min, max(y) AS max,
               count(*) FILTER (NOT kept) AS set_aside
        FROM a GROUP BY g"""
    )
    t = fetch(
        con,
        f"""SELECT s.*, l.listed FROM s JOIN (
            SELECT g, count(*) FILTER (NOT kept OR (s.mad > 0 AND 0.6745 * abs(y - s.median) / s.mad > {CUTOFF!r}))
                AS listed
            FROM a JOIN s USING (g) GROUP BY g) l USING (g) ORDER BY g""",
    )
    n = t["n"].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * t["sd"] / np.sqrt(n)
        t["ci_low"], t["ci_high"] = t["mean"] - h, t["mean"] + h
        if harmonic:
            # back from the reciprocals: the harmonic mean, its interval turned around
            t["mean"], t["median"] = 1.0 / t["mean"], 1.0 / t["median"]
            t["min"], t["max"] = 1.0 / t["max"], 1.0 / t["min"]
            low = 1.0 / t["ci_high"]
            high = np.where(t["ci_low"] > 0, 1.0 / t["ci_low"], np.nan)
            t["ci_low"], t["ci_high"] = low, high
    return t


def comparisons(con, metric, harmonic):
    """Every variant against the baseline within each block size, on the values kept, as
    compare.comparisons: DuckDB pairs the cells, numpy and scipy do the rest."""
    pairs = fetch(
        con,
        f"""SELECT cb.blocks, cb.variant, b.n AS n_b, b.mean AS mean_b, b.var AS var_b,
               a.n AS n_a, a.mean AS mean_a, a.var AS var_a
        FROM s b JOIN cells cb USING (g)
        JOIN cells ca ON ca.blocks = cb.blocks AND ca.variant = {literal(BASELINE)}
        JOIN s a ON a.g = ca.g
        WHERE cb.variant <> {literal(BASELINE)} ORDER BY b.g""",
    )
    a = pairs["mean_a"]
    theta, low, high, p = compare.fieller_welch(
        a, pairs["mean_b"], pairs["n_a"], pairs["n_b"], pairs["var_a"], pairs["var_b"], harmonic
    )
    return {
        "blocks": pairs["blocks"],
        "variant": pairs["variant"],
        "metric": np.full(len(a), metric, dtype=object),
        "ratio": theta,
        "ci_low": low,
        "ci_high": high,
        "p": p,
    }


def write(out, columns):
    """compare.py's output: pandas' to_csv, floats as Python prints them, NaN empty."""
    names = list(columns)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        # numpy's float64 as Python's float (the shortest text that reads back the same)
        values = [columns[k].tolist() for k in names]
        for row in zip(*values, strict=True):
            w.writerow("" if isinstance(v, float) and np.isnan(v) else v for v in row)


def analyse(path, harmonic, out):
    con = duckdb.connect()
    metrics, trials = load(con, path)
    per_cell, compared = [], []
    for metric in metrics:
        prepare(con, metric, metric in harmonic)
        set_aside(con)
        per_cell.append(cells(con, metric in harmonic))
        compared.append(comparisons(con, metric, metric in harmonic))
    compared = {k: np.concatenate([c[k] for c in compared]) for k in compared[0]}
    compared["p_holm"] = compare.holm(compared["p"])
    print(
        f"{trials} trials, {sum(len(t['g']) for t in per_cell)} cell statistics "
        f"({int(sum(t['set_aside'].sum() for t in per_cell))} values set aside, "
        f"{int(sum(t['listed'].sum() for t in per_cell))} listed as outliers), {len(compared['p'])} comparisons, "
        f"{int((compared['p_holm'] < 1 - CONFIDENCE).sum())} with Holm-adjusted p < {1 - CONFIDENCE:.2f}"
    )
    if out:
        write(out, compared)


COLUMNS = ["ratio", "ci_low", "ci_high", "p", "p_holm"]


def agree(ours, theirs):
    """The largest relative difference between two results files, by compare.check's rule."""
    con = duckdb.connect()
    types = ", ".join(f"'{c}': 'VARCHAR'" for c in ["blocks", "variant", "metric"])
    types += "".join(f", '{c}': 'DOUBLE'" for c in COLUMNS)
    sources = [f"read_csv({literal(p)}, header = true, types = {{{types}}})" for p in (ours, theirs)]
    n_ours, n_theirs = (con.execute(f"SELECT count(*) FROM {source}").fetchone()[0] for source in sources)
    both = fetch(
        con,
        f"SELECT {', '.join(f'x.{c} AS {c}, y.{c} AS {c}_y' for c in COLUMNS)} "
        f"FROM {sources[0]} x JOIN {sources[1]} y USING (blocks, variant, metric)",
    )
    n = len(both["ratio"])
    if n != n_ours or n != n_theirs:
        sys.exit(f"compare_duckdb.py: {n_ours} comparisons in {ours}, {n_theirs} in {theirs}, {n} in both")
    worst = {}
    for column in COLUMNS:
        x, y = both[column].astype(float), both[column + "_y"].astype(float)
        scale = np.maximum(np.abs(x), np.abs(y))
        with np.errstate(invalid="ignore"):
            relative = np.abs(x - y) / np.where(scale > 1e-300, scale, 1.0)
        relative = np.where(np.isnan(relative), 0.0, relative)
        # a number on one side and none on the other is a disagreement
        worst[column] = float(np.where(np.isnan(x) == np.isnan(y), relative, np.inf).max(initial=0.0))
    print(
        f"agreement with the results in {theirs.rsplit('/', 1)[-1]} over {n} comparisons, "
        "largest relative difference: " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    )
    if max(worst.values()) > 1e-6:
        sys.exit("compare_duckdb.py: the two disagree beyond 1e-6: they do not compute the same statistics")


def main(argv):
    if len(argv) == 3 and argv[0] == "--agree":
        return agree(argv[1], argv[2])
    harmonic, out, path = compare.arguments(argv, __doc__)
    analyse(path, harmonic, out)


if __name__ == "__main__":
    main(sys.argv[1:])
