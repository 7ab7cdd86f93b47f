"""False claims of the JavaScript and TypeScript name check on code that runs. A suggestion's span is a line or a
few, and a file whose code outside the span reads a name nothing binds is not judged (`script_names`), so each line
that holds such a read is asked as the span alone: what is claimed then is what a suggestion that wrote that line, in
an otherwise unchanged file, would lose.

    python docs/results/script-names-fp.py FOLDER [FOLDER ...]

Every `.js`, `.mjs`, `.cjs`, `.ts`, `.tsx`, `.mts` and `.cts` file under the folders (not `.d.ts`), but files over
300 kB and minified ones (a line over 1,000 characters). Prints the counts, each claim (file, line, names, the line),
and the time of one whole-file reading (`script_unbound`): median and most."""
import os
import sys
import time
from collections import Counter
from pathlib import Path

from dg_lsp.context.bindings import script_names
from dg_lsp.context.languages import language_for_path

stats, claims, times = Counter(), [], []
files = sorted({os.path.join(folder, name) for root in sys.argv[1:] for folder, _, names in os.walk(root)
                for name in names if name.endswith((".js", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"))
                and not name.endswith(".d.ts")})
for path in files:
    try:
        if os.path.getsize(path) > 300_000:
            stats["over 300 kB"] += 1
            continue
        source = Path(path).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        stats["unreadable"] += 1
        continue
    if any(len(line) > 1000 for line in source.splitlines()):
        stats["minified"] += 1
        continue
    language = language_for_path(path)
    t = time.perf_counter()
    every = script_names.script_unbound(source, language)
    times.append((time.perf_counter() - t, len(source.splitlines()), path))
    if every is None:
        stats["not read (no clean parse, with, eval)"] += 1
        continue
    stats["read"] += 1
    stats["no read that nothing binds"] += not every
    starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]
    for row in sorted({source.count("\n", 0, offset) for _, offset in every}):
        start = starts[row]
        end = starts[row + 1] - 1 if row + 1 < len(starts) else len(source)
        if found := script_names.unbound_script_reads(source, start, end, language):
            claims.append((path, row + 1, [name for name, _ in found], source[start:end].strip()[:100]))
print(dict(stats), "files", len(files))
print("claims", len(claims))
for claim in claims:
    print(*claim)
times.sort()
print(f"script_unbound: median {1000 * times[len(times) // 2][0]:.1f} ms, most {1000 * times[-1][0]:.1f} ms "
      f"({times[-1][1]} lines, {times[-1][2]})")
