"""The decoder's hole in an AR-verified walk: as short as the line being written, widened when the walk needs room.

A decoder pass costs in proportion to its canvas (lead + hole slots + suffix head; on one CPU core a 41-position
pass of the adapted Gemma takes about twice a 25-position one), and most answers are one line of about ten tokens
that a 32-slot hole mostly fills with [MASK]s. So a walk's decoder passes (VerifiedWalk.run) see the
canvas as it would be with a hole of `start` slots: the lead, the first `start` hole slots and the suffix head
right after them, at consecutive positions, exactly the layout of a canvas built with that hole (the model was
trained on holes of 8, 16 and 32 slots, its model card). Once the walk's first open slot comes within `MARGIN`
slots of that hole's end, the passes see the whole hole, as without this. The base model's passes always read
the real canvas: the hole's slots keep their positions, only the suffix head's move.

Slots outside the decoder's hole get the pad as their argmax and nothing else: no draft, and a walk that reaches
one before it widens (one step's extra slot) stops its step there.
"""

from __future__ import annotations

import torch

from .canvas import BANNED, InfillCanvas

MARGIN = 4  # the hole widens once fewer than this many of its slots are left open


class ActiveHole:
    def __init__(self, canvas: InfillCanvas, start: int, runner):
        self.runner = runner
        self.lead = canvas.lead
        self.hole = max(canvas.hole_lengths)
        self.length = canvas.length
        self.slots = min(max(1, int(start)), self.hole)
        self.valid = canvas.valid
        self.pinned = canvas.pinned
        self.breaks = canvas.break_columns

    @classmethod
    def of(cls, canvas: InfillCanvas, start: int | None, runner) -> "ActiveHole | None":
        """A narrower view for a one-row pad-fill canvas whose hole is more than `start` slots, for a runner that ends
        a hole with its pad (`pad_column`); else None."""
        if (not start or canvas.batch_size != 1 or max(canvas.hole_lengths) <= start + MARGIN
                or getattr(runner, "pad_column", None) is None):
            return None
        return cls(canvas, start, runner)

    @property
    def whole(self) -> bool:
        return self.slots >= self.hole

    def widen_for(self, front: int) -> None:
        """Widen to the whole hole where the walk's first open canvas position `front` is within MARGIN of the end."""
        if front + MARGIN > self.lead + self.slots:
            self.slots = self.hole

    def columns(self) -> torch.LongTensor:
        """The canvas positions the decoder sees: lead, the hole's first `slots`, then what follows the hole."""
        end = self.lead + self.slots
        return torch.cat([torch.arange(end), torch.arange(self.lead + self.hole, self.length)])

    def open(self) -> torch.BoolTensor:
        """[1, L] False on the hole slots the decoder does not see (no draft there), True elsewhere."""
        inside = torch.ones(1, self.length, dtype=torch.bool)
        inside[:, self.lead + self.slots:self.lead + self.hole] = False
        return inside

    def ends_mid_line(self, raw: torch.Tensor, ids: torch.LongTensor, kept: torch.BoolTensor, slots: list[int]) -> bool:
        """Whether a narrowed pass's logits `raw` [1, L, V] put the pad (the hole's end) at the walk's first open slot
        while the kept text does not end a line (no kept hole token, or the last one holds no line break): then the
        view widens to the whole hole and the caller runs the pass again. A hole that looks short can make the decoder
        end a line too early (`if i %` for `if i % j == 0:`); where the line is done, the narrowed pass decides."""
        front = next((i for i, p in enumerate(slots) if not bool(kept[0, p])), None)
        if front is None or int(raw[0, slots[front]].argmax()) != self.runner.pad_column:
            return False
        column = self.runner.column_of(int(ids[0, slots[front - 1]])) if front > 0 else None
        if column is not None and self.breaks is not None and bool(self.breaks[column]):
            return False
        self.slots = self.hole
        return True

    def decode(self, ids: torch.LongTensor, cache, positions: torch.LongTensor, pinned_kw: bool) -> torch.Tensor:
        """A decoder pass over the narrowed canvas, as logits [1, L, V] over the whole canvas: the slots it leaves out
        hold the pad (every other column BANNED)."""
        runner = self.runner
        cols = self.columns()
        dev = runner.device
        mask = runner.decoder_mask(cache, self.valid[:, cols])
        layout = {"pinned": self.pinned[:, cols].to(dev)} if pinned_kw else {}
        raw = runner.decode(ids[:, cols.to(ids.device)], cache, positions[:, :len(cols)], None, mask, **layout)
        out = torch.full((raw.shape[0], self.length, raw.shape[-1]), BANNED, dtype=raw.dtype, device=raw.device)
        out[..., runner.pad_column] = 0.0
        out[:, cols.to(raw.device)] = raw
        return out
