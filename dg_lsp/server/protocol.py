"""The JSON-RPC protocol with repairs to pygls 2.1.1's behaviour on bad input.

1. A request whose params do not deserialize is answered with InvalidParams (pygls logs it and
   never answers, so the client waits forever).
2. A message that is not a JSON-RPC 2.0 object (an array, a number, `"jsonrpc": "1.0"`, a method
   that is not a string) is answered with InvalidRequest when it carries an id, else dropped.
3. Before `initialize`, requests get ServerNotInitialized and notifications other than `exit`
   are dropped, as the LSP specification says.
4. A response of the client that does not deserialize fails the request it answers (pygls drops
   it, and whoever awaits the answer waits forever).
5. didChange applies edits leniently (`documents.apply_change`) and ignores documents that
   are not open, instead of raising half-way through.
6. Documents are `LspDocument`s (server/lines.py): lines split only where LSP splits them, and
   an edit re-splits only the lines it touches.
7. After `shutdown`, requests get InvalidRequest (pygls drops them unanswered); notifications
   other than `exit` are dropped.
8. A notebook's cells are `LspDocument`s too, their edits applied as (5) applies them, and a change to a
   notebook (or a cell) that is not open is logged and ignored (pygls raises half-way through).
Server-side errors outside requests are logged, not shown (`DgLspServer.report_server_error`).
"""

from __future__ import annotations

import copy
import logging
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from .documents import apply_change, new_document

log = logging.getLogger(__name__)

SERVER_NOT_INITIALIZED = -32002
_ALLOWED_BEFORE_INIT = {types.INITIALIZE, types.EXIT}


class DgLspProtocol(LanguageServerProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_seen = False

    def structure_message(self, data):
        if isinstance(data, dict) and "jsonrpc" in data and "method" in data and not isinstance(data["method"], str):
            self._reject(data.get("id"), JsonRpcInvalidRequest("the method must be a string"))
            raise JsonRpcInvalidRequest("the method must be a string")
        try:
            return super().structure_message(data)
        except (JsonRpcInvalidParams, JsonRpcInternalError) as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                error = JsonRpcInvalidParams(f"invalid params for {data.get('method')!r}")
                self._send_response(data["id"], None, error.to_response_error())
            elif isinstance(data, dict) and "id" in data:  # a malformed answer to one of our requests
                self._fail_pending(data["id"])
            log.warning("rejected malformed message: %s", type(exc).__name__)
            raise

    def _fail_pending(self, msg_id) -> None:
        """Without this the request's future never resolves and its awaiter hangs forever."""
        try:
            future = self._request_futures.pop(msg_id, None)
        except TypeError:  # an unhashable id
            return
        if future is not None and not future.done():
            future.set_exception(JsonRpcInvalidParams("malformed response from the client"))

    def _reject(self, msg_id, error: JsonRpcException) -> None:
        if isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool):
            self._send_response(msg_id, None, error.to_response_error())

    def handle_message(self, message):
        jsonrpc = getattr(message, "jsonrpc", None)
        method = getattr(message, "method", None)
        if jsonrpc != self.VERSION:
            log.warning("dropped a message that is not JSON-RPC 2.0: %.200r", message)
            if method is not None:
                self._reject(getattr(message, "id", None), JsonRpcInvalidRequest("not a JSON-RPC 2.0 message"))
            return None
        if method is not None and self._shutdown and method != types.EXIT:
            log.warning("%s after shutdown", method)
            self._reject(getattr(message, "id", None), JsonRpcInvalidRequest("the server is shut down"))
            return None
        if method is not None and not self._initialize_seen:
            if method == types.INITIALIZE:
                self._initialize_seen = True
            elif method not in _ALLOWED_BEFORE_INIT:
                log.warning("%s before initialize", method)
                error = JsonRpcException(code=SERVER_NOT_INITIALIZED, message="server not initialized")
                self._reject(getattr(message, "id", None), error)
                return None
        return super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        self._put(params.text_document)
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield user_handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if not self._change(params.text_document, params.content_changes, "didChange for a document"):
            return
        if (user_handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    def _put(self, item: types.TextDocumentItem) -> None:
        self.workspace.text_documents[unquote(item.uri)] = new_document(
            item.uri, item.text, item.version, item.language_id, self.workspace.position_codec)

    def _change(self, document, changes, what: str) -> bool:
        """`changes` applied to the open `document` (a versioned identifier), leniently (5); False (logged) where it
        is not open."""
        doc = self.workspace.text_documents.get(unquote(document.uri))
        if doc is None:
            log.warning("%s that is not open: %s", what, document.uri)
            return False
        for change in changes:
            apply_change(doc, change)
        doc.version = document.version
        return True

    # -- notebooks (8) -----------------------------------------------------------------------------
    def _open_cell(self, item: types.TextDocumentItem, notebook_uri: str) -> None:
        self._put(item)
        self.workspace._cell_in_notebook[unquote(item.uri)] = unquote(notebook_uri)  # noqa: SLF001 - pygls' own map

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def lsp_notebook_document__did_open(self, params: types.DidOpenNotebookDocumentParams):
        notebook = params.notebook_document
        self.workspace.notebook_documents[unquote(notebook.uri)] = copy.deepcopy(notebook)
        for item in params.cell_text_documents:
            self._open_cell(item, notebook.uri)
        if (user_handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_OPEN)) is not None:
            yield user_handler, (params,), None

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: types.DidChangeNotebookDocumentParams):
        uri = params.notebook_document.uri
        notebook = self.workspace.notebook_documents.get(unquote(uri))
        if notebook is None:
            log.warning("notebookDocument/didChange for a notebook that is not open: %s", uri)
            return
        notebook.version = params.notebook_document.version
        if params.change.metadata is not None:
            notebook.metadata = params.change.metadata
        cells = params.change.cells
        if cells is not None:
            self._change_cells(notebook, cells)
        if (user_handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CHANGE)) is not None:
            yield user_handler, (params,), None

    def _change_cells(self, notebook: types.NotebookDocument, cells) -> None:
        by_document = {cell.document: cell for cell in notebook.cells}
        for data in cells.data or []:
            cell = by_document.get(data.document)
            if cell is not None:
                cell.kind, cell.metadata, cell.execution_summary = data.kind, data.metadata, data.execution_summary
        structure = cells.structure
        if structure is not None:
            now = list(notebook.cells)
            start = min(max(structure.array.start, 0), len(now))
            notebook.cells = now[:start] + list(structure.array.cells or []) + \
                now[start + max(structure.array.delete_count, 0):]
            for item in structure.did_open or []:
                self._open_cell(item, notebook.uri)
            for closed in structure.did_close or []:
                self.workspace.remove_text_document(closed.uri)
        for text in cells.text_content or []:
            self._change(text.document, text.changes, "a change to a notebook cell")
