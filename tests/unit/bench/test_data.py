"""The HumanEval-Infilling data ships inside the package: a fresh clone needs nothing beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

import dg_lsp
from dg_lsp.bench.quality.tasks import DATA_DIR, HUMANEVAL_SPLITS, default_data_dir, load_humaneval

PACKAGE = Path(dg_lsp.__file__).resolve().parent


def test_default_data_dir_is_inside_the_package(monkeypatch):
    monkeypatch.delenv("DG_LSP_HUMANEVAL_DIR", raising=False)
    assert default_data_dir() == DATA_DIR
    assert PACKAGE in DATA_DIR.resolve().parents
    assert (DATA_DIR / "LICENSE").read_text().startswith("The MIT License")
    assert "openai/human-eval-infilling" in (DATA_DIR / "README.md").read_text()


@pytest.mark.parametrize("split,rows", [("single-line", 1033), ("multi-line", 5815), ("random-span-light", 164)])
def test_each_split_loads_from_the_shipped_copy(monkeypatch, split, rows):
    monkeypatch.delenv("DG_LSP_HUMANEVAL_DIR", raising=False)
    tasks = load_humaneval(split)
    assert len(tasks) == rows
    assert all(t.test and t.entry_point for t in tasks[:20])


def test_env_and_data_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("DG_LSP_HUMANEVAL_DIR", str(tmp_path))
    assert default_data_dir() == tmp_path
    with pytest.raises(FileNotFoundError, match=r"DG_LSP_HUMANEVAL_DIR"):
        load_humaneval("single-line")
    with pytest.raises(FileNotFoundError, match=r"--data-dir"):
        load_humaneval("single-line", tmp_path / "nope")
    assert sorted(p.name for p in DATA_DIR.glob("*.gz")) == sorted(HUMANEVAL_SPLITS.values())


def test_pyproject_ships_the_data_as_package_data():
    text = (PACKAGE.parent / "pyproject.toml").read_text()
    assert '"bench/quality/data/*"' in text
