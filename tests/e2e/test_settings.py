"""Each setting the README lists, by its effect over the real protocol (issue 14, tests that cannot fail).
Covered elsewhere: `model` (test_robust_model.py), `batchDocuments` (test_typing.py), `lengthStrategy`
(test_fill.py: pad refuses a full canvas, search applies), `trustRemoteCode` and `allowPickleWeights` (command-line
only; test_lifecycle.py: a client's value is refused), `suffixTokens` (test_suggestion_edits.py: the suffix window
the server trims a repeated line against)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from .conftest import server_command
from .rawclient import RawClient

pytestmark = pytest.mark.timeout(600)

URI = "file:///tmp/dg_lsp_settings/s.txt"
TEXT = "".join(f"value_{i} = compute(value_{i - 1}, {i})\n" for i in range(1, 40)) + "result = \n"
LAST = TEXT.count("\n") - 1
BASE = {"maxSteps": 4, "temperature": 0.8, "completionCache": False, "prefixCache": True, "deadlineMs": 600000,
        "automaticTrigger": True, "maxLines": 8, "debounceMs": 0, "seed": 0, "prefixTokens": 1024}


@pytest.fixture(scope="module")
def client():
    c = RawClient(server_command())
    c.initialize(BASE)
    assert c.wait_state()["state"] == "ready"
    c.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
                                                       "text": TEXT}})
    yield c
    c.close()


def _status(c):
    return c.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]


def _set(c, **settings):
    c.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {**BASE, **settings}}})
    status = _status(c)
    for key, value in settings.items():
        assert status["settings"][key] == value, (key, status["settings"][key])


def _inline(c, line=LAST, character=9, kind=1, uri=URI):
    resp = c.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri}, "position": {
        "line": line, "character": character}, "context": {"triggerKind": kind}}, timeout=300)
    return resp["result"]["items"]


def _delta(c, fn):
    before = _status(c)
    out = fn()
    after = _status(c)
    engine = {k: after["engine"][k] - before["engine"][k] for k in after["engine"]}
    completion = {k: after["completion"][k] - before["completion"].get(k, 0) for k in after["completion"]}
    return out, engine, completion


def test_device(client):
    assert _status(client)["device"] == "cpu"  # --device cpu on the command line


@pytest.mark.parametrize("steps", [3, 7])
def test_max_steps(client, steps):
    _set(client, maxSteps=steps)  # the random tiny model never converges: it runs every step it may
    _, engine, _ = _delta(client, lambda: _inline(client))
    assert engine["jobs"] == 1 and engine["steps"] == steps


def test_deadline_ms(client):
    _set(client, maxSteps=256, deadlineMs=1.0)
    _, engine, _ = _delta(client, lambda: _inline(client))
    assert engine["deadlineHits"] == 1 and engine["steps"] < 256


@pytest.mark.parametrize("tokens", [16, 64])
def test_prefix_tokens(client, tokens):
    _set(client, prefixTokens=tokens, prefixCache=False)
    _, engine, _ = _delta(client, lambda: _inline(client))
    assert tokens // 2 <= engine["promptTokens"] <= tokens + 1, engine  # + bos


@pytest.mark.parametrize("on", [True, False])
def test_prefix_cache(client, on):
    _set(client, prefixCache=on)
    _inline(client, character=9)
    _, engine, _ = _delta(client, lambda: _inline(client, character=8))  # the same prompt start, one less char
    assert (engine["reusedTokens"] > 0) is on, engine


@pytest.mark.parametrize("on", [True, False])
def test_completion_cache(client, on):
    _set(client, completionCache=on)
    first = _inline(client, line=3, character=5)
    again, engine, completion = _delta(client, lambda: _inline(client, line=3, character=5))
    assert again == first
    assert (completion["cacheExact"], engine["jobs"]) == ((1, 0) if on else (0, 1)), (completion, engine)


def test_automatic_trigger(client):
    _set(client, automaticTrigger=False)
    items, engine, _ = _delta(client, lambda: _inline(client, kind=2))
    assert items == [] and engine["jobs"] == 0
    items, engine, _ = _delta(client, lambda: _inline(client, kind=1))  # an explicit request still computes
    assert engine["jobs"] == 1


def test_max_document_chars(client):
    _set(client, maxDocumentChars=len(TEXT) - 1)
    items, engine, _ = _delta(client, lambda: _inline(client))
    assert items == [] and engine["jobs"] == 0
    _set(client, maxDocumentChars=len(TEXT))
    _, engine, _ = _delta(client, lambda: _inline(client))
    assert engine["jobs"] == 1


def test_seed_and_temperature(client):
    texts = {}
    for temperature in (0.8, 0.0):
        for seed in (1, 2, 1):
            _set(client, temperature=temperature, seed=seed, maxSteps=6)
            items = _inline(client)
            texts.setdefault(temperature, []).append(items[0]["insertText"] if items else "")
    hot, greedy = texts[0.8], texts[0.0]
    assert hot[0] == hot[2] and hot[0] != hot[1], hot  # the seed decides a sampled answer
    assert greedy[0] == greedy[2], greedy  # greedy from the same (seeded) start canvas: reproducible
    assert greedy[0] != hot[0], (greedy, hot)  # the temperature changes the answer


def test_debounce_ms(client):
    def two_automatic_requests():
        for i, character in ((900, 8), (901, 9)):
            client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": i, "method": "textDocument/inlineCompletion",
                                          "params": {"textDocument": {"uri": URI}, "position": {
                                              "line": LAST, "character": character},
                                              "context": {"triggerKind": 2}}}).encode())
        return [client.wait_response(i, timeout=120) for i in (900, 901)]

    _set(client, debounceMs=500, maxSteps=4)
    t0 = time.monotonic()
    (older, newer), engine, completion = _delta(client, two_automatic_requests)
    assert older["result"]["items"] == [] and time.monotonic() - t0 >= 0.5
    assert completion["computations"] == 1 and engine["jobs"] == 1, (completion, engine)  # the older never ran


def test_max_lines(client):
    """An explicit request on an empty line may get a block: never more lines than maxLines."""
    for max_lines in (1, 2):
        _set(client, maxLines=max_lines, maxSteps=6)
        for line in range(0, 12):
            for item in _inline(client, line=line, character=0):
                text = item["insertText"]
                breaks = text.count("\n") + text.replace("\r\n", "\n").count("\r")
                assert breaks < max_lines or (breaks == max_lines and text.endswith(("\n", "\r"))), text


def test_dtype_auto_reports_its_choice(client):
    """`dtype` auto (the default) on a CPU is settled at warm-up and reported with its reason (issue 15.3)."""
    status = _status(client)
    choice = status["dtypeChoice"]
    assert choice["asked"] == "auto" and choice["chosen"] == status["dtype"] in ("float32", "bfloat16")
    assert choice["probe"]["float32_ms"] > 0 and choice["probe"]["bfloat16_ms"] > 0 and choice["reason"]


def test_entropy_bound(client):
    """The bound decides how many hole positions each step accepts (the rest are re-noised), so with the seed and
    temperature fixed it decides the answer: one position a step, or all of them."""
    texts = []
    for bound in (1e-6, 100.0, 1e-6):
        _set(client, entropyBound=bound, temperature=0.8, seed=1, maxSteps=6)
        items = _inline(client)
        texts.append(items[0]["insertText"] if items else "")
    assert texts[0] == texts[2] and texts[0] != texts[1], texts


def test_dtype(client):
    """`dtype` reloads the model in that dtype, and it answers in it."""
    try:
        for dtype in ("bfloat16", "float32"):
            _set(client, dtype=dtype)
            status = client.wait_state()
            assert status["state"] == "ready" and status["dtype"] == dtype, status
            _, engine, _ = _delta(client, lambda: _inline(client))
            assert engine["jobs"] == 1
    finally:
        _set(client, dtype="auto")  # the command line's: later settings changes do not reload
        assert client.wait_state()["state"] == "ready"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_engine():
    """`engine`, a shared engine's URL: no model loads here, the infill goes to that engine; with nothing listening
    there the server answers no items and says why in its status."""
    url = f"http://127.0.0.1:{_free_port()}"
    c = RawClient(["env", "DG_LSP_ENGINE_TOKEN=" + "t" * 32, *server_command()])
    try:
        c.initialize({**BASE, "engine": url})
        status = c.wait_state()
        assert status["state"] == "ready" and status["settings"]["engine"] == url
        assert (status["model"], status["device"]) == (url, "remote")  # not the --model of the command line
        c.notify("textDocument/didOpen", {"textDocument": {"uri": URI, "languageId": "plaintext", "version": 1,
                                                           "text": TEXT}})
        assert _inline(c) == []
        status = _status(c)
        assert status["remote"]["reachable"] is False and "cannot reach" in status["error"], status
    finally:
        c.close()
