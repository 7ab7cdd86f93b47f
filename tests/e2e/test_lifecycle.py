"""The protocol and the process (issue 14.10, 14.12, 14.13, 14.15): requests after shutdown, loading at
`initialized`, settings a client may not set, and the editor going away mid-work."""

from __future__ import annotations

import json
import os
import time

import pytest

from .conftest import server_command
from .rawclient import RawClient

pytestmark = pytest.mark.timeout(300)

URI = "file:///tmp/dg_lsp_lifecycle/a.py"
TEXT = "def add(a, b):\n    return a + b\n"
INLINE = "textDocument/inlineCompletion"


def _inline(uri=URI, kind=1):
    return {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": kind}}


def _open(client, uri=URI, text=TEXT):
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": text}})


def _send(client, msg_id, method, params):
    client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())


def test_requests_after_shutdown_get_invalid_request():
    client = RawClient(server_command())
    try:
        client.initialize({"maxSteps": 2})
        assert client.wait_state()["state"] == "ready"
        assert "result" in client.request("shutdown", None)
        resp = client.request("workspace/executeCommand", {"command": "dgLsp.status"}, timeout=20)
        assert resp["error"]["code"] == -32600, resp  # InvalidRequest
        resp = client.request(INLINE, _inline(), timeout=20)
        assert resp["error"]["code"] == -32600, resp
        client.notify("exit")
        assert client.proc.wait(timeout=30) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


@pytest.mark.parametrize("running", [5, 1])
def test_stdin_closing_with_requests_queued_and_running_exits_cleanly(running):
    """The repro of issue 14.15: initialize, open files, wait for the model, send inline requests, close stdin.
    The process exited by SIGABRT (-6) in the worker thread; it must stop and join it and exit 0."""
    client = RawClient(server_command())
    try:
        client.initialize({"maxSteps": 256, "temperature": 0.8, "deadlineMs": 600000})  # each request runs long
        assert client.wait_state()["state"] == "ready"
        for i in range(running):
            _open(client, uri=f"{URI}{i}")
        for i in range(5):
            _send(client, 100 + i, INLINE, _inline(uri=f"{URI}{i % running}"))
        deadline = time.monotonic() + 30
        while not client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]["busy"]:
            assert time.monotonic() < deadline, "no request ever ran"
            time.sleep(0.02)
        client.proc.stdin.close()
        assert client.proc.wait(timeout=60) == 0
    finally:
        if client.proc.poll() is None:
            client.proc.kill()


def test_loading_starts_at_initialized_and_an_invoked_request_waits_for_the_model():
    """The client answers workspace/configuration late (or never): the model loads anyway, and the first
    Invoked request waits for it instead of answering [] at once (issue 14.12)."""
    client = RawClient(server_command())
    try:
        client.request("initialize", {"processId": None, "rootUri": None,
                                      "capabilities": {"workspace": {"configuration": True}},
                                      "initializationOptions": {"maxSteps": 2}})
        client.notify("initialized", {})
        _open(client)
        # The server's workspace/configuration request stays unanswered while we ask for a completion.
        _send(client, 50, INLINE, _inline())
        deadline = time.monotonic() + 120
        config_request, resp = None, None
        while resp is None:
            msg = client.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if msg.get("method") == "workspace/configuration":
                config_request = msg
            elif msg.get("id") == 50 and "method" not in msg:
                resp = msg
        assert "result" in resp, resp
        assert config_request is not None
        client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": config_request["id"], "result": [{}]}).encode())
        # It was computed on the model (before, it answered [] in milliseconds: no model, nothing computed).
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        assert status["state"] == "ready" and status["completion"]["computed"] == 1, status
    finally:
        client.close()


def test_a_client_cannot_enable_remote_code_or_pickled_weights():
    client = RawClient(server_command())
    try:
        client.initialize({"maxSteps": 2, "trustRemoteCode": True, "allowPickleWeights": True})
        status = client.wait_state()
        assert status["state"] == "ready"
        assert status["settings"]["trustRemoteCode"] is False
        assert status["settings"]["allowPickleWeights"] is False
        client.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {"trustRemoteCode": True}}})
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        assert status["settings"]["trustRemoteCode"] is False
    finally:
        client.close()


def _listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port`, read from /proc/net/tcp{,6}."""
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                out.add(address)
    return out


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads the bound address from /proc/net/tcp")
def test_serve_tcp_listens_on_loopback_only():
    """The socket's bound address, not whether a loopback connection works (that works on 0.0.0.0 too)."""
    import socket
    import subprocess
    import sys

    from .conftest import tiny_model_path

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "dg_lsp", "serve", "--tcp", str(port), "--model",
                             tiny_model_path(), "--device", "cpu"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (addresses := _listening_addresses(port)):
            assert time.monotonic() < deadline and proc.poll() is None, "server never listened"
            time.sleep(0.2)
        assert addresses == {"0100007F"}, addresses  # 127.0.0.1, and nothing else (no 0.0.0.0, no ::)
    finally:
        proc.kill()
        proc.wait(timeout=10)
