"""Run untrusted HumanEval programs (model output) in a separate, limited process.

Each program runs as `python -I -S program.py` in a fresh temporary directory with a minimal
environment, its own session (so a timeout kills the whole process group), and resource
limits set in the child before exec: CPU seconds, address space, file size, no core dumps.
Output goes to files in the temporary directory (bounded by the file-size limit). Nothing the
program does (loop, crash, exhaust memory, fail to parse) can raise in the harness: every
outcome is an `ExecResult`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

STATUSES = ("passed", "failed", "timeout", "syntax_error", "crashed", "error")


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 10.0
    memory_mb: int = 1024
    file_mb: int = 16
    cpu_s: int | None = None  # default: timeout + 1


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


def _limit(limits: Limits):
    def apply() -> None:  # runs in the child between fork and exec
        import resource

        cpu = limits.cpu_s or int(limits.timeout_s) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = limits.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        size = limits.file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


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


def run_program(source: str, limits: Limits = Limits()) -> ExecResult:
    """Run one Python program in a sandboxed subprocess and report how it ended."""
    t0 = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="dg-lsp-exec-") as tmp:
            program = os.path.join(tmp, "program.py")
            with open(program, "w", encoding="utf-8") as f:
                f.write(source)
            out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            env = {"PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
                   "HOME": tmp, "TMPDIR": tmp, "OMP_NUM_THREADS": "1"}
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen([sys.executable, "-I", "-S", program], cwd=tmp, env=env,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                        preexec_fn=_limit(limits), start_new_session=True)
                try:
                    returncode = proc.wait(timeout=limits.timeout_s)
                except subprocess.TimeoutExpired:
                    _kill_group(proc)
                    return ExecResult("timeout", f"no exit within {limits.timeout_s:g} s", _ms(t0))
                finally:
                    _kill_group(proc)  # children it left behind
            tail = _tail(err_path)
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
