"""`dg-lsp bench team`: simulated editors typing at once against one shared engine, with and without
cross-client batching, in the same run.

    dg-lsp bench team [--clients 1,4,16] [--modes nobatch,batch] [--engine URL] [--replicas 1]
                      [--bursts 4] [--batch-rows 16] [--model DIR] [--setting KEY=VALUE] [--out FILE.json]
                      [--affinity-check]

Without --engine it starts `dg-lsp engine serve` here (a local Ray, the model given or the embedded one, a
random port and token) and stops it at the end; with --engine URL (token: $DG_LSP_ENGINE_TOKEN) it runs
unchanged against that engine, a cluster's included.

Each simulated editor is the thin client's own completion path in this process: a `CompletionService` (context
extraction, caches, supersession, post-processing, the syntax gate) over its own `RemoteEngine` (its own client
id, so its documents are its own on the engine), replaying typing scripted from real files as
`dg-lsp bench typing` does (bench/typing/replay.py: bursts of keystrokes 30-80 ms apart, a request per
keystroke, the previous one cancelled, a pause to read the suggestion). The JSON-RPC framing of a real LSP
server is left out: on this 2-core machine 16 editor processes would take the CPU the engine is measured on.

Figures per (clients, mode): p50/p95 latency of the suggestion finally shown after each burst, final
suggestions per second (all editors), engine computations per second, CPU seconds per final suggestion on
the engine's replicas (from /v1/status) and in the editors, the share of engine results computed in a
cross-client batch and its mean rows. Modes: `nobatch` = each request's batch_rows 1 (the engine runs them one
after another), `batch` = batch_rows N (requests queued together share decoder forwards). `--affinity-check`
adds a 2-replica engine and types with session affinity on and off: which replicas answered each document
and how much of the prompts the replicas' prefix caches served.

The parts: this module (the command), remote/bench_run.py (the engine, the editors, one run), remote/bench_report.py
(the figures, tables and plot); their public names are importable from here.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from dg_lsp.bench.options import int_list, parse_setting
from dg_lsp.bench.typing.model import package_sources

from . import wire
from .bench_report import affinity_table, plot, summary, table
from .bench_run import (DEFAULT_SETTINGS, MODES, EditorLog, LocalEngine, TeamOptions, editor_settings,
                        replica_statuses, run_once)

__all__ = ["DEFAULT_SETTINGS", "MODES", "EditorLog", "LocalEngine", "TeamOptions", "affinity_table", "build_parser",
           "editor_settings", "main", "plot", "replica_statuses", "run_once", "summary", "table"]


# -- the command --------------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dg-lsp bench team", description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int_list, default=(1, 4, 16), help="editors typing at once (1,4,16)")
    p.add_argument("--modes", default="nobatch,batch", help="nobatch,batch (both, in the same run)")
    p.add_argument("--engine", default=None, metavar="URL",
                   help=f"an engine already serving (token ${wire.TOKEN_ENV}); default: start one here")
    p.add_argument("--replicas", type=int, default=1, help="replicas of the engine started here (1)")
    p.add_argument("--bursts", type=int, default=4, help="lines each editor types (4)")
    p.add_argument("--batch-rows", type=int, default=16, help="rows a batch may have in mode batch (16)")
    p.add_argument("--model", default=None, help="model of the engine started here (default: the embedded one)")
    p.add_argument("--device", default="cpu", help="device of the engine started here (cpu)")
    p.add_argument("--setting", action="append", type=parse_setting, default=[], metavar="KEY=VALUE",
                   help=f"editor setting (JSON value); defaults {json.dumps(DEFAULT_SETTINGS)}")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--affinity-check", action="store_true",
                   help="also start a 2-replica engine and type with session affinity on and off")
    p.add_argument("--full-canvas", action="store_true",
                   help="send every request on the model's whole canvas (no per-trigger hole_slots), for both modes")
    p.add_argument("--out", default=None, help="write the JSON report here and a PNG plot beside it")
    p.add_argument("-v", "--verbose", action="store_true", help=argparse.SUPPRESS)
    return p


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def options_of(args: argparse.Namespace) -> TeamOptions:
    """The parsed command line checked; a bad value raises ValueError before any engine starts."""
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise ValueError(f"--modes: expected nobatch and/or batch, got {args.modes!r}")
    if any(c < 1 for c in args.clients):
        raise ValueError("--clients: each count must be at least 1")
    if not 1 <= args.batch_rows <= 64:
        raise ValueError("--batch-rows must be 1-64")
    opts = TeamOptions(clients=tuple(args.clients), modes=modes, engine=args.engine, replicas=args.replicas,
                       bursts=args.bursts, batch_rows=args.batch_rows, model=args.model, device=args.device,
                       settings=dict(args.setting), seed=args.seed, affinity_check=args.affinity_check,
                       full_canvas=args.full_canvas, out=args.out)
    editor_settings(opts, 1)  # bad --setting values fail before an engine starts
    return opts


def _typing_runs(opts: TeamOptions, url: str, token: str | None, files: list[Path]) -> tuple[dict, list[dict]]:
    """The replicas' status, and a run per (clients, mode), the order of the modes alternating."""
    replicas = replica_statuses(url, token)
    if not replicas:
        raise RuntimeError(f"the engine at {url} does not answer /v1/status with this token")
    runs = []
    for k, clients in enumerate(opts.clients):
        order = opts.modes if k % 2 == 0 else tuple(reversed(opts.modes))  # alternate which mode goes first
        for mode in order:
            _say(f"{clients} clients, {mode} ...")
            runs.append(run_once(opts, url, token, mode, clients, files))
    runs.sort(key=lambda r: (r["clients"], opts.modes.index(r["mode"])))
    return replicas, runs


