"""pandas (through pyarrow) and DuckDB read a store's columns, runs.columns/, as a user
does (docs/store.md, "Reading the columns with pandas or DuckDB"), and find in them what
the trial log holds, record by record: every trial with its id, cell, host, session,
status, warm-up, repetition, round, position, start and wall time; every metric value with
its unit; every secondary metric of telemetry. DuckDB also computes each cell's mean,
which must be the one computed here from the log.

usage: python columns.py STORE   (a store folder: runs.ndjson and runs.columns/ in it)
"""

import contextlib
import json
import math
import os
import sys
from datetime import datetime, timezone

import duckdb
import pandas as pd

store = sys.argv[1]
columns = os.path.join(store, "runs.columns")
with open(os.path.join(store, "runs.ndjson"), encoding="utf-8") as log:
    # the zeros a run lays ahead, and a torn line, are no records
    records = []
    for text in log:
        line = text.strip("\0\n")
        if not line:
            continue
        with contextlib.suppress(json.JSONDecodeError):
            records.append(json.loads(line))
assert records, "no records in the log"

# pandas: each table is a Parquet dataset (a folder of parts)
trials = pd.read_parquet(os.path.join(columns, "trials"))
metrics = pd.read_parquet(os.path.join(columns, "metrics"))
telemetry = pd.read_parquet(os.path.join(columns, "telemetry"))
assert len(trials) == len(records), f"{len(trials)} trials in the columns, {len(records)} records"
# the ids are a table of their own, joined on the trial's number
trials = trials.merge(pd.read_parquet(os.path.join(columns, "ids")), on="trial", validate="one_to_one")
trials = trials.sort_values("trial").reset_index(drop=True)
assert list(trials["trial"]) == list(range(len(records))), "trials numbered in log order"

def started(r):
    if r.get("started_at") is None:
        return None
    return datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")).astimezone(timezone.utc)

for r, t in zip(records, trials.itertuples(index=False), strict=True):
    got = (t.id, str(t.cell), str(t.host), str(t.session), str(t.status), bool(t.warmup),
           int(t.repetition), int(t.round), int(t.position), float(t.wall_time))
    want = (r["trial"], r["cell"], r["host"], r["session"], r["status"], r["warmup"],
            r["repetition"], r["round"], r["position"], float(r["wall_time"]))
    assert got == want, f"trial {t.trial}: {got} != {want}"
    s = started(r)
    if s is None:
        assert pd.isna(t.started_at), f"trial {t.trial}: a start where the record has none"
    else:
        delta = abs((t.started_at.to_pydatetime() - s).total_seconds())
        assert delta < 1e-6, f"trial {t.trial}: started {t.started_at} != {s}"

ids = dict(zip(trials["trial"], trials["id"], strict=True))
got = {(ids[m.trial], str(m.metric)): (m.value, str(m.unit)) for m in metrics.itertuples(index=False)}
want = {
    (r["trial"], k): (v, r.get("metric_info", {}).get(k, {}).get("unit", ""))
    for r in records for k, v in r["metrics"].items()
}
assert got == want, f"metrics differ: {len(got)} in the columns, {len(want)} in the log"
got = {(ids[v.trial], str(v.name)): v.value for v in telemetry.itertuples(index=False)}
want = {
    (r["trial"], k): v
    for r in records if r.get("telemetry") for k, v in r["telemetry"].get("metrics", {}).items()
}
assert got == want, f"telemetry differs: {len(got)} in the columns, {len(want)} in the log"

# DuckDB: the parts by a glob, joined on the trial's number
query = f"""
    select t.cell, m.metric, count(*) as n, avg(m.value) as mean
    from read_parquet('{columns}/metrics/*.parquet') m
    join read_parquet('{columns}/trials/*.parquet') t using (trial)
    where t.status = 'ok' and not t.warmup
    group by all order by all
"""
rows = duckdb.connect().execute(query).fetchall()
sums = {}
for r in records:
    if r["status"] != "ok" or r["warmup"]:
        continue
    for k, v in r["metrics"].items():
        n, total = sums.get((r["cell"], k), (0, 0.0))
        sums[(r["cell"], k)] = (n + 1, total + v)
want = sorted((cell, metric, n, total / n) for (cell, metric), (n, total) in sums.items())
assert len(rows) == len(want), f"{len(rows)} cells × metrics in DuckDB, {len(want)} in the log"
for got_row, want_row in zip(rows, want, strict=True):
    assert got_row[:3] == want_row[:3], f"{got_row} != {want_row}"
    assert math.isclose(got_row[3], want_row[3], rel_tol=1e-12), f"{got_row} != {want_row}"

parts = len(os.listdir(os.path.join(columns, "trials")))
print(f"pandas {pd.__version__} and duckdb {duckdb.__version__} read {len(records)} trials, "
      f"{len(metrics)} metric values and {len(telemetry)} secondary values in {parts} part(s); "
      f"{len(rows)} cell means agree with the log's")
