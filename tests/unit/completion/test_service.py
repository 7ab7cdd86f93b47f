"""CompletionService on the real tiny engine: cache hits, typing-through, supersession, taking over
an in-flight computation, and prefix-cache reuse that changes nothing in the answer."""

import asyncio
import dataclasses

import pytest

from dg_lsp.completion import CompletionRequest, CompletionService
from dg_lsp.config import Settings

TEXT = "def add(a, b):\n    return \n\nprint(add(1, 2))\n"
LINE, COL = 1, 11
GREEDY = Settings(max_steps=4, temperature=0.0, deadline_ms=None)
SLOW = Settings(max_steps=256, temperature=0.8, deadline_ms=None)  # the random model never stops early


def _req(typed="", doc="a.py", language="python"):
    text = TEXT.replace("return \n", "return " + typed + "\n", 1)
    return CompletionRequest(text, language, LINE, COL + len(typed), doc_key=doc)


@pytest.fixture
def service(tiny_engine):
    svc = CompletionService(tiny_engine, GREEDY)
    tiny_engine.prefix_cache.clear()
    return svc


def test_same_context_is_served_from_the_cache(service):
    first = asyncio.run(service.complete(_req()))
    again = asyncio.run(service.complete(_req()))
    assert first.source == "computed" and again.source == "cache"
    assert again.text == first.text and again.result is None


def test_a_fill_cut_by_its_deadline_is_not_cached(service):
    """A fill its deadline cut (here a budget spent at once) is answered, but not remembered: the same context asked
    again computes again, since with more time it may finish."""
    service.settings = dataclasses.replace(SLOW, deadline_ms=0.0)
    first = asyncio.run(service.complete(_req()))
    again = asyncio.run(service.complete(_req()))
    assert first.source == again.source == "computed"
    assert first.result.deadline_hit and again.result.deadline_hit


def test_typing_the_start_of_a_suggestion_serves_the_rest(service):
    # plain text: the tiny model's salad reads Python names nothing binds, and Python would show none of it
    shown = asyncio.run(service.complete(_req(language="plaintext")))
    assert len(shown.text) >= 2, shown.text
    typed = asyncio.run(service.complete(_req(shown.text[0], language="plaintext")))
    assert typed.source == "typed" and typed.text == shown.text[1:]
    assert typed.start == (LINE, COL + 1)
    other = asyncio.run(service.complete(_req("\x01", language="plaintext")))  # not what was suggested: computed
    assert other.source == "computed"
    assert service.stats["cacheTyped"] == 1


def test_prefix_cache_reuse_gives_the_same_answers(tiny_engine, service):
    service.settings = dataclasses.replace(GREEDY, completion_cache=False)
    plain = CompletionService(tiny_engine, dataclasses.replace(GREEDY, completion_cache=False, prefix_cache=False))
    for typed in ("", "a", "a ", "a +", "a + b"):
        reused = asyncio.run(service.complete(_req(typed)))
        fresh = asyncio.run(plain.complete(_req(typed)))
        assert reused.result.text == fresh.result.text and reused.text == fresh.text
        assert reused.result.score == pytest.approx(fresh.result.score, abs=1e-5)
        assert fresh.result.reused_tokens == 0
        if typed:
            assert reused.result.reused_tokens > 0


def test_newer_request_supersedes_and_same_context_takes_over_the_computation(tiny_engine):
    service = CompletionService(tiny_engine, SLOW)

    async def scenario():
        older = asyncio.ensure_future(service.complete(_req("x")))
        await asyncio.sleep(0.3)  # running by now
        same = asyncio.ensure_future(service.complete(_req("x")))
        assert await asyncio.wait_for(older, 5) is None  # answered empty at once
        newer = asyncio.ensure_future(service.complete(_req("y")))  # another context: replaces the job
        assert await asyncio.wait_for(same, 5) is None
        return await asyncio.wait_for(newer, 60)

    done = asyncio.run(scenario())
    assert done.source == "computed" and done.result.steps == 256
    assert service.stats["superseded"] == 2 and service.stats["inflightAdopted"] == 1
    assert tiny_engine.stats["cancelled"] >= 1  # the replaced job stopped early


