"""The diffusion adapter of a pretrained Gemma 3: low-rank deltas that act only in the decoder pass.

The encoder is the pretrained causal model, untouched: the prompt's KV cache, the prefix cache and the
autoregressive twin are the base model's. The decoder is the same weights plus LoRA deltas, attending
bidirectionally over that cache and the canvas. One switch (`AdapterState.active`) turns the deltas on for
decoder passes only, so one set of weights serves both roles. A learned `<mask>` embedding replaces the
base model's (which pretraining never used).

The canvas gate (`future_bias`, optional, one learned scalar per query head): an additive attention bias on every
canvas key that lies to the right of the querying row. Very negative, the decoder pass is causal within the canvas,
so with zero deltas a clean canvas row computes exactly the base model's next-token logits (the AR start); training
opens the gate as far as seeing the suffix head and the other rows pays. 0 is fully bidirectional.

The mask gate (`mask_bias`, optional, one scalar per query head): the same bias, but on future canvas keys that hold
`<mask>` (no content, only a position). Without it the canvas gate covers them too (every adapter trained before it).
With it the two are separate: a very negative mask gate keeps a row from reading the masks to its right, so the
canvas gate can open on the pinned suffix head and accepted slots to the right without opening on the masks too
(docs/results/gemma-adaptation.md, sixth session).

The suffix gate (`suffix_bias`, optional, fixed, one scalar per query head): the same bias again, on canvas keys right
of the row that are pinned (the suffix head), given `pinned` [B, L]. With it the suffix head can be open (0) while the
canvas gate keeps accepted slots to the right shut, so re-drawing the accepted slots stays causal (sampler.py's
left-to-right rule) and the decoder still reads where the hole must end. The suffix head's own rows then read the hole
slots through the canvas gate, so no hole row learns about the slots to its right by way of the suffix head.

The end head (`end_row` [H] and `end_bias` [1], optional): a learned score added to the pad's output column, which
ends the hole. The output head is the frozen tied embedding, and pretraining never used the pad (the base model's
log p(pad) is about -40 on code), so only the deltas could raise it, shared with every other output; the end head
gives the decision to end its own parameters (`decoder_logits`). Zero at the start: exactly the frozen head.

Used by the trainer (dg_lsp/train/gemma/) and by the engine's Gemma 3 runner, so both run the same code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from . import packed as P
from .cache_view import ReadOnlyCache
from .int8 import Int8Linear

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class AdapterState:
    active: bool = False
    packed: bool = True  # layers read their prepacked copies where they have them (False: choose's plain timing)


class LoRALinear(nn.Module):
    """y = base(x) + (x A^T B^T) * scale while `state.active`; base weights frozen.

    For inference, `merge()` keeps a second copy of the weight with the delta folded in (W + B A * scale, summed in
    float32 and stored in the base weight's dtype), so a decoder pass is one matmul per linear instead of three and
    two casts; the base weight itself is untouched, because the encoder and the AR twin use it. The merged copy is
    used only without autograd (training always runs the unmerged path, so gradients reach A and B) and only while
    it is fresh: any later change to A, B or the base weight (an optimizer step, a load, a dtype cast) makes the
    layer drop it and run unmerged until the next `merge()`."""

    def __init__(self, base: nn.Linear, rank: int, alpha: float, state: AdapterState):
        super().__init__()
        self.base = base
        self.state = state
        self.scale = alpha / rank
        dev, dt = base.weight.device, torch.float32
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features, device=dev, dtype=dt))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank, device=dev, dtype=dt))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.merged: torch.Tensor | None = None  # a plain attribute: not in state_dict, not moved by .to()
        self._merged_key: tuple | None = None
        self.int8 = None  # the merged weight as an int8.Int8Linear: dtype int8 (pack_int8)
        self._int8_key: tuple | None = None
        # packed.PackedWeight copies (use_packed): of the base weight, and of the merged one in its place
        self.packed_base: P.PackedWeight | None = None
        self.packed_merged: P.PackedWeight | None = None
        self._packed_key: tuple | None = None

    def _key(self) -> tuple:
        """What a merged weight was built from (checked on every decoder pass, so kept to plain attribute reads): the
        version counters that in-place changes bump, the storages that a reassignment or cast replaces, the dtype."""
        a, b, w = self.lora_a, self.lora_b, self.base.weight
        return a._version, b._version, w._version, a.data_ptr(), b.data_ptr(), w.data_ptr(), w.dtype

    @torch.no_grad()
    def merge(self) -> None:
        w = self.base.weight
        self.merged = (w.float() + (self.lora_b.float() @ self.lora_a.float()) * self.scale).to(w.dtype)
        self._merged_key = self._key()
        self.packed_base = self.packed_merged = self._packed_key = None  # use_packed() packs the new ones

    def unmerge(self) -> None:
        self.merged, self._merged_key = None, None
        self.packed_base = self.packed_merged = self._packed_key = None

    @torch.no_grad()
    def use_packed(self, on: bool, keep_merged: bool = False, base: bool = False) -> None:
        """A prepacked float32 copy (engine/gemma3/packed.py) of the merged weight, which replaces the plain merged copy
        (no memory added) and serves every decoder pass without autograd while the weights it was made from are
        unchanged; with `base`, also one of the base weight, for the base model's passes of at most
        packed.MAX_ROWS rows for its dtype (one more copy of the weights). `keep_merged` keeps the plain merged copy
        too (for timing both; `release_merged` drops it later). `on=False` drops the packed copies."""
        self.packed_base = self.packed_merged = self._packed_key = None
        if self.merged is None or self._merged_key != self._key():
            self.merge()  # off: the plain merged copy back (packing dropped it)
        if not on:
            return
        self.packed_merged = P.PackedWeight(self.merged)
        self.packed_base = P.PackedWeight(self.base.weight) if base else None
        self._packed_key = self._key()
        if not keep_merged:
            self.release_merged()

    def release_merged(self) -> None:
        """Drop the plain merged copy where a fresh packed one serves every decoder pass (_merged_key stays, to tell
        the packed copy fresh)."""
        if self.packed_merged is not None and self._packed_key == self._key():
            self.merged = None

    @torch.no_grad()
    def pack_int8(self) -> None:
        """An int8 copy of the merged weight (engine/gemma3/int8.py), used for it (decoder passes) without autograd
        while the weights it was made from are unchanged. The base weight (encoder, verification, AR twin) stays."""
        if self.merged is None or self._merged_key != self._key():
            self.merge()
        self.int8, self._int8_key = Int8Linear(self.merged), self._key()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.packed_merged is not None and self.state.packed and not torch.is_grad_enabled():
            if self._packed_key != self._key():  # stale: the weights changed since use_packed()
                self.packed_base = self.packed_merged = self._packed_key = None
            elif not self.state.active:
                if self.packed_base is not None and P.fits(x, self.packed_base.dtype):
                    return self.packed_base(x, self.base.bias)
            elif self.int8 is None and x.dtype == self.packed_merged.dtype and x.device.type == "cpu":
                return self.packed_merged(x, self.base.bias)
        if not self.state.active:
            return self.base(x)
        if self.int8 is not None and not torch.is_grad_enabled():
            if self._int8_key == self._key():
                y = self.int8(x)
                return (y if self.base.bias is None else y + self.base.bias).to(x.dtype)
            self.int8 = None  # stale: the weights changed since pack_int8()
        if self.merged is not None and not torch.is_grad_enabled():
            if self._merged_key == self._key() and x.dtype == self.merged.dtype:
                return nn.functional.linear(x, self.merged, self.base.bias)
            self.unmerge()  # stale: the weights changed since merge()
        y = self.base(x)
        a, b = self.lora_a.to(x.dtype), self.lora_b.to(x.dtype)
        return y + (x @ a.t()) @ b.t() * self.scale


@dataclass
class Adapter:
    """What an adapted model carries besides the base weights."""

    state: AdapterState
    modules: dict[str, LoRALinear] = field(default_factory=dict)
    mask_embedding: nn.Parameter | None = None  # [H], the decoder's <mask> input (already scaled)
    mask_id: int | None = None
    rank: int = 0
    alpha: float = 0.0
    future_bias: nn.Parameter | None = None  # [heads] the canvas gate (None: fully bidirectional)
    mask_bias: nn.Parameter | None = None  # [heads] the mask gate (None: future masks share the canvas gate)
    suffix_bias: nn.Parameter | None = None  # [heads] the suffix gate (None: the suffix head shares the canvas gate)
    end_row: nn.Parameter | None = None  # [H] added to the pad's output row (the end head; None: none)
    end_bias: nn.Parameter | None = None  # [1] added to the pad's logit

    def merge(self) -> None:
        """Fold the deltas into an inference copy of each adapted weight (LoRALinear.merge; about the size of the
        layers' linears again, in their dtype)."""
        for m in self.modules.values():
            m.merge()

    def unmerge(self) -> None:
        for m in self.modules.values():
            m.unmerge()

    def pack_int8(self) -> None:
        """An int8 copy of each merged weight, for decoder passes (LoRALinear.pack_int8; dtype int8)."""
        for m in self.modules.values():
            m.pack_int8()

    def use_packed(self, on: bool, keep_merged: bool = False, base: bool = False) -> None:
        """Prepacked float32 weights for every adapted linear, or none (LoRALinear.use_packed)."""
        self.state.packed = True
        for m in self.modules.values():
            m.use_packed(on, keep_merged, base)

    def release_merged(self) -> None:
        for m in self.modules.values():
            m.release_merged()

    def parameters(self) -> list[nn.Parameter]:
        ps = [p for m in self.modules.values() for p in (m.lora_a, m.lora_b)]
        ps += [self.mask_embedding] if self.mask_embedding is not None else []
        ps += [self.future_bias] if self.future_bias is not None else []
        ps += [p for p in (self.end_row, self.end_bias) if p is not None]
        return ps + [g for g in (self.mask_bias, self.suffix_bias) if g is not None and g.requires_grad]

    def state_dict(self) -> dict[str, torch.Tensor]:
        out = {}
        for name, m in self.modules.items():
            out[f"{name}.lora_a"] = m.lora_a.detach().contiguous()
            out[f"{name}.lora_b"] = m.lora_b.detach().contiguous()
        if self.mask_embedding is not None:
            out["mask_embedding"] = self.mask_embedding.detach().contiguous()
        if self.future_bias is not None:
            out["future_bias"] = self.future_bias.detach().contiguous()
        for name in ("mask_bias", "suffix_bias", "end_row", "end_bias"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name).detach().contiguous()
        return out

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        missing = []
        with torch.no_grad():
            for name, m in self.modules.items():
                for part in ("lora_a", "lora_b"):
                    key = f"{name}.{part}"
                    if key not in tensors:
                        missing.append(key)
                        continue
                    getattr(m, part).copy_(tensors[key].to(torch.float32))
            if self.mask_embedding is not None and "mask_embedding" in tensors:
                self.mask_embedding.copy_(tensors["mask_embedding"].to(self.mask_embedding.dtype))
            # an adapter trained with the canvas gate / the mask gate / the suffix gate / the end head
            for name in ("future_bias", "mask_bias", "suffix_bias", "end_row", "end_bias"):
                if name in tensors:
                    gate = tensors[name].to(torch.float32).clone()
                    if getattr(self, name) is None:
                        setattr(self, name, nn.Parameter(gate, requires_grad=False))
                    else:
                        getattr(self, name).copy_(gate)
        if missing:
            raise KeyError(f"adapter is missing {len(missing)} tensors, e.g. {missing[0]}")


def inject(model: nn.Module, rank: int, alpha: float, mask_id: int | None,
           targets: tuple[str, ...] = TARGETS, future_gate: float | None = None,
           mask_gate: float | None = None, end_head: bool = False, suffix_gate: float | None = None) -> Adapter:
    """Wrap every target linear of a Gemma3 text model's layers in a LoRALinear (inactive by default).
    `future_gate`: start a canvas gate at this bias (e.g. -6: nearly causal); None: no gate. `mask_gate`: a separate,
    fixed (not trained) gate at this bias on future `<mask>` keys (e.g. -1e4: never read); needs `future_gate`.
    `suffix_gate`: likewise a fixed gate at this bias on pinned keys to the right (the suffix head); needs
    `future_gate`. `end_head`: a trained end head, zero at the start (see the module docstring)."""
    state = AdapterState()
    adapter = Adapter(state=state, mask_id=mask_id, rank=rank, alpha=alpha)
    text = text_model(model)
    for li, layer in enumerate(text.layers):
        for parent_name, parent in (("self_attn", layer.self_attn), ("mlp", layer.mlp)):
            for t in targets:
                base = getattr(parent, t, None)
                if isinstance(base, nn.Linear):
                    wrapped = LoRALinear(base, rank, alpha, state)
                    setattr(parent, t, wrapped)
                    adapter.modules[f"layers.{li}.{parent_name}.{t}"] = wrapped
    for p in model.parameters():
        p.requires_grad_(False)
    for p in adapter.parameters():
        p.requires_grad_(True)
    if mask_id is not None:
        with torch.no_grad():
            init = text.embed_tokens(torch.tensor([mask_id], device=text.embed_tokens.weight.device))[0]
        adapter.mask_embedding = nn.Parameter(init.detach().to(torch.float32).clone())
    if future_gate is not None:
        heads = text.config.num_attention_heads
        adapter.future_bias = nn.Parameter(torch.full((heads,), float(future_gate), dtype=torch.float32,
                                                      device=text.embed_tokens.weight.device))
        if mask_gate is not None:
            adapter.mask_bias = nn.Parameter(torch.full((heads,), float(mask_gate), dtype=torch.float32,
                                                        device=text.embed_tokens.weight.device), requires_grad=False)
        if suffix_gate is not None:
            adapter.suffix_bias = nn.Parameter(torch.full((heads,), float(suffix_gate), dtype=torch.float32,
                                                          device=text.embed_tokens.weight.device), requires_grad=False)
    if end_head:
        dev = text.embed_tokens.weight.device
        adapter.end_row = nn.Parameter(torch.zeros(text.config.hidden_size, dtype=torch.float32, device=dev))
        adapter.end_bias = nn.Parameter(torch.zeros(1, dtype=torch.float32, device=dev))
    return adapter


def head_product(hidden: torch.Tensor, head: torch.Tensor) -> torch.Tensor:
    """hidden [..., H] @ head [V', H]^T, in hidden's dtype, as one 2-D product over the rows. A 3-D operand whose
    batch stride is not rows x H (a slice such as `hidden[:, -1:]` of a longer pass) sends `@` to a batched kernel
    that, in bfloat16 on the CPU, took 50-65x as long (164 ms against 2.5 ms for one row of a 32k head, torch
    2.13 on AMX); the 2-D view (a copy where no view exists) keeps the fast one. Same products, same values."""
    flat = hidden.reshape(-1, hidden.shape[-1])
    return (flat @ head.t().to(hidden.dtype)).view(*hidden.shape[:-1], head.shape[0])


def decoder_logits(adapter: Adapter, hidden: torch.Tensor, head: torch.Tensor, end_column: int | None,
                   head_kernel=None) -> torch.Tensor:
    """A decoder pass's float32 logits over the restricted head: hidden [..., H] @ head [V', H]^T (or
    `head_kernel(hidden)`, the same head as an int8.Int8Linear or a packed.PackedWeight), plus, with an end head,
    `hidden @ end_row + end_bias` on the pad's column `end_column`."""
    logits = head_kernel(hidden) if head_kernel is not None else head_product(hidden, head).float()
    if adapter.end_row is None or end_column is None:
        return logits
    extra = hidden.float() @ adapter.end_row.float() + adapter.end_bias.float()  # [...]
    logits[..., end_column] += extra  # in place on the fresh float32 logits (autograd saves neither)
    return logits


def text_model(model: nn.Module) -> nn.Module:
    """The Gemma3TextModel inside a causal-LM wrapper (or the model itself)."""
    return model.model if hasattr(model, "model") and hasattr(model.model, "layers") else model


def gate_masks(adapter: Adapter, masks: dict[str, torch.Tensor], length: int, dtype=torch.float32,
               ids: torch.LongTensor | None = None, pinned: torch.BoolTensor | None = None):
    """Boolean decoder masks {kind: [B, 1, L, S + L]} -> additive masks {kind: [B, heads, L, S + L]}: 0 where a key
    is visible, -inf where not, and the canvas gate on visible canvas keys right of the row (the mask gate instead on
    those that hold `<mask>` in `ids` [B, L], and the suffix gate on those `pinned` [B, L] marks, when the adapter
    has them). Unchanged without a gate."""
    if adapter.future_bias is None:
        return masks
    out = {}
    for kind, m in masks.items():
        total = m.shape[-1]
        future = torch.zeros(length, total, dtype=torch.bool, device=m.device)
        future[:, total - length:] = torch.ones(length, length, dtype=torch.bool, device=m.device).triu(1)
        gate = adapter.future_bias.to(device=m.device, dtype=dtype).view(1, -1, 1, 1)
        if adapter.mask_bias is not None and ids is not None:
            masked = torch.zeros(ids.shape[0], 1, 1, total, dtype=torch.bool, device=m.device)
            masked[..., total - length:] = (ids == adapter.mask_id).view(ids.shape[0], 1, 1, length)
            gate = torch.where(masked, adapter.mask_bias.to(device=m.device, dtype=dtype).view(1, -1, 1, 1), gate)
        suffix = adapter.suffix_bias is not None and pinned is not None
        if suffix:
            mark = pinned.to(m.device)
            fixed = torch.zeros(mark.shape[0], 1, 1, total, dtype=torch.bool, device=m.device)
            fixed[..., total - length:] = mark.view(mark.shape[0], 1, 1, length)
            gate = torch.where(fixed, adapter.suffix_bias.to(device=m.device, dtype=dtype).view(1, -1, 1, 1), gate)
        bias = torch.where(future.view(1, 1, length, total), gate, torch.zeros((), dtype=dtype, device=m.device))
        if suffix:
            # the suffix head's rows read the hole slots on their left through the canvas gate: else a hole row would
            # read, through the suffix head, the slots to its own right that the canvas gate keeps from it
            hole_keys = torch.zeros(mark.shape[0], 1, 1, total, dtype=torch.bool, device=m.device)
            hole_keys[..., total - length:] = ~mark.view(mark.shape[0], 1, 1, length)
            behind = mark.view(mark.shape[0], 1, length, 1) & hole_keys & ~future.view(1, 1, length, total)
            bias = torch.where(behind, adapter.future_bias.to(device=m.device, dtype=dtype).view(1, -1, 1, 1), bias)
        out[kind] = torch.where(m, bias, torch.full((), float("-inf"), dtype=dtype, device=m.device))
    return out


def decoder_embeddings(model: nn.Module, adapter: Adapter, ids: torch.LongTensor) -> torch.Tensor:
    """Input embeddings of a canvas [B, L] -> [B, L, H]: the base model's, with the learned <mask>."""
    text = text_model(model)
    emb = text.embed_tokens(ids)
    if adapter.mask_embedding is not None:
        is_mask = (ids == adapter.mask_id).unsqueeze(-1)
        emb = torch.where(is_mask, adapter.mask_embedding.to(emb.dtype), emb)
    return emb


def decoder_hidden(model: nn.Module, adapter: Adapter, ids: torch.LongTensor, positions: torch.LongTensor,
                   cache: ReadOnlyCache, masks: dict[str, torch.Tensor],
                   pinned: torch.BoolTensor | None = None) -> torch.Tensor:
    """One decoder pass: adapters on, bidirectional 4D masks over cache + canvas (the gates applied, if the
    adapter has them; `pinned` [B, L] marks the suffix head for the suffix gate). Returns final-norm hidden states
    [B, L, H]."""
    text = text_model(model)
    emb = decoder_embeddings(model, adapter, ids)
    masks = gate_masks(adapter, masks, ids.shape[1], emb.dtype, ids, pinned)
    adapter.state.active = True
    try:
        out = text(inputs_embeds=emb, position_ids=positions,
                   past_key_values=cache, attention_mask=masks, use_cache=False)
    finally:
        adapter.state.active = False
    return out.last_hidden_state


def base_causal_hidden(model: nn.Module, ids: torch.LongTensor, positions: torch.LongTensor, cache: ReadOnlyCache,
                       masks: dict[str, torch.Tensor]) -> torch.Tensor:
    """The base model (adapters off) over a clean canvas, causal within it, on the same cache view and visibility as
    a decoder pass: row j is the pretrained next-token prediction after the canvas's first j + 1 tokens (the
    trainer's AR teacher). Returns final-norm hidden states [B, L, H]."""
    length = ids.shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=ids.device).tril()
    causal_masks = {}
    for kind, m in masks.items():
        m = m.clone()
        m[..., m.shape[-1] - length:] &= causal
        causal_masks[kind] = m
    out = text_model(model)(input_ids=ids, position_ids=positions, past_key_values=cache, attention_mask=causal_masks,
                            use_cache=False)
    return out.last_hidden_state


def encoder_pass(model: nn.Module, ids: torch.LongTensor, cache, positions: torch.LongTensor | None = None):
    """The base model, causal, adapters off: writes the prompt's KV into `cache` (a transformers Cache)."""
    text = text_model(model)
    return text(input_ids=ids, past_key_values=cache, position_ids=positions, use_cache=True)
