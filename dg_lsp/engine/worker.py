"""A single worker thread that owns all model work, with per-document supersession.

Jobs for the same document key replace each other: a newer job resolves a queued older one at
once (with the job's `superseded` value) and sets the cancel flag of a running one, which the
denoising loop checks between steps. So a document has at most one job queued and one running.

Across documents the order is round-robin: a newer job takes over the queue place of the job it
supersedes, so a document that keeps typing keeps its turn instead of going to the back on every
keystroke, and a document whose job just ran queues behind the others.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger(__name__)


@dataclass
class Job:
    fn: Callable[[], Any]
    doc_key: str | None
    cancel: threading.Event
    superseded: Callable[[], Any]  # value to resolve a superseded job with
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)


def _resolve(future: Future, value: Any = None, error: BaseException | None = None) -> None:
    """Set a result unless the caller already cancelled the future (asyncio.wrap_future does that)."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
    except InvalidStateError:
        pass


class Worker:
    def __init__(self, name: str = "dg-lsp-engine"):
        self._cond = threading.Condition()
        self._queue: list[Job] = []
        self._running: Job | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Future:
        with self._cond:
            if self._closed:
                job.future.set_exception(RuntimeError("engine is closed"))
                return job.future
            place = len(self._queue)
            if job.doc_key is not None:
                keep = []
                for old in self._queue:
                    if old.doc_key == job.doc_key:
                        place = min(place, len(keep))
                        old.cancel.set()
                        _resolve(old.future, old.superseded())
                    else:
                        keep.append(old)
                self._queue = keep
                if self._running is not None and self._running.doc_key == job.doc_key:
                    self._running.cancel.set()
            self._queue.insert(place, job)
            self._cond.notify()
        return job.future

    @property
    def queue_length(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def busy(self) -> bool:
        return self._running is not None

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for job in self._queue:
                job.cancel.set()
                _resolve(job.future, job.superseded())
            self._queue = []
            if self._running is not None:
                self._running.cancel.set()
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job = self._queue.pop(0)
                self._running = job
            outcome: tuple[Any, BaseException | None] | None = None
            try:
                # From here on a caller's cancel() cannot flip the future; the job's cancel flag stops it.
                if job.future.set_running_or_notify_cancel():
                    outcome = (job.superseded() if job.cancel.is_set() else job.fn(), None)
                else:
                    job.cancel.set()
            except BaseException as exc:  # noqa: BLE001 - the worker must survive any job
                log.exception("engine job failed")
                outcome = (None, exc)
            finally:
                with self._cond:
                    self._running = None  # before resolving, so "busy" is false once a caller has its answer
            if outcome is not None:
                _resolve(job.future, outcome[0], outcome[1])
