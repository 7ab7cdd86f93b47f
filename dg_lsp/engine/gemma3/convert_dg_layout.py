"""Conversion (a)'s layout (engine/gemma3/convert_dg.py): which DiffusionGemma layer each Gemma 3 layer becomes,
the RoPE slot of each Gemma 3 head dim, the keys-as-values fit's parameters, and the DiffusionGemma config.

No weights are written here; convert_dg.py's docstring says why each choice is (or is not) exact.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import torch

MODES = ("windowed", "keys-as-values")
NO_CAP = 1e6  # the soft-cap standing in for "none": relative error x^2/(3 c^2)


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


def f32(w):
    """A weight as a detached float32 tensor."""
    return w.detach().float()
