"""Time ``extract_context`` on a generated Python file at random cursor positions.

    python -m dg_lsp.bench.diagnostics.context [--lines 2000] [--positions 200] [--seed 0]

Prints the p50/p95/max latency in milliseconds as a JSON summary. Figures only:
nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import asdict, dataclass

from tqdm import tqdm

from dg_lsp.context.extract import extract_context


@dataclass(frozen=True)
class BenchOptions:
    lines: int = 2000
    positions: int = 200
    seed: int = 0
    prefix_budget: int = 1024
    suffix_budget: int = 256


def synthetic_python(lines: int, rng: random.Random) -> str:
    """A plausible Python module of about ``lines`` lines: classes, methods, functions."""
    out = ["import os", "import sys", ""]
    index = 0
    while len(out) < lines:
        index += 1
        if index % 3 == 0:
            out += [f"class Model{index}:", f"    \"\"\"Model number {index}.\"\"\"", ""]
            for method in range(rng.randint(2, 4)):
                out += [f"    def step_{method}(self, x, y={method}):", "        total = 0"]
                out += [f"        for i in range(x):", f"            total += i * y + {method}"]
                out += ["        return total", ""]
        else:
            out += [f"def helper_{index}(values: list[int]) -> int:", "    result = []"]
            for step in range(rng.randint(3, 8)):
                out.append(f"    result.append(sum(v * {step} for v in values if v > {step}))")
            out += ["    return len(result)", "", ""]
    return "\n".join(out[:lines]) + "\n"


def run(options: BenchOptions) -> dict[str, float | int]:
    rng = random.Random(options.seed)
    text = synthetic_python(options.lines, rng)
    lines = text.split("\n")
    extract_context(text, "python", 0, 0)  # warm up: grammar load, parser creation
    timings = []
    for _ in tqdm(range(options.positions), desc="extract_context", leave=False):
        line = rng.randrange(len(lines))
        column = rng.randint(0, len(lines[line]))
        started = time.perf_counter()
        extract_context(
            text,
            "python",
            line,
            column,
            prefix_budget=options.prefix_budget,
            suffix_budget=options.suffix_budget,
        )
        timings.append((time.perf_counter() - started) * 1000.0)
    timings.sort()
    return {
        "lines": len(lines),
        "chars": len(text),
        "positions": options.positions,
        "p50_ms": round(statistics.median(timings), 3),
        "p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 3),
        "max_ms": round(timings[-1], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = BenchOptions()
    for field, value in asdict(defaults).items():
        parser.add_argument(f"--{field.replace('_', '-')}", type=type(value), default=value)
    options = BenchOptions(**vars(parser.parse_args()))
    print(json.dumps({"options": asdict(options), "results": run(options)}, indent=2))


if __name__ == "__main__":
    main()
