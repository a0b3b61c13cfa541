#!/usr/bin/env python3
"""Reference values for margin's regime test (crates/stats/src/regimes.rs), from numpy.

Run from this directory:  python3 regimes.py  (writes regimes.json next to it; a minute).

The rule (docs/statistics.md, Two regimes in a cell), written out here independently of
the Rust code: on the logs of the values (the values themselves when one is not positive),
sorted, the best split into a lower and an upper group of at least 2 values each is the
one that leaves the least sum of squares within the groups; its share of the total sum of
squares is the split ratio W (1 − the between-group share). Values that tie are
quantised: n·q²/12 (Sheppard's correction, q the smallest step between distinct values)
is added to both sums. A cell is two regimes when W is below the critical value of its n.

The critical values are simulated: for each n, the 0.8 % quantile of W under each
unimodal shape — normal (CV 5 % and 20 %), log-normal, Student's t₃ (CV 5 %), uniform
(flat: the hardest, whose halves leave only a quarter of the spread within them) — and the
smallest of them is the critical value, so that no shape raises a false alarm in more than
about 0.8 % of cells (the goal is 1 %; margin calibrate measures it on draws of its own).
"""

import json
from pathlib import Path

import numpy as np

QUANTILE = 0.008
DRAWS = 200_000
CHUNK = 20_000
NS = list(range(5, 31)) + [40, 50, 60, 80, 100, 150, 200]


def scale(x):
    """The logs when every value is positive, else the values (row by row)."""
    x = np.asarray(x, dtype=float)
    positive = (x > 0).all(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(positive, np.log(np.where(x > 0, x, 1.0)), x)


def split_ratio(rows):
    """W and the size of the lower group of the best split, per row of `rows`."""
    y = np.sort(scale(rows), axis=-1)
    n = y.shape[-1]
    steps = np.diff(y, axis=-1)
    tied = (steps == 0).any(axis=-1)
    positive_steps = np.where(steps > 0, steps, np.inf)
    q = np.where(tied, positive_steps.min(axis=-1), 0.0)
    q = np.where(np.isfinite(q), q, 0.0)
    c = n * q * q / 12.0
    centred = y - y.mean(axis=-1, keepdims=True)
    tss = (centred**2).sum(axis=-1)
    cs = np.cumsum(centred, axis=-1)
    cs2 = np.cumsum(centred**2, axis=-1)
    best = np.full(y.shape[:-1], np.inf)
    at = np.zeros(y.shape[:-1], dtype=int)
    for k in range(2, n - 1):
        s1, q1 = cs[..., k - 1], cs2[..., k - 1]
        s2, q2 = cs[..., -1] - s1, cs2[..., -1] - q1
        wss = (q1 - s1 * s1 / k) + (q2 - s2 * s2 / (n - k))
        w = (wss + c) / (tss + c)
        better = w < best
        best = np.where(better, w, best)
        at = np.where(better, k, at)
    return best, at


def null_draws(shape, n, size, rng):
    if shape == "normal5":
        return 1.0 + 0.05 * rng.standard_normal((size, n))
    if shape == "normal20":
        return 1.0 + 0.20 * rng.standard_normal((size, n))
    if shape == "lognormal":
        return np.exp(0.5 * rng.standard_normal((size, n)))
    if shape == "t3":
        return 1.0 + 0.05 * rng.standard_t(3, (size, n)) / np.sqrt(3.0)
    if shape == "uniform":
        # flat, not peaked: a jitter spread evenly over an interval (CV 5.8 %)
        return 1.0 + 0.1 * rng.uniform(-1.0, 1.0, (size, n))
    raise ValueError(shape)


SHAPES = ["normal5", "normal20", "lognormal", "t3", "uniform"]


def critical_values(rng):
    out = []
    for n in NS:
        quantiles = {}
        for shape in SHAPES:
            w = np.concatenate(
                [split_ratio(null_draws(shape, n, CHUNK, rng))[0] for _ in range(DRAWS // CHUNK)]
            )
            quantiles[shape] = float(np.quantile(w, QUANTILE))
        worst = min(quantiles, key=quantiles.get)
        out.append({"n": n, "critical": round(quantiles[worst], 4), "worst": worst, "quantiles": quantiles})
        print(n, worst, round(quantiles[worst], 4), flush=True)
    return out


# Fixed vectors for the statistic itself.
SAMPLES = {
    "dd_two_regimes": [2950.0, 412.0, 3120.0, 2780.0, 505.0, 3390.0, 2660.0, 331.0, 2890.0, 3010.0,
                       598.0, 2450.0, 3205.0, 2715.0, 388.0, 3480.0, 2990.0, 470.0, 2570.0, 3100.0],
    "sleeps": [0.0112, 0.0514, 0.0109, 0.0111, 0.0508, 0.0113, 0.0521, 0.0110, 0.0107, 0.0512],
    "normal10": [10.2, 9.7, 10.5, 9.9, 10.1, 9.6, 10.3, 10.0, 9.8, 10.4],
    "five": [1.0, 1.1, 1.3, 2.9, 3.0],
    "quantised": [100.0, 101.0, 100.0, 101.0, 100.0, 101.0, 101.0, 100.0],
    "with_negative": [-1.0, 0.5, 0.4, 5.1, 5.3, 4.9, 0.2],
}


def main():
    here = Path(__file__).parent
    samples = {}
    for name, values in SAMPLES.items():
        w, at = split_ratio(np.array([values]))
        samples[name] = {"values": values, "w": float(w[0]), "lower": int(at[0])}
    rng = np.random.default_rng(20261203)
    table = critical_values(rng)
    out = {"quantile": QUANTILE, "draws": DRAWS, "samples": samples, "critical": table}
    (here / "regimes.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
