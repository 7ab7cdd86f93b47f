"""Held-out metrics used during training and for the noise-kind A/B.

- `heldout_loss`: diffusion CE (t ~ U, no self-conditioning) and encoder next-token CE on
  batches from the held-out packages, mixed hole kinds.
- `line_acc_t1`: single whole-line holes (line start, one line incl. its newline), canvas fully
  noised; one decoder step, argmax; accuracy on middle tokens and on the pad tail.
- `line_em`: the same holes decoded in `steps` steps (commit the most confident positions,
  re-noise the rest, self-conditioning on), exact match of the whole hole region.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..engine.modelgen import MASK_ID, PAD_ID
from .canvas import HOLE_KINDS, HOLE_PROBS, IGNORE, CanvasSampler
from .objective import canvas_mask, canvas_positions, decode, encode, softcapped_logits, to_tensors

SINGLE_LINE = tuple(1.0 if k == "whole_lines" else 0.0 for k in HOLE_KINDS)


@torch.no_grad()
def heldout_loss(model, sampler: CanvasSampler, n_batches: int, batch_size: int) -> dict[str, float]:
    diff, ar = [], []
    for i in range(n_batches):
        t = to_tensors(sampler.batch(10_000_000 + i, batch_size, HOLE_PROBS))
        hidden, cache = encode(model, t["enc_ids"])
        ar.append(F.cross_entropy(softcapped_logits(model, hidden).flatten(0, 1), t["ar_targets"].flatten(),
                                  ignore_index=IGNORE).item())
        logits = decode(model, cache, t["canvas_ids"], canvas_mask(t["canvas_starts"], t["enc_ids"].shape[1],
                        sampler.L), canvas_positions(t["canvas_starts"], sampler.L))
        diff.append(F.cross_entropy(logits.flatten(0, 1), t["canvas_targets"].flatten(),
                                    ignore_index=IGNORE).item())
    return {"heldout_diff_loss": float(np.mean(diff)), "heldout_ar_loss": float(np.mean(ar))}


def _noise(ids, where, sampler, gen):
    if sampler.noise_kind == "mask":
        return torch.where(where, torch.full_like(ids, MASK_ID), ids)
    rand = torch.randint(0, sampler.vocab_size, ids.shape, generator=gen)
    return torch.where(where, rand, ids)


@torch.no_grad()
def line_infill(model, sampler: CanvasSampler, n_batches: int, batch_size: int, steps: int = 8) -> dict[str, float]:
    """Single-line infill from a fully noised hole: one-step accuracy and multi-step exact match."""
    gen = torch.Generator().manual_seed(1234)
    mid_hit = mid_n = pad_hit = pad_n = em = n_holes = fin_mid = fin_pad = 0
    old_multi, sampler.multi_line_prob = getattr(sampler, "multi_line_prob", 0.3), 0.0
    try:
        for i in range(n_batches):
            batch = sampler.batch(20_000_000 + i, batch_size, SINGLE_LINE)
            t = to_tensors(batch)
            target = t["canvas_targets"]
            sup = target != IGNORE
            clean = torch.where(sup, target, t["canvas_ids"])
            hidden, cache = encode(model, t["enc_ids"])
            mask = canvas_mask(t["canvas_starts"], t["enc_ids"].shape[1], sampler.L)
            pos = canvas_positions(t["canvas_starts"], sampler.L)
            ids = _noise(clean, sup, sampler, gen)
            logits = decode(model, cache, ids, mask, pos)
            pred = logits.argmax(-1)
            is_mid = sup & (target != PAD_ID)
            is_pad = sup & (target == PAD_ID)
            mid_hit += int((pred == target)[is_mid].sum()); mid_n += int(is_mid.sum())
            pad_hit += int((pred == target)[is_pad].sum()); pad_n += int(is_pad.sum())
            final = _denoise(model, cache, clean, sup, mask, pos, sampler, gen, steps)
            B, CL = target.shape
            ok = ((final == target) | ~sup).view(B, -1, sampler.L).all(-1)
            has = sup.view(B, -1, sampler.L).any(-1)
            em += int((ok & has).sum()); n_holes += int(has.sum())
            fin_mid += int((final == target)[is_mid].sum()); fin_pad += int((final == target)[is_pad].sum())
    finally:
        sampler.multi_line_prob = old_multi
    return {"line_acc_t1": mid_hit / max(1, mid_n), "pad_acc_t1": pad_hit / max(1, pad_n),
            f"line_acc_{steps}steps": fin_mid / max(1, mid_n), f"pad_acc_{steps}steps": fin_pad / max(1, pad_n),
            f"line_em_{steps}steps": em / max(1, n_holes), "line_holes": n_holes}


def _denoise(model, cache, clean, sup, mask, pos, sampler, gen, steps):
    """Confidence-ordered decoding: each step commits the most confident ~1/steps of the hole."""
    L = sampler.L
    committed = ~sup
    ids = _noise(clean, sup, sampler, gen)
    sc = None
    total = sup.view(-1, L).sum(-1, keepdim=True)  # [B*C, 1]
    for step in range(steps):
        logits = decode(model, cache, ids, mask, pos, sc, None)
        sc = logits
        conf, pred = logits.softmax(-1).max(-1)
        conf = conf.masked_fill(committed, -1.0).view(-1, L)
        done = (committed & sup).view(-1, L).sum(-1, keepdim=True)
        quota = torch.ceil(total * (step + 1) / steps).long() - done
        rank = conf.argsort(-1, descending=True).argsort(-1)
        newly = ((rank < quota).view_as(ids)) & ~committed
        committed = committed | newly
        ids = torch.where(newly, pred, ids)
        ids = torch.where(committed, ids, _noise(clean, sup, sampler, gen))
    return ids
