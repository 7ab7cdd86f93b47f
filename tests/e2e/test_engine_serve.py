"""A team's shared engine (issue 17): `dg-lsp engine serve` on a local Ray Serve with the tiny model, and thin
`dg-lsp serve --engine URL` servers driven over the real LSP protocol.

Ray and the Serve application start once per test session (`engine` below, two replicas); the fixture prints
what that costs. Skipped, with the reason, only when Ray Serve is not importable (`pip install -e '.[test]'`
brings it).
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import pytest

pytest.importorskip("ray.serve", reason="Ray Serve is not installed (pip install -e '.[test]' brings ray[serve])")

from dg_lsp.remote import wire  # noqa: E402

from .conftest import tiny_model_path  # noqa: E402
from .rawclient import RawClient  # noqa: E402

TEXT = "def add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"
# plain text: the random tiny model's text never parses, and the syntax gate would hide it in Python
GREEDY = {"maxSteps": 4, "temperature": 0, "seed": 0, "batchDocuments": 1, "completionCache": False}
SLOW = {"maxSteps": 256, "temperature": 0.8, "deadlineMs": 600000, "completionCache": False}  # 256 real steps


@dataclass
class EngineServer:
    url: str
    port: int
    token: str
    proc: subprocess.Popen
    startup_s: float


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_call(port: int, method: str, path: str, body=None, token: str | None = None, affinity: str | None = None,
              raw: bytes | None = None, timeout: float = 60.0) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if affinity:
        headers[wire.AFFINITY_HEADER] = affinity
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read()
    finally:
        conn.close()
    return resp.status, (json.loads(text) if text else {})


def _say(request, line: str) -> None:
    """A line on the terminal, past pytest's output capture (what the session's engine costs)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    if capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
    else:
        reporter.write_line(line)


@pytest.fixture(scope="session")
def engine(request):
    """`dg-lsp engine serve` (local Ray, 2 replicas of the tiny model) for the whole session. float32 here and on
    the local side the remote is compared with: `dtype auto` settles on a warm-up timing, which two processes on a
    CPU with bfloat16 can read differently (the remote and local scores then differ in the fourth decimal)."""
    model = tiny_model_path()
    token, port = secrets.token_urlsafe(16), _free_port()
    saved = os.environ.get(wire.TOKEN_ENV)
    os.environ[wire.TOKEN_ENV] = token  # the thin servers started below inherit it, as an editor's would
    log = tempfile.NamedTemporaryFile(prefix="dg-lsp-engine-", suffix=".log", delete=False)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", DG_LSP_THREADS="1")
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "dg_lsp", "engine", "serve", "--model", model, "--device", "cpu",
                             "--replicas", "2", "--cpus-per-replica", "0.5", "--dtype", "float32", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    line, before = wire.read_ready(proc.stdout)  # its ready line (Ray may print first), or EOF when it failed
    startup = time.monotonic() - t0
    if not line:
        proc.kill()
        pytest.fail(f"dg-lsp engine serve did not start: {''.join(before)!r}; log {log.name}:\n"
                    + open(log.name, errors="replace").read()[-3000:])
    _say(request, f"\n[engine serve] local Ray + Serve app with 2 tiny-model replicas ready in {startup:.1f} s")
    server = EngineServer(f"http://127.0.0.1:{port}", port, token, proc, startup)
    yield server
    t1 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
    _say(request, f"\n[engine serve] stopped in {time.monotonic() - t1:.1f} s")
    if saved is None:
        os.environ.pop(wire.TOKEN_ENV, None)
    else:
        os.environ[wire.TOKEN_ENV] = saved


def _thin(engine: EngineServer, options: dict, *env: str, url: str | None = None) -> RawClient:
    command = [sys.executable, "-m", "dg_lsp", "serve", "--engine", url or engine.url]
    client = RawClient(["env", *env, *command] if env else command)
    client.initialize(options)
    return client


def _local(options: dict) -> RawClient:
    client = RawClient([sys.executable, "-m", "dg_lsp", "serve", "--model", tiny_model_path(), "--device", "cpu",
                        "--dtype", "float32"])
    client.initialize(options)
    return client


def _open(client: RawClient, uri: str, text: str = TEXT, language: str = "plaintext") -> None:
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                            "text": text}})