def _affinity_runs(opts: TeamOptions, files: list[Path]) -> list[dict]:
    """--affinity-check: 4 editors on a 2-replica engine, session affinity on, then off."""
    _say("affinity check: starting a 2-replica engine ...")
    two = LocalEngine(opts.model, opts.device, 2, cpus_per_replica=0.5)
    try:
        return [run_once(opts, two.url, two.token, "nobatch", 4, files, affinity=on, tag=f"aff{int(on)}")
                for on in (True, False)]
    finally:
        two.close()


def _write(opts: TeamOptions, command: str, url: str, replicas: dict, started: LocalEngine | None, runs: list[dict],
           affinity_runs: list[dict]) -> None:
    info = next(iter(replicas.values()))
    report = {"command": command, "engine": {"url": url, "replicas": len(replicas), "model": info["model"],
                                             "device": info["device"],
                                             "startup_s": started.startup_s if started else None},
              "settings": dict(DEFAULT_SETTINGS, **opts.settings), "full_canvas": opts.full_canvas, "runs": runs,
              "summary": [dict(summary(r), clients=r["clients"], mode=r["mode"]) for r in runs],
              "affinity": affinity_runs}
    Path(opts.out).parent.mkdir(parents=True, exist_ok=True)
    Path(opts.out).write_text(json.dumps(report, indent=1))
    written = [opts.out] + [p for p in [plot(runs, opts.out)] if p]
    _say("wrote " + ", ".join(written))


def main(argv: list[str]) -> int:
    opts = options_of(build_parser().parse_args(argv))
    files = package_sources()
    command = "dg-lsp bench team " + shlex.join(argv)
    started = None
    if opts.engine:
        url, token = opts.engine, wire.token_from_env()
    else:
        _say("starting dg-lsp engine serve (local Ray) ...")
        started = LocalEngine(opts.model, opts.device, opts.replicas)
        url, token = started.url, started.token
        _say(f"engine ready in {started.startup_s:.1f} s at {url}")
    try:
        replicas, runs = _typing_runs(opts, url, token, files)
    finally:
        if started is not None:
            started.close()
    affinity_runs = _affinity_runs(opts, files) if opts.affinity_check else []
    info = next(iter(replicas.values()))
    print(f"engine: {url} ({len(replicas)} replica{'s' if len(replicas) > 1 else ''}), model {info['model']}, "
          f"device {info['device']}; editor settings {json.dumps(dict(DEFAULT_SETTINGS, **opts.settings))}"
          f"{'; every request on the whole canvas (--full-canvas)' if opts.full_canvas else ''}\n")
    print(table(runs), flush=True)
    if affinity_runs:
        print("\n" + affinity_table(affinity_runs), flush=True)
    if opts.out:
        _write(opts, command, url, replicas, started, runs, affinity_runs)
    return 0
