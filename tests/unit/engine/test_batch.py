"""Cross-document batching: several documents' pad-fill requests share each decoder forward and each
row gets what it would have got alone."""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

from dg_lsp.engine.loader import LoadedModel
from dg_lsp.engine.prefix_cache import PrefixCache
from dg_lsp.engine.runner import ModelRunner
from dg_lsp.engine.spec import InfillSpec
from dg_lsp.engine.types import DenoiseParams, InfillRequest
from dg_lsp.engine.worker import Job, Worker

PREFIXES = [
    "def add(a, b):\n    return ",
    "import os\n\n\ndef walk(root):\n    for name in os.listdir(root):\n        ",
    "x = [",
]
SUFFIXES = ["\n", "\n    return None\n", "]\nprint(x)\n"]


def _requests(seed_base: int, temperature: float, **kw) -> list[InfillRequest]:
    return [InfillRequest(prefix=p, suffix=s, doc_key=f"doc{i}", length_strategy="pad", reuse_prefix=False,
                          params=DenoiseParams(max_steps=6, temperature=temperature, seed=seed_base + i), **kw)
            for i, (p, s) in enumerate(zip(PREFIXES, SUFFIXES))]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_each_batch_row_equals_its_solo_run(tiny_engine, temperature):
    solo = [tiny_engine.run_infill(r) for r in _requests(10, temperature)]
    batched = tiny_engine.run_infill_batch(_requests(10, temperature))
    assert len({r.prompt_tokens for r in batched}) == 3  # rows really have different prompt lengths
    for a, b in zip(solo, batched):
        assert b.batch_rows == 3 and not b.cancelled
        assert b.text == a.text and b.steps == a.steps
        assert b.score == pytest.approx(a.score, abs=1e-4)
    # and the rows are not all the same canvas: a different seed for one row changes only that row
    other = _requests(10, temperature)
    other[1] = dataclasses.replace(other[1], params=dataclasses.replace(other[1].params, seed=999))
    if temperature > 0:
        changed = tiny_engine.run_infill_batch(other)
        assert changed[0].text == batched[0].text and changed[2].text == batched[2].text


def test_a_cancelled_row_stops_alone(tiny_engine):
    reqs = _requests(0, 0.2)
    reqs[1].cancel.set()
    out = tiny_engine.run_infill_batch(reqs)
    assert out[1].cancelled and out[1].text == ""
    solo = tiny_engine.run_infill(_requests(0, 0.2)[0])
    assert not out[0].cancelled and out[0].text == solo.text


def test_submitted_requests_of_different_documents_run_as_one_batch(tiny_engine):
    gate, started = threading.Event(), threading.Event()
    blocker = tiny_engine.worker.submit(Job(fn=lambda: (started.set(), gate.wait(10)), doc_key="blocker",
                                            cancel=threading.Event(), superseded=lambda: None))
    started.wait(10)
    before = dict(tiny_engine.stats)
    futures = [tiny_engine.submit(r) for r in _requests(0, 0.2, batch_rows=4)]
    gate.set()
    blocker.result(timeout=30)
    results = [f.result(timeout=60) for f in futures]
    assert [r.batch_rows for r in results] == [3, 3, 3]
    assert tiny_engine.stats["batches"] == before["batches"] + 1
    assert tiny_engine.stats["batchedJobs"] == before["batchedJobs"] + 3
    # batch_rows=1 (the library default) keeps requests apart
    futures = [tiny_engine.submit(r) for r in _requests(0, 0.2)]
    assert [f.result(timeout=60).batch_rows for f in futures] == [1, 1, 1]


def test_merged_caches_give_each_rows_own_logits():
    """Prompts longer than the sliding window (trimmed sliding layers) and of different lengths."""
    from transformers import DiffusionGemmaForBlockDiffusion

    from dg_lsp.engine.canvas import pad_fill_canvas, stack_rows
    from dg_lsp.engine.modelgen import make_config

    torch.manual_seed(0)
    model = DiffusionGemmaForBlockDiffusion(make_config(97, num_layers=3, canvas_length=8, sliding_window=8)).eval()
    runner = ModelRunner(LoadedModel(model, None, InfillSpec(), "<memory>", "cpu", "float32"))
    gen = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 97, (n,), generator=gen).tolist() for n in (5, 23, 12)]
    pc = PrefixCache(runner)
    canvases, caches, solo = [], [], []
    for i, prompt in enumerate(prompts):
        canvas = pad_fill_canvas(prompt, [7, 8, 9][: i + 1], 8, 4, 0, 0)
        cache = pc.encode(i, prompt).cache
        canvases.append(canvas)
        caches.append(cache)
        with torch.inference_mode():
            solo.append(runner.decode(canvas.canvas_ids, cache, canvas.position_ids(), None,
                                      runner.decoder_mask(cache, canvas.valid)))
    merged, key_valid = runner.merge_caches(caches)
    batch = stack_rows(canvases, key_valid)
    with torch.inference_mode():
        logits = runner.decode(batch.canvas_ids, merged, batch.position_ids(), None,
                               runner.decoder_mask(merged, batch.valid, batch.key_valid))
    for row, ref in enumerate(solo):
        torch.testing.assert_close(logits[row:row + 1], ref, atol=1e-5, rtol=0)
    # without the key mask the padded rows would read zero keys: the check above is not vacuous
    with torch.inference_mode():
        unmasked = runner.decode(batch.canvas_ids, merged, batch.position_ids(), None, None)
    assert (unmasked[0] - solo[0][0]).abs().max() > 1e-3


def _job(key, value, batch_key="k", rows=4, log=None):
    def one():
        log.append([key])
        return value

    def many(jobs):
        log.append([j.doc_key for j in jobs])
        return [j.payload for j in jobs]

    return Job(fn=one, doc_key=key, cancel=threading.Event(), superseded=lambda: "superseded",
               batch_key=batch_key, batch_fn=many, batch_rows=rows, payload=value)


def test_worker_batches_compatible_jobs_of_other_documents():
    worker = Worker()
    log: list[list[str]] = []
    try:
        gate = threading.Event()
        worker.submit(Job(fn=lambda: gate.wait(5), doc_key="z", cancel=threading.Event(), superseded=lambda: None))
        futs = [worker.submit(_job("a", 1, log=log)),
                worker.submit(_job("b", 2, batch_key="other", log=log)),
                worker.submit(_job("c", 3, log=log)),
                worker.submit(_job("d", 4, rows=1, log=log)),  # asks to run alone
                worker.submit(_job("e", 5, log=log))]
        gate.set()
        assert [f.result(timeout=5) for f in futs] == [1, 2, 3, 4, 5]
        assert log == [["a", "c", "e"], ["b"], ["d"]]
    finally:
        worker.close()


def test_worker_batch_respects_the_smallest_row_limit_and_supersession():
    worker = Worker()
    log: list[list[str]] = []
    try:
        gate = threading.Event()
        worker.submit(Job(fn=lambda: gate.wait(5), doc_key="z", cancel=threading.Event(), superseded=lambda: None))
        a = worker.submit(_job("a", 1, rows=2, log=log))
        old_b = worker.submit(_job("b", 2, log=log))
        new_b = worker.submit(_job("b", 22, log=log))  # supersedes the queued b
        c = worker.submit(_job("c", 3, log=log))
        gate.set()
        assert old_b.result(timeout=5) == "superseded"
        assert (a.result(timeout=5), new_b.result(timeout=5), c.result(timeout=5)) == (1, 22, 3)
        assert log == [["a", "b"], ["c"]]
    finally:
        worker.close()
