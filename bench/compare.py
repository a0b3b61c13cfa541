"""What a pandas + scipy user would write to get margin's statistics from a CSV of trials.

bench/compare.sh times this script against `margin report` on the same values (the CSV
that examples/synthetic_store.rs writes beside its store). Per cell and metric: n, mean,
sd and the t-interval of the mean after margin's default outlier rule (the studentized
deviation at a 1 % rate, set_aside below), median, min, max, MAD and the values the
modified z-score labels (0.6745 |x - median| / MAD > 3.5); per comparison (each variant against
v00 within each block size): the ratio of the means with Fieller's interval at Welch's
degrees of freedom, Welch's t-test, and the p-values Holm-adjusted across all of them
(docs/statistics.md). A metric named in --harmonic (a rate over a fixed amount of work,
as dd's throughput) is summarised by its harmonic mean: everything is computed on the
reciprocals and transformed back, as margin does.

usage: python compare.py DATA.csv [--harmonic NAME]... [--out RESULTS.csv]
       python compare.py --check RESULTS.csv summary.json

--check compares the results with margin's summary.json (untimed): the largest relative
difference of the ratios, their interval ends and the adjusted p-values.
"""

import sys

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
CUTOFF = 3.5
RATE = 0.01
KEYS = ["blocks", "variant"]
BASELINE = "v00"


def holm(p):
    """Holm's step-down adjustment of an array of p-values (NaN stays NaN)."""
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    q = p[ok]
    order = np.argsort(q, kind="stable")
    m = len(q)
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * q[order]))
    back = np.empty_like(adjusted)
    back[order] = adjusted
    out[ok] = back
    return out


def set_aside(codes, y):
    """margin's default outlier rule (docs/statistics.md, Outliers): within each cell, the
    value farthest from the mean of those left goes when its externally studentized
    deviation exceeds t(n - 2) at 1 - RATE / (2n), repeated while at most a fifth of the
    cell (from 5 values) has gone. Returns the mask of the values kept."""
    kept = np.ones(len(y), dtype=bool)
    groups = codes.max() + 1
    n0 = np.bincount(codes, minlength=groups)
    allowed = np.where(n0 >= 5, np.floor(n0 * 0.2), 0)
    gone = np.zeros(groups)
    active = allowed > 0
    index = np.arange(len(y))
    while active.any():
        live = kept & active[codes]
        n = np.bincount(codes[live], minlength=groups).astype(float)
        mean = np.bincount(codes[live], y[live], minlength=groups) / np.maximum(n, 1)
        d = np.where(live, y - mean[codes], 0.0)
        ss = np.bincount(codes, np.where(live, d * d, 0.0), minlength=groups)
        # the most extreme value left in each cell; ties: the earlier trial
        frame = pd.DataFrame({"g": codes[live], "dist": np.abs(d[live]), "i": index[live]})
        worst = frame.sort_values(["g", "dist", "i"], ascending=[True, False, True]).drop_duplicates("g")
        g, k = worst["g"].to_numpy(), worst["i"].to_numpy()
        ng, dk = n[g], d[k]
        others = ss[g] - ng / (ng - 1) * dk * dk
        spread = others > ss[g] * 1e-12
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.abs(ng / (ng - 1) * dk) / np.sqrt(others / (ng - 2) * (1 + 1 / (ng - 1)))
            cutoff = stats.t.ppf(1 - RATE / (2 * ng), ng - 2)
        out = spread & (ng >= 3) & (score > cutoff)
        kept[k[out]] = False
        gone[g[out]] += 1
        active[:] = False
        active[g[out]] = gone[g[out]] < allowed[g[out]]
    return kept


def prepare(data, metric, harmonic):
    """The analysis scale of one metric (reciprocals of a harmonic one), its cells, and
    which values the outlier rule keeps."""
    y = (1.0 / data[metric] if harmonic else data[metric]).to_numpy()
    codes = data.groupby(KEYS, sort=False).ngroup().to_numpy()
    return data[KEYS].assign(y=y, kept=set_aside(codes, y))


