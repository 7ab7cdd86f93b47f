"""Conversion (a)'s parity measurements: the converted model's next-token logits against Gemma 3's, through the
encoder (`compare`) and through the decoder with a causal canvas (`decoder_parity`)."""

from __future__ import annotations

import torch


@torch.no_grad()
def g3_hidden(g3, ids):
    return g3.model(input_ids=torch.tensor([ids])).last_hidden_state[0]


@torch.no_grad()
def dg_hidden(dg, ids):
    return dg.model.encoder(input_ids=torch.tensor([ids])).last_hidden_state[0]


@torch.no_grad()
def compare(g3, dg, seqs, chunk: int = 128, split: int | None = None) -> dict:
    """max/mean |logit difference|, top-1 agreement and KL(Gemma 3 || other) over every position of `seqs`. `dg` is
    a converted model (its encoder, its head, its soft-cap as the engine's runner applies it; Gemma 3 270M has no
    cap) or another Gemma 3 (the float noise floor)."""
    if hasattr(dg.model, "encoder"):
        cap = dg.final_logit_softcapping
        hidden = dg_hidden
    else:
        cap, hidden = None, g3_hidden
    n = agree = 0
    mx = 0.0
    total = 0.0
    kl = scale = 0.0
    per, per_mean, per_argmax = [], [], ([], [])
    for ids in seqs:
        a, b = g3_hidden(g3, ids), hidden(dg, ids)
        for s in range(0, len(ids), chunk):
            la = g3.lm_head(a[s:s + chunk]).float()
            lb = dg.lm_head(b[s:s + chunk]).float()
            lb = torch.tanh(lb / cap) * cap if cap else lb
            d = (la - lb).abs()
            mx = max(mx, float(d.max()))
            scale = max(scale, float(la.abs().max()))
            total += float(d.mean(-1).sum())
            same = la.argmax(-1) == lb.argmax(-1)
            agree += int(same.sum())
            n += d.shape[0]
            pa = la.log_softmax(-1)
            kl += float((pa.exp() * (pa - lb.log_softmax(-1))).sum(-1).sum())
            per.append(d.max(-1).values)
            per_mean.append(d.mean(-1))
            per_argmax[0].append(la.argmax(-1))
            per_argmax[1].append(lb.argmax(-1))
    per, per_mean = torch.cat(per), torch.cat(per_mean)
    per_argmax = (torch.cat(per_argmax[0]), torch.cat(per_argmax[1]))
    out = {"positions": n, "gemma3_logit_abs_max": scale, "max_abs": mx, "mean_abs": total / n,
           "top1_agree": agree / n, "kl_nats": kl / n, "p50_pos_max": float(per.median()),
           "p99_pos_max": float(per.quantile(0.99))}
    if split is not None and len(seqs) == 1 and len(seqs[0]) > split:  # positions before / from `split`
        out["positions_split"] = split
        for name, sl in (("before_split", slice(0, split)), ("from_split", slice(split, None))):
            a, b = per_argmax[0][sl], per_argmax[1][sl]
            out[name] = {"positions": int(a.numel()), "max_abs": float(per[sl].max()),
                         "mean_abs": float(per_mean[sl].mean()), "top1_agree": float((a == b).float().mean())}
    return out


@torch.no_grad()
def decoder_parity(g3, dg, seqs, k: int = 32) -> dict:
    """The decoder side at start: each sequence's last `k` tokens as a canvas over the encoder's cache of the rest,
    with a causal 4D mask inside the canvas, against Gemma 3's next-token logits at those positions (what
    conversion (b)'s decoder reproduces within 1e-5 with a zero adapter). Self-conditioning is off (first step)."""
    from transformers import DynamicCache

    cap = dg.final_logit_softcapping
    n = agree = 0
    mx = total = 0.0
    for ids in seqs:
        p = len(ids) - k
        want = g3.lm_head(g3_hidden(g3, ids)[p:]).float()
        cache = DynamicCache(config=dg.config.get_text_config(decoder=True))
        dg.model.encoder(input_ids=torch.tensor([ids[:p]]), past_key_values=cache)
        m = torch.ones(k, p + k, dtype=torch.bool)
        m[:, p:] = torch.ones(k, k, dtype=torch.bool).tril()
        m = m[None, None]
        out = dg.model.decoder(decoder_input_ids=torch.tensor([ids[p:]]), past_key_values=cache,
                               decoder_attention_mask={"full_attention": m, "sliding_attention": m},
                               decoder_position_ids=torch.arange(p, p + k)[None])
        got = dg.lm_head(out.last_hidden_state[0]).float()
        got = torch.tanh(got / cap) * cap
        d = (want - got).abs()
        mx = max(mx, float(d.max()))
        total += float(d.mean(-1).sum())
        agree += int((want.argmax(-1) == got.argmax(-1)).sum())
        n += k
    return {"positions": n, "max_abs": mx, "mean_abs": total / n, "top1_agree": agree / n}
