"""`verifyWeight` over the real protocol (AR-verified decoding, VerifiedWalk.run), on a tiny adapted Gemma 3
whose decoder never ends the hole and whose base model is its only voice (B = 0, the canvas gate closed): at weight
0 the suggestion is the base model's own greedy continuation, computed here independently by the engine's
autoregressive path; with the setting off (null) the server answers by plain diffusion, which on this random model
writes something else. The default (1.0) is on."""

from __future__ import annotations

import sys

import pytest

from dg_lsp.engine.gemma3.tiny import build_tiny

from .rawclient import RawClient

pytestmark = pytest.mark.timeout(600)

PREFIX = "def add(a, b):\n    return a"
URI = "file:///tmp/dg_lsp_verified/a.txt"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny-verified-e2e"), delta_scale=0.0, future_gate=-1e4,
                      end_bias=-50.0)


class _Server:
    """One server on the tiny model; `suggest` asks at the line's end under the settings given, sent as the
    workspace's configuration (merged over the initialization options, applied per request)."""

    def __init__(self, model_dir, *flags: str):
        self.client = RawClient([sys.executable, "-m", "dg_lsp", "serve", "--model", str(model_dir), "--device",
                                 "cpu", "--dtype", "float32", *flags])
        self.client.initialize({"temperature": 0.0, "completionCache": False, "deadlineMs": 600000, "maxSteps": 32})
        assert self.client.wait_state()["state"] == "ready"
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": URI, "languageId": "plaintext", "version": 1, "text": PREFIX + "\n"}})

    def suggest(self, options: dict | None = None) -> tuple[str, dict]:
        c = self.client
        if options is not None:
            c.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": options}})
        resp = c.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": URI}, "position": {"line": 1, "character": 12},
            "context": {"triggerKind": 1}}, timeout=300)
        status = c.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        items = resp["result"]["items"]
        return (items[0]["insertText"] if items else ""), status

    def close(self) -> None:
        self.client.close()


def test_weight_zero_suggests_the_base_models_greedy_line(model_dir):
    from dg_lsp.engine import Engine

    engine = Engine.load(str(model_dir), device="cpu", dtype="float32")
    try:
        ar = engine.autoregressive(PREFIX, max_new_tokens=40, stop_at_newline=True).text
    finally:
        engine.close()
    server = _Server(model_dir)
    try:
        # the default is verified decoding at weight 1
        default, status = server.suggest()
        assert status["settings"]["verifyWeight"] == 1.0
        # and suffix-scored alternatives (engine/alternatives.py) at 2 hesitations; this line ends the document,
        # with no code after it to read, so they never ran
        assert status["settings"]["alternatives"] == 2 and status["engine"]["alternativeRuns"] == 0
        verified, status = server.suggest({"verifyWeight": 0.0})
        assert status["settings"]["verifyWeight"] == 0.0
        plain, status = server.suggest({"verifyWeight": None})
        assert status["settings"]["verifyWeight"] is None
        one, status = server.suggest({"verifyWeight": 1.0})
        assert status["settings"]["verifyWeight"] == 1.0
    finally:
        server.close()
    server = _Server(model_dir, "--verify-weight", "off")  # the command line's way to say null
    try:
        off, status = server.suggest()
        assert status["settings"]["verifyWeight"] is None
    finally:
        server.close()
    assert off == plain
    # the editor gets the text without the undecodable byte pieces; the hole (the canvas) may end first
    visible = ar.replace("\ufffd", "")
    assert len(verified) >= 8 and visible.startswith(verified), (verified, visible)
    assert plain != verified
    assert default == one != plain
