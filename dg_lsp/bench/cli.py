"""`dg-lsp bench`: command line of the benchmark harness.

    dg-lsp bench repo PATH [--kinds single-line=50,body] [--per-kind 40] [--languages python,go]
    dg-lsp bench humaneval [--split single-line|multi-line|random-span-light] [--data-dir DIR]
    dg-lsp bench tasks FILE.jsonl
    dg-lsp bench compare A.json B.json
    dg-lsp bench gpu [--scale full,mid] [--compile off,on]   (speed on random weights: bench/gpu/)
    dg-lsp bench typing [--docs 1,4] [--soak 5000]   (latency while typing, caches on vs off: bench/typing/)

Run options (repo, humaneval, tasks): --via engine|lsp, --baseline ar|empty (repeatable),
--steps 4,8,16, --temperature, --entropy-bound, --length-strategy, --hole-lengths, --canvas,
--n, --seed, --model, --device, --dtype, --out FILE.json (plus PNG plots beside it).
"""

from __future__ import annotations

import argparse
import shlex
import sys

from dg_lsp.bench.options import parse_setting, positive_ints
from dg_lsp.bench.quality import executor, report
from dg_lsp.bench.quality.runners import RunSettings
from dg_lsp.bench.quality.sources import load_tasks
from dg_lsp.bench.quality.tasks import HUMANEVAL_SPLITS, KINDS


def _run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--via", choices=("engine", "lsp"), default="engine",
                   help="call the engine directly, or drive `dg-lsp serve` over stdio (default: engine)")
    g.add_argument("--baseline", action="append", choices=("ar", "nosuffix", "empty", "oracle-length"),
                   default=[], help=("also run a baseline: ar = same weights autoregressive on the prefix; "
                                     "nosuffix = diffusion without the suffix; empty = empty completion; "
                                     "oracle-length = diagnostic: diffusion told the answer's length in tokens"))
    g.add_argument("--steps", type=positive_ints, default=(16,),
                   help="max denoising steps; several (4,8,16) also plot quality against steps")
    g.add_argument("--temperature", type=float, default=0.0, help="start temperature (0 = greedy; default 0)")
    g.add_argument("--entropy-bound", type=float, default=0.1)
    g.add_argument("--length-strategy", choices=("auto", "pad", "search"), default="auto")
    g.add_argument("--hole-lengths", type=positive_ints, default=(4, 8, 16, 32),
                   help="candidates of --length-strategy search")
    g.add_argument("--canvas", type=int, default=None, help="pad-fill hole length (default: the model's canvas)")
    g.add_argument("--max-new-tokens", type=int, default=64, help="ar baseline token budget")
    g.add_argument("--max-prompt-tokens", type=int, default=1024)
    g.add_argument("--no-heal", action="store_true",
                   help="no token healing: prompts end exactly at the cursor, even right after a line break")
    g.add_argument("--lsp-setting", action="append", type=parse_setting, default=[], metavar="KEY=VALUE",
                   help="extra dgLsp server setting for --via lsp (value parsed as JSON), e.g. maxLines=30")
    g.add_argument("--n", type=int, default=None, help="at most this many tasks (seeded random choice)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    g.add_argument("--device", default="auto", help="auto|cpu|cuda")
    g.add_argument("--dtype", default="auto", help="auto|float32|bfloat16")
    g.add_argument("--out", default=None, help="write the JSON report here, and PNG plots beside it")
    g.add_argument("--exec-timeout", type=float, default=10.0, help="seconds per test program")
    g.add_argument("--exec-workers", type=int, default=2)
    g.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dg-lsp bench", description="Benchmark completion quality and speed.")
    sub = parser.add_subparsers(dest="command", required=True)
    repo = sub.add_parser("repo", help="holes mined from directories of code")
    repo.add_argument("path", nargs="+", help="one or more directories")
    heldout = sub.add_parser("heldout", help="holes mined from the stdlib packages the training script holds out "
                                             "(json, email, http, xml, logging, urllib of this interpreter)")
    for p in (repo, heldout):
        p.add_argument("--kinds", default=",".join(KINDS), help="kinds, each optionally =COUNT (default: all)")
        p.add_argument("--per-kind", type=int, default=40, help="holes per kind and language (default 40)")
        p.add_argument("--languages", default=None, help="comma-separated languages (default: all found)")
    he = sub.add_parser("humaneval", help="HumanEval-Infilling, scored by pass@1")
    he.add_argument("--split", choices=sorted(HUMANEVAL_SPLITS), default="single-line")
    he.add_argument("--data-dir", default=None, help="folder of the HumanEval-*.jsonl.gz files")
    tasks = sub.add_parser("tasks", help="a JSONL of tasks with the HumanEval-Infilling fields")
    tasks.add_argument("file")
    for p in (repo, heldout, he, tasks):
        _run_options(p)
    cmp = sub.add_parser("compare", help="deltas between two reports (B - A)")
    cmp.add_argument("a")
    cmp.add_argument("b")
    sub.add_parser("gpu", add_help=False, help="speed of the architecture on random weights (dg-lsp bench gpu --help)")
    sub.add_parser("typing", add_help=False, help="latency while typing, caches on vs off (dg-lsp bench typing --help)")
    return parser


def run(args, argv: list[str]) -> int:
    from dg_lsp.bench.quality.harness import BenchOptions, run_benchmark

    tasks, source = load_tasks(args)
    if not tasks:
        print("no tasks found", file=sys.stderr)
        return 1
    settings = RunSettings(temperature=args.temperature, entropy_bound=args.entropy_bound,
                           length_strategy=args.length_strategy, hole_lengths=args.hole_lengths, canvas=args.canvas,
                           max_prompt_tokens=args.max_prompt_tokens, max_new_tokens=args.max_new_tokens, seed=args.seed,
                           heal=not args.no_heal)
    options = BenchOptions(via=args.via, baselines=tuple(dict.fromkeys(args.baseline)), steps=args.steps,
                           settings=settings, model=args.model, device=args.device, dtype=args.dtype,
                           limits=executor.Limits(timeout_s=args.exec_timeout), exec_workers=args.exec_workers,
                           progress=not args.no_progress, lsp_settings=dict(args.lsp_setting))
    result = run_benchmark(tasks, options, source, command="dg-lsp bench " + shlex.join(argv))
    print(report.markdown_table(result["rows"]))
    if args.out:
        from dg_lsp.bench.quality.plots import write_plots

        report.write_json(result, args.out)
        written = [args.out] + [str(p) for p in write_plots(result, args.out)]
        print("\nwrote " + ", ".join(written), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "gpu":  # its own options and parser
        from dg_lsp.bench.gpu.suite import main as gpu_main

        return gpu_main(argv[1:])
    if argv and argv[0] == "typing":  # its own options and parser
        from dg_lsp.bench.typing.suite import main as typing_main

        return typing_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if args.command == "compare":
            print(report.compare_table(report.load_json(args.a), report.load_json(args.b)))
            return 0
        return run(args, argv)
    except (FileNotFoundError, ValueError, argparse.ArgumentTypeError) as exc:
        print(f"dg-lsp bench: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # the engine's ModelLoadError, or a server that cannot start
        print(f"dg-lsp bench: {exc}", file=sys.stderr)
        return 1
