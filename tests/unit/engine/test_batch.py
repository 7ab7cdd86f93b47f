"""Cross-document batching: several documents' pad-fill requests share each decoder forward, join and
leave between steps, and each row gets what it would have got alone."""

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


def _requests(seed_base: int, temperature: float, rows: int = 1, steps: int = 6, **kw) -> list[InfillRequest]:
    return [InfillRequest(prefix=p, suffix=s, doc_key=f"doc{i}", length_strategy="pad", reuse_prefix=False,
                          batch_rows=rows, params=DenoiseParams(max_steps=steps, temperature=temperature,
                                                                seed=seed_base + i, **kw))
            for i, (p, s) in enumerate(zip(PREFIXES, SUFFIXES))]


class _Hold:
    """Keeps the engine's worker busy so that submitted requests queue up together."""

    def __init__(self, engine):
        self.gate, started = threading.Event(), threading.Event()
        self.future = engine.worker.submit(Job(fn=lambda: (started.set(), self.gate.wait(10)), doc_key="hold",
                                               cancel=threading.Event(), superseded=lambda: None))
        started.wait(10)

    def release(self):
        self.gate.set()
        self.future.result(timeout=30)


def _batched(engine, requests):
    hold = _Hold(engine)
    futures = [engine.submit(r) for r in requests]
    hold.release()
    return [f.result(timeout=60) for f in futures]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_each_batch_row_equals_its_solo_run(tiny_engine, temperature):
    solo = [tiny_engine.run_infill(r) for r in _requests(10, temperature)]
    before = dict(tiny_engine.stats)
    batched = _batched(tiny_engine, _requests(10, temperature, rows=4))
    assert tiny_engine.stats["batches"] == before["batches"] + 1
    assert tiny_engine.stats["batchedJobs"] == before["batchedJobs"] + 3
    assert len({r.prompt_tokens for r in batched}) == 3  # rows really have different prompt lengths
    assert len({r.text for r in solo}) == 3
    for a, b in zip(solo, batched):
        assert b.batch_rows == 3 and not b.cancelled
        assert b.text == a.text and b.steps == a.steps
        assert b.score == pytest.approx(a.score, abs=1e-4)
    if temperature > 0:  # each row has its own generator: another seed for row 1 changes row 1 only
        other = _requests(10, temperature, rows=4)
        other[1].params = dataclasses.replace(other[1].params, seed=999)
        changed = _batched(tiny_engine, other)
        assert changed[0].text == batched[0].text and changed[2].text == batched[2].text


def test_a_request_joins_a_running_batch_and_a_superseded_row_leaves_it(tiny_engine):
    # confidence 0: rows never stop early, so the first one is still running when the others arrive
    long = _requests(3, 0.2, rows=4, steps=40, confidence_threshold=0.0)
    solo_b = tiny_engine.run_infill(dataclasses.replace(long[1], batch_rows=1, cancel=threading.Event()))
    hold = _Hold(tiny_engine)
    fa = tiny_engine.submit(long[0])
    hold.release()
    while fa.running() is False and not fa.done():
        pass
    fb = tiny_engine.submit(long[1])
    fc = tiny_engine.submit(long[2])
    newer_c = dataclasses.replace(long[2], cancel=threading.Event())
    fc2 = tiny_engine.submit(newer_c)  # supersedes c, queued or running
    a, b, c, c2 = (f.result(timeout=120) for f in (fa, fb, fc, fc2))
    assert c.cancelled and c.text == ""
    assert not (a.cancelled or b.cancelled or c2.cancelled)
    assert a.batch_rows >= 2 and b.batch_rows >= 2  # b joined a while a ran
    assert b.text == solo_b.text and b.steps == solo_b.steps == 40


def test_library_default_keeps_requests_apart(tiny_engine):
    results = _batched(tiny_engine, _requests(0, 0.2))
    assert [r.batch_rows for r in results] == [1, 1, 1]


def test_a_failing_request_does_not_sink_the_batch(tiny_engine):
    reqs = _requests(0, 0.2, rows=4)
    reqs[1].prefix = 12345  # not text: tokenizing fails for this one only
    hold = _Hold(tiny_engine)
    futures = [tiny_engine.submit(r) for r in reqs]
    hold.release()
    with pytest.raises(Exception):
        futures[1].result(timeout=60)
    assert futures[0].result(timeout=60).text and futures[2].result(timeout=60).text
    assert tiny_engine.infill(_requests(0, 0.2)[0]).text  # and the engine goes on


