"""The `dg-lsp` command line: complete FILE:LINE:COL, serve --tcp, and bad input."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from dg_lsp.cli import parse_location, parse_tcp

from .conftest import tiny_model_path


def _dg(*args, timeout=180):
    return subprocess.run([sys.executable, "-m", "dg_lsp", *args], capture_output=True, text=True, timeout=timeout)


def test_parse_helpers():
    assert parse_tcp("8123") == ("127.0.0.1", 8123)
    assert parse_tcp("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_location("/a/b:c.py:3:7")[1:] == (3, 7)


def test_complete_prints_json_with_timings(tmp_path):
    src = tmp_path / "demo.py"
    src.write_text("def add(a, b):\n    return \n\nprint(add(1, 2))\n")
    out = _dg("complete", f"{src}:2:12", "--json", "--model", tiny_model_path(), "--device", "cpu",
              "--max-steps", "3")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert set(res) >= {"text", "load_ms", "timings_ms", "steps", "tokens_per_forward"}
    assert 1 <= res["steps"] <= 3
    assert {"encode", "denoise", "tokenize"} <= set(res["timings_ms"])
    plain = _dg("complete", f"{src}:2:12", "--model", tiny_model_path(), "--device", "cpu", "--max-steps", "3")
    assert plain.returncode == 0 and plain.stdout.rstrip("\n") == res["text"].rstrip("\n")


def test_complete_bad_input_gives_clear_errors(tmp_path):
    out = _dg("complete", "no-colons-here", "--model", tiny_model_path())
    assert out.returncode == 2 and "FILE:LINE:COL" in out.stderr
    out = _dg("complete", f"{tmp_path}/missing.py:1:1", "--model", tiny_model_path())
    assert out.returncode == 2 and "cannot read" in out.stderr
    src = tmp_path / "x.py"
    src.write_bytes(b"x = '\xff\xfe'\n\x00y = 1\n")  # undecodable bytes and a NUL
    out = _dg("complete", f"{src}:2:1", "--model", str(tmp_path / "nope"))
    assert out.returncode == 1 and "not found" in out.stderr
    out = _dg("complete", f"{src}:9:99", "--model", tiny_model_path(), "--device", "cpu", "--max-steps", "2")
    assert out.returncode == 0, out.stderr


def test_serve_tcp_binds_loopback_and_answers_initialize():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "dg_lsp", "serve", "--tcp", str(port), "--model",
                             tiny_model_path(), "--device", "cpu"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = socket.create_connection(("127.0.0.1", port), timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "server never listened"
                time.sleep(0.2)
        with conn:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                               "params": {"processId": None, "rootUri": None, "capabilities": {}}}).encode()
            conn.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            conn.settimeout(30)
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, rest = data.split(b"\r\n\r\n", 1)
            length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
            while len(rest) < length:
                rest += conn.recv(65536)
            reply = json.loads(rest[:length])
            assert reply["id"] == 1 and "inlineCompletionProvider" in reply["result"]["capabilities"]
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert proc.stdout.read() == b""  # nothing on stdout in TCP mode either
