"""False claims of the Python attribute check on code that runs. A suggestion's span is a line or a few, and a class
whose code outside the span reads an attribute nothing binds is not judged (`python_attributes`), so each line that
holds a claim when the whole file is the span is asked again as the span alone: what is claimed then is what a
suggestion that wrote that line, in an otherwise unchanged file, would lose.

    python docs/results/python-attributes-fp.py FOLDER [FOLDER ...]

Every `*.py` file under the folders, tests, lib2to3 and idlelib left out. Prints each claim (file, attribute, line),
then the counts."""
import pathlib
import sys
import time
from collections import Counter

from dg_lsp.context.bindings.python_attributes import unbound_attributes

count, t0 = Counter(), time.time()
for root in sys.argv[1:]:
    for f in sorted(pathlib.Path(root).rglob("*.py")):
        if "test" in str(f) or "lib2to3" in str(f) or "idlelib" in str(f):
            continue
        try:
            s = f.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        count["files"] += 1
        whole = unbound_attributes(s, 0, len(s))
        if not whole:
            continue
        count["files with a claim on the whole file"] += 1
        lines = s.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        hit = False
        for i in sorted({s.count("\n", 0, at) for _, at in whole}):
            count["lines asked alone"] += 1
            for name, _ in unbound_attributes(s, starts[i], starts[i] + len(lines[i])):
                hit = True
                count["claims"] += 1
                print(f, name, lines[i].strip()[:90])
        count["files with a claim"] += hit
print(dict(count), f"{time.time() - t0:.0f} s")
