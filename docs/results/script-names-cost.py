"""The JavaScript and TypeScript name check's cost per suggestion: a new line `const x = madeUpName(1);` (or the line
given, with `madeUpName` in it: `python script-names-cost.py "return madeUpName(a);"`) after a one-line statement
from the middle of real files on,
through completion.unbound.unbound_names (the whole document parsed and walked); median of 7.

    python docs/results/script-names-cost.py [LINE] [--files FILE ...]

By default the files are npm's and zod's largest here (paths below); `--files` names others."""
import statistics
import sys
import time
from pathlib import Path

from dg_lsp.completion.unbound import unbound_names
from dg_lsp.context.languages import language_for_path

ZOD = Path("/root/.cache/dg-lsp/vscode-e2e/node_modules/code-server/lib/vscode/node_modules/zod/src")
FILES = [Path("/usr/lib/node_modules/npm/lib/commands/ls.js"), Path("/usr/lib/node_modules/npm/lib/npm.js"),
         ZOD / "v4/core/api.ts", ZOD / "v3/types.ts"]
args = sys.argv[1:]
files = [Path(f) for f in args[args.index("--files") + 1:]] if "--files" in args else FILES
line = args[0] if args and args[0] != "--files" else "const x = madeUpName(1);"
for path in files:
    src = path.read_text(encoding="utf-8")
    lines = src.split("\n")
    language = language_for_path(str(path))
    # a statement line ending in `;` or `)` in a block, the first from the middle of the file on after which the
    # new line leaves the file parsing clean
    rows = [i for i, text in enumerate(lines) if text.startswith("    ") and text.rstrip().endswith((";", ")"))]
    for row in rows[len(rows) // 2:]:
        indent = lines[row][:len(lines[row]) - len(lines[row].lstrip())]
        at = (row, len(lines[row]))
        if unbound_names(src, at, at, "\n" + indent + line, language):
            break
    times = []
    for k in range(7):  # a name of its own each time: no cached parse
        t = time.perf_counter()
        found = unbound_names(src, at, at, "\n" + indent + line.replace("madeUpName", f"madeUpName{k}"), language)
        times.append(time.perf_counter() - t)
    print(f"{path.name}: {len(lines)} lines, {len(src) // 1000} kB, line {row + 2}: "
          f"{statistics.median(times) * 1000:.1f} ms, found {found}")
