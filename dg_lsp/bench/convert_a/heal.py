"""Healing conversion (a)'s keys-as-values layers: distil each full-attention layer's attention sub-block onto
Gemma 3's residual stream at the same point (`python -m dg_lsp.bench.convert_a parity --heal-minutes M`)."""

from __future__ import annotations

import sys
import time

import torch


def heal(g3, dg, report, seqs, minutes: float, lr: float = 1e-4, val: int = 4) -> dict:
    """Layer-local distillation of the keys-as-values layers' attention sub-blocks. Each one is trained in Gemma 3's
    own parametrization (q/k/v/o projections and q/k norm weights, rebuilt into the DiffusionGemma layout by
    `convert_dg.full_kv_tensors` at every step, so the tiny and huge scale factors of the layout never meet the
    optimiser) so that the residual stream after the sub-block, fed the converted model's own input to the layer,
    matches Gemma 3's residual stream at the same point (squared error over that of Gemma 3's sub-block output).
    The MLP after it is exact given its input, so it is not run. Later layers' inputs are recomputed after the
    earlier ones are healed. The budget is split evenly; the last `val` sequences are held out for the loss."""
    targets = [(i, r) for i, r in enumerate(report["layers"]) if r["kind"] == "full-kv"]
    n_train = len(seqs) - val
    log = {"minutes": minutes, "lr": lr, "train_sequences": n_train, "held_out_sequences": val,
           "tokens_per_sequence": max(len(x) for x in seqs), "layers": {}}
    for li, r in targets:
        log["layers"][li] = _heal_layer(g3, dg, li, r, seqs, minutes * 60 / len(targets), lr, val)
    dg.eval()
    return log


def _heal_layer(g3, dg, li: int, r: dict, seqs, seconds: float, lr: float, val: int) -> dict:
    """Train converted layer `li` (report entry `r`) for `seconds`; copy the result into the model."""
    from torch.func import functional_call

    from dg_lsp.engine.gemma3 import convert_dg as C

    cfg = g3.config
    n_train = len(seqs) - val
    t0 = time.perf_counter()
    D = dg.config.text_config.per_layer_config[li].head_dim
    g3_layer = g3.model.layers[r["src"]]
    src = g3_layer.self_attn
    fit = C.FullFit(rho=r["rho"], key_gain=r["key_gain"], value_gain=r["value_gain"])
    data = [(_dg_input(dg, ids, li), _g3_mid(g3, g3_layer, ids)) for ids in seqs]
    P = {n: getattr(src, m).weight.detach().float().clone().requires_grad_(True)
         for n, m in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj"),
                      ("q_norm", "q_norm"), ("k_norm", "k_norm"))}
    layer = dg.model.encoder.language_model.layers[li]
    for p in layer.parameters():
        p.requires_grad_(False)

    def weights():
        t = C.full_kv_tensors(**P, fit=fit, D=D, d=cfg.head_dim, n_heads=cfg.num_attention_heads,
                              n_kv=cfg.num_key_value_heads, scaling=cfg.query_pre_attn_scalar ** -0.5)
        return {f"{n}.weight": v for n, v in t.items()}

    def loss_of(item, w):
        x, (want, scale) = item
        h = x["hidden"]
        out, _ = functional_call(layer.self_attn, w, (), {
            "hidden_states": layer.input_layernorm(h), "position_embeddings": x["position_embeddings"],
            "attention_mask": x["attention_mask"]})
        mid = h + layer.post_attention_layernorm(out)
        return (mid - want).pow(2).sum() / scale

    def held_loss():
        with torch.no_grad():
            w = weights()
            return sum(float(loss_of(item, w)) for item in data[n_train:]) / val

    before = held_loss()
    t_data = time.perf_counter() - t0
    opt = torch.optim.Adam(P.values(), lr=lr)
    deadline = time.perf_counter() + seconds
    steps = 0
    while time.perf_counter() < deadline:
        loss = loss_of(data[steps % n_train], weights())
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    after = held_loss()
    with torch.no_grad():
        for name, v in weights().items():
            layer.self_attn.get_parameter(name).copy_(v)  # tied: the decoder's copy changes with it
    print(f"healed layer {li}: {steps} steps, held-out relative error {before:.4f} -> {after:.4f}",
          file=sys.stderr, flush=True)
    return {"steps": steps, "data_s": round(t_data, 1), "held_out_loss_before": before, "held_out_loss_after": after}


@torch.no_grad()
def _g3_mid(g3, layer, ids):
    """Gemma 3's residual stream after `layer`'s attention sub-block, and the energy of that sub-block's output."""
    got = {}
    h1 = layer.register_forward_pre_hook(lambda m, a, kw: got.__setitem__("h", a[0] if a else kw["hidden_states"]),
                                         with_kwargs=True)
    h2 = layer.post_attention_layernorm.register_forward_hook(lambda m, a, out: got.__setitem__("pan", out))
    try:
        g3.model(input_ids=torch.tensor([ids]))
    finally:
        h1.remove()
        h2.remove()
    return got["h"] + got["pan"], float(got["pan"].pow(2).sum())


@torch.no_grad()
def _dg_input(dg, ids, li):
    got = {}
    enc = dg.model.encoder.language_model

    def grab(module, a, kw):
        got.setdefault("x", (a, kw))  # returns None: the layer's inputs are left as they are

    h = enc.layers[li].register_forward_pre_hook(grab, with_kwargs=True)
    try:
        dg.model.encoder(input_ids=torch.tensor([ids]))
    finally:
        h.remove()
    args, kw = got["x"]
    hidden = args[0] if args else kw["hidden_states"]
    return {"hidden": hidden.detach(), "position_embeddings": kw["position_embeddings"],
            "attention_mask": kw["attention_mask"]}
