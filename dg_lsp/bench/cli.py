"""`dg-lsp bench`: command line of the benchmark harness.

    dg-lsp bench repo PATH [--kinds single-line=50,body] [--per-kind 40] [--languages python,go]
    dg-lsp bench humaneval [--split single-line|multi-line|random-span-light] [--data-dir DIR]
    dg-lsp bench tasks FILE.jsonl
    dg-lsp bench compare A.json B.json
    dg-lsp bench gpu [--scale full,mid] [--compile off,on]   (speed on random weights: bench/gpu/)
    dg-lsp bench typing [--docs 1,4] [--soak 5000]   (latency while typing, caches on vs off: bench/typing/)

Run options (repo, humaneval, tasks): --via engine|lsp, --baseline ar|ar-restricted|empty (repeatable),
--steps 4,8,16, --temperature, --entropy-bound, --length-strategy, --hole-lengths, --canvas,
--n, --seed, --model, --device, --dtype, --out FILE.json (plus PNG plots beside it, with the `bench`
extra: pip install 'dg-lsp[bench]'), --verbose (progress bars and INFO logs even when stderr is not
a terminal).

Tables come first (stdout), then the JSON, then the plots; without matplotlib the plots are skipped
with one line on stderr and the command still exits 0. Bad input is one line and exit code 2; a
model or server that cannot start, exit code 1; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import sys
import tempfile
from pathlib import Path

from dg_lsp.bench.options import parse_setting, positive_ints, weight_or_off
from dg_lsp.bench.quality import executor, report
from dg_lsp.bench.quality.runners import RunSettings
from dg_lsp.bench.quality.sources import load_tasks
from dg_lsp.bench.quality.tasks import CURSORS, HUMANEVAL_SPLITS, KINDS


def _run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--via", choices=("engine", "lsp"), default="engine",
                   help="call the engine directly, or drive `dg-lsp serve` over stdio (default: engine)")
    g.add_argument("--baseline", action="append",
                   choices=("ar", "ar-restricted", "nosuffix", "empty", "oracle-length"),
                   default=[], help=("also run a baseline: ar = same weights autoregressive on the prefix; "
                                     "ar-restricted = the same, reading diffusion's restricted output head (the "
                                     "speed reference without the full head's cost); "
                                     "nosuffix = diffusion without the suffix; empty = empty completion; "
                                     "oracle-length = diagnostic: diffusion told the answer's length in tokens"))
    g.add_argument("--steps", type=positive_ints, default=(16,),
                   help="max denoising steps; several (4,8,16) also plot quality against steps")
    g.add_argument("--temperature", type=float, default=0.0, help="start temperature (0 = greedy; default 0)")
    g.add_argument("--entropy-bound", type=float, default=0.1)
    g.add_argument("--verify-weight", type=weight_or_off, default=RunSettings.verify_weight, metavar="W|off",
                   help="AR-verified decoding (DenoiseParams.verify_weight): the base model checks each step's "
                        "drafts, slots kept by log p_base + W * log p_decoder; off: plain diffusion (default: the "
                        f"server's, {RunSettings.verify_weight}; models without a base to check with run plain)")
    g.add_argument("--alternatives", type=int, default=RunSettings.alternatives, metavar="N",
                   help="with AR-verified decoding, weigh a one-line answer against the lines the base model nearly "
                        "wrote at its first N hesitations, by the likelihood of the code after each "
                        f"(DenoiseParams.alternatives; 0: off; default: the server's, {RunSettings.alternatives})")
    g.add_argument("--start-slots", type=int, default=RunSettings.start_slots, metavar="N",
                   help="with AR-verified decoding, the decoder's passes see a hole of N slots until the answer nears "
                        "its end, then the whole hole (DenoiseParams.start_slots; 0: the whole hole always; "
                        f"default: the server's, {RunSettings.start_slots})")
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
    g.add_argument("--cursor", choices=CURSORS, default="next-line",
                   help="where the editor's cursor is at a hole of whole lines: at the start of the line after it "
                        "(the default: text after the cursor, a one-line suggestion), or on a blank line opened "
                        "there at its first line's indentation, as after Enter (tasks.on_a_blank_line)")
    g.add_argument("--n", type=int, default=None, help="at most this many tasks (seeded random choice)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    g.add_argument("--device", default="auto", help="auto|cpu|cuda")
    g.add_argument("--dtype", default="auto", help="auto|float32|bfloat16|int8")
    g.add_argument("--out", default=None, help="write the JSON report here, and PNG plots beside it")
    g.add_argument("--exec-timeout", type=float, default=10.0, help="seconds per test program")
    g.add_argument("--exec-workers", type=int, default=2)
    g.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="progress bars and INFO logs on stderr (default: only when stderr is a terminal)")


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
    sub.add_parser("team", add_help=False, help="editors typing against one shared engine (dg-lsp bench team --help)")
    return parser


PLOTS_HINT = "plots skipped: matplotlib is not installed (pip install 'dg-lsp[bench]')"


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _quiet(verbose: bool) -> None:
    """WARNING logs and no transformers progress bars on stderr, unless it is a terminal or `verbose`."""
    loud = verbose or stderr_is_terminal()
    logging.basicConfig(level=logging.INFO if loud else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not loud:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when transformers is imported
        if "transformers" in sys.modules:
            sys.modules["transformers"].utils.logging.disable_progress_bar()


def _threads() -> None:
    """torch's CPU threads: $DG_LSP_THREADS, default 1 (see `dg-lsp serve --help`, --threads)."""
    value = os.environ.get("DG_LSP_THREADS", "1")
    try:
        n = max(1, int(value))
    except ValueError:
        raise ValueError(f"$DG_LSP_THREADS must be an integer, got {value!r}") from None
    import torch

    torch.set_num_threads(n)