def cells(frame, harmonic):
    """Per-cell statistics of one metric: n, mean, sd and the t-interval of the values
    kept; median, min, max and the MAD labels of them all."""
    everything = frame.groupby(KEYS, sort=False)["y"]
    table = frame[frame["kept"]].groupby(KEYS, sort=False)["y"].agg(n="count", mean="mean", sd="std")
    spread = everything.agg(median="median", min="min", max="max")
    table = table.join(spread)
    # MAD labels: the modified z-score of every value against its cell's median
    deviation = (frame["y"] - everything.transform("median")).abs()
    by_cell = deviation.groupby([frame[k] for k in KEYS], sort=False)
    mad = by_cell.transform("median")
    labelled = (mad > 0) & (0.6745 * deviation / mad.where(mad > 0) > CUTOFF)
    table["mad"] = by_cell.median()
    # the values listed as outliers: set aside, or labelled
    listed = labelled | ~frame["kept"]
    table["listed"] = listed.groupby([frame[k] for k in KEYS], sort=False).sum()
    table["set_aside"] = (~frame["kept"]).groupby([frame[k] for k in KEYS], sort=False).sum()
    t = stats.t.ppf(0.5 + CONFIDENCE / 2, table["n"] - 1)
    h = t * table["sd"] / np.sqrt(table["n"])
    table["ci_low"], table["ci_high"] = table["mean"] - h, table["mean"] + h
    if harmonic:
        # back from the reciprocals: the harmonic mean, its interval turned around
        table["mean"], table["median"] = 1.0 / table["mean"], 1.0 / table["median"]
        table["min"], table["max"] = 1.0 / table["max"], 1.0 / table["min"]
        low = 1.0 / table["ci_high"]
        high = (1.0 / table["ci_low"]).where(table["ci_low"] > 0)
        table["ci_low"], table["ci_high"] = low, high
    return table.reset_index()


def fieller_welch(a, b, na, nb, var_a, var_b, harmonic):
    """Arrays of each pair's baseline and variant means, counts and variances (numpy, on the
    analysis scale) into the ratio b / a, Fieller's interval for it at Welch-Satterthwaite's
    degrees of freedom, and Welch's two-sided p; back through the reciprocals for a harmonic
    metric. compare.py's and compare_duckdb.py's inference, one copy."""
    na, nb = np.asarray(na, dtype=float), np.asarray(nb, dtype=float)
    va, vb = var_a / na, var_b / nb
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = b / a
        nu = (vb + theta**2 * va) ** 2 / (vb**2 / (nb - 1) + theta**4 * va**2 / (na - 1))
        t = stats.t.ppf(0.5 + CONFIDENCE / 2, nu)
        d = a**2 - t**2 * va
        root = np.sqrt(np.maximum(a**2 * b**2 - d * (b**2 - t**2 * vb), 0.0))
        bounded = d > 0
        low = np.where(bounded, (a * b - root) / d, np.nan)
        high = np.where(bounded, (a * b + root) / d, np.nan)
        se = np.sqrt(va + vb)
        welch_df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
        p = 2 * stats.t.sf(np.abs(b - a) / se, welch_df)
        if harmonic:
            theta, low, high = 1.0 / theta, 1.0 / high, 1.0 / low
    return theta, low, high, p


def comparisons(frame, metric, harmonic):
    """Every variant against the baseline within each block size, on the values kept."""
    g = frame[frame["kept"]].groupby(KEYS, sort=False)["y"].agg(n="count", mean="mean", var="var").reset_index()
    base = g[g["variant"] == BASELINE].drop(columns="variant")
    pairs = g[g["variant"] != BASELINE].merge(base, on="blocks", suffixes=("_b", "_a"))
    theta, low, high, p = fieller_welch(
        pairs["mean_a"].to_numpy(),
        pairs["mean_b"].to_numpy(),
        pairs["n_a"].to_numpy(),
        pairs["n_b"].to_numpy(),
        pairs["var_a"].to_numpy(),
        pairs["var_b"].to_numpy(),
        harmonic,
    )
    return pd.DataFrame(
        {
            "blocks": pairs["blocks"],
            "variant": pairs["variant"],
            "metric": metric,
            "ratio": theta,
            "ci_low": low,
            "ci_high": high,
            "p": p,
        }
    )


