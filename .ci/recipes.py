"""shellcheck over the justfile's recipes (`just ci`, .ci/run): each recipe's body as just
runs it, a shebang recipe as its script, a line recipe's lines under the justfile's
`bash -euo pipefail`, with every `{{ … }}` given as a plain word (just fills it in before
bash reads it). Prints each finding with its recipe; exits 1 if there is one.

usage: python3 .ci/recipes.py   (from the repository's root; just and shellcheck on PATH)
"""

import json
import subprocess
import sys

# what stands for an interpolation: a word needing no quotes, as the values just fills in
# here are (a profile, a name, a path, arguments meant to be split)
VALUE = "just_value"

dump = json.loads(subprocess.run(["just", "--dump", "--dump-format", "json"], check=True,
                                 capture_output=True, text=True).stdout)
found = 0
for name, recipe in sorted(dump["recipes"].items()):
    lines = []
    for fragments in recipe["body"]:
        text = "".join(f if isinstance(f, str) else VALUE for f in fragments)
        lines.append(text)
    if not lines:
        continue
    if recipe["shebang"]:
        if not lines[0].endswith("bash"):
            continue
        script = "\n".join(lines) + "\n"
    else:
        # a line recipe: each line run by `bash -euo pipefail -c`, after just takes its
        # `@` or `-` off
        script = "#!/usr/bin/env bash\nset -euo pipefail\n" + "\n".join(
            line.lstrip("@-") for line in lines) + "\n"
    # SC2194, a constant word in `case`: what `case "{{ name }}"` is once just filled it in
    out = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "--exclude=SC2194", "-"],
                         input=script, capture_output=True, text=True)
    for line in out.stdout.splitlines():
        print(f"justfile, recipe {name}: {line.removeprefix('-:')}")
        found += 1
sys.exit(1 if found else 0)
