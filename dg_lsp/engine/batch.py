"""Cross-document batching: when it pays, which requests may share, and the batch itself.

When: automatic batching (request.batch_rows == 0) follows a measurement taken at warm-up
(`measure_batch_step`): one decoder forward of 2 rows against 1 row.

The batch (`BatchRun`): the pad-fill requests of several documents share every decoder forward, and
requests join and leave the batch between steps. Each row keeps the state a single-request
`DenoiseLoop` would have: its own generator (so it draws the same random numbers in the same order as
alone), its own place in the temperature schedule, its own self-conditioning logits (rows in their
first step get none, via the model's `self_conditioning_mask`), stability history, cancel flag and
deadline. A row that finishes, is cancelled or passes its deadline gets its answer at once; a queued
request at the front of the worker's queue joins at the next step. So a document's new request after a
keystroke does not wait for the other documents' rows to finish. Each row's life before and after
denoising is the single request's (engine/lifecycle.py).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from dataclasses import dataclass, field

import torch

from . import sampler
from .outcome import DenoiseOutcome, constrain
from .lifecycle import InfillLifecycle, StartedInfill, ms
from .types import DenoiseParams, InfillRequest
from .worker import BatchContext, Job

# Automatic cross-document batching (request.batch_rows == 0) is on when a decoder forward of 2 rows costs
# less than this many 1-row forwards on this machine, i.e. when a shared forward is nearly free (a GPU on
# the eager path, or a model big enough to be memory-bound; the fixed-shape CUDA path runs one request at a
# time). Otherwise the rows of documents still being typed, superseded a keystroke later, take time from
# the suggestion someone is waiting for: on 2 CPU cores with the 8M default model 2 rows cost 1.4-1.7
# forwards, and always batching made the final suggestion 1.8-1.9x slower while four documents were typed
# at once (docs/results/typing.md). The threshold is a judgement from those measurements, with a margin:
# the break-even lies somewhere between 1.0 and 1.4.
BATCH_PAYS_BELOW = 1.1
AUTO_BATCH_ROWS = 4

_CALIBRATION_TEXT = "def mean(values):\n    total = 0\n    for value in values:\n        total += value\n" \
                    "    return total / len(values)\n\n\n"


def batch_rows_for(request: InfillRequest, calibration: dict | None) -> int:
    """Rows this request may share: its own batch_rows, or for 0 (automatic) the calibration's verdict."""
    if request.batch_rows == 0:
        pays = calibration is not None and calibration["batch_pays"]
        return AUTO_BATCH_ROWS if pays else 1
    return request.batch_rows


def batch_key(request: InfillRequest, rows: int, strategy: str, fixed_shape: bool):
    """Requests with equal keys can share decoder forwards (one pad-fill row each, same loop settings);
    None when this one cannot. The fixed-shape GPU path (engine/fast) runs requests one at a time."""
    if rows <= 1 or fixed_shape or strategy != "pad" or request.hole_tokens is not None:
        return None
    return ("pad", request.hole_slots, dataclasses.replace(request.params, seed=0, deadline_ms=None))


@torch.inference_mode()
def measure_batch_step(life: InfillLifecycle, rows: int = 2, reps: int = 5, prompt_tokens: int = 256) -> dict:
    """Median time of one decoder forward for 1 row and for `rows` rows (alternating, same prompt)."""
    runner = life.runner
    ids = life.tokenize(_CALIBRATION_TEXT * 40)[: max(1, life.prompt_budget(prompt_tokens) - 1)]
    prompt = ([life.bos_id] if life.bos_id is not None else []) + ids
    length = runner.canvas_length
    positions = torch.arange(len(prompt), len(prompt) + length).unsqueeze(0)
    one_cache, _ = runner.encode(prompt)
    many_cache, _ = runner.encode(prompt)
    many_cache.batch_repeat_interleave(rows)
    gen = torch.Generator(device=runner.device).manual_seed(0)
    canvas = torch.randint(0, runner.vocab_size, (rows, length), generator=gen, device=runner.device)
    times: dict[int, list[float]] = {1: [], rows: []}
    for rep in range(reps + 1):
        for n, cache in ((1, one_cache), (rows, many_cache)):
            t0 = time.perf_counter()
            runner.decode(canvas[:n], cache, positions, None, None)
            if rep:  # the first round warms up
                times[n].append(ms(t0))
    one, many = statistics.median(times[1]), statistics.median(times[rows])
    ratio = many / max(one, 1e-9)
    return {"rows": rows, "step_ms_1": one, f"step_ms_{rows}": many, "cost_in_single_forwards": ratio,
            "batch_pays": ratio < BATCH_PAYS_BELOW}


