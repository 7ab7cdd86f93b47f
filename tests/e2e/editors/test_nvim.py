"""The Neovim plugin in a real headless Neovim 0.12 against the real server.

One Neovim per (model, renderer) runs `nvim_driver.lua`: open a Python file, enter insert mode
inside a function, wait for the suggestion's ghost text and accept it with <Tab>; `:DgFill` a
charwise visual selection (after multi-byte characters); `:DgFill` more lines than the model fills at
once (refused: nothing changes, the reason is shown); `:DgStatus`; `:checkhealth dg_lsp`. The sessions
run concurrently (the server's start-up dominates) and the tests below check what each saw.

The tiny random model writes junk, and the server's syntax gate drops a suggestion that adds syntax
errors to a Python document, so where the small model completes code on the blank line, the tiny
one completes the comment above it: any first line there is valid Python, the gate passes it (and
cuts the lines after it that break the code), and the editor's path (ghost text, <Tab>) is the same.
The tiny model never writes a pad, so a pad-fill of its is always refused as possibly cut: its
sessions fill with `lengthStrategy: "search"` (the small model's fill uses the default strategy). What the
model writes for the fill is scripted (`FILL_ANSWER`): a selection fill is applied only where it breaks nothing,
and either model's text may close the string the selection is in.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import MODELS, REPO, has_small_model, server_cmd

PLUGIN = REPO / "editors" / "nvim"
DRIVER = Path(__file__).with_name("nvim_driver.lua")
RENDERERS = ["native", "fallback"]
TIMEOUT_S = 150
# The module fixture (every session at once) runs inside the first test's timeout.
pytestmark = pytest.mark.timeout(TIMEOUT_S + 60)

SOURCE = '''def add(a, b):
    return a + b


def mul(a, b):
    # the product of a and b,
    
    return 0


def greet():
    msg = "naïve ☕ café"
    return msg
'''


@dataclass(frozen=True)
class Scenario:
    insert_line: int  # 1-based; the cursor goes to its end
    type_if_no_suggestion: str  # typed a key at a time until a suggestion shows
    settings: dict = field(default_factory=dict)  # the dgLsp settings section (vim.g.dg_lsp.settings)


SCENARIOS = {
    "small": Scenario(insert_line=7, type_if_no_suggestion="result = a * b"),  # the blank line in mul()
    "tiny": Scenario(insert_line=6, type_if_no_suggestion=" computed here", settings={"lengthStrategy": "search"}),
}
FILL_LINE = 12
FILL_TEXT = "café"
# what the model writes for the fill (scripted: a selection fill is applied only where it breaks nothing, and a
# random model's text often closes the string it is in)
FILL_ANSWER = [('msg = "naïve ☕ ', "cafe au lait")]
LONG_LINES = 60  # appended and filled at once: far more tokens than any model's canvas (refused)


def fill_spec() -> dict:
    line = SOURCE.splitlines()[FILL_LINE - 1].encode()
    start = line.index(FILL_TEXT.encode())
    return {"line": FILL_LINE, "start_col": start, "end_col": start + len(FILL_TEXT.encode())}


def lsp_character(line: str, byte_col: int, encoding: str) -> int:
    prefix = line.encode()[:byte_col].decode()
    if encoding == "utf-8":
        return byte_col
    if encoding == "utf-16":
        return len(prefix.encode("utf-16-le")) // 2
    return len(prefix)


def start_session(nvim, model: str, renderer: str, tmp: Path) -> tuple[subprocess.Popen, Path]:
    tmp.mkdir(parents=True)
    work = tmp / "example.py"
    work.write_text(SOURCE)
    out = tmp / "result.json"
    scenario = SCENARIOS[model]
    config = {"cmd": server_cmd(model, FILL_ANSWER), "ghost_text": renderer, "settings": scenario.settings}
    env = nvim.env(
        tmp,
        DG_TEST_OUT=str(out),
        DG_TEST_FILE=str(work),
        DG_TEST_INSERT_LINE=str(scenario.insert_line),
        DG_TEST_TYPE=scenario.type_if_no_suggestion,
        DG_TEST_FILL=json.dumps(fill_spec()),
        DG_TEST_LONG_LINES=str(LONG_LINES),
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
    """Run every (model, renderer) session at once; results keyed by (model, renderer)."""
    models = ["tiny", "small"] if has_small_model() else ["tiny"]
    tmp = tmp_path_factory.mktemp("nvim")
    running = {(m, r): start_session(nvim, m, r, tmp / f"{m}-{r}") for m in models for r in RENDERERS}
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
        lsp_log = out.parent / "xdg_state_home" / "nvim" / "lsp.log"
        result["lsp_log"] = lsp_log.read_text(errors="replace")[-3000:] if lsp_log.is_file() else ""
        results[key] = result
    return results


@pytest.fixture(params=MODELS)
def model(request) -> str:
    return request.param


@pytest.fixture(params=RENDERERS)
def session(sessions, model, request) -> dict:
    result = sessions[(model, request.param)]
    result["renderer_wanted"] = request.param
    result["model"] = model
    return result


def explain(result: dict) -> str:
    keys = ("error", "log", "renderer", "status", "ghost", "fill_answer", "fill_edits", "refused_answer",
            "refused_edits", "refused_messages", "nvim_output", "lsp_log")
    return json.dumps({k: result.get(k) for k in keys}, indent=1, ensure_ascii=False)


def test_plugin_attaches_and_server_gets_ready(session):
    assert session.get("error") is None, explain(session)
    assert session["filetype"] == "python"
    assert session["attached"], explain(session)
    assert session["renderer"] == session["renderer_wanted"], explain(session)
    assert session["status"]["state"] == "ready", explain(session)


def test_suggestion_is_shown_and_accepting_changes_the_buffer(session):
    scenario = SCENARIOS[session["model"]]
    assert session.get("mode") == "i", explain(session)
    ghost = session.get("ghost")
    assert ghost, "no ghost text appeared\n" + explain(session)
    assert ghost["row"] == scenario.insert_line - 1
    shown = "\n".join(ghost["lines"])
    assert shown.strip(), explain(session)
    before, after = session["before_accept"], session["after_accept"]
    typed = session.get("typed") or ""
    assert scenario.type_if_no_suggestion.startswith(typed)
    lines = SOURCE.rstrip("\n").split("\n")
    lines[scenario.insert_line - 1] += typed
    assert before == "\n".join(lines)
    assert after != before, "accepting did not change the buffer\n" + explain(session)
    # The accepted text lands at the cursor: everything before the insert line is untouched,
    # and the insert line now holds what was shown.
    head = "\n".join(SOURCE.splitlines()[: scenario.insert_line - 1])
    assert after.startswith(head + "\n" + lines[scenario.insert_line - 1]), explain(session)
    assert ghost["lines"][0] in after.splitlines()[scenario.insert_line - 1], explain(session)
    assert after.endswith("return 0\n\n\ndef greet():\n    msg = \"naïve ☕ café\"\n    return msg")


def test_dgfill_replaces_exactly_the_selection(session):
    spec = fill_spec()
    answer = (session.get("fill_answer") or {}).get("result")
    assert answer and answer.get("applied") is True, "the fill was not applied\n" + explain(session)
    edits = session.get("fill_edits") or []
    assert len(edits) == 1, "no workspace/applyEdit for :DgFill\n" + explain(session)
    edit_ = edits[0]["edit"]
    assert not edit_.get("changes"), explain(session)
    # One versioned edit of this document, made for the version the fill was asked on.
    (doc_edit,) = edit_["documentChanges"]
    assert doc_edit["textDocument"]["uri"].endswith("/example.py")
    assert doc_edit["textDocument"]["version"] == session["fill_version"], explain(session)
    (edit,) = doc_edit["edits"]
    assert edit["newText"] == answer["text"], explain(session)
    encoding = session["offset_encoding"]
    line = session["before_fill"].split("\n")[FILL_LINE - 1]
    expected = {
        "start": {"line": FILL_LINE - 1, "character": lsp_character(line, spec["start_col"], encoding)},
        "end": {"line": FILL_LINE - 1, "character": lsp_character(line, spec["end_col"], encoding)},
    }
    assert edit["range"] == expected, explain(session)
    before = session["before_fill"].encode()
    offset = sum(len(x) + 1 for x in before.split(b"\n")[: FILL_LINE - 1])
    start, end = offset + spec["start_col"], offset + spec["end_col"]
    assert before[start:end].decode() == FILL_TEXT
    want = before[:start] + edit["newText"].encode() + before[end:]
    assert session["after_fill"].encode() == want, explain(session)


def test_refused_dgfill_leaves_the_buffer_and_shows_the_reason(session):
    answer = (session.get("refused_answer") or {}).get("result")
    assert answer and answer.get("applied") is False, explain(session)
    reason = answer.get("reason")
    assert reason and re.match(r"the selection is \d+ tokens, more than the model fills at once", reason), \
        explain(session)
    assert session["refused_edits"] == [], explain(session)
    assert session["after_refused"] == session["before_refused"], explain(session)
    assert session["before_refused"].count("\n") >= LONG_LINES
    assert f"dg-lsp: nothing filled: {reason}" in session["refused_messages"], explain(session)


def test_dgstatus_shows_the_server_state(session):
    assert session.get("dgstatus"), explain(session)
    assert "on cpu" in session["dgstatus"], session["dgstatus"]


def test_checkhealth_reports_no_error(session):
    health = session.get("health") or []
    text = "\n".join(health)
    assert "dg_lsp: client" in text, explain(session)
    assert "ERROR" not in text, text
    assert "ready:" in text, text
