"""$/cancelRequest, supersession and settings precedence over the raw protocol."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import server_command
from .rawclient import RawClient

URI = "file:///tmp/dg_lsp_raw/slow.py"
TEXT = "def add(a, b):\n    return a + b\n"
SLOW = {"maxSteps": 256, "temperature": 0.8}  # the random tiny model never stops early: 256 real steps


def _inline_params(uri=URI):
    return {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}}


def _send(client: RawClient, msg_id: int, method: str, params) -> None:
    client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())


def _busy(client: RawClient) -> bool:
    return client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]["busy"]


def _start(options):
    client = RawClient(server_command())
    client.initialize(options)
    assert client.wait_state()["state"] == "ready"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                            "text": TEXT}})
    return client


@pytest.fixture(scope="module")
def slow_client():
    client = _start(SLOW)
    yield client
    client.close()


def test_cancel_request_stops_the_denoising_loop(slow_client):
    client = slow_client
    _send(client, 1000, "textDocument/inlineCompletion", _inline_params())
    deadline = time.monotonic() + 30
    while not _busy(client):  # wait until the loop is really running
        assert time.monotonic() < deadline
        time.sleep(0.02)
    client.notify("$/cancelRequest", {"id": 1000})
    resp = client.wait_response(1000, timeout=30)
    assert resp["error"]["code"] == -32800  # RequestCancelled
    # The loop checks the flag between steps; a step of the tiny model is milliseconds, far less on a
    # quiet machine than the 256 steps it was asked for (seconds), so "not busy" soon means it stopped.
    deadline = time.monotonic() + 30
    while _busy(client):
        assert time.monotonic() < deadline, "the denoising loop did not stop after $/cancelRequest"
        time.sleep(0.05)
    last = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
    assert last["queue"] == 0


def test_newer_request_for_the_same_document_supersedes_the_older_one(slow_client):
    client = slow_client
    _send(client, 2000, "textDocument/inlineCompletion", _inline_params())
    deadline = time.monotonic() + 30
    while not _busy(client):  # wait until the loop is really running
        assert time.monotonic() < deadline, "the request never started computing"
        time.sleep(0.02)
    # New requests run short (settings apply per request), so the newer one finishes fast on a loaded machine.
    client.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {"maxSteps": 2}}})
    _send(client, 2001, "textDocument/inlineCompletion", _inline_params())
    old = client.wait_response(2000, timeout=60)
    assert old["result"]["items"] == []  # superseded: empty at once
    new = client.wait_response(2001, timeout=120)
    assert "result" in new
    status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
    assert status["settings"]["maxSteps"] == 2 and not status["busy"]


def test_workspace_configuration_wins_over_initialization_options_and_bad_values_are_ignored():
    client = RawClient(server_command())
    try:
        client.request("initialize", {"processId": None, "rootUri": None,
                                      "capabilities": {"workspace": {"configuration": True}},
                                      "initializationOptions": {"maxSteps": 4, "temperature": 0.5}})
        client.notify("initialized", {})
        # The server asks workspace/configuration; answer it by hand.
        deadline = time.monotonic() + 30
        while True:
            msg = client.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            if msg.get("method") == "workspace/configuration":
                assert msg["params"]["items"][0]["section"] == "dgLsp"
                answer = [{"maxSteps": 3, "temperature": "hot", "suffixTokens": 64}]
                client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": answer}).encode())
                break
        status = client.wait_state()
        assert status["settings"]["maxSteps"] == 3  # workspace > initializationOptions
        assert status["settings"]["temperature"] == 0.5  # the invalid "hot" is ignored
        assert status["settings"]["suffixTokens"] == 64
    finally:
        client.close()
