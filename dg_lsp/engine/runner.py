"""ModelRunner: the only owner of the model and its device. Encodes prompts, runs decoder steps,
and runs the encoder autoregressively (the same weights as an AR baseline)."""

from __future__ import annotations

import torch

from .loader import LoadedModel


def head_logits(head: torch.nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """`head(hidden)` over rows flattened to 2D. A slice such as `hidden[:, -1:]` of a long encode keeps the long
    tensor's batch stride; on CPU (torch 2.13, oneDNN) a 3D linear over such a view ran the 262k-row Gemma head 40x
    slower (1.5 s instead of 38 ms for the first token after a 600-token prompt, one thread)."""
    flat = hidden.reshape(-1, hidden.shape[-1])
    return head(flat).view(*hidden.shape[:-1], -1)


class ModelRunner:
    def __init__(self, loaded: LoadedModel):
        self.loaded = loaded
        self.model = loaded.model
        self.device = torch.device(loaded.device)
        self.text_config = self.model.config.get_text_config(decoder=True)
        self.vocab_size = self.text_config.vocab_size
        self.canvas_length = self.model.config.canvas_length

    supports_static = True  # engine/fast's fixed-shape path can stand in for it
    # True where a hole ends at its first pad (every later slot is forced to pad: the Gemma runner); here pads are
    # only dropped from the answer, wherever they are
    ends_at_first_pad = False
    # True where decode() takes `pinned=` ([B, L], the canvas's pinned positions: the Gemma runner's suffix gate);
    # the denoising loops pass it only then
    reads_pinned = False
    # decode() logits cover the whole vocabulary; a runner with a restricted output head sets its OutputVocab
    # (engine/gemma3/vocab.py) here, and the loop maps logit columns to token ids through it
    output_vocab = None
    # True where the runner has verify() (the base model's causal logits over a canvas: DenoiseLoop's AR-verified
    # decoding, DenoiseParams.verify_weight); the Gemma runner
    verifies = False

    @property
    def output_ids(self):
        """The token id of each logit column (None: column = id)."""
        return None if self.output_vocab is None else self.output_vocab.ids

    def ids_of(self, columns: torch.LongTensor) -> torch.LongTensor:
        """Logit columns -> token ids."""
        return columns if self.output_vocab is None else self.output_vocab.ids[columns]

    def column_of(self, token_id: int) -> int | None:
        """The logit column of a token id (None: the model cannot write it)."""
        if self.output_vocab is None:
            return token_id
        col = int(self.output_vocab.index[token_id])
        return col if col >= 0 else None

    def columns_of(self, ids: torch.LongTensor) -> torch.LongTensor:
        """Token ids -> logit columns (ids the head lacks map to column 0; callers read only hole tokens)."""
        return ids if self.output_vocab is None else self.output_vocab.to_rows(ids).clamp(min=0)

    @property
    def logits_dtype(self):
        """The dtype self-conditioning logits are fed back in."""
        return self.model.model.decoder.embed_tokens.weight.dtype

    def set_dtype(self, dtype) -> None:
        """Cast the model's weights (engine/dtype_auto.py) and refresh what the runner derived from them. What a load
        in `dtype` keeps in float32 stays float32, as it was: the rotary embeddings' inverse frequencies (buffers
        named `*inv_freq`, which transformers computes in float32 whatever the dtype) and `float32_parameters`. A
        plain `model.to(torch.bfloat16)` rounded them: an inverse frequency of 0.8977 became 0.8984, so a
        position's angle drifts by about 0.1 rad at position 150; after that cast, 130 of the seeded 300 HumanEval
        single-line answers passed, against 134 for the model loaded in bfloat16 and 135 in float32
        (docs/results/amx-bf16.md). The buffers are not in the state dict, so dtype_auto's float32 copy could not
        have put them back either."""
        buffers = [(module, name, t) for module in self.model.modules() for name, t in module._buffers.items()
                   if t is not None and name.endswith("inv_freq") and t.dtype == torch.float32]
        params = [(p, p.data) for p in self.float32_parameters() if p.dtype == torch.float32]
        self.model.to(dtype)
        for module, name, t in buffers:  # to() put cast copies in their place: the float32 ones go back
            module._buffers[name] = t
        for p, data in params:
            p.data = data
        self.refresh()

    def float32_parameters(self) -> list:
        """Parameters inside the model that stay float32 when it is cast (set_dtype): none here."""
        return []

    def refresh(self) -> None:
        """Recompute tensors derived from the weights (none here)."""

    def new_cache(self):
        from transformers import DynamicCache

        return DynamicCache(config=self.text_config)

    @torch.inference_mode()
    def encode(self, prompt_ids: list[int], cache=None):
        """Write the prompt's KV into `cache` (a new one if None) and return (cache, last hidden state [1, T, H])."""
        cache = self.new_cache() if cache is None else cache
        start = cache.get_seq_length()
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        positions = torch.arange(start, start + ids.shape[1], device=self.device).unsqueeze(0)
        out = self.model.model.encoder(input_ids=ids, past_key_values=cache, position_ids=positions)
        return out.past_key_values, out.last_hidden_state

    def decoder_mask(self, cache, valid: torch.BoolTensor, key_valid: dict[str, torch.BoolTensor] | None = None):
        """4D masks for rows with padding: every row sees the whole cache (or, for a cross-document batch, its
        own real keys in `key_valid` per layer kind) and its own valid canvas keys."""
        if key_valid is None and bool(valid.all()):
            return None
        b, length = valid.shape
        masks = {}
        for kind in set(self.text_config.layer_types):
            idx = self.text_config.layer_types.index(kind)
            cached = cache.layers[idx].keys.shape[-2]
            m = torch.ones(b, 1, length, cached + length, dtype=torch.bool, device=self.device)
            if key_valid is not None:
                m[..., :cached] = key_valid[kind].to(self.device)[:, None, None, :]
            m[..., cached:] = valid.to(self.device)[:, None, None, :]
            masks[kind] = m
        return masks

    def merge_caches(self, caches: list) -> tuple[object, dict[str, torch.BoolTensor]]:
        """Stack one-row prompt caches of different lengths into one batch cache, right-padded with zeros.

        Returns the cache and, per layer kind, which cached keys of each row are real (for decoder_mask)."""
        merged = self.new_cache()
        key_valid: dict[str, torch.BoolTensor] = {}
        for i, dst in enumerate(merged.layers):
            srcs = [c.layers[i] for c in caches]
            lengths = [s.keys.shape[-2] for s in srcs]
            width = max(lengths)
            head = srcs[0].keys
            keys = head.new_zeros((len(srcs), *head.shape[1:-2], width, head.shape[-1]))
            values = srcs[0].values.new_zeros((len(srcs), *srcs[0].values.shape[1:-2], width, srcs[0].values.shape[-1]))
            for row, (src, n) in enumerate(zip(srcs, lengths)):
                keys[row, ..., :n, :] = src.keys[0, ..., :n, :]
                values[row, ..., :n, :] = src.values[0, ..., :n, :]
            dst.lazy_initialization(keys, values)
            dst.keys, dst.values = keys, values
            if hasattr(dst, "cumulative_length"):
                dst.cumulative_length = max(s.get_seq_length() for s in srcs)
            kind = self.text_config.layer_types[i]
            if kind not in key_valid:
                key_valid[kind] = torch.arange(width) < torch.tensor(lengths)[:, None]
        return merged, key_valid

    @torch.inference_mode()
    def decode(self, canvas: torch.LongTensor, cache, position_ids: torch.LongTensor,
               self_conditioning_logits: torch.Tensor | None, mask,
               self_conditioning_mask: torch.BoolTensor | None = None) -> torch.Tensor:
        """One decoder forward over the canvas: returns soft-capped float32 logits [B, L, V].
        `self_conditioning_mask` [B]: rows set to False get no self-conditioning (their first step)."""
        extra = {} if self_conditioning_mask is None else {"self_conditioning_mask": self_conditioning_mask}
        out = self.model(
            decoder_input_ids=canvas,
            past_key_values=cache,
            self_conditioning_logits=self_conditioning_logits,
            decoder_attention_mask=mask,
            decoder_position_ids=position_ids.to(self.device),
            **extra,
        )
        return out.logits

    def lm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Encoder hidden states -> soft-capped next-token logits, as the model's forward does for the decoder."""
        logits = head_logits(self.model.lm_head, hidden).to(torch.float32)
        cap = self.model.final_logit_softcapping
        return torch.tanh(logits / cap) * cap if cap else logits
