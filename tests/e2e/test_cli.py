"""The `dg-lsp` command line: complete FILE:LINE:COL, serve --tcp, and bad input."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from dg_lsp.cli import CliError, checked_position, parse_location, parse_tcp

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
    src.write_text("x = 1\n")
    out = _dg("complete", f"{src}:1:1", "--model", str(tmp_path / "nope"))
    assert out.returncode == 1 and "not found" in out.stderr and "Traceback" not in out.stderr
    out = _dg("complete", f"{src}:1:1", "--model", str(tmp_path / "nope"), "--json")
    assert out.returncode == 1 and "not found" in json.loads(out.stdout)["error"]


DEMO = "def add(a, b):\n    return \n"  # lines 1-3 (the third is empty); line 2 has columns 1-12


def _one_line_error(out, code: int = 2) -> str:
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dg-lsp: "), out.stderr
    return lines[0]


def _json_error(out, code: int = 2) -> str:
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert out.stderr == "" and len(out.stdout.splitlines()) == 1, (out.stdout, out.stderr)
    reply = json.loads(out.stdout)
    assert set(reply) == {"error"} and reply["error"]
    return reply["error"]


@pytest.mark.parametrize("position,says", [
    ("0:0", "line 0 is outside"), ("2:-1", "column -1 is outside line 2"), ("99:1", "line 99 is outside"),
    ("2:999", "column 999 is outside line 2"), ("4:1", "line 4 is outside"), ("2:0", "column 0 is outside"),
    ("2:13", "columns 1-12"),
])
def test_complete_rejects_a_position_outside_the_file(tmp_path, position, says):
    src = tmp_path / "demo.py"
    src.write_text(DEMO)
    assert says in _one_line_error(_dg("complete", f"{src}:{position}", "--model", tiny_model_path()))
    assert says in _json_error(_dg("complete", f"{src}:{position}", "--json", "--model", tiny_model_path()))


@pytest.mark.parametrize("content,says", [
    (b"x = '\xff\xfe'\ny = 1\n", "is not UTF-8 text (byte 0xff on line 1)"),
    (b"ok = 1\n\x00\x01\x02binary\n", "is a binary file"),
    (bytes(range(256)), "is a binary file"),
])
def test_complete_rejects_non_utf8_and_binary_files(tmp_path, content, says):
    src = tmp_path / "x.py"
    src.write_bytes(content)
    assert says in _one_line_error(_dg("complete", f"{src}:1:1", "--model", tiny_model_path()))
    assert says in _json_error(_dg("complete", f"{src}:1:1", "--json", "--model", tiny_model_path()))
    assert "is a directory" in _one_line_error(_dg("complete", f"{tmp_path}:1:1"))


def test_complete_errors_come_before_any_heavy_import(tmp_path):
    """A bad position fails without importing torch, transformers or the engine (milliseconds, not seconds)."""
    src = tmp_path / "demo.py"
    src.write_text(DEMO)
    code = ("import sys; from dg_lsp.cli import main; rc = main(['complete', sys.argv[1], '--json']); "
            "heavy = sorted(m for m in ('torch', 'transformers', 'dg_lsp.engine', 'tree_sitter') if m in sys.modules); "
            "print(rc, heavy)")
    out = subprocess.run([sys.executable, "-c", code, f"{src}:9:1"], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[-1] == "2 []", out.stdout + out.stderr


def test_complete_json_usage_and_setting_errors_are_json(tmp_path):
    src = tmp_path / "demo.py"
    src.write_text(DEMO)
    assert "invalid choice: 'gpu'" in _json_error(_dg("complete", f"{src}:2:12", "--json", "--device", "gpu"))
    assert "maxSteps" in _json_error(_dg("complete", f"{src}:2:12", "--json", "--max-steps", "-3"))
    assert "maxSteps" in _one_line_error(_dg("complete", f"{src}:2:12", "--max-steps", "-3"))
    out = subprocess.run([sys.executable, "-m", "dg_lsp", "complete", f"{src}:2:12"], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, DG_LSP_THREADS="many"))
    assert "DG_LSP_THREADS" in _one_line_error(out)


def test_complete_accepts_every_position_inside_the_file(tmp_path):
    """The edges: one past the line's end, the empty last line, a CRLF file, a line after a lone CR."""
    src = tmp_path / "demo.py"
    src.write_text(DEMO)
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(b"def add(a, b):\r\n    return \r\n")
    cr = tmp_path / "cr.py"
    cr.write_bytes(b"x = 1\ry = \n")
    model = tiny_model_path()
    runs = {loc: subprocess.Popen([sys.executable, "-m", "dg_lsp", "complete", loc, "--json", "--model", model,
                                   "--device", "cpu", "--max-steps", "1"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for loc in (f"{src}:2:12", f"{src}:3:1", f"{src}:1:1", f"{crlf}:2:12", f"{cr}:2:5")}  # side by side
    for loc, run in runs.items():
        stdout, stderr = run.communicate(timeout=180)
        assert run.returncode == 0, (loc, stderr)
        assert "text" in json.loads(stdout)
    assert "columns 1-12" in _one_line_error(_dg("complete", f"{crlf}:2:13", "--model", tiny_model_path()))


def test_position_helpers():
    assert checked_position(DEMO, 2, 12) == (1, 11)
    assert checked_position(DEMO, 3, 1) == (2, 0)
    text = "a\r\nbc\rd\n"
    assert checked_position(text, 3, 2) == (2, 1)  # after 'd': LSP lines, as CompletionRequest takes them
    with pytest.raises(CliError, match="lines 1-4"):
        checked_position(text, 5, 1)
    with pytest.raises(CliError, match="columns 1-3"):
        checked_position(text, 2, 4)


def test_complete_is_quiet_unless_verbose(tmp_path):
    """Stderr is not a terminal here: no progress bar, no INFO line; --verbose brings both back."""
    src = tmp_path / "demo.py"
    src.write_text(DEMO)
    args = ("complete", f"{src}:2:12", "--json", "--model", tiny_model_path(), "--device", "cpu", "--max-steps", "1")
    quiet = _dg(*args)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert {"imports", "load", "request"} <= set(json.loads(quiet.stdout)["wall_ms"])
    # in-process callers of the bench (other tests) may have left the quiet switch in this process's env
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    loud = subprocess.run([sys.executable, "-m", "dg_lsp", *args, "--verbose"], capture_output=True, text=True,
                          timeout=180, env=env)
    assert loud.returncode == 0 and " INFO dg_lsp." in loud.stderr and "Loading weights" in loud.stderr
    explicit = _dg(*args, "--log-level", "info")
    assert " INFO dg_lsp." in explicit.stderr


def test_serve_bad_input_is_one_error_not_a_traceback(tmp_path):
    for args, says in ((["--tcp", "abc"], "expected [HOST:]PORT"), (["--tcp", "70000"], "port must be 1-65535"),
                       (["--log-file", str(tmp_path / "no" / "such" / "x.log")], "cannot open the log file"),
                       (["--max-steps", "0"], "maxSteps")):
        out = _dg("serve", "--model", tiny_model_path(), *args, timeout=60)
        assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr, out.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = _dg("serve", "--tcp", str(taken.getsockname()[1]), "--model", tiny_model_path(), timeout=120)
    assert out.returncode == 1 and "cannot listen on 127.0.0.1:" in out.stderr and "Traceback" not in out.stderr, \
        out.stderr
    out = _dg("model", "info", "--log-level", "bogus", timeout=60)
    assert out.returncode == 2 and "--log-level must be" in out.stderr and "Traceback" not in out.stderr
    for args in ([], ["frob"], ["complete"]):
        out = _dg(*args, timeout=60)
        assert out.returncode == 2 and "Traceback" not in out.stderr and "error:" in out.stderr


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


def test_the_program_bounds_onednn_cache_unless_the_environment_sets_it():
    """dg-lsp sets oneDNN's primitive cache capacity (which bounds the memory its per-shape kernels keep) where the
    environment does not: a child process run as the program reads 256 unless its environment said otherwise; an
    in-process `main(argv)` (tests, embedding) leaves the environment alone."""
    from dg_lsp.cli import bound_onednn_cache

    env = {}
    bound_onednn_cache(env)
    assert env == {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "256"}
    env = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "64"}
    bound_onednn_cache(env)
    assert env == {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "64"}
    code = ("import os, sys\nsys.argv = ['dg-lsp', 'model', '--help']\nfrom dg_lsp.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('capacity', os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY'))")
    for given, expected in ((None, "256"), ("64", "64")):
        child = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
        if given is not None:
            child["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = given
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=child)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().splitlines()[-1] == f"capacity {expected}", out.stdout
