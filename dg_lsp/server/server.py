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
from dg_lsp.completion import CompletionRequest, CompletionService, Suggestion
from dg_lsp.config import SECTION, Settings, engine_key, merge
from dg_lsp.engine import InfillRequest

from .documents import process_usage, read_unopened
from .model_holder import EngineHolder
from .notebooks import SYNC, cell_view
from .positions import to_client, to_server
from .protocol import DgLspProtocol

log = logging.getLogger(__name__)

# An explicit (Invoked) request or a fill waits this long for a model that is still loading; an automatic one
# does not wait (the user types on, and the client shows the load's $/progress).
MODEL_WAIT_S = 60.0


class DgLspServer(LanguageServer):
    def __init__(self, settings: Settings):
        super().__init__("dg-lsp", __version__, protocol_cls=DgLspProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=SYNC)
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
        """Merge the client's settings over the command line's and (re)load the model if they need it.
        A client cannot set the command-line-only settings (config.CLI_ONLY: remote code, pickled weights)."""
        settings, errors = merge(self.cli_settings, self.init_options, from_client=True)
        settings, more = merge(settings, workspace_cfg, from_client=True)
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

    async def completion_service(self, wait_s: float | None = MODEL_WAIT_S) -> CompletionService | None:
        """The service of the current engine: it lives as long as the engine, with its caches.
        Waits at most `wait_s` seconds for a model still loading."""
        engine = await self.holder.get(timeout=wait_s)
        if engine is None:
            if self.holder.state == "loading":
                log.info("the model is still loading: no completion")
            elif self.holder.error:
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

    def document_version(self, uri: str) -> int | None:
        doc = self.workspace.text_documents.get(unquote(uri))
        return None if doc is None else doc.version

    async def complete_at(self, uri: str, start: types.Position, end: types.Position | None,
                          automatic: bool, queue_key: str | None = None, snap=None,
                          check=None) -> tuple[Suggestion, types.Range] | None:
        """`queue_key` names the supersession queue: inline requests for a document replace each other;
        an explicit fill has its own key so a stray as-you-type request cannot cancel it. `snap`: a snapshot
        already taken; `check(service, request)`: a refusal reason (str) stops the request before the model runs,
        and is raised as `Refused`."""
        snap = snap or self.snapshot(uri)
        if snap is None:
            return None
        doc, source, lines = snap
        codec = doc.position_codec
        s = to_server(lines, codec, start)
        e = to_server(lines, codec, end) if end is not None else s
        if e < s:
            s, e = e, s
        service = await self.completion_service(0 if automatic else MODEL_WAIT_S)
        if service is None:
            return None
        # a notebook's cell is read inside its notebook (notebooks.cell_view): the same position, `shift` lines down
        view = cell_view(self.workspace, uri, range(s[0], e[0] + 1))
        if view is not None and len(view.text) > self.settings.max_document_chars:
            view = None  # the cell alone
        text, shift = (view.text, view.shift) if view is not None else (source, 0)
        req = CompletionRequest(text=text, language_id=doc.language_id, line=s[0] + shift, column=s[1],
                                end=None if end is None else (e[0] + shift, e[1]), automatic=automatic,
                                doc_key=queue_key or uri, notebook_cell=view is not None)
        if check is not None and (reason := check(service, req)):
            raise Refused(reason)
        suggestion = await service.complete(req)
        if suggestion is None:
            return None
        rng = types.Range(start=to_client(lines, codec, *s), end=to_client(lines, codec, *e))
        return suggestion, rng


    # -- the process -------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the engine's worker and release the model (on shutdown, and whenever the connection ends)."""
        self.holder.close()
        self._service = None

    def start_io(self, *args, **kwargs):
        """stdin may close while requests are queued or running (the editor quit): the worker thread is stopped
        and joined before the interpreter exits, which otherwise aborts (SIGABRT) inside torch (issue 14.15)."""
        try:
            return super().start_io(*args, **kwargs)
        finally:
            self.close()

    def start_tcp(self, *args, **kwargs):
        try:
            return super().start_tcp(*args, **kwargs)
        finally:
            self.close()

    # -- selection fill ------------------------------------------------------------------------
    async def fill_selection(self, uri: str, rng: types.Range) -> dict:
        """Regenerate exactly `rng` and apply it with a versioned edit (issue 14.2-4). Never applies an empty
        fill, a fill of a selection longer than the model can fill at once, or a fill computed on a document
        that changed meanwhile: those answer `applied: false` with the reason (also under `error`)."""
        snap = self.snapshot(uri)
        if snap is None:
            return _not_applied("the document is not open (or too large for completion)")
        doc, version = snap[0], snap[0].version
        try:
            answer = await self.complete_at(uri, rng.start, rng.end, automatic=False, queue_key=f"fill:{uri}",
                                            snap=snap, check=_selection_fits)
        except Refused as exc:
            return _not_applied(str(exc))
        if answer is None:
            return _not_applied("no completion (the model is unavailable or still loading, or a newer fill came)")
        suggestion, edit_range = answer
        text = suggestion.text
        if not text.strip():
            if suggestion.refusal:
                return _not_applied(f"no fill: what the model wrote does not fit there: {suggestion.refusal}", text)
            wrote = suggestion.result is not None and suggestion.result.text.strip()
            return _not_applied("no fill: what the model wrote does not fit there (it would break the code around it, "
                                "or it leaves the selection's block)" if wrote else "no fill", text)
        if (cut := _cut_fill(suggestion)) is not None:
            return _not_applied(cut, text)
        now = self.workspace.text_documents.get(unquote(uri))
        if (now is not doc or now.version != version) and not (now is None and version is None):
            return _not_applied("the document changed while the fill was computed; run the fill again", text)
        edit = types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
            edits=[types.TextEdit(range=edit_range, new_text=text)])])
        try:
            result = await asyncio.wait_for(self.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(edit=edit, label="dg-lsp fill")), timeout=APPLY_EDIT_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a client that fails or never answers: not applied
            log.warning("workspace/applyEdit failed: %s", exc)
            return _not_applied(f"workspace/applyEdit failed: {exc}", text)
        if not (result and result.applied):
            why = getattr(result, "failure_reason", None) if result else None
            return _not_applied(f"the editor did not apply the edit{': ' + why if why else ''}", text)
        return {"applied": True, "text": text}


