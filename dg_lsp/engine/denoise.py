"""DenoiseLoop: the inner diffusion loop over one infill canvas, after generation_diffusion_gemma.py.

Differences from `model.generate()`, all of them needed for infill: pinned positions (the
suffix head) are never re-noised and always read back as themselves; entropy, acceptance and
the confidence test only consider hole positions; a cancel flag and a deadline are checked
between steps; temperature 0 means greedy. With nothing pinned the loop draws the same random
numbers in the same order as `generate()` and reproduces it token for token.

A cross-document batch passes one generator, cancel flag and deadline per row: each row then
draws its random numbers from its own generator in the same order as it would alone, a row whose
flag is set or whose deadline passes stops (keeping its canvas) while the others go on, and each
row's scoring logits are those of the last step it took part in.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import torch

from . import sampler
from .canvas import InfillCanvas
from .runner import ModelRunner
from .types import DenoiseParams


@dataclass
class DenoiseOutcome:
    canvas: torch.LongTensor  # [B, L] final argmax canvas, pinned positions restored
    logits: torch.Tensor | None  # [B, L, V] raw logits of the last step (for scoring)
    steps: int  # decoder forwards run
    forwards_per_row: torch.Tensor  # [B] decoder forwards each row needed before it stopped
    cancelled: bool
    deadline_hit: bool
    cancelled_rows: list[bool] | None = None  # per row, for a cross-document batch
    deadline_rows: list[bool] | None = None


class DenoiseLoop:
    def __init__(self, runner: ModelRunner, noise_kind: str = "uniform", mask_id: int | None = None):
        self.runner = runner
        self.noise_kind = noise_kind
        self.mask_id = mask_id

    def _noise(self, shape, generator):
        if isinstance(generator, list):  # one generator per row
            return torch.cat([self._noise((1,) + tuple(shape[1:]), g) for g in generator])
        return sampler.noise_tokens(shape, self.runner.vocab_size, generator, self.runner.device,
                                    self.noise_kind, self.mask_id)

    @staticmethod
    def _sample(processed, generator, greedy):
        if isinstance(generator, list) and not greedy:
            return torch.cat([sampler.sample_tokens(processed[i:i + 1], g, greedy) for i, g in enumerate(generator)])
        return sampler.sample_tokens(processed, generator, greedy)

    @torch.inference_mode()
    def run(self, canvas: InfillCanvas, cache, params: DenoiseParams,
            generator: torch.Generator | list[torch.Generator] | None,
            cancel: threading.Event | list[threading.Event] | None = None,
            deadline: float | list[float | None] | None = None,
            initial_canvas: torch.LongTensor | None = None) -> DenoiseOutcome:
        if isinstance(cancel, list) or isinstance(deadline, list):
            return self._run_rows(canvas, cache, params, generator, cancel, deadline, initial_canvas)
        return self._run(canvas, cache, params, generator, cancel, deadline, initial_canvas)

    def _run_rows(self, canvas, cache, params, generator, cancels, deadlines, initial_canvas) -> DenoiseOutcome:
        """A cross-document batch: per-row cancel flags and deadlines stop rows, not the batch."""
        b = canvas.batch_size
        cancels = cancels if isinstance(cancels, list) else [cancels] * b
        deadlines = deadlines if isinstance(deadlines, list) else [deadlines] * b
        cancelled_rows, deadline_rows = [False] * b, [False] * b

        def stopped(steps: int) -> torch.BoolTensor:
            now = time.monotonic()
            for i in range(b):
                if cancelled_rows[i] or deadline_rows[i]:
                    continue
                if cancels[i] is not None and cancels[i].is_set():
                    cancelled_rows[i] = True
                elif deadlines[i] is not None and steps > 0 and now >= deadlines[i]:
                    deadline_rows[i] = True
            return torch.tensor([c or d for c, d in zip(cancelled_rows, deadline_rows)], device=self.runner.device)

        out = self._run(canvas, cache, params, generator, None, None, initial_canvas, stopped)
        out.cancelled, out.deadline_hit = all(cancelled_rows), any(deadline_rows)
        out.cancelled_rows, out.deadline_rows = cancelled_rows, deadline_rows
        return out

    def _run(self, canvas, cache, params, generator, cancel, deadline, initial_canvas,
             stopped_rows=None) -> DenoiseOutcome:
        dev = self.runner.device
        pinned = canvas.pinned.to(dev)
        hole = ~pinned
        fixed = canvas.canvas_ids.to(dev)
        start = self._noise(tuple(fixed.shape), generator) if initial_canvas is None else initial_canvas.to(dev)
        current = torch.where(pinned, fixed, start)
        argmax = current
        positions = canvas.position_ids()
        mask = self.runner.decoder_mask(cache, canvas.valid, canvas.key_valid) if canvas.key_valid is not None \
            else self.runner.decoder_mask(cache, canvas.valid)
        greedy = params.temperature <= 0
        t_max = max(params.temperature, 1e-6)
        t_min = t_max * params.t_min_ratio
        sc_logits, raw, row_raw = None, None, None
        finished = torch.zeros(fixed.shape[0], dtype=torch.bool, device=dev)
        forwards = torch.zeros(fixed.shape[0], dtype=torch.int, device=dev)
        history: list[torch.LongTensor] = []
        steps, cancelled, deadline_hit = 0, False, False
        for remaining in range(params.max_steps, 0, -1):
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if deadline is not None and steps > 0 and time.monotonic() >= deadline:
                deadline_hit = True
                break
            if stopped_rows is not None:
                finished |= stopped_rows(steps)
                if bool(finished.all()):
                    break
            forwards += (~finished).int()
            raw = self.runner.decode(current, cache, positions, sc_logits, mask)
            if stopped_rows is not None:  # a row's scoring logits: those of the last step it took part in
                row_raw = raw if row_raw is None else torch.where(finished[:, None, None], row_raw, raw)
            steps += 1
            temp = 1.0 if greedy else sampler.temperature_at(remaining, params.max_steps, t_max, t_min)
            processed = raw / temp
            drawn = self._sample(processed, generator, greedy)
            new_argmax = torch.where(pinned, fixed, processed.argmax(dim=-1))
            entropy = sampler.token_entropy(processed)
            accept = sampler.entropy_bound_accept(entropy, params.entropy_bound, hole) | pinned
            accepted = torch.where(accept, drawn, current)
            accepted = torch.where(pinned, fixed, accepted)
            noise = self._noise(tuple(fixed.shape), generator)
            new_current = torch.where(accept, accepted, noise)
            if finished.any():  # rows that stopped keep their state, as generate() does
                new_argmax = torch.where(finished[:, None], argmax, new_argmax)
                new_current = torch.where(finished[:, None], current, new_current)
                if sc_logits is not None:  # None only when a batch row was cancelled before the first step
                    processed = torch.where(finished[:, None, None], sc_logits, processed)
                    entropy = sampler.token_entropy(processed)
            finished |= sampler.stable_and_confident(history, new_argmax, entropy, hole,
                                                     params.stability_threshold, params.confidence_threshold)
            current, argmax = new_current, new_argmax
            sc_logits = processed.to(self.runner.model.model.decoder.embed_tokens.weight.dtype)
            if bool(finished.all()):
                break
        return DenoiseOutcome(argmax, row_raw if stopped_rows is not None else raw, steps, forwards, cancelled,
                              deadline_hit)
