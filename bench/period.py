"""The trial loop's period of a margin run: seconds from its first trial's start to its
last one's (`started_at` in the trial log), over the trials between. Start-up and the
closing report are left out. Used by bench/run.sh and bench/loop.sh.

usage: python3 bench/period.py path/to/runs.ndjson
"""
import datetime
import json
import sys

starts = []
with open(sys.argv[1]) as log:
    for text in log:
        line = text.strip("\0\n")  # the zeros a run lays ahead of its records
        if line:
            whole, _, fraction = json.loads(line)["started_at"].rstrip("Z").partition(".")
            utc = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
            starts.append(utc.timestamp() + float("0." + (fraction or "0")))
print((starts[-1] - starts[0]) / (len(starts) - 1))
