#!/usr/bin/env python3
"""Reference values for pooling an effect over contexts (crates/stats/src/pool.rs), in plain Python.

Run from this directory:  python3 answers.py  (writes answers.json next to it).

Independent of the Rust code and of any library: the formulas of docs/statistics.md
(Effects across the matrix) written out, with this file's own regularised incomplete beta
function (Lentz's continued fraction, Numerical Recipes §6.4) for Student's t quantile
(by bisection of its distribution function) and for the tail of Fisher's F.
"""

import json
import math
from pathlib import Path


def betacf(a, b, x):
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def betainc(a, b, x):
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * betacf(a, b, x) / a
    return 1.0 - front * betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    low, high = 0.0, 1e6
    for _ in range(300):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def gammainc_upper(a, x):
    """The regularised upper incomplete gamma function Q(a, x) (Numerical Recipes §6.2)."""
    if x <= 0.0:
        return 1.0
    lead = math.exp(-x + a * math.log(x) - math.lgamma(a))
    if x < a + 1.0:
        term = total = 1.0 / a
        ap = a
        for _ in range(100000):
            ap += 1.0
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-17:
                break
        return 1.0 - total * lead
    tiny = 1e-300
    b = x + 1.0 - a
    c, d = 1.0 / tiny, 1.0 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = b + an / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return lead * h


def normal_quantile(p):
    """By bisection of Φ(z) = erfc(−z/√2)/2."""
    low, high = -40.0, 40.0
    for _ in range(300):
        mid = (low + high) / 2.0
        if 0.5 * math.erfc(-mid / math.sqrt(2.0)) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


def f_sf(f, d1, d2):
    return betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def pool(contexts, confidence=0.95):
    k = len(contexts)
    y = [c[0] for c in contexts]
    v = [c[1] for c in contexts]
    nu = [c[2] for c in contexts]
    per = [c[3] for c in contexts]
    w = [1.0 / x for x in v]
    W = sum(w)
    ybar = sum(wi * yi for wi, yi in zip(w, y)) / W
    q = sum(wi * (yi - ybar) ** 2 for wi, yi in zip(w, y))
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    tau2 = max(0.0, (q - (k - 1)) / (W - sum(wi * wi for wi in w) / W))
    t = t_quantile(1.0 - (1.0 - confidence) / 2.0, k - 1)

    def hartung_knapp(weights):
        total = sum(weights)
        centre = sum(wi * yi for wi, yi in zip(weights, y)) / total
        se = math.sqrt(sum(wi * (yi - centre) ** 2 for wi, yi in zip(weights, y)) / ((k - 1) * total))
        return centre, math.exp(centre - t * se), math.exp(centre + t * se)

    ys, low, high = hartung_knapp([1.0 / c for c in per])
    _, own_low, own_high = hartung_knapp([1.0 / (vi + tau2) for vi in v])
    a = sum((1.0 - wi / W) ** 2 / n for wi, n in zip(w, nu))
    f = (q / (k - 1)) / (1.0 + 2.0 * (k - 2) / (k * k - 1) * a)
    df2 = (k * k - 1) / (3.0 * a)
    z = normal_quantile(1.0 - (1.0 - confidence) / 2.0)
    return {
        "q_p": gammainc_upper((k - 1) / 2.0, q / 2.0),
        "fixed_low": math.exp(ybar - z / math.sqrt(W)),
        "fixed_high": math.exp(ybar + z / math.sqrt(W)),
        "ratio": math.exp(ys),
        "low": low,
        "high": high,
        "own_low": own_low,
        "own_high": own_high,
        "q": q,
        "i2": i2,
        "tau2": tau2,
        "f": f,
        "df2": df2,
        "p_differs": f_sf(f, k - 1, df2),
    }


CASES = [
    # (log-ratio, its variance, the variance's df, 1/n_A + 1/n_B or 1/k) per context
    ("two contexts alike", [(0.030, 0.0004, 7.6, 0.4), (0.034, 0.0005, 8.0, 0.4)]),
    ("three block sizes, one apart", [(0.031, 0.0001, 8.0, 0.4), (0.012, 0.00012, 7.2, 0.4), (0.090, 0.0002, 6.5, 0.4)]),
    ("eight contexts, unequal trials", [(0.01 * i, 0.0003 + 0.00005 * i, 4.0 + i, 1.0 / (3 + i) + 0.2) for i in range(8)]),
    ("four paired contexts", [(-0.2, 0.004, 4.0, 0.2), (-0.15, 0.002, 9.3, 0.1), (-0.31, 0.01, 2.0, 1.0 / 3), (-0.22, 0.003, 5.5, 1.0 / 6.5)]),
]

if __name__ == "__main__":
    out = {"pool": [{"name": name, "contexts": c, "expected": pool(c)} for name, c in CASES]}
    # a check of the incomplete beta itself against values every table gives
    assert abs(t_quantile(0.975, 4) - 2.7764451051977987) < 1e-12
    assert abs(f_sf(4.102821015130399, 2, 10) - 0.05) < 1e-12
    assert abs(gammainc_upper(3.5, 14.067140449340169 / 2.0) - 0.05) < 1e-12  # χ²(7) at 0.95
    assert abs(normal_quantile(0.975) - 1.959963984540054) < 1e-12
    path = Path(__file__).with_name("answers.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
