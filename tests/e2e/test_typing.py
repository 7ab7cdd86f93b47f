"""Typing over the real protocol: typing-through a shown suggestion, and a smoke run of
`dg-lsp bench typing` (the benchmark itself prints figures; nothing here is timed)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .conftest import server_command, tiny_model_path
from .rawclient import RawClient

URI = "file:///tmp/dg_lsp_typing/t.py"
TEXT = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"


def _inline(line, character):
    return {"textDocument": {"uri": URI}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}}


# The model's answer at "    return " is scripted (tests/e2e/scripted_server.py: the real server, engine and
# tiny model, only the written text replaced): the random tiny model's text is junk that the syntax gate cuts
# to its clean start (often one character), and a clean Python answer is shown whole.
TYPING_ANSWERS = [["    return ", "a + b"]]
TYPING_SCRIPT = Path(tempfile.gettempdir()) / "dg-lsp-e2e-typing-answers.json"


def test_typing_the_start_of_a_suggestion_gets_the_rest_at_once():
    TYPING_SCRIPT.write_text(json.dumps(TYPING_ANSWERS), encoding="utf-8")
    client = RawClient([sys.executable, str(Path(__file__).with_name("scripted_server.py")), str(TYPING_SCRIPT),
                        "serve", "--model", tiny_model_path(), "--device", "cpu"])
    try:
        client.initialize({"maxSteps": 2, "temperature": 0})
        assert client.wait_state()["state"] == "ready"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                                                                "text": TEXT}})
        shown = client.request("textDocument/inlineCompletion", _inline(1, 11))["result"]["items"][0]["insertText"]
        assert shown == "a + b", shown
        typed = shown[0]
        client.notify("textDocument/didChange", {"textDocument": {"uri": URI, "version": 2}, "contentChanges": [
            {"range": {"start": {"line": 1, "character": 11}, "end": {"line": 1, "character": 11}}, "text": typed}]})
        at = 11 + len(typed.encode("utf-16-le")) // 2
        item = client.request("textDocument/inlineCompletion", _inline(1, at))["result"]["items"][0]
        assert item["insertText"] == shown[1:]
        assert item["range"]["start"] == {"line": 1, "character": at}
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]
        assert status["completion"]["cacheTyped"] == 1 and status["completion"]["computed"] == 1
    finally:
        client.close()


def test_typing_benchmark_smoke(tmp_path):
    out = tmp_path / "typing.json"
    proc = subprocess.run([sys.executable, "-m", "dg_lsp", "bench", "typing", "--model", tiny_model_path(),
                           "--docs", "1", "--bursts", "2", "--max-chars", "4", "--modes", "on",
                           "--probe-tokens", "200", "--probe-reps", "1", "--no-progress", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "final suggestion p50 (ms)" in proc.stdout and "re-encode after a one-character edit" in proc.stdout
    report = json.loads(out.read_text())
    run = report["runs"][0]
    assert run["mode"] == "on" and run["keystrokes"] == 8 and run["shown"] >= 2
    assert len(report["probes"]["encode"]) and report["model_kind"] == "given"


def _doc_uri(i):
    return f"file:///tmp/dg_lsp_typing/doc{i}.py"


def test_documents_waiting_together_share_decoder_forwards():
    """Requests of four documents sent at once: while the first computes, the other three queue and run
    as one batch; every document gets its own answer (the same as with batching switched off)."""
    texts = [f"def f{i}(a, b):\n    return \n" for i in range(4)]
    answers = {}
    for batch in (4, 1):
        client = RawClient(server_command())
        try:
            client.initialize({"maxSteps": 4, "temperature": 0, "batchDocuments": batch, "completionCache": False})
            assert client.wait_state()["state"] == "ready"
            for i, text in enumerate(texts):
                client.notify("textDocument/didOpen", {"textDocument": {"uri": _doc_uri(i), "languageId": "python",
                                                                        "version": 1, "text": text}})
            # automatic (as-you-type) requests, as typing in four editors at once sends
            params = [{"textDocument": {"uri": _doc_uri(i)}, "position": {"line": 1, "character": 11},
                       "context": {"triggerKind": 2}} for i in range(4)]
            replies = client.request_many("textDocument/inlineCompletion", params)
            answers[batch] = [[it["insertText"] for it in r["result"]["items"]] for r in replies]
            engine = client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]["engine"]
            if batch == 4:
                assert engine["batches"] >= 1 and engine["batchedJobs"] >= 2, engine
            else:
                assert engine["batches"] == 0, engine
        finally:
            client.close()
    assert answers[4] == answers[1]
    assert all(len(a) == 1 and a[0] for a in answers[4]), answers
