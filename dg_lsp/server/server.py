"""The dg-lsp language server: thin handlers over CompletionService and EngineHolder.

Handlers find the document, build a CompletionRequest from an immutable snapshot, await the
engine, convert the answer. A failed completion logs why and returns no items; nothing here
may take the server down.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from dg_lsp import __version__
from dg_lsp.completion import Completion, CompletionRequest, CompletionService
from dg_lsp.config import SECTION, Settings, engine_key, merge

from .documents import process_usage, read_unopened
from .model_holder import EngineHolder
from .positions import to_client, to_server
from .protocol import DgLspProtocol

log = logging.getLogger(__name__)

class DgLspServer(LanguageServer):
    def __init__(self, settings: Settings):
        super().__init__("dg-lsp", __version__, protocol_cls=DgLspProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.cli_settings = settings  # defaults < CLI
        self.init_options: dict = {}
        self.settings = settings
        self.holder = EngineHolder()
        self._service: CompletionService | None = None
        self._shown: set[str] = set()

    # -- settings and model --------------------------------------------------------------------
    def show_once(self, message: str, kind=types.MessageType.Error) -> None:
        log.error(message) if kind == types.MessageType.Error else log.warning(message)
        if message not in self._shown:
            self._shown.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=f"dg-lsp: {message}"))

    def apply_settings(self, workspace_cfg: dict | None) -> None:
        settings, errors = merge(self.cli_settings, self.init_options)
        settings, more = merge(settings, workspace_cfg)
        for err in errors + more:
            self.show_once(err, types.MessageType.Warning)
        reload = engine_key(settings) != engine_key(self.settings) or self.holder.state == "idle"
        self.settings = settings
        if reload:
            self.holder.load(settings, self._progress_callback())

    def _progress_callback(self):
        token = f"dg-lsp-load-{uuid.uuid4().hex[:8]}"
        caps = self.client_capabilities.window
        enabled = bool(caps and caps.work_done_progress)
        state = {"begun": False}

        async def report(message: str, pct: int) -> None:
            if not enabled:
                return
            if not state["begun"]:
                try:
                    await asyncio.wait_for(self.work_done_progress.create_async(token), timeout=5)
                except Exception as exc:  # noqa: BLE001 - progress is a courtesy
                    log.warning("window/workDoneProgress/create failed: %s", exc)
                    return
                self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="dg-lsp: loading model", message=message, percentage=pct))
                state["begun"] = True
            elif pct >= 100:
                self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
            else:
                self.work_done_progress.report(token, types.WorkDoneProgressReport(message=message, percentage=pct))

        return report

    async def fetch_workspace_config(self) -> dict | None:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return None
        try:
            result = await asyncio.wait_for(self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])), timeout=5)
        except Exception as exc:  # noqa: BLE001 - a client that fails here just gets defaults
            log.warning("workspace/configuration failed: %s", exc)
            return None
        return result[0] if result and isinstance(result[0], dict) else None

    async def completion_service(self) -> CompletionService | None:
        """The service of the current engine: it lives as long as the engine, with its caches."""
        engine = await self.holder.get()
        if engine is None:
            if self.holder.error:
                self.show_once(self.holder.error)
            return None
        if self._service is None or self._service.engine is not engine:
            self._service = CompletionService(engine, self.settings)
        self._service.settings = self.settings
        return self._service

    def report_server_error(self, error: Exception, source) -> None:
        """Out-of-band errors (a bad notification, an unparsable message) are logged, never shown:
        the user cannot act on them, and pygls' default pops up "Error in server" for each."""
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    def status(self) -> dict:
        out = self.holder.status()
        out["completion"] = dict(self._service.stats) if self._service is not None else {}
        out["engine"] = dict(self.holder.engine.stats) if self.holder.engine is not None else {}
        out["process"] = process_usage()
        return out

    # -- documents ----------------------------------------------------------------------------
    def snapshot(self, uri: str):
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            doc = read_unopened(uri, self.workspace.position_codec, self.settings.max_document_chars)
            if doc is None:
                log.warning("document not open: %s", uri)
                return None
        source = doc.source
        if len(source) > self.settings.max_document_chars:
            log.warning("document too large for completion (%d chars): %s", len(source), uri)
            return None
        return doc, source, doc.lines

    async def complete_at(self, uri: str, start: types.Position, end: types.Position | None,
                          automatic: bool, queue_key: str | None = None) -> tuple[Completion, types.Range] | None:
        """`queue_key` names the supersession queue: inline requests for a document replace each other;
        an explicit fill has its own key so a stray as-you-type request cannot cancel it."""
        snap = self.snapshot(uri)
        if snap is None:
            return None
        doc, source, lines = snap
        codec = doc.position_codec
        s = to_server(lines, codec, start)
        e = to_server(lines, codec, end) if end is not None else s
        if e < s:
            s, e = e, s
        service = await self.completion_service()
        if service is None:
            return None
        req = CompletionRequest(text=source, language_id=doc.language_id, line=s[0], column=s[1],
                                end=None if end is None else e, automatic=automatic, doc_key=queue_key or uri)
        req = _to_newline_coordinates(req, lines, source)
        completion = await service.complete(req)
        if completion is None:
            return None
        rng = types.Range(start=to_client(lines, codec, *s), end=to_client(lines, codec, *e))
        return completion, rng


def _to_newline_coordinates(req: CompletionRequest, lines, source: str) -> CompletionRequest:
    """pygls splits lines like str.splitlines (also on \\x0c, \\u2028, ...); context works on '\\n'."""
    def convert(line: int, col: int) -> tuple[int, int]:
        offset = sum(len(x) for x in lines[:line]) + col
        return source.count("\n", 0, offset), offset - (source.rfind("\n", 0, offset) + 1)

    line, col = convert(req.line, req.column)
    end = convert(*req.end) if req.end is not None else None
    return CompletionRequest(req.text, req.language_id, line, col, end, req.automatic, req.doc_key)

