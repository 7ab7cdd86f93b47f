"""The bench executor contains what it runs (issue 14.14): one test per escape that got out before.

Each test is skipped, with the reason the executor gives, on a machine where that layer cannot be had.
"""

from __future__ import annotations

import os
import socket
import time
import uuid

import pytest

from dg_lsp.bench.quality.executor import Limits, containment, describe, run_program

FAST = Limits(timeout_s=5.0, memory_mb=512)


def _needs(escape: str) -> None:
    ok, how = containment()[escape]
    if not ok:
        pytest.skip(f"this machine cannot contain {escape}: {how}")


def _processes_with(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if token.encode() in f.read():
                        found.append(int(entry))
            except OSError:
                pass
    return found


def test_containment_is_reported_plainly():
    summary = containment()
    assert set(summary) == {"network", "process tree", "process count", "writes outside the temp dir"}
    assert all(isinstance(ok, bool) and how for ok, how in summary.values())
    missing = describe({"network": (False, "no namespace")})
    assert missing == ["the bench executor cannot contain network: no namespace"]


def test_a_local_listener_is_not_reachable():
    _needs("network")
    with socket.socket() as listener, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(0.5)
        tcp_port, udp_port = listener.getsockname()[1], udp.getsockname()[1]
        program = (
            "import socket, sys\n"
            "reached = []\n"
            "for host in ('127.0.0.1', 'localhost'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {tcp_port}), timeout=2).close()\n"
            "        reached.append('tcp ' + host)\n"
            "    except OSError:\n"
            "        pass\n"
            "try:\n"
            "    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"    s.sendto(b'escaped', ('127.0.0.1', {udp_port}))\n"
            "except OSError:\n"
            "    pass\n"
            "print('reached', reached, file=sys.stderr)\n"
            "sys.exit(1 if reached else 0)\n"
        )
        result = run_program(program, FAST)
        assert result.status == "passed", result
        with pytest.raises(socket.timeout):
            listener.accept()
        with pytest.raises(socket.timeout):
            udp.recvfrom(100)


def _grandchild_program(marker: str, token: str, parent_waits: str) -> str:
    """Fork; the child calls setsid() and forks a writer (sleeps, then writes `marker`) and a sleeper whose
    command line carries `token`; then the program ends as `parent_waits` says."""
    return (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', {token!r}])\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(1.5)\n"
        f"        open({marker!r}, 'w').write('outlived the kill')\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        "time.sleep(0.5)\n"
        f"{parent_waits}\n"
    )


@pytest.mark.parametrize("ending", ["exits", "times out"])
def test_a_setsid_grandchild_dies_with_the_program(tmp_path, ending):
    _needs("process tree")
    marker = tmp_path / "late.txt"
    token = f"9{uuid.uuid4().int % 10 ** 8}"  # a sleep argument no other process has
    ends = "sys.exit(0)" if ending == "exits" else "while True:\n    time.sleep(0.05)"
    limits = Limits(timeout_s=1.0 if ending == "times out" else 5.0, memory_mb=512, writable=(str(tmp_path),))
    result = run_program(_grandchild_program(str(marker), token, ends), limits)
    assert result.status == ("passed" if ending == "exits" else "timeout"), result
    assert _processes_with(token) == []
    time.sleep(2.5)
    assert not marker.exists(), "a setsid() grandchild outlived the program and wrote a file"
    assert _processes_with(token) == []


def test_the_grandchild_test_can_fail(tmp_path):
    """Control: the same grandchild writes its file when the program waits for it, so the test above sees it."""
    marker = tmp_path / "late.txt"
    result = run_program(_grandchild_program(str(marker), "0.1", "time.sleep(2.5)"),
                         Limits(timeout_s=10.0, memory_mb=512, writable=(str(tmp_path),)))
    assert result.status == "passed" and marker.read_text() == "outlived the kill"


def test_processes_are_limited():
    _needs("process count")
    program = (
        "import os, sys, time\n"
        "n = 0\n"
        "for _ in range(300):\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        time.sleep(30)\n"
        "        os._exit(0)\n"
        "    n += 1\n"
        "print(n, file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    t0 = time.monotonic()
    result = run_program(program, Limits(timeout_s=20.0, memory_mb=512, processes=16))
    assert result.status == "failed", result
    assert 1 <= int(result.detail) < 16
    assert time.monotonic() - t0 < 15, "the sleeping children were waited for instead of killed"


def test_a_fork_bomb_ends_with_its_timeout_and_leaves_nothing():
    _needs("process count")
    _needs("process tree")
    token = f"bomb-{uuid.uuid4().hex}"
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    program = f"import os, sys\nos.execv(sys.executable, [sys.executable, '-I', '-S', '-c', {bomb!r}, {token!r}])\n"
    t0 = time.monotonic()
    result = run_program(program, Limits(timeout_s=2.0, memory_mb=256, processes=16))
    assert result.status in ("timeout", "crashed"), result
    assert time.monotonic() - t0 < 12
    assert _processes_with(token) == []


def test_writes_outside_the_temp_dir_are_refused(tmp_path):
    _needs("writes outside the temp dir")
    existing = tmp_path / "existing.txt"
    existing.write_text("keep me")
    outside_tmp = f"/tmp/dg-lsp-escape-{uuid.uuid4().hex}"
    targets = {"new file": str(tmp_path / "new.txt"), "in /tmp": outside_tmp, "truncate": str(existing),
               "mkdir": str(tmp_path / "newdir"), "symlink": str(tmp_path / "link")}
    program = (
        "import os, sys\n"
        f"targets = {targets!r}\n"
        "open('inside.txt', 'w').write('ok')\n"
        "assert open('inside.txt').read() == 'ok'\n"
        "os.rename('inside.txt', 'moved.txt')\n"
        "escaped = []\n"
        "attempts = {\n"
        "    'new file': lambda p: open(p, 'w').write('x'),\n"
        "    'in /tmp': lambda p: open(p, 'x').write('x'),\n"
        "    'truncate': lambda p: open(p, 'w'),\n"
        "    'mkdir': os.mkdir,\n"
        "    'symlink': lambda p: os.symlink('/etc/passwd', p),\n"
        "}\n"
        "for name, attempt in attempts.items():\n"
        "    try:\n"
        "        attempt(targets[name])\n"
        "        escaped.append(name)\n"
        "    except PermissionError:\n"
        "        pass\n"
        "try:\n"
        f"    os.rename('moved.txt', {str(tmp_path / 'renamed.txt')!r})\n"
        "    escaped.append('rename out')\n"
        "except OSError:\n"
        "    pass\n"
        "print('escaped', escaped, file=sys.stderr)\n"
        "sys.exit(1 if escaped else 0)\n"
    )
    result = run_program(program, FAST)
    assert result.status == "passed", result
    assert existing.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.txt"]
    assert not os.path.exists(outside_tmp)


def test_the_harness_cannot_be_signalled():
    _needs("process tree")
    program = (
        "import os, sys\n"
        "try:\n"
        f"    os.kill({os.getpid()}, 0)\n"
        "except OSError:\n"
        "    sys.exit(0)\n"
        "sys.exit(1)\n"
    )
    assert run_program(program, FAST).status == "passed"
