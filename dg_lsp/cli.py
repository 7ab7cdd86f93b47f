"""The `dg-lsp` command: serve (LSP over stdio or TCP), complete (one completion), bench."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    p.add_argument("--max-steps", type=int, default=None, help="denoising steps at most")
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--deadline-ms", type=float, default=None,
                   help="step budget per completion (serve default: 1000; complete default: none)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model directory's own code")
    p.add_argument("--allow-pickle-weights", action="store_true",
                   help="also load pickled weights (.bin, which can run code); default: safetensors only")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for torch (default 1: on a busy 2-core machine 2 threads made a decoder "
                        "step 20x slower from oversubscription; $DG_LSP_THREADS overrides)")
    p.add_argument("--log-level", default="INFO")
    p.add_argument("--log-file", default=None, help="log here instead of stderr")


def _settings(args, no_deadline_by_default: bool = False):
    from dg_lsp.config import Settings, merge

    raw = {"model": args.model, "device": args.device, "dtype": args.dtype,
           "trustRemoteCode": args.trust_remote_code, "allowPickleWeights": args.allow_pickle_weights}
    if args.max_steps is not None:
        raw["maxSteps"] = args.max_steps
    if args.temperature is not None:
        raw["temperature"] = args.temperature
    if args.deadline_ms is not None:
        raw["deadlineMs"] = args.deadline_ms
    settings, errors = merge(Settings(), {k: v for k, v in raw.items() if v is not None})
    if no_deadline_by_default and args.deadline_ms is None:
        # One-shot completion from the shell: the first forward is cold, a typing budget makes no sense.
        settings, _ = merge(settings, {"deadlineMs": None})
    if errors:
        raise SystemExit("dg-lsp: " + "; ".join(errors))
    return settings


def _logging(args) -> None:
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(level=getattr(logging, str(args.log_level).upper(), logging.INFO), handlers=[handler],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)  # it logs every message body at INFO


def _threads(args) -> None:
    import os

    import torch

    n = args.threads if args.threads is not None else int(os.environ.get("DG_LSP_THREADS", "1"))
    torch.set_num_threads(max(1, n))


def parse_tcp(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1"), int(port)


def cmd_serve(args) -> int:
    from dg_lsp.server import build_server

    server = build_server(_settings(args))
    if args.tcp:
        host, port = parse_tcp(args.tcp)
        server.start_tcp(host, port)
    else:
        server.start_io()
    return 0


def parse_location(loc: str) -> tuple[Path, int, int]:
    path, line, col = loc.rsplit(":", 2)
    return Path(path), int(line), int(col)


def cmd_complete(args) -> int:
    import asyncio
    import time

    from dg_lsp.completion import CompletionRequest, CompletionService
    from dg_lsp.context import language_for_path
    from dg_lsp.engine import Engine, ModelLoadError

    try:
        path, line, col = parse_location(args.location)
    except ValueError:
        print("dg-lsp: expected FILE:LINE:COL (1-based)", file=sys.stderr)
        return 2
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        print(f"dg-lsp: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    settings = _settings(args, no_deadline_by_default=True)
    t0 = time.perf_counter()
    try:
        engine = Engine.load(settings.model, settings.device, settings.dtype, settings.trust_remote_code)
    except ModelLoadError as exc:
        print(f"dg-lsp: {exc}", file=sys.stderr)
        return 1
    load_ms = (time.perf_counter() - t0) * 1000
    try:
        req = CompletionRequest(text=text, language_id=language_for_path(str(path)), line=max(0, line - 1),
                                column=max(0, col - 1))
        completion = asyncio.run(CompletionService(engine, settings).complete(req))
    finally:
        engine.close()
    out = completion.text if completion else ""
    if args.json:
        res = completion.result if completion else None
        print(json.dumps({"text": out, "load_ms": load_ms, "timings_ms": completion.timings_ms if completion else {},
                          "steps": res.steps if res else 0,
                          "tokens_per_forward": res.tokens_per_forward if res else 0.0}, indent=2))
    else:
        print(out)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from dg_lsp.bench.cli import main as bench_main

        _threads(argparse.Namespace(threads=None))  # $DG_LSP_THREADS, default 1 (see --threads)
        return bench_main(argv[1:])
    parser = argparse.ArgumentParser(prog="dg-lsp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", default=None, metavar="[HOST:]PORT", help="listen on TCP (host 127.0.0.1)")
    _common(serve)
    comp = sub.add_parser("complete", help="print one completion at FILE:LINE:COL (1-based)")
    comp.add_argument("location")
    comp.add_argument("--json", action="store_true")
    _common(comp)
    sub.add_parser("bench", help="benchmarks (dg-lsp bench --help)")
    args = parser.parse_args(argv)
    _logging(args)
    _threads(args)
    return {"serve": cmd_serve, "complete": cmd_complete}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
