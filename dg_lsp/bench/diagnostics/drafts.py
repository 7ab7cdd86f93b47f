"""How many tokens could an AR-verified walk keep per step? The decoder's drafts against what a drafter could reach.

    python -m dg_lsp.bench.diagnostics.drafts [--model DIR] [--split single-line] [--n 300] [--seed 0]
        [--ceiling-n 40] [--candidates 8] [--fit-chain] [--json OUT] [--corpus train] [--save-rows OUT.pt]

A diagnostic for issues 13 and 15, not a benchmark of the product. A verified walk (engine/verified.py) keeps, each
step, its first open slot f and then every slot whose draft the base model agrees with, plus one more; the decoder
drafted f with the kept text on its left, and f + 1, f + 2 beside [MASK]s. So the tokens a step keeps are set by how
often the drafts right of f are the base model's choice. For each task, along the base model's greedy line after the
prompt (what a walk with weight 0 keeps), this measures:

- `decoder`: for each slot f with a next one, one decoder pass over the canvas the walk's pass reads (the lead,
  g[:f] kept, [MASK]s from f, the suffix head; a 16-slot hole, the walk's narrowed view), and how often its argmax
  at f, f + 1 and f + 2 is the greedy token there;
- `ceiling` (the first `--ceiling-n` tasks): the same at f + 1 for the drafter that knows exactly what the base
  model knows: the argmax of sum_c p(c | g[:f]) p(. | g[:f], c) over the base model's `--candidates` best c at f.
  It sees no suffix, so a drafter that also reads the suffix can do better still;
- `--fit-chain`: a draft-chain head, fitted here and thrown away: the decoder's f + 1 logits recomputed from its
  hidden state at the [MASK] row plus a small MLP of (that state, the state that drafted f, the embedding of the
  token at f), trained on the greedy token at f (the decoder's own draft at f in evaluation), split by task
  family (HumanEval problem, so no problem's lines are on both sides). How far the decoder's hidden states already
  hold the f + 1 token once told the token at f.

`--corpus train` draws `--n` single-line holes from the adapter's training corpus (train/gemma/data.py `collect`,
never the held-out packages) instead of HumanEval, and `--save-rows` keeps every row (hidden states in float16,
tokens as ids: the output columns a prompt adds differ between processes) for fitting a chain head elsewhere:
training data for one, made with forward passes only.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zlib

import torch

LINE_TOKENS = 14  # a greedy line stops at its line break or here (the hole has 16 slots)
HOLE_SLOTS = 16


def last_logits(runner, cache, start: int, rows: list[list[int]]) -> torch.Tensor:
    """The base model's logits [B, V'] after each row (all of one length) of tokens fed after the prompt's cache."""
    from dg_lsp.engine.gemma3.cache_view import ReadOnlyCache

    ids = torch.tensor(rows, dtype=torch.long)
    pos = torch.arange(start, start + ids.shape[1]).unsqueeze(0).expand(len(rows), -1)
    return runner.head_logits(runner.base_hidden(ids, ReadOnlyCache.of(cache, batch=len(rows)), pos))[:, -1]


def greedy_line(runner, texts, cache, start: int, lead: list[int], limit: int = LINE_TOKENS,
                steps: list | None = None) -> list[int]:
    """The base model's greedy tokens after the prompt (cache) and the canvas `lead`: up to the first line break
    after some text, an end or special token, or `limit` tokens. `steps`, where given, gets each token's logits
    [V'] (those after lead + the tokens before it), for `mixture_next`."""
    out: list[int] = []
    written = ""
    for _ in range(limit):
        logits = last_logits(runner, cache, start, [lead + out])[0]
        if steps is not None:
            steps.append(logits)
        col = int(logits.argmax())
        out.append(int(runner.ids_of(torch.tensor([col]))[0]))
        if texts[col] is None or ("\n" in texts[col] and written.strip()):
            break
        written += texts[col]
    return out


