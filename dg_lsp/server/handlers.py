"""LSP handlers, one per method, each thin: validate, delegate to the server object, convert;
and `build_server`, the server object with its handlers registered."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from dg_lsp.config import Settings, settings_json

from .server import DgLspServer

log = logging.getLogger(__name__)

FILL_SELECTION = "dgLsp.fillSelection"
STATUS = "dgLsp.status"


def _range_from(obj) -> types.Range:
    r = obj["range"]
    return types.Range(start=types.Position(line=int(r["start"]["line"]), character=int(r["start"]["character"])),
                       end=types.Position(line=int(r["end"]["line"]), character=int(r["end"]["character"])))


def register(server: DgLspServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: DgLspServer, params: types.InitializeParams):
        opts = params.initialization_options
        ls.init_options = opts if isinstance(opts, dict) else {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: DgLspServer, params: types.InitializedParams):
        # Start loading now, on the command line's and initializationOptions' settings (issue 14.12); the
        # workspace configuration's answer reloads only if it changes the model settings.
        ls.apply_settings(None)
        ls.apply_settings(await ls.fetch_workspace_config())

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: DgLspServer, params: types.DidChangeConfigurationParams):
        cfg = await ls.fetch_workspace_config()
        if cfg is None and isinstance(params.settings, dict):
            cfg = params.settings.get("dgLsp", params.settings)
        ls.apply_settings(cfg)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(ls: DgLspServer, params: types.InlineCompletionParams):
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        if automatic and not ls.settings.automatic_trigger:
            return types.InlineCompletionList(items=[])
        start, end = params.position, None
        selected = params.context.selected_completion_info
        if selected is not None:
            start, end = selected.range.start, selected.range.end
        try:
            answer = await ls.complete_at(params.text_document.uri, start, end, automatic)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - one bad request never kills the server
            log.exception("inline completion failed")
            return types.InlineCompletionList(items=[])
        if answer is None or not answer[0].text:
            return types.InlineCompletionList(items=[])
        suggestion, rng = answer
        # an explicit request's other items (Suggestion.others) follow the answer over the same range
        return types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text=text, range=rng)
                                                 for text in (suggestion.text, *suggestion.others)])

    @server.command(FILL_SELECTION)
    async def fill_selection(ls: DgLspServer, *args):
        try:
            arg = args[0]
            uri, rng = arg["uri"], _range_from(arg)
        except (IndexError, KeyError, TypeError, ValueError):
            log.warning("%s needs [{uri, range}], got %r", FILL_SELECTION, args)
            return {"applied": False, "reason": "expected arguments [{uri, range}]",
                    "error": "expected arguments [{uri, range}]"}
        try:
            return await ls.fill_selection(uri, rng)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - one bad request never kills the server
            log.exception("fill failed")
            return {"applied": False, "reason": f"the fill failed: {exc}", "error": f"the fill failed: {exc}"}

    @server.command(STATUS)
    def status(ls: DgLspServer, *args):
        return dict(ls.status(), settings=settings_json(ls.settings))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DgLspServer, *args):
        ls.close()


def build_server(settings: Settings) -> DgLspServer:
    server = DgLspServer(settings)
    register(server)
    return server
