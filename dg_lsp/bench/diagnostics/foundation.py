"""Foundation figures: context extraction and canvas build time on a ~2,000-line Python file, and
the `dg-lsp complete` time split into load / encode / denoise.

    python -m dg_lsp.bench.diagnostics.foundation [--model DIR] [--positions 200] [--completes 5]

Prints figures; asserts nothing. Without --model a tiny random model is built in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Options:
    model: str | None = None
    positions: int = 200
    completes: int = 5
    seed: int = 0
    source: str = str(Path(sysconfig.get_paths()["stdlib"]) / "argparse.py")
    lines: int = 2000


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def context_and_canvas(opts: Options, tokenizer, canvas_length: int) -> dict:
    from dg_lsp.context import extract_context
    from dg_lsp.engine.canvas import build_prompt, pad_fill_canvas

    text = "".join(Path(opts.source).read_text(encoding="utf-8").splitlines(True)[: opts.lines])
    lines = text.split("\n")
    rng = random.Random(opts.seed)
    ctx_ms, canvas_ms = [], []
    for _ in range(opts.positions):
        line = rng.randrange(len(lines))
        col = rng.randrange(len(lines[line]) + 1)
        t0 = time.perf_counter()
        ctx = extract_context(text, "python", line, col)
        t1 = time.perf_counter()
        prefix_ids = tokenizer.encode(ctx.prefix, add_special_tokens=False)
        suffix_ids = tokenizer.encode(ctx.suffix, add_special_tokens=False)
        prompt = build_prompt(prefix_ids, 1024, tokenizer.bos_token_id)
        pad_fill_canvas(prompt, suffix_ids, canvas_length, 16, tokenizer.pad_token_id, tokenizer.pad_token_id)
        t2 = time.perf_counter()
        ctx_ms.append((t1 - t0) * 1000)
        canvas_ms.append((t2 - t1) * 1000)
    return {"file": opts.source, "lines": len(lines), "positions": opts.positions,
            "context_ms_p50": statistics.median(ctx_ms), "context_ms_p95": _pct(ctx_ms, 0.95),
            "tokenize_and_canvas_ms_p50": statistics.median(canvas_ms),
            "tokenize_and_canvas_ms_p95": _pct(canvas_ms, 0.95)}


def complete_runs(opts: Options, model: str) -> dict:
    text = "".join(Path(opts.source).read_text(encoding="utf-8").splitlines(True)[: opts.lines])
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(text)
    target = f"{fh.name}:{opts.lines // 2}:9"
    rows = []
    for _ in range(opts.completes):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "dg_lsp", "complete", target, "--json", "--model", model,
                              "--device", "cpu", "--log-level", "WARNING"], capture_output=True, text=True,
                             check=True)
        wall = (time.perf_counter() - t0) * 1000
        res = json.loads(out.stdout)
        rows.append({"wall": wall, "load": res["load_ms"], "encode": res["timings_ms"]["encode"],
                     "denoise": res["timings_ms"]["denoise"], "context": res["timings_ms"]["context"],
                     "steps": res["steps"]})
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    return {"target": target, "runs": len(rows), **{f"{k}_ms_p50" if k != "steps" else k: v for k, v in med.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    opts = Options()
    for name, value in vars(opts).items():
        parser.add_argument(f"--{name}", type=type(value) if value is not None else str, default=value)
    opts = Options(**vars(parser.parse_args(argv)))
    model = opts.model
    if model is None:
        from dg_lsp.engine.modelgen import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    canvas_length = AutoConfig.from_pretrained(model).canvas_length
    summary = {"model": model, "context": context_and_canvas(opts, tokenizer, canvas_length),
               "complete": complete_runs(opts, model)}
    c, k = summary["context"], summary["complete"]
    print(f"| figure | p50 | p95 |\n|---|---|---|\n"
          f"| extract_context ({c['lines']} lines, {c['positions']} positions) | {c['context_ms_p50']:.2f} ms | "
          f"{c['context_ms_p95']:.2f} ms |\n"
          f"| tokenize + canvas build | {c['tokenize_and_canvas_ms_p50']:.2f} ms | "
          f"{c['tokenize_and_canvas_ms_p95']:.2f} ms |")
    print(f"\n`dg-lsp complete` (median of {k['runs']} runs, {k['steps']:.0f} steps): process wall "
          f"{k['wall_ms_p50']:.0f} ms = model load {k['load_ms_p50']:.0f} ms + context {k['context_ms_p50']:.1f} ms "
          f"+ encode {k['encode_ms_p50']:.1f} ms + denoise {k['denoise_ms_p50']:.1f} ms (+ imports)")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
