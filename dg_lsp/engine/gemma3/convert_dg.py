"""Conversion (a) of issue 13: a Gemma 3 text model rebuilt as transformers' `DiffusionGemmaForBlockDiffusion`.

The chosen path is conversion (b) (engine/gemma3/runner.py: the Gemma 3 model itself as encoder and decoder, exact
by construction). This module exists to measure (a) honestly: how close DiffusionGemma's Gemma-4 layers can be
made to compute Gemma 3, and where they cannot. `convert()` returns a DiffusionGemma model whose encoder is the
Gemma 3 model; the decoder shares every weight with it (DiffusionGemma ties them).

Differences between a Gemma 3 layer and a DiffusionGemma encoder layer, what the conversion does, and whether it
is exact (float32 measurements: docs/results/gemma-conversion-a.md):

- RMSNorm `x * w` instead of `x * (1 + w)`: every norm weight becomes `1 + w`. Exact.
- Attention scaling 1.0 beside the q/k norms: `query_pre_attn_scalar ** -0.5` is folded into the q-norm weight.
  Exact.
- A parallel MoE branch (router, experts, their norms): the experts' `down_proj` is 0, so the branch outputs
  exactly 0 (RMSNorm(0) = 0) and gradients still reach it. Exact.
- An extra `post_feedforward_layernorm_1` on the MLP output y: made the identity. `mlp.down_proj` is scaled by
  sqrt(eps)/c and the norm's weight is a uniform c (`ffn_norm_gain`, 1e4), so its input sits far below eps:
  c * RMSNorm(sqrt(eps)/c * y) = y / sqrt(1 + ms(y)/c^2). Weight 1 alone is not enough: RMSNorm(RMSNorm(y))
  differs from RMSNorm(y) by about eps/ms(y), and Gemma 3 270M has MLP outputs with ms(y) below eps. Exact to
  ms(y)/(2c^2). (The 1e-7 scale on down_proj is hostile to an optimiser; a training run should reparametrise.)
- `v_norm` (RMSNorm without weight) on the values: the head is widened; the spare value slots hold a large
  constant (a `v_proj` bias, so `attention_bias` is on and every other bias is 0), so the norm divides every
  token by the same number, which is folded into `o_proj`. Exact to < 1e-6 relative (bounded from the weights).
- Wider heads: q/k rows go to the RoPE slots of their Gemma 3 frequency, scaled by sqrt(D/d) so that the q/k norms
  (and their eps) see Gemma 3's mean square. Exact.
- Keys used as values on full-attention layers: there `v_proj` is None and the values are v_norm(k_proj(x)), the
  keys RoPE(k_norm(k_proj(x))): one vector per token and KV head, one RMS dividing both.
  - mode "windowed" (default): Gemma 3's full layers run as DiffusionGemma *sliding* layers (their own v_proj), the
    RoPE thetas of both Gemma 3 types matched through the slot stride. Exact for prompts up to `sliding_window`
    tokens; beyond it those layers see only the last window.
  - mode "keys-as-values": the shared vector holds [sqrt(D/d) k; b v]. Not exact: scores and values are off by a
    per-token factor (rho and the gains fitted by `fit_full_layers`).
- The last layer must be full attention: mode "windowed" appends an identity full layer (o_proj = 0,
  down_proj = 0). Exact.
- The final logit soft-cap is always applied: a Gemma 3 without one gets cap 1e6 (tanh(x/c)c = x - x^3/(3c^2)).
  Exact to ~1e-6.
- Tied embeddings, sqrt(hidden) embedding scale, sliding window, layer pattern, per-type RoPE theta: copied. Exact.
- DiffusionGemma ties the decoder's layer weights to the encoder's but not the linear biases: they are copied into
  the decoder (equal at start; a training run would update the two copies separately).
- Decoder only: its input is RMSNorm(embedding + self-conditioning signal) with no weight. The self-conditioning
  `down_proj` is 0, so the signal is 0, but the norm cannot be removed: the decoder is not Gemma 3 at start.

RoPE slots: a DiffusionGemma head of D dims rotates dim i with dim i + D/2 at frequency theta^(-2i/D). Gemma 3's dim
m (and m + d/2) at theta_src^(-2m/d) goes to slot t*m (and D/2 + t*m) with t = (D/d) * ln(theta_src)/ln(theta_dg),
which must be an integer: D = 2d with theta_dg = theta_src (all slots bit-identical frequencies), or, in mode
"windowed", D = 3d with theta_dg = 1e6 for both Gemma 3 types (t = 3 for theta 1e6, t = 2 for theta 1e4).

The parts: convert_dg_layout.py (the layer plan, the RoPE slots, the config), this module (the weights),
convert_dg_fit.py (mode "keys-as-values": fitting rho and the gains). Their public names are importable from here.
"""

