"""FixedAutoregressor: greedy next-token decoding through the encoder (the diffusion model's own
weights) with a fixed-shape KV cache, so one token step can run compiled.

This is the fair autoregressive baseline on a GPU: same weights, same prompt cache, same kind of
compiled step as the diffusion fast path. The prompt is encoded eagerly (as the engine does), its
KV copied into a `FixedKVCache`, then each token is one encoder step at a fixed shape: token ids,
position, write slots and masks live in persistent buffers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from ..runner import ModelRunner
from .cache import FixedKVCache
from .runner import graph_safe_experts, step_or_eager


@dataclass
class _TokenInputs:
    ids: torch.LongTensor  # [1, 1]
    positions: torch.LongTensor  # [1, 1]
    masks: dict[str, torch.Tensor]  # {kind: [1, 1, 1, slots]}


class FixedAutoregressor:
    def __init__(self, runner: ModelRunner, compile: bool = False, compile_mode: str = "reduce-overhead"):
        self.runner = runner
        self.model = runner.model
        self.compiled = compile
        if compile:
            graph_safe_experts(self.model, runner.device)
        self._step = torch.compile(self._forward, mode=compile_mode, dynamic=False) if compile else self._forward
        self._graphs = compile and runner.device.type == "cuda" and "reduce-overhead" in compile_mode
        self._state: tuple[FixedKVCache, _TokenInputs] | None = None
        self.last_timings: dict[str, float] = {}

    def _forward(self, ids, positions, cache, masks):
        hidden = self.model.model.encoder.language_model(input_ids=ids, attention_mask=masks, position_ids=positions,
                                                         past_key_values=cache).last_hidden_state
        return self.runner.lm_logits(hidden).argmax(dim=-1)  # [1, 1]

    def _buffers(self, capacity: int) -> tuple[FixedKVCache, _TokenInputs]:
        if self._state is None or self._state[0].capacity != capacity:
            dtype = self.model.model.decoder.embed_tokens.weight.dtype
            cache = FixedKVCache(self.runner.text_config, 1, capacity, dtype, self.runner.device)
            dev = self.runner.device
            inputs = _TokenInputs(torch.zeros(1, 1, dtype=torch.long, device=dev),
                                  torch.zeros(1, 1, dtype=torch.long, device=dev),
                                  {k: m.contiguous() for k, m in cache.encoder_step_masks().items()})
            if self.compiled:
                cache.mark_static()
                for t in (inputs.ids, inputs.positions, *inputs.masks.values()):
                    torch._dynamo.mark_static_address(t)
            self._state = (cache, inputs)
        return self._state

    @torch.inference_mode()
    def generate(self, prompt_ids: list[int], max_new_tokens: int, stop_ids: tuple[int, ...] = (),
                 capacity: int | None = None) -> list[int]:
        """Greedy tokens after the prompt; stops at a token in `stop_ids` (not included).
        `last_timings` gets the prefill and token-loop times (ms, device-synchronised)."""
        sync = torch.cuda.synchronize if self.runner.device.type == "cuda" else (lambda: None)
        t0 = time.perf_counter()
        dyn, hidden = self.runner.encode(prompt_ids)
        needed = len(prompt_ids) + max_new_tokens
        cache, inputs = self._buffers(capacity or -(-needed // 256) * 256)
        cache.load(dyn)
        token = self.runner.lm_logits(hidden[:, -1:]).argmax(dim=-1)  # [1, 1]
        sync()
        t1 = time.perf_counter()
        out: list[int] = []
        for _ in range(max_new_tokens):
            value = int(token)
            if value in stop_ids:
                break
            out.append(value)
            if len(out) == max_new_tokens:
                break
            cache.prepare_write(1)
            for kind, mask in cache.encoder_step_masks().items():
                inputs.masks[kind].copy_(mask)
            inputs.ids.copy_(token)
            inputs.positions.fill_(cache.length)
            token = step_or_eager(self, (inputs.ids, inputs.positions, cache, inputs.masks), "token")
            if self.compiled:
                token = token.clone()
            cache.advance(1)
        sync()
        self.last_timings = {"prefill_ms": (t1 - t0) * 1000.0, "decode_ms": (time.perf_counter() - t1) * 1000.0,
                             "decode_steps": max(0, len(out) - 1)}
        return out
