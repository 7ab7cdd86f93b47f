"""EngineHolder: loads the engine off the event loop, warms it up, and remembers why it failed.

States: "loading" -> "ready" | "error". Requests await `get()`; a failed load gives every
request an empty answer and the user one clear message, and the server stays up.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from dg_lsp.config import Settings, engine_key
from dg_lsp.engine import Engine, ModelLoadError

log = logging.getLogger(__name__)


async def _no_progress(message: str, percentage: int) -> None:
    return None


class EngineHolder:
    def __init__(self) -> None:
        self.state = "idle"
        self.error: str | None = None
        self.engine: Engine | None = None
        self.key: tuple | None = None
        self._task: asyncio.Task | None = None

    def load(self, settings: Settings, on_progress: Callable[[str, int], Awaitable[None]] | None = None) -> asyncio.Task:
        """Start loading for `settings` unless the same model is already loaded or loading."""
        key = engine_key(settings)
        if self._task is not None and key == self.key:
            return self._task
        old = self.engine
        self.key, self.state, self.error, self.engine = key, "loading", None, None
        self._task = asyncio.ensure_future(self._load(settings, old, on_progress or _no_progress))
        return self._task

    async def _load(self, settings: Settings, old: Engine | None, progress) -> Engine | None:
        if old is not None:
            await asyncio.to_thread(old.close)
        try:
            await progress("loading model", 10)
            engine = await asyncio.to_thread(Engine.load, settings.model, settings.device, settings.dtype,
                                             settings.trust_remote_code)
            await progress("warming up", 70)
            await asyncio.to_thread(engine.warmup)
        except ModelLoadError as exc:
            self.state, self.error = "error", str(exc)
            log.error("model load failed: %s", exc)
            await progress("failed", 100)
            return None
        except Exception as exc:  # noqa: BLE001 - a broken model must not kill the server
            self.state, self.error = "error", f"{type(exc).__name__}: {exc}"
            log.exception("model load failed")
            await progress("failed", 100)
            return None
        self.engine, self.state = engine, "ready"
        await progress("ready", 100)
        log.info("engine ready: %s on %s", engine.loaded.path, engine.loaded.device)
        return engine

    async def get(self) -> Engine | None:
        if self._task is None:
            return None
        return await asyncio.shield(self._task)

    def status(self) -> dict:
        out = {"state": self.state, "error": self.error, "model": None, "device": None, "busy": False,
               "queue": 0, "lastLatencyMs": None}
        if self.engine is not None:
            st = self.engine.status()
            out.update(model=st["model"], device=st["device"], busy=st["busy"], queue=st["queue"],
                       lastLatencyMs=st["lastLatencyMs"])
        return out

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
