"""The JavaScript and TypeScript name check against TypeScript's compiler on scope mistakes in real code. In files
the check reads with no read that nothing binds, a name read as a call's argument is replaced by a name the same file
declares somewhere (a `const`, `let` or `var`, or a parameter), in scope there or not; the whole line is the span.
Per mutation: does the compiler report the new name ("Cannot find name", `compilers.py`'s `tsc-names`), does the
check claim it? Prints the four counts and each disagreement.

    python docs/results/script-names-mutations.py SEED N FOLDER [FOLDER ...]
"""
import os
import random
import sys
from collections import Counter
from pathlib import Path

from dg_lsp.bench.diagnostics.compilers import new_errors
from dg_lsp.context.bindings import script_names
from dg_lsp.context.languages import get_parser, language_for_path

rnd, most = random.Random(int(sys.argv[1])), int(sys.argv[2])
files = sorted({os.path.join(folder, name) for root in sys.argv[3:] for folder, _, names in os.walk(root)
                for name in names
                if name.endswith((".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx")) and not name.endswith(".d.ts")})
rnd.shuffle(files)
rows = []
for path in files:
    if len(rows) >= most:
        break
    try:
        if os.path.getsize(path) > 100_000:
            continue
        source = Path(path).read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        continue
    language = language_for_path(path)
    if any(len(line) > 1000 for line in source.splitlines()) or script_names.script_unbound(source, language) != []:
        continue
    reads, declared, stack = [], [], [get_parser(language).parse(source.encode("utf-8")).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type == "identifier" and node.parent is not None and node.parent.type == "arguments":
            reads.append(node)
        if node.type == "variable_declarator" and (name := node.child_by_field_name("name")) is not None \
                and name.type == "identifier":
            declared.append(name.text.decode())
        if node.type == "formal_parameters":
            declared += [child.text.decode() for child in node.named_children if child.type == "identifier"]
    if not reads or not declared:
        continue
    read, other = rnd.choice(reads), rnd.choice(declared)
    if other == read.text.decode():
        continue
    data = source.encode("utf-8")
    new = (data[:read.start_byte] + other.encode() + data[read.end_byte:]).decode("utf-8")
    at = len(data[:read.start_byte].decode("utf-8"))
    start = new.rfind("\n", 0, at) + 1
    end = len(new) if new.find("\n", at) < 0 else new.find("\n", at)
    claimed = any(name == other for name, _ in script_names.unbound_script_reads(new, start, end, language))
    rows.append((path, other, new[start:end].strip()[:100], claimed, source, new))
count = Counter()
for (path, name, line, claimed, _, _), errors in zip(rows, new_errors([(s, n, p) for p, _, _, _, s, n in rows],
                                                                      "tsc-names")):
    reported = f"cannot find name {name}" in (errors or [])
    count["check " + ("claims" if claimed else "does not"), "tsc " + ("reports" if reported else "does not")] += 1
    if claimed != reported:
        print("check only" if claimed else "tsc only", name, "|", line, "|", path)
print(dict(count))
