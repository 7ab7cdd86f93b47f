"""Robustness over the raw protocol: after each kind of abuse the server answers the next normal
request exactly as before. (Broken JSON, malformed params, an unknown request method and a missing
model directory are covered in test_bad_input.py.)"""

from __future__ import annotations

import json
import time

import pytest

from .conftest import server_command
from .rawclient import RawClient

URI = "file:///tmp/dg_lsp_robust/normal.py"
TEXT = "def add(a, b):\n    return a + b\n"
INLINE = "textDocument/inlineCompletion"


def _inline(uri, line, character, kind=1):
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": kind}}


def _open(client, uri, text, language="python"):
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                            "text": text}})


def _send(client, msg_id, method, params):
    client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode())


class Robust:
    def __init__(self):
        self.client = RawClient(server_command())
        # Before initialize: requests are refused with ServerNotInitialized, notifications dropped.
        self.before_init = [self.client.request(INLINE, _inline(URI, 1, 11), timeout=60),
                            self.client.request("workspace/executeCommand", {"command": "dgLsp.status"})]
        self.client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python",
                                                                     "version": 1, "text": "dropped"}})
        self.client.initialize({"maxSteps": 2})
        assert self.client.wait_state()["state"] == "ready"
        _open(self.client, URI, TEXT)
        self.expected = self.client.request(INLINE, _inline(URI, 1, 11))["result"]
        assert self.expected["items"], "the tiny model gives some text here"

    def assert_normal(self):
        """The next normal request gets the same answer as before the abuse."""
        _open(self.client, URI, TEXT)
        resp = self.client.request(INLINE, _inline(URI, 1, 11), timeout=120)
        assert resp.get("result") == self.expected, resp
        status = self.client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        assert status["state"] == "ready"


@pytest.fixture(scope="module")
def robust():
    r = Robust()
    yield r
    r.client.close()


def test_requests_before_initialize_get_server_not_initialized(robust):
    for resp in robust.before_init:
        assert resp["error"]["code"] == -32002
    robust.assert_normal()


def test_malformed_json_rpc_messages(robust):
    c = robust.client
    for body in [b"[]", b'[{"jsonrpc": "2.0", "id": 7001, "method": "shutdown"}]', b'"text"', b"42", b"null",
                 b"{}", b'{"jsonrpc": "2.0", "id": 7002}', b'{"jsonrpc": "2.0", "id": 7003, "result": 1}',
                 b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 3}}',
                 b'{"jsonrpc": "2.0", "id": {"nested": 1}, "method": "workspace/executeCommand"}',
                 b"\xff\xfe\x00 not utf-8"]:
        c.send_bytes(body)
    c.send_bytes(b'{"jsonrpc": "1.0", "id": 7004, "method": "workspace/executeCommand", '
                 b'"params": {"command": "dgLsp.status"}}')
    assert c.wait_response(7004)["error"]["code"] == -32600
    c.send_bytes(b'{"jsonrpc": "2.0", "id": 7005, "method": 17, "params": {}}')
    assert c.wait_response(7005)["error"]["code"] == -32600
    c.send_bytes(b'{"jsonrpc": "2.0", "id": 7006, "method": "workspace/executeCommand", "params": "status"}')
    assert c.wait_response(7006)["error"]["code"] == -32602
    robust.assert_normal()


def test_unknown_methods(robust):
    c = robust.client
    c.notify("dgLsp/noSuchNotification", {"x": 1})
    c.notify("$/noSuchNotification", {})
    assert c.request("$/noSuchRequest", {})["error"]["code"] == -32601
    assert c.request("textDocument/noSuchFeature", _inline(URI, 0, 0))["error"]["code"] == -32601
    robust.assert_normal()


