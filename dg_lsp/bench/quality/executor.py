"""Run untrusted HumanEval programs (model output) in a separate, contained process.

Each program runs as `python -I -S program.py` in a fresh temporary directory with a minimal
environment, under the launcher `sandbox.py`, which contains it where the platform allows:

- its own user, network and PID namespaces: no local listener or other host is reachable, and the
  whole process tree (`setsid()` grandchildren included) dies when the program ends or times out;
- resource limits: CPU seconds, address space, file size, no core dumps, processes (RLIMIT_NPROC);
- Landlock: writes only beneath the temp dir, no TCP bind or connect, signals scoped to the sandbox.

What this machine cannot contain is said once, plainly (a WARNING log and `containment()`;
`python -m dg_lsp.bench.quality.executor` prints it). Output goes to files in the temporary
directory (bounded by the file-size limit). Nothing the program does (loop, crash, exhaust memory,
fork, fail to parse) can raise in the harness: every outcome is an `ExecResult`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
LAUNCHER = Path(__file__).with_name("sandbox.py")
BACKSTOP_S = 10.0  # the launcher enforces the timeout; the harness kills it this much later at the latest

STATUSES = ("passed", "failed", "timeout", "syntax_error", "crashed", "error")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_mb: int = 1024
    file_mb: int = 16
    cpu_s: int | None = None  # default: timeout + 1
    processes: int = 32  # RLIMIT_NPROC: processes of the sandbox at once (launcher and init included)
    writable: tuple[str, ...] = ()  # folders the program may write besides its temp dir (tests)


@dataclass(frozen=True)
class ExecResult:
    status: str  # one of STATUSES
    detail: str = ""  # last line of stderr, or why the run failed
    duration_ms: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def humaneval_program(filled: str, test: str, entry_point: str) -> str:
    """The HumanEval check: `prompt + completion + suffix` (= `filled`), then the tests, then the call."""
    return filled + "\n" + test + f"\ncheck({entry_point})\n"


def _classify(returncode: int, stderr_tail: str) -> str:
    if returncode == 0:
        return "passed"
    last = stderr_tail.strip().splitlines()[-1] if stderr_tail.strip() else ""
    if last.startswith(("SyntaxError", "IndentationError", "TabError")):
        return "syntax_error"
    if returncode < 0 or returncode >= 128:  # killed by a signal (CPU limit, abort, segfault)
        return "crashed"
    return "failed"


def _tail(path: str, limit: int = 4096) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _config(limits: Limits, tmp: str, program: str) -> dict:
    env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
           "HOME": tmp, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
    return {"python": sys.executable, "program": program, "env": env, "timeout_s": limits.timeout_s,
            "cpu_s": limits.cpu_s or int(limits.timeout_s) + 1, "memory_bytes": limits.memory_mb * 1024 * 1024,
            "file_bytes": limits.file_mb * 1024 * 1024, "processes": limits.processes,
            "writable": [tmp, *limits.writable]}


@functools.lru_cache(maxsize=1)
def _pids_cgroup_parent() -> str | None:
    """A writable folder of the pids cgroup controller (v1 `pids` or v2 with `pids` delegated) where a child
    cgroup per program can be made; None where there is none (most non-root users)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        groups = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in mounts:
        fields = line.split()
        if len(fields) < 4:
            continue
        mount, fstype, options = fields[1], fields[2], fields[3].split(",")
        if fstype == "cgroup" and "pids" in options:
            rel = next((g.split(":", 2)[2] for g in groups if "pids" in g.split(":", 2)[1].split(",")), "/")
        elif fstype == "cgroup2":
            rel = next((g.split(":", 2)[2] for g in groups if g.startswith("0::")), "/")
            try:
                if "pids" not in (Path(mount + rel) / "cgroup.subtree_control").read_text().split():
                    continue
            except OSError:
                continue
        else:
            continue
        folder = mount + rel.rstrip("/")
        if os.access(folder, os.W_OK):
            return folder
    return None


def _make_cgroup(processes: int) -> str | None:
    parent = _pids_cgroup_parent()
    if parent is None:
        return None
    path = os.path.join(parent, f"dg-lsp-exec-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(processes))
        return path
    except OSError:
        _remove_cgroup(path)
        return None


def _remove_cgroup(path: str | None) -> None:
    if not path:
        return
    for _ in range(50):  # the last processes may still be exiting
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)


