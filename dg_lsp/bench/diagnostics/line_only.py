"""What `line_only` saves on automatic mid-line triggers (a left-to-right model stops at its first accepted line
break), and a check that the shown suggestion is unchanged.

    python -m dg_lsp.bench.diagnostics.line_only --model dg_lsp/model/gemma [--file PATH] [--n 8] [--json OUT]

Cursor positions: in `--file` (default: the stdlib's textwrap.py), right before the first argument of the first
`--n` calls (one per line) whose arguments start on the call's line. Each position is filled twice through the engine, as the server asks for an
automatic trigger there (greedy, no deadline, the mid-line canvas bucket), with and without `line_only`, in
alternating order, and both answers go through the server's post-processing (`finish_suggestion`, automatic).
Prints steps and engine time per fill, their medians, the ratio, and how many shown suggestions differ.
"""

from __future__ import annotations

import argparse
import json
import statistics
import textwrap
from pathlib import Path


def positions(source: str, n: int) -> list[tuple[int, int]]:
    """(0-based line, column) right before the first argument of the first `n` calls whose arguments start on
    the call's line (so there is text after the cursor), in source order; one per line."""
    import ast

    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args and node.args[0].lineno == node.lineno:
            line, col = node.lineno - 1, node.args[0].col_offset  # ast columns are UTF-8 bytes: ASCII lines only
            if source.split("\n")[line].isascii():
                found.setdefault(line, col)
    return sorted(found.items())[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.line_only")
    ap.add_argument("--model", default=None)
    ap.add_argument("--file", default=textwrap.__file__)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-steps", type=int, default=16)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch

    from dg_lsp.completion import buckets
    from dg_lsp.completion.postprocess import finish_suggestion
    from dg_lsp.config import Settings
    from dg_lsp.context import extract_context
    from dg_lsp.engine import DenoiseParams, Engine, InfillRequest

    torch.set_num_threads(1)
    settings = Settings()
    engine = Engine.load(args.model, device="cpu", dtype="float32")
    if not engine.loop.left_to_right:
        print(f"{engine.loaded.path} decodes in the entropy order: line_only changes nothing there")
    source = Path(args.file).read_text(encoding="utf-8")
    rows = []
    try:
        for k, (line, col) in enumerate(positions(source, args.n)):
            ctx = extract_context(source, "python", line, col, prefix_budget=settings.prefix_tokens,
                                  suffix_budget=settings.suffix_tokens)
            slots = buckets.hole_slots(ctx.prefix, True, False)
            fills = {}
            for line_only in ((True, False) if k % 2 else (False, True)):
                request = InfillRequest(prefix=ctx.prefix, suffix=ctx.suffix, line_only=line_only, hole_slots=slots,
                                        max_prompt_tokens=settings.prefix_tokens, reuse_prefix=False,
                                        params=DenoiseParams(max_steps=args.max_steps, temperature=0.0))
                result = engine.infill(request)
                shown = finish_suggestion(result.text, result.candidates, ctx.prefix, ctx,
                                          selection=False, max_lines=settings.max_lines, document=source)
                fills[line_only] = (result.steps, result.timings_ms["total"], shown)
            rows.append({"line": line + 1, "col": col + 1, "slots": slots,
                         "steps": [fills[False][0], fills[True][0]], "ms": [fills[False][1], fills[True][1]],
                         "shown": [fills[False][2], fills[True][2]]})
            r = rows[-1]
            print(f"{r['line']:>5}:{r['col']:<4} steps {r['steps'][0]:>2} -> {r['steps'][1]:>2}   "
                  f"{r['ms'][0]:>8.0f} -> {r['ms'][1]:>8.0f} ms   same shown: {r['shown'][0] == r['shown'][1]}   "
                  f"{r['shown'][1]!r}", flush=True)
    finally:
        engine.close()
    full = statistics.median(r["ms"][0] for r in rows)
    line = statistics.median(r["ms"][1] for r in rows)
    summary = {"model": str(args.model), "file": args.file, "n": len(rows),
               "median_steps": [statistics.median(r["steps"][0] for r in rows),
                                statistics.median(r["steps"][1] for r in rows)],
               "median_ms": [full, line], "ratio": line / full if full else None,
               "shown_differ": sum(r["shown"][0] != r["shown"][1] for r in rows)}
    print(f"median steps {summary['median_steps'][0]} -> {summary['median_steps'][1]}; median engine ms "
          f"{full:.0f} -> {line:.0f} (x{summary['ratio']:.2f}); shown suggestions that differ: "
          f"{summary['shown_differ']} of {len(rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