def _inline(client: RawClient, uri: str, line: int, character: int, timeout: float = 60.0) -> list:
    resp = client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
        "context": {"triggerKind": 1}}, timeout=timeout)
    return resp["result"]["items"]


def _status(client: RawClient) -> dict:
    return client.request("workspace/executeCommand", {"command": "dgLsp.status"})["result"]


def _replica_status(engine: EngineServer, affinity: str | None = None) -> dict:
    status, body = http_call(engine.port, "GET", "/v1/status", token=engine.token, affinity=affinity)
    assert status == 200, body
    return body


# -- the token and bad input ------------------------------------------------------------------------------------
def test_requests_without_the_token_are_refused(engine):
    req = {"id": "x", "request": {"prefix": "def f(x):\n    return "}}
    for token in (None, "wrong-token", ""):
        for method, path, body in (("POST", "/v1/infill", req), ("GET", "/v1/status", None),
                                   ("GET", "/v1/health", None), ("POST", "/v1/cancel", {"id": "x"})):
            status, answer = http_call(engine.port, method, path, body, token=token)
            assert status == 401, (token, path, answer)
            assert "token" in answer["error"]
    status, answer = http_call(engine.port, "GET", "/v1/health", token=engine.token)
    assert status == 200 and answer["ok"] is True


def test_bad_bodies_get_400_and_the_engine_keeps_serving(engine):
    cases = [b"not json", b"[1, 2]", json.dumps({"request": {"suffix": "x"}}).encode(),
             json.dumps({"request": {"prefix": "x", "nonsense": 1}}).encode(),
             json.dumps({"request": {"prefix": "x", "params": {"max_steps": "many"}}}).encode(),
             json.dumps({"request": {"prefix": 3}}).encode()]
    for raw in cases:
        status, answer = http_call(engine.port, "POST", "/v1/infill", raw=raw, token=engine.token)
        assert status == 400 and answer["error"], (raw, answer)
    status, _ = http_call(engine.port, "GET", "/v1/nowhere", token=engine.token)
    assert status == 404
    status, answer = http_call(engine.port, "POST", "/v1/infill", {"request": {"prefix": "def f(x):\n    return "}},
                               token=engine.token)
    assert status == 200 and "text" in answer["result"]


# -- the remote result is the local one ------------------------------------------------------------------------
def test_the_remote_engine_gives_the_local_engines_result(engine):
    import torch

    from dg_lsp.engine import DenoiseParams, Engine, InfillRequest

    torch.set_num_threads(1)
    local = Engine.load(tiny_model_path(), "cpu", dtype="float32")
    try:
        cases = [InfillRequest(prefix="def add(a, b):\n    return ", suffix="\n", params=DenoiseParams(temperature=0)),
                 InfillRequest(prefix="x = [1, 2", suffix="]\n", params=DenoiseParams(temperature=0, max_steps=8),
                               length_strategy="search"),
                 InfillRequest(prefix="for i in range(", suffix="):\n    pass\n",
                               params=DenoiseParams(temperature=0.8, seed=7))]
        for i, req in enumerate(cases):
            req.doc_key = f"equal-{i}-{secrets.token_hex(4)}"  # a fresh prefix-cache slot on both sides
            mine = wire.result_to_json(local.run_infill(req))
            status, answer = http_call(engine.port, "POST", "/v1/infill", {"request": wire.request_to_json(req)},
                                       token=engine.token)
            assert status == 200, answer
            theirs = answer["result"]
            for key in ("timings_ms",):
                mine.pop(key), theirs.pop(key)
            assert theirs == mine
    finally:
        local.close()


def test_an_lsp_completion_through_the_engine_equals_the_local_one(engine):
    uri = "file:///tmp/dg_lsp_team/equal.txt"
    thin, local = _thin(engine, GREEDY), _local(GREEDY)
    try:
        assert thin.wait_state()["state"] == "ready" and local.wait_state()["state"] == "ready"
        for client in (thin, local):
            _open(client, uri)
        positions = [(1, 11), (2, 4), (5, 10), (0, 8)]
        remote = [_inline(thin, uri, *pos) for pos in positions]
        here = [_inline(local, uri, *pos) for pos in positions]
        assert remote == here
        assert any(items and items[0]["insertText"] for items in remote), remote  # not just empty == empty
        status = _status(thin)
        assert status["remote"]["reachable"] is True and status["engine"]["answered"] >= len(positions)
    finally:
        thin.close()
        local.close()