def _check_out(path: str | None) -> None:
    """Fail before hours of work, not after: the --out file's folder must be (or become) a writable folder."""
    if not path:
        return
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"--out {path} is a directory; give a file name such as {out / 'report.json'}")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out.parent):
            pass
    except OSError as exc:
        raise ValueError(f"--out {path}: cannot write in {out.parent}: {exc.strerror or exc}") from None


def _load_tasks(args):
    """`load_tasks`, with the file or folder named in each error about it."""
    for root in getattr(args, "path", None) or ():
        if not Path(root).exists():
            raise ValueError(f"{root}: no such directory")
    name = getattr(args, "file", None) or getattr(args, "data_dir", None) or "the task file"
    try:
        return load_tasks(args)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{name}: not JSON lines ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError; a cut .gz an EOFError
        if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise ValueError(f"{name}: {exc}") from None


def write_plots_or_say_why(result: dict, out: str) -> list[str]:
    """The PNG plots beside `out`, or [] and one line on stderr naming the extra that brings matplotlib."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(PLOTS_HINT, file=sys.stderr)
        return []
    from dg_lsp.bench.quality.plots import write_plots

    return [str(p) for p in write_plots(result, out)]


def run(args, argv: list[str]) -> int:
    from dg_lsp.bench.quality.harness import BenchOptions, run_benchmark

    _check_out(args.out)
    tasks, source = _load_tasks(args)
    if not tasks:
        print(f"dg-lsp bench: no tasks found in {source.get('path')}", file=sys.stderr)
        return 1
    _threads()
    settings = RunSettings(temperature=args.temperature, entropy_bound=args.entropy_bound,
                           verify_weight=args.verify_weight, alternatives=args.alternatives,
                           start_slots=args.start_slots,
                           length_strategy=args.length_strategy, hole_lengths=args.hole_lengths, canvas=args.canvas,
                           max_prompt_tokens=args.max_prompt_tokens, max_new_tokens=args.max_new_tokens, seed=args.seed,
                           heal=not args.no_heal)
    progress = not args.no_progress and (args.verbose or stderr_is_terminal())
    options = BenchOptions(via=args.via, baselines=tuple(dict.fromkeys(args.baseline)), steps=args.steps,
                           settings=settings, model=args.model, device=args.device, dtype=args.dtype,
                           limits=executor.Limits(timeout_s=args.exec_timeout), exec_workers=args.exec_workers,
                           progress=progress, lsp_settings=dict(args.lsp_setting))
    result = run_benchmark(tasks, options, source, command="dg-lsp bench " + shlex.join(argv))
    print(report.markdown_table(result["rows"]), flush=True)  # the table first, whatever follows
    if args.out:
        report.write_json(result, args.out)
        written = [args.out] + write_plots_or_say_why(result, args.out)
        print("\nwrote " + ", ".join(written), file=sys.stderr)
    return 0


def _load_report(path: str) -> dict:
    try:
        return report.load_json(path)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except AttributeError:  # JSON, but not an object
        raise ValueError(f"{path}: not a dg-lsp bench report") from None


def _compare(a: str, b: str) -> int:
    ra, rb = _load_report(a), _load_report(b)
    try:
        print(report.compare_table(ra, rb))
        print()
        print(report.paired_table(ra, rb))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{a} or {b} is not a complete report (missing {exc})") from None
    return 0


def _error(message: str, code: int) -> int:
    print(f"dg-lsp bench: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("gpu", "typing", "team"):  # their own options and parsers
            verbose = any(a in ("-v", "--verbose") for a in argv[1:])
            _quiet(verbose)
            rest = argv[1:]
            if argv[0] == "gpu":  # it prints no progress: --verbose only turns the logs on
                from dg_lsp.bench.gpu.suite import main as suite_main

                rest = [a for a in rest if a not in ("-v", "--verbose")]
            elif argv[0] == "team":
                from dg_lsp.remote.bench import main as suite_main
            else:
                from dg_lsp.bench.typing.suite import main as suite_main
            _threads()
            try:
                return suite_main(rest)
            except SystemExit as exc:  # argparse: usage already printed
                return exc.code if isinstance(exc.code, int) else 2
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 2
        _quiet(getattr(args, "verbose", False))
        if args.command == "compare":
            return _compare(args.a, args.b)
        return run(args, argv)
    except KeyboardInterrupt:
        return 130
    except IsADirectoryError as exc:
        return _error(f"{exc.filename} is a directory, not a file", 2)
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _error(f"error: {where}{exc.strerror or exc}", 2)
    except (ValueError, argparse.ArgumentTypeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        return _error(f"error: {exc}", 2)
    except RuntimeError as exc:  # the engine's ModelLoadError, or a server that cannot start
        return _error(str(exc), 1)
