"""Speed on token ids: what `dg-lsp bench gpu` times, through an `Engine`'s runners (docs/GPU.md).

A random-weight model has no tokenizer worth the name and its denoising never converges, so these work on
token ids and at fixed step counts: the encoder prefill, one decoder forward of the denoising loop's runner for
a canvas width, a fixed-step fill (prefill, then denoising with no early stop), and greedy autoregressive
decoding through the encoder, eager or at fixed shapes. They run on the calling thread, not the engine's worker
(a benchmark has the engine to itself); what they time is device-synchronised.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from .canvas import InfillCanvas, pad_fill_canvas
from .denoise import DenoiseLoop
from .fast.ar import FixedAutoregressor
from .runner import ModelRunner
from .types import DenoiseParams


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA); nothing elsewhere."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def blank_canvas(runner: ModelRunner, prompt_ids: list[int], width: int) -> InfillCanvas:
    """A pad-fill canvas of `width` hole positions after the prompt, with no suffix; the hole holds the pad."""
    pad_id = runner.text_config.pad_token_id or 0
    return pad_fill_canvas(prompt_ids, [], width, 0, pad_id, pad_id)


@torch.inference_mode()
def decoder_forward(runner: ModelRunner, prompt_ids: list[int], width: int, warm: int = 3) -> Callable:
    """A function that runs one decoder forward of `runner` over a random canvas of `width` after the encoded prompt,
    with self-conditioning on (a step after the first). It has run `warm` times already (a compiled runner
    compiles and captures its graph on the first of them)."""
    cache, _ = runner.encode(prompt_ids)
    canvas = blank_canvas(runner, prompt_ids, width)
    plan = runner.decoder_mask(cache, canvas.valid)
    current = torch.randint(0, runner.vocab_size, (1, width), device=runner.device)
    positions = canvas.position_ids()
    logits = runner.decode(current, cache, positions, None, plan)
    sc = logits.to(runner.logits_dtype)
    for _ in range(warm - 1):
        runner.decode(current, cache, positions, sc, plan)
    return lambda: runner.decode(current, cache, positions, sc, plan)


@torch.inference_mode()
def fixed_step_fill(loop: DenoiseLoop, prompt_ids: list[int], steps: int, width: int, temperature: float,
                    seed: int) -> dict:
    """Encode the prompt (a fresh cache, no prefix cache), then denoise a blank canvas of `width` for `steps` steps
    (confidence threshold 0: no early stop). Returns {"prefill_ms", "denoise_ms", "steps" run}."""
    params = DenoiseParams(max_steps=steps, temperature=temperature, confidence_threshold=0.0)
    runner = loop.runner
    canvas = blank_canvas(runner, prompt_ids, width)
    generator = torch.Generator(device=runner.device).manual_seed(seed)
    sync(runner.device)
    t0 = time.perf_counter()
    cache, _ = runner.encode(prompt_ids)
    sync(runner.device)
    t1 = time.perf_counter()
    out = loop.run(canvas, cache, params, generator)
    sync(runner.device)
    t2 = time.perf_counter()
    return {"prefill_ms": (t1 - t0) * 1000.0, "denoise_ms": (t2 - t1) * 1000.0, "steps": out.steps}


@torch.inference_mode()
def greedy(runner: ModelRunner, prompt_ids: list[int], max_new_tokens: int, fixed_shape: bool = False,
           compile: bool = False, compile_mode: str = "reduce-overhead") -> dict:
    """`max_new_tokens` greedy tokens after the prompt through the encoder: {"prefill_ms", "decode_ms"}.

    Eager: one encoder forward per token on a DynamicCache, as the engine's AR baseline runs. Fixed shape:
    `FixedAutoregressor` (compiled if asked), timed after an untimed run of a few tokens (compilation and graph
    capture)."""
    if not fixed_shape:
        return _eager_greedy(runner, prompt_ids, max_new_tokens)
    ar = FixedAutoregressor(runner, compile=compile, compile_mode=compile_mode)
    capacity = -(-(len(prompt_ids) + max_new_tokens) // 256) * 256
    ar.generate(prompt_ids, min(max_new_tokens, 4), capacity=capacity)  # compile and capture
    ar.generate(prompt_ids, max_new_tokens, capacity=capacity)
    return {"prefill_ms": ar.last_timings["prefill_ms"], "decode_ms": ar.last_timings["decode_ms"]}


def _eager_greedy(runner: ModelRunner, prompt_ids: list[int], n: int) -> dict:
    sync(runner.device)
    t0 = time.perf_counter()
    cache, hidden = runner.encode(prompt_ids)
    token = int(runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
    t1 = time.perf_counter()
    for _ in range(n - 1):
        cache, hidden = runner.encode([token], cache)
        token = int(runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
    sync(runner.device)
    return {"prefill_ms": (t1 - t0) * 1000.0, "decode_ms": (time.perf_counter() - t1) * 1000.0}