def test_merged_caches_give_each_rows_own_logits():
    """Prompts longer than the sliding window (trimmed sliding layers) and of different lengths."""
    from transformers import DiffusionGemmaForBlockDiffusion

    from dg_lsp.engine.canvas import pad_fill_canvas
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
    ids = torch.cat([c.canvas_ids for c in canvases])
    positions = torch.cat([c.position_ids() for c in canvases])
    valid = torch.cat([c.valid for c in canvases])
    with torch.inference_mode():
        logits = runner.decode(ids, merged, positions, None, runner.decoder_mask(merged, valid, key_valid))
        # self-conditioning for rows 0 and 2 only: row 1 must still match its first-step (no SC) logits
        sc = torch.randn(3, 8, 97)
        mixed = runner.decode(ids, merged, positions, sc, runner.decoder_mask(merged, valid, key_valid),
                              torch.tensor([True, False, True]))
        unmasked = runner.decode(ids, merged, positions, None, None)
    for row, ref in enumerate(solo):
        torch.testing.assert_close(logits[row:row + 1], ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(mixed[1:2], solo[1], atol=1e-5, rtol=0)
    assert (mixed[0] - solo[0][0]).abs().max() > 1e-3  # self-conditioning did reach row 0
    # without the key mask the padded rows would read zero keys: the checks above are not vacuous
    assert (unmasked[0] - solo[0][0]).abs().max() > 1e-3


def _job(key, value, log, batch_key="k", rows=4):
    def one():
        log.append([key])
        return value

    def many(ctx):
        names = [ctx.first.doc_key]
        ctx.deliver(ctx.first, ctx.first.payload)
        for job in ctx.more(ctx.first.batch_rows - 1):
            names.append(job.doc_key)
            ctx.deliver(job, job.payload)
        log.append(names)

    return Job(fn=one, doc_key=key, cancel=threading.Event(), superseded=lambda: "superseded",
               batch_key=batch_key, batch_fn=many, batch_rows=rows, payload=value)


def test_worker_admits_only_compatible_jobs_from_the_front_of_the_queue():
    worker = Worker()
    log: list[list[str]] = []
    try:
        gate = threading.Event()
        worker.submit(Job(fn=lambda: gate.wait(5), doc_key="z", cancel=threading.Event(), superseded=lambda: None))
        futs = [worker.submit(_job("a", 1, log)),
                worker.submit(_job("c", 3, log)),
                worker.submit(_job("b", 2, log, batch_key="other")),  # blocks admission behind it
                worker.submit(_job("e", 5, log)),
                worker.submit(_job("d", 4, log, rows=1))]  # asks to run alone
        gate.set()
        assert [f.result(timeout=5) for f in futs] == [1, 3, 2, 5, 4]
        assert log == [["a", "c"], ["b"], ["e"], ["d"]]
    finally:
        worker.close()


def test_worker_answers_every_member_when_a_batch_fails():
    worker = Worker()
    try:
        gate = threading.Event()
        worker.submit(Job(fn=lambda: gate.wait(5), doc_key="z", cancel=threading.Event(), superseded=lambda: None))

        def broken(ctx):
            ctx.more(3)
            raise RuntimeError("boom")

        jobs = [Job(fn=lambda: None, doc_key=k, cancel=threading.Event(), superseded=lambda: "s", batch_key="k",
                    batch_fn=broken, batch_rows=4) for k in "abc"]
        futs = [worker.submit(j) for j in jobs]
        gate.set()
        for f in futs:
            with pytest.raises(RuntimeError, match="boom"):
                f.result(timeout=5)
        assert worker.submit(Job(fn=lambda: 7, doc_key=None, cancel=threading.Event(),
                                 superseded=lambda: None)).result(timeout=5) == 7
        assert not worker.busy
    finally:
        worker.close()


def test_automatic_batching_follows_the_warm_up_measurement(tiny_engine):
    saved = tiny_engine.batch_calibration
    try:
        tiny_engine.warmup()
        cal = tiny_engine.batch_calibration
        assert cal["rows"] == 2 and cal["step_ms_1"] > 0 and cal["step_ms_2"] > 0
        assert cal["batch_pays"] == (cal["cost_in_single_forwards"] < 1.1)
        auto = _requests(0, 0.2, rows=0)[0]
        tiny_engine.batch_calibration = dict(cal, batch_pays=True)
        assert tiny_engine.batch_rows_for(auto) == 4 and tiny_engine.batch_key(auto) is not None
        tiny_engine.batch_calibration = dict(cal, batch_pays=False)
        assert tiny_engine.batch_rows_for(auto) == 1 and tiny_engine.batch_key(auto) is None
        assert tiny_engine.batch_rows_for(_requests(0, 0.2, rows=3)[0]) == 3  # an explicit count always holds
    finally:
        tiny_engine.batch_calibration = saved


def test_an_explicit_batch_row_whose_healed_answer_does_not_fit_is_retried_alone(tiny_engine):
    reqs = _requests(0, 0.2, rows=4)
    reqs[1].prefix = "def f(x):\n    "  # the random tiny model does not write this tail back
    reqs[1].heal_retry = True
    plain = tiny_engine.run_infill(dataclasses.replace(reqs[1], heal=False, heal_retry=False, batch_rows=1,
                                                       cancel=threading.Event()))
    out = _batched(tiny_engine, reqs)
    assert out[1].text == plain.text and out[1].text and not out[1].heal_mismatch
    assert out[0].batch_rows == 3
