"""End-to-end fixtures: the real server as a subprocess over stdio, with a tiny random model
built once into the temp dir and loaded through `--model DIR`."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from lsprotocol import types

TINY_DIR = Path(tempfile.gettempdir()) / f"dg-lsp-test-tiny-{os.getuid()}-v1"


def tiny_model_path() -> str:
    if not (TINY_DIR / "dg_lsp.json").is_file():
        from dg_lsp.engine.modelgen import build_tiny_model

        build_tiny_model(TINY_DIR)
    return str(TINY_DIR)


def server_command(*extra: str, model: str | None = None) -> list[str]:
    """`dg-lsp serve` on the tiny random model. Its text is salad whose names nothing binds, and the name check
    (Python, JavaScript, TypeScript) would show none of it: off here, where a test needs some text to see the
    server's plumbing (the check's own tests run it on: test_suggestion_edits.py,
    tests/unit/completion/test_unbound.py)."""
    return [sys.executable, "-m", "dg_lsp", "serve", "--model", model or tiny_model_path(), "--device", "cpu",
            "--no-name-check", *extra]


CAPABILITIES = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(apply_edit=True, configuration=False),
    general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
)


async def wait_ready(client, timeout: float = 120.0) -> dict:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
        if status["state"] in ("ready", "error") or asyncio.get_running_loop().time() > deadline:
            return status
        await asyncio.sleep(0.2)


E2E_TIMEOUT_S = 600  # a module fixture (server start, model load) runs inside its first test's timeout


def pytest_collection_modifyitems(config, items):
    """Every end-to-end test has a timeout: a hung server fails the test instead of the whole run."""
    import pytest

    for item in items:
        if "/e2e/" in str(item.fspath).replace("\\", "/") and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_S))
