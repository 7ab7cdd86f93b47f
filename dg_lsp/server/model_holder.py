"""EngineHolder: loads the engine off the event loop, warms it up, and remembers why it failed.

States: "loading" -> "ready" | "error". Requests await `get()`; a failed load gives every
request an empty answer and the user one clear message, and the server stays up.

Reloads (issue 14.11): each load has a generation; only the latest may install its engine.
A load that finishes after a newer one started closes the engine it made, and a new load closes
the engine it replaces, so no superseded engine keeps its worker thread and its memory.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable

from dg_lsp.config import Settings, engine_key
from dg_lsp.engine import Engine, ModelLoadError
from dg_lsp.engine.loader import load_model

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
        self._generation = 0
        self._closed = False

    def load(self, settings: Settings, on_progress: Callable[[str, int], Awaitable[None]] | None = None) -> asyncio.Task:
        """Start loading for `settings` unless the same model is already loaded or loading."""
        key = engine_key(settings)
        if self._task is not None and key == self.key:
            return self._task
        old = self.engine
        self._generation += 1
        self.key, self.state, self.error, self.engine = key, "loading", None, None
        self._task = asyncio.ensure_future(self._load(settings, old, on_progress or _no_progress, self._generation))
        return self._task

    def _current(self, generation: int) -> bool:
        return generation == self._generation and not self._closed

    @staticmethod
    def _make_engine(settings: Settings) -> Engine:
        if settings.engine:  # a team's shared engine (dg_lsp/remote): nothing loads here
            from dg_lsp.remote.client import RemoteEngine

            return RemoteEngine(settings.engine)
        return Engine(load_model(settings.model, settings.device, settings.dtype, settings.trust_remote_code,
                                 allow_pickle_weights=settings.allow_pickle_weights))

    async def _load(self, settings: Settings, old: Engine | None, progress, generation: int) -> Engine | None:
        if old is not None:
            await asyncio.to_thread(old.close)
        engine = None
        try:
            await progress("loading model", 10)
            engine = await asyncio.to_thread(self._make_engine, settings)
            if self._current(generation):
                await progress("warming up", 70)
                await asyncio.to_thread(engine.warmup)
        except ModelLoadError as exc:
            if not self._current(generation):
                await progress("superseded", 100)
                return None
            self.state, self.error = "error", str(exc)
            log.error("model load failed: %s", exc)
            await progress("failed", 100)
            return None
        except Exception as exc:  # noqa: BLE001 - a broken model must not kill the server
            if engine is not None:
                await asyncio.to_thread(engine.close)
            if not self._current(generation):
                await progress("superseded", 100)
                return None
            self.state, self.error = "error", f"{type(exc).__name__}: {exc}"
            log.exception("model load failed")
            await progress("failed", 100)
            return None
        if not self._current(generation):  # newer settings started another load, or the server is closing
            log.info("closing the engine of superseded settings: %s", engine.loaded.path)
            await asyncio.to_thread(engine.close)
            await progress("superseded", 100)
            return None
        self.engine, self.state = engine, "ready"
        await progress("ready", 100)
        log.info("engine ready: %s on %s", engine.loaded.path, engine.loaded.device)
        return engine

    async def get(self, timeout: float | None = None) -> Engine | None:
        """The engine of the latest settings, waiting for its load (at most `timeout` seconds; 0: not at all)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self._task is not None:
            task = self._task
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0 and not task.done():
                return None
            try:
                result = await asyncio.wait_for(asyncio.shield(task), left)
            except asyncio.TimeoutError:
                return None
            if task is self._task:  # not superseded while we waited
                return result
        return None

    def status(self) -> dict:
        out = {"state": self.state, "error": self.error, "model": None, "device": None, "busy": False,
               "queue": 0, "lastLatencyMs": None}
        if self.engine is not None:
            st = self.engine.status()
            out.update(model=st["model"], device=st["device"], busy=st["busy"], queue=st["queue"],
                       lastLatencyMs=st["lastLatencyMs"], dtype=st.get("dtype"), dtypeChoice=st.get("dtypeChoice"))
            if "remote" in st:  # --engine URL: whether the shared engine answers, and why not
                out["remote"] = st["remote"]
                out["error"] = out["error"] or st["remote"]["error"]
        return out

    def close(self) -> None:
        """Stop the engine's worker (cancelling queued and running jobs, joining the thread) and release it.
        A load still under way closes its engine when it finishes."""
        self._closed = True
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()
