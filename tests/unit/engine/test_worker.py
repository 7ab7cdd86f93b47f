"""The engine worker survives callers that cancel their futures (asyncio.wrap_future does)."""

import asyncio
import threading

from dg_lsp.engine.worker import Job, Worker


def _job(fn, key=None):
    return Job(fn=fn, doc_key=key, cancel=threading.Event(), superseded=lambda: "superseded")


def test_cancelled_future_of_a_running_job_does_not_kill_the_worker():
    worker = Worker()
    try:
        started, release = threading.Event(), threading.Event()

        def slow():
            started.set()
            release.wait(5)
            return "late"

        async def caller():
            fut = asyncio.wrap_future(worker.submit(_job(slow)))
            await asyncio.to_thread(started.wait, 5)
            fut.cancel()  # propagates cancel() to the concurrent future, which is already running
            release.set()

        asyncio.run(caller())
        assert worker.submit(_job(lambda: 42)).result(timeout=5) == 42
    finally:
        worker.close()


def test_cancelled_queued_job_is_skipped_and_flagged():
    worker = Worker()
    try:
        gate = threading.Event()
        blocker = worker.submit(_job(lambda: gate.wait(5)))
        ran = []
        queued = _job(lambda: ran.append(1))
        fut = worker.submit(queued)
        assert fut.cancel()
        gate.set()
        blocker.result(timeout=5)
        assert worker.submit(_job(lambda: "next")).result(timeout=5) == "next"
        assert ran == [] and queued.cancel.is_set()
        assert not worker.busy
    finally:
        worker.close()


def test_job_exception_reaches_the_caller_and_the_worker_goes_on():
    worker = Worker()
    try:
        def boom():
            raise ValueError("bad request")

        fut = worker.submit(_job(boom))
        try:
            fut.result(timeout=5)
            raise AssertionError("expected ValueError")
        except ValueError as exc:
            assert "bad request" in str(exc)
        assert worker.submit(_job(lambda: "ok")).result(timeout=5) == "ok"
    finally:
        worker.close()
