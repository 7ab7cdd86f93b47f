"""CompletionService: document snapshot + position -> context -> engine -> finished text.

One service lives as long as its engine and keeps what makes typing fast (docs/ARCHITECTURE.md, section 2):
- each document has at most one request waiting and one computation; a newer request
  answers the older one empty at once (`DocumentSlots`);
- recent suggestions are served again for the same context, and typed through: typing the
  start of a shown, cached or in-flight suggestion gets the rest of it without the model;
- the prompt starts at a stable anchor (the prefix window of `context.extract_context`), so the
  engine's prefix cache encodes only what was typed.

No protocol types here: the server converts LSP positions (UTF-16) once, to (line, code-point column) on LSP
lines (`CompletionRequest`), before calling, and converts the answer back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property

from dg_lsp.config import Settings
from dg_lsp.context import extract_context, newline_text
from dg_lsp.context.names import free_names
from dg_lsp.engine import DenoiseParams, Engine, InfillRequest, InfillResult

from . import buckets
from .cache import SuggestionCache, SuggestionContext, rest_after_typing, typed_since
from .slots import Computation, DocumentSlots
from .postprocess import finish_suggestion, shown_end
from .selection import refusal

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompletionRequest:
    """A hole in a document snapshot. Positions are in the one unit below the protocol: (line, column), 0-based,
    lines broken as LSP breaks them (at \\n, \\r\\n and \\r), the column counting code points. The server
    converts the client's positions to it once (`server/positions.to_server`)."""

    text: str  # immutable snapshot of the document, its line breaks as they are
    language_id: str | None
    line: int
    column: int
    end: tuple[int, int] | None = None  # (line, column): replace the range [position, end)
    automatic: bool = False  # typed-through trigger (vs. explicitly invoked)
    doc_key: str | None = None
    # the document is a notebook's cell inside its notebook (context/notebook.py): an answer ends where it starts
    # another cell
    notebook_cell: bool = False

    @property
    def is_selection(self) -> bool:
        return self.end is not None and self.end != (self.line, self.column)

    @cached_property
    def document(self) -> str:
        """The text with every line break as '\\n': its '\\n' lines are the LSP lines, so (line, column) means the
        same thing to everything below (context, the prompt window, post-processing)."""
        return newline_text(self.text)


@dataclass
class Suggestion:
    """The finished text for a request's hole (shown, or for a selection applied), where it goes, and how it came
    about. `start`/`end` are the request's, in its unit: (line, code-point column) on LSP lines."""

    text: str
    start: tuple[int, int]
    end: tuple[int, int]
    result: InfillResult | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)
    source: str = "computed"  # computed | cache | typed (typed through a suggestion) | inflight
    refusal: str | None = None  # why a selection fill the model wrote is no fill, where the whole document says so
    # an inline answer's other items for the same range, best first (CompletionService._others); the editor
    # cycles through them after `text`
    others: tuple[str, ...] = ()


def params_from(settings: Settings) -> DenoiseParams:
    return DenoiseParams(max_steps=settings.max_steps, temperature=settings.temperature,
                         entropy_bound=settings.entropy_bound, seed=settings.seed, deadline_ms=settings.deadline_ms,
                         verify_weight=settings.verify_weight, alternatives=settings.alternatives,
                         start_slots=settings.start_slots)


@dataclass
class _Prepared:
    req: CompletionRequest
    ctx: object  # dg_lsp.context.CodeContext
    suggestion: SuggestionContext
    t0: float
    context_ms: float


