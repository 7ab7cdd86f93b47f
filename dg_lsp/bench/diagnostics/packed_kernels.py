"""float32 linear against the prepacked oneDNN linear (engine/gemma3/packed.py), by rows, with weights out of cache.

    python -m dg_lsp.bench.diagnostics.packed_kernels [--layers 80] [--rows 1,2,3,5,8,12,25,48,64,96,128,200]
        [--reps 3] [--threads 1] [--json OUT]

`--layers` random weights of 2048 x 640 (80: about the 100M weights of the 270M Gemma's trunk, 420 MB, so every
product streams its weight from memory as a model pass does), each product run over all of them in turn; the
median of `--reps` after one warm call, both kernels interleaved per row count. Prints ms per sweep and the ratio.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def measure(layers: int, rows: list[int], reps: int) -> list[dict]:
    import torch

    from dg_lsp.engine.dtype_auto import median_ms
    from dg_lsp.engine.gemma3.packed import PackedWeight

    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(2048, 640, generator=gen) for _ in range(layers)]
    packed = [PackedWeight(w) for w in weights]
    out = []
    with torch.inference_mode():
        for m in rows:
            x = torch.randn(m, 640, generator=gen)
            plain = median_ms(lambda: [torch.nn.functional.linear(x, w) for w in weights], reps)
            pk = median_ms(lambda: [p(x) for p in packed], reps)
            out.append({"rows": m, "linear_ms": plain, "packed_ms": pk, "ratio": pk / plain})
            print(f"| {m} | {plain:.1f} | {pk:.1f} | {pk / plain:.2f} |", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.packed_kernels", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=80)
    ap.add_argument("--rows", default="1,2,3,5,8,12,25,48,64,96,128,200")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    from dg_lsp.engine.gemma3.packed import unavailable

    why = unavailable()
    if why:
        print(f"packed weights unavailable: {why}")
        return 1
    torch.set_num_threads(max(1, args.threads))
    print(f"{args.layers} linears 2048 x 640, {torch.get_num_threads()} thread(s), median of {args.reps}, ms per sweep")
    print("| rows | linear | packed | packed/linear |\n|---|---|---|---|")
    rows = measure(args.layers, [int(r) for r in args.rows.split(",") if r.strip()], args.reps)
    if args.json:
        Path(args.json).write_text(json.dumps({"layers": args.layers, "threads": torch.get_num_threads(),
                                               "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
