"""The name check's cost per suggestion: a new line `x = made_up_name(1)` (or the line given: `python
python-names-cost.py "x = self.made_up(1)"`) after an indented statement in the middle of stdlib files, through
completion.unbound.unbound_names (the whole document parsed and walked); median of 7."""
import ast, time, statistics, sys, sysconfig, pathlib
from dg_lsp.completion.unbound import unbound_names
root = pathlib.Path(sysconfig.get_paths()["stdlib"])
for name in ["json/decoder.py", "argparse.py", "typing.py", "_pydecimal.py", "tkinter/__init__.py"]:
    src = (root / name).read_text()
    lines = src.split("\n")
    tree = ast.parse(src)
    rows = sorted(n.end_lineno - 1 for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.col_offset == 8
                  and n.lineno == n.end_lineno)
    row = rows[len(rows) // 2]
    at = (row, len(lines[row]))
    times = []
    for _ in range(7):
        t = time.perf_counter()
        r = unbound_names(src, at, at, "\n        " + (sys.argv[1] if len(sys.argv) > 1 else "x = made_up_name(1)"),
                          "python")
        times.append(time.perf_counter() - t)
    print(f"{name}: {len(lines)} lines, {len(src) // 1000} kB: {statistics.median(times) * 1000:.1f} ms, found {r}")
