"""The report of `dg-lsp bench team` (remote/bench.py): per run a summary of its figures, the Markdown tables
(modes side by side; the affinity check), and a PNG plot."""

from __future__ import annotations

import sys
from pathlib import Path

from dg_lsp.bench.metrics import percentile


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
