"""`dg-lsp bench typing`: how fast suggestions follow someone typing, with the typing
optimisations (prefix cache, completion cache with typing-through, cross-document batching where the
engine measured that it pays) on and switched off; `nobatch` / `batch`: everything on with batching
never / always.

    dg-lsp bench typing [--files PATH ...] [--docs 1,4] [--bursts 12] [--modes on,off]
                        [--model DIR] [--setting KEY=VALUE] [--soak 5000] [--out FILE.json]

Each (documents, mode) run starts a fresh `dg-lsp serve` over stdio and replays typing
(`typing_replay`): one or several documents typed at once, a request per keystroke with the
previous one cancelled. Figures per run: p50/p95 latency of the suggestion finally shown after
each burst, the share of requests computed / superseded / served from the cache, CPU seconds
per shown suggestion (server process), the share of prompt tokens whose encoder cache was
reused. Beside the runs, in-process: encoder time after a one-character edit against a full
encode of a 2,000-token prompt, and one denoising step batched against serial. `--soak N`
adds N completions on one server and reports its memory growth. Ratios are on / off.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dg_lsp.bench.metrics import percentile
from dg_lsp.bench.options import int_list, parse_setting
from dg_lsp.bench.typing.model import package_sources, resolve_model
from dg_lsp.bench.typing.replay import RequestLog, TypingClient, make_script, type_all
from dg_lsp.bench.typing.report import probe_table, soak_line, table

MODES = {"on": {"prefixCache": True, "completionCache": True, "batchDocuments": 0},
         "off": {"prefixCache": False, "completionCache": False, "batchDocuments": 1},
         "nobatch": {"prefixCache": True, "completionCache": True, "batchDocuments": 1},
         "batch": {"prefixCache": True, "completionCache": True, "batchDocuments": 4}}


@dataclass
class TypingOptions:
    files: list[str] = field(default_factory=list)  # default: the package's own Python files
    docs: tuple[int, ...] = (1, 4)
    bursts: int = 12  # lines typed per document (each in one to three bursts)
    max_chars: int = 40  # at most this many characters typed per line
    modes: tuple[str, ...] = ("on", "off")
    model: str | None = None
    device: str = "cpu"
    settings: dict = field(default_factory=dict)
    seed: int = 0
    probe_tokens: int = 2000
    probe_reps: int = 5
    repeat: int = 1  # runs per (documents, mode), alternating the order of the modes; figures pooled
    soak: int = 0
    out: str | None = None
    progress: bool = True


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _say(opts: TypingOptions, text: str) -> None:
    if opts.progress:
        print(text, file=sys.stderr, flush=True)


def _files(opts: TypingOptions) -> list[Path]:
    found: list[Path] = []
    for item in opts.files:
        p = Path(item)
        found.extend(sorted(q for q in p.rglob("*.py") if q.is_file()) if p.is_dir() else [p])
    return found or package_sources()


def _start_server(opts: TypingOptions, model: str, mode: str) -> TypingClient:
    settings = dict(opts.settings, **MODES[mode])
    argv = [sys.executable, "-m", "dg_lsp", "serve", "--model", model, "--device", opts.device,
            "--log-level", "WARNING"]
    client = TypingClient(argv, settings=settings)
    client.request("initialize", {"processId": None, "rootUri": None, "initializationOptions": settings,
                                  "capabilities": {"workspace": {"configuration": True}}}, timeout=300)
    client.notify("initialized", {})
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})
        if status["state"] == "ready":
            return client
        if status["state"] == "error":
            client.close()
            raise RuntimeError(f"the server could not load the model: {status['error']}")
        time.sleep(0.2)
    client.close()
    raise RuntimeError("the server did not become ready in 10 minutes")


def _status(client: TypingClient) -> dict:
    while True:  # wait for the engine to go idle so counters are final
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})
        if not status["busy"] and not status["queue"]:
            return status
        time.sleep(0.05)


def _delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after if isinstance(after[k], (int, float))}


def run_once(opts: TypingOptions, model: str, mode: str, n_docs: int, files: list[Path], rep: int = 0) -> dict:
    """One server, `n_docs` documents typed at once: the raw counts and final latencies."""
    rnd = random.Random((opts.seed + rep) * 1000 + n_docs)
    scripts = []
    for path in rnd.sample(files, len(files)):
        script = make_script(path, rnd, opts.bursts, opts.max_chars)
        if script is not None:
            scripts.append(script)
        if len(scripts) == n_docs:
            break
    client = _start_server(opts, model, mode)
    try:
        before = _status(client)
        log = RequestLog()
        wall = type_all(client, scripts, log)
        after = _status(client)
    finally:
        client.close()
    return {"mode": mode, "docs": n_docs, "rep": rep, "files": [s.uri for s in scripts], "keystrokes": log.sent,
            "wall_s": wall, "final_latency_ms": log.final_latency_ms, "final_nonempty": log.final_nonempty,
            "cpu_s": after["process"]["cpuSeconds"] - before["process"]["cpuSeconds"],
            "completion": _delta(after["completion"], before["completion"]),
            "engine": _delta(after.get("engine", {}), before.get("engine", {})),
            "client": {"with_items": log.with_items, "empty": log.empty, "cancelled": log.cancelled,
                       "errors": log.errors}}


def _sum(dicts: list[dict]) -> dict:
    out: dict = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def summarize(raw: list[dict]) -> dict:
    """The figures of one (documents, mode) cell, pooled over its repetitions."""
    latencies = [x for r in raw for x in r["final_latency_ms"]]
    comp, eng = _sum([r["completion"] for r in raw]), _sum([r["engine"] for r in raw])
    requests = max(1, comp.get("requests", 0))
    shown = max(1, len(latencies))
    jobs = max(1, eng.get("jobs", 0))
    cached = comp.get("cacheExact", 0) + comp.get("cacheTyped", 0) + comp.get("inflightTyped", 0)
    return {
        "mode": raw[0]["mode"], "docs": raw[0]["docs"], "repetitions": len(raw), "shown": len(latencies),
        "keystrokes": sum(r["keystrokes"] for r in raw),
        "final_p50_ms": percentile(latencies, 50), "final_p95_ms": percentile(latencies, 95),
        "final_nonempty": sum(r["final_nonempty"] for r in raw) / shown,
        "computed_share": comp.get("computed", 0) / requests,
        "superseded_share": (comp.get("superseded", 0) + comp.get("cancelled", 0)) / requests,
        "cache_hit_rate": cached / requests,
        "cpu_s_per_shown": sum(r["cpu_s"] for r in raw) / shown,
        "computations": comp.get("computations", 0),
        "computations_stopped": comp.get("computations", 0) - comp.get("computationsFinished", 0),
        "steps_per_job": eng.get("steps", 0) / jobs,
        "deadline_hits": eng.get("deadlineHits", 0),
        "prefix_reused_share": eng.get("reusedTokens", 0) / max(1, eng.get("promptTokens", 0)),
        "encode_ms_per_job": eng.get("encodeMs", 0.0) / jobs,
        "batched_share": eng.get("batchedJobs", 0) / jobs,
        "rows_per_forward": (eng.get("batchRowSteps", 0) / eng["batchForwards"]) if eng.get("batchForwards") else None,
        "server_completion": comp, "server_engine": eng,
    }


def probes(opts: TypingOptions, model: str, files: list[Path]) -> dict:
    from dg_lsp.bench.typing.probes import batch_probe, burst_probe, encode_probe
    from dg_lsp.engine import Engine

    engine = Engine.load(model, opts.device)
    try:
        engine.warmup()  # as the server does: includes the batching calibration
        text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files[:20])
        return {"encode": encode_probe(engine, text, opts.probe_tokens, opts.probe_reps),
                "batch": batch_probe(engine, text, reps=opts.probe_reps),
                "burst": burst_probe(engine, text, reps=max(1, opts.probe_reps // 2))}
    finally:
        engine.close()


def run(opts: TypingOptions, command: str) -> dict:
    model, kind = resolve_model(opts.model)
    files = _files(opts)
    _say(opts, f"model: {model} ({kind}); {len(files)} files to type from")
    raw = []
    for n_docs in opts.docs:
        for rep in range(opts.repeat):  # alternate the order so drift on a shared machine cancels out
            for mode in (opts.modes if rep % 2 == 0 else opts.modes[::-1]):
                _say(opts, f"typing {n_docs} document(s), optimisations {mode}, repetition {rep + 1} ...")
                raw.append(run_once(opts, model, mode, n_docs, files, rep))
    runs = [summarize([r for r in raw if r["docs"] == n and r["mode"] == m]) for n in opts.docs for m in opts.modes]
    _say(opts, "encoder and batching probes ...")
    probe = probes(opts, model, files)
    report = {"schema": "dg-lsp-bench-typing/1", "command": command, "model": model, "model_kind": kind,
              "device": opts.device, "options": asdict(opts), "runs": runs, "raw_runs": raw, "probes": probe}
    if opts.soak:
        from dg_lsp.bench.typing.probes import soak

        _say(opts, f"soak: {opts.soak} completions ...")
        client = _start_server(opts, model, "on")
        try:
            report["soak"] = soak(client, files, opts.soak, opts.seed)
        finally:
            client.close()
    return report


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dg-lsp bench typing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", nargs="*", default=[], help="files or directories to type from (default: dg_lsp's)")
    p.add_argument("--docs", type=int_list, default=(1, 4), help="documents typed at once, per run (default 1,4)")
    p.add_argument("--bursts", type=int, default=12, help="lines typed per document, each in 1-3 bursts (default 12)")
    p.add_argument("--max-chars", type=int, default=40, help="characters typed per line at most (default 40)")
    p.add_argument("--modes", default="on,off", help="on = prefix + completion cache + automatic batching, off = none, nobatch / batch = on "
                        "with batching never / always (default on,off)")
    p.add_argument("--model", default=None, help="model directory (default: embedded, else a random training-size one)")
    p.add_argument("--device", default="cpu", help="auto|cpu|cuda (default cpu)")
    p.add_argument("--setting", action="append", type=parse_setting, default=[], metavar="KEY=VALUE",
                   help="dgLsp server setting for every run (JSON value), e.g. maxSteps=8")
    p.add_argument("--repeat", type=int, default=1, help="runs per cell, modes alternating; figures pooled")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--probe-tokens", type=int, default=2000)
    p.add_argument("--probe-reps", type=int, default=5)
    p.add_argument("--soak", type=int, default=0, metavar="N", help="also N completions on one server: memory growth")
    p.add_argument("--out", default=None, help="write the JSON report here")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="progress lines on stderr even when it is not a terminal (default: only on a terminal)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    modes = tuple(m for m in args.modes.split(",") if m)
    if not modes or any(m not in MODES for m in modes):
        print(f"dg-lsp bench typing: --modes takes on, off, nobatch, batch; got {args.modes!r}", file=sys.stderr)
        return 2
    opts = TypingOptions(files=args.files, docs=args.docs, bursts=args.bursts, max_chars=args.max_chars, modes=modes,
                         model=args.model, device=args.device, settings=dict(args.setting), seed=args.seed,
                         repeat=max(1, args.repeat),
                         probe_tokens=args.probe_tokens, probe_reps=args.probe_reps, soak=args.soak, out=args.out,
                         progress=not args.no_progress and (args.verbose or _stderr_is_terminal()))
    try:
        report = run(opts, "dg-lsp bench typing " + shlex.join(argv))
    except RuntimeError as exc:
        print(f"dg-lsp bench typing: {exc}", file=sys.stderr)
        return 1
    print(f"model: {report['model']} ({report['model_kind']}), device {opts.device}\n")
    print(table(report["runs"], opts.docs, opts.modes))
    print()
    print(probe_table(report["probes"]))
    if "soak" in report:
        print("\n" + soak_line(report["soak"]))
    if opts.out:
        Path(opts.out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"\nwrote {opts.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
