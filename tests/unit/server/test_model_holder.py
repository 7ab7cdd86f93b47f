"""EngineHolder reloads (issue 14.11): the latest settings win and every superseded engine is closed."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dg_lsp.config import Settings
from dg_lsp.server.model_holder import EngineHolder

pytestmark = pytest.mark.timeout(60)


class FakeEngine:
    def __init__(self, settings: Settings, delay: float):
        time.sleep(delay)
        self.model = settings.model
        self.closed = threading.Event()
        self.loaded = type("Loaded", (), {"path": settings.model, "device": "cpu"})()

    def warmup(self):
        return None

    def close(self):
        self.closed.set()


def _holder(delays: dict[str, float], made: list) -> EngineHolder:
    holder = EngineHolder()

    def make(settings):
        engine = FakeEngine(settings, delays[settings.model])
        made.append(engine)
        return engine

    holder._make_engine = make  # noqa: SLF001 - the one seam: what a load builds
    return holder


async def test_a_slower_older_load_never_wins_and_is_closed():
    made: list[FakeEngine] = []
    holder = _holder({"slow": 0.6, "fast": 0.05}, made)
    holder.load(Settings(model="slow"))
    await asyncio.sleep(0.01)
    holder.load(Settings(model="fast"))
    engine = await holder.get()
    assert engine is not None and engine.model == "fast"
    await asyncio.sleep(1.0)  # the slow load finishes after the fast one
    assert holder.engine is engine and holder.state == "ready"
    (slow,) = [e for e in made if e.model == "slow"]
    assert slow.closed.is_set(), "the superseded engine was left running"
    assert not engine.closed.is_set()


async def test_a_reload_closes_the_engine_it_replaces():
    made: list[FakeEngine] = []
    holder = _holder({"a": 0.0, "b": 0.0}, made)
    holder.load(Settings(model="a"))
    first = await holder.get()
    holder.load(Settings(model="b"))
    second = await holder.get()
    assert second.model == "b" and first.closed.is_set() and not second.closed.is_set()


async def test_get_waits_at_most_its_bound():
    holder = _holder({"slow": 0.5}, [])
    holder.load(Settings(model="slow"))
    t0 = time.monotonic()
    assert await holder.get(timeout=0.05) is None
    assert time.monotonic() - t0 < 0.4
    assert await holder.get(timeout=0) is None
    assert (await holder.get(timeout=5)).model == "slow"


async def test_close_during_a_load_closes_the_engine_it_makes():
    made: list[FakeEngine] = []
    holder = _holder({"m": 0.2}, made)
    task = holder.load(Settings(model="m"))
    await asyncio.sleep(0.01)
    holder.close()
    assert await task is None
    assert made[0].closed.is_set() and holder.engine is None
