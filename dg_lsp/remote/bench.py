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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from dg_lsp.bench.metrics import percentile
from dg_lsp.bench.options import int_list, parse_setting
from dg_lsp.bench.typing.model import package_sources
from dg_lsp.bench.typing.replay import make_script

from . import wire

MODES = {"nobatch": 1, "batch": None}  # None: --batch-rows
DEFAULT_SETTINGS = {"debounceMs": 75, "prefixCache": True, "completionCache": True}


@dataclass
class TeamOptions:
    clients: tuple[int, ...] = (1, 4, 16)
    modes: tuple[str, ...] = ("nobatch", "batch")
    engine: str | None = None
    replicas: int = 1
    bursts: int = 4
    max_chars: int = 40
    batch_rows: int = 16
    model: str | None = None
    device: str = "cpu"
    settings: dict = field(default_factory=dict)
    seed: int = 0
    affinity_check: bool = False
    full_canvas: bool = False
    out: str | None = None


# -- the engine ---------------------------------------------------------------------------------------------------
class LocalEngine:
    """`dg-lsp engine serve` as a child process on a free port with a fresh token."""

    def __init__(self, model: str | None, device: str, replicas: int, cpus_per_replica: float = 1.0):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = secrets.token_urlsafe(16)
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [sys.executable, "-m", "dg_lsp", "engine", "serve", "--device", device, "--replicas", str(replicas),
                "--cpus-per-replica", str(cpus_per_replica), "--port", str(self.port)]
        if model:
            argv += ["--model", model]
        env = dict(os.environ, **{wire.TOKEN_ENV: self.token}, RAY_USAGE_STATS_ENABLED="0")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
        line = self.proc.stdout.readline()
        self.startup_s = time.monotonic() - t0
        if "ready at" not in line:
            self.proc.kill()
            raise RuntimeError(f"dg-lsp engine serve did not start (run it by hand to see why): {line.strip()!r}")

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def replica_statuses(url: str, token: str | None, probes: int = 24) -> dict[str, dict]:
    """/v1/status of every replica reached by `probes` different affinity keys."""
    from .client import RemoteEngine

    probe = RemoteEngine(url, token=token)
    out = {}
    try:
        for k in range(probes):
            status, body = probe._request("GET", "/status", None, None, 10.0, affinity=f"probe-{k}")
            if status == 200:
                out[body["replica"]] = body
    finally:
        probe.close()
    return out


# -- the editors --------------------------------------------------------------------------------------------------
@dataclass
class EditorLog:
    final_latency_ms: list[float] = field(default_factory=list)
    final_nonempty: int = 0
    requests: int = 0


