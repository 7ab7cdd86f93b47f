"""One run of `dg-lsp bench team` (remote/bench.py): the engine it types against (one started here, or a URL),
and N simulated editors, each a `CompletionService` over its own `RemoteEngine`, typing scripted bursts at once;
the figures of the run come from the editors' logs and the replicas' /v1/status before and after."""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

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
        line, before = wire.read_ready(self.proc.stdout)
        self.startup_s = time.monotonic() - t0
        if not line:
            self.proc.kill()
            raise RuntimeError(f"dg-lsp engine serve did not start (run it by hand to see why): {''.join(before)!r}")

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


def editor_settings(opts: TeamOptions, batch_rows: int):
    """The editors' settings: DEFAULT_SETTINGS, then --setting, then the batch rows of the mode."""
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


def _replica_deltas(before: dict[str, dict], after: dict[str, dict]) -> tuple[float, dict, int, int]:
    """What the replicas seen both times did in between: CPU seconds, result counters, denoising steps, deadline
    hits."""
    engine_cpu = sum(after[r]["cpu_s"] - before[r]["cpu_s"] for r in after if r in before)
    counters = {k: sum(after[r]["counters"][k] - before[r]["counters"][k] for r in after if r in before)
                for k in ("infills", "cancelledResults", "batchedResults", "batchRows", "promptTokens",
                          "reusedTokens")}
    steps = sum(after[r]["engine"]["steps"] - before[r]["engine"]["steps"] for r in after if r in before)
    deadline_hits = sum(after[r]["engine"]["deadlineHits"] - before[r]["engine"]["deadlineHits"]
                        for r in after if r in before)
    return engine_cpu, counters, steps, deadline_hits


def run_once(opts: TeamOptions, url: str, token: str | None, mode: str, clients: int, files: list[Path],
             affinity: bool = True, tag: str = "") -> dict:
    from dg_lsp.completion import CompletionService

    from .client import RemoteEngine

    rows = MODES[mode] if MODES.get(mode) is not None else opts.batch_rows
    settings = editor_settings(opts, rows)
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
    engine_cpu, counters, steps, deadline_hits = _replica_deltas(before, after)
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