from __future__ import annotations

import math

import torch

from .convert_dg_fit import capture_full_inputs, fit_full_layers
from .convert_dg_layout import MODES, NO_CAP, FullFit, Plan, dg_config, f32, plan_for, rope_slots

__all__ = ["MODES", "NO_CAP", "VALUE_HEADROOM", "FFN_NORM_GAIN", "FullFit", "Plan", "plan_for", "dg_config",
           "rope_slots", "full_kv_tensors", "convert", "capture_full_inputs", "fit_full_layers"]

VALUE_HEADROOM = 1e6  # constant slots' square mass over the weight bound of |v|^2
FFN_NORM_GAIN = 1e4  # c: the extra post-FFN norm's uniform weight (its input is scaled by sqrt(eps)/c)


def _value_constant(g3_layer, hidden: int) -> float:
    """A bound on |v|^2 from the weights: |x|^2 <= max(1 + w_in)^2 * hidden after the input norm."""
    wv = f32(g3_layer.self_attn.v_proj.weight)
    sigma = float(torch.linalg.matrix_norm(wv, ord=2))
    gain = float((1.0 + f32(g3_layer.input_layernorm.weight)).abs().max())
    return (sigma * gain) ** 2 * hidden


def full_kv_tensors(wq, wk, wv, wo, q_norm, k_norm, fit: FullFit, *, D: int, d: int, n_heads: int, n_kv: int,
                    scaling: float) -> dict:
    """A keys-as-values (full-type) attention block's weights from Gemma 3's (q/k/v/o projections, q/k norm
    weights w), differentiably, so a healing run can train the Gemma 3-shaped tensors. The shared vector holds
    sqrt(D/d) k in the RoPE slots (stride 2) and b v, b = sqrt(rho D / d), in the others."""
    slots = rope_slots(d, D, 2)
    taken = set(slots.tolist())
    other = torch.tensor([i for i in range(D) if i not in taken])
    s, b = math.sqrt(D / d), math.sqrt(fit.rho * D / d)
    hidden, out = wq.shape[1], wo.shape[0]
    q = wq.new_zeros(n_heads, D, hidden).index_copy(1, slots, wq.reshape(n_heads, d, hidden) * s)
    k = wk.new_zeros(n_kv, D, hidden).index_copy(1, slots, wk.reshape(n_kv, d, hidden) * s)
    k = k.index_copy(1, other, wv.reshape(n_kv, d, hidden) * b)
    o = wo.new_zeros(out, n_heads, D).index_copy(2, other, wo.reshape(out, n_heads, d) * (fit.value_gain / b))
    qn = q_norm.new_zeros(D).index_copy(0, slots, (1.0 + q_norm) * (scaling / s * fit.key_gain))
    kn = k_norm.new_zeros(D).index_copy(0, slots, (1.0 + k_norm) / s)
    return {"q_proj": q.reshape(n_heads * D, hidden), "k_proj": k.reshape(n_kv * D, hidden),
            "o_proj": o.reshape(out, n_heads * D), "q_norm": qn, "k_norm": kn}


@torch.no_grad()
def _constant_values(dst, wv, wo, o, *, D: int, d: int, n_heads: int, n_kv: int, eps: float, hidden: int,
                     g3_layer) -> dict:
    """A sliding-type block's values: Gemma 3's v in each head's first d slots, a large constant (a v_proj bias)
    in the rest, so v_norm divides every token by one number, which is folded into o_proj (written into `o`)."""
    v = torch.zeros(n_kv * D, wv.shape[1])
    vb = torch.zeros(n_kv * D)
    n_const = D - d
    c2 = VALUE_HEADROOM * _value_constant(g3_layer, hidden) / n_const
    for g in range(n_kv):
        v[g * D:g * D + d] = wv[g * d:(g + 1) * d]
        vb[g * D + d:(g + 1) * D] = math.sqrt(c2)
    scale = math.sqrt(n_const * c2 / D + eps)  # the value norm's (constant) divisor
    for h in range(n_heads):
        o[:, h * D:h * D + d] = wo[:, h * d:(h + 1) * d] * scale
    dst.v_proj.weight.copy_(v)
    dst.v_proj.bias.copy_(vb)
    return {"value_constant": math.sqrt(c2), "value_divisor": scale}


