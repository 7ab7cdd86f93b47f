"""Post-processing over the real protocol (issue 14, items 1, 6, 7, 8): the real server, engine and tiny model,
the model's written text scripted (tests/e2e/scripted_server.py) so the edit the editor receives can be checked
exactly: the item's insertText applied over its range to the document."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import CAPABILITIES, tiny_model_path, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

# [what the prefix ends with, what the model writes into the hole (healing tail included)]
ANSWERS = [
    # 14.1 cursor at column 0 before "    return total": the model writes the tail "\n", the line, and all but
    # the last space of the next line's indentation (the pinned suffix starts at " return")
    ["        total += x\n", "\n    total += 1\n   "],
    # 14.6 the fill closes g(, the suffix's ) closes f(
    ["y = f(g(a", "b)"],
    # 14.7 no line break: the next line's indentation written on the answer's own line
    ["    z = 0\n", "\n    y = 1   "],
    # 14.8 salad, and a docstring that is opened and never closed
    ["w = ", "import import import import"],
    ["def g():\n", '\n    """Return one.\n   '],
    # a lone \r in the model's text is a line break by LSP's rules: it must not reach the editor as it is
    ["q = ", "compute(1)  # one\rprint(q)"],
]
SCRIPT = Path(tempfile.gettempdir()) / "dg-lsp-e2e-scripted-answers.json"
SCRIPT.write_text(json.dumps(ANSWERS), encoding="utf-8")
COMMAND = [sys.executable, str(Path(__file__).with_name("scripted_server.py")), str(SCRIPT), "serve",
           "--model", tiny_model_path(), "--device", "cpu"]

SOURCE = ("def add(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n\n\n"
          "y = f(g(a)\n\n\ndef h():\n    z = 0\n    return z\n\n\nw = \n\n\ndef g():\n    return 1\n\n\n"
          "def k():\n    \"\"\"Doc.\"\"\"\n    return 2\n")
Q_SOURCE = "def f(x):\n    return x\n\n\nq = \n"
# the first function of SOURCE with lone \r line breaks (LSP: \n, \r\n and \r all end a line)
CR_SOURCE = "def add(xs):\r    total = 0\r    for x in xs:\r        total += x\r    return total\r"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=COMMAND), scope="module")
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=CAPABILITIES, initialization_options={"maxSteps": 2, "completionCache": False}))
    status = await wait_ready(lsp_client)
    assert status["state"] == "ready", status
    yield
    await lsp_client.shutdown_session()


def _open(client, uri: str, text: str = SOURCE) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))


async def _items(client, uri: str, line: int, character: int, automatic: bool = False):
    kind = types.InlineCompletionTriggerKind.Automatic if automatic else types.InlineCompletionTriggerKind.Invoked
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind)))
    return list(result.items if isinstance(result, types.InlineCompletionList) else (result or []))


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def lsp_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them (breaks at \\n, \\r\\n and \\r), without their breaks."""
    return [re.sub(r"(\r\n|\r|\n)$", "", line) for line in _LINE.findall(text)]


def _apply(text: str, item: types.InlineCompletionItem) -> str:
    """The document after the editor accepts `item` (ASCII text: UTF-16 columns are code points)."""
    lines = _LINE.findall(text)

    def offset(p: types.Position) -> int:
        return sum(len(x) for x in lines[:p.line]) + p.character

    return text[:offset(item.range.start)] + item.insert_text + text[offset(item.range.end):]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_whole_line_hole_keeps_its_newline(client, automatic):
    uri = f"file:///tmp/dg_lsp_e2e_edits/whole_line_{automatic}.py"
    _open(client, uri)
    items = await _items(client, uri, 4, 0, automatic)  # column 0, before "    return total"
    assert len(items) == 1
    after = _apply(SOURCE, items[0])
    assert after.split("\n")[3:6] == ["        total += x", "    total += 1", "    return total"]


async def test_a_closer_of_a_bracket_the_prefix_opened_is_kept(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/closers.py"
    _open(client, uri)
    items = await _items(client, uri, 7, len("y = f(g(a"))
    assert len(items) == 1
    assert _apply(SOURCE, items[0]).split("\n")[7] == "y = f(g(ab))"


async def test_an_answer_that_would_duplicate_the_next_lines_indentation_is_not_shown(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/healing.py"
    _open(client, uri)
    # "y = 1" with no line break would read "    y = 1       return z" (before: trailing blanks kept, shown)
    assert await _items(client, uri, 12, 0) == []


async def test_broken_text_is_never_shown(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/broken.py"
    _open(client, uri)
    assert await _items(client, uri, 15, len("w = ")) == []  # salad
    assert await _items(client, uri, 19, 0) == []  # opens a docstring it does not close


async def test_a_lone_carriage_return_never_reaches_the_insert_text(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/carriage_return.py"
    _open(client, uri, Q_SOURCE)
    items = await _items(client, uri, 4, len("q = "))
    assert len(items) == 1
    assert "\r" not in items[0].insert_text
    assert lsp_lines(_apply(Q_SOURCE, items[0]))[4:] == ["q = compute(1)  # one", "print(q)"]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_document_with_lone_carriage_returns_gets_the_same_edit(client, automatic):
    """Positions are on LSP's lines all the way down: a document whose lines end in a lone \\r gets the edit a
    \\n document gets (before: its cursor was taken for one on '\\n' lines, and clamped into the first line)."""
    uri = f"file:///tmp/dg_lsp_e2e_edits/lone_cr_{automatic}.py"
    _open(client, uri, CR_SOURCE)
    items = await _items(client, uri, 4, 0, automatic)  # column 0, before "    return total"
    assert len(items) == 1
    assert "\r" not in items[0].insert_text
    after = _apply(CR_SOURCE, items[0])
    assert lsp_lines(after)[3:6] == ["        total += x", "    total += 1", "    return total"]
