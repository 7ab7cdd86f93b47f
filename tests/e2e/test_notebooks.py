"""Notebooks over the real protocol: the server syncs a notebook's cells (notebookDocument/*), and a completion in a
code cell reads the cells around it. The real server, engine and tiny model; the model's text scripted
(tests/e2e/scripted_server.py), so what the editor receives can be checked exactly. The name check shows whether
the other cells were read: a suggestion that calls a function defined in another cell is shown only if that cell
was part of the document the server judged it in."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import CAPABILITIES, tiny_model_path, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

# [what the prefix ends with, what the model writes into the hole]
ANSWERS = [
    ["shown = ", "area(radius)"],
    ["other = ", "made_up(radius)"],
    ["p = ", "perimeter(radius)"],
    ["    return ", "area(r) * 2"],
    # the model runs on into a next cell of its own (the view's `# %%` markers)
    ["radius = 3\n", "\ntotal = area(radius)\n\n# %%\nprint(total)\n"],
    ["radius = 4\n", "\ntotal = radius * 2\n\n# %%\nprint(total)\n"],
]
SCRIPT = Path(tempfile.gettempdir()) / "dg-lsp-e2e-notebook-answers.json"
SCRIPT.write_text(json.dumps(ANSWERS), encoding="utf-8")
COMMAND = [sys.executable, str(Path(__file__).with_name("scripted_server.py")), str(SCRIPT), "serve",
           "--model", tiny_model_path(), "--device", "cpu"]
NOTEBOOK_CAPABILITIES = types.ClientCapabilities(
    window=CAPABILITIES.window, workspace=CAPABILITIES.workspace, general=CAPABILITIES.general,
    notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()))

MARKDOWN = "# Circles\nSome geometry."
DEFINE = "%matplotlib inline\n!pip list\nimport math\n\ndef area(r):\n    return math.pi * r * r\n"
# each document has one unfinished line, the hole's: the name check reads a document that parses with the answer in
USE = "radius = 2\nshown = \n"
OTHER = "radius = 2\nother = \n"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=COMMAND), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.edits = []

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=NOTEBOOK_CAPABILITIES, initialization_options={"maxSteps": 2, "completionCache": False}))
    lsp_client.server_capabilities = result.capabilities
    status = await wait_ready(lsp_client)
    assert status["state"] == "ready", status
    yield
    await lsp_client.shutdown_session()


def _cell_uri(notebook: str, n: int) -> str:
    return f"vscode-notebook-cell:{notebook}#cell{n}"


def _open_notebook(client, name: str, cells: list[tuple[str, str]]) -> tuple[str, list[str]]:
    """Open a notebook of (kind "code" | "markdown", text) cells; its URI and its cells' URIs."""
    uri = f"file:///tmp/dg_lsp_e2e_notebooks/{name}.ipynb"
    cell_uris = [_cell_uri(uri, n) for n in range(len(cells))]
    kinds = {"code": (types.NotebookCellKind.Code, "python"), "markdown": (types.NotebookCellKind.Markup, "markdown")}
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=uri, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=kinds[kind][0], document=cell_uri)
                   for (kind, _), cell_uri in zip(cells, cell_uris)]),
        cell_text_documents=[types.TextDocumentItem(uri=cell_uri, language_id=kinds[kind][1], version=1, text=text)
                             for (kind, text), cell_uri in zip(cells, cell_uris)]))
    return uri, cell_uris


async def _items(client, uri: str, line: int, character: int):
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    return list(result.items if isinstance(result, types.InlineCompletionList) else (result or []))


def _at(line: int, character: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=character),
                       end=types.Position(line=line, character=character))


async def test_the_server_asks_for_notebooks(client):
    sync = client.server_capabilities.notebook_document_sync
    assert sync is not None and sync.notebook_selector[0].notebook == "*"


async def test_a_cell_reads_what_the_cells_above_it_define(client):
    _, cells = _open_notebook(client, "circles", [("markdown", MARKDOWN), ("code", DEFINE), ("code", USE)])
    items = await _items(client, cells[2], 1, len("shown = "))
    assert [(i.insert_text, i.range) for i in items] == [("area(radius)", _at(1, len("shown = ")))]
    # the same cell alone, as a plain document: nothing binds area, and the name check refuses it
    plain = "file:///tmp/dg_lsp_e2e_notebooks/alone.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=plain, language_id="python", version=1, text=USE)))
    assert await _items(client, plain, 1, len("shown = ")) == []


