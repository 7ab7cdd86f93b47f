"""A minimal JSON-RPC-over-stdio client for tests that must send what a typed client cannot:
malformed params, unknown methods, broken JSON."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time


class RawClient:
    def __init__(self, command: list[str]):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            self.messages.put(json.loads(out.read(length)))

    def send_bytes(self, body: bytes) -> None:
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def notify(self, method: str, params=None) -> None:
        self.send_bytes(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode())

    def request(self, method: str, params=None, timeout: float = 60.0):
        self._next += 1
        msg_id = self._next
        self.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())
        return self.wait_response(msg_id, timeout)

    def request_many(self, method: str, params_list: list, timeout: float = 60.0) -> list[dict]:
        """Send several requests back to back, then collect every response (in the order sent)."""
        ids = []
        for params in params_list:
            self._next += 1
            ids.append(self._next)
            self.send_bytes(json.dumps({"jsonrpc": "2.0", "id": self._next, "method": method,
                                        "params": params}).encode())
        got: dict = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(ids):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no response to requests {sorted(set(ids) - set(got))}")
            msg = self.messages.get(timeout=left)
            if msg.get("id") in ids and "method" not in msg:
                got[msg["id"]] = msg
            elif "method" in msg and "id" in msg:
                self.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": None}).encode())
        return [got[i] for i in ids]

    def wait_response(self, msg_id, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no response to request {msg_id}")
            msg = self.messages.get(timeout=left)
            if msg.get("id") == msg_id and "method" not in msg:
                return msg
            if "method" in msg and "id" in msg:  # a request from the server: answer it blandly
                self.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": None}).encode())

    def initialize(self, options=None) -> dict:
        res = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                          "initializationOptions": options or {}})
        self.notify("initialized", {})
        return res

    def wait_state(self, states=("ready", "error"), timeout: float = 120.0) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
            if status["state"] in states:
                return status
            time.sleep(0.2)
        raise TimeoutError("server never became ready")

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit")
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()