def test_out_of_range_edits_are_clamped_into_the_document(robust):
    """Plain text: the edits leave two lines, "defCreturn x" and "AD", which no Python parses, and the syntax
    gate would hide the random tiny model's text there, leaving no item whose range shows where the cursor
    was clamped."""
    c, uri = robust.client, "file:///tmp/dg_lsp_robust/edits.txt"
    _open(c, uri, "def f(x):\n    return x\n", language="plaintext")

    def edit(start, end, text, version=2, target=uri):
        c.notify("textDocument/didChange", {"textDocument": {"uri": target, "version": version}, "contentChanges": [
            {"range": {"start": {"line": start[0], "character": start[1]},
                       "end": {"line": end[0], "character": end[1]}}, "text": text}]})

    edit((50, 0), (50, 0), "A")  # past the end: appended     -> "def f(x):\n    return x\nA"
    edit((0, 100), (0, 200), "B")  # past the line's end        -> "def f(x):B\n    return x\nA"
    edit((1, 4), (0, 3), "C")  # reversed range                -> "defCreturn x\nA"
    edit((2**31 - 1, 2**31 - 1), (2**31 - 1, 2**31 - 1), "D")  # -> "defCreturn x\nAD"
    edit((-1, 0), (0, 0), "never")  # invalid position: the notification is dropped
    edit((0, 0), (0, 0), "never", target="file:///tmp/dg_lsp_robust/not-open.py")
    resp = c.request(INLINE, _inline(uri, 99, 0))  # clamps to the end of "AD"
    items = resp["result"]["items"]
    assert items and items[0]["range"]["start"] == {"line": 1, "character": 2}
    resp = c.request("workspace/executeCommand", {"command": "dgLsp.fillSelection", "arguments": [
        {"uri": uri, "range": {"start": {"line": 0, "character": 3}, "end": {"line": 0, "character": 4}}}]})
    assert resp["result"]["applied"] is False and isinstance(resp["result"]["text"], str)  # the client refused
    robust.assert_normal()


def test_ten_megabyte_document(robust):
    """Answered with text at the right place, before and after an edit (plain text: the random tiny model's
    text never parses, and the syntax gate would leave nothing to check)."""
    c, uri = robust.client, "file:///tmp/dg_lsp_robust/huge.txt"
    chunk = "def f_{0}(x):\n    return x * {0}  # padding padding padding\n\n"
    text = "".join(chunk.format(i) for i in range(10_500_000 // len(chunk.format(0)) + 1))
    assert len(text) >= 10_000_000
    _open(c, uri, text, language="plaintext")
    lines = text.count("\n")

    def items_at(line, character):
        resp = c.request(INLINE, _inline(uri, line, character), timeout=180)
        items = resp["result"]["items"]
        assert items, resp  # not given up on
        for item in items:
            assert item["range"]["start"] == item["range"]["end"] == {"line": line, "character": character}
        return items

    for line in (lines - 2, lines // 2):
        items_at(line, 4)
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": lines - 2, "character": 4}, "end": {"line": lines - 2, "character": 4}},
         "text": "y = "}]})
    items_at(lines - 2, 8)
    # the edit landed where the editor put it: the line is now 4 characters longer (clamped at its end)
    line_text = text.split("\n")[lines - 2]
    items_at_end = c.request(INLINE, _inline(uri, lines - 2, 999), timeout=180)["result"]["items"]
    assert items_at_end and items_at_end[0]["range"]["start"]["character"] == len(line_text) + 4
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    robust.assert_normal()


def test_nul_bytes_in_a_document(robust):
    c, uri = robust.client, "file:///tmp/dg_lsp_robust/nul.py"
    _open(c, uri, "x = '\x00\x00'\ndef g(\x00):\n    return \x00\n")
    resp = c.request(INLINE, _inline(uri, 2, 11))
    for item in resp["result"]["items"]:
        assert "\x00" not in item["insertText"]
    robust.assert_normal()


def test_undecodable_bytes_in_an_unopened_file_read_from_disk(robust, tmp_path):
    c = robust.client
    path = tmp_path / "latin1.py"
    path.write_bytes(b"def f():\n    s = '\xff\xfe caf\xe9'\n    return \x80\x81\n")
    uri = path.as_uri()
    c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "#"}]})
    c.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    resp = c.request(INLINE, _inline(uri, 2, 11))  # never opened: read from disk, bad bytes replaced
    assert isinstance(resp["result"]["items"], list)
    resp = c.request(INLINE, _inline(path.with_name("missing.py").as_uri(), 0, 0))
    assert resp["result"]["items"] == []
    robust.assert_normal()