def test_debounce_starts_no_computation_for_a_request_replaced_meanwhile(tiny_engine):
    service = CompletionService(tiny_engine, dataclasses.replace(GREEDY, debounce_ms=300.0))

    def auto(typed):
        return dataclasses.replace(_req(typed), automatic=True)

    async def scenario():
        first = asyncio.ensure_future(service.complete(auto("a")))
        await asyncio.sleep(0.05)
        second = asyncio.ensure_future(service.complete(auto("ab")))
        return await asyncio.wait_for(first, 5), await asyncio.wait_for(second, 60)

    first, second = asyncio.run(scenario())
    assert first is None and second.source == "computed"
    assert service.stats["computations"] == 1 and service.stats["superseded"] == 1


def test_an_automatic_mid_line_trigger_gets_the_small_canvas(tiny_engine, monkeypatch):
    """Issue 15.2 through the service: an automatic trigger after code on the line fills a MID_LINE_SLOTS hole,
    an invoked one the model's whole canvas."""
    from dg_lsp.completion import buckets

    monkeypatch.setattr(buckets, "MID_LINE_SLOTS", 3)
    svc = CompletionService(tiny_engine, dataclasses.replace(GREEDY, completion_cache=False, length_strategy="pad"))
    auto = asyncio.run(svc.complete(dataclasses.replace(_req(), automatic=True)))
    invoked = asyncio.run(svc.complete(_req()))
    assert auto.result.hole_length == 3
    assert invoked.result.hole_length > 3


def test_only_a_cursor_with_text_after_it_on_its_line_asks_for_one_line(tiny_engine, monkeypatch):
    """`line_only` (a left-to-right fill stops at its first line break) goes with exactly the requests whose
    suggestion post-processing cuts to one line: text after the cursor on its line, automatic or invoked (a
    selection fill is never cut: tests/unit/completion for finish_suggestion)."""
    sent = []
    submit = tiny_engine.submit
    monkeypatch.setattr(tiny_engine, "submit", lambda request: sent.append(request) or submit(request))
    svc = CompletionService(tiny_engine, dataclasses.replace(GREEDY, completion_cache=False))
    mid = CompletionRequest("total = add(1, 2)\n", "python", 0, 12, doc_key="m.py")  # after "add(": "1, 2)" follows
    for req in (dataclasses.replace(mid, automatic=True), mid, dataclasses.replace(_req(), automatic=True)):
        asyncio.run(svc.complete(req))
    assert [r.line_only for r in sent] == [True, True, False]


def test_a_blank_line_before_code_that_reads_an_unbound_name_sends_the_name(tiny_engine, monkeypatch):
    """The request carries the names the suffix reads and the prefix never mentions (context/names.py), for the
    engine's suffix-scored alternatives; a selection and a cursor after code on its line carry none."""
    sent = []
    submit = tiny_engine.submit
    monkeypatch.setattr(tiny_engine, "submit", lambda request: sent.append(request) or submit(request))
    svc = CompletionService(tiny_engine, dataclasses.replace(GREEDY, completion_cache=False))
    text = "def biggest(l):\n\n    for e in l:\n        if e > m:\n            m = e\n    return m\n"
    for req in (CompletionRequest(text, "python", 1, 0, doc_key="n.py"),
                CompletionRequest(text, "python", 1, 0, end=(2, 0), doc_key="n.py"),
                CompletionRequest(text, "python", 2, 8, doc_key="n.py")):
        asyncio.run(svc.complete(req))
    assert [r.free_names for r in sent] == [("m",), (), ()]


def test_a_selection_fill_gets_steps_enough_for_the_whole_canvas(tiny_engine, monkeypatch):
    """A selection fill is applied whole or not at all, and one its steps ran out inside is refused: it may take as
    many steps as the canvas has positions (a verified walk keeps a token or more a step); a suggestion keeps
    maxSteps."""
    sent = []
    submit = tiny_engine.submit
    monkeypatch.setattr(tiny_engine, "submit", lambda request: sent.append(request) or submit(request))
    svc = CompletionService(tiny_engine, dataclasses.replace(GREEDY, completion_cache=False))
    text = "def f(a):\n    b = a + 1\n    return b\n"
    asyncio.run(svc.complete(CompletionRequest(text, "python", 1, 4, end=(1, 13), doc_key="s.py")))
    asyncio.run(svc.complete(CompletionRequest(text, "python", 1, 13, doc_key="s.py")))
    assert [r.params.max_steps for r in sent] == [tiny_engine.canvas_length, GREEDY.max_steps]
    assert tiny_engine.canvas_length > GREEDY.max_steps
