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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import torch

MODES = ("windowed", "keys-as-values")
NO_CAP = 1e6  # the soft-cap standing in for "none": relative error x^2/(3 c^2)
VALUE_HEADROOM = 1e6  # constant slots' square mass over the weight bound of |v|^2
FFN_NORM_GAIN = 1e4  # c: the extra post-FFN norm's uniform weight (its input is scaled by sqrt(eps)/c)


@dataclass
class FullFit:
    """Mode "keys-as-values", one full-attention layer: the shared key/value vector is [sqrt(D/d) k; b v] with
    b^2 = rho * D / d, so its mean square is ms(k) + rho * ms(v). rho -> 0: keys exact, values divided by
    rms(k) per token; large rho: values normalised by rms(v), keys by rms(v) too. `key_gain` rescales scores
    (folded into the q-norm); `value_gain` the values (folded into o_proj)."""

    rho: float = 1e-10
    key_gain: float = 1.0
    value_gain: float = 1.0
    error: float | None = None  # the fit's relative error on its calibration data, if fitted


@dataclass
class Plan:
    mode: str
    head_dim: int  # DiffusionGemma sliding-type head
    global_head_dim: int  # DiffusionGemma full-type head
    layers: list[dict] = field(default_factory=list)  # per DiffusionGemma layer: kind, src, stride


def _stride(d: int, D: int, theta_src: float, theta_dg: float) -> int:
    r = Fraction(D, d) * Fraction(math.log(theta_src) / math.log(theta_dg)).limit_denominator(64)
    if abs(float(r) - D / d * math.log(theta_src) / math.log(theta_dg)) > 1e-9 or r.denominator != 1:
        raise ValueError(f"RoPE theta {theta_src} cannot be placed in a {D}-dim head of theta {theta_dg}")
    return int(r)


