"""Continuous cross-document batching: the pad-fill requests of several documents share every decoder
forward, and requests join and leave the batch between steps.

Each row keeps the state a single-request `DenoiseLoop` would have: its own generator (so it draws the
same random numbers in the same order as alone), its own place in the temperature schedule, its own
self-conditioning logits (rows in their first step get none, via the model's `self_conditioning_mask`),
stability history, cancel flag and deadline. A row that finishes, is cancelled or passes its deadline
gets its answer at once; a queued request at the front of the worker's queue joins at the next step.
So a document's new request after a keystroke does not wait for the other documents' rows to finish.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import torch

from . import sampler
from .canvas import InfillCanvas
from .denoise import DenoiseOutcome
from .types import DenoiseParams, InfillRequest, InfillResult
from .worker import BatchContext, Job


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0


@dataclass(eq=False)  # rows are compared by identity
class _Row:
    job: Job
    request: InfillRequest
    canvas: InfillCanvas  # one row
    pinned: torch.BoolTensor  # [1, L] on the device: suffix head and padding
    fixed: torch.LongTensor  # [1, L] on the device: the canvas's fixed tokens
    cache: object  # the prompt's decode view
    generator: torch.Generator
    deadline: float | None
    t0: float
    timings: dict
    reused: int
    current: torch.LongTensor  # [1, L]
    remaining: int  # counts down from max_steps, as the single-request loop's schedule does
    argmax: torch.LongTensor | None = None
    steps: int = 0
    history: list = field(default_factory=list)
    sc_logits: torch.Tensor | None = None
    raw: torch.Tensor | None = None
    max_rows: int = 1  # the most rows a forward of this row had
    heal: str = ""  # the prefix's healing tail (Engine.prepare)

    @property
    def positions(self) -> torch.LongTensor:
        return self.canvas.position_ids()


class BatchRun:
    """One batch on the worker thread, from its first job until no row is left."""

    def __init__(self, engine, ctx: BatchContext, params: DenoiseParams):
        self.engine = engine
        self.runner = engine.runner
        self.loop = engine.loop  # its update() is the single-request step, shared
        self.ctx = ctx
        self.params = params
        self.limit = max(1, ctx.first.batch_rows)
        self.rows: list[_Row] = []
        self.shared: set[int] = set()  # jobs that shared at least one forward with another document

    def _start(self, job: Job) -> _Row | None:
        request: InfillRequest = job.payload
        request.started_at = time.monotonic()
        t0 = time.perf_counter()
        eng = self.engine
        try:
            prompt, canvas, heal = eng.prepare(request)
            t_tok = _ms(t0)
            t1 = time.perf_counter()
            cache, reused = eng.encode_prompt(prompt, request.doc_key, request.reuse_prefix)
            t_enc = _ms(t1)
        except Exception as exc:  # noqa: BLE001 - one bad request must not sink the others
            self.ctx.deliver(job, None, exc)
            return None
        gen = torch.Generator(device=self.runner.device).manual_seed(request.params.seed)
        deadline = None
        if request.params.deadline_ms is not None:
            deadline = time.monotonic() + max(0.0, request.params.deadline_ms / 1000.0 - (time.perf_counter() - t0))
        fixed = canvas.canvas_ids.to(self.runner.device)
        pinned = canvas.pinned.to(self.runner.device)
        start = self.loop._noise(tuple(fixed.shape), gen)
        return _Row(job, request, canvas, pinned, fixed, cache, gen, deadline, t0, {"tokenize": t_tok, "encode": t_enc},
                    reused, torch.where(pinned, fixed, start), self.params.max_steps, heal=heal)

    def _finish(self, row: _Row, cancelled: bool = False, deadline_hit: bool = False) -> None:
        eng = self.engine
        canvas = row.argmax if row.argmax is not None else row.current
        out = DenoiseOutcome(canvas, row.raw, row.steps, torch.tensor([row.steps]), cancelled, deadline_hit)
        result: InfillResult = eng._choose(row.canvas, out, row.heal)
        if result.heal_mismatch and row.request.heal_retry and not cancelled:
            # as Engine.run_infill does: an explicit request is computed once more, alone, without healing
            self.ctx.deliver(row.job, eng.run_infill(dataclasses.replace(row.request, heal=False, heal_retry=False)))
            return
        total = _ms(row.t0)
        result.timings_ms = {**row.timings, "denoise": total - row.timings["tokenize"] - row.timings["encode"],
                             "total": total}
        result.prompt_tokens, result.reused_tokens = len(row.canvas.prompt_ids), row.reused
        result.batch_rows = row.max_rows
        eng._count(result)
        if not result.cancelled:
            eng.last_latency_ms = total
        self.ctx.deliver(row.job, result)

    def _count(self, rows: list[_Row]) -> None:
        """Engine counters, before any of these rows is answered: batches where documents shared forwards,
        jobs that shared one, forwards run by batches, and rows over those forwards."""
        st = self.engine.stats
        st["batchForwards"] += 1
        st["batchRowSteps"] += len(rows)
        for r in rows:
            r.max_rows = max(r.max_rows, len(rows))
            if len(rows) > 1 and id(r.job) not in self.shared:
                st["batches"] += int(not self.shared)
                self.shared.add(id(r.job))
                st["batchedJobs"] += 1

    def _prune(self) -> bool:
        """Answer and drop cancelled rows and rows past their deadline. True if the rows changed."""
        now, keep = time.monotonic(), []
        for row in self.rows:
            if row.job.cancel.is_set():
                self._finish(row, cancelled=True)
            elif row.deadline is not None and row.steps > 0 and now >= row.deadline:
                self._finish(row, deadline_hit=True)
            else:
                keep.append(row)
        changed = len(keep) != len(self.rows)
        self.rows = keep
        return changed

    @torch.inference_mode()
    def run(self) -> None:
        first = self._start(self.ctx.first)
        self.rows = [first] if first is not None else []
        merged = None
        p = self.params
        greedy = p.temperature <= 0
        t_max = max(p.temperature, 1e-6)
        t_min = t_max * p.t_min_ratio
        while True:
            changed = self._prune()
            for job in self.ctx.more(self.limit - len(self.rows)):
                row = self._start(job)
                if row is not None:
                    self.rows.append(row)
                    changed = True
            if not self.rows:
                return
            rows = self.rows
            self._count(rows)
            if changed or merged is None:
                merged, key_valid = self.runner.merge_caches([r.cache for r in rows])
                valid = torch.cat([r.canvas.valid for r in rows])
                mask = self.runner.decoder_mask(merged, valid, key_valid)
                positions = torch.cat([r.positions for r in rows])
            sc, sc_mask = None, None
            if any(r.sc_logits is not None for r in rows):
                like = next(r.sc_logits for r in rows if r.sc_logits is not None)
                sc = torch.cat([r.sc_logits if r.sc_logits is not None else torch.zeros_like(like) for r in rows])
                sc_mask = torch.tensor([r.sc_logits is not None for r in rows], device=self.runner.device)
                if bool(sc_mask.all()):
                    sc_mask = None
            raw = self.runner.decode(torch.cat([r.current for r in rows]), merged, positions, sc, mask, sc_mask)
            done = []
            for i, row in enumerate(rows):
                row_raw = raw[i:i + 1]
                temp = 1.0 if greedy else sampler.temperature_at(row.remaining, p.max_steps, t_max, t_min)
                processed, row.current, row.argmax, entropy = self.loop.update(
                    row_raw / temp, row.current, row.pinned, row.fixed, p, row.generator, greedy)
                stop = sampler.stable_and_confident(row.history, row.argmax, entropy, ~row.pinned,
                                                    p.stability_threshold, p.confidence_threshold)
                row.sc_logits = processed.to(self.runner.model.model.decoder.embed_tokens.weight.dtype)
                row.raw = row_raw
                row.steps += 1
                row.remaining -= 1
                if bool(stop.all()) or row.remaining <= 0:
                    done.append(row)
            for row in done:
                self._finish(row)
            if done:
                finished = {id(r) for r in done}
                self.rows = [r for r in self.rows if id(r) not in finished]
                merged = None
