"""The autoregressive baseline: greedy next-token decoding with the encoder (the same weights) on the
prefix alone, with the same token healing as infill.

`head` "full" (the default) reads the base model's whole output head: the unchanged Gemma (262,144 rows for
Gemma 3 270M). "restricted" reads the restricted output columns the AR-verified walk writes with (engine/gemma3
vocab.py, with the prompt's own tokens added as for a fill): the same weights and head as diffusion, so a speed
comparison with the walk measures the decoding and not the head. On a 1-row pass the full head costs about as
much as the trunk (docs/results/amx-bf16.md)."""

from __future__ import annotations

import time

import torch

from . import healing, sampler
from .canvas import build_prompt
from .lifecycle import InfillLifecycle, ms
from .types import InfillResult


@torch.inference_mode()
def run_autoregressive(life: InfillLifecycle, prefix: str, max_new_tokens: int, stop_at_newline: bool,
                       max_prompt_tokens: int, heal: bool = True, head: str = "full") -> InfillResult:
    """The text starts after the prefix's healing tail, and stops at the end of its line."""
    runner, tokenizer = life.runner, life.tokenizer
    if head not in ("full", "restricted"):
        raise ValueError(f"unknown AR head {head!r} (full|restricted)")
    restricted = head == "restricted"
    if restricted and not (getattr(runner, "scores_lines", False) and runner.output_vocab is not None):
        raise ValueError("the restricted AR head needs a model with a restricted output vocabulary (an adapted Gemma)")
    t0 = time.perf_counter()
    prefix_ids, tail = life.heal_prefix(prefix, heal)
    prompt = build_prompt(prefix_ids, life.prompt_budget(max_prompt_tokens), life.bos_id)
    if restricted:  # the prompt's tokens the columns lack become writable, as for a fill (InfillLifecycle.prepare)
        life.add_columns(prompt)
    t_tok = ms(t0)
    t1 = time.perf_counter()
    cache, hidden = runner.encode(prompt)
    t_enc = ms(t1)
    t2 = time.perf_counter()
    out: list[int] = []
    text = ""
    # a line break's tail is written as tokens of its own; a healed space or word goes inside the first token
    for _ in range(max_new_tokens + (0 if healing.constrained(tail) else len(life.tokenize(tail)))):
        if restricted:
            logits = runner.head_logits(hidden[:, -1:])
        else:
            logits = runner.lm_logits(hidden[:, -1:])
        if tail and not out:  # the first token starts with the healed space, word or a line break, as in infill
            # the full head's columns are token ids; the restricted head's are the decoder's columns
            first = life.columns.first_columns(tail, None if restricted else range(logits.shape[-1]))
            logits = logits.masked_fill(~first.to(logits.device), float("-inf"))
        nxt = int(sampler.argmax(logits))
        if restricted:
            nxt = int(runner.ids_of(torch.tensor([nxt], device=logits.device)))
        if nxt == life.eos_id or nxt == life.pad_id:
            break
        out.append(nxt)
        generated = tokenizer.decode(out)
        if len(generated) < len(tail) and tail.startswith(generated):
            cache, hidden = runner.encode([nxt], cache)
            continue  # still writing the tail
        body = healing.unheal(generated, tail)
        if body is None:  # it wrote something else than the prefix's own tail
            life.stats["healMismatches"] += 1
            text = ""
            break
        text = body
        if stop_at_newline and "\n" in text:
            text = text[: text.index("\n") + 1]
            break
        cache, hidden = runner.encode([nxt], cache)
    t_gen = ms(t2)
    result = InfillResult(text=text, steps=len(out), tokens_per_forward=1.0 if out else 0.0,
                          generated_tokens=len(out))
    result.timings_ms = {"tokenize": t_tok, "encode": t_enc, "denoise": t_gen, "total": ms(t0)}
    return result
