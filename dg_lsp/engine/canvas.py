"""The infill canvas: `[hole region of k positions][pinned suffix head]` after an encoder prompt.

Pure tensor bookkeeping, no model. The same layout serves a cursor (empty hole in the
document) and a selection to replace (the selection is the hole). Two builders, one per
length strategy (docs/ARCHITECTURE.md, section 3): pad-fill (one row; the model pads the unused tail) and a
batch of hole-length candidates (one row per length, scored after denoising).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .block_end import BlockEnd

# A logit bias that rules a token out: finite, so that softmax gives it probability 0 and the entropy stays a
# number (0 * -inf would be NaN and stop the position from ever being accepted).
BANNED = -1.0e4


@dataclass
class InfillCanvas:
    prompt_ids: list[int]  # encoder prompt, shared by every row
    canvas_ids: torch.LongTensor  # [B, L] initial canvas: hole positions hold `fill_id` until noised
    pinned: torch.BoolTensor  # [B, L] fixed positions: suffix head, and row padding
    valid: torch.BoolTensor  # [B, L] False on the padding of shorter rows (masked out of attention)
    hole_lengths: list[int]  # k per row
    suffix_head_len: int
    # additive logit biases {token id: [B, L]} applied at every denoising step (BANNED: never this token here)
    token_bias: dict[int, torch.Tensor] = field(default_factory=dict)
    # pinned tokens before the hole (a shifted model's lead: the prompt's last token); hole k starts at `lead`
    lead: int = 0
    # [V] logit columns the hole's first slot may take (token healing of a trailing space); None: any
    first_columns: torch.BoolTensor | None = None
    # [V] logit columns after which the shown answer ends: a token holding a line break (InfillRequest.line_only)
    # and the pad where the runner ends a hole at its first pad (ModelRunner.ends_at_first_pad). A left-to-right
    # loop stops once the answer up to one is accepted and stable (DenoiseLoop.answer_settled); None: no such stop
    ends: torch.BoolTensor | None = None
    # [L] the canvas positions where an end counts (None: every hole slot). Under a line-break healing tail the
    # first hole token starts with the prefix's own line break, which ends nothing (InfillLifecycle.prepare)
    end_slots: torch.BoolTensor | None = None
    # a multi-line answer's shown end (InfillRequest.block_indent; engine/block_end.py): a left-to-right loop also
    # stops once the answer up to it is accepted and stable (DenoiseLoop.block_settled); None: no such stop
    block_end: BlockEnd | None = None
    # [V] logit columns whose token holds a line break, set where the cursor ends a line of code
    # (InfillRequest.rest_of_line): an AR-verified walk ends such a line where the base model does, not where the
    # decoder puts the pad (VerifiedWalk.run); None: the decoder ends the hole
    line_breaks: torch.BoolTensor | None = None
    # [V] logit columns whose token holds a line break, for an AR-verified walk's narrowed decoder passes
    # (engine/active_hole.py: a pad inside a line widens the hole); None: none known
    break_columns: torch.BoolTensor | None = None

    @property
    def batch_size(self) -> int:
        return self.canvas_ids.shape[0]

    @property
    def length(self) -> int:
        return self.canvas_ids.shape[1]

    @property
    def hole_mask(self) -> torch.BoolTensor:
        return ~self.pinned  # [B, L]

    def position_ids(self) -> torch.LongTensor:
        """Decoder positions continue right after the prompt: [1, L]."""
        start = len(self.prompt_ids)
        return torch.arange(start, start + self.length, dtype=torch.long).unsqueeze(0)


def build_prompt(prefix_ids: list[int], max_tokens: int, bos_id: int | None, stride: int | None = None) -> list[int]:
    """Encoder prompt = [bos] + the tail of the prefix that fits the budget.

    An over-long prefix loses its head in multiples of `stride` tokens (default: a quarter of
    the budget), not one token per token typed: the prompt's start then stays put while the
    user types at the end, and the encoder cache of the previous prompt stays reusable.
    """
    room = max(0, max_tokens - (1 if bos_id is not None else 0))
    excess = len(prefix_ids) - room
    if excess > 0:
        step = max(1, stride if stride is not None else room // 4)
        kept = prefix_ids[-(-excess // step) * step:] if room else []
    else:
        kept = prefix_ids
    return ([bos_id] if bos_id is not None else []) + list(kept)


def _row(hole: int, head: list[int], width: int, fill_id: int, pad_id: int, lead: list[int] = ()):
    lead = list(lead)
    used = len(lead) + hole + len(head)
    ids = lead + [fill_id] * hole + head + [pad_id] * (width - used)
    pinned = [True] * len(lead) + [False] * hole + [True] * (width - hole - len(lead))
    valid = [True] * used + [False] * (width - used)
    return ids, pinned, valid


def _stack(rows, prompt_ids, holes, head_len, lead: int = 0) -> InfillCanvas:
    ids, pinned, valid = zip(*rows)
    return InfillCanvas(
        prompt_ids=list(prompt_ids),
        canvas_ids=torch.tensor(ids, dtype=torch.long),
        pinned=torch.tensor(pinned, dtype=torch.bool),
        valid=torch.tensor(valid, dtype=torch.bool),
        hole_lengths=list(holes),
        suffix_head_len=head_len,
        lead=lead,
    )


def pad_fill_canvas(prompt_ids: list[int], suffix_ids: list[int], canvas_length: int,
                    suffix_head_tokens: int, fill_id: int, pad_id: int, lead_ids: list[int] = ()) -> InfillCanvas:
    """One row `[lead][hole k][suffix head h]` with k + h = canvas_length and h <= suffix_head_tokens."""
    head = list(suffix_ids[: max(0, min(suffix_head_tokens, canvas_length - 1))])
    hole = canvas_length - len(head)
    width = len(lead_ids) + canvas_length
    return _stack([_row(hole, head, width, fill_id, pad_id, lead_ids)], prompt_ids, [hole], len(head),
                  len(lead_ids))


def length_candidates_canvas(prompt_ids: list[int], suffix_ids: list[int], hole_lengths: tuple[int, ...],
                             suffix_head_tokens: int, fill_id: int, pad_id: int,
                             lead_ids: list[int] = ()) -> InfillCanvas:
    """One row per hole length: `[lead][hole k_i][suffix head][padding]`, all rows as wide as the longest."""
    holes = sorted({int(k) for k in hole_lengths if int(k) > 0})
    if not holes:
        raise ValueError("hole_lengths must contain a positive length")
    head = list(suffix_ids[: max(0, suffix_head_tokens)])
    width = len(lead_ids) + holes[-1] + len(head)
    rows = [_row(k, head, width, fill_id, pad_id, lead_ids) for k in holes]
    return _stack(rows, prompt_ids, holes, len(head), len(lead_ids))


def fix_hole_length(canvas: InfillCanvas, tokens: int, pad_id: int, end_ids: tuple[int, ...] = ()) -> None:
    """A hole of known length, in place: every hole position from `tokens` on is pinned to the pad, and the pad
    and `end_ids` can never be chosen before it (the content fills exactly `tokens` positions)."""
    ban = torch.zeros(canvas.canvas_ids.shape)
    a = canvas.lead
    for row, hole in enumerate(canvas.hole_lengths):
        keep = max(1, min(int(tokens), hole))
        canvas.canvas_ids[row, a + keep:a + hole] = pad_id
        canvas.pinned[row, a + keep:a + hole] = True
        ban[row, a:a + keep] = BANNED
    for tid in {pad_id, *end_ids}:
        canvas.token_bias[tid] = canvas.token_bias.get(tid, 0) + ban
