"""Completions in Jupyter notebooks' code cells, driven over LSP as an editor drives them, each asked twice: with
the notebook synced (`notebookDocument/didOpen`: the server reads the cell inside its notebook, context/notebook.py)
and with the cell alone as a plain document (what an editor without notebook sync sends).

    python -m dg_lsp.bench.diagnostics.notebooks PATH... [--holes 40] [--seed 0] [--kinds rest,blank]
        [--modes notebook,alone] [--server-cwd DIR] [--model DIR] [--json OUT]

PATHs are .ipynb files or folders of them. Positions: lines of code (not blank, a comment or a magic, at least six
characters) in code cells with a code cell above them; at most `--per-notebook` of them per notebook, seeded.
Kinds: `rest`, the line cut after a third of its code and the rest deleted (typing it); `blank`, the line deleted
and the cursor on its blank line at its indentation. Each answer is applied to the cell as the editor applies it;
the line it leaves is scored against the deleted line: shown, exact (the line back), ES (edit similarity), p50.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from dg_lsp.bench.diagnostics.editing import Session

CODE_KINDS = ("rest", "blank")
MODES = ("notebook", "alone")


def read_notebook(path: Path) -> list[tuple[str, str]] | None:
    """(cell type "code" | "markdown", text) per cell; None where the file is not a notebook."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        cells = []
        for cell in data["cells"]:
            source = cell.get("source", "")
            cells.append((cell["cell_type"], "".join(source) if isinstance(source, list) else str(source)))
        return cells
    except (OSError, ValueError, KeyError, TypeError):
        return None


def notebook_files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.rglob("*.ipynb")) if p.is_dir() else [p]
    return out


def positions(notebooks: list[tuple[Path, list]], holes: int, per_notebook: int, seed: int) -> list[tuple]:
    """(notebook index, cell index, line index) of the lines the holes delete, seeded."""
    rng = random.Random(seed)
    found = []
    for n, (_, cells) in enumerate(notebooks):
        here = []
        code_above = False
        for c, (kind, text) in enumerate(cells):
            if kind != "code":
                continue
            if code_above:
                for i, line in enumerate(text.split("\n")):
                    code = line.strip()
                    if len(code) >= 6 and not code.startswith(("#", "%", "!")):
                        here.append((n, c, i))
            code_above = code_above or bool(text.strip())
        rng.shuffle(here)
        found += here[:per_notebook]
    rng.shuffle(found)
    return found[:holes]


def hole(text: str, row: int, kind: str) -> tuple[str, int, str]:
    """The cell with its line `row` cut (`rest`) or deleted (`blank`), the cursor's offset, and the deleted line."""
    lines = text.split("\n")
    line = lines[row]
    indent = line[:len(line) - len(line.lstrip())]
    keep = len(indent) + max(1, len(line.strip()) // 3) if kind == "rest" else len(indent)
    lines[row] = line[:keep]
    cut = "\n".join(lines)
    return cut, sum(len(x) + 1 for x in lines[:row]) + keep, line


class NotebookSession(Session):
    """`dg-lsp serve` over stdio, initialized as an editor that syncs notebooks (editing.Session), and ready."""

    def __init__(self, cwd: str | None, model: str | None = None):
        super().__init__(cwd, model, notebooks=True)
        self.count = 0

    def answer(self, cells: list[tuple[str, str]], index: int, cursor: int, mode: str) -> tuple[str, int, int]:
        """(text, range start, range end) in the cell's text, as the editor would apply the item."""
        from dg_lsp.bench.quality.lsp_runner import first_item, offset_of, utf16_position

        self.count += 1
        doc = cells[index][1]
        base = f"file:///tmp/dg-lsp-notebooks/{self.count}"
        if mode == "notebook":
            uri = f"vscode-notebook-cell:{base}.ipynb#cell{index}"
            cell_uris = [f"vscode-notebook-cell:{base}.ipynb#cell{c}" for c in range(len(cells))]
            self.client.notify("notebookDocument/didOpen", {
                "notebookDocument": {"uri": f"{base}.ipynb", "notebookType": "jupyter-notebook", "version": 1,
                                     "cells": [{"kind": 2 if kind == "code" else 1, "document": u}
                                               for (kind, _), u in zip(cells, cell_uris)]},
                "cellTextDocuments": [{"uri": u, "languageId": "python" if kind == "code" else "markdown",
                                       "version": 1, "text": text} for (kind, text), u in zip(cells, cell_uris)]})
        else:
            uri = f"{base}.py"
            self.client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                                         "version": 1, "text": doc}})
        try:
            res = self.client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": utf16_position(doc, cursor), "context": {"triggerKind": 1}})
            item = first_item(res)
            if item is None:
                return "", cursor, cursor
            text = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
            if item.get("range"):
                return text, offset_of(doc, item["range"]["start"]), offset_of(doc, item["range"]["end"])
            return text, cursor, cursor
        finally:
            if mode == "notebook":
                self.client.notify("notebookDocument/didClose", {
                    "notebookDocument": {"uri": f"{base}.ipynb"},
                    "cellTextDocuments": [{"uri": u} for u in cell_uris]})
            else:
                self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