def test_burst_of_a_thousand_requests(robust):
    c, uri = robust.client, "file:///tmp/dg_lsp_robust/burst.py"
    _open(c, uri, TEXT)
    ids = list(range(10_000, 11_000))
    for i in ids:
        _send(c, i, INLINE, _inline(uri, 1, 11, kind=2 if i % 2 else 1))
    answers: dict[int, dict] = {}
    deadline = time.monotonic() + 240
    while len(answers) < len(ids):
        msg = c.messages.get(timeout=max(0.1, deadline - time.monotonic()))
        if msg.get("id") in answers:
            raise AssertionError(f"two answers to {msg['id']}")
        if msg.get("id") in ids and "method" not in msg:
            answers[msg["id"]] = msg
    assert all("result" in a for a in answers.values())
    assert answers[ids[-1]]["result"]["items"]  # the newest request gets the suggestion
    robust.assert_normal()


def test_storm_of_cancel_requests(robust):
    c, uri = robust.client, "file:///tmp/dg_lsp_robust/storm.py"
    _open(c, uri, TEXT)
    _send(c, 20_000, INLINE, _inline(uri, 1, 11))
    for i in range(1000):
        c.notify("$/cancelRequest", {"id": [20_000, i, f"s{i}", 19_999_999][i % 4]})
    c.send_bytes(b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {}}')
    c.send_bytes(b'{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": null}}')
    first = c.wait_response(20_000)
    assert "result" in first or first["error"]["code"] == -32800
    robust.assert_normal()


def test_odd_notebook_messages(robust):
    """Notebooks (`notebookDocument/*`): malformed params, structure changes past the cell list's ends, an edit past
    a cell's end, changes and closes for what is not open. The cells are then as those edits clamp them, and a cell
    is answered at the right place."""
    c, nb = robust.client, "file:///tmp/dg_lsp_robust/odd.ipynb"
    cell = [f"vscode-notebook-cell:{nb}#c{i}" for i in range(4)]
    c.notify("notebookDocument/didOpen", {"notebookDocument": 3, "cellTextDocuments": []})
    c.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": nb, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": cell[0]}, {"kind": 2, "document": cell[1]}]},
        "cellTextDocuments": [{"uri": cell[0], "languageId": "python", "version": 1, "text": "x = 1\n"},
                              {"uri": cell[1], "languageId": "plaintext", "version": 1, "text": "notes\n"}]})

    def change(cells, version=2, uri=nb):
        c.notify("notebookDocument/didChange", {"notebookDocument": {"uri": uri, "version": version},
                                                "change": {"cells": cells}})

    # a cell inserted far past the end, with more deleted than there is: appended
    change({"structure": {"array": {"start": 99, "deleteCount": 99, "cells": [{"kind": 2, "document": cell[2]}]},
                          "didOpen": [{"uri": cell[2], "languageId": "plaintext", "version": 1, "text": "y = 2\n"}]}})
    # an edit past the new cell's end: appended to it; a change to a cell and a notebook that are not open
    change({"textContent": [{"document": {"uri": cell[2], "version": 2}, "changes": [
        {"range": {"start": {"line": 40, "character": 0}, "end": {"line": 40, "character": 0}}, "text": "z = "}]},
        {"document": {"uri": cell[3], "version": 2}, "changes": [{"text": "never"}]}]}, version=3)
    change({"textContent": []}, uri="file:///tmp/dg_lsp_robust/never-opened.ipynb")
    c.notify("notebookDocument/didClose", {"notebookDocument": {"uri": "file:///tmp/dg_lsp_robust/nope.ipynb"},
                                           "cellTextDocuments": [{"uri": cell[3]}]})
    c.notify("notebookDocument/didChange", {"notebookDocument": {"uri": nb}, "change": "everything"})
    # the new cell is "y = 2\nz = ": the cursor after "z = " on its line 1 (plain text: no gate hides the tiny
    # model's text, so the item's range shows where the cursor is; had the edit been dropped, it would be clamped
    # to the empty line's start)
    resp = c.request(INLINE, _inline(cell[2], 1, 4), timeout=120)
    assert resp["result"]["items"], resp
    for item in resp["result"]["items"]:
        assert item["range"]["start"] == item["range"]["end"] == {"line": 1, "character": 4}
    robust.assert_normal()
