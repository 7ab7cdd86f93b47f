"""Conversion (a), mode "keys-as-values" (engine/gemma3/convert_dg.py): fitting rho and the gains of each
full-attention layer on calibration text, by Gemma 3's own attention maths with per-token factors on scores
and values."""

from __future__ import annotations

import torch

from .convert_dg_layout import FullFit, f32

def _rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def _rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


@torch.no_grad()
def capture_full_inputs(g3, sequences: list[list[int]]) -> dict[int, list]:
    """Per Gemma 3 full-attention layer: (normed input x [T, H], cos, sin) of each calibration sequence."""
    layers = [i for i, t in enumerate(g3.config.layer_types) if t == "full_attention"]
    got: dict[int, list] = {i: [] for i in layers}
    hooks = []
    for i in layers:
        def hook(mod, args, kwargs, i=i):
            cos, sin = kwargs["position_embeddings"]
            got[i].append((kwargs["hidden_states"][0].float(), cos[0].float(), sin[0].float()))
        hooks.append(g3.model.layers[i].self_attn.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        for ids in sequences:
            g3(input_ids=torch.tensor([ids]))
    finally:
        for h in hooks:
            h.remove()
    return got


def _parts(attn, cfg, x, cos, sin):
    """Gemma 3's pieces for one sequence: normed rotated q [h,T,d], k [g,T,d], v [g,T,d], ms(k), ms(v) [g,T]."""
    T, d = x.shape[0], cfg.head_dim
    q = (x @ f32(attn.q_proj.weight).T).view(T, -1, d).transpose(0, 1)
    k = (x @ f32(attn.k_proj.weight).T).view(T, -1, d).transpose(0, 1)
    v = (x @ f32(attn.v_proj.weight).T).view(T, -1, d).transpose(0, 1)
    eps = cfg.rms_norm_eps
    qn = _rotate(_rms_norm(q, f32(attn.q_norm.weight), eps), cos, sin) * cfg.query_pre_attn_scalar ** -0.5
    kn = _rotate(_rms_norm(k, f32(attn.k_norm.weight), eps), cos, sin)
    return qn, kn, v, k.pow(2).mean(-1), v.pow(2).mean(-1)


def _out(attn, cfg, qn, kn, v, key_factor, value_factor):
    """o_proj output [T, H] with per-key factors on scores [g,T] and on values [g,T]."""
    h, T, d = qn.shape
    rep = h // kn.shape[0]
    kf = key_factor.repeat_interleave(rep, 0)
    vf = value_factor.repeat_interleave(rep, 0)
    scores = (qn @ kn.repeat_interleave(rep, 0).transpose(1, 2)) * kf[:, None, :]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    w = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    out = w @ (v.repeat_interleave(rep, 0) * vf[..., None])
    return out.transpose(0, 1).reshape(T, h * d) @ f32(attn.o_proj.weight).T


def _relerr(a, b):
    """Relative error after the post-attention RMSNorm (which ignores a global scale)."""
    na = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6)
    nb = b * torch.rsqrt(b.pow(2).mean(-1, keepdim=True) + 1e-6)
    return float((na - nb).pow(2).sum() / nb.pow(2).sum())


@torch.no_grad()
def fit_full_layers(g3, sequences: list[list[int]],
                    rhos=(1e-10, 1e-3, 1e-2, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0, 1e4),
                    gains=tuple(2 ** (k / 8) for k in range(-6, 7))) -> dict[int, FullFit]:
    """Mode "keys-as-values": per full layer, the (rho, key_gain) whose attention output (after the
    post-attention norm, on Gemma 3's own inputs) is closest to Gemma 3's on the calibration sequences."""
    cfg = g3.config
    eps = cfg.rms_norm_eps
    fits = {}
    for i, items in capture_full_inputs(g3, sequences).items():
        attn = g3.model.layers[i].self_attn
        parts = [_parts(attn, cfg, x, c, s) for x, c, s in items]
        want = [_out(attn, cfg, qn, kn, v, torch.ones_like(mk), torch.ones_like(mk)) for qn, kn, v, mk, mv in parts]
        best = None
        for rho in rhos:
            r = [torch.sqrt(mk + rho * mv + eps) for _, _, _, mk, mv in parts]
            f = [torch.sqrt(mk + eps) / rr for (_, _, _, mk, _), rr in zip(parts, r)]
            base = 1.0 / float(torch.cat([x.flatten() for x in f]).median())
            vg = float(torch.cat([x.flatten() for x in r]).median())
            for g in gains:
                err = sum(_relerr(_out(attn, cfg, qn, kn, v, ff * base * g, vg / rr), w)
                          for (qn, kn, v, _, _), ff, rr, w in zip(parts, f, r, want)) / len(parts)
                if best is None or err < best.error:
                    best = FullFit(rho=rho, key_gain=base * g, value_gain=vg, error=err)
        fits[i] = best
    return fits