# -- cancellation ----------------------------------------------------------------------------------------------
def _send(client: RawClient, msg_id: int, uri: str) -> None:
    client.send_bytes(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/inlineCompletion",
                                  "params": {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 11},
                                             "context": {"triggerKind": 1}}}).encode())


def _wait(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_cancel_request_stops_the_remote_denoising_loop(engine):
    uri = "file:///tmp/dg_lsp_team/slow.txt"
    client = _thin(engine, SLOW)
    try:
        assert client.wait_state()["state"] == "ready"
        _open(client, uri)
        key = wire.affinity_key(_status(client)["remote"]["clientId"], uri)
        before = _replica_status(engine, key)["counters"]
        _send(client, 1000, uri)
        _wait(lambda: _replica_status(engine, key)["busy"], "the remote computation never started")
        client.notify("$/cancelRequest", {"id": 1000})
        assert client.wait_response(1000, timeout=30)["error"]["code"] == -32800  # RequestCancelled
        after = _wait(lambda: (s := _replica_status(engine, key))["counters"]["cancelledResults"]
                      > before["cancelledResults"] and not s["busy"] and s,
                      "the replica never reported the cancelled computation")
        c = after["counters"]
        assert 0 < c["lastCancelledSteps"] < 256  # stopped part-way, not run to its 256 steps
        assert c["cancelledByDisconnect"] + c["cancelledByEndpoint"] > (before["cancelledByDisconnect"]
                                                                         + before["cancelledByEndpoint"])
        assert after["inflight"] == 0
    finally:
        client.close()


def test_a_superseding_keystroke_cancels_the_remote_computation(engine):
    uri = "file:///tmp/dg_lsp_team/supersede.txt"
    client = _thin(engine, SLOW)
    try:
        assert client.wait_state()["state"] == "ready"
        _open(client, uri)
        key = wire.affinity_key(_status(client)["remote"]["clientId"], uri)
        before = _replica_status(engine, key)["counters"]["cancelledResults"]
        _send(client, 2000, uri)
        _wait(lambda: _replica_status(engine, key)["busy"], "the remote computation never started")
        client.notify("workspace/didChangeConfiguration", {"settings": {"dgLsp": {"maxSteps": 2}}})
        _send(client, 2001, uri)
        assert client.wait_response(2000, timeout=60)["result"]["items"] == []  # superseded: empty at once
        assert "result" in client.wait_response(2001, timeout=60)
        after = _replica_status(engine, key)["counters"]
        assert after["cancelledResults"] > before and 0 < after["lastCancelledSteps"] < 256
    finally:
        client.close()


# -- session affinity ------------------------------------------------------------------------------------------
def test_a_documents_requests_stay_on_one_replica_and_reuse_its_prefix_cache(engine):
    uris = [f"file:///tmp/dg_lsp_team/affinity{i}.txt" for i in range(4)]
    client = _thin(engine, GREEDY)
    try:
        assert client.wait_state()["state"] == "ready"
        version = {}
        for uri in uris:
            _open(client, uri)
            version[uri] = 1
        for k in range(5):  # type "x = 1" at the end of line 2 of every document, asking after each character
            for uri in uris:
                version[uri] += 1
                pos = {"line": 2, "character": 16 + k}
                client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version[uri]},
                                                         "contentChanges": [{"range": {"start": pos, "end": pos},
                                                                             "text": "x = 1"[k]}]})
                _inline(client, uri, 2, 17 + k)
        status = _status(client)
        affinity = status["remote"]["affinity"]
        assert affinity["documents"] == len(uris)
        assert affinity["onOneReplica"] == len(uris), affinity  # every document answered by one replica only
        engine_stats = status["engine"]
        assert engine_stats["reusedTokens"] > 0.5 * engine_stats["promptTokens"], engine_stats
    finally:
        client.close()