@dataclass(eq=False)  # rows are compared by identity
class _Row:
    job: Job
    started: StartedInfill
    pinned: torch.BoolTensor  # [1, L] on the device: suffix head and padding
    fixed: torch.LongTensor  # [1, L] on the device: the canvas's fixed tokens
    current: torch.LongTensor  # [1, L]
    remaining: int  # counts down from max_steps, as the single-request loop's schedule does
    argmax: torch.LongTensor | None = None
    steps: int = 0
    history: list = field(default_factory=list)
    sc_logits: torch.Tensor | None = None
    raw: torch.Tensor | None = None
    max_rows: int = 1  # the most rows a forward of this row had
    biases: list = field(default_factory=list)  # DenoiseLoop.biases of its canvas

    @property
    def canvas(self):  # one row
        return self.started.canvas

    @property
    def positions(self) -> torch.LongTensor:
        return self.started.canvas.position_ids()


class BatchRun:
    """One batch on the worker thread, from its first job until no row is left."""

    def __init__(self, life: InfillLifecycle, ctx: BatchContext, params: DenoiseParams):
        self.life = life
        self.runner = life.runner
        self.loop = life.loop  # its update() is the single-request step, shared
        self.ctx = ctx
        self.params = params
        self.limit = max(1, ctx.first.batch_rows)
        self.rows: list[_Row] = []
        self.shared: set[int] = set()  # jobs that shared at least one forward with another document

    def _start(self, job: Job) -> _Row | None:
        try:
            started = self.life.start(job.payload)
        except Exception as exc:  # noqa: BLE001 - one bad request must not sink the others
            self.ctx.deliver(job, None, exc)
            return None
        fixed = started.canvas.canvas_ids.to(self.runner.device)
        pinned = started.canvas.pinned.to(self.runner.device)
        start = self.loop._noise(tuple(fixed.shape), started.generator)
        return _Row(job, started, pinned, fixed, torch.where(pinned, fixed, start), self.params.max_steps,
                    biases=self.loop.biases(started.canvas))

    def _finish(self, row: _Row, cancelled: bool = False, deadline_hit: bool = False, spent: bool = False) -> None:
        canvas = row.argmax if row.argmax is not None else row.current
        out = DenoiseOutcome(canvas, row.raw, row.steps, torch.tensor([row.steps]), cancelled, deadline_hit,
                             self.loop.unsettled(row.current, row.pinned), spent=spent)
        self.ctx.deliver(row.job, self.life.finish(row.started, out, batch_rows=row.max_rows))

    def _count(self, rows: list[_Row]) -> None:
        """Engine counters, before any of these rows is answered: batches where documents shared forwards,
        jobs that shared one, forwards run by batches, and rows over those forwards."""
        st = self.life.stats
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
            elif row.started.deadline is not None and row.steps > 0 and now >= row.started.deadline:
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
                merged, key_valid = self.runner.merge_caches([r.started.cache for r in rows])
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
            layout = {"pinned": torch.cat([r.pinned for r in rows])} if self.runner.reads_pinned else {}
            raw = self.runner.decode(torch.cat([r.current for r in rows]), merged, positions, sc, mask, sc_mask,
                                     **layout)
            done = []
            for i, row in enumerate(rows):
                row_raw = constrain(raw[i:i + 1], row.canvas, row.biases)
                temp = sampler.step_temperature(greedy, row.remaining, p.max_steps, t_max, t_min)
                processed, row.current, row.argmax, entropy = self.loop.update(
                    row_raw / temp, row.current, row.pinned, row.fixed, p, row.started.generator, greedy)
                stop = self.loop.stop(row.history, row.current, row.argmax, entropy, ~row.pinned, p,
                                      row.canvas.ends, row.canvas.end_slots, row.canvas.block_end)
                row.sc_logits = processed.to(self.runner.logits_dtype)
                row.raw = row_raw
                row.steps += 1
                row.remaining -= 1
                if bool(stop.all()) or row.remaining <= 0:
                    done.append((row, not bool(stop.all())))
            for row, spent in done:
                self._finish(row, spent=spent)
            if done:
                finished = {id(r) for r, _ in done}
                self.rows = [r for r in self.rows if id(r) not in finished]
                merged = None
