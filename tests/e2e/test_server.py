"""The real server over the real protocol, with a tiny random DiffusionGemma on CPU."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import CAPABILITIES, server_command, wait_ready

pytestmark = pytest.mark.asyncio(loop_scope="module")

URI = "file:///tmp/dg_lsp_e2e/example.py"
SOURCE = "def add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"
# The random tiny model's text never parses; these tests are about positions and ranges, so the documents are
# plain text (no syntax gate) and the model gives text at every position asked for here.
LANGUAGE = "plaintext"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=server_command()), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.edits = []

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=CAPABILITIES, initialization_options={"maxSteps": 4, "temperature": 0.3,
                                                           "lengthStrategy": "search"}))
    lsp_client.init_result = result
    status = await wait_ready(lsp_client)
    assert status["state"] == "ready", status
    yield
    await lsp_client.shutdown_session()


def _open(client, uri=URI, text=SOURCE, language=LANGUAGE, version=1):
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=version, text=text)))


async def _inline(client, line, character, uri=URI, kind=types.InlineCompletionTriggerKind.Invoked, selected=None):
    return await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind, selected_completion_info=selected)))


async def test_advertises_inline_completion_and_commands(client: LanguageClient):
    caps = client.init_result.capabilities
    assert caps.inline_completion_provider
    assert set(caps.execute_command_provider.commands) >= {"dgLsp.fillSelection", "dgLsp.status"}
    assert caps.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    # $/progress while the model loads and warms up: begin ... end on one token
    (reports,) = [r for r in client.progress_reports.values() if r]
    assert reports[0].kind == "begin" and reports[0].title.startswith("dg-lsp")
    assert reports[-1].kind == "end"


async def test_incremental_change_then_inline_completion_on_one_line(client: LanguageClient):
    _open(client)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=1, character=12), end=types.Position(line=1, character=17)),
            text="a * b")]))
    for kind in (types.InlineCompletionTriggerKind.Invoked, types.InlineCompletionTriggerKind.Automatic):
        result = await _inline(client, 2, 11, kind=kind)
        assert isinstance(result, types.InlineCompletionList) and result.items, result
        for item in result.items:
            assert item.range.start.line == item.range.end.line == 2
            assert item.range.start.character == item.range.end.character == 11
            assert isinstance(item.insert_text, str) and item.insert_text


async def test_selected_completion_info_replaces_that_range(client: LanguageClient):
    _open(client, uri=URI + "2")
    rng = types.Range(start=types.Position(line=1, character=4), end=types.Position(line=1, character=9))
    result = await _inline(client, 1, 9, uri=URI + "2",
                           selected=types.SelectedCompletionInfo(range=rng, text="total"))
    assert result.items, result
    for item in result.items:
        assert item.range == rng


async def test_fill_selection_applies_an_edit_exactly_on_the_selection(client: LanguageClient):
    uri = URI + "3"
    _open(client, uri=uri)
    rng = {"start": {"line": 1, "character": 12}, "end": {"line": 2, "character": 4}}
    client.edits.clear()
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dgLsp.fillSelection", arguments=[{"uri": uri, "range": rng}]))
    # The tiny model is deterministic (seed 0) and fills this hole with non-pad tokens.
    assert result["applied"] is True and result["text"].strip(), result
    assert len(client.edits) == 1
    (change,) = client.edits[0].document_changes
    (edit,) = change.edits
    assert change.text_document.uri == uri and change.text_document.version == 1
    assert edit.range == types.Range(start=types.Position(line=1, character=12),
                                     end=types.Position(line=2, character=4))
    assert edit.new_text == result["text"]


async def test_status_reports_model_and_latency(client: LanguageClient):
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
    assert status["state"] == "ready" and status["device"] == "cpu"
    assert status["lastLatencyMs"] is not None and status["lastLatencyMs"] > 0


async def test_unknown_uri_gives_empty_result_and_server_still_works(client: LanguageClient):
    result = await _inline(client, 0, 0, uri="file:///nope/never-opened.py")
    assert result is None or len(result.items) == 0
    await _assert_normal_request_works(client)


async def _assert_normal_request_works(client):
    _open(client, uri=URI + "-ok")
    result = await _inline(client, 2, 11, uri=URI + "-ok")
    assert isinstance(result, types.InlineCompletionList)


async def test_position_past_the_end_is_clamped(client: LanguageClient):
    _open(client, uri=URI + "4")
    result = await _inline(client, 500, 900, uri=URI + "4")
    assert isinstance(result, types.InlineCompletionList) and result.items, result
    for item in result.items:  # the empty line after the final line break
        assert item.range.start == item.range.end == types.Position(line=SOURCE.count("\n"), character=0)
    result = await _inline(client, 1, 900, uri=URI + "4")
    assert result.items, result
    for item in result.items:
        assert item.range.start == types.Position(line=1, character=len("    total = a + b"))
    await _assert_normal_request_works(client)


async def test_surrogate_pairs_use_utf16_columns(client: LanguageClient):
    """The server converts UTF-16 columns to characters and back: checked where an echo of the requested
    position would be wrong, and by applying the items as the editor does."""
    uri = URI + "5"
    line0 = 'x = "😋😋"  # ok'  # 14 characters, 16 UTF-16 units (each emoji is 2)
    text = line0 + "\ny = 1\n"
    _open(client, uri=uri, text=text)
    # Past the end of the line: clamped to its end in UTF-16 units (16), not in characters (14).
    result = await _inline(client, 0, 99, uri=uri)
    assert result.items, result
    assert all(item.range.start == types.Position(line=0, character=16) for item in result.items)
    # Inside the second emoji's surrogate pair (units 7-8): the server never splits it.
    result = await _inline(client, 0, 8, uri=uri)
    assert result.items, result
    for item in result.items:
        assert item.range.start.character in (7, 9), item.range
    # Right after the closing quote (unit 10): the edit applied in UTF-16 lands between `"` and the spaces.
    result = await _inline(client, 0, 10, uri=uri)
    assert result.items, result
    for item in result.items:
        units = line0.encode("utf-16-le")
        start = item.range.start.character * 2
        edited = (units[:start] + item.insert_text.encode("utf-16-le") + units[start:]).decode("utf-16-le")
        assert edited == 'x = "😋😋"' + item.insert_text + "  # ok"
    await _assert_normal_request_works(client)


async def test_five_megabyte_document(client: LanguageClient):
    uri = URI + "-big"
    body = "def f{0}(x):\n    return x + {0}\n\n".format
    text = "".join(body(i) for i in range(5 * 1024 * 1024 // 32))
    assert len(text) > 5_000_000
    _open(client, uri=uri, text=text)
    lines = text.count("\n")
    line = lines // 2 + 1
    result = await _inline(client, line, 4, uri=uri)
    assert isinstance(result, types.InlineCompletionList) and result.items, result  # not given up on
    assert all(item.range.start == types.Position(line=line, character=4) for item in result.items)
    await _assert_normal_request_works(client)


async def test_unknown_language_id(client: LanguageClient):
    uri = "file:///tmp/dg_lsp_e2e/notes.weird"
    _open(client, uri=uri, text="some words here\nand more\n", language="klingon")
    result = await _inline(client, 1, 3, uri=uri)
    assert isinstance(result, types.InlineCompletionList)
    await _assert_normal_request_works(client)
