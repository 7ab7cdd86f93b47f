"""Latency of one fill against its denoising steps, one line per canvas bucket, with the AR twin for scale (issue 15.5).

    python -m dg_lsp.bench.diagnostics.steps_latency [--model DIR] [--widths 16,32,full] [--steps 1,2,4,8,16]
        [--rounds 3] [--ar-tokens 12] [--out docs/results/steps-latency.png] [--json OUT]

A fill is `engine/speed.fixed_step_fill`: the prompt encoded afresh (no prefix cache), then the engine's real
denoising loop (`DenoiseLoop.run`, greedy as `dg-lsp bench humaneval` runs it) for exactly that many steps (confidence
threshold 0: no early stop, so the x axis is the steps actually run; the adaptive stop only ever shortens a fill).
The AR line is the same prompt encoded, then `--ar-tokens` greedy tokens through the encoder (`speed.greedy`, the
engine's eager AR path), a typical single line. Rounds interleave every point; the plot shows medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s.strip()]


def measure(engine, widths: list[int], steps: list[int], rounds: int, prompt: list[int], ar_tokens: int,
            temperature: float = 0.0) -> dict:
    import torch

    from dg_lsp.engine import speed

    loop, runner = engine.loop, engine.runner
    fill: dict[tuple[int, int], list[float]] = {(w, s): [] for w in widths for s in steps}
    ar: list[float] = []
    with torch.inference_mode():
        speed.fixed_step_fill(loop, prompt, 2, widths[0], temperature, 0)  # warm
        speed.greedy(runner, prompt, 2)
        for _ in range(rounds):
            t = speed.greedy(runner, prompt, ar_tokens)
            ar.append(t["prefill_ms"] + t["decode_ms"])
            for w in widths:
                for s in steps:
                    t = speed.fixed_step_fill(loop, prompt, s, w, temperature, 0)
                    fill[(w, s)].append(t["prefill_ms"] + t["denoise_ms"])
    return {"widths": widths, "steps": steps, "rounds": rounds, "prompt_tokens": len(prompt), "ar_tokens": ar_tokens,
            "temperature": temperature,
            "fill_ms": {str(w): [statistics.median(fill[(w, s)]) for s in steps] for w in widths},
            "ar_ms": statistics.median(ar), "samples": {f"{w}x{s}": v for (w, s), v in fill.items()} | {"ar": ar}}


def plot(result: dict, out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for w in result["widths"]:
        ax.plot(result["steps"], result["fill_ms"][str(w)], marker="o", label=f"diffusion, canvas {w}")
    ax.axhline(result["ar_ms"], color="k", linestyle="--", label=f"AR twin, {result['ar_tokens']} tokens")
    ax.set_xscale("log", base=2)
    ax.set_xticks(result["steps"])
    ax.set_xticklabels([str(s) for s in result["steps"]])
    ax.set_xlabel("denoising steps run")
    ax.set_ylabel("fill latency, ms (prompt encode + steps; median)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def table(result: dict) -> str:
    head = "| canvas | " + " | ".join(f"{s} steps" for s in result["steps"]) + " |"
    lines = [head, "|---" * (len(result["steps"]) + 1) + "|"]
    for w in result["widths"]:
        lines.append(f"| {w} | " + " | ".join(f"{v:.0f}" for v in result["fill_ms"][str(w)]) + " |")
    lines.append(f"\nAR twin, prompt + {result['ar_tokens']} tokens: {result['ar_ms']:.0f} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.steps_latency", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--widths", default="16,32,full")
    ap.add_argument("--steps", default="1,2,4,8,16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--prompt-tokens", type=int, default=200)
    ap.add_argument("--ar-tokens", type=int, default=12)
    ap.add_argument("--out", default=None, help="PNG to write")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(max(1, args.threads))
    from dg_lsp.engine import Engine

    from .step_time import _widths, prompt_ids

    engine = Engine.load(args.model, args.device, args.dtype)
    try:
        widths = _widths(args.widths, engine.canvas_length)
        result = measure(engine, widths, _ints(args.steps), args.rounds, prompt_ids(engine, args.prompt_tokens),
                         args.ar_tokens)
        result.update(model=engine.loaded.path, threads=torch.get_num_threads(), torch=torch.__version__)
    finally:
        engine.close()
    print(table(result))
    if args.out:
        plot(result, Path(args.out), f"default model, CPU, {result['threads']} thread, prompt "
                                     f"{result['prompt_tokens']} tokens, greedy, {result['rounds']} rounds")
        print(f"plot: {args.out}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
