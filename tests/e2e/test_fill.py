"""dgLsp.fillSelection over the real protocol (issue 14.2, 14.4): a versioned edit exactly on the selection,
never applied to a document that changed during the fill, never a silently cut fill."""

from __future__ import annotations

import asyncio

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import CAPABILITIES, server_command, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

SOURCE = "def add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"
# Length search (rows of 4..32 tokens, a full row is a chosen length, not a cut) and a language without a
# parser, so the random tiny model's text is applied as it is.
OPTIONS = {"maxSteps": 4, "lengthStrategy": "search", "completionCache": False}


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command()), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.edits = []

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPABILITIES,
                                                               initialization_options=OPTIONS))
    assert (await wait_ready(lsp_client))["state"] == "ready"
    yield
    await lsp_client.shutdown_session()


def _open(client, uri, text=SOURCE, version=1):
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="plaintext", version=version, text=text)))


def _range(l1, c1, l2, c2):
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}


async def _fill(client, uri, rng):
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dgLsp.fillSelection", arguments=[{"uri": uri, "range": rng}]))


async def _configure(client, **settings):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"dgLsp": settings}))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))


async def test_the_edit_is_versioned_and_replaces_exactly_the_selection(client: LanguageClient):
    uri = "file:///tmp/dg_lsp_fill/exact.txt"
    _open(client, uri, version=7)
    client.edits.clear()
    result = await _fill(client, uri, _range(1, 12, 1, 17))
    assert result["applied"] is True and result["text"].strip(), result
    (edit,) = client.edits
    assert edit.changes is None
    (change,) = edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == 7
    (text_edit,) = change.edits
    assert text_edit.range == types.Range(start=types.Position(line=1, character=12),
                                          end=types.Position(line=1, character=17))
    assert text_edit.new_text == result["text"]


async def test_a_document_changed_during_the_fill_is_not_edited(client: LanguageClient):
    """A line inserted above the selection while the fill ran made the edit overwrite `add(a, b):`."""
    uri = "file:///tmp/dg_lsp_fill/stale.txt"
    _open(client, uri)
    await _configure(client, maxSteps=128, deadlineMs=60000, temperature=0.8)  # the fill runs a while
    try:
        client.edits.clear()
        fill = asyncio.ensure_future(_fill(client, uri, _range(1, 12, 1, 17)))
        await asyncio.sleep(0.05)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                text="import os\n")]))
        result = await asyncio.wait_for(fill, 120)
    finally:
        await _configure(client, **OPTIONS, deadlineMs=1000, temperature=0.2)
    assert result["applied"] is False and "changed" in result["reason"], result
    assert client.edits == []


async def test_a_selection_longer_than_the_canvas_is_refused(client: LanguageClient):
    """The tiny model's canvas holds 32 hole tokens at most: a fill of the whole file would be cut."""
    uri = "file:///tmp/dg_lsp_fill/long.txt"
    _open(client, uri)
    client.edits.clear()
    result = await _fill(client, uri, _range(0, 0, 5, 16))
    assert result["applied"] is False and "tokens" in result["reason"] and "select less" in result["reason"]
    assert client.edits == []


async def test_a_pad_fill_that_used_the_whole_canvas_is_refused(client: LanguageClient):
    """Pad-fill: a fill that never wrote an end used every position of the hole and may be cut (the random
    tiny model never writes an end)."""
    uri = "file:///tmp/dg_lsp_fill/pad.txt"
    _open(client, uri)
    await _configure(client, lengthStrategy="pad")
    try:
        client.edits.clear()
        result = await _fill(client, uri, _range(1, 12, 1, 17))
    finally:
        await _configure(client, lengthStrategy="search")
    assert result["applied"] is False and "whole canvas" in result["reason"], result
    assert client.edits == []
