"""The adapted Gemma 3 shipped in dg_lsp/model/gemma (issue 13): its base is built from the installed GGUF
package (once per machine, into ~/.cache/dg-lsp or $DG_LSP_CACHE, reused by later runs) and it loads and
completes offline in a fresh process, with HF_HUB_OFFLINE=1 and an empty HF_HOME.

It is the default model (no --model). The README demo (`def add(a, b):\n    return ` with the cursor after the
space) completes to `a + b`: the prompt stops before the trailing space and the first token is kept to ones that
start with it (healing.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GEMMA = Path(__file__).parents[2] / "dg_lsp" / "model" / "gemma"
HAS = (GEMMA / "adapter.safetensors").is_file()


def _complete(tmp_path, text: str, line: int, col: int, *model: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`dg-lsp complete` in a fresh process; `model`: the --model arguments (none: the default model)."""
    src = tmp_path / "snippet.py"
    src.write_text(text)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    out = subprocess.run([sys.executable, "-m", "dg_lsp", "complete", f"{src}:{line}:{col}", "--json",
                          "--device", "cpu", *model], env=env, capture_output=True, text=True,
                         timeout=1500)
    assert out.returncode == 0, out.stderr[-2000:]
    return out, json.loads(out.stdout)


@pytest.mark.timeout(1800)
@pytest.mark.skipif(not HAS, reason="no adapted Gemma model in this tree")
def test_adapted_gemma_builds_and_completes_offline(tmp_path):
    out, res = _complete(tmp_path, "import os\n\n\ndef home():\n    return os.path.\n", 5, 20, "--model", str(GEMMA))
    assert res["steps"] >= 1, res  # the diffusion loop ran on the adapted decoder
    assert res["timings_ms"]["encode"] > 0
    assert "Traceback" not in out.stderr


@pytest.mark.timeout(1800)
@pytest.mark.skipif(not HAS, reason="no adapted Gemma model in this tree")
def test_readme_demo_completes_a_plus_b_on_the_default_model(tmp_path):
    """README's first command: no --model, so the default model, which is this adapted Gemma."""
    _, res = _complete(tmp_path, "def add(a, b):\n    return \n", 2, 12)
    compact = res["text"].replace(" ", "")
    assert "a+b" in compact or "b+a" in compact, res
