"""The engine API's codec (dg_lsp/remote/wire.py) and the thin client's URL and down-engine handling: no Ray."""

from __future__ import annotations

import socket
import threading

import pytest

from dg_lsp.config import Settings, engine_key, merge
from dg_lsp.engine.types import DenoiseParams, InfillRequest, InfillResult
from dg_lsp.remote import wire
from dg_lsp.remote.client import EngineURLError, RemoteEngine, parse_engine_url


def test_a_request_round_trips_with_every_field():
    req = InfillRequest(prefix="def f(x):\n    return ", suffix="\n", length_strategy="search", hole_lengths=(4, 8),
                        max_prompt_tokens=512, use_suffix=False, doc_key="file:///a.py", reuse_prefix=False,
                        heal=False, heal_retry=True, batch_rows=4, hole_tokens=3, free_names=("total", "m"),
                        params=DenoiseParams(max_steps=8, temperature=0.0, seed=5, deadline_ms=250.0))
    back = wire.request_from_json(wire.request_to_json(req))
    for name in wire.request_to_json(req):
        assert getattr(back, name) == getattr(req, name), name
    assert back.cancel is not req.cancel and not back.cancel.is_set()  # process-local, never sent
    # no names, no field: an engine from before `free_names` takes the request
    assert "free_names" not in wire.request_to_json(InfillRequest(prefix="x"))


def test_integers_where_floats_go_become_floats():
    back = wire.request_from_json({"prefix": "x", "params": {"temperature": 0, "deadline_ms": 100}})
    assert isinstance(back.params.temperature, float) and back.params.deadline_ms == 100.0


@pytest.mark.parametrize("body, message", [
    ([], "expected an object"),
    ({"suffix": "x"}, "prefix is required"),
    ({"prefix": 3}, "prefix: expected str"),
    ({"prefix": "x", "cancel": True}, "unknown fields cancel"),
    ({"prefix": "x", "what": 1}, "unknown fields what"),
    ({"prefix": "x", "length_strategy": "guess"}, "expected one of"),
    ({"prefix": "x", "hole_lengths": []}, "1-16 integers"),
    ({"prefix": "x", "batch_rows": 1000}, "batch_rows: expected a value in"),
    ({"prefix": "x", "free_names": ["ok", "not a name"]}, "free_names: expected at most 8 identifiers"),
    ({"prefix": "x", "free_names": [1]}, "free_names: expected at most 8 identifiers"),
    ({"prefix": "x", "free_names": "m"}, "free_names: expected list"),
    ({"prefix": "x", "use_suffix": 1}, "use_suffix: expected bool"),
    ({"prefix": "x", "max_prompt_tokens": True}, "got a boolean"),
    ({"prefix": "x", "params": {"max_steps": "many"}}, "params.max_steps"),
    ({"prefix": "x", "params": {"nope": 1}}, "params: unknown fields nope"),
    ({"prefix": "x", "params": []}, "params: expected an object"),
])
def test_bad_requests_are_refused_with_the_field_named(body, message):
    with pytest.raises(wire.WireError, match=message):
        wire.request_from_json(body)


def test_a_result_round_trips():
    res = InfillResult(text="a + b", steps=3, tokens_per_forward=1.5, generated_tokens=3,
                       timings_ms={"total": 12.5}, hole_length=8, score=-0.5, candidates=[("a", -1.0), ("ab", -0.5)],
                       prompt_tokens=10, reused_tokens=7, batch_rows=2, heal_mismatch=True,
                       alternatives=[("a + b", -1.5), ("b + a", -2.0)])
    assert wire.result_from_json(wire.result_to_json(res)) == res
    assert wire.result_from_json(dict(wire.result_to_json(res), from_a_newer_engine=1)) == res
    # the other lines an answer's items come from: pairs of text and score, anything else dropped
    odd = dict(wire.result_to_json(res), alternatives=[["a + b", -1], "ab", ["x"], [1, 2], ["y", True], None])
    assert wire.result_from_json(odd).alternatives == [("a + b", -1.0)]
    assert wire.result_from_json(dict(wire.result_to_json(res), alternatives=None)).alternatives == []


def test_affinity_keys_differ_across_users_and_documents():
    assert wire.affinity_key("alice", "file:///a.py") == wire.affinity_key("alice", "file:///a.py")
    assert wire.affinity_key("alice", "file:///a.py") != wire.affinity_key("bob", "file:///a.py")
    assert wire.affinity_key("alice", "file:///a.py") != wire.affinity_key("alice", "file:///b.py")


def test_engine_urls():
    assert parse_engine_url("http://gpu-box:8000/") == ("http", "gpu-box", 8000, "")
    assert parse_engine_url("https://team.example/dg") == ("https", "team.example", 443, "/dg")
    for bad in ("gpu-box:8000", "ftp://x", "http://", "http://x:notaport"):
        with pytest.raises(EngineURLError):
            parse_engine_url(bad)


def test_the_engine_setting_takes_urls_only_and_reloads():
    settings, errors = merge(Settings(), {"engine": "http://127.0.0.1:8000"}, from_client=True)
    assert settings.engine == "http://127.0.0.1:8000" and not errors
    assert engine_key(settings) != engine_key(Settings())
    same, errors = merge(settings, {"engine": "gpu-box"}, from_client=True)
    assert same.engine == "http://127.0.0.1:8000" and "http:// or https:// URL" in errors[0]
    assert merge(settings, {"engine": ""})[0].engine is None  # empty: back to a local model


def test_a_refused_connection_answers_empty_at_once_and_says_why(monkeypatch):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = RemoteEngine(f"http://127.0.0.1:{port}", token="t" * 12)
    try:
        engine.warmup()  # never raises
        assert engine.remote["reachable"] is False and "cannot reach" in engine.remote["error"]
        first = engine.submit(InfillRequest(prefix="x", doc_key="d")).result(timeout=10)
        assert first.cancelled and first.text == ""
        assert engine.stats["skippedWhileDown"] >= 1  # inside DOWN_S: no connection attempted
        assert engine.status()["remote"]["reachable"] is False
    finally:
        engine.close()


def test_a_cancelled_call_aborts_its_connection():
    """A server that accepts and never answers: cancelling the request ends the call, not the timeout."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    engine = RemoteEngine(f"http://127.0.0.1:{server.getsockname()[1]}", token="t" * 12, timeout_s=60,
                          cancel_endpoint=False)
    try:
        req = InfillRequest(prefix="x", doc_key="d")
        future = engine.submit(req)
        req.cancel.set()
        result = future.result(timeout=10)  # far below the 60 s timeout
        assert result.cancelled and engine.stats["cancelled"] == 1 and engine.stats["unreachable"] == 0
    finally:
        engine.close()
        server.close()


def test_the_ready_line_is_found_after_what_ray_prints_first():
    import io

    out = io.StringIO("(raylet) Task ServeController.graceful_shutdown failed ...\n"
                      f"dg-lsp engine: {wire.READY} http://127.0.0.1:8000 (2 replicas)\nlater\n")
    line, before = wire.read_ready(out)
    assert line.startswith("dg-lsp engine: ready at http://127.0.0.1:8000") and len(before) == 1
    assert out.readline() == "later\n"  # nothing after the ready line is read
    assert wire.read_ready(io.StringIO("(raylet) died\n")) == ("", ["(raylet) died\n"])  # exited first
