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


def test_round_robin_across_documents_and_supersession_keeps_the_queue_place():
    worker = Worker()
    try:
        gate, started, order = threading.Event(), threading.Event(), []
        blocker = worker.submit(_job(lambda: (started.set(), gate.wait(5)), key="busy"))
        assert started.wait(5)

        def record(name):
            return _job(lambda: order.append(name), key=name[0])

        a1 = worker.submit(record("a1"))
        worker.submit(record("b1"))
        worker.submit(record("c1"))
        a2 = worker.submit(record("a2"))  # supersedes a1 and keeps its place ahead of b and c
        worker.submit(record("b2"))
        assert a1.result(timeout=5) == "superseded"
        assert worker.queue_length == 3
        gate.set()
        blocker.result(timeout=5)
        a2.result(timeout=5)
        worker.submit(_job(lambda: None)).result(timeout=5)
        assert order == ["a2", "b2", "c1"]
    finally:
        worker.close()


def test_a_running_job_is_flagged_when_its_document_submits_again():
    worker = Worker()
    try:
        started = threading.Event()
        first = _job(lambda: (started.set(), first.cancel.wait(5))[1], key="doc")
        fut = worker.submit(first)
        assert started.wait(5)
        second = worker.submit(_job(lambda: "second", key="doc"))
        assert fut.result(timeout=5) is True  # the running job saw its cancel flag
        assert second.result(timeout=5) == "second"
    finally:
        worker.close()
