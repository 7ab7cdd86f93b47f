"""Replay typing through a real `dg-lsp serve` over stdio, as an editor does.

A `TypingScript` is made from a real file: a block of consecutive lines is blanked (their
indentation kept) and then typed back line by line, each line in one to three *bursts* cut at
word boundaries. Within a burst the characters arrive at seeded 30-80 ms intervals; each
keystroke sends `didChange`, cancels the previous inline-completion request if it is still open
(`$/cancelRequest`) and asks again (automatic trigger). After the burst's last keystroke the
typist waits for the suggestion finally shown (its latency is what the user feels), reads it
for a moment, and types on: where the next characters are the start of the shown suggestion,
the server can serve the rest of it at once.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from dg_lsp.bench.lsp_client import LspClient, LspError
from dg_lsp.context.languages import language_for_path

AUTOMATIC = 2  # InlineCompletionTriggerKind.Automatic


@dataclass
class Burst:
    line: int  # 0-based line typed
    column: int  # code-point column where typing starts (after the indentation)
    text: str  # the characters typed
    intervals: list[float]  # seconds before each keystroke
    pause: float  # seconds spent reading the suggestion afterwards


@dataclass
class TypingScript:
    uri: str
    language_id: str
    initial_text: str
    bursts: list[Burst]

    @property
    def keystrokes(self) -> int:
        return sum(len(b.text) for b in self.bursts)


def make_script(path: Path, rnd: random.Random, bursts: int, max_chars: int = 40,
                interval_ms: tuple[float, float] = (30.0, 80.0), pause_ms: tuple[float, float] = (300.0, 700.0),
                uri: str | None = None) -> TypingScript | None:
    """Blank `bursts` non-blank lines of a block of `path` and script typing them back (None if too short)."""
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    typed_lines = [i for i, line in enumerate(lines) if len(line.strip()) >= 4]
    if len(typed_lines) < bursts + 2:
        return None
    start = rnd.randrange(1, len(typed_lines) - bursts)
    chosen = typed_lines[start:start + bursts]
    out, script = list(lines), []
    for i in chosen:
        line = lines[i]
        indent = len(line) - len(line.lstrip(" \t"))
        text = line[indent:][:max_chars]
        out[i] = line[:indent] + line[indent + len(text):]
        start = 0
        for cut in _cuts(text, rnd) + [len(text)]:
            chunk = text[start:cut]
            intervals = [rnd.uniform(*interval_ms) / 1000 for _ in chunk]
            script.append(Burst(i, indent + start, chunk, intervals, rnd.uniform(*pause_ms) / 1000))
            start = cut
    return TypingScript(uri or path.resolve().as_uri(), language_for_path(path.name) or "plaintext", "\n".join(out),
                        script)


def _cuts(text: str, rnd: random.Random) -> list[int]:
    """Up to two places inside `text` where the typist pauses: right after a space or a bracket."""
    spots = [k + 1 for k, ch in enumerate(text[:-1]) if ch in " ([{,." and k + 1 >= 3]
    return sorted(rnd.sample(spots, min(len(spots), rnd.randint(0, 2))))


class TypingClient(LspClient):
    """LspClient with requests that do not block, answer times, and cancellation."""

    def start_request(self, method: str, params) -> tuple[int, Future]:
        request_id = next(self._ids)
        future: Future = Future()
        future.sent_at = time.perf_counter()  # type: ignore[attr-defined]
        future.add_done_callback(lambda f: setattr(f, "answered_at", time.perf_counter()))
        self._pending[request_id] = future
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future

    def cancel(self, request_id: int) -> None:
        self.notify("$/cancelRequest", {"id": request_id})


@dataclass
class RequestLog:
    sent: int = 0
    with_items: int = 0
    empty: int = 0
    cancelled: int = 0
    errors: int = 0
    final_latency_ms: list[float] = field(default_factory=list)
    final_nonempty: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def classify(self, future: Future) -> None:
        with self.lock:
            try:
                result = future.result()
            except LspError as exc:
                if str(exc).startswith("-32800"):
                    self.cancelled += 1
                else:
                    self.errors += 1
                return
            except Exception:  # noqa: BLE001 - a dead server shows up in the counts
                self.errors += 1
                return
            items = (result or {}).get("items", []) if isinstance(result, dict) else (result or [])
            if items and items[0].get("insertText"):
                self.with_items += 1
            else:
                self.empty += 1


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


class Typist:
    def __init__(self, client: TypingClient, script: TypingScript, log: RequestLog, timeout_s: float = 120.0):
        self.client, self.script, self.log, self.timeout_s = client, script, log, timeout_s
        self.lines = script.initial_text.split("\n")
        self.version = 1

    def open(self) -> None:
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.script.uri, "languageId": self.script.language_id, "version": 1,
            "text": self.script.initial_text}})

    def close(self) -> None:
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.script.uri}})

    def _keystroke(self, line: int, column: int, char: str) -> tuple[int, Future]:
        current = self.lines[line]
        units = _utf16_len(current[:column])
        self.lines[line] = current[:column] + char + current[column:]
        self.version += 1
        pos = {"line": line, "character": units}
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.script.uri, "version": self.version},
            "contentChanges": [{"range": {"start": pos, "end": pos}, "text": char}]})
        after = {"line": line, "character": units + _utf16_len(char)}
        return self.client.start_request("textDocument/inlineCompletion", {
            "textDocument": {"uri": self.script.uri}, "position": after, "context": {"triggerKind": AUTOMATIC}})

    def run(self) -> None:
        for burst in self.script.bursts:
            pending: tuple[int, Future] | None = None
            due = time.perf_counter()
            for k, char in enumerate(burst.text):
                due += burst.intervals[k]
                time.sleep(max(0.0, due - time.perf_counter()))
                if pending is not None and not pending[1].done():
                    self.client.cancel(pending[0])
                request = self._keystroke(burst.line, burst.column + k, char)
                request[1].add_done_callback(self.log.classify)
                with self.log.lock:
                    self.log.sent += 1
                pending = request
            if pending is None:
                continue
            final = pending[1]
            try:
                result = final.result(timeout=self.timeout_s)
            except Exception:  # noqa: BLE001 - counted by classify
                result = None
            latency = (getattr(final, "answered_at", time.perf_counter()) - final.sent_at) * 1000
            items = (result or {}).get("items", []) if isinstance(result, dict) else []
            with self.log.lock:
                self.log.final_latency_ms.append(latency)
                self.log.final_nonempty += int(bool(items and items[0].get("insertText")))
            time.sleep(burst.pause)


def type_all(client: TypingClient, scripts: list[TypingScript], log: RequestLog) -> float:
    """Type every script at once (one thread per document); returns the wall seconds taken."""
    typists = [Typist(client, s, log) for s in scripts]
    for t in typists:
        t.open()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=t.run, name=f"typist-{i}") for i, t in enumerate(typists)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    for t in typists:
        t.close()
    return wall
