"""Measurements beside the typing replay: encoder time after a one-character edit against a full
encode, whether batching requests pays on this device, and memory over a long soak.

The first two call the engine in-process (same model, same code the server runs); the soak
drives a real server.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from pathlib import Path

from dg_lsp.bench.typing.replay import TypingClient, _utf16_len
from dg_lsp.engine.dtype_auto import median_ms


def _median_ms(fn, reps: int) -> float:
    return median_ms(fn, reps, warm=False)


def encode_probe(engine, text: str, tokens: int = 2000, reps: int = 5) -> dict:
    """Full encode of a `tokens`-long prompt vs re-encoding it through the prefix cache after
    one character is typed at its end."""
    from dg_lsp.engine.prefix_cache import PrefixCache

    tok = engine.tokenizer
    ids = tok.encode(text, add_special_tokens=False)
    while len(ids) < tokens:
        ids = ids + ids
    head = tok.decode(ids[: tokens - 1])
    bos = [engine.bos_id] if engine.bos_id is not None else []

    def prompt(extra: str) -> list[int]:
        return bos + tok.encode(head + extra, add_special_tokens=False)

    full_prompt = prompt("")
    engine.runner.encode(full_prompt)  # warm-up: first calls pay one-off costs
    full_ms = _median_ms(lambda: engine.runner.encode(full_prompt), reps)
    cache = PrefixCache(engine.runner)
    cache.encode("probe", full_prompt)
    chars = iter("abcdefghijklmnopqrstuvwxyz" * 4)
    typed = next(chars)
    cache.encode("probe", prompt(typed))  # warm-up
    encoded, edit_times = [], []
    for _ in range(reps):
        typed += next(chars)
        edited = prompt(typed)
        t0 = time.perf_counter()
        out = cache.encode("probe", edited)
        edit_times.append((time.perf_counter() - t0) * 1000)
        encoded.append(out.encoded)
    edit_ms = statistics.median(edit_times)
    return {"prompt_tokens": len(full_prompt), "full_encode_ms": full_ms, "edit_reencode_ms": edit_ms,
            "edit_tokens_encoded": statistics.median(encoded), "speedup": full_ms / max(edit_ms, 1e-9)}


def batch_probe(engine, text: str, prompt_tokens: int = 512, batch: int = 4, reps: int = 5) -> dict:
    """One denoising step for one request vs for `batch` requests at once (same shapes): batching
    pays only if a batched step costs clearly less than `batch` single steps."""
    m = engine.measure_batch_step(rows=batch, reps=reps, prompt_tokens=prompt_tokens)
    return {"batch": batch, "step_ms_1": m["step_ms_1"], f"step_ms_{batch}": m[f"step_ms_{batch}"],
            "batched_vs_serial": m[f"step_ms_{batch}"] / (batch * m["step_ms_1"]),
            "two_rows": engine.batch_calibration}


def burst_probe(engine, text: str, n: int = 4, reps: int = 3, steps: int = 16) -> dict:
    """`n` documents asking at the same moment (say after a save or a paste): latency of each answer
    with the requests batched vs one after another. Rows run all `steps` (no early stop), so both
    sides do the same work."""
    from dg_lsp.engine.types import DenoiseParams, InfillRequest
    from dg_lsp.engine.worker import Job

    lines = [ln for ln in text.split("\n") if ln.strip()]
    cuts = [(("\n".join(lines[: 20 + 15 * i]) + "\n"), "\n".join(lines[20 + 15 * i: 30 + 15 * i])) for i in range(n)]

    def once(rows: int) -> list[float]:
        gate, held = threading.Event(), threading.Event()
        engine.worker.submit(Job(fn=lambda: (held.set(), gate.wait(30)), doc_key=None, cancel=threading.Event(),
                                 superseded=lambda: None))
        held.wait(30)
        params = DenoiseParams(max_steps=steps, confidence_threshold=0.0)
        t0 = time.perf_counter()
        futures = [engine.submit(InfillRequest(prefix=p, suffix=s, doc_key=f"burst{i}", params=params,
                                               batch_rows=rows, length_strategy="pad", reuse_prefix=False))
                   for i, (p, s) in enumerate(cuts)]
        gate.set()
        done = []
        for f in futures:
            f.result(timeout=300)
            done.append((time.perf_counter() - t0) * 1000)
        return done

    once(n), once(1)  # warm
    batched, serial = [], []
    for _ in range(reps):
        batched += once(n)
        serial += once(1)
    return {"documents": n, "steps": steps, "batched_mean_ms": statistics.mean(batched),
            "batched_max_ms": max(batched), "serial_mean_ms": statistics.mean(serial), "serial_max_ms": max(serial)}


def soak(client: TypingClient, files: list[Path], completions: int, seed: int, samples: int = 10) -> dict:
    """`completions` requests, each after a one-character edit at a random place of one of a few
    open documents; the server's resident memory sampled along the way."""
    rnd = random.Random(seed)
    docs = []
    for i, path in enumerate(files[:8]):
        text = path.read_text(encoding="utf-8", errors="replace")
        uri = f"file:///soak/{i}/{path.name}"
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                                "text": text}})
        docs.append([uri, text.split("\n"), 1])

    def rss() -> float:
        status = client.request("workspace/executeCommand", {"command": "dgLsp.status"})
        return status["process"]["rssMb"]

    trace = [(0, rss())]
    every = max(1, completions // samples)
    t0 = time.perf_counter()
    for n in range(1, completions + 1):
        doc = rnd.choice(docs)
        uri, lines = doc[0], doc[1]
        row = rnd.randrange(len(lines))
        col = rnd.randint(0, len(lines[row]))
        char = rnd.choice("abcdefghijklmnopqrstuvwxyz_.( ")
        units = _utf16_len(lines[row][:col])
        lines[row] = lines[row][:col] + char + lines[row][col:]
        doc[2] += 1
        pos = {"line": row, "character": units}
        client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": doc[2]},
                                                 "contentChanges": [{"range": {"start": pos, "end": pos},
                                                                     "text": char}]})
        client.request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": row, "character": units + 1},
            "context": {"triggerKind": 2}}, timeout=120)
        if n % every == 0:
            trace.append((n, rss()))
    wall = time.perf_counter() - t0
    warm = trace[1][1] if len(trace) > 2 else trace[0][1]
    return {"completions": completions, "seconds": wall, "rss_mb_start": trace[0][1], "rss_mb_end": trace[-1][1],
            "growth_mb": trace[-1][1] - trace[0][1], "growth_mb_after_first_sample": trace[-1][1] - warm,
            "trace": trace}