def run(args) -> list[dict]:
    from dg_lsp.bench.metrics import edit_similarity

    notebooks = [(p, cells) for p in notebook_files(args.paths) if (cells := read_notebook(p))]
    session = NotebookSession(args.server_cwd, args.model)
    rows = []
    try:
        for k, (n, c, i) in enumerate(positions(notebooks, args.holes, args.per_notebook, args.seed)):
            path, cells = notebooks[n]
            for kind in args.kinds:
                cut, cursor, truth = hole(cells[c][1], i, kind)
                here = list(cells)
                here[c] = ("code", cut)
                # the modes alternate which goes first, so a slower minute of the machine falls on both
                for mode in (args.modes if k % 2 == 0 else args.modes[::-1]):
                    t0 = time.perf_counter()
                    text, start, end = session.answer(here, c, cursor, mode)
                    ms = (time.perf_counter() - t0) * 1000
                    applied = (cut[:start] + text + cut[end:]).split("\n")[i]
                    rows.append({"notebook": path.name, "cell": c, "line": i, "kind": kind, "mode": mode,
                                 "truth": truth, "text": text, "applied": applied, "shown": bool(text.strip()),
                                 "exact": applied.rstrip() == truth.rstrip(),
                                 "es": edit_similarity(applied.strip(), truth.strip()), "ms": ms})
            print(f"{k + 1} positions", file=sys.stderr, end="\r")
    finally:
        session.close()
    return rows


def report(rows: list[dict]) -> str:
    out = ["| kind | mode | holes | shown % | exact % | ES | p50 ms |", "|---|---|---|---|---|---|---|"]
    for kind in CODE_KINDS:
        for mode in MODES:
            sel = [r for r in rows if r["kind"] == kind and r["mode"] == mode]
            if not sel:
                continue
            n = len(sel)
            out.append(f"| {kind} | {mode} | {n} | {100 * sum(r['shown'] for r in sel) / n:.1f} | "
                       f"{100 * sum(r['exact'] for r in sel) / n:.1f} | {100 * statistics.mean(r['es'] for r in sel):.1f}"
                       f" | {statistics.median(r['ms'] for r in sel):,.0f} |")
        pairs = {}
        for r in rows:
            if r["kind"] == kind:
                pairs.setdefault((r["notebook"], r["cell"], r["line"]), {})[r["mode"]] = r
        both = [p for p in pairs.values() if len(p) == 2]
        if both:
            only_nb = sum(p["notebook"]["exact"] and not p["alone"]["exact"] for p in both)
            only_alone = sum(p["alone"]["exact"] and not p["notebook"]["exact"] for p in both)
            same = sum(p["notebook"]["text"] == p["alone"]["text"] for p in both)
            out.append(f"\n{kind}: exact only with the notebook {only_nb}, only alone {only_alone}; "
                       f"the same text {same} of {len(both)}\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help=".ipynb files or folders of them")
    parser.add_argument("--holes", type=int, default=40)
    parser.add_argument("--per-notebook", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", type=lambda s: tuple(s.split(",")), default=CODE_KINDS)
    parser.add_argument("--modes", type=lambda s: tuple(s.split(",")), default=MODES)
    parser.add_argument("--server-cwd", default=None, help="run the server from this checkout (python -m dg_lsp)")
    parser.add_argument("--model", default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if set(args.kinds) - set(CODE_KINDS) or set(args.modes) - set(MODES):
        parser.error(f"kinds: {', '.join(CODE_KINDS)}; modes: {', '.join(MODES)}")
    rows = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "seed": args.seed, "rows": rows},
                                              indent=1), encoding="utf-8")
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