APPLY_EDIT_TIMEOUT_S = 60.0


def _not_applied(reason: str, text: str | None = None) -> dict:
    out = {"applied": False, "reason": reason, "error": reason}
    if text is not None:
        out["text"] = text
    return out


def _selection_capacity(service: CompletionService) -> tuple[int, str]:
    """The most tokens one fill can hold, and the length strategy that decides it."""
    engine = service.engine
    strategy = service.settings.length_strategy
    if strategy == "auto":
        strategy = "pad" if engine.spec.pad_fill else "search"
    if strategy == "pad":
        return engine.canvas_length - min(engine.spec.suffix_head_tokens, engine.canvas_length - 1), strategy
    return max(InfillRequest.__dataclass_fields__["hole_lengths"].default), strategy


def _selection_fits(service: CompletionService, req: CompletionRequest) -> str | None:
    """A refusal when the selected text is longer than the model can fill at once (issue 14.4): a fill of it
    would be cut, and the user's code lost without a word."""
    if not req.is_selection:
        return None
    (l1, c1), (l2, c2) = (req.line, req.column), req.end
    lines = req.document.split("\n")[l1:l2 + 1]
    segment = "\n".join(lines)
    selected = segment[c1:len(segment) - len(lines[-1]) + c2] if lines else ""
    tokens = len(service.engine.tokenize(selected))
    capacity, _ = _selection_capacity(service)
    if tokens > capacity:
        return (f"the selection is {tokens} tokens, more than the model fills at once ({capacity} tokens): "
                f"select less")
    return None


def _cut_fill(suggestion: Suggestion) -> str | None:
    """Why a fill may be cut (issue 14.4), or None: the loop stopped inside it (its steps or its deadline spent:
    only its complete lines are left), or a pad-fill used every hole position and never chose to end."""
    result = suggestion.result
    if result is not None and result.cut_short:
        spent = "time (deadlineMs)" if result.deadline_hit else "steps"
        return f"the fill ran out of {spent} before its end, so it may be cut: select less, or raise deadlineMs"
    if result is None or len(result.candidates) > 1 or result.hole_length <= 0:
        return None
    if result.generated_tokens >= result.hole_length:
        return (f"the fill used the model's whole canvas ({result.hole_length} tokens) and may be cut: "
                f"select less")
    return None


class Refused(Exception):
    """A request the server will not compute, with the reason for the user."""
