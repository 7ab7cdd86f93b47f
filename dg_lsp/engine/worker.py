"""A single worker thread that owns all model work, with per-document supersession.

Jobs for the same document key replace each other: a newer job resolves a queued older one at
once (with the job's `superseded` value) and sets the cancel flag of a running one, which the
denoising loop checks between steps. So a document has at most one job queued and one running.

Across documents the order is round-robin: a newer job takes over the queue place of the job it
supersedes, so a document that keeps typing keeps its turn instead of going to the back on every
keystroke, and a document whose job just ran queues behind the others.

Cross-document batching: a job with a `batch_key` may take queued jobs of other documents with
the same key along (up to the smallest `batch_rows` among them) and run them as one batch
through its `batch_fn`, which returns one value per job. A batch is one turn: jobs pulled in
from later in the queue are served now instead of waiting. Each job keeps its own future and
cancel flag; superseding one member of a running batch cancels that member only.
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
    batch_key: Any = None  # jobs with equal keys (not None) may run together through batch_fn
    batch_fn: Callable[[list["Job"]], list[Any]] | None = None
    batch_rows: int = 1  # the most jobs this one may share a batch with (itself included)
    payload: Any = None  # what batch_fn needs of this job


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
        self._running: list[Job] = []
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
                for running in self._running:
                    if running.doc_key == job.doc_key:
                        running.cancel.set()
            self._queue.insert(place, job)
            self._cond.notify()
        return job.future

    @property
    def queue_length(self) -> int:
        with self._cond:
            return len(self._queue)

    @property
    def busy(self) -> bool:
        return bool(self._running)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for job in self._queue:
                job.cancel.set()
                _resolve(job.future, job.superseded())
            self._queue = []
            for running in self._running:
                running.cancel.set()
            self._cond.notify_all()
        self._thread.join(timeout=10)

    def _take_batch(self, first: Job) -> list[Job]:
        """`first` plus queued jobs it can run with (called with the lock held)."""
        if first.batch_key is None or first.batch_fn is None or first.batch_rows <= 1:
            return [first]
        batch, rows = [first], first.batch_rows
        for job in list(self._queue):
            if len(batch) >= rows:
                break
            if job.batch_key == first.batch_key and job.batch_fn is not None and job.batch_rows > 1 \
                    and job.doc_key != first.doc_key and not job.cancel.is_set():
                if len(batch) + 1 > job.batch_rows:
                    continue
                rows = min(rows, job.batch_rows)
                batch.append(job)
                self._queue.remove(job)
        return batch

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                batch = self._take_batch(self._queue.pop(0))
                self._running = list(batch)
            outcomes: list[tuple[Any, BaseException | None] | None] = [None] * len(batch)
            try:
                # From here on a caller's cancel() cannot flip a future; the job's cancel flag stops it.
                live = []
                for i, job in enumerate(batch):
                    if not job.future.set_running_or_notify_cancel():
                        job.cancel.set()
                    elif job.cancel.is_set():
                        outcomes[i] = (job.superseded(), None)
                    else:
                        live.append(i)
                if len(live) == 1:
                    outcomes[live[0]] = (batch[live[0]].fn(), None)
                elif live:
                    values = batch[live[0]].batch_fn([batch[i] for i in live])
                    for i, value in zip(live, values, strict=True):
                        outcomes[i] = (value, None)
            except BaseException as exc:  # noqa: BLE001 - the worker must survive any job
                log.exception("engine job failed")
                outcomes = [(None, exc) if o is None and batch[i].future.running() else o
                            for i, o in enumerate(outcomes)]
            finally:
                with self._cond:
                    self._running = []  # before resolving, so "busy" is false once a caller has its answer
            for job, outcome in zip(batch, outcomes):
                if outcome is not None:
                    _resolve(job.future, outcome[0], outcome[1])
