"""False claims of the Python name check on code that runs: `unbound_reads` over every whole file under the given
folders (tests left out), each name it finds set beside pyflakes' UndefinedName and UndefinedLocal for that file.

    python docs/results/python-names-fp.py FOLDER [FOLDER ...] [--all]

Prints the names pyflakes does not report (with --all, every name, up to 40), then the counts."""
import ast
import pathlib
import sys
import time
import warnings
from collections import Counter

from pyflakes.checker import Checker

from dg_lsp.context.bindings.python import unbound_reads

count, shown, t0 = Counter(), 0, time.time()
show_all = "--all" in sys.argv
for root in [a for a in sys.argv[1:] if a != "--all"]:
    for f in sorted(pathlib.Path(root).rglob("*.py")):
        if "test" in str(f) or "lib2to3" in str(f) or "idlelib" in str(f):
            continue
        try:
            s = f.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        count["files"] += 1
        reads = unbound_reads(s, 0, len(s))
        if not reads:
            continue
        count["files with reads"] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            flagged = {m.message_args[0] for m in Checker(ast.parse(s)).messages
                       if type(m).__name__ in ("UndefinedName", "UndefinedLocal")}
        for name in {n for n, _ in reads}:
            count["pyflakes agrees" if name in flagged else "pyflakes does not"] += 1
            if (name not in flagged or show_all) and shown < 40:
                shown += 1
                at = [o for n, o in reads if n == name][0]
                print(f, name, repr(s[s.rfind("\n", 0, at) + 1:s.find("\n", at)][:100]))
print(dict(count), f"{time.time() - t0:.0f} s")
