"""dgLsp.fillSelection's rules without a model (issue 14.3, 14.4): a selection fill is never cut, an empty
fill is never applied, a selection longer than the canvas is refused."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from lsprotocol import types

from dg_lsp.completion import CompletionRequest, CompletionService, Suggestion
from dg_lsp.config import Settings
from dg_lsp.engine import InfillResult
from dg_lsp.server import build_server

pytestmark = pytest.mark.timeout(60)

SOURCE = "def add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"


def test_a_selection_fill_is_never_cut_at_a_dedent():
    """`return total\\n\\n\\nprint(add(1, 2))` lost its print line to cut_to_block."""
    service = CompletionService(engine=None, settings=Settings())
    req = CompletionRequest(SOURCE, "python", 2, 4, end=(5, 16), automatic=False, doc_key="k")
    p = service._prepare(req)  # noqa: SLF001
    answer = "return total\n\n\nprint(add(1, 2))"
    assert service._finish(p, InfillResult(text=answer)) == answer  # noqa: SLF001
    long = "".join(f"    x{i} = {i}\n" for i in range(40)) + "print(1)"
    assert service._finish(p, InfillResult(text=long)) == long  # noqa: SLF001 - more lines than maxLines


def _server(text: str, completion_text: str, generated: int = 1, hole: int = 12):
    server = build_server(Settings())
    doc = SimpleNamespace(version=3, position_codec=None)
    server.snapshot = lambda uri: (doc, text, text.splitlines(True))
    applied = []

    async def complete_at(uri, start, end, automatic, queue_key=None, snap=None, check=None):
        return (Suggestion(text=completion_text, start=(0, 0), end=(0, 0),
                           result=InfillResult(text=completion_text, generated_tokens=generated, hole_length=hole)),
                types.Range(start=start, end=end))

    async def apply(params):
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    server.complete_at = complete_at
    server.workspace_apply_edit_async = apply
    server.protocol._workspace = SimpleNamespace(text_documents={"file:///a.py": doc})  # noqa: SLF001
    return server, applied


RANGE = types.Range(start=types.Position(line=1, character=4), end=types.Position(line=1, character=9))


@pytest.mark.parametrize("fill", ["", "   ", "\n\n", " \t\n  "])
def test_an_empty_or_blank_fill_is_never_applied(fill):
    server, applied = _server(SOURCE, fill)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and result["reason"] == "no fill"
    assert applied == []


def test_a_fill_that_used_the_whole_canvas_is_refused_not_applied_cut():
    server, applied = _server(SOURCE, '"""', generated=12, hole=12)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and "whole canvas" in result["reason"]
    assert applied == []


def test_a_fill_is_applied_with_the_version_it_was_computed_on():
    server, applied = _server(SOURCE, "total", generated=2, hole=12)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result == {"applied": True, "text": "total"}
    (params,) = applied
    (change,) = params.edit.document_changes
    assert change.text_document.uri == "file:///a.py" and change.text_document.version == 3
    assert change.edits == [types.TextEdit(range=RANGE, new_text="total")]
    assert params.edit.changes is None