class CompletionService:
    def __init__(self, engine: Engine, settings: Settings):
        self.engine = engine
        self.settings = settings
        self.cache = SuggestionCache()
        self.slots = DocumentSlots()
        # Each request ends as exactly one of: computed (answered by a computation, possibly one it took
        # over), cacheExact, cacheTyped, inflightTyped (typed through a computation it waited for),
        # superseded (a newer request for the document came), cancelled (by the client), failed.
        self.stats = {"requests": 0, "computed": 0, "cacheExact": 0, "cacheTyped": 0, "inflightTyped": 0,
                      "superseded": 0, "cancelled": 0, "failed": 0, "empty": 0,
                      "computations": 0, "computationsFinished": 0, "inflightAdopted": 0}
        self._typical_ms: float | None = None  # running estimate of one computation, for adoption

    # -- context --------------------------------------------------------------------------------
    def _prepare(self, req: CompletionRequest) -> _Prepared:
        t0 = time.perf_counter()
        s = self.settings
        ctx = extract_context(req.document, req.language_id, req.line, req.column, end=req.end,
                              prefix_budget=s.prefix_tokens, suffix_budget=s.suffix_tokens)
        variant = (s.max_steps, s.temperature, s.entropy_bound, s.verify_weight, s.alternatives, s.start_slots, s.seed,
                   s.deadline_ms, s.length_strategy, s.prefix_tokens, s.max_lines, s.max_suggestions, req.automatic,
                   req.end is not None and req.is_selection)
        # keyed on the gate's window after the hole (it holds the model's): the shown text was judged in it
        suggestion = SuggestionContext(req.doc_key, ctx.prefix, ctx.judge_suffix or ctx.suffix, ctx.cursor, variant)
        return _Prepared(req, ctx, suggestion, t0, (time.perf_counter() - t0) * 1000)

    def _shown(self, p: _Prepared, raw: str, candidates) -> str:
        """Post-processing and the syntax gate (`postprocess.finish_suggestion`, shared with the benchmark)."""
        return finish_suggestion(raw, candidates, p.suggestion.prefix, p.ctx, selection=p.req.is_selection,
                                 max_lines=self.settings.max_lines, document=p.req.document,
                                 names=self.settings.name_check, cell=p.req.notebook_cell)

    def _finish(self, p: _Prepared, result: InfillResult) -> tuple[str, str | None]:
        """`_shown` of the answer, then for a selection fill the whole document's checks (`selection.refusal`): the
        text, and why a selection fill with text is no fill (None where it is not refused so)."""
        text = self._shown(p, result.text, result.candidates)
        if not text or not p.req.is_selection:
            return text, None
        why = refusal(p.req.document, p.ctx.start, p.ctx.end, text, p.ctx.language, names=self.settings.name_check)
        if why is not None:
            log.info("selection fill refused: %s (%d chars)", why, len(text))
            return "", why
        return text, None

    def _others(self, p: _Prepared, result: InfillResult, text: str) -> tuple[str, ...]:
        """An inline answer's other items (at most `maxSuggestions` - 1): the other lines the engine weighed against
        it (the suffix-scored alternatives, `InfillResult.alternatives`), best score first, each finished and checked
        as the answer is (`_shown`); one that comes out empty, the same as the answer or as an item before it is left
        out. Nothing for a selection fill or an empty answer (what the checks refused is not replaced by a line the
        engine scored lower). The lines come with the answer at no model cost; checking each took about half a
        millisecond on HumanEval's files (docs/results/suggestions.md)."""
        limit = self.settings.max_suggestions - 1
        if limit < 1 or p.req.is_selection or not text:
            return ()
        out: list[str] = []
        for line, _ in sorted(result.alternatives, key=lambda kv: -kv[1]):
            if len(out) >= limit:
                break
            other = self._shown(p, line, [])
            if other and other != text and other not in out:
                out.append(other)
        return tuple(out)

    # -- the request path -----------------------------------------------------------------------
    async def complete(self, req: CompletionRequest, cancel: threading.Event | None = None) -> Suggestion | None:
        self.stats["requests"] += 1
        try:
            p = await asyncio.to_thread(self._prepare, req)
            ticket = self.slots.claim(req.doc_key)
            try:
                return await self._serve(p, ticket, cancel)
            finally:
                self.slots.release(req.doc_key, ticket)
        except asyncio.CancelledError:
            self.stats["cancelled"] += 1
            log.debug("request cancelled by the client")
            raise
        except Exception:
            self.stats["failed"] += 1
            raise

    async def _serve(self, p: _Prepared, ticket, cancel) -> Suggestion | None:
        use_cache = self.settings.completion_cache and not p.req.is_selection
        if use_cache:
            served = self._from_cache(p)
            if served is not None:
                self.slots.stop_computation(p.req.doc_key)  # whatever runs is for an older context
                return served
        return await self._compute(p, ticket, use_cache, cancel)

    def _from_cache(self, p: _Prepared) -> Suggestion | None:
        found = self.cache.get(p.suggestion)
        source = "cache"
        if found is None:
            found, source = self.cache.type_through(p.suggestion), "typed"
            if found is not None:
                self.cache.put(p.suggestion, *found)
        if found is None:
            return None
        self.stats["cacheExact" if source == "cache" else "cacheTyped"] += 1
        text, others = found
        return self._suggestion(p, text, None, source, others=others)

    def _adoptable(self, running: Computation, p: _Prepared) -> bool:
        """Wait for the document's running computation instead of replacing it? Always when it is for
        this very context; after a few typed characters only when it is nearly done, since its answer
        helps only if it starts with what was typed."""
        typed = typed_since(running.context, p.suggestion)
        if typed is None:
            return False
        if typed == "":
            return True
        if not self.settings.completion_cache or len(typed) > 8 or self._typical_ms is None:
            return False
        started = running.request.started_at
        return started is not None and (time.monotonic() - started) * 1000 >= 0.75 * self._typical_ms

    async def _compute(self, p: _Prepared, ticket, use_cache: bool, cancel) -> Suggestion | None:
        key = p.req.doc_key
        running = self.slots.computation(key)
        if running is not None and self._adoptable(running, p):
            self.stats["inflightAdopted"] += 1
            outcome = await self.slots.wait(key, ticket, running)
            if outcome is DocumentSlots.SUPERSEDED:
                self.stats["superseded"] += 1
                return None
            if running.context == p.suggestion:
                return self._answer(p, outcome, "inflight")
            rest = rest_after_typing(running.context, outcome[0], p.suggestion) if outcome else None
            if rest is not None:
                self.stats["inflightTyped"] += 1
                self.cache.put(p.suggestion, rest)
                return self._suggestion(p, rest, None, "inflight")
        if await self._debounced(p, ticket):
            self.stats["superseded"] += 1
            return None
        computation = self._start(p, use_cache, cancel)
        outcome = await self.slots.wait(key, ticket, computation)
        if outcome is DocumentSlots.SUPERSEDED:
            self.stats["superseded"] += 1
            return None
        return self._answer(p, outcome, "computed")

    async def _debounced(self, p: _Prepared, ticket) -> bool:
        """With `debounceMs`, an automatic request first waits that long: True if a newer request
        for the document came meanwhile (a client's $/cancelRequest raises instead)."""
        delay = self.settings.debounce_ms
        if delay <= 0 or not p.req.automatic or p.req.is_selection:
            return False
        self.slots.stop_computation(p.req.doc_key)  # it was for an older context
        await asyncio.wait({ticket}, timeout=delay / 1000)
        return ticket.done()

    def _answer(self, p: _Prepared, outcome, source: str) -> Suggestion | None:
        if outcome is None:  # the computation was stopped (by the client's $/cancelRequest, or a fill)
            self.stats["superseded"] += 1
            return None
        text, result, why, others = outcome
        self.stats["computed"] += 1
        return self._suggestion(p, text, result, source, why, others)

    def _start(self, p: _Prepared, use_cache: bool, cancel) -> Computation:
        params = params_from(self.settings)
        if p.req.is_selection:  # asked for, and applied whole or not at all: steps enough to write the whole canvas
            # (a verified walk keeps a token or more a step); its deadline still bounds it
            params = dataclasses.replace(params, max_steps=max(params.max_steps, self.engine.canvas_length))
        infill = InfillRequest(prefix=p.suggestion.prefix, suffix=p.ctx.suffix, params=params,
                               length_strategy=self.settings.length_strategy,
                               max_prompt_tokens=self.settings.prefix_tokens, doc_key=p.req.doc_key,
                               reuse_prefix=self.settings.prefix_cache, batch_rows=self.settings.batch_documents,
                               heal_retry=not p.req.automatic,
                               hole_slots=buckets.hole_slots(p.suggestion.prefix, p.req.automatic,
                                                             p.req.is_selection),
                               # names a line at a blank line may bind, for the suffix-scored alternatives
                               free_names=() if p.req.is_selection else free_names(p.suggestion.prefix, p.ctx.suffix,
                                                                                   p.ctx.language),
                               # where the shown text ends, for a left-to-right fill to stop there
                               **shown_end(p.ctx, p.req.is_selection, self.settings.max_lines))
        if cancel is not None:
            infill.cancel = cancel
        future = self.engine.submit(infill)  # supersedes the document's queued or running engine job

        async def run():
            result = await asyncio.wrap_future(future)
            if result.cancelled:
                return None

            def finished() -> tuple[str, str | None, tuple[str, ...]]:
                text, why = self._finish(p, result)
                return text, why, self._others(p, result, text)

            # the syntax checks (length ranking, the gate) parse the window: off the event loop
            text, why, others = await asyncio.to_thread(finished) \
                if result.text.strip() or len(result.candidates) > 1 else finished()
            self.stats["computationsFinished"] += 1
            total = result.timings_ms.get("total", 0.0)
            self._typical_ms = total if self._typical_ms is None else 0.8 * self._typical_ms + 0.2 * total
            if use_cache and not result.deadline_hit:  # a fill cut by time may finish when asked again
                self.cache.put(p.suggestion, text, others)
            return text, result, why, others

        self.stats["computations"] += 1
        return self.slots.start(p.req.doc_key, p.suggestion, infill, run())

    def _suggestion(self, p: _Prepared, text: str, result: InfillResult | None, source: str,
                    refusal: str | None = None, others: tuple[str, ...] = ()) -> Suggestion:
        req = p.req
        end = req.end if req.end is not None else (req.line, req.column)
        timings = dict(result.timings_ms if result is not None else {}, context=p.context_ms,
                       total_request=(time.perf_counter() - p.t0) * 1000)
        if not text:
            self.stats["empty"] += 1
        detail = ""
        if result is not None:
            detail = f", {result.steps} steps" + (", step budget hit" if result.deadline_hit else "")
        if others:
            detail += f", {len(others)} more item" + ("s" if len(others) > 1 else "")
        log.info("completion %d chars in %.0f ms (%s%s)", len(text), timings["total_request"], source, detail)
        return Suggestion(text=text, start=(req.line, req.column), end=end, result=result, timings_ms=timings,
                          source=source, refusal=refusal, others=others)
