"""Train the draft-chain head (dg_lsp/engine/gemma3/chain.py) with everything else frozen, and ship it in a model dir.

    python -m dg_lsp.train.gemma.chain ROWS.pt [ROWS.pt ...] --out DIR [--model DIR] [--hidden 256] [--epochs 4]
        [--depth 1] [--eval HUMANEVAL_ROWS.pt]

ROWS come from `python -m dg_lsp.bench.diagnostics.drafts --corpus train --save-rows ROWS.pt`: per position f of the
base model's greedy line on a hole mined from the adapter's training corpus (never the held-out packages), the
decoder's hidden states at the rows that draft f and f + 1, and the greedy tokens at f and f + 1 (token ids). The
head learns the greedy token at f + 1 (cross-entropy through the decoder's output and end heads) from those states
and the greedy token at f. A tenth of the rows' holes (by hole) is held back; the epoch that agrees best there is
kept. `--eval` scores the kept head on other saved rows (HumanEval's), read only after training: no choice is made
on them.

--out gets the model directory (`--model`, default the embedded one) with `chain.safetensors` added and dg_lsp.json's
"chain" entry set; its other files are copied unchanged. `--out` the model directory itself adds the head in place.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import torch
from torch import nn

from dg_lsp.engine.gemma3 import adapter as A
from dg_lsp.engine.gemma3.chain import ChainHead
from dg_lsp.engine.spec import SPEC_FILE

BATCH = 64


def load_rows(paths: list[str], runner) -> dict[str, torch.Tensor]:
    """The rows of `paths`, those whose f and f + 1 greedy tokens are output columns: h_prev, h_mask (float32), g0
    (token ids), target (g1's column), d0, d1 (ids) and family."""
    parts = [torch.load(p, weights_only=True) for p in paths]
    rows = {k: torch.cat([x[k] for x in parts]) for k in ("h_prev", "h_mask", "g0", "g1", "d0", "d1", "family")}
    index = runner.output_vocab.index.cpu()
    ok = (rows["g1"] >= 0) & (rows["g0"] >= 0) & (rows["d0"] >= 0)
    ok &= index[rows["g1"].clamp(min=0)] >= 0
    rows = {k: v[ok] for k, v in rows.items()}
    rows["target"] = index[rows["g1"]]
    rows["h_prev"], rows["h_mask"] = rows["h_prev"].float(), rows["h_mask"].float()
    return rows


def chain_logits(runner, head: ChainHead, rows: dict, idx: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    table = A.text_model(runner.model).embed_tokens
    with torch.no_grad():
        feats = ChainHead.token_features(table, tokens[idx])
    hidden = head(rows["h_prev"][idx], rows["h_mask"][idx], feats)
    return A.decoder_logits(runner.adapter, hidden, runner._head.detach().float(), runner.pad_column)


def agreement(runner, head: ChainHead, rows: dict, idx: torch.Tensor, tokens: torch.Tensor) -> float:
    """How often the head's f + 1 argmax is the greedy token, over rows `idx`, given f's `tokens`."""
    right = 0
    with torch.no_grad():
        for s in range(0, len(idx), 512):
            part = idx[s:s + 512]
            right += int((chain_logits(runner, head, rows, part, tokens).argmax(-1) == rows["target"][part]).sum())
    return 100.0 * right / max(1, len(idx))


def train(runner, rows: dict, hidden: int, epochs: int, depth: int, lr: float, seed: int, log=print) -> tuple:
    """(the head of the best held-back epoch, figures)."""
    torch.manual_seed(seed)
    held = rows["family"] % 10 == 0
    fit, back = (~held).nonzero().flatten(), held.nonzero().flatten()
    head = ChainHead(rows["h_mask"].shape[-1], hidden, depth)
    opt = torch.optim.AdamW(head.parameters(), lr=lr, weight_decay=0.05)
    own = 100.0 * float((rows["d1"][back] == rows["g1"][back]).float().mean()) if len(back) else None
    best = (agreement(runner, head, rows, back, rows["g0"]), 0, {k: v.clone() for k, v in head.state_dict().items()})
    log(f"rows: {len(fit)} fitted, {len(back)} held back; held back f + 1: decoder {own:.1f}%, untrained head "
        f"{best[0]:.1f}%")
    for epoch in range(1, epochs + 1):
        order = fit[torch.randperm(len(fit))]
        for s in range(0, len(order), BATCH):
            idx = order[s:s + BATCH]
            loss = nn.functional.cross_entropy(chain_logits(runner, head, rows, idx, rows["g0"]), rows["target"][idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        score = agreement(runner, head, rows, back, rows["g0"])
        log(f"epoch {epoch}: held back f + 1 {score:.1f}% (last loss {loss.item():.3f})")
        if score > best[0]:
            best = (score, epoch, {k: v.clone() for k, v in head.state_dict().items()})
    head.load_state_dict(best[2])
    figures = {"rows_fitted": len(fit), "rows_held_back": len(back), "decoder_f+1_held_back": round(own, 1),
               "chain_f+1_held_back": round(best[0], 1), "epoch": best[1], "hidden": hidden, "depth": depth}
    return head.eval(), figures


def evaluate(runner, head: ChainHead, rows: dict) -> dict:
    """The kept head on other rows: f + 1 agreement from the decoder's own f draft, all rows and where it was right."""
    every = torch.arange(len(rows["target"]))
    right_f = (rows["d0"] == rows["g0"]).nonzero().flatten()

    def own(idx):
        return round(100.0 * float((rows["d1"][idx] == rows["g1"][idx]).float().mean()), 1)

    return {"rows": len(every), "decoder_f+1": own(every), "chain_f+1": round(agreement(runner, head, rows, every,
            rows["d0"]), 1), "decoder_f+1_where_f_right": own(right_f),
            "chain_f+1_where_f_right": round(agreement(runner, head, rows, right_f, rows["d0"]), 1)}


CARD_SECTION = "## Draft-chain head"


def card_section(figures: dict, sources: list[str]) -> str:
    """The model card's section on the head: what it is, how it was trained, what it measured."""
    ev = figures.get("eval")
    lines = [CARD_SECTION, "",
             f"`chain.safetensors` (engine/gemma3/chain.py): an MLP of {figures['hidden']} hidden units on the "
             "decoder's hidden states at the rows that draft a walk's first open slot f and f + 1 and the embedding of f's "
             "draft; the walk adds its change to the decoder's logits at f + 1"
             + (f" and, applied again, up to f + {figures['depth']}" if figures["depth"] > 1 else "") + ". "
             "It only drafts: the base model still keeps every token. Trained with the adapter frozen, "
             "`python -m dg_lsp.train.gemma.chain`, on "
             f"{figures['rows_fitted']:,} positions of the base model's greedy lines on holes mined from the training "
             f"corpus above ({', '.join(Path(p).name for p in sources)}); epoch {figures['epoch']} kept, by "
             f"{figures['rows_held_back']:,} held-back positions. There, f + 1 is the base model's greedy token "
             f"{figures['chain_f+1_held_back']}% of the time against {figures['decoder_f+1_held_back']}% for the "
             "decoder's own draft."]
    if ev:
        lines[-1] += (f" On HumanEval single-line rows (never trained or chosen on): {ev['chain_f+1']}% against "
                      f"{ev['decoder_f+1']}%, and {ev['chain_f+1_where_f_right']}% against "
                      f"{ev['decoder_f+1_where_f_right']}% where the decoder's f was right.")
    lines.append("A head belongs to the adapter whose hidden states it read: a new adapter needs a new head.")
    return "\n".join(lines) + "\n"


def ship(model_dir: Path, out: Path, head: ChainHead, card: str | None = None) -> None:
    """`out` := `model_dir` plus the head (chain.safetensors, dg_lsp.json's "chain") and, given `card`, that section in
    its MODEL.md (replacing an earlier one)."""
    if out.resolve() != model_dir.resolve():
        if out.exists():
            raise SystemExit(f"{out} exists; give a new directory or the model directory itself")
        shutil.copytree(model_dir, out)
    meta = json.loads((out / SPEC_FILE).read_text(encoding="utf-8"))
    meta["chain"] = head.save(out)
    (out / SPEC_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    readme = out / "MODEL.md"
    if card is not None and readme.is_file():
        text = readme.read_text(encoding="utf-8")
        if CARD_SECTION in text:  # the earlier section runs to the next section or the end
            start = text.index(CARD_SECTION)
            end = text.find("\n## ", start + len(CARD_SECTION))
            text = text[:start] + (text[end + 1:] if end >= 0 else "")
        readme.write_text(text.rstrip("\n") + "\n\n" + card, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.train.gemma.chain", description=__doc__.split("\n")[0])
    ap.add_argument("rows", nargs="+", help="training rows (drafts --corpus train --save-rows)")
    ap.add_argument("--out", required=True, help="the model directory to write (copy of --model plus the head)")
    ap.add_argument("--model", default=None, help="model directory (default: the embedded adapted Gemma)")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--depth", type=int, default=1, help="slots right of f the walk redrafts with the head")
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval", default=None, help="rows to score the kept head on (HumanEval's), after training")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    from dg_lsp.engine import Engine
    from dg_lsp.engine.loader import resolve_model_path

    model_dir = Path(resolve_model_path(args.model))
    engine = Engine.load(str(model_dir), device="cpu", dtype="float32")
    runner = engine.runner
    try:
        rows = load_rows(args.rows, runner)
        head, figures = train(runner, rows, args.hidden, args.epochs, args.depth, args.lr, args.seed,
                              log=lambda m: print(m, file=sys.stderr, flush=True))
        if args.eval:
            figures["eval"] = evaluate(runner, head, load_rows([args.eval], runner))
        ship(model_dir, Path(args.out), head, card_section(figures, args.rows))
    finally:
        engine.close()
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