@torch.no_grad()
def _attention(dst, src, kind: str, stride: int, D: int, n_heads: int, n_kv: int, d: int, scaling: float,
               eps: float, hidden: int, g3_layer, fit: FullFit | None) -> dict:
    """Write one attention block; returns what it did (constants) for the report."""
    slots = rope_slots(d, D, stride)
    s = math.sqrt(D / d)
    wq, wk, wv, wo = (f32(m.weight) for m in (src.q_proj, src.k_proj, src.v_proj, src.o_proj))
    q = torch.zeros(n_heads * D, wq.shape[1])
    k = torch.zeros(n_kv * D, wq.shape[1])
    o = torch.zeros(wo.shape[0], n_heads * D)
    qn = torch.zeros(D)
    kn = torch.zeros(D)
    qn[slots] = (1.0 + f32(src.q_norm.weight)) * scaling / s
    for h in range(n_heads):
        q[h * D + slots] = wq[h * d:(h + 1) * d] * s
    info = {"kind": kind}
    if kind == "sliding":
        kn[slots] = (1.0 + f32(src.k_norm.weight)) / s
        for g in range(n_kv):
            k[g * D + slots] = wk[g * d:(g + 1) * d] * s
        info.update(_constant_values(dst, wv, wo, o, D=D, d=d, n_heads=n_heads, n_kv=n_kv, eps=eps, hidden=hidden,
                                     g3_layer=g3_layer))
    else:  # full-kv: values are the keys before k_norm, v_norm'd
        fit = fit or FullFit()
        t = full_kv_tensors(wq, wk, wv, wo, f32(src.q_norm.weight), f32(src.k_norm.weight), fit, D=D, d=d,
                            n_heads=n_heads, n_kv=n_kv, scaling=scaling)
        q, k, o, qn, kn = (t[n] for n in ("q_proj", "k_proj", "o_proj", "q_norm", "k_norm"))
        info.update(rho=fit.rho, key_gain=fit.key_gain, value_gain=fit.value_gain)
    dst.q_proj.weight.copy_(q)
    dst.k_proj.weight.copy_(k)
    dst.o_proj.weight.copy_(o)
    dst.q_norm.weight.copy_(qn)
    dst.k_norm.weight.copy_(kn)
    for lin in (dst.q_proj, dst.k_proj, dst.o_proj):
        lin.bias.zero_()
    return info


@torch.no_grad()
def _inert_branches(layer) -> None:
    """The MoE branch outputs exactly 0 (its down_proj is 0; its norms 1, so gradients still reach it)."""
    layer.experts.down_proj.zero_()
    for n in (layer.post_feedforward_layernorm_1, layer.post_feedforward_layernorm_2,
              layer.pre_feedforward_layernorm_2):
        n.weight.fill_(1.0)
    layer.router.scale.fill_(1.0)
    layer.router.per_expert_scale.fill_(1.0)
    layer.layer_scalar.fill_(1.0)


@torch.no_grad()
def _identity_layer(dst) -> None:
    """A layer that passes its input through: attention and MLP outputs 0, every norm weight 1."""
    for lin in (dst.self_attn.q_proj, dst.self_attn.k_proj, dst.self_attn.o_proj, dst.mlp.down_proj):
        lin.weight.zero_()
        if lin.bias is not None:
            lin.bias.zero_()
    for n in (dst.input_layernorm, dst.post_attention_layernorm, dst.pre_feedforward_layernorm,
              dst.post_feedforward_layernorm, dst.self_attn.q_norm, dst.self_attn.k_norm):
        n.weight.fill_(1.0)