def _launch(source: str, limits: Limits) -> tuple[int | None, dict, str]:
    """Run `source` under the launcher: (exit code, negative for a signal, None for a timeout; the launcher's
    status; the tail of the program's stderr)."""
    with tempfile.TemporaryDirectory(prefix="dg-lsp-exec-") as tmp:
        program = os.path.join(tmp, "program.py")
        with open(program, "w", encoding="utf-8") as f:
            f.write(source)
        with tempfile.TemporaryDirectory(prefix="dg-lsp-exec-cfg-") as private:  # not writable by the program
            config = os.path.join(private, "sandbox.json")
            cgroup = _make_cgroup(limits.processes)
            with open(config, "w", encoding="utf-8") as f:
                json.dump(dict(_config(limits, tmp, program), cgroup=cgroup), f)
            out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            read_end, write_end = os.pipe()
            try:
                with open(out_path, "wb") as out, open(err_path, "wb") as err:
                    proc = subprocess.Popen([sys.executable, "-I", "-S", str(LAUNCHER), config, str(write_end)],
                                            cwd=tmp, env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err, pass_fds=(write_end,), start_new_session=True)
                    os.close(write_end)
                    write_end = -1
                    try:
                        proc.wait(timeout=limits.timeout_s + BACKSTOP_S)
                    except subprocess.TimeoutExpired:
                        pass
                    finally:
                        _kill_group(proc)  # a launcher past its own deadline, and anything left in its group
                status = _read_status(read_end)
            finally:
                _remove_cgroup(cgroup)
                os.close(read_end)
                if write_end >= 0:
                    os.close(write_end)
        tail = _tail(err_path)
    if status.get("timeout") or ("exit" not in status and "signal" not in status and proc.returncode == -9):
        return None, status, tail
    if "signal" in status:
        return -status["signal"], status, tail
    if "exit" in status:
        return status["exit"], status, tail
    return 125, status, tail or f"the sandbox launcher ended with {proc.returncode} and no status"


def _read_status(fd: int) -> dict:
    chunks = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    status: dict = {}
    for line in b"".join(chunks).decode("utf-8", "replace").splitlines():
        try:
            status.update(json.loads(line))
        except ValueError:
            pass
    return status


def run_program(source: str, limits: Limits = Limits()) -> ExecResult:
    """Run one Python program in a contained subprocess and report how it ended."""
    t0 = time.perf_counter()
    try:
        returncode, status, tail = _launch(source, limits)
        if "containment" in status:
            _warn_once(describe(_summary(status)))
        if returncode is None:
            return ExecResult("timeout", f"no exit within {limits.timeout_s:g} s", _ms(t0))
        if returncode == 125 and "containment" not in status:
            return ExecResult("error", tail.strip().splitlines()[-1][:300] if tail.strip() else "sandbox failed",
                              _ms(t0))
        last = tail.strip().splitlines()[-1] if tail.strip() else f"exit code {returncode}"
        return ExecResult(_classify(returncode, tail), last[:300], _ms(t0))
    except Exception as exc:  # noqa: BLE001 - the harness must survive anything here
        return ExecResult("error", f"{type(exc).__name__}: {exc}", _ms(t0))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def _summary(status: dict) -> dict:
    """What each escape meets on this machine: {escape: (contained, how or why not)}."""
    ns = status.get("containment", {}).get("namespaces", {})
    lock = status.get("landlock", {})
    lock_error = lock.get("error", "Landlock did not report")
    if ns.get("network"):
        network = (True, "own network namespace" + (" and Landlock TCP rules" if lock.get("tcp") else ""))
    elif lock.get("tcp"):
        network = (True, "Landlock: TCP bind and connect refused (UDP and unix sockets are not)")
    else:
        network = (False, f"no network namespace ({ns.get('user_error', '?')}) and no Landlock TCP rules "
                          f"({lock_error if not lock.get('abi') else 'ABI ' + str(lock['abi']) + ' < 4'})")
    if ns.get("pid"):
        tree = (True, "own PID namespace: the tree dies with the program")
    else:
        tree = (True, "child subreaper: the launcher kills every descendant it inherits "
                      "(not a descendant killed with the launcher itself)")
    cgroup = status.get("containment", {}).get("cgroup")
    if cgroup:
        nproc = (True, "a pids cgroup per program (pids.max), and RLIMIT_NPROC")
    elif os.getuid() == 0:
        nproc = (False, "RLIMIT_NPROC never binds root, and no writable pids cgroup was found")
    elif ns.get("user"):
        nproc = (True, "RLIMIT_NPROC, counted in the sandbox's own user namespace")
    else:
        nproc = (True, "RLIMIT_NPROC (it counts every process of this uid)")
    writes = (True, f"Landlock ABI {lock['abi']}: writes only beneath the temp dir") if lock.get("writes") else \
        (False, lock_error)
    return {"network": network, "process tree": tree, "process count": nproc, "writes outside the temp dir": writes}


def describe(summary: dict) -> list[str]:
    """One line per escape this machine cannot contain."""
    return [f"the bench executor cannot contain {name}: {how}" for name, (ok, how) in summary.items() if not ok]


@functools.lru_cache(maxsize=None)
def _warn(line: str) -> None:
    log.warning(line)


def _warn_once(lines: list[str]) -> None:
    for line in lines:
        _warn(line)


@functools.lru_cache(maxsize=1)
def containment() -> dict:
    """What the sandbox achieves on this machine (probed once with a trivial program): {escape: (ok, how)}."""
    _, status, tail = _launch("pass\n", Limits(timeout_s=30))
    if "containment" not in status:
        return {"sandbox": (False, f"the launcher failed: {tail.strip()[-300:]}")}
    return _summary(status)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000.0


def run_many(sources: list[str], limits: Limits = Limits(), workers: int = 2, progress=None) -> list[ExecResult]:
    """Run programs concurrently (`workers` processes at a time), results in input order."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = []
        for result in pool.map(lambda s: run_program(s, limits), sources):
            results.append(result)
            if progress is not None:
                progress.update(1)
        return results


if __name__ == "__main__":
    for name, (ok, how) in containment().items():
        print(f"{'contained' if ok else 'NOT CONTAINED':>13}  {name}: {how}")
