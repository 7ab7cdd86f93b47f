"""Notebooks over LSP: the server asks for every notebook's cells (`SYNC`), and a completion in a code cell reads
the whole notebook as one document (`context.notebook`)."""

from __future__ import annotations

from urllib.parse import unquote

from lsprotocol import types

from dg_lsp.context.languages import normalize_language
from dg_lsp.context.notebook import CODE, MARKUP, Cell, NotebookView, notebook_view

# every notebook, all its cells (markdown too: it becomes comments above the code)
SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithNotebook(notebook="*")])


def cell_view(workspace, uri: str, hole_lines: range) -> NotebookView | None:
    """The notebook of the cell `uri` as one document around it (`hole_lines`: the cell's lines the hole spans),
    or None where `uri` is not a cell of an open notebook (a plain document)."""
    notebook = workspace.get_notebook_document(cell_uri=uri)
    if notebook is None:
        return None
    cells, index = [], None
    for cell in notebook.cells:
        doc = workspace.text_documents.get(unquote(cell.document))
        if doc is None:
            continue
        if unquote(cell.document) == unquote(uri):
            index = len(cells)
        kind = CODE if cell.kind == types.NotebookCellKind.Code else MARKUP
        cells.append(Cell(kind, normalize_language(doc.language_id), doc.source))
    return None if index is None else notebook_view(cells, index, hole_lines)
