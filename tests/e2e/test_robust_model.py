"""A model that fails to load (corrupt config.json, corrupt safetensors): the server stays up, says
why, answers every request (with no items), and recovers when the settings point at a good model."""

from __future__ import annotations

import shutil
import time

from .conftest import server_command, tiny_model_path
from .rawclient import RawClient

URI = "file:///tmp/dg_lsp_robust/model.py"
TEXT = "def add(a, b):\n    return a + b\n"


def _complete(client):
    return client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": URI}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 1}})


def _wait_for_model(client, model: str, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        if status["settings"]["model"] == model and status["state"] in ("ready", "error"):
            return status
        time.sleep(0.2)
    raise TimeoutError(model)


def test_corrupt_models_fail_clearly_and_a_good_one_recovers(tmp_path):
    good = tiny_model_path()
    bad_config = tmp_path / "bad-config"
    shutil.copytree(good, bad_config)
    (bad_config / "config.json").write_text('{"model_type": "diffusion_gemma", "text_config": ', encoding="utf-8")
    bad_weights = tmp_path / "bad-weights"
    shutil.copytree(good, bad_weights)
    weights = bad_weights / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])

    client = RawClient(server_command(model=str(bad_config)))
    try:
        client.initialize({"maxSteps": 2})
        status = client.wait_state()
        assert status["state"] == "error" and "bad-config" in status["error"]
        client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                                "text": TEXT}})
        assert _complete(client)["result"]["items"] == []

        client.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {"model": str(bad_weights)}}})
        status = _wait_for_model(client, str(bad_weights))
        assert status["state"] == "error" and "bad-weights" in status["error"]
        assert _complete(client)["result"]["items"] == []

        client.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {"model": good}}})
        status = _wait_for_model(client, good)
        assert status["state"] == "ready", status
        assert _complete(client)["result"]["items"]
    finally:
        client.close()
