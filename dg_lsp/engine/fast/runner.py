"""StaticRunner: the denoising step with fixed shapes, so it can run compiled (CUDA graphs on a GPU).

A drop-in for `ModelRunner` inside `DenoiseLoop`: same `decoder_mask()` / `decode()` calls, so the
loop, its sampling and its random numbers are untouched and the tokens match the eager runner for
the same seed. What changes is what a decoder step sees:

- the prompt's KV is copied from the eager `DynamicCache` into a `FixedKVCache` (fixed capacity);
- the canvas is padded on the right to a width bucket (padding is pinned and masked out of
  attention; its logits are dropped), so hole-length batches of varying suffix heads share a graph;
- the first step's missing self-conditioning becomes zero logits with `self_conditioning_mask`
  False (the model zeroes that signal exactly), so step 1 and later steps share a graph;
- inputs are copied into persistent buffers, the step reads nothing else.

`torch.compile` is applied here, at the call site, and only when asked (`compile=True`).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import torch

from ..loader import LoadedModel
from ..runner import ModelRunner
from .cache import FixedKVCache

log = logging.getLogger(__name__)

DEFAULT_WIDTH_BUCKETS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass
class StepInputs:
    """Persistent input buffers of one (batch, width) shape."""

    canvas: torch.LongTensor  # [B, W]
    self_conditioning: torch.Tensor  # [B, W, V] in the embedding dtype
    self_conditioning_on: torch.BoolTensor  # [B]
    positions: torch.LongTensor  # [1, W]
    masks: dict[str, torch.Tensor]  # {kind: [B, 1, W, slots + W]}


@dataclass
class StepPlan:
    """What `decoder_mask()` hands `decode()` for one denoising run."""

    cache: FixedKVCache
    inputs: StepInputs
    length: int  # the loop's canvas width L <= W


def graph_safe_experts(model, device: torch.device) -> None:
    """Make the MoE experts capturable by a CUDA graph.

    Under `torch.compile`, transformers' `grouped_mm` experts take a fallback for weights that are not
    bfloat16, and that fallback reads the per-expert token counts on the host, which a CUDA graph cannot
    capture ("Cannot copy between CPU and CUDA tensors during CUDA graph capture", seen on an H200 with a
    float32 model). For such weights this switches the whole model to `batched_mm` (each token's expert
    matrices gathered on the device: fixed shapes, the same sums). bfloat16 weights and other devices keep
    what they have."""
    config = getattr(model.config, "text_config", model.config)
    if device.type != "cuda" or getattr(config, "_experts_implementation", None) != "grouped_mm":
        return
    if model.dtype == torch.bfloat16:
        return
    model.set_experts_implementation("batched_mm")
    log.info("experts: batched_mm for CUDA graphs (grouped_mm falls back to host-synchronised code for %s)",
             model.dtype)


def step_or_eager(owner, args: tuple, what: str):
    """`owner._step(*args)` (a fixed-shape step, compiled or not), starting a CUDA-graph step where `owner._graphs`.
    A compiled step that raises is logged once, and `owner` goes on eager on the same fixed shapes: its `_step`
    becomes its `_forward`, `compiled` and `_graphs` False. Shared by StaticRunner and FixedAutoregressor."""
    if owner._graphs:
        torch.compiler.cudagraph_mark_step_begin()
    try:
        return owner._step(*args)
    except Exception:
        if not owner.compiled:
            raise
        log.exception("compiled %s step failed; continuing eager (same fixed shapes)", what)
        owner._step, owner.compiled, owner._graphs = owner._forward, False, False
        return owner._step(*args)


def bucket_width(length: int, buckets: tuple[int, ...] | None) -> int:
    if not buckets:
        return length
    return next((w for w in sorted(buckets) if w >= length), length)


class StaticRunner(ModelRunner):
    def __init__(self, loaded: LoadedModel, capacity: int = 2048, width_buckets: tuple[int, ...] | None = None,
                 compile: bool = False, compile_mode: str = "reduce-overhead"):
        super().__init__(loaded)
        self.capacity = capacity
        self.width_buckets = width_buckets
        self.compiled = compile
        self.compile_mode = compile_mode
        self.pad_id = self.text_config.pad_token_id or 0
        self.embed_dtype = self.model.model.decoder.embed_tokens.weight.dtype
        self._caches: dict[int, FixedKVCache] = {}
        self._inputs: dict[tuple[int, int], StepInputs] = {}
        if compile:
            graph_safe_experts(self.model, self.device)
        self._step = torch.compile(self._forward, mode=compile_mode, dynamic=False) if compile else self._forward
        self._graphs = compile and self.device.type == "cuda" and "reduce-overhead" in compile_mode

    def _forward(self, canvas, cache, self_conditioning, self_conditioning_on, positions, masks):
        out = self.model(decoder_input_ids=canvas, past_key_values=cache, self_conditioning_logits=self_conditioning,
                         self_conditioning_mask=self_conditioning_on, decoder_attention_mask=masks,
                         decoder_position_ids=positions)
        return out.logits  # [B, W, V] float32, soft-capped

    # -- persistent buffers --------------------------------------------------------------------
    def fixed_cache(self, batch_size: int, prompt_length: int) -> FixedKVCache:
        """The batch's fixed cache; grows (a new shape, so a recompile) only past `capacity`."""
        cache = self._caches.get(batch_size)
        if cache is None or cache.capacity < prompt_length:
            self.capacity = max(self.capacity, -(-prompt_length // 256) * 256)
            cache = FixedKVCache(self.text_config, batch_size, self.capacity, self.embed_dtype, self.device)
            if self.compiled:
                cache.mark_static()
            self._caches[batch_size] = cache
            self._inputs = {k: v for k, v in self._inputs.items() if k[0] != batch_size}
        return cache

    def _step_inputs(self, cache: FixedKVCache, width: int) -> StepInputs:
        key = (cache.batch_size, width)
        if key not in self._inputs:
            b, dev = cache.batch_size, self.device
            masks = cache.decoder_masks(torch.ones(b, width, dtype=torch.bool))
            inputs = StepInputs(
                canvas=torch.full((b, width), self.pad_id, dtype=torch.long, device=dev),
                self_conditioning=torch.zeros(b, width, self.vocab_size, dtype=self.embed_dtype, device=dev),
                self_conditioning_on=torch.zeros(b, dtype=torch.bool, device=dev),
                positions=torch.zeros(1, width, dtype=torch.long, device=dev),
                masks={k: m.contiguous() for k, m in masks.items()},
            )
            if self.compiled:
                for t in (inputs.canvas, inputs.self_conditioning, inputs.self_conditioning_on, inputs.positions,
                          *inputs.masks.values()):
                    torch._dynamo.mark_static_address(t)
            self._inputs[key] = inputs
        return self._inputs[key]

    def _prompt_length(self, cache) -> int:
        kinds = self.text_config.layer_types
        return cache.layers[kinds.index("full_attention")].keys.shape[-2] if "full_attention" in kinds \
            else int(cache.get_seq_length())

    # -- the ModelRunner surface DenoiseLoop uses ----------------------------------------------
    @torch.inference_mode()
    def decoder_mask(self, cache, valid: torch.BoolTensor) -> StepPlan:
        """Load the prompt cache into fixed buffers and set the masks and positions of this run."""
        b, length = valid.shape
        fixed = self.fixed_cache(b, self._prompt_length(cache)).load(cache)
        width = bucket_width(length, self.width_buckets)
        inputs = self._step_inputs(fixed, width)
        padded = torch.zeros(b, width, dtype=torch.bool)
        padded[:, :length] = valid.cpu()
        for kind, mask in fixed.decoder_masks(padded).items():
            inputs.masks[kind].copy_(mask)
        inputs.positions.copy_(torch.arange(fixed.length, fixed.length + width).unsqueeze(0))
        inputs.canvas.fill_(self.pad_id)
        return StepPlan(fixed, inputs, length)

    @torch.inference_mode()
    def decode(self, canvas: torch.LongTensor, cache, position_ids: torch.LongTensor,
               self_conditioning_logits: torch.Tensor | None, plan: StepPlan) -> torch.Tensor:
        """One decoder forward; `cache` and `position_ids` are already in the plan. Returns [B, L, V]."""
        inputs, length = plan.inputs, plan.length
        inputs.canvas[:, :length].copy_(canvas)
        if self_conditioning_logits is None:
            inputs.self_conditioning_on.fill_(False)
        else:
            inputs.self_conditioning[:, :length].copy_(self_conditioning_logits)
            inputs.self_conditioning_on.fill_(True)
        args = (inputs.canvas, plan.cache, inputs.self_conditioning, inputs.self_conditioning_on, inputs.positions,
                inputs.masks)
        logits = step_or_eager(self, args, "decoder")[:, :length]
        return logits.clone() if self.compiled else logits  # a CUDA graph reuses its output memory

    # -- warm-up ---------------------------------------------------------------------------------
    @torch.inference_mode()
    def warm(self, shapes: list[tuple[int, int]], prompt_length: int = 8, repeats: int = 3) -> None:
        """Run each (batch, width) shape a few times on a dummy prompt so compilation and graph
        capture happen now, not on the first request."""
        ids = [self.text_config.bos_token_id or 0] * max(1, prompt_length)
        dyn, _ = self.encode(ids)
        for batch, width in shapes:
            if batch > 1:
                dyn.batch_repeat_interleave(batch)
            plan = self.decoder_mask(dyn, torch.ones(batch, width, dtype=torch.bool))
            canvas = torch.full((batch, width), self.pad_id, dtype=torch.long, device=self.device)
            sc = None
            for _ in range(repeats):
                logits = self.decode(canvas, dyn, None, sc, plan)
                sc = logits.to(self.embed_dtype)
            if batch > 1:
                dyn.batch_select_indices(torch.tensor([0], device=self.device))


FAST_MODES = ("auto", "on", "off")


def denoise_runner(runner: ModelRunner, fast: str | None = None, **options) -> ModelRunner:
    """The runner a `DenoiseLoop` should use: the fixed-shape path, compiled, on CUDA ("auto");
    always the fixed-shape path ("on"; compiled only on CUDA, inductor on CPU takes minutes);
    or `runner` itself ("off"). Default: $DG_LSP_FAST, else "auto". `options` go to `StaticRunner`."""
    fast = fast or os.environ.get("DG_LSP_FAST") or "auto"
    if fast not in FAST_MODES:
        raise ValueError(f"fast must be one of {FAST_MODES}, got {fast!r}")
    cuda = runner.device.type == "cuda"
    if fast == "off" or (fast == "auto" and not cuda) or not getattr(runner, "supports_static", True):
        return runner
    options.setdefault("compile", cuda)
    options.setdefault("width_buckets", DEFAULT_WIDTH_BUCKETS)
    return StaticRunner(runner.loaded, **options)
