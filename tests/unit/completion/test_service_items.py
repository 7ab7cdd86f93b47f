"""An inline answer's other items (CompletionService._others), through the service with an engine that answers at
once: the other lines the engine weighed, finished and checked as the answer is, kept with it in the cache."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

import pytest

from dg_lsp.completion import CompletionRequest, CompletionService
from dg_lsp.config import Settings
from dg_lsp.engine import InfillResult

pytestmark = pytest.mark.timeout(60)

SOURCE = "def it(n, m):\n    it1 = \n    return it1\n"


class _Engine:
    """Answers every request with `result`, and counts them."""

    def __init__(self, result: InfillResult):
        self.result, self.calls = result, 0

    def submit(self, request) -> Future:
        self.calls += 1
        future: Future = Future()
        future.set_result(self.result)
        return future


def _ask(service, automatic=False, typed=""):
    text = SOURCE.replace("it1 = \n", "it1 = " + typed + "\n")
    req = CompletionRequest(text, "python", 1, 10 + len(typed), automatic=automatic, doc_key="it.py")
    return asyncio.run(service.complete(req))


def _service(**settings) -> tuple[CompletionService, _Engine]:
    lines = [("range(n)", -1.0), ("range(len(n))", -4.0), ("nope(n)", -2.0), ("range(m)", -3.0),
             ("range(n)", -5.0)]
    engine = _Engine(InfillResult(text="range(n)", alternatives=lines))
    return CompletionService(engine, Settings(**settings)), engine


def test_other_items_by_score_checked_and_distinct():
    service, _ = _service()
    got = _ask(service)
    assert (got.text, got.others) == ("range(n)", ("range(m)", "range(len(n))"))  # nope(n): a name nothing binds
    service, _ = _service(max_suggestions=8)
    assert _ask(service).others == ("range(m)", "range(len(n))")
    service, _ = _service(max_suggestions=2)
    assert _ask(service).others == ("range(m)",)
    service, _ = _service(max_suggestions=1)
    assert _ask(service).others == ()


def test_an_automatic_request_gets_them_too():
    """Neovim's built-in renderer cycles only through what an automatic request answered."""
    service, _ = _service()
    got = _ask(service, automatic=True)
    assert (got.text, got.others) == ("range(n)", ("range(m)", "range(len(n))"))


def test_an_empty_answer_is_not_replaced_by_an_other_line():
    service = CompletionService(_Engine(InfillResult(text="nope(n)", alternatives=[("nope(n)", -1.0),
                                                                                   ("range(m)", -2.0)])), Settings())
    got = _ask(service)
    assert (got.text, got.others) == ("", ())


def test_the_cache_keeps_the_other_items_and_typing_keeps_those_that_match():
    service, engine = _service()
    _ask(service)
    again = _ask(service)
    assert (again.source, again.text, again.others) == ("cache", "range(n)", ("range(m)", "range(len(n))"))
    typed = _ask(service, typed="range(")
    assert (typed.source, typed.text, typed.others) == ("typed", "n)", ("m)", "len(n))"))
    assert engine.calls == 1
