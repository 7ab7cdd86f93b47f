"""The plugin's pure parts (selection -> LSP range in each position encoding, configuration
merging and validation, status parsing) in a headless Neovim, without a server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.timeout(120)


def test_plugin_units(nvim, tmp_path):
    out = tmp_path / "units.json"
    script = Path(__file__).with_name("nvim_units.lua")
    proc = subprocess.run([nvim.binary, "--headless", "--clean", "-l", str(script), str(REPO / "editors" / "nvim"), str(out)],
                          env=nvim.env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["failed"] == [], "\n".join(result["failed"])
    assert len(result["passed"]) >= 20


def test_readme_installs_like_the_top_readme():
    """The Neovim README pins torch first, as the top README does (a plain torch can pull CUDA)."""
    import re

    top = (REPO / "README.md").read_text()
    pin = re.search(r"pip install (torch==[0-9.]+) && \.venv/bin/pip install -e ", top)
    assert pin, "the top README's install line changed; update this test and editors/nvim/README.md"
    nvim_readme = (REPO / "editors" / "nvim" / "README.md").read_text()
    assert f".venv/bin/pip install {pin.group(1)} && .venv/bin/pip install -e ." in nvim_readme
    assert pin.group(1) in (REPO / "editors" / "nvim" / "doc" / "dg_lsp.txt").read_text()


def test_helptags_output_is_ignored():
    import shutil

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    proc = subprocess.run(["git", "check-ignore", "-q", "editors/nvim/doc/tags"], cwd=REPO, timeout=30)
    assert proc.returncode == 0, "editors/nvim/doc/tags (written by :helptags ALL) is not git-ignored"
