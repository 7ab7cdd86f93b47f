"""`python -m dg_lsp.bench.diagnostics.notebooks`: completions in notebook cells through the real server (the tiny
model), with the notebook synced and with the cell alone. Its pure parts on known texts; one run end to end."""

from __future__ import annotations

import json

import pytest

from dg_lsp.bench.diagnostics import notebooks

from .conftest import tiny_model_path

pytestmark = pytest.mark.timeout(300)

NOTEBOOK = {"cells": [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Data\n"]},
    {"cell_type": "code", "metadata": {}, "source": ["import math\n", "%matplotlib inline\n", "R = 2.0\n"]},
    {"cell_type": "code", "metadata": {}, "source": "area = math.pi * R ** 2\n# a comment\nprint(area)"},
], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_holes_are_lines_of_code_in_cells_below_code(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    cells = notebooks.read_notebook(path)
    assert [kind for kind, _ in cells] == ["markdown", "code", "code"]
    assert cells[1][1] == "import math\n%matplotlib inline\nR = 2.0\n"
    found = notebooks.positions([(path, cells)], holes=10, per_notebook=10, seed=0)
    assert sorted(found) == [(0, 2, 0), (0, 2, 2)]  # not the first code cell, the comment, nor short lines
    cut, cursor, truth = notebooks.hole(cells[2][1], 0, "rest")
    assert truth == "area = math.pi * R ** 2" and cut[:cursor] == "area = "  # a third of the line's code
    assert cut[cursor:] == "\n# a comment\nprint(area)"
    cut, cursor, truth = notebooks.hole(cells[2][1], 2, "blank")
    assert truth == "print(area)" and cut == "area = math.pi * R ** 2\n# a comment\n" and cursor == len(cut)
    assert notebooks.read_notebook(tmp_path / "missing.ipynb") is None


def test_one_run_asks_each_hole_both_ways(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    out = tmp_path / "run.json"
    assert notebooks.main([str(tmp_path), "--model", tiny_model_path(), "--holes", "1", "--json", str(out)]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert sorted((r["kind"], r["mode"]) for r in rows) == sorted(
        (kind, mode) for kind in notebooks.CODE_KINDS for mode in notebooks.MODES)
    for r in rows:
        assert r["exact"] == (r["applied"].rstrip() == r["truth"].rstrip()) and 0 <= r["es"] <= 1
        assert r["shown"] or r["applied"] == r["truth"][:len(r["applied"])]  # nothing shown: the cut line as it was
    assert notebooks.report(rows).splitlines()[0].startswith("| kind | mode | holes |")
