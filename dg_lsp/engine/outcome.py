"""What both denoising loops share: a loop's outcome, the per-step logit constraints and the stop check between steps.

`DenoiseLoop` (engine/denoise.py) runs the diffusion steps over a canvas; `VerifiedWalk` (engine/verified.py) the
AR-verified left-to-right walk. Both return a `DenoiseOutcome`, constrain each decoder pass's logits the same way
(`constrain`, `token_biases`) and stop between steps on a cancel flag or a deadline (`interrupted`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import torch

from .canvas import BANNED, InfillCanvas
from .runner import ModelRunner


@dataclass
class DenoiseOutcome:
    canvas: torch.LongTensor  # [B, L] final argmax canvas, pinned positions restored
    logits: torch.Tensor | None  # [B, L, V] raw logits of the last step (for scoring)
    steps: int  # decoder forwards run
    forwards_per_row: torch.Tensor  # [B] decoder forwards each row needed before it stopped
    cancelled: bool
    deadline_hit: bool
    # [B, L] hole slots no step accepted when the loop ended (left to right only; else None)
    unsettled: torch.BoolTensor | None = None
    # verified, with params.alternatives: per row, {canvas position: (token ids, probabilities)} of the base model's
    # best `verified.BASE_TOP` tokens at each kept slot, from the pass that kept it (its left context exact); else None
    base_top: list[dict[int, tuple[list[int], list[float]]]] | None = None
    # the argmax at the first open slot is from a pass made before the last slots were kept (a verified walk whose
    # step budget ran out): it says nothing about what follows them (InfillLifecycle.answer_slots)
    stale_guess: bool = False
    # the loop's step budget ran out while a row was still open (neither ended nor decided where its shown text
    # ends): an answer read from it stops short (InfillResult.cut_short)
    spent: bool = False


def constrain(raw: torch.Tensor, canvas: InfillCanvas, biases: list[tuple[int, torch.Tensor]],
              owned: bool = False) -> torch.Tensor:
    """A step's raw logits [B, L, V] with the canvas's token biases added and its first hole slot kept to
    `canvas.first_columns` (every other column BANNED there). Returns `raw` itself when neither applies. `owned`: the
    caller holds the only reference to `raw` (a pass's fresh logits), so it is changed in place instead of copied
    (a copy of a 25 x 32k float32 pass is about 1 ms on one core)."""
    if not biases and canvas.first_columns is None:
        return raw
    if not owned:
        raw = raw.clone()
    for col, bias in biases:
        raw[..., col] += bias.to(raw.dtype)
    if canvas.first_columns is not None:
        allowed = canvas.first_columns.to(raw.device)
        raw[:, canvas.lead, :] = raw[:, canvas.lead, :].masked_fill(~allowed, BANNED)
    return raw


def token_biases(runner: ModelRunner, canvas: InfillCanvas) -> list[tuple[int, torch.Tensor]]:
    """The canvas's token biases as (logit column, [B, L] bias on the device); tokens the head lacks dropped."""
    biases = [(runner.column_of(tid), bias.to(runner.device)) for tid, bias in canvas.token_bias.items()]
    return [(col, bias) for col, bias in biases if col is not None]


def interrupted(cancel: threading.Event | None, deadline: float | None, steps: int) -> tuple[bool, bool]:
    """(cancelled, deadline hit) before a step: the cancel flag is set, or the deadline (time.monotonic()) has
    passed and at least one step ran."""
    if cancel is not None and cancel.is_set():
        return True, False
    return False, deadline is not None and steps > 0 and time.monotonic() >= deadline
