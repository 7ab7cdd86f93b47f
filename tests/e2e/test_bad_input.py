"""Bad input over the raw protocol: each case is followed by a normal request that still works."""

from __future__ import annotations

import pytest

from .conftest import server_command
from .rawclient import RawClient

URI = "file:///tmp/dg_lsp_raw/a.py"
TEXT = "def add(a, b):\n    return a + b\n"


def _open_and_complete(client: RawClient, uri: str = URI) -> dict:
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": TEXT}})
    return client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}})


@pytest.fixture(scope="module")
def raw():
    client = RawClient(server_command())
    client.initialize({"maxSteps": 2})
    assert client.wait_state()["state"] == "ready"
    yield client
    client.close()


def test_malformed_params_are_answered_with_invalid_params(raw):
    resp = raw.request("textDocument/inlineCompletion", {"textDocument": 5}, timeout=20)
    assert resp["error"]["code"] == -32602
    assert "result" in _open_and_complete(raw)


def test_unknown_method_gets_method_not_found(raw):
    resp = raw.request("dgLsp/noSuchMethod", {})
    assert resp["error"]["code"] == -32601
    assert "result" in _open_and_complete(raw)


def test_broken_json_does_not_kill_the_server(raw):
    raw.send_bytes(b'{"jsonrpc": "2.0", "id": 99, "method": ')
    assert "result" in _open_and_complete(raw)


def test_fill_selection_with_bad_arguments_answers_an_error_result(raw):
    resp = raw.request("workspace/executeCommand", {"command": "dgLsp.fillSelection", "arguments": ["nope"]})
    assert resp["result"]["applied"] is False and resp["result"]["error"]
    assert "result" in _open_and_complete(raw)


def test_missing_model_directory_is_a_clear_error_and_the_server_stays_up(tmp_path):
    client = RawClient(server_command(model=str(tmp_path / "does-not-exist")))
    try:
        client.initialize()
        status = client.wait_state()
        assert status["state"] == "error"
        assert "not found" in status["error"] and "does-not-exist" in status["error"]
        resp = _open_and_complete(client)
        assert resp["result"]["items"] == []
        assert client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]["state"] == "error"
    finally:
        client.close()
