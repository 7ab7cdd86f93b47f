"""`--via lsp`: start `dg-lsp serve` and ask it for inline completions as an editor does.

Per task: `textDocument/didOpen` with the file minus its hole, `textDocument/inlineCompletion`
(LSP 3.18, invoked trigger) at the hole, `textDocument/didClose`. Latency is the wall time of
the request, so it includes the protocol, context extraction and post-processing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from dg_lsp.bench.lsp_client import LspClient
from dg_lsp.bench.quality.runners import RunSettings, TaskEdit
from dg_lsp.bench.quality.tasks import Task

EXTENSION = {"python": ".py", "javascript": ".js", "typescript": ".ts", "tsx": ".tsx", "go": ".go",
             "rust": ".rs", "java": ".java", "c": ".c", "cpp": ".cpp"}
INVOKED = 1  # InlineCompletionTriggerKind.Invoked


def server_settings(s: RunSettings, extra: dict | None = None) -> dict:
    """initializationOptions (section `dgLsp`, camelCase) for one configuration.

    The server has no setting for hole lengths or canvas size: with `--via lsp` those knobs
    are the server's own; `extra` (`--lsp-setting KEY=VALUE`) passes any other setting through.
    """
    settings = {"maxSteps": s.steps, "temperature": s.temperature, "entropyBound": s.entropy_bound,
                "lengthStrategy": s.length_strategy, "seed": s.seed, "prefixTokens": s.max_prompt_tokens,
                "verifyWeight": s.verify_weight, "alternatives": s.alternatives,
                "startSlots": s.start_slots}
    settings.update(extra or {})
    return settings


def utf16_position(text: str, offset: int) -> dict:
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": len(text[line_start:offset].encode("utf-16-le")) // 2}


def offset_of(text: str, position: dict) -> int:
    """Character offset of an LSP position (UTF-16 units) in `text`; clamped to the line."""
    lines = text.split("\n")
    row = min(max(0, position["line"]), len(lines) - 1)
    start = sum(len(line) + 1 for line in lines[:row])
    units, col = position["character"], 0
    for ch in lines[row]:
        if units <= 0:
            break
        units -= 2 if ord(ch) > 0xFFFF else 1
        col += 1
    return start + col


def all_items(result) -> list[dict]:
    return list(result.get("items", []) if isinstance(result, dict) else (result or []))


def first_item(result) -> dict | None:
    items = all_items(result)
    return items[0] if items else None


class LspRunner:
    mode, via = "diffusion", "lsp"

    def __init__(self, model: str | None, settings: RunSettings, device: str = "auto", dtype: str = "auto",
                 timeout_s: float = 300.0, extra_settings: dict | None = None):
        argv = [sys.executable, "-m", "dg_lsp", "serve", "--device", device, "--dtype", dtype]
        if model:
            argv += ["--model", model]
        self.timeout_s = timeout_s
        self._log = tempfile.NamedTemporaryFile(prefix="dg-lsp-bench-server-", suffix=".log", delete=False)
        self.settings = server_settings(settings, extra_settings)
        self.client = LspClient(argv, settings=self.settings, stderr=self._log)
        self.root = Path(tempfile.gettempdir()) / "dg-lsp-bench"
        self._count = 0
        try:
            self._initialize()
            self._wait_ready()
        except BaseException:
            self.close()
            raise

    def _status(self) -> dict:
        return self.client.request("workspace/executeCommand", {"command": "dgLsp.status", "arguments": []},
                                   timeout=30) or {}

    def _wait_ready(self) -> None:
        """Block until the server's model is loaded, so no request's latency includes the load."""
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            status = self._status()
            if status.get("state") == "ready":
                return
            if status.get("state") == "error" or self.client.proc.poll() is not None:
                raise RuntimeError(f"dg-lsp serve could not load the model: {status.get('error')}\n"
                                   f"{self.server_log_tail()}")
            time.sleep(0.1)
        raise RuntimeError(f"dg-lsp serve was not ready after {self.timeout_s:g} s")

    def _initialize(self) -> None:
        self.client.request("initialize", {
            "processId": os.getpid(),
            "rootUri": self.root.as_uri(),
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "textDocument": {"inlineCompletion": {"dynamicRegistration": False},
                                 "synchronization": {"dynamicRegistration": False}},
                "workspace": {"configuration": True},
                "window": {"workDoneProgress": True},
            },
            "initializationOptions": self.settings,
        }, timeout=self.timeout_s)
        self.client.notify("initialized", {})

    def _uri(self, task: Task) -> str:
        self._count += 1
        name = Path(task.path).name if task.path else f"task{EXTENSION.get(task.language, '.txt')}"
        return (self.root / str(self._count) / name).as_uri()

    def complete(self, task: Task) -> TaskEdit:
        doc = task.prefix + task.suffix
        uri = self._uri(task)
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": task.language, "version": 1, "text": doc}})
        params = {"textDocument": {"uri": uri}, "position": utf16_position(doc, len(task.prefix)),
                  "context": {"triggerKind": INVOKED}}
        t0 = time.perf_counter()
        try:
            result = self.client.request("textDocument/inlineCompletion", params, timeout=self.timeout_s)
            error = None
        except Exception as exc:  # noqa: BLE001 - a failed request is a failed sample, not a failed run
            result, error = None, f"{type(exc).__name__}: {exc}"
        latency = (time.perf_counter() - t0) * 1000.0
        completion = self._to_completion(task, doc, first_item(result), latency, error)
        # the other items an editor cycles through (an explicit request's; CompletionService._others)
        completion.others = tuple(self._to_completion(task, doc, item, latency, None)
                                  for item in all_items(result)[1:] if isinstance(item, dict))
        try:
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
            engine_ms = self._status().get("lastLatencyMs")
            if engine_ms is not None and first_item(result) is not None:
                completion.timings_ms["engine"] = float(engine_ms)  # the engine's share of this request
        except Exception:  # noqa: BLE001 - the split is a courtesy; the latency stands without it
            pass
        return completion

    @staticmethod
    def _to_completion(task: Task, doc: str, item: dict | None, latency: float, error: str | None) -> TaskEdit:
        hole = len(task.prefix)
        if item is None:
            return TaskEdit("", hole, hole, latency, error=error)
        text = item.get("insertText", "")
        if isinstance(text, dict):  # StringValue (snippet): plain text is all a benchmark can score
            text = text.get("value", "")
        start = end = hole
        if item.get("range"):
            start, end = offset_of(doc, item["range"]["start"]), offset_of(doc, item["range"]["end"])
        return TaskEdit(text, start, end, latency)

    def peak_memory(self) -> dict:
        return {"mb": self.client.peak_rss_mb(), "kind": "server_max_rss"}

    def server_log_tail(self, chars: int = 2000) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(encoding="utf-8", errors="replace")[-chars:]

    def close(self) -> None:
        self.client.close()
        if not self._log.closed:
            self._log.close()
            os.unlink(self._log.name)
