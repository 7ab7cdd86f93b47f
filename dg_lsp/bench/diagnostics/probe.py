"""Teacher-forced probe: how well do the diffusion head and the autoregressive head predict the reference answer?

`python -m dg_lsp.bench.diagnostics.probe [--model DIR] [--split single-line | --heldout] [--n 300] [--seed 0]`

A diagnostic of why one decoding mode beats another, not a benchmark of the product. For every hole
it takes the reference answer's tokens T (what the hole must hold, token healing included) and
scores each T[i] under four conditions, all with the same weights and the same prompt:

- `ar`: the encoder's next-token prediction after prompt + T[:i] (what greedy AR decoding sees
  when it has been right so far);
- `diffusion`: the decoder on the pad-fill canvas `[T[:i]][noise ...][suffix head]`, one step
  from pure noise (the model's own kind: random tokens, or its mask token) for every position not yet
  written (what left-to-right diffusion decoding sees);
- `diffusion-length`: the same with the pads after the answer written in (the length is known);
- `diffusion-nosuffix`: the same canvas without the suffix head (the suffix's contribution).

It prints top-1 accuracy and mean negative log-likelihood per token (all positions, and the first
token alone). If `diffusion` predicts worse than `ar` while it sees strictly more (the suffix),
the diffusion head is the weaker model, whatever the decoding order.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

MODES = ("ar", "diffusion", "diffusion-length", "diffusion-nosuffix")


def target_tokens(engine, prefix: str, middle: str, suffix: str) -> list[int]:
    """The tokens the pad-fill hole must hold for `middle` (as bench --baseline oracle-length counts them)."""
    return engine.tokenize(engine.hole_text(prefix, middle, suffix))


@torch.inference_mode()
def probe_task(engine, task, generator: torch.Generator) -> dict[str, list[tuple[bool, float]]]:
    """(correct, nll) per answer token, per mode."""
    from dg_lsp.engine import InfillRequest, sampler

    runner = engine.runner
    out: dict[str, list[tuple[bool, float]]] = {m: [] for m in MODES}
    answer = target_tokens(engine, task.prefix, task.middle, task.suffix)
    if not answer:
        return out
    for use_suffix in (True, False):
        request = InfillRequest(prefix=task.prefix, suffix=task.suffix if use_suffix else "", use_suffix=use_suffix,
                                length_strategy="pad", max_prompt_tokens=engine.spec.max_prompt_tokens or 1024)
        prompt, canvas, _ = engine.prepare(request)
        hole = canvas.hole_lengths[0]
        target = answer[:hole]
        m = len(target)
        tgt = torch.tensor(target, device=runner.device)
        if use_suffix:  # AR: one encoder pass over prompt + answer predicts every answer token
            _, hidden = runner.encode(prompt + target[:-1])
            logp = torch.log_softmax(runner.lm_logits(hidden[0, len(prompt) - 1:]), dim=-1)
            _score(out["ar"], logp, tgt)
        variants = [("diffusion", False), ("diffusion-length", True)] if use_suffix else [("diffusion-nosuffix", False)]
        cache, _ = runner.encode(prompt)
        cache.batch_repeat_interleave(m)
        for mode, length_known in variants:
            rows = canvas.canvas_ids.repeat(m, 1).to(runner.device)
            noise = sampler.noise_tokens(tuple(rows.shape), runner.vocab_size, generator, torch.device("cpu"),
                                         engine.spec.noise_kind, engine.spec.mask_token_id).to(runner.device)
            hole_pos = torch.arange(rows.shape[1], device=runner.device) < hole
            rows = torch.where(hole_pos, noise, rows)
            for i in range(m):
                rows[i, :i] = tgt[:i]
                if length_known:
                    rows[i, m:hole] = engine.pad_id
            mask = runner.decoder_mask(cache, canvas.valid.repeat(m, 1))
            logits = runner.decode(rows, cache, canvas.position_ids(), None, mask)
            logp = torch.log_softmax(logits.float(), dim=-1)
            diag = logp[torch.arange(m), torch.arange(m)]  # row i predicts position i
            _score(out[mode], diag, tgt)
    return out


def _score(sink: list, logp: torch.Tensor, tgt: torch.Tensor) -> None:
    for row, t in zip(logp, tgt.tolist()):
        sink.append((int(row.argmax()) == t, -float(row[t])))


def summarize(per_task: list[dict]) -> dict:
    table = {}
    for mode in MODES:
        toks = [x for d in per_task for x in d[mode]]
        firsts = [d[mode][0] for d in per_task if d[mode]]
        if not toks:
            continue
        table[mode] = {
            "tokens": len(toks),
            "acc": sum(c for c, _ in toks) / len(toks),
            "nll": sum(n for _, n in toks) / len(toks),
            "first_acc": sum(c for c, _ in firsts) / len(firsts),
            "first_nll": sum(n for _, n in firsts) / len(firsts),
        }
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.probe", description=__doc__.split("\n")[0])
    p.add_argument("--model", default=None)
    p.add_argument("--split", default="single-line", help="HumanEval-Infilling split")
    p.add_argument("--heldout", action="store_true", help="single-line holes mined from the held-out stdlib packages")
    p.add_argument("--n", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", default=None, help="also write the table here")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from dg_lsp.bench.quality.sources import load_tasks
    from dg_lsp.engine import Engine

    # the same holes as `dg-lsp bench heldout --kinds single-line --per-kind N --n N` / `bench humaneval --n N`
    source = argparse.Namespace(command="heldout" if args.heldout else "humaneval", kinds="single-line",
                                per_kind=args.n, languages=None, split=args.split, data_dir=None, n=args.n,
                                seed=args.seed)
    tasks, _ = load_tasks(source)
    engine = Engine.load(args.model)
    try:
        generator = torch.Generator().manual_seed(args.seed)
        per_task = [probe_task(engine, t, generator) for t in tasks]
    finally:
        engine.close()
    table = summarize(per_task)
    print(f"{len(tasks)} holes; per answer token, teacher-forced (the answer so far given)")
    print("| mode | tokens | top-1 acc % | NLL | first-token acc % | first-token NLL |")
    print("|---|---|---|---|---|---|")
    for mode, r in table.items():
        print(f"| {mode} | {r['tokens']} | {100 * r['acc']:.1f} | {r['nll']:.2f} | {100 * r['first_acc']:.1f} | "
              f"{r['first_nll']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"n": len(tasks), "seed": args.seed, "model": engine.loaded.path, "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