@torch.no_grad()
def _norms_and_mlp(dst, src, eps: float, ffn_norm_gain: float) -> None:
    """A layer's norms (`1 + w`) and MLP; the extra post-FFN norm made the identity (its input scaled far below eps)."""
    for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm"):
        getattr(dst, name).weight.copy_(1.0 + f32(getattr(src, name).weight))
    for n in ("gate_proj", "up_proj"):
        getattr(dst.mlp, n).weight.copy_(f32(getattr(src.mlp, n).weight))
    dst.mlp.down_proj.weight.copy_(f32(src.mlp.down_proj.weight) * (math.sqrt(eps) / ffn_norm_gain))
    dst.post_feedforward_layernorm_1.weight.fill_(ffn_norm_gain)


@torch.no_grad()
def convert(g3, mode: str = "windowed", fits: dict[int, FullFit] | None = None, ffn_norm_gain: float = FFN_NORM_GAIN,
            **config_kw):
    """A DiffusionGemmaForBlockDiffusion (float32, eval) from a Gemma3ForCausalLM; returns (model, report).

    `fits`: mode "keys-as-values", per Gemma 3 full-attention layer index (default FullFit(): keys exact)."""
    from transformers import DiffusionGemmaForBlockDiffusion

    cfg = g3.config
    config, plan = dg_config(cfg, mode, **config_kw)
    torch.manual_seed(0)
    model = DiffusionGemmaForBlockDiffusion(config).float().eval()
    enc = model.model.encoder.language_model
    src_model = g3.model
    d, hidden = cfg.head_dim, cfg.hidden_size
    scaling = cfg.query_pre_attn_scalar ** -0.5
    enc.embed_tokens.weight.copy_(f32(src_model.embed_tokens.weight))
    enc.norm.weight.copy_(1.0 + f32(src_model.norm.weight))
    report = {"mode": mode, "head_dim": plan.head_dim, "global_head_dim": plan.global_head_dim, "layers": []}
    for i, p in enumerate(plan.layers):
        dst = enc.layers[i]
        _inert_branches(dst)
        D = plan.head_dim if config.text_config.layer_types[i] == "sliding_attention" else plan.global_head_dim
        if p["kind"] == "identity":
            _identity_layer(dst)
            report["layers"].append({"kind": "identity"})
            continue
        src = src_model.layers[p["src"]]
        _norms_and_mlp(dst, src, cfg.rms_norm_eps, ffn_norm_gain)
        info = _attention(dst.self_attn, src.self_attn, p["kind"], p["stride"], D, cfg.num_attention_heads,
                          cfg.num_key_value_heads, d, scaling, cfg.rms_norm_eps, hidden, src,
                          (fits or {}).get(p["src"]))
        report["layers"].append({"src": p["src"], "stride": p["stride"], **info})
    dec = model.model.decoder
    dec.self_conditioning.down_proj.weight.zero_()
    dec.self_conditioning.pre_norm.weight.fill_(1.0)
    model.tie_weights()
    report["untied_copied"] = _share_with_decoder(model)
    return model, report


def _share_with_decoder(model) -> list[str]:
    """DiffusionGemma ties the decoder's layer weights to the encoder's, but not the linear biases: copy those (the
    value constants live in v_proj biases). Returns the names copied; raises if anything still differs."""
    enc = model.model.encoder.language_model
    dec = model.model.decoder
    copied = []
    for i, (a, b) in enumerate(zip(enc.layers, dec.layers)):
        pb = dict(b.named_parameters())
        for name, pa in a.named_parameters():
            if pa.data_ptr() != pb[name].data_ptr():
                pb[name].copy_(pa)
                copied.append(f"layers.{i}.{name}")
        for (name, xa), (_, xb) in zip(a.named_buffers(), b.named_buffers()):
            xb.copy_(xa)
    pairs = [(enc.embed_tokens.weight, dec.embed_tokens.weight), (enc.norm.weight, dec.norm.weight),
             (enc.embed_tokens.weight, model.lm_head.weight)]
    for a, b in zip(enc.layers, dec.layers):
        pairs += list(zip(a.parameters(), b.parameters()))
    if not all(torch.equal(x, y) for x, y in pairs):
        raise RuntimeError("the decoder does not share the encoder's weights")
    return sorted({n.split(".", 2)[2] for n in copied})