async def test_a_name_no_cell_binds_is_still_refused_beside_magics(client):
    # the other cell's `%matplotlib inline` and `!pip list` are read as comments: the notebook parses, so the name
    # check can tell that nothing binds made_up
    _, cells = _open_notebook(client, "magics", [("code", DEFINE), ("code", OTHER)])
    assert await _items(client, cells[1], 1, len("other = ")) == []


async def test_an_answer_stops_where_it_starts_another_cell(client):
    # the cursor on the cell's last line, empty: a suggestion there may be several lines long
    _, cells = _open_notebook(client, "runs_on", [("code", DEFINE), ("code", "radius = 3\n")])
    items = await _items(client, cells[1], 1, 0)
    assert [(i.insert_text, i.range) for i in items] == [("total = area(radius)", _at(1, 0))]


async def test_in_a_script_of_cells_too_an_answer_stops_at_the_next_cell(client):
    """A .py file written as cells (`# %%`, VS Code's Python tools and jupytext): a plain document to the server."""
    uri, text = "file:///tmp/dg_lsp_e2e_notebooks/cells.py", "import math\n\n# %%\nradius = 4\n"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    items = await _items(client, uri, 4, 0)
    assert [(i.insert_text, i.range) for i in items] == [("total = radius * 2", _at(4, 0))]


async def test_edits_to_cells_and_new_cells_are_read(client):
    uri, cells = _open_notebook(client, "edits", [("code", DEFINE), ("code", USE)])
    # area renamed in the first cell: the second cell's suggestion now reads a name nothing binds
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cells[0], version=2),
                changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line=4, character=4),
                                      end=types.Position(line=4, character=8)), text="surface")])]))))
    assert await _items(client, cells[1], 1, len("shown = ")) == []
    # the hole's line retyped: its suggestion calls perimeter, which no cell defines yet
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=3),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cells[1], version=2),
                changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(line=1, character=0),
                                      end=types.Position(line=1, character=len("shown = "))), text="p = ")])]))))
    assert await _items(client, cells[1], 1, len("p = ")) == []
    # a new cell above the second one, with that function
    new = _cell_uri(uri, 9)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=4),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            structure=types.NotebookDocumentCellChangeStructure(
                array=types.NotebookCellArrayChange(start=1, delete_count=0, cells=[
                    types.NotebookCell(kind=types.NotebookCellKind.Code, document=new)]),
                did_open=[types.TextDocumentItem(uri=new, language_id="python", version=1,
                                                 text="def perimeter(r):\n    return 2 * r\n")])))))
    items = await _items(client, cells[1], 1, len("p = "))
    assert [(i.insert_text, i.range) for i in items] == [("perimeter(radius)", _at(1, len("p = ")))]


async def test_a_selection_fill_in_a_cell_edits_that_cell(client):
    _, cells = _open_notebook(client, "fill", [("code", DEFINE), ("code", "def double(r):\n    return 0\n")])
    client.edits.clear()
    selected = types.Range(start=types.Position(line=1, character=len("    return ")),
                           end=types.Position(line=1, character=len("    return 0")))
    answer = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dgLsp.fillSelection", arguments=[{"uri": cells[1], "range": json.loads(json.dumps(
            {"start": {"line": 1, "character": selected.start.character},
             "end": {"line": 1, "character": selected.end.character}}))}]))
    assert answer["applied"] is True, answer
    [edit] = client.edits
    [change] = edit.document_changes
    assert change.text_document.uri == cells[1] and change.text_document.version == 1
    assert [(e.range, e.new_text) for e in change.edits] == [(selected, "area(r) * 2")]


async def test_changes_to_notebooks_and_cells_that_are_not_open_are_ignored(client):
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri="file:///nowhere.ipynb", version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[]))))
    uri, cells = _open_notebook(client, "stray", [("code", DEFINE), ("code", USE)])
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=_cell_uri(uri, 7), version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text="x = 1\n")])]))))
    # the server is still up, and the notebook as it was
    assert [i.insert_text for i in await _items(client, cells[1], 1, len("shown = "))] == ["area(radius)"]
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=c) for c in cells]))
    assert await _items(client, cells[1], 1, len("shown = ")) == []  # closed: not a document any more
