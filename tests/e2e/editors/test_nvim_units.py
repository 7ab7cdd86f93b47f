"""The plugin's pure parts (selection -> LSP range in each position encoding, configuration
merging and validation, status parsing) in a headless Neovim, without a server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .conftest import REPO


def test_plugin_units(nvim, tmp_path):
    out = tmp_path / "units.json"
    script = Path(__file__).with_name("nvim_units.lua")
    proc = subprocess.run([nvim.binary, "--headless", "--clean", "-l", str(script), str(REPO / "editors" / "nvim"), str(out)],
                          env=nvim.env(tmp_path), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["failed"] == [], "\n".join(result["failed"])
    assert len(result["passed"]) >= 20
