"""RemoteEngine: the thin client's engine, `dg-lsp serve --engine URL` (setting `dgLsp.engine`).

It stands in for `Engine` where the LSP server uses one (`submit`, `tokenize`, `spec`, `canvas_length`,
`status`, `stats`, `warmup`, `close`), so context extraction, the caches, healing's retry decision,
post-processing, the syntax gate and supersession stay in the editor's process and only the infill crosses
the network, as the same InfillRequest and InfillResult (dg_lsp/remote/wire.py). Standard library only.

- Each request runs on its own thread as one HTTP call. A cancelled request (the client's $/cancelRequest,
  a superseding keystroke: both set `request.cancel`) closes its connection, which makes Serve cancel the
  handler, and calls /v1/cancel with its id; the replica's denoising loop stops at its next step.
- The engine down (refused connection, HTTP 5xx/404) or slow (no answer in `timeout_s`): the request answers
  empty (as cancelled: the editor gets no items), `status()["remote"]` says why, and for `DOWN_S` seconds
  requests answer empty at once; then the next one tries again, so the server recovers on its own.
- A document's requests carry its affinity key (client id + document), so they reach the replica that holds
  its prefix KV cache; `stats` counts which replica answered each document.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import Future
from types import SimpleNamespace
from urllib.parse import urlsplit

from dg_lsp.engine.types import InfillRequest, InfillResult

from . import wire

log = logging.getLogger(__name__)

DOWN_S = 2.0  # after a failure to reach the engine, requests answer empty at once for this long
TIMEOUT_ENV = "DG_LSP_ENGINE_TIMEOUT_S"


def _empty() -> InfillResult:
    return InfillResult(text="", cancelled=True)


class EngineURLError(ValueError):
    pass


def parse_engine_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, base path) of an http:// or https:// URL; EngineURLError otherwise."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineURLError(f"the engine URL must be http://HOST[:PORT] or https://..., got {url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise EngineURLError(f"bad port in the engine URL {url!r}") from None
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


class _Call:
    def __init__(self, call_id: str, request: InfillRequest, future: Future, affinity: str | None):
        self.id, self.request, self.future, self.affinity = call_id, request, future, affinity
        self.conn: http.client.HTTPConnection | None = None
        self.aborted = False


class RemoteEngine:
    def __init__(self, url: str, token: str | None = None, client_id: str | None = None, affinity: bool = True,
                 timeout_s: float | None = None, connect_timeout_s: float = 2.0, cancel_endpoint: bool = True):
        self.url = url.strip().rstrip("/")
        self.scheme, self.host, self.port, self.base = parse_engine_url(url)
        self.token = token if token is not None else wire.token_from_env()
        self.client_id = client_id or uuid.uuid4().hex[:16]
        self.affinity = affinity
        self.timeout_s = timeout_s if timeout_s is not None else float(os.environ.get(TIMEOUT_ENV, "10"))
        self.connect_timeout_s = connect_timeout_s
        self.cancel_endpoint = cancel_endpoint
        self.loaded = SimpleNamespace(path=self.url, device="remote", dtype=None)
        self.spec = SimpleNamespace(pad_fill=True, suffix_head_tokens=0)
        self._canvas_length = 64
        self.batch_calibration = None
        self.last_latency_ms: float | None = None
        self.stats = {"requests": 0, "answered": 0, "cancelled": 0, "failed": 0, "unreachable": 0,
                      "skippedWhileDown": 0, "timeouts": 0, "refusedToken": 0, "promptTokens": 0,
                      "reusedTokens": 0, "batchedResults": 0, "roundTripMs": 0.0, "serverMs": 0.0}
        self.routes: dict[str, Counter] = {}  # document -> replicas that answered it
        self.remote = {"url": self.url, "reachable": None, "error": None, "replica": None, "model": None,
                       "device": None}
        self._calls: dict[str, _Call] = {}
        self._by_doc: dict[str, _Call] = {}
        self._cond = threading.Condition()
        self._down_until = 0.0
        self._closed = False
        self._watcher = threading.Thread(target=self._watch, name="dg-lsp-remote-cancel", daemon=True)
        self._watcher.start()
        if not self.token:
            self._set_error(f"no token: set ${wire.TOKEN_ENV} to the engine's token", reachable=None)

    # -- what the server reads ------------------------------------------------------------------
    @property
    def canvas_length(self) -> int:
        return self._canvas_length

    def warmup(self, calibrate: bool = True) -> None:
        """Read the engine's spec and say whether it is reachable; never raises (an engine that is down now
        may be up for the first request)."""
        self.refresh()

    def refresh(self) -> dict | None:
        try:
            status, body = self._request("GET", "/status", None, None, self.connect_timeout_s + 3)
        except (OSError, http.client.HTTPException) as exc:
            self._set_down(f"cannot reach the engine at {self.url}: {type(exc).__name__}: {exc}")
            return None
        if status != 200:
            self._http_error(status, body)
            return None
        spec = body.get("spec", {})
        self._canvas_length = int(spec.get("canvas_length", self._canvas_length))
        self.spec = SimpleNamespace(pad_fill=bool(spec.get("pad_fill", True)),
                                    suffix_head_tokens=int(spec.get("suffix_head_tokens", 0)))
        self.remote.update(model=body.get("model"), device=body.get("device"), replica=body.get("replica"))
        self._set_up()
        return body

    def status(self) -> dict:
        with self._cond:
            busy = bool(self._calls)
        return {"model": self.remote["model"] or self.url, "device": self.remote["device"] or "remote",
                "dtype": None, "busy": busy, "queue": 0, "lastLatencyMs": self.last_latency_ms,
                "engine": dict(self.stats), "batchCalibration": None, "remote": self.remote_status()}

    def remote_status(self) -> dict:
        docs = [c for c in self.routes.values() if c]
        return dict(self.remote, clientId=self.client_id, affinity={
            "documents": len(docs), "onOneReplica": sum(1 for c in docs if len(c) == 1),
            "requests": sum(sum(c.values()) for c in docs),
            "onMainReplica": sum(c.most_common(1)[0][1] for c in docs),
            "replicas": sorted({r for c in docs for r in c})})

    def tokenize(self, text: str) -> list[int]:
        status, body = self._request("POST", "/tokenize", {"text": text}, None, self.timeout_s)
        if status != 200:
            raise RuntimeError(f"the engine at {self.url} could not tokenize: HTTP {status}: {body.get('error')}")
        return list(body["ids"])

    # -- requests -------------------------------------------------------------------------------
    def submit(self, request: InfillRequest) -> Future:
        future: Future = Future()
        self.stats["requests"] += 1
        if self._closed:
            future.set_exception(RuntimeError("engine is closed"))
            return future
        if time.monotonic() < self._down_until:
            self.stats["skippedWhileDown"] += 1
            future.set_result(_empty())
            return future
        doc = request.doc_key
        call = _Call(uuid.uuid4().hex, request, future,
                     wire.affinity_key(self.client_id, doc) if self.affinity and doc is not None else None)
        with self._cond:
            if doc is not None:
                old = self._by_doc.get(doc)
                if old is not None:
                    old.request.cancel.set()  # as the local worker does: a newer job stops the document's older one
                self._by_doc[doc] = call
            self._calls[call.id] = call
            self._cond.notify_all()
        threading.Thread(target=self._run, args=(call,), name="dg-lsp-remote-call", daemon=True).start()
        return future

    def infill(self, request: InfillRequest) -> InfillResult:
        return self.submit(request).result()

    def _run(self, call: _Call) -> None:
        result = _empty()
        try:
            result = self._infill(call)
        except Exception:  # noqa: BLE001 - a request never takes the server down
            log.exception("remote infill failed")
            self.stats["failed"] += 1
        finally:
            with self._cond:
                self._calls.pop(call.id, None)
                doc = call.request.doc_key
                if doc is not None and self._by_doc.get(doc) is call:
                    del self._by_doc[doc]
            if not call.future.done():
                call.future.set_result(result)

    def _infill(self, call: _Call) -> InfillResult:
        request = call.request
        body = dict(wire.request_to_json(request))
        if request.doc_key is not None:  # users' documents do not supersede each other on the engine
            body["doc_key"] = f"{self.client_id}:{request.doc_key}"
        t0 = time.perf_counter()
        if request.cancel.is_set():
            self.stats["cancelled"] += 1
            return _empty()
        try:
            status, answer = self._request("POST", "/infill", {"id": call.id, "request": body}, call,
                                           self.timeout_s)
        except socket.timeout:
            if call.aborted or request.cancel.is_set():
                self.stats["cancelled"] += 1
                return _empty()
            self.stats["timeouts"] += 1
            self._set_error(f"the engine at {self.url} did not answer within {self.timeout_s:g} s", reachable=True)
            request.cancel.set()
            self._abort(call)
            return _empty()
        except (OSError, http.client.HTTPException) as exc:
            if call.aborted or request.cancel.is_set():
                self.stats["cancelled"] += 1
                return _empty()
            self.stats["unreachable"] += 1
            self._set_down(f"cannot reach the engine at {self.url}: {type(exc).__name__}: {exc}")
            return _empty()
        if status != 200:
            self._http_error(status, answer)
            return _empty()
        result = wire.result_from_json(answer["result"])
        roundtrip = (time.perf_counter() - t0) * 1000
        result.timings_ms["roundtrip"] = roundtrip
        result.timings_ms["server"] = float(answer.get("server_ms", 0.0))
        st = self.stats
        st["answered"] += 1
        st["cancelled"] += int(result.cancelled)
        st["promptTokens"] += result.prompt_tokens
        st["reusedTokens"] += result.reused_tokens
        st["batchedResults"] += int(result.batch_rows > 1)
        st["roundTripMs"] += roundtrip
        st["serverMs"] += result.timings_ms["server"]
        if request.doc_key is not None and answer.get("replica"):
            self.routes.setdefault(request.doc_key, Counter())[answer["replica"]] += 1
        self.last_latency_ms = result.timings_ms.get("total", roundtrip)
        self._set_up(answer.get("replica"))
        return result

    # -- HTTP -----------------------------------------------------------------------------------
    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def _request(self, method: str, path: str, body, call: _Call | None, timeout: float,
                 affinity: str | None = None):
        """(HTTP status, JSON body); OSError / HTTPException when the engine cannot be reached or hangs up."""
        conn = self._connection(self.connect_timeout_s)
        headers = {"Authorization": f"Bearer {self.token or ''}", "Content-Type": "application/json"}
        affinity = affinity or (call.affinity if call is not None else None)
        if affinity:
            headers[wire.AFFINITY_HEADER] = affinity
        try:
            conn.connect()
            conn.sock.settimeout(timeout)
            if call is not None:
                call.conn = conn
                if call.request.cancel.is_set():
                    raise ConnectionAbortedError("cancelled before it was sent")
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, self.base + wire.API + path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            answer = json.loads(raw) if raw else {}
        except ValueError:
            answer = {"error": raw[:200].decode("utf-8", "replace")}
        return resp.status, answer if isinstance(answer, dict) else {"error": str(answer)[:200]}

    def _abort(self, call: _Call) -> None:
        """Close the call's connection (Serve then cancels its handler) and tell the replica by its id."""
        call.aborted = True
        conn = call.conn
        sock = conn.sock if conn is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self.cancel_endpoint and conn is not None:
            threading.Thread(target=self._send_cancel, args=(call,), daemon=True).start()

    def _send_cancel(self, call: _Call) -> None:
        try:
            self._request("POST", "/cancel", {"id": call.id}, None, 2.0, affinity=call.affinity)
        except (OSError, http.client.HTTPException):
            pass

    def _watch(self) -> None:
        """Abort the calls whose request was cancelled (checked every 5 ms while any is in flight)."""
        while True:
            with self._cond:
                while not self._calls and not self._closed:
                    self._cond.wait()
                if self._closed and not self._calls:
                    return
                due = [c for c in self._calls.values() if not c.aborted and c.request.cancel.is_set()]
            for call in due:
                self._abort(call)
            time.sleep(0.005)

    # -- reachability ---------------------------------------------------------------------------
    def _http_error(self, status: int, body: dict) -> None:
        why = body.get("error") or body.get("detail") or ""
        if status in (401, 403):
            self.stats["refusedToken"] += 1
            self._set_error(f"the engine at {self.url} refused the token (HTTP {status}): set ${wire.TOKEN_ENV} "
                            f"to the engine's token", reachable=True)
        elif status == 400:
            self.stats["failed"] += 1
            self._set_error(f"the engine refused a request (HTTP 400): {why}", reachable=True)
        else:
            self.stats["unreachable"] += 1
            self._set_down(f"the engine at {self.url} answered HTTP {status}{': ' + str(why)[:200] if why else ''}")

    def _set_down(self, message: str) -> None:
        if self.remote["reachable"] is not False or self.remote["error"] != message:
            log.warning("%s; no completions until it answers (retrying every %g s)", message, DOWN_S)
        self._down_until = time.monotonic() + DOWN_S
        self.remote.update(reachable=False, error=message, since=time.time())

    def _set_error(self, message: str, reachable) -> None:
        if self.remote["error"] != message:
            log.warning("%s", message)
        self.remote.update(reachable=reachable, error=message, since=time.time())

    def _set_up(self, replica: str | None = None) -> None:
        if self.remote["reachable"] is not True or self.remote["error"]:
            if self.remote["reachable"] is False:
                log.warning("the engine at %s answers again", self.url)
            self.remote.update(reachable=True, error=None, since=time.time())
        if replica:
            self.remote["replica"] = replica

    def close(self) -> None:
        with self._cond:
            self._closed = True
            calls = list(self._calls.values())
            self._cond.notify_all()
        for call in calls:
            call.request.cancel.set()
            self._abort(call)
        self._watcher.join(timeout=5)
