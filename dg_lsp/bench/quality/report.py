"""The benchmark report: rows grouped by configuration, kind and language; JSON, Markdown, compare.

JSON schema (`--out FILE.json`, `"schema": "dg-lsp-bench/1"`)::

    {
      "schema": "dg-lsp-bench/1",
      "created": "2025-01-01T12:00:00+00:00",       # UTC, ISO 8601
      "command": "dg-lsp bench humaneval --split single-line --n 300 ...",
      "source": {"type": "repo" | "heldout" | "humaneval" | "tasks", "path": str (roots joined by ", "), "split": str | null,
                 "n_tasks": int, "seed": int},
      "model": str | null, "device": str | null, "dtype": str | null,
      "packing": {"asked": str, "chosen": "all" | "off", "reason": str, ...} | null,  # the engine's prepacked weights (gemma3/packed.py)
      "configs": [{                                  # one per (mode, via, --steps value)
          "label": "diffusion/engine s=16",
          "mode": "diffusion" | "ar" | "ar-restricted" | "nosuffix" | "empty", "via": "engine" | "lsp" | "none",
          "max_steps": int | null,                   # null for ar and empty
          "temperature": float, "entropy_bound": float, "length_strategy": str,
          "hole_lengths": [int] | null, "canvas": int | null,  # null via lsp (the server's own)
          "max_new_tokens": int,
          "server_settings": {...},                  # via lsp only: the dgLsp settings sent
          "peak_memory_mb": float | null,            # see peak_memory_kind
          "peak_memory_kind": "cuda_max_allocated" | "process_max_rss" | "server_max_rss" | null,
          "wall_s": float                            # generation wall time, tests excluded
      }],
      "rows": [{                                     # per config x kind x language, plus
          "label": str, "mode": str, "via": str,     #   kind = language = "all" per config
          "max_steps": int | null,                   #   when it has several groups
          "kind": "line-rest" | "single-line" | "multi-line" | "body" | "random-span" | "all",
          "language": str,
          "n": int,
          "exact_match": float,                      # fractions in 0..1
          "edit_similarity": float,
          "pass_at_1": float | null,                 # null where tasks have no tests
          "syntax_valid": float | null,              # null without a grammar
          "show_rate": float | null,                 # share of requests that got a (non-empty) suggestion
          "items": float | null,                     # mean items of a shown answer (the answer and its others)
          "exact_in_items": float | null,            # share where the answer or one of its other items is exact
          "shown_syntax_clean": float | null,        # share of the shown suggestions that are syntax valid
          "errors": int,                             # failed requests (scored as empty)
          "latency_ms": {"p50", "p95", "max", "mean",   # floats | null; wall time per completion
                         "encode_p50", "denoise_p50",   #   engine phases (via engine only)
                         "engine_p50"},                 #   engine total (via lsp: from dgLsp.status)
          "steps": float | null,                     # mean denoising steps (ar: tokens decoded)
          "tokens_per_forward": float | null,
          "generated_tokens": float | null,          # mean per completion
          "tokens_per_s": float | null,              # generated tokens / latency, summed
          "peak_memory_mb": float | null             # the config's, repeated per row
      }],
      "samples": [{"label", "task_id", "kind", "language", "completion", "exact_match",
                   "edit_similarity", "syntax_valid", "shown", "items", "exact_in_items", "passed",
                   "exec_status", "latency_ms",
                   "encode_ms", "denoise_ms", "engine_ms", "steps", "tokens_per_forward",
                   "generated_tokens", "error"}]
    }

Metric definitions are in `metrics.py`; pass@1 is one greedy (or seeded) sample per task.
Fields are only ever added within one schema version.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

from dg_lsp.bench.metrics import summarize

SCHEMA = "dg-lsp-bench/1"
CONFIG_KEYS = ("label", "mode", "via", "max_steps")


def build_rows(configs: list[dict], samples: list[dict]) -> list[dict]:
    by_label: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_label[s["label"]].append(s)
    rows = []
    for config in configs:
        mine = by_label.get(config["label"], [])
        groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
        for s in mine:
            groups[(s["kind"], s["language"])].append(s)
        keyed = sorted(groups.items())
        if len(keyed) > 1:
            keyed.append((("all", "all"), mine))
        for (kind, language), group in keyed:
            row = {k: config.get(k) for k in CONFIG_KEYS}
            row.update(kind=kind, language=language, **summarize(group))
            row["peak_memory_mb"] = config.get("peak_memory_mb")
            rows.append(row)
    return rows


def write_json(report: dict, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def load_json(path: str | Path) -> dict:
    report = json.loads(Path(path).read_text(encoding="utf-8"))
    if report.get("schema") != SCHEMA:
        raise ValueError(f"{path}: not a {SCHEMA} report (schema={report.get('schema')!r})")
    return report


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _num(x, digits: int = 0) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def markdown_table(rows: list[dict]) -> str:
    head = ["mode", "via", "steps", "kind", "lang", "n", "EM %", "ES %", "pass@1 %", "syntax %",
            "shown %", "shown clean %", "p50 ms", "p95 ms", "max ms", "engine (enc/den) p50 ms", "steps used", "tok/fwd", "tok/s", "peak MB"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lat = r["latency_ms"]
        split = _num(lat.get("engine_p50"))
        if lat["encode_p50"] is not None:
            split += f" ({lat['encode_p50']:.0f}/{_num(lat['denoise_p50'])})"
        cells = [r["mode"], r["via"], _num(r["max_steps"]), r["kind"], r["language"], str(r["n"]),
                 _pct(r["exact_match"]), _pct(r["edit_similarity"]), _pct(r["pass_at_1"]), _pct(r["syntax_valid"]),
                 _pct(r.get("show_rate")), _pct(r.get("shown_syntax_clean")),
                 _num(lat["p50"]), _num(lat["p95"]), _num(lat["max"]), split, _num(r["steps"], 1),
                 _num(r["tokens_per_forward"], 2), _num(r["tokens_per_s"], 1), _num(r.get("peak_memory_mb"))]
        lines.append("| " + " | ".join(cells) + " |")
    for r in rows:  # where the editor got more than one item (an explicit request's others, --via lsp)
        if r.get("items") and r["items"] > 1:
            lines.append(f"\n{r['mode']}/{r['via']} {r['kind']} {r['language']}: {r['items']:.2f} items a shown "
                         f"answer; EM of any item {_pct(r.get('exact_in_items'))}% "
                         f"(the first: {_pct(r['exact_match'])}%)")
    return "\n".join(lines)


COMPARED = (("exact_match", "EM %", _pct), ("edit_similarity", "ES %", _pct), ("pass_at_1", "pass@1 %", _pct),
            ("syntax_valid", "syntax %", _pct), ("show_rate", "shown %", _pct),
            ("shown_syntax_clean", "shown clean %", _pct), ("latency_ms.p50", "p50 ms", _num), ("latency_ms.p95", "p95 ms", _num),
            ("tokens_per_forward", "tok/fwd", lambda x: _num(x, 2)))


def _get(row: dict, dotted: str):
    value = row
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _row_key(row: dict, with_steps: bool = True) -> tuple:
    key = (row["mode"], row["via"], row["kind"], row["language"])
    return key + (row["max_steps"],) if with_steps else key


def match_rows(a: list[dict], b: list[dict]) -> list[tuple[dict, dict]]:
    """Pairs of rows describing the same thing: same mode, via, kind, language, and steps when
    both sides have them (falls back to ignoring steps when that pairs rows one to one)."""
    exact = {_row_key(r): r for r in b}
    loose: dict[tuple, list[dict]] = defaultdict(list)
    for r in b:
        loose[_row_key(r, False)].append(r)
    pairs = []
    for r in a:
        other = exact.get(_row_key(r))
        if other is None and len(loose[_row_key(r, False)]) == 1:
            other = loose[_row_key(r, False)][0]
        if other is not None:
            pairs.append((r, other))
    return pairs


def compare_table(a: dict, b: dict) -> str:
    """Markdown: per matched row, each metric as `A -> B (delta)`; fractions in percentage points."""
    head = ["mode", "via", "steps", "kind", "lang", "n"] + [title for _, title, _ in COMPARED]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ra, rb in match_rows(a["rows"], b["rows"]):
        steps = _num(ra["max_steps"]) if ra["max_steps"] == rb["max_steps"] else \
            f"{_num(ra['max_steps'])}->{_num(rb['max_steps'])}"
        cells = [ra["mode"], ra["via"], steps, ra["kind"], ra["language"], f"{ra['n']}/{rb['n']}"]
        for field, _, fmt in COMPARED:
            va, vb = _get(ra, field), _get(rb, field)
            if va is None or vb is None:
                cells.append(f"{fmt(va)} -> {fmt(vb)}")
                continue
            scale = 100 if fmt is _pct else 1
            cells.append(f"{fmt(va)} -> {fmt(vb)} ({(vb - va) * scale:+.{2 if field == 'tokens_per_forward' else 1}f})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test on the discordant pairs: the chance, under "A and B are equally good",
    of a split at least this uneven. 1.0 when there are none."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def _config_pairs(a: dict, b: dict) -> list[tuple[str, str]]:
    """Labels of the configurations two reports share: the same label, else the same mode when each
    report has one configuration of it (a rerun with other settings is still that mode)."""
    la = [c["label"] for c in a["configs"]]
    lb = [c["label"] for c in b["configs"]]
    pairs = [(x, x) for x in la if x in lb]
    taken_a, taken_b = {p[0] for p in pairs}, {p[1] for p in pairs}
    mode_a = defaultdict(list)
    mode_b = defaultdict(list)
    for c in a["configs"]:
        if c["label"] not in taken_a:
            mode_a[c["mode"]].append(c["label"])
    for c in b["configs"]:
        if c["label"] not in taken_b:
            mode_b[c["mode"]].append(c["label"])
    for mode, labels in mode_a.items():
        if len(labels) == 1 and len(mode_b.get(mode, [])) == 1:
            pairs.append((labels[0], mode_b[mode][0]))
    return pairs


def paired_table(a: dict, b: dict) -> str:
    """Markdown: per shared configuration, the tasks both reports ran, compared task by task. "A only"
    counts tasks that pass (or match exactly) in A and not in B; p is the two-sided sign test on those
    discordant tasks. "differ" counts tasks whose completions are not the same text."""
    head = ["A", "B", "tasks", "differ", "pass A only", "pass B only", "p (pass)", "EM A only", "EM B only",
            "p (EM)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label_a, label_b in _config_pairs(a, b):
        sa = {s["task_id"]: s for s in a["samples"] if s["label"] == label_a}
        sb = {s["task_id"]: s for s in b["samples"] if s["label"] == label_b}
        common = [t for t in sa if t in sb]
        differ = sum(sa[t].get("completion") != sb[t].get("completion") for t in common)
        cells = [label_a, label_b, str(len(common)), str(differ)]
        for field in ("passed", "exact_match"):
            both = [t for t in common if sa[t].get(field) is not None and sb[t].get(field) is not None]
            if not both:
                cells += ["-", "-", "-"]
                continue
            a_only = sum(bool(sa[t][field]) and not sb[t][field] for t in both)
            b_only = sum(bool(sb[t][field]) and not sa[t][field] for t in both)
            cells += [str(a_only), str(b_only), f"{sign_test_p(a_only, b_only):.3g}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
