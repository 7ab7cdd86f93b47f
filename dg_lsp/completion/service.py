"""CompletionService: document snapshot + position -> context -> engine -> finished text.

No protocol types here: the server converts LSP positions (UTF-16) to code-point columns
before calling, and converts the answer back.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from dataclasses import dataclass, field

from dg_lsp.config import Settings
from dg_lsp.context import extract_context, introduces_syntax_errors
from dg_lsp.engine import DenoiseParams, Engine, InfillRequest, InfillResult

from .postprocess import finish

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CompletionRequest:
    text: str  # immutable snapshot of the document
    language_id: str | None
    line: int  # 0-based
    column: int  # code points within the line
    end: tuple[int, int] | None = None  # (line, column): replace the range [position, end)
    automatic: bool = False  # typed-through trigger (vs. explicitly invoked)
    doc_key: str | None = None


@dataclass
class Completion:
    text: str
    start: tuple[int, int]
    end: tuple[int, int]
    result: InfillResult | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)


def params_from(settings: Settings) -> DenoiseParams:
    return DenoiseParams(max_steps=settings.max_steps, temperature=settings.temperature,
                         entropy_bound=settings.entropy_bound, seed=settings.seed, deadline_ms=settings.deadline_ms)


def rank_by_syntax(candidates: list[tuple[str, float]], prefix: str, suffix: str, language: str | None,
                   margin: float = 0.05) -> str | None:
    """Length search: the best mean log-probability wins; among candidates within `margin` of it,
    one that does not add syntax errors to the window wins the tie."""
    if not candidates:
        return None
    ordered = sorted(candidates, key=lambda c: -c[1])
    if language is None:
        return ordered[0][0]
    best = ordered[0][1]
    window = prefix + suffix
    for text, score in ordered:
        if best - score > margin:
            break
        if not introduces_syntax_errors(window, prefix + text + suffix, language):
            return text
    return ordered[0][0]


class CompletionService:
    def __init__(self, engine: Engine, settings: Settings):
        self.engine = engine
        self.settings = settings

    def _context(self, req: CompletionRequest):
        s = self.settings
        return extract_context(req.text, req.language_id, req.line, req.column, end=req.end,
                               prefix_budget=s.prefix_tokens, suffix_budget=s.suffix_tokens)

    async def complete(self, req: CompletionRequest, cancel: threading.Event | None = None) -> Completion | None:
        t0 = time.perf_counter()
        ctx = await asyncio.to_thread(self._context, req)
        t_ctx = (time.perf_counter() - t0) * 1000
        infill = InfillRequest(prefix=ctx.prefix, suffix=ctx.suffix, params=params_from(self.settings),
                               length_strategy=self.settings.length_strategy,
                               max_prompt_tokens=self.settings.prefix_tokens, doc_key=req.doc_key)
        if cancel is not None:
            infill.cancel = cancel
        future = self.engine.submit(infill)
        try:
            result = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            infill.cancel.set()  # $/cancelRequest: the loop stops within one denoising step
            log.info("request cancelled by the client; stopping the denoising loop")
            raise
        if result.cancelled:
            return None
        raw = result.text
        if len(result.candidates) > 1:
            raw = rank_by_syntax(result.candidates, ctx.prefix, ctx.suffix, ctx.language) or raw
        selection = req.end is not None and req.end != (req.line, req.column)
        text = finish(raw, ctx.suffix, indent=ctx.indent, mid_line=ctx.mid_line and not selection,
                      single_line=req.automatic and ctx.mid_line and not selection,
                      max_lines=10_000 if selection else self.settings.max_lines)
        end = req.end if req.end is not None else (req.line, req.column)
        timings = dict(result.timings_ms, context=t_ctx, total_request=(time.perf_counter() - t0) * 1000)
        log.info("completion %d chars in %.0f ms (%d steps)", len(text), timings["total_request"], result.steps)
        return Completion(text=text, start=(req.line, req.column), end=end, result=result, timings_ms=timings)
