"""What the lab scripts check in a store (docs/lab.md): its logs read, the boots a
plan verified, and whether trials on one machine overlapped. Imported by the scripts'
checks (`sys.path.insert(0, "lab")`, from the scratch copy they run in), and runnable
against a committed store: `python3 lab/store.py boots reports/lab-boots kernel 3`."""

import json
import sys
from datetime import datetime
from itertools import pairwise


def lines(store, name):
    """The records of one of the store's logs (runs.ndjson, boots.ndjson, …)."""
    with open(f"{store}/{name}") as log:
        return [json.loads(line) for line in log if line.strip()]


def summary(store):
    return json.load(open(f"{store}/summary.json"))


def t(s):
    """An RFC 3339 time (up to 9 decimals, Z) as seconds since the epoch."""
    base, _, frac = s.rstrip("Z").partition(".")
    return datetime.fromisoformat(base).timestamp() + float("0." + (frac or "0"))


def verified_boots(store, factor, block, count=None, retried=False):
    """The boots of `store` verified, in order, once checked: none rejected or lost (with
    `retried`, tries that failed before one verified are allowed), each
    block of `block` boots booting every level of `factor` once, each level detected the
    one wanted, every boot_id new; `count` of them when given."""
    log = lines(store, "boots.ndjson")
    bad = [r for r in log if r["event"] in ("rejected", "lost")]
    assert retried or not bad, f"failed boots: {bad}"
    verified = [r for r in log if r["event"] == "verified"]
    levels = [r["wanted"][factor] for r in verified]
    assert count is None or len(levels) == count, f"{len(levels)} verified boots, wanted {count}: {levels}"
    assert levels and len(levels) % block == 0, f"{len(levels)} verified boots: not whole blocks: {levels}"
    every = sorted(set(levels))
    for i in range(0, len(levels), block):
        assert sorted(levels[i:i + block]) == every, f"an unbalanced block: {levels}"
    for r in verified:
        assert r["detected"] == r["wanted"], f"boot {r['boot']}: detected {r['detected']}, wanted {r['wanted']}"
    ids = [r["boot_id"] for r in verified]
    assert len(set(ids)) == len(ids), f"boot_ids repeat: {ids}"
    return verified


def measured(store):
    """The trials that measured: ok, not warm-ups."""
    return [x for x in lines(store, "runs.ndjson") if x.get("status") == "ok" and not x.get("warmup")]


def per_level(trials, factor):
    """How many of `trials` each level of `factor` has."""
    per = {}
    for x in trials:
        per[x["levels"][factor]] = per.get(x["levels"][factor], 0) + 1
    return per


def one_at_a_time(trials):
    """The trials' intervals (start, start + wall time, host) in order, once checked that
    none overlaps the next: one trial at a time on their shared machine."""
    iv = sorted((t(x["started_at"]), t(x["started_at"]) + x["wall_time"], x["host"]) for x in trials)
    overlaps = [(a, b) for a, b in pairwise(iv) if b[0] < a[1]]
    assert not overlaps, f"trials overlap: {overlaps}"
    return iv


def smallest_gap(iv):
    return min(b[0] - a[1] for a, b in pairwise(iv))


if __name__ == "__main__":
    # python3 lab/store.py boots STORE FACTOR BLOCK: the boot checks of a store
    what, store, factor, block = sys.argv[1:5]
    assert what == "boots", "usage: lab/store.py boots STORE FACTOR BLOCK"
    boots = verified_boots(store, factor, int(block))
    print(f"{len(boots)} boots verified: " + ", ".join(r["wanted"][factor] for r in boots))
    print(f"trials per level: {per_level(measured(store), factor)}")
