"""The Python the shell scripts hold in heredocs (`python3 - … <<'PY'` … `PY`), each
written out as a file of its own into DIR, named after its script and the line it starts
on (lab/gang.sh line 33: `lab__gang.sh__33.py`), for ruff to check (.ci/scripts). Only
quoted delimiters: the shell expands nothing in those, so the file is the Python as run.

usage: python3 .ci/heredocs.py DIR SCRIPT…
"""

import pathlib
import re
import sys

OPENING = re.compile(r"\bpython3\b.*<<-?'([A-Za-z_]+)'")

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
for script in sys.argv[2:]:
    lines = pathlib.Path(script).read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = OPENING.search(lines[index])
        index += 1
        if not opening:
            continue
        start, delimiter = index, opening.group(1)
        while index < len(lines) and lines[index].strip() != delimiter:
            index += 1
        body = "\n".join(lines[start:index]) + "\n"
        name = f"{script.replace('/', '__')}__{start + 1}.py"
        (out / name).write_text(body, encoding="utf-8")
