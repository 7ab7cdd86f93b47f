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
    return [sys.executable, "-m", "dg_lsp", "serve", "--model", model or tiny_model_path(), "--device", "cpu",
            *extra]


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
