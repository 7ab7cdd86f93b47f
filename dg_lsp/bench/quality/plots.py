"""PNG plots beside the JSON report: the latency CDF per configuration, and quality against steps."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never a window
    import matplotlib.pyplot as plt

    return plt


def latency_cdf(samples: list[dict], path: Path) -> Path | None:
    by_label: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        if s.get("latency_ms") and not s.get("error"):
            by_label[s["label"]].append(s["latency_ms"])
    if not by_label:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values in sorted(by_label.items()):
        xs = sorted(values)
        ax.step(xs, [(i + 1) / len(xs) for i in range(len(xs))], where="post", label=f"{label} (n={len(xs)})")
    ax.set_xscale("log")
    ax.set_xlabel("latency per completion (ms, log scale)")
    ax.set_ylabel("fraction of completions")
    ax.set_ylim(0, 1.01)
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, ax, "Latency CDF", path)


def _overall(rows: list[dict], label: str) -> dict | None:
    mine = [r for r in rows if r["label"] == label]
    overall = [r for r in mine if r["kind"] == "all"]
    return (overall or mine or [None])[0]


def quality_vs_steps(rows: list[dict], configs: list[dict], path: Path) -> Path | None:
    """EM, ES and pass@1 of each diffusion configuration against its step budget; baselines as lines."""
    diffusion = sorted((c for c in configs if c["mode"] == "diffusion" and c["max_steps"]),
                       key=lambda c: (c["via"], c["max_steps"]))
    if len({c["max_steps"] for c in diffusion}) < 2:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    metrics = [("exact_match", "EM", "C0"), ("edit_similarity", "ES", "C1"), ("pass_at_1", "pass@1", "C2")]
    for via, style in zip(sorted({c["via"] for c in diffusion}), ("-", ":")):
        mine = [c for c in diffusion if c["via"] == via]
        for field, name, color in metrics:
            points = [(c["max_steps"], _overall(rows, c["label"])) for c in mine]
            points = [(x, r[field]) for x, r in points if r and r.get(field) is not None]
            if points:
                ax.plot([p[0] for p in points], [100 * p[1] for p in points], style, marker="o", color=color,
                        label=f"{name} diffusion ({via})")
    baselines = [c for c in configs if c["mode"] != "diffusion"]
    for c, style in zip(baselines, ("--", "-.", (0, (1, 3)))):
        row = _overall(rows, c["label"])
        for field, name, color in metrics:
            if row and row.get(field) is not None:
                ax.axhline(100 * row[field], linestyle=style, color=color, linewidth=1, alpha=0.8,
                           label=f"{name} {c['mode']}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("max denoising steps")
    ax.set_ylabel("%")
    ax.grid(True, alpha=0.3)
    return _save(fig, ax, "Quality against steps", path)


def write_plots(report: dict, json_path: str | Path) -> list[Path]:
    """Plots named after the JSON file (`x.json` -> `x.latency_cdf.png`, `x.quality_vs_steps.png`)."""
    base = Path(json_path)
    stem = base.with_suffix("")
    written = [latency_cdf(report["samples"], Path(f"{stem}.latency_cdf.png")),
               quality_vs_steps(report["rows"], report["configs"], Path(f"{stem}.quality_vs_steps.png"))]
    return [p for p in written if p is not None]


def _save(fig, ax, title: str, path):
    """Legend, title, layout, write the PNG and free the figure."""
    plt = _pyplot()
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
