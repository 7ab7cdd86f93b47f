"""`dg-lsp engine serve`: the shared, warm engine of a team, as a Ray Serve application.

    export DG_LSP_ENGINE_TOKEN=$(python -c 'import secrets; print(secrets.token_urlsafe(24))')
    dg-lsp engine serve [--model DIR] [--device auto|cpu|cuda] [--replicas N] [--gpus-per-replica F]
                        [--host 127.0.0.1] [--port 8000] [--ray-address auto|ADDR] [--token T]
    dg-lsp serve --engine http://HOST:PORT      (each editor; the same $DG_LSP_ENGINE_TOKEN)

Without --ray-address a local Ray is started in this process (and stopped with it); `auto` (or an address)
joins a running cluster, where the replicas are placed by Ray (`--gpus-per-replica 1`: one GPU each). The
API: dg_lsp/remote/wire.py; the deployment: docs/SCALE.md. Errors are one line: exit code 2 for bad input,
1 when Ray or the application cannot start.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from .wire import READY, TOKEN_ENV, token_from_env

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class CliError(Exception):
    """A one-line error and its exit code (2: bad input; 1: cannot run). (Not dg_lsp.cli's: that module
    dispatches here, and imports never run both ways, tests/unit/test_import_graph.py.)"""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def thread_count(args) -> int:
    from dg_lsp.config import thread_count as rule

    try:
        return rule(args.threads)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dg-lsp engine", description=__doc__.split("\n\n")[0],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    p = sub.add_parser("serve", help="serve the engine over HTTP (Ray Serve)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="model directory (default: the embedded model)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    p.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "int8"])
    p.add_argument("--replicas", type=int, default=1, help="engine replicas, each with its own model copy (1)")
    p.add_argument("--gpus-per-replica", type=float, default=0.0, help="GPUs Ray reserves per replica (0)")
    p.add_argument("--cpus-per-replica", type=float, default=1.0, help="CPUs Ray reserves per replica (1)")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (8000)")
    p.add_argument("--ray-address", default=None,
                   help="join this Ray cluster (`auto`: the one this machine belongs to); default: start one here")
    p.add_argument("--token", default=None, help=f"the shared token (default ${TOKEN_ENV}; the environment keeps "
                                                 "it out of the process list)")
    p.add_argument("--batch-rows", type=int, default=None,
                   help="cross-user batching: rows that may share a decoder forward (1 = never); default: as each "
                        "request asks (its editor's batchDocuments, 0 = the replica's warm-up measurement decides)")
    p.add_argument("--max-ongoing-requests", type=int, default=64, help="requests a replica takes at once (64)")
    p.add_argument("--no-affinity", action="store_true",
                   help="route requests by load only, not a document to the replica holding its prefix cache")
    p.add_argument("--prefix-cache-docs", type=int, default=64,
                   help="documents whose prompt KV cache each replica keeps (64; an editor's own engine keeps 8)")
    p.add_argument("--object-store-mb", type=int, default=256, help="object store of a local Ray (MB, 256)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads per replica (default 1)")
    p.add_argument("--trust-remote-code", action="store_true", help="allow the model directory's own code")
    p.add_argument("--allow-pickle-weights", action="store_true", help="also load pickled .bin weights")
    p.add_argument("-v", "--verbose", action="store_true", help="Ray's and the replicas' logs on stderr")
    return parser


def _options(args):
    from .app import EngineOptions

    token = args.token or token_from_env()
    if not token:
        raise CliError(f"a shared token is required: --token T or ${TOKEN_ENV} (for example "
                       f"export {TOKEN_ENV}=$(python -c 'import secrets; print(secrets.token_urlsafe(24))'))")
    if len(token) < 8:
        raise CliError("the token must have at least 8 characters")
    if args.replicas < 1:
        raise CliError(f"--replicas must be at least 1, got {args.replicas}")
    if not 0 < args.port < 65536:
        raise CliError(f"--port must be 1-65535, got {args.port}")
    if args.gpus_per_replica < 0 or args.cpus_per_replica < 0:
        raise CliError("--gpus-per-replica and --cpus-per-replica cannot be negative")
    if args.batch_rows is not None and not 1 <= args.batch_rows <= 64:
        raise CliError(f"--batch-rows must be 1-64, got {args.batch_rows}")
    if args.model is not None and not os.path.isdir(args.model):
        raise CliError(f"--model {args.model}: no such directory")
    model = os.path.abspath(args.model) if args.model else None  # the replicas' working directory differs
    return EngineOptions(token=token, model=model, device=args.device, dtype=args.dtype,
                         trust_remote_code=args.trust_remote_code, allow_pickle_weights=args.allow_pickle_weights,
                         threads=thread_count(args), batch_rows=args.batch_rows, replicas=args.replicas,
                         cpus_per_replica=args.cpus_per_replica, gpus_per_replica=args.gpus_per_replica,
                         max_ongoing_requests=max(1, args.max_ongoing_requests), affinity=not args.no_affinity,
                         prefix_cache_docs=max(1, args.prefix_cache_docs))


def serve(args) -> int:
    options = _options(args)
    if args.host not in LOOPBACK:
        print(f"dg-lsp engine: listening on {args.host}: anyone who can reach it and has the token can use the "
              f"engine; the traffic is plain HTTP (put TLS in front of it off a trusted network)", file=sys.stderr)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
    try:
        import ray
        from ray import serve as ray_serve
    except ImportError:
        raise CliError("Ray Serve is not installed: pip install 'dg-lsp[team]'", code=1) from None
    from .app import APP_NAME, build_app

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    joined = args.ray_address is not None
    try:
        if joined:
            ray.init(address=args.ray_address, log_to_driver=args.verbose,
                     logging_level=logging.INFO if args.verbose else logging.WARNING)
        else:
            ray.init(address="local", include_dashboard=False, object_store_memory=args.object_store_mb * 1024 * 1024,
                     log_to_driver=args.verbose, logging_level=logging.INFO if args.verbose else logging.WARNING)
    except Exception as exc:  # noqa: BLE001 - one line for the user
        raise CliError(f"cannot start Ray{' at ' + args.ray_address if joined else ''}: {exc}", code=1) from None
    try:
        try:
            ray_serve.start(http_options={"host": args.host, "port": args.port},
                            logging_config={"log_level": "INFO" if args.verbose else "WARNING"})
            ray_serve.run(build_app(options), name=APP_NAME, route_prefix="/", blocking=False)
        except Exception as exc:  # noqa: BLE001
            raise CliError(f"cannot start the engine application: {type(exc).__name__}: {exc}", code=1) from None
        url = f"http://{args.host}:{args.port}"
        print(f"dg-lsp engine: {READY} {url} ({options.replicas} replica{'s' if options.replicas > 1 else ''}, "
              f"model {options.model or 'embedded default'}); editors: dg-lsp serve --engine {url}", flush=True)
        while not stop.wait(1.0):
            pass
        return 0
    finally:
        try:
            if joined:
                ray_serve.delete(APP_NAME)
            else:
                ray_serve.shutdown()
        except Exception:  # noqa: BLE001 - stopping anyway
            pass
        ray.shutdown()


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return serve(args)
    except CliError as exc:
        print(f"dg-lsp engine: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