def rope_slots(d: int, D: int, stride: int) -> torch.LongTensor:
    """The DiffusionGemma dim of each Gemma 3 head dim."""
    m = torch.arange(d)
    half = d // 2
    return torch.where(m < half, stride * m, D // 2 + stride * (m - half))


def _rope(cfg, layer_type: str) -> tuple[float, dict]:
    p = dict(cfg.rope_parameters[layer_type])
    if p.get("rope_type", "default") not in ("default", "linear"):
        raise ValueError(f"RoPE type {p.get('rope_type')!r} is not supported by this conversion")
    if p.get("partial_rotary_factor", 1.0) != 1.0:
        raise ValueError("partial rotary factors are not supported by this conversion")
    return float(p["rope_theta"]), p


def plan_for(cfg, mode: str) -> tuple[Plan, dict]:
    """The layer layout and DiffusionGemma rope parameters for a Gemma3TextConfig."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    d = cfg.head_dim
    types = list(cfg.layer_types)
    th_s, p_s = _rope(cfg, "sliding_attention")
    th_f, p_f = _rope(cfg, "full_attention")
    if mode == "keys-as-values":
        D = 2 * d
        plan = Plan(mode, D, D)
        for i, t in enumerate(types):
            plan.layers.append({"kind": "sliding" if t == "sliding_attention" else "full-kv", "src": i, "stride": 2})
        rope = {"sliding_attention": p_s, "full_attention": p_f}
    else:
        if p_s.get("rope_type", "default") != p_f.get("rope_type", "default") or p_s.get("factor") != p_f.get("factor"):
            raise ValueError("mode 'windowed' needs one RoPE type for both Gemma 3 layer types")
        theta = max(th_s, th_f) if "full_attention" in types else th_s
        for mult in range(2, 9):
            try:
                strides = {t: _stride(d, mult * d, th_s if t == "sliding_attention" else th_f, theta)
                           for t in set(types)}
            except ValueError:
                continue
            if all(s * (d // 2 - 1) < mult * d // 2 for s in strides.values()):
                break
        else:
            raise ValueError(f"no head width places RoPE thetas {th_s} and {th_f} in one DiffusionGemma type")
        D = mult * d
        plan = Plan(mode, D, 16)
        for i, t in enumerate(types):
            plan.layers.append({"kind": "sliding", "src": i, "stride": strides[t]})
        rope = {"sliding_attention": {**p_s, "rope_theta": theta}, "full_attention": {"rope_type": "default",
                                                                                     "rope_theta": 10_000.0}}
    if mode == "windowed" or types[-1] != "full_attention":
        plan.layers.append({"kind": "identity", "src": None, "stride": None})
    return plan, rope


def dg_config(cfg, mode: str = "windowed", num_experts: int = 2, top_k_experts: int = 1,
              moe_intermediate_size: int = 64, canvas_length: int = 32):
    """(DiffusionGemmaConfig, Plan) for a Gemma3TextConfig."""
    from transformers import DiffusionGemmaConfig

    if getattr(cfg, "attn_logit_softcapping", None):
        raise ValueError("Gemma 3 attention logit soft-capping has no DiffusionGemma counterpart")
    if not cfg.tie_word_embeddings:
        raise ValueError("DiffusionGemma ties its output head to the embeddings; this Gemma 3 does not")
    plan, rope = plan_for(cfg, mode)
    layer_types = ["full_attention" if p["kind"] in ("full-kv", "identity") else "sliding_attention"
                   for p in plan.layers]
    vocab = cfg.vocab_size
    text = dict(vocab_size=vocab, hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
                num_hidden_layers=len(plan.layers), num_attention_heads=cfg.num_attention_heads,
                num_key_value_heads=cfg.num_key_value_heads, head_dim=plan.head_dim,
                global_head_dim=plan.global_head_dim, hidden_activation=cfg.hidden_activation,
                max_position_embeddings=cfg.max_position_embeddings, rms_norm_eps=cfg.rms_norm_eps,
                pad_token_id=cfg.pad_token_id, eos_token_id=cfg.eos_token_id, bos_token_id=cfg.bos_token_id,
                tie_word_embeddings=True, rope_parameters=rope, attention_bias=True, attention_dropout=0.0,
                sliding_window=cfg.sliding_window, layer_types=layer_types, num_experts=num_experts,
                top_k_experts=top_k_experts, moe_intermediate_size=moe_intermediate_size,
                final_logit_softcapping=cfg.final_logit_softcapping or NO_CAP)
    vision = dict(model_type="gemma4_vision", hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=2, num_key_value_heads=1, head_dim=8)
    config = DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=canvas_length,
                                  boi_token_id=vocab - 3, eoi_token_id=vocab - 2, image_token_id=vocab - 1)
    config.text_config._attn_implementation = "sdpa"
    return config, plan


def _g(w):
    return w.detach().float()


def _value_constant(g3_layer, hidden: int) -> float:
    """A bound on |v|^2 from the weights: |x|^2 <= max(1 + w_in)^2 * hidden after the input norm."""
    wv = _g(g3_layer.self_attn.v_proj.weight)
    sigma = float(torch.linalg.matrix_norm(wv, ord=2))
    gain = float((1.0 + _g(g3_layer.input_layernorm.weight)).abs().max())
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
def _attention(dst, src, kind: str, stride: int, D: int, n_heads: int, n_kv: int, d: int, scaling: float,
               eps: float, hidden: int, g3_layer, fit: FullFit | None) -> dict:
    """Write one attention block; returns what it did (constants) for the report."""
    slots = rope_slots(d, D, stride)
    s = math.sqrt(D / d)
    wq, wk, wv, wo = (_g(m.weight) for m in (src.q_proj, src.k_proj, src.v_proj, src.o_proj))
    q = torch.zeros(n_heads * D, wq.shape[1])
    k = torch.zeros(n_kv * D, wq.shape[1])
    o = torch.zeros(wo.shape[0], n_heads * D)
    qn = torch.zeros(D)
    kn = torch.zeros(D)
    qn[slots] = (1.0 + _g(src.q_norm.weight)) * scaling / s
    for h in range(n_heads):
        q[h * D + slots] = wq[h * d:(h + 1) * d] * s
    info = {"kind": kind}
    if kind == "sliding":
        kn[slots] = (1.0 + _g(src.k_norm.weight)) / s
        for g in range(n_kv):
            k[g * D + slots] = wk[g * d:(g + 1) * d] * s
        v = torch.zeros(n_kv * D, wq.shape[1])
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
        info.update(value_constant=math.sqrt(c2), value_divisor=scale)
    else:  # full-kv: values are the keys before k_norm, v_norm'd
        fit = fit or FullFit()
        t = full_kv_tensors(wq, wk, wv, wo, _g(src.q_norm.weight), _g(src.k_norm.weight), fit, D=D, d=d,
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
    enc.embed_tokens.weight.copy_(_g(src_model.embed_tokens.weight))
    enc.norm.weight.copy_(1.0 + _g(src_model.norm.weight))
    report = {"mode": mode, "head_dim": plan.head_dim, "global_head_dim": plan.global_head_dim, "layers": []}
    for i, p in enumerate(plan.layers):
        dst = enc.layers[i]
        _inert_branches(dst)
        D = plan.head_dim if config.text_config.layer_types[i] == "sliding_attention" else plan.global_head_dim
        if p["kind"] == "identity":
            for lin in (dst.self_attn.q_proj, dst.self_attn.k_proj, dst.self_attn.o_proj, dst.mlp.down_proj):
                lin.weight.zero_()
                if lin.bias is not None:
                    lin.bias.zero_()
            for n in (dst.input_layernorm, dst.post_attention_layernorm, dst.pre_feedforward_layernorm,
                      dst.post_feedforward_layernorm, dst.self_attn.q_norm, dst.self_attn.k_norm):
                n.weight.fill_(1.0)
            report["layers"].append({"kind": "identity"})
            continue
        src = src_model.layers[p["src"]]
        for a, b in (("input_layernorm", "input_layernorm"), ("post_attention_layernorm", "post_attention_layernorm"),
                     ("pre_feedforward_layernorm", "pre_feedforward_layernorm"),
                     ("post_feedforward_layernorm", "post_feedforward_layernorm")):
            getattr(dst, a).weight.copy_(1.0 + _g(getattr(src, b).weight))
        for n in ("gate_proj", "up_proj"):
            getattr(dst.mlp, n).weight.copy_(_g(getattr(src.mlp, n).weight))
        dst.mlp.down_proj.weight.copy_(_g(src.mlp.down_proj.weight) * (math.sqrt(cfg.rms_norm_eps) / ffn_norm_gain))
        dst.post_feedforward_layernorm_1.weight.fill_(ffn_norm_gain)
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


# -- mode "keys-as-values": fitting rho and the gains on calibration text ------------------------------------------

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
    q = (x @ _g(attn.q_proj.weight).T).view(T, -1, d).transpose(0, 1)
    k = (x @ _g(attn.k_proj.weight).T).view(T, -1, d).transpose(0, 1)
    v = (x @ _g(attn.v_proj.weight).T).view(T, -1, d).transpose(0, 1)
    eps = cfg.rms_norm_eps
    qn = _rotate(_rms_norm(q, _g(attn.q_norm.weight), eps), cos, sin) * cfg.query_pre_attn_scalar ** -0.5
    kn = _rotate(_rms_norm(k, _g(attn.k_norm.weight), eps), cos, sin)
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
    return out.transpose(0, 1).reshape(T, h * d) @ _g(attn.o_proj.weight).T


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
