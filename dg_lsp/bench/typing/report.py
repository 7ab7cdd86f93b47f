"""The typing benchmark's tables: one column per (documents, mode) run, ratios on / each other mode."""

from __future__ import annotations

ROWS = [  # (label, key, format)
    ("final suggestion p50 (ms)", "final_p50_ms", "{:.0f}"),
    ("final suggestion p95 (ms)", "final_p95_ms", "{:.0f}"),
    ("suggestions shown (bursts)", "shown", "{:.0f}"),
    ("requests (keystrokes)", "keystrokes", "{:.0f}"),
    ("answered by a computation", "computed_share", "{:.1%}"),
    ("superseded or cancelled", "superseded_share", "{:.1%}"),
    ("served from the cache (hit rate)", "cache_hit_rate", "{:.1%}"),
    ("CPU s per shown suggestion", "cpu_s_per_shown", "{:.2f}"),
    ("computations started", "computations", "{:.0f}"),
    ("  stopped early (superseded)", "computations_stopped", "{:.0f}"),
    ("denoising steps per computation", "steps_per_job", "{:.1f}"),
    ("  step budget (deadline) hit", "deadline_hits", "{:.0f}"),
    ("prompt tokens from prefix cache", "prefix_reused_share", "{:.1%}"),
    ("encode ms per computation", "encode_ms_per_job", "{:.1f}"),
    ("computations sharing forwards across documents", "batched_share", "{:.1%}"),
    ("  rows per batched decoder forward", "rows_per_forward", "{:.2f}"),
    ("non-empty final suggestions", "final_nonempty", "{:.0%}"),
]


def _cell(fmt: str, value) -> str:
    return "-" if value is None else fmt.format(value)


def _ratio(on, off) -> str:
    if on is None or off is None or not off:
        return "-"
    return f"{on / off:.2f}x"


def table(runs: list[dict], docs: tuple[int, ...], modes: tuple[str, ...]) -> str:
    by = {(r["docs"], r["mode"]): r for r in runs}
    head = ["figure"]
    others = [m for m in modes if m != "on"] if "on" in modes else []
    for n in docs:
        head += [f"{n} doc{'s' if n > 1 else ''} {m}" for m in modes]
        head += [f"on/{m}" for m in others]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, key, fmt in ROWS:
        cells = [label]
        for n in docs:
            values = {m: by.get((n, m), {}).get(key) for m in modes}
            cells += [_cell(fmt, values[m]) for m in modes]
            cells += [_ratio(values["on"], values[m]) for m in others]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _burst_lines(u: dict | None) -> list[str]:
    if not u:
        return []
    n = u["documents"]
    return ["", f"| {n} documents asking at once ({u['steps']} steps each) | batched | one after another "
                f"| batched / serial |", "|---|---|---|---|",
            f"| mean latency (ms) | {u['batched_mean_ms']:.0f} | {u['serial_mean_ms']:.0f} "
            f"| {_ratio(u['batched_mean_ms'], u['serial_mean_ms'])} |",
            f"| slowest (ms) | {u['batched_max_ms']:.0f} | {u['serial_max_ms']:.0f} "
            f"| {_ratio(u['batched_max_ms'], u['serial_max_ms'])} |"]


def probe_table(p: dict) -> str:
    e, b = p["encode"], p["batch"]
    n = b["batch"]
    return "\n".join([
        "| encoder, prompt of {} tokens | on (prefix cache) | off | on/off |".format(e["prompt_tokens"]),
        "|---|---|---|---|",
        f"| re-encode after a one-character edit (ms) | {e['edit_reencode_ms']:.1f} "
        f"({e['edit_tokens_encoded']:.0f} tokens encoded) | {e['full_encode_ms']:.1f} (full encode) "
        f"| {e['edit_reencode_ms'] / max(e['full_encode_ms'], 1e-9):.3f}x |",
        "",
        f"| one denoising step | 1 request | {n} requests batched | batched / {n} serial |",
        "|---|---|---|---|",
        f"| ms | {b['step_ms_1']:.1f} | {b[f'step_ms_{n}']:.1f} | {b['batched_vs_serial']:.2f}x |",
        *_burst_lines(p.get("burst")),
        *([""] if b.get("two_rows") else []),
        *([f"warm-up calibration: a 2-row forward costs {b['two_rows']['cost_in_single_forwards']:.2f} 1-row "
           f"forwards, so automatic batching is {'on' if b['two_rows']['batch_pays'] else 'off'}"]
          if b.get("two_rows") else []),
    ])


def soak_line(s: dict) -> str:
    return (f"soak: {s['completions']} completions in {s['seconds']:.0f} s; server RSS {s['rss_mb_start']:.0f} -> "
            f"{s['rss_mb_end']:.0f} MB (growth {s['growth_mb']:+.1f} MB, "
            f"{s['growth_mb_after_first_sample']:+.1f} MB after the first sample)")
