"""Typing as fast as a person while a suggestion is shown, then pressing <Tab> (issue 14, item 9).

A suggestion is shown after `self._pop = self.`; the user types `_` then `q`, 30-150 ms apart, and
presses <Tab>. Neovim 0.12's built-in `vim.lsp.inline_completion` keeps the old item (made for the
old cursor) until its 200 ms debounce fires, so <Tab> inserted it at the old column and pushed
`_q` to a later line. Whatever the renderer, the buffer after <Tab> must be exactly one of: the
typed text followed by the suggestion shown at that moment, inserted at the cursor; or the typed
text and a plain Tab (no suggestion). Nothing else may change.

Real headless Neovim, real `dg-lsp serve` with the embedded small model (`--model small`) on CPU, one Neovim per
renderer setting, several timings per Neovim (the server loads once).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import REPO, has_small_model, server_cmd

# DG_LSP_NVIM_PLUGIN: run against another copy of the plugin (e.g. an older commit's, to see this fail).
PLUGIN = Path(os.environ.get("DG_LSP_NVIM_PLUGIN") or REPO / "editors" / "nvim")
DRIVER = Path(__file__).with_name("nvim_typing.lua")
TIMEOUT_S = 300

SOURCE = '''class Stack:
    def __init__(self):
        self._items = []
        self._pop = self.
'''
LINE = 4  # 1-based; the cursor goes to its end, after `self.`
KEYS = ["_", "q"]
# Gaps in ms before each key and before <Tab>: a person typing, all under Neovim's 200 ms debounce.
# The last trial pauses before <Tab> until a suggestion for `self._q` shows: it must be accepted.
TRIALS = [[30, 30, 30], [80, 60, 100], [150, 150, 150], [40, 150, 60], [50, 120, -1]]

# ghost_text setting -> the renderer it must pick on this Neovim (0.12); the default may pick either.
SETTINGS = {"auto": None, "native": "native", "fallback": "fallback"}

pytestmark = pytest.mark.skipif(not has_small_model(), reason="needs the embedded small model")


def start(nvim, ghost_text: str, tmp: Path) -> tuple[subprocess.Popen, Path]:
    tmp.mkdir(parents=True)
    work = tmp / "stack.py"
    work.write_text(SOURCE)
    out = tmp / "result.json"
    config = {"cmd": server_cmd("small")}
    if ghost_text != "auto":
        config["ghost_text"] = ghost_text
    env = nvim.env(
        tmp,
        DG_TEST_OUT=str(out),
        DG_TEST_FILE=str(work),
        DG_TEST_LINE=str(LINE),
        DG_TEST_KEYS=json.dumps(KEYS),
        DG_TEST_TRIALS=json.dumps(TRIALS),
        DG_TEST_TIMEOUT_MS=str((TIMEOUT_S - 10) * 1000),
    )
    argv = [
        nvim.binary, "--headless", "--clean", "-n", "-i", "NONE",
        "--cmd", f"set rtp^={PLUGIN}",
        "--cmd", f"lua vim.g.dg_lsp = vim.json.decode({json.dumps(json.dumps(config))})",
        "-c", f"luafile {DRIVER}",
    ]
    proc = subprocess.Popen(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    return proc, out


@pytest.fixture(scope="module")
def sessions(nvim, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("nvim-typing")
    running = {g: start(nvim, g, tmp / g) for g in SETTINGS}
    deadline = time.monotonic() + TIMEOUT_S
    results = {}
    for key, (proc, out) in running.items():
        try:
            output, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
        result = json.loads(out.read_text()) if out.is_file() else {"error": "no result file"}
        result["nvim_output"] = output.decode(errors="replace")[-2000:]
        results[key] = result
    return results


def explain(result: dict, trial: dict | None = None) -> str:
    keys = ("error", "renderer", "status", "log", "nvim_output")
    out = {k: result.get(k) for k in keys}
    if trial is not None:
        out["trial"] = trial
    return json.dumps(out, indent=1, ensure_ascii=False)


def plain_tab(opts: dict, col: int) -> str:
    """What <Tab> inserts at byte column `col` of an ASCII line, per 'expandtab' and 'softtabstop'."""
    sts = opts["softtabstop"]
    width = opts["shiftwidth"] if sts < 0 else (sts or opts["tabstop"])
    if not opts["expandtab"]:
        assert width == opts["tabstop"], opts  # a mix of tabs and spaces is not modelled here
        return "\t"
    return " " * (width - col % width)


def expected_buffers(trial: dict, tab: dict) -> list[list[str]]:
    """The buffers <Tab> may leave: the typed text and a plain Tab (no suggestion), or the typed text
    with a suggestion the server made for exactly that text and cursor, applied over its range."""
    lines = SOURCE.rstrip("\n").split("\n")
    typed = lines[LINE - 1] + "".join(KEYS)
    options = [lines[: LINE - 1] + [typed + plain_tab(tab, len(typed))] + lines[LINE:]]
    for req in trial.get("requests") or []:
        if req["line"] != LINE - 1 or req["text"] != typed or req["character"] != len(typed):
            continue  # made for an older text or cursor: accepting it now would be wrong
        for item in req.get("items") or []:
            rng = item.get("range") or {"start": {"line": LINE - 1, "character": len(typed)},
                                        "end": {"line": LINE - 1, "character": len(typed)}}
            assert rng["start"]["line"] == rng["end"]["line"] == LINE - 1, item
            s, e = rng["start"]["character"], rng["end"]["character"]
            new = (typed[:s] + item["insertText"] + typed[e:]).split("\n")
            options.append(lines[: LINE - 1] + new + lines[LINE:])
    return options


@pytest.mark.timeout(TIMEOUT_S + 60)
@pytest.mark.parametrize("ghost_text", list(SETTINGS))
def test_tab_after_fast_typing_leaves_exactly_the_right_buffer(sessions, ghost_text):
    result = sessions[ghost_text]
    assert result.get("error") is None, explain(result)
    if SETTINGS[ghost_text]:
        assert result.get("renderer") == SETTINGS[ghost_text], explain(result)
    trials = result.get("trials") or []
    assert len(trials) == len(TRIALS), explain(result)
    shown = [t for t in trials if t.get("first")]
    # The scenario needs a suggestion at `self.` to start from; the small model gives one.
    assert len(shown) >= len(TRIALS) - 1, "no suggestion at `self.`\n" + explain(result)
    for t in shown:
        typed_line = SOURCE.split("\n")[LINE - 1] + "".join(KEYS)
        assert t["before_accept"][LINE - 1] == typed_line, explain(result, t)
        options = expected_buffers(t, result["tab"])
        assert t["after"] in options, explain(result, t)
        if t.get("settled"):
            assert t["after"] in options[1:], "the suggestion shown was not accepted\n" + explain(result, t)
