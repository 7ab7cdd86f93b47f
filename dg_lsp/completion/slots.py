"""DocumentSlots: per document, the one request waiting for an answer and the one computation.

A newer request for a document *supersedes* the waiting one: that one is answered (empty) at
once, whatever its computation is doing. The computation itself is a separate thing: the newer
request may take it over (it was for the same context, or for one the user is typing through)
or replace it, and the engine stops a replaced job within one denoising step.

A client's `$/cancelRequest` arrives just before the request that replaces the cancelled one,
so a computation nobody waits for is stopped only after a short grace period: long enough for
that next request to take it over, short enough not to hold the engine.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from dg_lsp.engine import InfillRequest

from .cache import SuggestionContext

GRACE_S = 0.1


@dataclass(eq=False)
class Computation:
    context: SuggestionContext
    request: InfillRequest
    task: asyncio.Task  # -> (finished text, InfillResult) | None when stopped
    users: int = field(default=0)

    @property
    def done(self) -> bool:
        return self.task.done()

    def stop(self) -> None:
        self.request.cancel.set()  # the denoising loop checks it between steps


def _retrieve(task: asyncio.Task) -> None:
    if not task.cancelled():
        task.exception()  # the waiting request reports it; nobody waiting must not warn


class DocumentSlots:
    SUPERSEDED = object()

    def __init__(self) -> None:
        self._waiting: dict[Any, asyncio.Future] = {}
        self._computations: dict[Any, Computation] = {}

    def claim(self, key) -> asyncio.Future:
        """A ticket for a new request; the document's waiting request is answered as superseded."""
        old = self._waiting.get(key)
        if old is not None and not old.done():
            old.set_result(self.SUPERSEDED)
        ticket = asyncio.get_running_loop().create_future()
        self._waiting[key] = ticket
        return ticket

    def release(self, key, ticket: asyncio.Future) -> None:
        if self._waiting.get(key) is ticket:
            del self._waiting[key]

    def computation(self, key) -> Computation | None:
        comp = self._computations.get(key)
        return comp if comp is not None and not comp.done else None

    def stop_computation(self, key) -> None:
        comp = self._computations.pop(key, None)
        if comp is not None and not comp.done:
            comp.stop()

    def start(self, key, context: SuggestionContext, request: InfillRequest, coro) -> Computation:
        old = self._computations.get(key)
        if old is not None and not old.done:
            old.stop()
        task = asyncio.ensure_future(coro)
        comp = Computation(context, request, task)
        self._computations[key] = comp
        task.add_done_callback(_retrieve)
        task.add_done_callback(lambda _t: self._forget(key, comp))
        return comp

    def _forget(self, key, comp: Computation) -> None:
        if self._computations.get(key) is comp:
            del self._computations[key]

    async def wait(self, key, ticket: asyncio.Future, comp: Computation):
        """The computation's outcome, or SUPERSEDED once a newer request for the document arrived."""
        comp.users += 1
        try:
            await asyncio.wait({comp.task, ticket}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            comp.users -= 1
            if comp.users == 0 and not comp.done:
                asyncio.get_running_loop().call_later(GRACE_S, self._stop_if_unused, comp)
            raise
        comp.users -= 1
        if ticket.done():
            return self.SUPERSEDED
        return comp.task.result()

    @staticmethod
    def _stop_if_unused(comp: Computation) -> None:
        if comp.users == 0 and not comp.done:
            comp.stop()

    def __len__(self) -> int:
        return len(self._waiting) + len(self._computations)