def analyse(path, harmonic, out):
    data = pd.read_csv(path, dtype={"blocks": str, "variant": str})
    metrics = [c for c in data.columns if c not in [*KEYS, "round"]]
    per_cell, compared = [], []
    for metric in metrics:
        frame = prepare(data, metric, metric in harmonic)
        per_cell.append(cells(frame, metric in harmonic).assign(metric=metric))
        compared.append(comparisons(frame, metric, metric in harmonic))
    table = pd.concat(per_cell, ignore_index=True)
    compared = pd.concat(compared, ignore_index=True)
    compared["p_holm"] = holm(compared["p"].to_numpy())
    print(
        f"{len(data)} trials, {len(table)} cell statistics ({int(table['set_aside'].sum())} values set aside, "
        f"{int(table['listed'].sum())} listed as outliers), {len(compared)} comparisons, "
        f"{int((compared['p_holm'] < 1 - CONFIDENCE).sum())} with Holm-adjusted p < {1 - CONFIDENCE:.2f}"
    )
    if out:
        compared.to_csv(out, index=False)


def check(results, summary):
    """The largest relative difference between these results and margin's summary.json."""
    import json

    with open(summary) as f:
        margin = json.load(f)
    ours = pd.read_csv(results, dtype={"blocks": str, "variant": str})
    rows = [
        {
            "blocks": c["context"].get("blocks"),
            "variant": c["level"],
            "metric": c["metric"],
            "ratio_m": c["ratio"],
            "ci_low_m": c["ci_low"],
            "ci_high_m": c["ci_high"],
            "p_holm_m": c["p_adjusted"],
        }
        for c in margin["comparisons"]
    ]
    both = ours.merge(pd.DataFrame(rows), on=["blocks", "variant", "metric"])
    if len(both) != len(ours) or len(both) != len(rows):
        sys.exit(f"compare.py: {len(ours)} comparisons here, {len(rows)} in margin's summary, {len(both)} in both")
    worst = {}
    for column in ["ratio", "ci_low", "ci_high", "p_holm"]:
        x, m = both[column].astype(float), both[column + "_m"].astype(float)
        scale = np.maximum(np.abs(x), np.abs(m)).where(lambda s: s > 1e-300, 1.0)
        relative = ((x - m).abs() / scale).fillna(0.0)
        # a number on one side and none on the other is a disagreement
        worst[column] = float(relative.where(x.isna() == m.isna(), np.inf).max())
    print(
        f"agreement with margin's summary.json over {len(both)} comparisons, largest relative difference: "
        + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    )
    if max(worst.values()) > 1e-6:
        sys.exit("compare.py: the two disagree beyond 1e-6: they do not compute the same statistics")


def arguments(argv, usage):
    """CSV [--harmonic METRIC]... [--out RESULTS.csv] (compare.py's and compare_duckdb.py's):
    the harmonic metrics, the results' path or None, the CSV's path; `usage` on a bad one."""
    harmonic, out, path = set(), None, None
    it = iter(argv)
    for arg in it:
        if arg == "--harmonic":
            harmonic.add(next(it, None) or sys.exit(usage))
        elif arg == "--out":
            out = next(it, None) or sys.exit(usage)
        elif path is None:
            path = arg
        else:
            sys.exit(usage)
    if path is None:
        sys.exit(usage)
    return harmonic, out, path


def main(argv):
    if len(argv) == 3 and argv[0] == "--check":
        return check(argv[1], argv[2])
    harmonic, out, path = arguments(argv, __doc__)
    analyse(path, harmonic, out)


if __name__ == "__main__":
    main(sys.argv[1:])
