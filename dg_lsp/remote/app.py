"""`dg-lsp engine serve`: one warm engine per Ray Serve replica, behind Serve's HTTP proxy.

Each replica holds an `Engine` (dg_lsp/engine/engine.py) with its worker thread, its prefix KV cache and its
cross-document batching: requests of different users that are queued together share decoder forwards inside
the replica (the engine joins them between denoising steps), which suits diffusion better than Serve's
`@serve.batch` (that collects requests for a fixed wait and runs them as one call; a batch here grows and
shrinks step by step). The API is in dg_lsp/remote/wire.py.

A request's computation is cancelled within one denoising step when its client closes the connection (Serve
cancels the handler) or calls /v1/cancel with its id (routed to the same replica by its affinity key).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass

from . import wire

log = logging.getLogger(__name__)

APP_NAME = "dg-lsp-engine"
DEPLOYMENT_NAME = "DgLspEngine"


@dataclass(frozen=True)
class EngineOptions:
    token: str
    model: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    allow_pickle_weights: bool = False
    threads: int = 1
    batch_rows: int | None = None  # None: as each request asks (its client's batchDocuments); N: always N
    replicas: int = 1
    cpus_per_replica: float = 1.0
    gpus_per_replica: float = 0.0
    max_ongoing_requests: int = 64
    affinity: bool = True  # route a document to its replica (DocumentAffinityRouter)
    prefix_cache_docs: int = 64  # documents whose encoder KV cache a replica keeps (a local editor's engine: 8)


def _json(data, status: int = 200):
    from starlette.responses import JSONResponse

    return JSONResponse(data, status_code=status)


class EngineReplica:
    """The Serve deployment's class: one warm engine, and the HTTP API in front of it."""

    def __init__(self, options: dict):
        opts = EngineOptions(**options)
        self._token = opts.token.encode()
        self._batch_rows = opts.batch_rows
        import torch

        torch.set_num_threads(max(1, opts.threads))
        from dg_lsp.engine import Engine
        from dg_lsp.engine.loader import load_model

        t0 = time.perf_counter()
        self.engine = Engine(load_model(opts.model, opts.device, opts.dtype, opts.trust_remote_code,
                                        allow_pickle_weights=opts.allow_pickle_weights))
        self.engine.prefix_cache.max_entries = max(1, opts.prefix_cache_docs)  # a team's documents, not one editor's
        self.engine.warmup()
        self.load_s = time.perf_counter() - t0
        try:
            from ray import serve

            self.replica = serve.get_replica_context().replica_id.unique_id
        except Exception:  # noqa: BLE001 - outside Serve (tests of the class itself)
            self.replica = f"local-{os.getpid()}"
        self._calls: dict[str, threading.Event] = {}
        self.counters = {"requests": 0, "infills": 0, "refused": 0, "badRequests": 0, "cancelledByDisconnect": 0,
                         "cancelledByEndpoint": 0, "cancelledResults": 0, "cancelledSteps": 0,
                         "lastCancelledSteps": None, "failed": 0, "promptTokens": 0, "reusedTokens": 0,
                         "batchedResults": 0, "batchRows": 0}
        log.info("replica %s ready in %.1f s: %s on %s", self.replica, self.load_s, self.engine.loaded.path,
                 self.engine.loaded.device)

    # -- Serve hooks -----------------------------------------------------------------------------
    def check_health(self) -> None:
        if not self.engine.worker._thread.is_alive():
            raise RuntimeError("the engine's worker thread died")

    async def __call__(self, request):
        self.counters["requests"] += 1
        if not self._authorized(request.headers.get("authorization", "")):
            self.counters["refused"] += 1
            return _json({"error": "missing or wrong token (Authorization: Bearer <token>; the engine's "
                                   "--token or $DG_LSP_ENGINE_TOKEN)"}, 401)
        path = request.url.path.rstrip("/")
        try:
            if request.method == "GET" and path == wire.API + "/health":
                return _json({"ok": True, "replica": self.replica})
            if request.method == "GET" and path == wire.API + "/status":
                return _json(self.status())
            if request.method != "POST" or path not in (wire.API + "/infill", wire.API + "/cancel",
                                                        wire.API + "/tokenize"):
                return _json({"error": f"no such endpoint: {request.method} {path}"}, 404)
            body = await self._body(request)
            if path == wire.API + "/infill":
                return await self._infill(body, request)
            if path == wire.API + "/cancel":
                return self._cancel(body)
            text = body.get("text")
            if not isinstance(text, str) or len(text) > wire.MAX_TEXT_CHARS:
                raise wire.WireError("text: expected a string")
            return _json({"ids": self.engine.tokenize(text)})
        except wire.WireError as exc:
            self.counters["badRequests"] += 1
            return _json({"error": str(exc)}, 400)

    # -- endpoints -------------------------------------------------------------------------------
    def _authorized(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self._token)

    @staticmethod
    async def _body(request) -> dict:
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > wire.MAX_BODY_BYTES):
            raise wire.WireError(f"body larger than {wire.MAX_BODY_BYTES} bytes")
        raw = await request.body()
        if len(raw) > wire.MAX_BODY_BYTES:
            raise wire.WireError(f"body larger than {wire.MAX_BODY_BYTES} bytes")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise wire.WireError(f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise wire.WireError("body: expected a JSON object")
        return body

    async def _infill(self, body: dict, http_request):
        t0 = time.perf_counter()
        req = wire.request_from_json(body.get("request"))
        call_id = body.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise wire.WireError("id: expected a string")
        if self._batch_rows is not None:
            req.batch_rows = self._batch_rows
        self.counters["infills"] += 1
        if call_id:
            self._calls[call_id] = req.cancel
        try:
            future = self.engine.submit(req)
            future.add_done_callback(self._count)  # also for a computation whose client went away
            try:
                result = await asyncio.wrap_future(future)
            except asyncio.CancelledError:  # the client closed the connection: Serve cancels this handler
                req.cancel.set()
                self.counters["cancelledByDisconnect"] += 1
                raise
            except Exception as exc:  # noqa: BLE001 - one bad request never takes the replica down
                self.counters["failed"] += 1
                log.exception("infill failed")
                return _json({"error": f"the engine failed: {type(exc).__name__}: {exc}"}, 500)
        finally:
            if call_id:
                self._calls.pop(call_id, None)
        return _json({"result": wire.result_to_json(result), "replica": self.replica,
                      "server_ms": (time.perf_counter() - t0) * 1000})

    def _count(self, future) -> None:
        if future.cancelled() or future.exception() is not None:
            return
        result, c = future.result(), self.counters
        if result.cancelled:
            c["cancelledResults"] += 1
            c["cancelledSteps"] += result.steps
            c["lastCancelledSteps"] = result.steps
        c["promptTokens"] += result.prompt_tokens
        c["reusedTokens"] += result.reused_tokens
        if result.batch_rows > 1:
            c["batchedResults"] += 1
            c["batchRows"] += result.batch_rows

    def _cancel(self, body: dict):
        event = self._calls.get(body.get("id")) if isinstance(body.get("id"), str) else None
        if event is not None and not event.is_set():
            event.set()
            self.counters["cancelledByEndpoint"] += 1
        return _json({"cancelled": event is not None, "replica": self.replica})

    def status(self) -> dict:
        eng = self.engine
        st = eng.status()
        return {"replica": self.replica, "pid": os.getpid(), "cpu_s": time.process_time(), "load_s": self.load_s,
                "model": st["model"], "device": st["device"], "dtype": st["dtype"], "busy": st["busy"],
                "queue": st["queue"], "lastLatencyMs": st["lastLatencyMs"], "engine": st["engine"],
                "batchCalibration": st["batchCalibration"], "batchRows": self._batch_rows,
                "inflight": len(self._calls), "counters": dict(self.counters),
                "spec": {"canvas_length": eng.canvas_length, "pad_fill": bool(eng.spec.pad_fill),
                         "suffix_head_tokens": int(eng.spec.suffix_head_tokens)}}


def build_app(options: EngineOptions):
    """The Serve application: `options.replicas` replicas of EngineReplica, routed by document."""
    from ray import serve

    config = dict(name=DEPLOYMENT_NAME, num_replicas=options.replicas,
                  ray_actor_options={"num_cpus": options.cpus_per_replica, "num_gpus": options.gpus_per_replica},
                  max_ongoing_requests=options.max_ongoing_requests, health_check_period_s=2.0,
                  health_check_timeout_s=30.0, graceful_shutdown_timeout_s=5.0)
    if options.affinity:
        from ray.serve.config import RequestRouterConfig

        config["request_router_config"] = RequestRouterConfig(
            request_router_class="dg_lsp.remote.router:DocumentAffinityRouter")
    return serve.deployment(**config)(EngineReplica).bind(asdict(options))
