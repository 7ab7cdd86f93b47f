"""Gate probe: how well does an adapted Gemma's decoder predict held-out holes, read left to right, as its gates open?

`python -m dg_lsp.bench.diagnostics.gate_probe [N] [--model DIR]`

A diagnostic, not a benchmark of the product. It draws N held-out holes (the packages and stdlib modules the trainer
never sees), builds left-to-right canvases as the trainer does (`objective.build(ltr=1.0)`: clean slots, then
masks from a cut), and prints the cross-entropy on the frontier slot (the first masked one, whose left context is
clean), on every masked slot, and on the frontier slot when its target is the hole's end (the first pad), and the
mean probability the decoder gives the end on frontier slots where the hole goes on (a premature end). It prints
one row per gate setting: the adapter as trained; with the future `<mask>` keys kept out by a mask gate (-1e4); and
with that mask gate and the canvas gate (over the suffix head) set to -4, -2, -1 and 0, without training
(`--as-trained`: the first row only). Results in docs/results/gemma-adaptation.md (sixth session).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.gate_probe")
    p.add_argument("n", nargs="?", type=int, default=40, help="held-out holes to score")
    p.add_argument("--model", default=str(Path(__file__).resolve().parents[2] / "model" / "gemma"))
    p.add_argument("--as-trained", action="store_true", help="only the adapter's own gates")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    from transformers import DynamicCache

    from ...engine.gemma3 import adapter as A
    from ...engine.gemma3 import cache_view as C
    from ...engine.gemma3.build import build
    from ...train.gemma import data, objective
    from ...train.gemma.trainer import Options, Run

    meta = json.loads((Path(a.model) / "dg_lsp.json").read_text())
    run = Run(Options(base=str(build(meta["base"])), out=tempfile.mkdtemp(), init_from=a.model,
                      rank=int(meta["adapter"]["rank"]), alpha=float(meta["adapter"]["alpha"])))
    maker = data.HoleMaker(run.tok, data.collect("heldout"), 256, head_tokens=8, seed=321)
    chunks = []
    while sum(len(h) for _, h in chunks) < a.n:
        ids, holes = maker.holes(6)
        holes = [h for h in (run.remap(h) for h in holes) if len(h.hole_ids) <= objective.BUCKETS[-1] - 1]
        if holes:
            chunks.append((ids, holes))
    head = run.vocab.head_weight(A.text_model(run.model).embed_tokens.weight)
    trained = run.adapter.future_bias.detach().clone()
    trained_mask = run.adapter.mask_bias
    configs = [("as trained", "trained", None)]
    if trained_mask is None:
        configs.append(("mask gate -1e4, canvas gate as trained", -1e4, None))
    configs += [(f"mask gate -1e4, canvas gate {g}", -1e4, g) for g in (-4.0, -2.0, -1.0, 0.0)]

    @torch.no_grad()
    def score():
        rng = random.Random(7)
        sums = {"front": [0.0, 0], "all": [0.0, 0], "end": [0.0, 0], "early": [0.0, 0]}
        for ids, holes in chunks:
            cache = DynamicCache(config=run.cfg)
            A.encoder_pass(run.model, torch.tensor([ids]), cache)
            ro = C.ReadOnlyCache.of(cache, batch=len(holes))
            b = objective.build(holes, len(ids), run.layer_kinds, run.mask_id, run.pad_id, run.vocab.to_rows, rng,
                                ltr=1.0)
            hidden = A.decoder_hidden(run.model, run.adapter, b.ids, b.positions, ro, b.masks, b.pinned)
            flat = hidden.reshape(-1, hidden.shape[-1]).index_select(0, b.rows)
            logits = A.decoder_logits(run.adapter, flat, head, run.pad_row)
            loss = F.cross_entropy(logits, b.targets, reduction="none")
            goes_on = b.frontier & (b.targets != run.pad_row)
            sums["early"][0] += logits[goes_on].softmax(-1)[:, run.pad_row].sum().item()
            sums["early"][1] += int(goes_on.sum())
            for key, sel in (("front", b.frontier), ("all", torch.ones_like(b.frontier)),
                             ("end", b.frontier & (b.targets == run.pad_row))):
                sums[key][0] += loss[sel].sum().item()
                sums[key][1] += int(sel.sum())
        return {k: (s / n if n else float("nan"), n) for k, (s, n) in sums.items()}

    print(f"{'gates':40s} {'frontier CE':>12s} {'all masked CE':>14s} {'hole-end CE':>12s} {'p(end) early':>13s}"
          "  (frontier slots, hole ends)")
    for name, mask_gate, canvas_gate in configs[:1] if a.as_trained else configs:
        ad = run.adapter
        if mask_gate == "trained":
            ad.mask_bias = trained_mask
        else:
            ad.mask_bias = torch.nn.Parameter(torch.full_like(trained, mask_gate), requires_grad=False)
        ad.future_bias.data.copy_(trained if canvas_gate is None else torch.full_like(trained, canvas_gate))
        s = score()
        print(f"{name:40s} {s['front'][0]:12.3f} {s['all'][0]:14.3f} {s['end'][0]:12.3f} {s['early'][0]:13.4f}  "
              f"({s['front'][1]}, {s['end'][1]})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
