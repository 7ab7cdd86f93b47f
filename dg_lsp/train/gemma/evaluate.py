"""Quick in-training evaluation: greedy diffusion infill on a seeded sample of HumanEval single-line holes
(exact match of the inserted line), and the first step's loss on held-out holes (fully masked canvases).

A progress signal for the run log, not the benchmark: `dg-lsp bench humaneval` scores what the editor gets.
"""

from __future__ import annotations

import random
import time

import torch
import torch.nn.functional as F

from ...engine import healing
from ...engine.gemma3 import adapter as A
from ...engine.gemma3 import cache_view as C
from . import data, objective

HOLE_SLOTS = 32


def _cached(run, prompt_ids):
    from transformers import DynamicCache

    cache = DynamicCache(config=run.cfg)
    A.encoder_pass(run.model, torch.tensor([prompt_ids]), cache)
    return C.ReadOnlyCache.of(cache)


@torch.no_grad()
def greedy_infill(run, prefix: str, suffix: str, max_steps: int = 8, accept: float = 0.9,
                  order: str = "left_to_right") -> tuple[str, int]:
    """Greedy unmasking of a 32-slot pad-fill hole: each step fills the open slots at least `accept` sure, and the
    surest one if none is; with `order` "left_to_right" only the leftmost open slots, from the first one on, as
    far as they are sure (the first one always). Returns (answer text, steps)."""
    tok = run.tok
    tail = healing.healing_tail(prefix)
    prompt = [tok.bos_token_id] + tok.encode(prefix[:len(prefix) - len(tail)], add_special_tokens=False)
    head = tok.encode(healing.split_suffix(suffix, tail)[1], add_special_tokens=False)[:run.opts.head_tokens]
    ro = _cached(run, prompt[:-1])
    n_cached = len(prompt) - 1
    ids = torch.tensor([[prompt[-1]] + [run.mask_id] * HOLE_SLOTS + head])
    width = ids.shape[1]
    pos = torch.arange(n_cached, n_cached + width)[None]
    masks = C.open_masks(ro, run.cfg.layer_types, 1, width)
    pinned = torch.zeros(1, width, dtype=torch.bool)
    pinned[0, 1 + HOLE_SLOTS:] = True  # the suffix head
    w = run.vocab.head_weight(A.text_model(run.model).embed_tokens.weight)
    vocab_ids = run.vocab.ids
    steps = 0
    for steps in range(1, max_steps + 1):
        hidden = A.decoder_hidden(run.model, run.adapter, ids, pos, ro, masks, pinned)
        probs = A.decoder_logits(run.adapter, hidden[0, :HOLE_SLOTS], w, run.pad_row).softmax(-1)  # row j -> j+1
        conf, arg = probs.max(-1)
        slots = ids[0, 1:1 + HOLE_SLOTS]
        is_pad = slots == run.pad_id
        if bool(is_pad.any()):  # after an accepted pad, everything is pad
            first = int(is_pad.nonzero()[0, 0])
            slots[first:] = run.pad_id
        open_ = slots == run.mask_id
        if not bool(open_.any()):
            break
        conf = torch.where(open_, conf, torch.full_like(conf, -1.0))
        take = open_ & (conf >= accept)
        if order == "left_to_right":
            first = int(open_.nonzero()[0, 0])
            run_ = (open_ & take).int()
            run_[first] = 1
            take = torch.zeros_like(open_)
            take[first:] = torch.cumprod(run_[first:], dim=0).bool()
        if not bool(take.any()):
            take = torch.zeros_like(open_)
            take[int(conf.argmax())] = True
        slots[take] = vocab_ids[arg[take]]
        ids[0, 1:1 + HOLE_SLOTS] = slots
    out = []
    for t in ids[0, 1:1 + HOLE_SLOTS].tolist():
        if t in (run.pad_id, run.mask_id):
            break
        out.append(t)
    text = tok.decode(out)
    healed = healing.unheal(text, tail)
    return ("" if healed is None else healed), steps


@torch.no_grad()
def heldout_loss(run, n: int = 32) -> float:
    maker = data.HoleMaker(run.tok, run.heldout_files, run.opts.chunk_tokens, head_tokens=run.opts.head_tokens,
                           seed=123)
    rng = random.Random(5)
    total, count, tokens = 0.0, 0, 0
    from transformers import DynamicCache

    while count < n:
        ids, holes = maker.holes(6)
        holes = [h for h in (run.remap(h) for h in holes) if len(h.hole_ids) <= objective.BUCKETS[-1] - 1]
        if not holes:
            continue
        cache = DynamicCache(config=run.cfg)
        A.encoder_pass(run.model, torch.tensor([ids]), cache)
        ro = C.ReadOnlyCache.of(cache, batch=len(holes))
        batch = objective.build(holes, len(ids), run.layer_kinds, run.mask_id, run.pad_id, run.vocab.to_rows, rng,
                                noise=1.0)  # fully masked: the first denoising step
        hidden = A.decoder_hidden(run.model, run.adapter, batch.ids, batch.positions, ro, batch.masks, batch.pinned)
        flat = hidden.reshape(-1, hidden.shape[-1]).index_select(0, batch.rows)
        logits = A.decoder_logits(run.adapter, flat, run.vocab.head_weight(A.text_model(run.model).embed_tokens.weight),
                                  run.pad_row)
        total += F.cross_entropy(logits, batch.targets, reduction="sum").item()
        count += len(holes)
        tokens += len(batch.targets)
    return total / max(1, tokens)


def evaluate(run, n_humaneval: int | None = None) -> dict:
    from ...bench.quality.tasks import load_humaneval, subsample

    t0 = time.monotonic()
    tasks = subsample(load_humaneval("single-line"), n_humaneval or run.opts.eval_problems, seed=0)
    em, steps = 0, 0
    for task in tasks:
        text, s = greedy_infill(run, task.prefix, task.suffix, order=run.opts.eval_order)
        em += int(text.strip() == task.middle.strip())
        steps += s
    out = {"step": run.state["step"], "order": run.opts.eval_order, "he_em": em / len(tasks),
           "he_mean_steps": steps / len(tasks),
           "heldout_loss": heldout_loss(run), "eval_s": time.monotonic() - t0,
           "cpu_hours": run.state["cpu_seconds"] / 3600}
    return out
