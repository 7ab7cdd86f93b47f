"""Requests and results that cross the engine boundary (plain data, no torch)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DenoiseParams:
    """Knobs of the denoising loop (docs/ARCHITECTURE.md, section 3). `temperature` is the start of the linear
    schedule (t_max); the schedule ends at `temperature * t_min_ratio`. temperature == 0 is greedy."""

    max_steps: int = 16
    temperature: float = 0.2
    t_min_ratio: float = 0.5
    entropy_bound: float = 0.1
    stability_threshold: int = 1
    # a left-to-right stop (the hole full, its first end, its block's end) needs the answer's argmax up to there
    # unchanged over this many steps (DenoiseLoop.stop)
    settle_steps: int = 1
    confidence_threshold: float = 0.005
    seed: int = 0
    deadline_ms: float | None = None  # step budget: return the best canvas so far when it passes
    # draw tokens and compute entropies exactly as transformers' generate() does (its random numbers, slower on
    # CPU); the default samples the same distributions by CDF inversion
    reference_sampling: bool = False
    # AR-verified decoding (VerifiedWalk.run; a runner that `verifies`, left-to-right models): each step
    # also runs the base model causally over the canvas, and a hole slot is kept only where its left is kept and
    # it is the argmax of log p_base + verify_weight * log p_decoder. None: off (the plain left-to-right loop)
    verify_weight: float | None = None
    # with AR-verified decoding, a one-line answer is weighed against the lines the base model nearly wrote, at its
    # first this many hesitations, by the likelihood of the code after each (engine/alternatives.py). 0: off
    alternatives: int = 0
    # with AR-verified decoding of a one-row canvas, the decoder's passes see a hole of this many slots until the walk
    # nears its end, then the whole hole (engine/active_hole.py). None or 0: the whole hole from the start
    start_slots: int | None = None


@dataclass
class InfillRequest:
    """Fill the hole between `prefix` and `suffix` (text, not tokens)."""

    prefix: str
    suffix: str = ""
    params: DenoiseParams = field(default_factory=DenoiseParams)
    length_strategy: str = "auto"  # "auto" (pad-fill if the model was trained for it) | "pad" | "search"
    hole_lengths: tuple[int, ...] = (4, 8, 16, 32)  # candidates for the "search" strategy
    max_prompt_tokens: int = 1024
    use_suffix: bool = True  # False: pure continuation canvas (no pinned suffix head)
    doc_key: str | None = None  # requests with the same key supersede each other; also the prefix-cache slot
    cancel: threading.Event = field(default_factory=threading.Event)
    reuse_prefix: bool = True  # reuse the document's last encoder cache where the prompt agrees with it
    heal: bool = True  # token healing: a prefix ending in a line break + indentation leaves it to the model
    heal_retry: bool = False  # if the healed answer does not fit the cursor, compute once more without healing
    started_at: float | None = None  # time.monotonic() when the worker began it (set by the engine)
    # >1: may share decoder forwards with other documents' requests, this many rows at most; 0: automatic (the
    # engine's warm-up measurement decides); 1: never
    batch_rows: int = 1
    # Diagnostic (bench --baseline oracle-length), not an editor setting: with pad-fill, the hole holds exactly this
    # many tokens and the rest of it is pinned pads, so the model only chooses the content, never the length.
    hole_tokens: int | None = None
    # pad-fill canvas size: the hole's slots (None: the model's whole canvas; capped at it). Smaller canvases cost
    # less per step; completion/buckets.py picks it per trigger, as the editor would.
    hole_slots: int | None = None
    # only the answer's first line is used (an automatic trigger with text after the cursor on its line): a
    # left-to-right fill stops once its accepted slots hold a line break (not the healing tail's) and the slots up
    # to it kept their argmax for a step
    line_only: bool = False
    # a multi-line answer's shown end (postprocess.cut_to_block), for a left-to-right fill to stop at: before a later
    # non-blank line indented less than `block_indent` characters, and after `block_lines` lines (engine/block_end.py).
    # None: no such stop (a line_only request has its own)
    block_indent: int | None = None
    block_lines: int | None = None
    # with block_indent: the cursor ends a line of code, and an answer that writes text on that line is shown up to
    # its end (postprocess.rest_of_line): the fill also stops at the first line break after text
    rest_of_line: bool = False
    # with block_indent: the cursor is on a blank line above code at its depth (postprocess.between_lines), where one
    # statement is shown; an answer of one line is then weighed against the alternatives as a line_only one is
    one_statement: bool = False
    # names the suffix reads that the prefix never mentions (context/names.py; Python only): with alternatives on,
    # a one-line answer at a blank line is also weighed against lines that bind each (engine/alternatives.py)
    free_names: tuple[str, ...] = ()


@dataclass
class InfillResult:
    text: str
    steps: int = 0
    tokens_per_forward: float = 0.0
    generated_tokens: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)  # tokenize, encode, denoise, total
    cancelled: bool = False
    deadline_hit: bool = False
    hole_length: int = 0
    score: float = 0.0  # mean log-probability of the chosen hole tokens
    candidates: list[tuple[str, float]] = field(default_factory=list)  # (text, score) per length candidate
    prompt_tokens: int = 0
    reused_tokens: int = 0  # prompt tokens whose encoder cache came from the document's previous prompt
    batch_rows: int = 1  # rows of the cross-document batch this result was computed in
    heal_mismatch: bool = False  # the model did not write the prefix's healing tail: no answer fits
    # the loop stopped (its steps or its deadline spent) inside the chosen answer, so `text` holds only its complete
    # lines: what a selection fill must not apply (server.fill_selection)
    cut_short: bool = False
    # (line, log p(line, suffix head | prefix)) for the answer (first) and each alternative (engine/alternatives.py)
    alternatives: list[tuple[str, float]] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "text": self.text,
            "steps": self.steps,
            "tokens_per_forward": self.tokens_per_forward,
            "generated_tokens": self.generated_tokens,
            "timings_ms": dict(self.timings_ms),
            "cancelled": self.cancelled,
            "deadline_hit": self.deadline_hit,
            "hole_length": self.hole_length,
            "score": self.score,
            "prompt_tokens": self.prompt_tokens,
            "reused_tokens": self.reused_tokens,
            "batch_rows": self.batch_rows,
        }
