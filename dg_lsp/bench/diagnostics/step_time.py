"""Denoising step time per canvas bucket against one autoregressive token, as ratios within one run (issue 15.4).

    python -m dg_lsp.bench.diagnostics.step_time [--model DIR] [--widths 16,32,full] [--rounds 5] [--steps 8]
        [--fast off|on|compile] [--temperature 0.2] [--prompt-tokens 200] [--unmerged] [--packed decoder|all]
        [--profile WIDTH] [--json OUT]

Everything goes through the engine's real code: a loop step is `DenoiseLoop.run` (the engine's loop, with its
sampling, acceptance and stop test; confidence threshold 0, so every run takes `--steps` steps) divided by the steps
it ran; a decoder forward is the loop runner's `decode()` alone (self-conditioning on, as in every step after the
first); an AR token is one step of the engine's autoregressive baseline (`runner.encode([token], cache)`, then
`lm_logits` and argmax on the last hidden state), averaged over `--ar-tokens` tokens after the prompt; the first
token's head alone (`lm_logits` on the last row of the prompt's encode) is timed apart, since it reads a view into
the long encode output (engine/runner.py `head_logits`).

The buckets are canvas widths: 16 and 32 are a mid-line and a blank-line hole without a suffix head
(completion/buckets.py), `full` the model's whole canvas (invoked completions, fills; with a suffix head of 16 a
mid-line request is also 32 wide and a blank-line one full). The rounds interleave every measurement, so a noisy
machine slows them alike; the table gives medians and each one's ratio to the AR token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def _widths(text: str, full: int) -> list[int]:
    return [full if w.strip() == "full" else int(w) for w in text.split(",") if w.strip()]


def prompt_ids(engine, tokens: int) -> list[int]:
    """`tokens` real tokens of Python (this package's engine source) after <bos>."""
    text = (Path(__file__).parents[2] / "engine" / "engine.py").read_text(encoding="utf-8")
    ids = engine.tokenize(text)[:max(1, tokens - 1)]
    return ([engine.bos_id] if engine.bos_id is not None else []) + ids


def loop_params(steps: int, temperature: float):
    """A timed loop run's parameters: confidence threshold 0, so every run takes `steps` steps."""
    from dg_lsp.engine.types import DenoiseParams

    return DenoiseParams(max_steps=steps, temperature=temperature, confidence_threshold=0.0)


def loop_inputs(engine, prompt: list[int], width: int):
    """What one `DenoiseLoop.run` at this canvas width takes besides its parameters: a blank canvas, the prompt's
    fresh cache and a seeded generator."""
    import torch

    from dg_lsp.engine.speed import blank_canvas

    runner = engine.runner
    cache, _ = runner.encode(prompt)
    return blank_canvas(runner, prompt, width), cache, torch.Generator(device=runner.device).manual_seed(0)


def measure(engine, widths: list[int], rounds: int, steps: int, temperature: float, prompt: list[int],
            ar_tokens: int = 16, unmerged: bool = False, packed: str | None = None) -> dict:
    import torch

    from dg_lsp.engine.speed import decoder_forward, sync

    loop, runner = engine.loop, engine.runner
    params = loop_params(steps, temperature)
    forwards = {w: decoder_forward(loop.runner, prompt, w) for w in widths}
    samples: dict[str, list[float]] = {"ar_token": [], "ar_first_head": []}
    adapter = getattr(runner, "adapter", None) if unmerged else None  # a Gemma adapter: also time it unmerged
    packs = bool(packed) and hasattr(runner, "use_packed")  # a Gemma runner: also time it with prepacked weights
    was_packed = getattr(runner, "packed", False)
    if packs:
        samples["ar_token_packed"] = []
    for w in widths:
        samples[f"step_{w}"], samples[f"forward_{w}"] = [], []
        if adapter is not None:
            samples[f"step_{w}_unmerged"], samples[f"forward_{w}_unmerged"] = [], []
        if packs:
            samples[f"step_{w}_packed"], samples[f"forward_{w}_packed"] = [], []

    def ar_token_ms() -> float:
        cache, hidden = runner.encode(prompt)
        token = int(runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
        sync(runner.device)
        t0 = time.perf_counter()
        for _ in range(ar_tokens):
            cache, hidden = runner.encode([token], cache)
            token = int(runner.lm_logits(hidden[:, -1:]).argmax(dim=-1))
        sync(runner.device)
        return (time.perf_counter() - t0) * 1000.0 / ar_tokens

    def first_head_ms() -> float:
        """The head on the prompt encode's last row: the first AR token's logits, a view into a long output."""
        _, hidden = runner.encode(prompt)
        sync(runner.device)
        t0 = time.perf_counter()
        runner.lm_logits(hidden[:, -1:])
        sync(runner.device)
        return (time.perf_counter() - t0) * 1000.0

    def step_ms(width: int) -> float:
        canvas, cache, generator = loop_inputs(engine, prompt, width)
        sync(runner.device)
        t0 = time.perf_counter()
        out = loop.run(canvas, cache, params, generator)
        sync(runner.device)
        return (time.perf_counter() - t0) * 1000.0 / max(1, out.steps)

    def forward_ms(width: int, reps: int = 3) -> float:
        fn = forwards[width]
        sync(runner.device)
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        sync(runner.device)
        return (time.perf_counter() - t0) * 1000.0 / reps

    with torch.inference_mode():
        if packs:
            runner.use_packed(False)  # the plain rows are the plain weights whatever warm-up chose
        ar_token_ms()
        for w in widths:
            step_ms(w)  # warm
        for _ in range(rounds):
            if packs:
                runner.use_packed(True, base=packed == "all")
                try:
                    samples["ar_token_packed"].append(ar_token_ms())
                    for w in widths:
                        samples[f"step_{w}_packed"].append(step_ms(w))
                        samples[f"forward_{w}_packed"].append(forward_ms(w))
                finally:
                    runner.use_packed(False)
            samples["ar_token"].append(ar_token_ms())
            samples["ar_first_head"].append(first_head_ms())
            for w in widths:
                samples[f"step_{w}"].append(step_ms(w))
                samples[f"forward_{w}"].append(forward_ms(w))
                if adapter is not None:
                    adapter.unmerge()
                    try:
                        samples[f"step_{w}_unmerged"].append(step_ms(w))
                        samples[f"forward_{w}_unmerged"].append(forward_ms(w))
                    finally:
                        adapter.merge()
        if packs:
            runner.use_packed(bool(was_packed), base=was_packed == "all")
    medians = {k: statistics.median(v) for k, v in samples.items()}
    return {"median_ms": medians, "samples_ms": samples, "widths": widths, "rounds": rounds, "steps": steps,
            "temperature": temperature, "prompt_tokens": len(prompt), "ar_tokens": ar_tokens}


def profile_loop(engine, width: int, steps: int, temperature: float, prompt: list[int], rows: int = 15) -> str:
    """torch.profiler's table (by self CPU time) of one `DenoiseLoop.run` at this canvas width, after a warm run."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    params = loop_params(steps, temperature)
    with torch.inference_mode():
        canvas, cache, generator = loop_inputs(engine, prompt, width)
        engine.loop.run(canvas, cache, params, generator)  # warm
        canvas, cache, generator = loop_inputs(engine, prompt, width)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            out = engine.loop.run(canvas, cache, params, generator)
    return (f"one loop run, canvas {width}, {out.steps} steps:\n"
            + prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def table(result: dict) -> str:
    m = result["median_ms"]
    ar = m["ar_token"]
    lines = ["| what | ms (median) | x AR token |", "|---|---|---|",
             f"| AR token (encoder step + head) | {ar:.1f} | 1.00 |",
             f"| head alone on the prompt's last row (the first AR token) | {m['ar_first_head']:.1f} | "
             f"{m['ar_first_head'] / ar:.2f} |"]
    if "ar_token_packed" in m:
        lines.append(f"| AR token, weights prepacked (packed/plain {m['ar_token_packed'] / ar:.3f}) | "
                     f"{m['ar_token_packed']:.1f} | {m['ar_token_packed'] / ar:.2f} |")
    for w in result["widths"]:
        lines.append(f"| loop step, canvas {w} | {m[f'step_{w}']:.1f} | {m[f'step_{w}'] / ar:.2f} |")
        lines.append(f"| decoder forward alone, canvas {w} | {m[f'forward_{w}']:.1f} | {m[f'forward_{w}'] / ar:.2f} |")
        for what in ("step", "forward"):
            if f"{what}_{w}_unmerged" in m:
                u = m[f"{what}_{w}_unmerged"]
                lines.append(f"| {'loop step' if what == 'step' else 'decoder forward alone'}, canvas {w}, LoRA unmerged "
                             f"(merged/unmerged {m[f'{what}_{w}'] / u:.3f}) | {u:.1f} | {u / ar:.2f} |")
            if f"{what}_{w}_packed" in m:
                k = m[f"{what}_{w}_packed"]
                lines.append(f"| {'loop step' if what == 'step' else 'decoder forward alone'}, canvas {w}, weights "
                             f"prepacked (packed/plain {k / m[f'{what}_{w}']:.3f}) | {k:.1f} | {k / ar:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.step_time", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="model directory (default: the embedded default model)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--widths", default="16,32,full", help="canvas widths, comma-separated; 'full' = the model's")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=8, help="denoising steps per timed loop run (no early stop)")
    ap.add_argument("--temperature", type=float, default=0.2, help="0 = greedy")
    ap.add_argument("--prompt-tokens", type=int, default=200)
    ap.add_argument("--ar-tokens", type=int, default=16)
    ap.add_argument("--fast", choices=("off", "on", "compile"), default="off",
                    help="the loop's runner: eager ModelRunner, fixed-shape StaticRunner, or StaticRunner compiled")
    ap.add_argument("--unmerged", action="store_true",
                    help="a Gemma adapter: also time each step and forward with the LoRA deltas unmerged "
                         "(adapter.LoRALinear.merge), interleaved")
    ap.add_argument("--packed", choices=("decoder", "all"), default=None,
                    help="a Gemma runner: also time each step, forward and AR token with its weights prepacked "
                         "(engine/gemma3/packed.py: the decoder's, or all), interleaved; the plain rows then use the "
                         "plain weights")
    ap.add_argument("--profile", type=int, default=None, metavar="WIDTH",
                    help="also print torch.profiler's table of one loop run at this canvas width")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(max(1, args.threads))
    from dg_lsp.engine import Engine
    from dg_lsp.engine.fast import denoise_runner

    engine = Engine.load(args.model, args.device, args.dtype)
    try:
        compile_s = None
        if args.fast != "off":
            runner = denoise_runner(engine.runner, "on", compile=args.fast == "compile",
                                    compile_mode="max-autotune-no-cudagraphs" if args.fast == "compile" else
                                    "reduce-overhead")
            engine.loop.runner = runner
            if args.fast == "compile":
                widths = _widths(args.widths, engine.canvas_length)
                t0 = time.perf_counter()
                runner.warm([(1, w) for w in widths], prompt_length=args.prompt_tokens)
                compile_s = time.perf_counter() - t0
        widths = _widths(args.widths, engine.canvas_length)
        prompt = prompt_ids(engine, args.prompt_tokens)
        result = measure(engine, widths, args.rounds, args.steps, args.temperature, prompt, args.ar_tokens,
                         unmerged=args.unmerged, packed=args.packed)
        result.update(fast=args.fast, compile_s=compile_s, model=engine.loaded.path, torch=torch.__version__,
                      threads=torch.get_num_threads())
        profiled = None if args.profile is None else profile_loop(
            engine, args.profile, args.steps, args.temperature, prompt)
    finally:
        engine.close()
    print(table(result))
    print(f"\n{result['rounds']} interleaved rounds; loop runs of {result['steps']} steps at temperature "
          f"{result['temperature']}, prompt {result['prompt_tokens']} tokens, fast={result['fast']}, "
          f"{result['threads']} thread(s)" + (f"; compile + warm-up {compile_s:.1f} s" if compile_s else ""))
    if profiled:
        print("\n" + profiled)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
