"""The report of `dg-lsp bench gpu`: records as JSON, and one Markdown table per model size.

JSON (`gpu-bench.json`, `"schema": "dg-lsp-bench-gpu/1"`)::

    {"schema", "created", "command", "options": {...}, "environment": {torch, transformers, device, ...},
     "records": [{"scale", "compile": "-"|"off"|"fixed"|"on",
                  "kind": "build"|"prefill"|"warm-up"|"denoise"|"autoregressive"|"forward",
                  "canvas", "steps", "tokens",                     # where they apply
                  "ms",                                           # the timed part (median for prefill/forward)
                  "prefill_ms", "step_ms", "ms_per_token",          # denoise / autoregressive
                  "tokens_per_s", "e2e_ms", "e2e_tokens_per_s",     # e2e = prefill + generation
                  "peak_gb",                                      # CUDA max allocated during it; null on CPU
                  "params", "weights_gb", "dtype", "attention", "experts",   # build only
                  "error" | "skipped"}],
     "complete": bool}                                            # false while running or if cut short
"""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = "dg-lsp-bench-gpu/1"
MODE_NAMES = {"off": "eager (DynamicCache)", "fixed": "fixed shapes, eager", "on": "fixed shapes, compiled"}


def environment() -> dict:
    import torch
    import transformers

    env = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
           "cuda": torch.version.cuda, "cpu_count": __import__("os").cpu_count(), "gpu": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = {"name": props.name, "memory_gb": props.total_memory / 1e9,
                      "capability": list(torch.cuda.get_device_capability(0))}
    return env


def _f(value, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


class Report:
    def __init__(self, out_dir: str, options: dict, command: str):
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.json_path, self.md_path = self.out / "gpu-bench.json", self.out / "gpu-bench.md"
        self.data = {"schema": SCHEMA, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "command": command, "options": options, "environment": environment(), "records": [],
                     "complete": False}

    @property
    def records(self) -> list[dict]:
        return self.data["records"]

    def add(self, **record) -> None:
        self.records.append({k: v for k, v in record.items() if v is not None})
        self.write()

    def write(self) -> None:
        self.json_path.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")

    def finish(self) -> None:
        self.data["complete"] = True
        self.write()
        self.md_path.write_text(self.markdown() + "\n", encoding="utf-8")

    # -- Markdown ------------------------------------------------------------------------------
    def _find(self, scale, compile, kind, **keys) -> dict | None:
        for r in self.records:
            if r["scale"] == scale and r["compile"] == compile and r["kind"] == kind and \
                    all(r.get(k) == v for k, v in keys.items()):
                return r
        return None

    def _cell(self, r: dict | None, text) -> str:
        if r is None:
            return ""
        if "skipped" in r:
            return f"skipped ({r['skipped']})"
        if "error" in r:
            return "error (see JSON)"
        return text(r)

    def markdown(self) -> str:
        env = self.data["environment"]
        device = env["gpu"]["name"] if env.get("gpu") else "CPU"
        lines = [f"# dg-lsp bench gpu: {device}", ""]
        if not env.get("gpu"):
            lines += ["**CPU run: a plumbing check of the benchmark only; these are not speed figures.**", ""]
        lines += ["Random weights, fixed step counts (no early stop), sampling included; "
                  f"torch {env['torch']}, transformers {env['transformers']}.", ""]
        for scale in dict.fromkeys(r["scale"] for r in self.records):
            lines += self._scale_table(scale) + [""]
        errors = [r for r in self.records if "error" in r]
        if errors:
            lines += ["Errors:", ""] + [f"- {r['scale']}/{r['compile']}/{r['kind']}: {r['error']}" for r in errors]
        return "\n".join(lines).rstrip()

    def _scale_table(self, scale: str) -> list[str]:
        opts = self.data["options"]
        build = self._find(scale, "-", "build") or {}
        prefill = self._find(scale, "-", "prefill")
        head = [f"## {scale}"]
        if "params" in build:
            params = build["params"]
            size = f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.1f}M"
            head.append(f"{size} parameters ({build.get('dtype')}), built in "
                        f"{build['ms'] / 1000:.1f} s; weights {_f(build.get('weights_gb'), 2)} GB; "
                        f"attention {build.get('attention')}, experts {build.get('experts')}. "
                        f"Prompt {opts['prompt_tokens']} tokens, encoder prefill "
                        f"{self._cell(prefill, lambda r: _f(r['ms']) + ' ms')}.")
        modes = [m for m in opts["compile"] if any(r["scale"] == scale and r["compile"] == m for r in self.records)]
        if not modes:
            return head
        rows = [["measure"] + [MODE_NAMES[m] for m in modes], ["---"] * (len(modes) + 1)]
        canvas = opts["e2e_canvas"]

        def row(label, kind, text, **keys):
            rows.append([label] + [self._cell(self._find(scale, m, kind, **keys), text) for m in modes])

        for c in sorted(opts["canvases"]):
            row(f"one decoder forward, canvas {c} (ms)", "forward", lambda r: _f(r["ms"]), canvas=c)
        for s in opts["steps"]:
            row(f"prefill + {canvas}-token canvas, {s} steps: ms (tok/s)", "denoise",
                lambda r: f"{_f(r['e2e_ms'])} ({_f(r['e2e_tokens_per_s'])})", steps=s)
            row(f"  denoising only: ms (tok/s), ms/step", "denoise",
                lambda r: f"{_f(r['ms'])} ({_f(r['tokens_per_s'])}), {_f(r['step_ms'], 2)}", steps=s)
        row("autoregressive, same weights: ms/token (tok/s)", "autoregressive",
            lambda r: f"{_f(r['ms_per_token'], 2)} ({_f(r['tokens_per_s'])})")
        row(f"autoregressive, prefill + {canvas} tokens: ms (tok/s)", "autoregressive",
            lambda r: f"{_f(r['e2e_ms'])} ({_f(r['e2e_tokens_per_s'])})")
        for s in opts["steps"]:
            rows.append([f"diffusion / autoregressive tok/s, {s} steps (prefill incl.; excl.)"] +
                        [self._ratio(scale, m, s) for m in modes])
        if "on" in modes:
            rows.append(["compile + graph capture (s)"] +
                        [self._cell(self._find(scale, m, "warm-up"), lambda r: _f(r["ms"] / 1000)) or "-"
                         for m in modes])
        rows.append(["peak memory (GB)"] + [_f(self._peak(scale, m), 2) for m in modes])
        return head + [""] + ["| " + " | ".join(r) + " |" for r in rows]

    def _ratio(self, scale: str, mode: str, steps: int) -> str:
        d = self._find(scale, mode, "denoise", steps=steps)
        a = self._find(scale, mode, "autoregressive")
        if not d or not a or "e2e_tokens_per_s" not in d or "e2e_tokens_per_s" not in a:
            return "-"
        return f"{d['e2e_tokens_per_s'] / a['e2e_tokens_per_s']:.2f}x; {d['tokens_per_s'] / a['tokens_per_s']:.2f}x"

    def _peak(self, scale: str, mode: str) -> float | None:
        peaks = [r["peak_gb"] for r in self.records if r["scale"] == scale and r["compile"] == mode and "peak_gb" in r]
        return max(peaks) if peaks else None
