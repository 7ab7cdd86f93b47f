"""Denoising step time with reference sampling (torch.multinomial + torch.distributions entropy, as
transformers' generate()) against the default CDF-inversion sampling, same run, alternating.

    python -m dg_lsp.bench.diagnostics.sampling [--model DIR] [--reps 6] [--steps 16]
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.sampling", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--steps", type=int, default=16)
    args = ap.parse_args(argv)

    from dg_lsp.engine import Engine
    from dg_lsp.engine.types import DenoiseParams, InfillRequest

    engine = Engine.load(args.model, "cpu")
    try:
        engine.warmup(calibrate=False)
        text = (Path(__file__).parents[2] / "engine" / "engine.py").read_text(encoding="utf-8")
        per_step: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.reps):
            for reference in (True, False):
                params = DenoiseParams(max_steps=args.steps, confidence_threshold=0.0, temperature=0.2,
                                       reference_sampling=reference)
                r = engine.run_infill(InfillRequest(prefix=text[:3000], suffix=text[3000:3400], params=params,
                                                    reuse_prefix=False))
                per_step[reference].append(r.timings_ms["denoise"] / max(1, r.steps))
    finally:
        engine.close()
    ref, fast = statistics.median(per_step[True]), statistics.median(per_step[False])
    print("| sampling | ms per denoising step (median) |\n|---|---|")
    print(f"| reference (multinomial, as generate()) | {ref:.1f} |\n| default (CDF inversion) | {fast:.1f} |")
    print(f"\ndefault / reference: {fast / ref:.2f}x ({args.reps} runs of {args.steps} steps each, alternating)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
