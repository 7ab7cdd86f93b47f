"""A single worker thread that owns all model work, with per-document supersession.

Jobs for the same document key replace each other: a newer job resolves a queued older one at
once (with the job's `superseded` value) and sets the cancel flag of a running one, which the
denoising loop checks between steps. So a document has at most one job queued and one running.

Across documents the order is round-robin: a newer job takes over the queue place of the job it
supersedes, so a document that keeps typing keeps its turn instead of going to the back on every
keystroke, and a document whose job just ran queues behind the others.

Cross-document batching: a job with a `batch_key` and a `batch_fn` runs as a batch. The worker
calls `batch_fn(BatchContext)`; between its steps the batch asks `ctx.more(n)` for queued jobs
with the same key, which join it while it runs, and hands each job its value with
`ctx.deliver(job, value)` as soon as that job is done. Only jobs at the front of the queue join,
so a job of another kind is never overtaken: once it reaches the front, the batch drains (it
admits nobody) and the job runs next. Each job keeps its own future and cancel flag;
superseding a document cancels its row only.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger(__name__)


@dataclass(eq=False)  # jobs are compared by identity (queue and running-list membership)
class Job:
    fn: Callable[[], Any]
    doc_key: str | None
    cancel: threading.Event
    superseded: Callable[[], Any]  # value to resolve a superseded job with
    future: Future = field(default_factory=Future)
    enqueued: float = field(default_factory=time.monotonic)
    batch_key: Any = None  # jobs with equal keys (not None) may run together through batch_fn
    batch_fn: Callable[["BatchContext"], None] | None = None
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


class BatchContext:
    """What a running batch sees of the worker: the jobs that joined it, and the two calls above."""

    def __init__(self, worker: "Worker", first: Job):
        self._worker = worker
        self.first = first
        self.jobs: list[Job] = [first]  # every job that joined, delivered or not
        self.delivered: set[Job] = set()

    def more(self, limit: int) -> list[Job]:
        """Up to `limit` queued jobs that join the batch now (already marked running)."""
        joined = self._worker._join(self.first, limit) if limit > 0 else []
        self.jobs += joined
        return joined

    def deliver(self, job: Job, value: Any = None, error: BaseException | None = None) -> None:
        if job in self.delivered:
            return
        self.delivered.add(job)
        with self._worker._cond:
            if job in self._worker._running:
                self._worker._running.remove(job)
        _resolve(job.future, value, error)


def _batchable(job: Job) -> bool:
    return job.batch_key is not None and job.batch_fn is not None and job.batch_rows > 1


def _compatible(first: Job, job: Job) -> bool:
    return _batchable(job) and job.batch_key == first.batch_key


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

    def _join(self, first: Job, limit: int) -> list[Job]:
        """Queued jobs at the front of the queue that can join `first`'s running batch."""
        joined: list[Job] = []
        with self._cond:
            while self._queue and len(joined) < limit and not self._closed:
                job = self._queue[0]
                if not _compatible(first, job):
                    break
                self._queue.pop(0)
                if not job.future.set_running_or_notify_cancel():
                    job.cancel.set()
                    continue
                if job.cancel.is_set():
                    _resolve(job.future, job.superseded())
                    continue
                self._running.append(job)
                joined.append(job)
        return joined

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job = self._queue.pop(0)
                self._running = [job]
            if _batchable(job):
                self._run_batch(job)
                continue
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
                    self._running = []  # before resolving, so "busy" is false once a caller has its answer
            if outcome is not None:
                _resolve(job.future, outcome[0], outcome[1])

    def _run_batch(self, job: Job) -> None:
        ctx = BatchContext(self, job)
        error: BaseException | None = None
        try:
            if not job.future.set_running_or_notify_cancel():
                job.cancel.set()
                ctx.delivered.add(job)
            elif job.cancel.is_set():
                ctx.deliver(job, job.superseded())
            else:
                job.batch_fn(ctx)
        except BaseException as exc:  # noqa: BLE001 - the worker must survive any job
            log.exception("engine batch failed")
            error = exc
        finally:
            with self._cond:
                self._running = []
        for member in ctx.jobs:  # a batch that ends owes every job an answer
            if member not in ctx.delivered:
                if error is not None:
                    ctx.deliver(member, None, error)
                else:
                    ctx.deliver(member, member.superseded())
