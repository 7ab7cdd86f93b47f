"""Partial accept in a real headless Neovim against the real server (tiny model, its answer scripted): the next
word (`keymaps.accept_word`, <M-Right> by default) and the next line (`keymaps.accept_line`, <M-C-Right>) of the
suggestion are inserted a piece at a time, in both renderers, and the rest of the suggestion stays shown: at once in
the plugin's own renderer, from the server's cache of the suggestion being typed through in Neovim 0.12's."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO, server_cmd

PLUGIN = Path(os.environ.get("DG_LSP_NVIM_PLUGIN") or REPO / "editors" / "nvim")
DRIVER = Path(__file__).with_name("nvim_partial.lua")
TIMEOUT_S = 150
pytestmark = pytest.mark.timeout(TIMEOUT_S + 60)

SOURCE = 'def area(r):\n    """The area."""\n    \n'
# the cursor on the blank line 3 at column 4: the model writes the line break and indentation back (token healing),
# then two lines
ANSWERS = [('"""The area."""\n    ', "\n    total = r * r\n    return total\n")]
KEYS = ["<M-Right>", "<M-Right>", "<M-C-Right>", "<M-C-Right>"]


@pytest.fixture(scope="module", params=["fallback", "native"])
def result(request, nvim, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp(f"nvim-partial-{request.param}")
    work = tmp / "area.py"
    work.write_text(SOURCE)
    out = tmp / "result.json"
    config = {"cmd": server_cmd("tiny", ANSWERS), "ghost_text": request.param}
    env = nvim.env(tmp, DG_TEST_OUT=str(out), DG_TEST_FILE=str(work), DG_TEST_KEYS=json.dumps(KEYS),
                   DG_TEST_TIMEOUT_MS=str((TIMEOUT_S - 10) * 1000))
    argv = [nvim.binary, "--headless", "--clean", "-n", "-i", "NONE", "--cmd", f"set rtp^={PLUGIN}",
            "--cmd", f"lua vim.g.dg_lsp = vim.json.decode({json.dumps(json.dumps(config))})",
            "-c", f"luafile {DRIVER}"]
    try:
        proc = subprocess.run(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=TIMEOUT_S)
        output = (proc.stdout + proc.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        output = f"nvim timed out: {e}"
    data = json.loads(out.read_text()) if out.is_file() else {"error": "no result file"}
    data["nvim_output"] = output[-2000:]
    data["wanted_renderer"] = request.param
    return data


def test_word_and_line_keys_insert_the_suggestion_a_piece_at_a_time(result):
    assert result.get("error") is None and result["attached"], json.dumps(result, indent=1)
    if result["wanted_renderer"] == "native" and result["renderer"] != "native":
        pytest.skip("this Neovim has no vim.lsp.inline_completion")
    assert result["first_ghost"] == "total = r * r\n    return total", result
    steps = result["steps"]
    assert [s["lines"][2:] for s in steps] == [
        ["    total"],  # a word
        ["    total ="],  # blanks and a run of signs
        ["    total = r * r"],  # the rest of the line
        ["    total = r * r", "    return total"],  # the next line: all of it, nothing left
    ], json.dumps(result, indent=1)
    assert [s["cursor"] for s in steps] == [[3, 9], [3, 11], [3, 17], [4, 16]], steps
    # the rest stays shown after each piece, until nothing is left
    assert [s["ghost"] for s in steps[:3]] == [" = r * r\n    return total", " r * r\n    return total",
                                               "\n    return total"], steps