def mixture_next(runner, cache, start: int, context: list[int], k: int, first: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """sum_c p(c | context) p(. | context, c) over the base model's `k` most likely next tokens c, renormalised over
    them: the best prediction of the token two to the right of `context` for a model that knows what the base model
    knows but not the token between. [V'] over the output columns. `first`: the base model's logits after `context`
    where the caller has them (greedy_line's `steps`)."""
    first = last_logits(runner, cache, start, [context])[0] if first is None else first
    p_first = torch.softmax(first, -1)
    top_p, top_cols = p_first.topk(min(k, p_first.shape[-1]))
    cands = runner.ids_of(top_cols).tolist()
    p_next = torch.softmax(last_logits(runner, cache, start, [context + [c] for c in cands]), -1)
    return (top_p.unsqueeze(-1) * p_next).sum(0) / top_p.sum()


def decoder_rows(runner, canvas, cache, line: list[int], mask_id: int) -> dict[str, list]:
    """One decoder pass per slot f of `line` with a next slot, over the canvas with line[:f] kept and [MASK]s from f
    (all in one batch): the decoder's argmax token ids at f, f + 1, f + 2 (-1 past the hole), and its hidden states
    at the rows that predict f (h_prev) and f + 1 (h_mask, the [MASK] at f)."""
    lead = canvas.lead
    hole = int((~canvas.pinned[0]).sum())
    n = min(len(line), hole) - 1
    out: dict[str, list] = {"d0": [], "d1": [], "d2": [], "h_prev": [], "h_mask": []}
    if n < 1:
        return out
    rows = []
    for f in range(n):
        row = canvas.canvas_ids[0].clone()
        row[lead:lead + hole] = mask_id
        row[lead:lead + f] = torch.tensor(line[:f], dtype=torch.long)
        rows.append(row)
    ids = torch.stack(rows)
    mask = runner.decoder_mask(cache, canvas.valid.expand(n, -1))
    logits, hidden = runner.decode_with_hidden(ids, cache, canvas.position_ids(), mask, canvas.pinned.expand(n, -1))
    best = runner.ids_of(logits.argmax(-1))  # [n, W] position j's argmax token (row j - 1's)
    for f in range(n):
        p = lead + f
        for j, key in enumerate(("d0", "d1", "d2")):
            out[key].append(int(best[f, p + j]) if f + j < hole else -1)
        out["h_prev"].append(hidden[f, p - 1].float().clone())
        out["h_mask"].append(hidden[f, p].float().clone())
    return out


def family(task_id: str) -> int:
    """A task's family for the chain head's split: the HumanEval problem number, else a hash of the id."""
    m = re.search(r"HumanEval/(\d+)", task_id)
    return int(m.group(1)) if m else zlib.crc32(task_id.encode())


@torch.inference_mode()
def collect(engine, tasks, ceiling_n: int, k: int, log=None) -> dict:
    """Per task: the greedy line, the decoder's drafts and hidden states along it, and (first `ceiling_n` tasks) the
    ceiling's agreement at each f + 1."""
    from dg_lsp.engine.types import DenoiseParams, InfillRequest

    lc, runner = engine.lifecycle, engine.runner
    mask_id = int(engine.loop.mask_id)
    rec: dict[str, list] = {"d0": [], "d1": [], "d2": [], "h_prev": [], "h_mask": [], "g0": [], "g1": [], "g2": [],
                            "family": [], "ceiling": []}
    for i, task in enumerate(tasks):
        request = InfillRequest(prefix=task.prefix, suffix=task.suffix, params=DenoiseParams(verify_weight=1.0),
                                reuse_prefix=False, hole_slots=HOLE_SLOTS)
        started = lc.start(request)
        texts = lc.columns.column_texts()  # after the prompt's missing tokens joined the columns
        canvas, cache, start = started.canvas, started.cache, len(started.prompt)
        if canvas.lead < 1:  # a hole at the file's start: no token before the hole for the first slot's row
            if log:
                log(f"{i + 1}/{len(tasks)} {task.task_id}: skipped, nothing before the hole")
            continue
        lead = canvas.canvas_ids[0, :canvas.lead].tolist()
        steps = [] if i < ceiling_n else None  # the ceiling reads the line's logits again
        line = greedy_line(runner, texts, cache, start, lead, steps=steps)
        rows = decoder_rows(runner, canvas, cache, line, mask_id)
        for f in range(len(rows["d0"])):
            for key in ("d0", "d1", "d2", "h_prev", "h_mask"):
                rec[key].append(rows[key][f])
            for j in range(3):
                rec[f"g{j}"].append(line[f + j] if f + j < len(line) else -1)
            rec["family"].append(family(task.task_id))
        if i < ceiling_n:
            for f in range(len(line) - 1):
                mix = mixture_next(runner, cache, start, lead + line[:f], k, first=steps[f])
                rec["ceiling"].append(int(runner.ids_of(mix.argmax().view(1))[0]) == line[f + 1])
        if log:
            log(f"{i + 1}/{len(tasks)} {task.task_id}: {len(line)} tokens")
    return rec


def agreement(rec: dict) -> dict:
    """The decoder's agreement with the greedy line at f, f + 1, f + 2 (where the slot exists), f + 1 where f's draft
    was right, and the ceiling's at f + 1."""
    def rate(pairs):
        pairs = list(pairs)
        return {"n": len(pairs), "pct": round(100.0 * sum(pairs) / len(pairs), 1) if pairs else None}
    rows = range(len(rec["d0"]))
    out = {}
    for j, name in enumerate(("decoder_f", "decoder_f+1", "decoder_f+2")):
        out[name] = rate(rec[f"d{j}"][i] == rec[f"g{j}"][i] for i in rows if rec[f"g{j}"][i] >= 0)
    out["decoder_f+1_where_f_right"] = rate(rec["d1"][i] == rec["g1"][i] for i in rows
                                            if rec["g1"][i] >= 0 and rec["d0"][i] == rec["g0"][i])
    out["ceiling_f+1"] = rate(rec["ceiling"])
    return out


def fit_chain(engine, rec: dict, hidden: int = 128, epochs: int = 20, seed: int = 0) -> dict:
    """The draft-chain head (module docstring), fitted on the families with family % 3 != 0 and scored on the rest:
    agreement at f + 1, all rows and where the decoder's f was right, against the decoder's own f + 1 draft."""
    from torch import nn

    from dg_lsp.engine.gemma3.adapter import text_model

    runner = engine.runner
    keep = [i for i in range(len(rec["d0"])) if rec["g1"][i] >= 0]
    if not keep:
        return {}
    torch.manual_seed(seed)
    # clones: the passes ran in inference mode, whose tensors autograd cannot save
    h_prev = torch.stack([rec["h_prev"][i] for i in keep]).clone()
    h_mask = torch.stack([rec["h_mask"][i] for i in keep]).clone()
    g0, g1, d0, d1 = (torch.tensor([rec[k][i] for i in keep]) for k in ("g0", "g1", "d0", "d1"))  # token ids
    target = runner.columns_of(g1)  # the head's columns (a greedy token is always one of them)
    held = torch.tensor([rec["family"][i] % 3 == 0 for i in keep])
    head = runner._head.detach().float().clone()  # [V', H]: the restricted output head the decoder's logits use
    table = text_model(runner.model).embed_tokens

    def features(ids):
        with torch.no_grad():
            e = table(ids).float().clone()
        e = e / e.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()
        return torch.cat([h_prev, h_mask, e], -1)

    width = h_mask.shape[-1]
    norm, w1, w2 = nn.LayerNorm(3 * width), nn.Linear(3 * width, hidden), nn.Linear(hidden, width)
    nn.init.zeros_(w2.weight)
    nn.init.zeros_(w2.bias)  # starts as the decoder's own f + 1 prediction
    params = list(norm.parameters()) + list(w1.parameters()) + list(w2.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.05)

    def logits(x, idx):
        return (h_mask[idx] + w2(nn.functional.silu(w1(norm(x[idx]))))) @ head.t()

    x_train, x_eval = features(g0), features(d0)
    train, test = (~held).nonzero().flatten(), held.nonzero().flatten()
    if len(train) == 0 or len(test) == 0:
        return {}
    with torch.enable_grad():
        for _ in range(epochs):
            order = train[torch.randperm(len(train))]
            for s in range(0, len(order), 64):
                idx = order[s:s + 64]
                loss = nn.functional.cross_entropy(logits(x_train, idx), target[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
    with torch.no_grad():
        pred = runner.ids_of(logits(x_eval, test).argmax(-1))
    right_f = d0[test] == g0[test]

    def pct(mask):
        return round(100.0 * float(mask.float().mean()), 1) if mask.numel() else None
    return {"train_rows": len(train), "eval_rows": len(test),
            "chain_f+1": pct(pred == g1[test]), "decoder_f+1": pct(d1[test] == g1[test]),
            "chain_f+1_where_f_right": pct((pred == g1[test])[right_f]),
            "decoder_f+1_where_f_right": pct((d1[test] == g1[test])[right_f])}


def corpus_tasks(n: int, seed: int) -> list:
    """`n` single-line holes mined from the training corpus's files (the bench's miner, Python)."""
    from dg_lsp.bench.quality import files as F
    from dg_lsp.bench.quality.mining import mine
    from dg_lsp.train.gemma import data

    sources = [F.SourceFile(f.path, "python", f.text) for f in data.collect("train")]
    return mine(sources, {"single-line": n}, seed)[:n]


def save_rows(rec: dict, path: str) -> None:
    """Every row of `collect`'s record: hidden states as float16 [N, H], the rest as int64 [N]."""
    out = {k: torch.stack(v).half() if k.startswith("h_") and v else torch.tensor(v) for k, v in rec.items()
           if k != "ceiling"}
    torch.save(out, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.drafts", description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="model directory (default: the embedded adapted Gemma)")
    ap.add_argument("--split", default="single-line", choices=["single-line", "multi-line"])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ceiling-n", type=int, default=40, help="tasks the ceiling is computed on (the first ones)")
    ap.add_argument("--candidates", type=int, default=8, help="the ceiling's tokens at f (the base's best)")
    ap.add_argument("--fit-chain", action="store_true", help="also fit and score the draft-chain head")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--corpus", default=None, choices=["train"], help="holes from the training corpus, not HumanEval")
    ap.add_argument("--save-rows", default=None, help="save every row (torch.save) here")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    from dg_lsp.bench.quality.tasks import load_humaneval, subsample
    from dg_lsp.engine import Engine

    engine = Engine.load(args.model, device="cpu", dtype=args.dtype)
    try:
        if not getattr(engine.runner, "verifies", False) or engine.loop.mask_id is None:
            print("drafts: this model has no base model to verify with (an adapted Gemma has)", file=sys.stderr)
            return 2
        if args.corpus:
            tasks = corpus_tasks(args.n, args.seed)
        else:
            tasks = subsample(load_humaneval(args.split), args.n, args.seed)
        rec = collect(engine, tasks, args.ceiling_n, args.candidates,
                      log=lambda m: print(m, file=sys.stderr, flush=True))
        if args.save_rows:
            save_rows(rec, args.save_rows)
        figures = {"tasks": len(tasks), "candidates": args.candidates,
                   "ceiling_tasks": min(args.ceiling_n, len(tasks)), **agreement(rec)}
        if args.fit_chain:
            figures["chain"] = fit_chain(engine, rec)
    finally:
        engine.close()
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(figures, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
