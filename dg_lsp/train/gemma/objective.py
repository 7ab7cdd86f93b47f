"""The adaptation objective: many infill canvases per encoder pass, absorbing-mask noise, shifted rows.

One chunk of a file is encoded once by the frozen base model (no gradient). Each hole drawn from it becomes a
canvas `[lead][hole: K slots][suffix head]`:
- `lead` is the prompt's last token (its key is taken out of the cache view, the canvas recomputes it);
- the K slots hold the healed middle followed by pads (K in 8/16/32, never less than the middle + 1);
- the suffix head is pinned, clean.
Canvas row j predicts slot j+1 (the autoregressive shift, as Dream and DiffuLLaMA keep it), so the lead row
starts out as the base model's next-token prediction. Slots are replaced by `<mask>` with probability t,
t stratified over the batch and biased towards high noise. With `ltr` > 0, that share of the canvases is noised
the way left-to-right decoding (InfillSpec.unmask_order) meets them: the first slots clean, every slot from a cut
on masked, the cut placed so that a share t of the scored slots is masked. The loss is cross-entropy over masked
slots up to and including the first pad (after it the engine forces pads), on the restricted output vocabulary.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from .data import Hole

BUCKETS = (8, 16, 32)


@dataclass
class CanvasBatch:
    ids: torch.LongTensor  # [M, W] decoder inputs (noised)
    positions: torch.LongTensor  # [M, W]
    masks: dict  # {kind: [M, 1, W, N + W]} bool
    rows: torch.LongTensor  # [S] flat indices (m * W + r) of the rows whose output is scored
    targets: torch.LongTensor  # [S] restricted-vocabulary targets
    noise: torch.Tensor  # [S] the noise level of each scored row's canvas
    kinds: list[str]  # [S]
    slot: torch.LongTensor  # [S] 1-based slot index of each target
    clean_ids: torch.LongTensor  # [M, W] the canvases un-noised (the AR teacher's input)
    frontier: torch.BoolTensor  # [S] the canvas's first masked slot: everything left of it is clean
    pinned: torch.BoolTensor | None = None  # [M, W] the suffix head's positions (the adapter's suffix gate)
    ltr: torch.BoolTensor | None = None  # [S] the row's canvas was masked from a cut on (left-to-right decoding's)
    teacher: torch.Tensor | None = None  # [M, W, H] the base model's causal pass over clean_ids, once (trainer)

    def to(self, device) -> "CanvasBatch":
        """The batch with every tensor on `device` (it is built on the CPU)."""
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in vars(self).items()}
        moved["masks"] = {k: v.to(device) for k, v in self.masks.items()}
        return CanvasBatch(**moved)


def to_vocab(ids: list[int], in_vocab: set[int], byte_ids_of) -> list[int]:
    """Replace ids outside the output vocabulary by their UTF-8 byte tokens (so every hole can be written)."""
    out: list[int] = []
    for t in ids:
        out += [t] if t in in_vocab else byte_ids_of(t)
    return out


def build(holes: list[Hole], n_cached: int, layer_kinds: set[str], mask_id: int, pad_id: int, vocab_rows,
          rng: random.Random, pad_extra: float = 0.5, noise: float | None = None, ltr: float = 0.0) -> CanvasBatch:
    """`noise`: one fixed level for every canvas (1.0: fully masked, the first denoising step). `ltr`: the share
    of canvases masked from a cut to the end (left-to-right decoding's canvases) instead of at random."""
    m = len(holes)
    us = [(i + rng.random()) / m for i in range(m)]
    rng.shuffle(us)
    rows_spec = []
    for h, u in zip(holes, us):
        t = noise if noise is not None else min(1.0, max(0.05, u ** 0.5))
        n = len(h.hole_ids)
        fit = [k for k in BUCKETS if k >= n + 1]
        k = fit[0] if rng.random() >= pad_extra else rng.choice(fit)
        slots = h.hole_ids + [pad_id] * (k - n)
        scored = n + 1  # slots 1..n+1 (the first pad included)
        cut = scored + 1 - max(1, round(t * scored)) if ltr > 0 and rng.random() < ltr else None
        inp = []
        masked = []
        for j, tok in enumerate(slots, start=1):
            is_masked = j >= cut if cut is not None else (t >= 1.0 or rng.random() < t)
            if j <= scored:
                inp.append(mask_id if is_masked else tok)
                if is_masked:
                    masked.append(j)
            else:
                inp.append(mask_id if is_masked else pad_id)
        if not masked:
            j = rng.randint(1, scored)
            inp[j - 1] = mask_id
            masked.append(j)
        ids = [h.prompt_ids[-1]] + inp + h.head_ids
        clean = [h.prompt_ids[-1]] + slots + h.head_ids
        rows_spec.append((h, t, ids, slots, masked, clean, cut is not None))
    width = max(len(r[2]) for r in rows_spec)
    ids = torch.full((m, width), pad_id, dtype=torch.long)
    clean_ids = torch.full((m, width), pad_id, dtype=torch.long)
    positions = torch.zeros((m, width), dtype=torch.long)
    pinned = torch.zeros((m, width), dtype=torch.bool)
    mask = torch.zeros((m, 1, width, n_cached + width), dtype=torch.bool)
    flat_rows, targets, noise, kinds, slot_idx, frontier, ltr_rows = [], [], [], [], [], [], []
    for i, (h, t, row_ids, slots, masked, clean, from_cut) in enumerate(rows_spec):
        w = len(row_ids)
        ids[i, :w] = torch.tensor(row_ids)
        clean_ids[i, :w] = torch.tensor(clean)
        pinned[i, w - len(h.head_ids):w] = True
        start = len(h.prompt_ids) - 1  # the lead's position
        positions[i] = torch.arange(start, start + width)
        mask[i, 0, :, :start] = True  # cached keys before the lead
        mask[i, 0, :, n_cached:n_cached + w] = True  # the canvas's own valid keys
        for j in masked:
            flat_rows.append(i * width + (j - 1))
            targets.append(slots[j - 1])
            noise.append(t)
            kinds.append(h.kind)
            slot_idx.append(j)
            frontier.append(j == masked[0])
            ltr_rows.append(from_cut)
    tgt = vocab_rows(torch.tensor(targets, dtype=torch.long))
    return CanvasBatch(ids, positions, {k: mask for k in layer_kinds}, torch.tensor(flat_rows), tgt,
                       torch.tensor(noise), kinds, torch.tensor(slot_idx), clean_ids, torch.tensor(frontier), pinned,
                       torch.tensor(ltr_rows, dtype=torch.bool))
