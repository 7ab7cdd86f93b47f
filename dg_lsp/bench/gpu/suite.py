"""`dg-lsp bench gpu`: speed of the DiffusionGemma architecture on one device, with random weights.

    dg-lsp bench gpu [--scale full,mid] [--compile off,on] [--device auto] [--out DIR]
    python -m dg_lsp.bench.gpu ...          # the same, without installing the package

Builds the model directly on the device (no checkpoint; `--scale full` is DiffusionGemma-26B-A4B,
see engine/fast/arch.py), then for one random prompt (default 2,048 tokens) measures: encoder
prefill; one decoder forward for canvases 32 / 64 / 256; prefill + denoising of a 256-token canvas
at 10 / 20 / 48 fixed steps (sampling included, no early stop); the same weights autoregressive
through the encoder with a KV cache (greedy, ms per token); peak memory. `--compile off` is the
engine's eager path (DynamicCache), `on` the fixed-shape path compiled (CUDA graphs on a GPU),
`fixed` the fixed-shape path eager. Random weights never converge, so step counts are fixed: these
are speed figures, not quality. On CPU they only check the plumbing.

It measures through the engine's public API: one `Engine` over the random-weight model
(`engine/fast/arch.random_loaded_model`: default infill spec, a tokenizer of special ids only), timed with
its token-id methods (engine/speed.py): `encode_ids` (prefill), `decoder_forward` (one forward of the loop's
runner), `fixed_step_fill` (prefill + denoising at a fixed step count), `greedy_ids` (autoregressive), and
`use_fast_path` to put the loop on the path of each `--compile` mode.

Writes `gpu-bench.json` and `gpu-bench.md` under `--out` (default `$OUT`, else ./bench-out) after
every measurement, so a run cut short keeps what it measured. `--budget-s` stops starting new
measurements (the compiled ones come last) so a one-shot device run ends in time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field

import torch

from dg_lsp.bench.gpu.report import Report
from dg_lsp.bench.options import int_list, subset_of
from dg_lsp.engine.engine import Engine
from dg_lsp.engine.fast.arch import SCALES, parameter_bytes, parameter_count, random_loaded_model
from dg_lsp.engine.loader import pick_device, pick_dtype

COMPILE_MODES = ("off", "fixed", "on")


@dataclass
class GpuBenchOptions:
    scales: tuple[str, ...] = ("full",)
    device: str = "auto"
    dtype: str = "auto"
    compile: tuple[str, ...] = ("off", "on")
    compile_mode: str = "reduce-overhead"
    prompt_tokens: int = 2048
    canvases: tuple[int, ...] = (32, 64, 256)
    e2e_canvas: int = 256
    steps: tuple[int, ...] = (10, 20, 48)
    ar_tokens: int = 128
    repeats: int = 5
    temperature: float = 0.8
    budget_s: float = 330.0
    threads: int | None = None  # CPU intra-op threads (default: torch's)
    seed: int = 0
    out: str = field(default_factory=lambda: os.environ.get("OUT") or "bench-out")


class Clock:
    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def ms(self, fn) -> tuple[object, float]:
        self.sync()
        t0 = time.perf_counter()
        out = fn()
        self.sync()
        return out, (time.perf_counter() - t0) * 1000.0

    def reset_peak(self) -> None:
        if self.cuda:
            torch.cuda.reset_peak_memory_stats()

    def peak_gb(self) -> float | None:
        return torch.cuda.max_memory_allocated() / 1e9 if self.cuda else None


class ScaleBench:
    """All measurements of one model size, through one `Engine` over the random-weight model (its token-id
    methods: engine/speed.py)."""

    def __init__(self, opts: GpuBenchOptions, scale: str, report: Report, started: float):
        self.opts, self.scale, self.report, self.started = opts, scale, report, started
        self.device = torch.device(pick_device(opts.device))
        self.dtype = pick_dtype(opts.dtype, str(self.device))
        self.clock = Clock(self.device)
        self.clock.reset_peak()
        self.loaded, build_s = random_loaded_model(scale, str(self.device), self.dtype, canvas_length=opts.e2e_canvas)
        self.engine = Engine(self.loaded)
        gen = torch.Generator().manual_seed(opts.seed)
        self.prompt = torch.randint(4, self.engine.vocab_size - 4, (opts.prompt_tokens,), generator=gen).tolist()
        model = self.loaded.model
        report.add(scale=scale, compile="-", kind="build", ms=build_s * 1000.0, peak_gb=self.clock.peak_gb(),
                   params=parameter_count(model), weights_gb=parameter_bytes(model) / 1e9, dtype=self.loaded.dtype,
                   attention=model.config.text_config._attn_implementation,
                   experts=model.config.text_config._experts_implementation)

    def over_budget(self) -> bool:
        return time.perf_counter() - self.started > self.opts.budget_s

    def measure(self, compile: str, kind: str, fn, **keys) -> None:
        """Run one measurement; a failure or the budget is recorded, never fatal."""
        if self.over_budget():
            self.report.add(scale=self.scale, compile=compile, kind=kind, skipped="budget", **keys)
            return
        self.clock.reset_peak()
        try:
            values = fn()
        except Exception as exc:  # noqa: BLE001 - keep measuring the rest
            self.report.add(scale=self.scale, compile=compile, kind=kind, error=f"{type(exc).__name__}: {exc}", **keys)
            return
        self.report.add(scale=self.scale, compile=compile, kind=kind, peak_gb=self.clock.peak_gb(), **keys, **values)

    def use(self, compile: str) -> None:
        """The engine's denoising loop on the path of `--compile`: off = the eager runner, fixed = the fixed-shape
        runner eager, on = the fixed-shape runner compiled."""
        if compile == "off":
            self.engine.use_fast_path("off")
        else:
            self.engine.use_fast_path("on", compile=compile == "on", capacity=self.opts.prompt_tokens,
                                      width_buckets=None, compile_mode=self.opts.compile_mode)

    # -- measurements ----------------------------------------------------------------------------
    @torch.inference_mode()
    def prefill(self) -> dict:
        self.engine.encode_ids(self.prompt)  # warm-up
        times = [self.clock.ms(lambda: self.engine.encode_ids(self.prompt))[1]
                 for _ in range(max(1, self.opts.repeats))]
        return {"ms": statistics.median(times), "tokens": len(self.prompt)}

    @torch.inference_mode()
    def forward(self, canvas_len: int) -> dict:
        step = self.engine.decoder_forward(self.prompt, canvas_len)  # run 3 times: compiled, the warm-up and capture
        times = [self.clock.ms(step)[1] for _ in range(max(1, self.opts.repeats))]
        return {"ms": statistics.median(times)}

    def denoise(self, steps: int) -> dict:
        canvas_len = self.opts.e2e_canvas
        out = self.engine.fixed_step_fill(self.prompt, steps, canvas_len, self.opts.temperature, self.opts.seed)
        if out["steps"] != steps:
            raise RuntimeError(f"ran {out['steps']} steps, expected {steps}")
        prefill_ms, denoise_ms = out["prefill_ms"], out["denoise_ms"]
        return {"tokens": canvas_len, "prefill_ms": prefill_ms, "ms": denoise_ms, "step_ms": denoise_ms / steps,
                "tokens_per_s": canvas_len / denoise_ms * 1000.0, "e2e_ms": prefill_ms + denoise_ms,
                "e2e_tokens_per_s": canvas_len / (prefill_ms + denoise_ms) * 1000.0}

    def autoregressive(self, compile: str) -> dict:
        n = self.opts.ar_tokens
        out = self.engine.greedy_ids(self.prompt, n, fixed_shape=compile != "off", compile=compile == "on",
                                     compile_mode=self.opts.compile_mode)
        prefill_ms, decode_ms = out["prefill_ms"], out["decode_ms"]
        per_token = decode_ms / max(1, n - 1)
        e2e_ms = prefill_ms + self.opts.e2e_canvas * per_token
        return {"tokens": n, "prefill_ms": prefill_ms, "ms": decode_ms, "ms_per_token": per_token,
                "tokens_per_s": 1000.0 / per_token, "e2e_ms": e2e_ms,
                "e2e_tokens_per_s": self.opts.e2e_canvas / e2e_ms * 1000.0}

    # -- the schedule --------------------------------------------------------------------------
    def run(self) -> None:
        opts = self.opts
        self.measure("-", "prefill", self.prefill)
        for compile in opts.compile:  # eager first: the compiled measurements are the ones a budget cuts
            self.use(compile)
            if compile == "on":  # compile and capture outside the timed runs
                self.measure(compile, "warm-up", lambda: {"ms": self.clock.ms(lambda: self.denoise(2))[1]})
            for steps in opts.steps:
                self.measure(compile, "denoise", lambda: self.denoise(steps), canvas=opts.e2e_canvas, steps=steps)
            self.measure(compile, "autoregressive", lambda: self.autoregressive(compile))
            for canvas_len in sorted(opts.canvases, key=lambda c: (c != opts.e2e_canvas, c)):
                self.measure(compile, "forward", lambda: self.forward(canvas_len), canvas=canvas_len)

    def close(self) -> None:
        self.engine.close()
        del self.engine, self.loaded
        torch._dynamo.reset()  # compiled graphs hold the model
        if self.clock.cuda:
            torch.cuda.empty_cache()


def build_parser() -> argparse.ArgumentParser:
    d = GpuBenchOptions()
    p = argparse.ArgumentParser(prog="dg-lsp bench gpu", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=subset_of(tuple(SCALES)), default=d.scales,
                   help="model sizes, in order: full (26B-A4B), mid (6 of its 30 layers), small (CPU check)")
    p.add_argument("--device", default=d.device, help="auto|cpu|cuda")
    p.add_argument("--dtype", default=d.dtype, help="auto (bfloat16 on cuda, float32 on cpu)|float32|bfloat16")
    p.add_argument("--compile", type=subset_of(COMPILE_MODES), default=d.compile,
                   help="off = eager engine path, fixed = fixed shapes eager, on = fixed shapes compiled")
    p.add_argument("--compile-mode", default=d.compile_mode, help="torch.compile mode (default reduce-overhead)")
    p.add_argument("--prompt-tokens", type=int, default=d.prompt_tokens)
    p.add_argument("--canvases", type=int_list, default=d.canvases, help="canvas widths of the one-forward timing")
    p.add_argument("--e2e-canvas", type=int, default=d.e2e_canvas, help="canvas of the denoising runs")
    p.add_argument("--steps", type=int_list, default=d.steps, help="fixed denoising step counts")
    p.add_argument("--ar-tokens", type=int, default=d.ar_tokens, help="tokens of the autoregressive run")
    p.add_argument("--repeats", type=int, default=d.repeats, help="timed repeats of prefill and forward (median)")
    p.add_argument("--temperature", type=float, default=d.temperature)
    p.add_argument("--budget-s", type=float, default=d.budget_s, help="start no measurement after this")
    p.add_argument("--threads", type=int, default=None, help="CPU intra-op threads (default: torch's)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--out", default=None, help="output folder (default: $OUT, else ./bench-out)")
    return p


def run(opts: GpuBenchOptions, command: str) -> Report:
    started = time.perf_counter()
    report = Report(opts.out, options=asdict(opts), command=command)
    for scale in opts.scales:
        if time.perf_counter() - started > opts.budget_s:
            report.add(scale=scale, compile="-", kind="build", skipped="budget")
            continue
        print(f"[gpu-bench] building {scale} ...", file=sys.stderr, flush=True)
        try:
            bench = ScaleBench(opts, scale, report, started)
        except Exception as exc:  # noqa: BLE001 - out of memory, say: report it, try the next size
            report.add(scale=scale, compile="-", kind="build", error=f"{type(exc).__name__}: {exc}")
            continue
        try:
            bench.run()
        finally:
            bench.close()
    report.finish()
    return report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    opts = GpuBenchOptions(scales=args.scale, device=args.device, dtype=args.dtype, compile=args.compile,
                           compile_mode=args.compile_mode, prompt_tokens=args.prompt_tokens, canvases=args.canvases,
                           e2e_canvas=args.e2e_canvas, steps=args.steps, ar_tokens=args.ar_tokens,
                           repeats=args.repeats, temperature=args.temperature, budget_s=args.budget_s,
                           threads=args.threads, seed=args.seed, **({"out": args.out} if args.out else {}))
    if opts.threads:
        torch.set_num_threads(opts.threads)
    report = run(opts, "dg-lsp bench gpu " + " ".join(argv))
    print(report.markdown())
    print(f"\nwrote {report.json_path} and {report.md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
