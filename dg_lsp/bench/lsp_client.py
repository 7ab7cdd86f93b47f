"""A small JSON-RPC client that drives a language server over stdio, the way an editor does.

Requests block the caller until their response arrives (a reader thread matches ids).
Requests from the server are answered (configuration, progress tokens, registrations) so a
server that waits on its client never stalls the benchmark; its log messages are kept.
"""

from __future__ import annotations

import collections
import itertools
import json
import subprocess
import threading
from concurrent.futures import Future
from typing import Any


class LspError(RuntimeError):
    pass


class LspClient:
    def __init__(self, argv: list[str], settings: dict | None = None, env: dict | None = None,
                 stderr=subprocess.DEVNULL, cwd: str | None = None):
        self.settings = settings or {}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                     cwd=cwd)
        self._ids = itertools.count(1)
        self._pending: dict[int, Future] = {}
        self._lock = threading.Lock()
        self.messages: collections.deque = collections.deque(maxlen=200)  # window/logMessage, showMessage
        self._reader = threading.Thread(target=self._read_loop, name="lsp-client-reader", daemon=True)
        self._reader.start()

    # -- framing ------------------------------------------------------------------------------
    def _send(self, message: dict) -> None:
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        with self._lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read_message(self) -> dict | None:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
        if length is None:
            return {}
        return json.loads(self.proc.stdout.read(length).decode("utf-8"))

    def _read_loop(self) -> None:
        try:
            while (message := self._read_message()) is not None:
                self._dispatch(message)
        except (OSError, ValueError) as exc:
            self.messages.append(f"reader stopped: {exc}")
        finally:
            for future in list(self._pending.values()):
                if not future.done():
                    future.set_exception(LspError("server exited"))

    def _dispatch(self, message: dict) -> None:
        if "method" in message:
            if "id" in message:
                self._answer(message)
            elif message["method"] in ("window/logMessage", "window/showMessage"):
                self.messages.append(message.get("params", {}).get("message", ""))
            return
        future = self._pending.pop(message.get("id"), None)
        if future is None:
            return
        if "error" in message:
            err = message["error"]
            future.set_exception(LspError(f"{err.get('code')}: {err.get('message')}"))
        else:
            future.set_result(message.get("result"))

    def _answer(self, request: dict) -> None:
        method, params = request["method"], request.get("params") or {}
        result: Any = None
        if method == "workspace/configuration":
            result = [self.settings if item.get("section") in (None, "dgLsp") else None
                      for item in params.get("items", [])]
        elif method == "workspace/applyEdit":
            result = {"applied": False}
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    # -- API ----------------------------------------------------------------------------------
    def request(self, method: str, params: Any, timeout: float | None = 120.0) -> Any:
        request_id = next(self._ids)
        future: Future = Future()
        self._pending[request_id] = future
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return future.result(timeout=timeout)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def peak_rss_mb(self) -> float | None:
        """The server process's peak resident memory (Linux /proc), while it still runs."""
        try:
            with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            return None
        return None

    def close(self, timeout: float = 10.0) -> None:
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
        except Exception:  # noqa: BLE001 - closing must not fail the run
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