async def _type(service, script, log: EditorLog, timeout_s: float = 60.0) -> None:
    from dg_lsp.completion import CompletionRequest

    lines = script.initial_text.split("\n")
    for burst in script.bursts:
        pending: asyncio.Task | None = None
        sent = 0.0
        for k, char in enumerate(burst.text):
            await asyncio.sleep(burst.intervals[k])
            col = burst.column + k
            lines[burst.line] = lines[burst.line][:col] + char + lines[burst.line][col:]
            req = CompletionRequest(text="\n".join(lines), language_id=script.language_id, line=burst.line,
                                    column=col + 1, automatic=True, doc_key=script.uri)
            if pending is not None and not pending.done():
                pending.cancel()  # the editor's $/cancelRequest
            pending, sent = asyncio.ensure_future(service.complete(req)), time.perf_counter()
            log.requests += 1
        if pending is None:
            continue
        try:
            completion = await asyncio.wait_for(pending, timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - counted as no text
            completion = None
        log.final_latency_ms.append((time.perf_counter() - sent) * 1000)
        log.final_nonempty += int(bool(completion and completion.text))
        await asyncio.sleep(burst.pause)


def _settings(opts: TeamOptions, batch_rows: int):
    from dg_lsp.config import Settings, merge

    settings, errors = merge(Settings(), dict(DEFAULT_SETTINGS, **opts.settings, batchDocuments=batch_rows))
    if errors:
        raise ValueError("; ".join(errors))
    return settings


def _scripts(opts: TeamOptions, n: int, files: list[Path], rnd: random.Random, tag: str) -> list:
    scripts = []
    while len(scripts) < n:
        for path in rnd.sample(files, len(files)):
            script = make_script(path, rnd, opts.bursts, opts.max_chars, uri=f"{path.resolve().as_uri()}#{tag}-"
                                                                           f"{len(scripts)}")
            if script is not None:
                scripts.append(script)
            if len(scripts) == n:
                break
    return scripts


def _full_canvas_engine():
    from .client import RemoteEngine

    class FullCanvasEngine(RemoteEngine):
        """--full-canvas: every request on the model's whole canvas (hole_slots None), so all rows of a batch
        have one canvas length."""

        def submit(self, request):
            if getattr(request, "hole_slots", None) is not None:
                request.hole_slots = None
            return super().submit(request)

    return FullCanvasEngine


def run_once(opts: TeamOptions, url: str, token: str | None, mode: str, clients: int, files: list[Path],
             affinity: bool = True, tag: str = "") -> dict:
    from dg_lsp.completion import CompletionService

    from .client import RemoteEngine

    rows = MODES[mode] if MODES.get(mode) is not None else opts.batch_rows
    settings = _settings(opts, rows)
    rnd = random.Random(opts.seed * 1000 + clients)  # the same scripts for every mode
    scripts = _scripts(opts, clients, files, rnd, f"{tag}{mode}{clients}")
    cls = _full_canvas_engine() if opts.full_canvas else RemoteEngine
    engines = [cls(url, token=token, client_id=f"bench-{secrets.token_hex(4)}-{i}", affinity=affinity)
               for i in range(clients)]
    for e in engines:
        e.warmup()
    services = [CompletionService(e, settings) for e in engines]
    logs = [EditorLog() for _ in range(clients)]
    before = replica_statuses(url, token)

    async def all_typing():
        await asyncio.gather(*(_type(s, sc, lg) for s, sc, lg in zip(services, scripts, logs)))

    cpu0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(all_typing())
    wall, client_cpu = time.perf_counter() - t0, time.process_time() - cpu0
    time.sleep(0.5)  # computations stopped by the last cancels finish on the replicas
    after = replica_statuses(url, token)
    for e in engines:
        e.close()
    engine_cpu = sum(after[r]["cpu_s"] - before[r]["cpu_s"] for r in after if r in before)
    counters = {k: sum(after[r]["counters"][k] - before[r]["counters"][k] for r in after if r in before)
                for k in ("infills", "cancelledResults", "batchedResults", "batchRows", "promptTokens",
                          "reusedTokens")}
    steps = sum(after[r]["engine"]["steps"] - before[r]["engine"]["steps"] for r in after if r in before)
    deadline_hits = sum(after[r]["engine"]["deadlineHits"] - before[r]["engine"]["deadlineHits"]
                        for r in after if r in before)
    latencies = [x for lg in logs for x in lg.final_latency_ms]
    finals = len(latencies)
    routes = [c for e in engines for c in e.routes.values() if c]
    answered = sum(e.stats["answered"] for e in engines)
    return {"mode": mode, "clients": clients, "batch_rows": rows, "affinity": affinity, "wall_s": wall,
            "final_latency_ms": latencies, "finals": finals, "final_nonempty": sum(lg.final_nonempty for lg in logs),
            "requests": sum(lg.requests for lg in logs), "engine_answered": answered,
            "engine_infills": counters["infills"], "engine_cancelled": counters["cancelledResults"],
            "engine_steps": steps, "deadline_hits": deadline_hits, "engine_cpu_s": engine_cpu, "client_cpu_s": client_cpu,
            "batched_results": counters["batchedResults"], "batch_rows_sum": counters["batchRows"],
            "prompt_tokens": counters["promptTokens"], "reused_tokens": counters["reusedTokens"],
            "replicas": sorted(after), "documents": len(routes),
            "documents_on_one_replica": sum(1 for c in routes if len(c) == 1),
            "requests_on_main_replica": sum(c.most_common(1)[0][1] for c in routes),
            "requests_routed": sum(sum(c.values()) for c in routes),
            "engine_errors": sum(e.stats["unreachable"] + e.stats["failed"] for e in engines),
            "timeouts": sum(e.stats["timeouts"] for e in engines),
            "roundtrip_minus_server_ms": (sum(e.stats["roundTripMs"] - e.stats["serverMs"] for e in engines)
                                          / max(1, answered))}


# -- the report ---------------------------------------------------------------------------------------------------
def _fmt(x, digits=0, unit=""):
    return "-" if x is None else f"{x:,.{digits}f}{unit}"


def summary(run: dict) -> dict:
    finals = run["finals"]
    answered = run["engine_answered"]
    return {"p50": percentile(run["final_latency_ms"], 50), "p95": percentile(run["final_latency_ms"], 95),
            "finals": finals, "shown": run["final_nonempty"], "per_s": finals / run["wall_s"] if run["wall_s"] else 0,
            "computations_per_s": answered / run["wall_s"] if run["wall_s"] else 0,
            "engine_cpu": run["engine_cpu_s"] / finals if finals else None,
            "client_cpu": run["client_cpu_s"] / finals if finals else None,
            "batched": run["batched_results"] / max(1, run["engine_infills"]),
            "rows": run["batch_rows_sum"] / run["batched_results"] if run["batched_results"] else None,
            "reuse": run["reused_tokens"] / run["prompt_tokens"] if run["prompt_tokens"] else None,
            "steps": run["engine_steps"] / max(1, run["engine_infills"]),
            "deadline": run["deadline_hits"] / max(1, run["engine_infills"]),
            "overhead": run["roundtrip_minus_server_ms"], "errors": run.get("engine_errors"),
            "timeouts": run.get("timeouts")}


def table(runs: list[dict]) -> str:
    rows = [("final suggestion p50 (ms)", "p50", 0, ""), ("final suggestion p95 (ms)", "p95", 0, ""),
            ("final suggestions (bursts)", "finals", 0, ""), ("  non-empty", "shown", 0, ""),
            ("final suggestions per second", "per_s", 2, ""), ("engine computations per second", "computations_per_s", 1, ""),
            ("engine CPU s per final suggestion", "engine_cpu", 2, ""),
            ("editor CPU s per final suggestion", "client_cpu", 2, ""),
            ("engine results in a cross-client batch", "batched", 0, "%"), ("  mean rows of those", "rows", 1, ""),
            ("denoising steps per computation", "steps", 1, ""),
            ("  step budget (deadlineMs) hit", "deadline", 0, "%"),
            ("prompt tokens from the replica's prefix cache", "reuse", 0, "%"),
            ("HTTP + Serve overhead per computation (ms)", "overhead", 1, ""),
            ("engine errors (HTTP 5xx, refused)", "errors", 0, ""), ("no answer within 10 s", "timeouts", 0, "")]
    heads = [f"{r['clients']} {'client' if r['clients'] == 1 else 'clients'} {r['mode']}" for r in runs]
    sums = [summary(r) for r in runs]
    out = ["| figure | " + " | ".join(heads) + " |", "|---|" + "---|" * len(runs)]
    for label, key, digits, unit in rows:
        vals = []
        for s in sums:
            v = s[key]
            vals.append(_fmt(v * 100 if unit == "%" and v is not None else v, digits, unit))
        out.append(f"| {label} | " + " | ".join(vals) + " |")
    return "\n".join(out)


def affinity_table(runs: list[dict]) -> str:
    out = ["| 2 replicas, 4 editors | documents on one replica | requests on the document's main replica | "
           "prompt tokens from the prefix cache | final p50 (ms) |", "|---|---|---|---|---|"]
    for r in runs:
        s = summary(r)
        out.append(f"| affinity {'on' if r['affinity'] else 'off'} | {r['documents_on_one_replica']} of "
                   f"{r['documents']} | {r['requests_on_main_replica']} of {r['requests_routed']} | "
                   f"{_fmt(s['reuse'] * 100 if s['reuse'] is not None else None, 0, '%')} | {_fmt(s['p50'])} |")
    return "\n".join(out)


def plot(runs: list[dict], out: str) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot skipped: matplotlib is not installed (pip install 'dg-lsp[bench]')", file=sys.stderr)
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for mode in dict.fromkeys(r["mode"] for r in runs):
        mine = [r for r in runs if r["mode"] == mode]
        xs = [r["clients"] for r in mine]
        ss = [summary(r) for r in mine]
        axes[0].plot(xs, [s["p50"] for s in ss], "o-", label=f"{mode} p50")
        axes[0].plot(xs, [s["p95"] for s in ss], "o--", label=f"{mode} p95")
        axes[1].plot(xs, [s["per_s"] for s in ss], "o-", label=mode)
        axes[2].plot(xs, [s["engine_cpu"] for s in ss], "o-", label=mode)
    for ax, title in zip(axes, ("final suggestion latency (ms)", "final suggestions per second",
                                "engine CPU s per final suggestion")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("editors typing at once")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = str(Path(out).with_suffix(".png"))
    fig.savefig(path, dpi=110)
    return path


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


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
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
    _settings(opts, 1)  # bad --setting values fail before an engine starts
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
    runs = []
    try:
        replicas = replica_statuses(url, token)
        if not replicas:
            raise RuntimeError(f"the engine at {url} does not answer /v1/status with this token")
        info = next(iter(replicas.values()))
        for k, clients in enumerate(opts.clients):
            order = modes if k % 2 == 0 else tuple(reversed(modes))  # alternate which mode goes first
            for mode in order:
                _say(f"{clients} clients, {mode} ...")
                runs.append(run_once(opts, url, token, mode, clients, files))
        runs.sort(key=lambda r: (r["clients"], modes.index(r["mode"])))
    finally:
        if started is not None:
            started.close()
    affinity_runs = []
    if opts.affinity_check:
        _say("affinity check: starting a 2-replica engine ...")
        two = LocalEngine(opts.model, opts.device, 2, cpus_per_replica=0.5)
        try:
            for on in (True, False):
                affinity_runs.append(run_once(opts, two.url, two.token, "nobatch", 4, files, affinity=on,
                                              tag=f"aff{int(on)}"))
        finally:
            two.close()
    print(f"engine: {url} ({len(replicas)} replica{'s' if len(replicas) > 1 else ''}), model {info['model']}, "
          f"device {info['device']}; editor settings {json.dumps(dict(DEFAULT_SETTINGS, **opts.settings))}"
          f"{'; every request on the whole canvas (--full-canvas)' if opts.full_canvas else ''}\n")
    print(table(runs), flush=True)
    if affinity_runs:
        print("\n" + affinity_table(affinity_runs), flush=True)
    if opts.out:
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
    return 0