def test_the_router_ranks_replicas_by_rendezvous_hash():
    ids = ["a1", "b2", "c3", "d4"]
    first = {k: wire.rank_replicas(f"doc{k}", ids)[0] for k in range(200)}
    assert len(set(first.values())) == 4  # documents spread over every replica
    rest = [r for r in ids if r != "c3"]
    for k, top in first.items():  # removing a replica moves only the documents it held
        if top != "c3":
            assert wire.rank_replicas(f"doc{k}", rest)[0] == top
    assert wire.rank_replicas("doc1", ids) == wire.rank_replicas("doc1", list(reversed(ids)))


# -- the engine down, gone and back ----------------------------------------------------------------------------
def test_an_unreachable_engine_gives_no_items_and_status_says_why(engine):
    uri = "file:///tmp/dg_lsp_team/down.txt"
    client = _thin(engine, GREEDY, url=f"http://127.0.0.1:{_free_port()}")  # nothing listens there
    try:
        assert client.wait_state()["state"] == "ready"
        _open(client, uri)
        assert _inline(client, uri, 1, 11, timeout=30) == []
        status = _status(client)
        assert status["remote"]["reachable"] is False
        assert "cannot reach the engine" in status["error"] and "cannot reach" in status["remote"]["error"]
        assert _inline(client, uri, 1, 11, timeout=30) == []  # still answering
    finally:
        client.close()


def test_a_wrong_token_gives_no_items_and_status_says_so(engine):
    uri = "file:///tmp/dg_lsp_team/token.txt"
    client = _thin(engine, GREEDY, f"{wire.TOKEN_ENV}=not-the-token")
    try:
        assert client.wait_state()["state"] == "ready"
        _open(client, uri)
        assert _inline(client, uri, 1, 11) == []
        status = _status(client)
        assert "refused the token" in status["remote"]["error"] and status["engine"]["refusedToken"] >= 1
    finally:
        client.close()


def _replica_pids(engine: EngineServer) -> dict[str, int]:
    pids = {}
    for k in range(40):  # different keys reach every replica
        s = _replica_status(engine, f"probe-{k}")
        pids[s["replica"]] = s["pid"]
    return pids


def test_the_engine_killed_and_restarted_is_survived(engine):
    """Every replica is killed (SIGKILL); Serve starts new ones. Meanwhile the thin server answers no items
    (within its 3 s engine timeout), says so in dgLsp.status, and completes again once the engine is back."""
    uri = "file:///tmp/dg_lsp_team/restart.txt"
    client = _thin(engine, GREEDY, "DG_LSP_ENGINE_TIMEOUT_S=3")
    try:
        assert client.wait_state()["state"] == "ready"
        _open(client, uri)
        assert _inline(client, uri, 1, 11)  # the tiny model gives text here (plain text, no syntax gate)
        old = _replica_pids(engine)
        assert len(old) == 2
        for pid in old.values():
            os.kill(pid, signal.SIGKILL)
        outage = _inline(client, uri, 1, 11, timeout=30)
        assert outage == []
        assert _status(client)["remote"]["error"]
        # back: new replicas (new ids) answer, and so does the same thin server
        items = _wait(lambda: _inline(client, uri, 1, 11, timeout=30), "the thin server never completed again",
                      timeout=240)
        assert items[0]["insertText"]
        status = _status(client)
        assert status["remote"]["reachable"] is True and status["remote"]["error"] is None
        assert set(_replica_pids(engine)).isdisjoint(old)
    finally:
        client.close()


# -- the command lines' bad input (no Ray started) ---------------------------------------------------------------
def _dg(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dg_lsp", *args], capture_output=True, text=True, timeout=120,
                          env=env)


def test_engine_serve_without_a_token_refuses_to_start_in_one_line():
    env = {k: v for k, v in os.environ.items() if k != wire.TOKEN_ENV}
    done = _dg("engine", "serve", "--port", str(_free_port()), env=env)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "a shared token is required" in line and wire.TOKEN_ENV in line
    done = _dg("engine", "serve", "--token", "short", env=env)
    assert done.returncode == 2 and "at least 8 characters" in done.stderr


def test_bench_team_bad_input_is_one_line_and_exit_2():
    done = _dg("bench", "team", "--modes", "sometimes")
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "dg-lsp bench: error: --modes: expected nobatch and/or batch, got 'sometimes'"]
    done = _dg("serve", "--engine", "gpu-box:8000", "--help")
    assert done.returncode == 0 and "--engine URL" in done.stdout
