"""The embedded small model (issue 3; the default until the adapted Gemma took its place): `--model small` loads
it offline in a fresh process, and it completes a fixed snippet with an open bracket into text that tree-sitter
parses without error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dg_lsp.context.syntax import syntax_error_count

SMALL = Path(__file__).parents[2] / "dg_lsp" / "model" / "small" / "model.safetensors"
PREFIX = "def mean(values):\n    return sum(values) / len(values"
SUFFIX = "\n"


@pytest.mark.skipif(not SMALL.is_file(), reason="no embedded small model in this tree")
@pytest.mark.parametrize("hub_offline", ["1", "0"])
def test_small_model_completes_an_open_bracket_offline(tmp_path, hub_offline):
    src = tmp_path / "snippet.py"
    src.write_text(PREFIX + SUFFIX)
    env = {**os.environ, "HF_HUB_OFFLINE": hub_offline, "TRANSFORMERS_OFFLINE": hub_offline,
           "HF_HOME": str(tmp_path / "hf-home")}  # an empty cache: nothing to find there, nothing fetched
    out = subprocess.run([sys.executable, "-m", "dg_lsp", "complete", f"{src}:2:{len(PREFIX.split(chr(10))[1]) + 1}",
                          "--json", "--device", "cpu", "--model", "small"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert syntax_error_count(PREFIX, "python") > 0  # the snippet alone does not parse
    assert res["text"].strip(), res
    assert syntax_error_count(PREFIX + res["text"] + SUFFIX, "python") == 0, res["text"]
