"""The drafts diagnostic (bench/diagnostics/drafts.py) on a tiny adapted Gemma 3 whose decoder is the base model,
causal over the canvas (B = 0, the canvas gate closed): its draft at the first open slot must be the base model's
greedy token there, the ceiling with one candidate must agree everywhere, and the chain head must start as the
decoder's own prediction. Each is a check of the diagnostic's row and position bookkeeping."""

from __future__ import annotations

import pytest
import torch

from dg_lsp.bench.diagnostics import drafts
from dg_lsp.bench.quality.tasks import Task
from dg_lsp.engine.gemma3.tiny import build_tiny

TASKS = [Task("HumanEval/0/L1", "single-line", "python", "def add(a, b):\n", "    return a + b\n", "\n\nx = 1\n"),
         Task("HumanEval/1/L1", "single-line", "python", "def mul(a, b):\n    c = a\n", "    return c * b\n", "\n"),
         Task("HumanEval/2/L1", "single-line", "python", "class A:\n    def f(self):\n", "        return 1\n", "\n")]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    from dg_lsp.engine import Engine

    model = build_tiny(tmp_path_factory.mktemp("tiny-drafts"), delta_scale=0.0, future_gate=-1e4)
    e = Engine.load(str(model), device="cpu", dtype="float32")
    yield e
    e.close()


@pytest.fixture(scope="module")
def rec(engine):
    return drafts.collect(engine, TASKS, ceiling_n=len(TASKS), k=1)


def test_a_causal_decoder_drafts_the_first_open_slot_as_the_base_models_greedy_line(rec):
    figures = drafts.agreement(rec)
    assert figures["decoder_f"]["n"] == len(rec["d0"]) > 3
    assert figures["decoder_f"]["pct"] == 100.0
    assert len(rec["h_prev"]) == len(rec["h_mask"]) == len(rec["g1"]) == len(rec["family"])


def test_the_saved_hidden_states_are_the_rows_that_drafted_f_and_f_plus_one(engine, rec):
    # no end head here, so the decoder's logits at a position are exactly its row's hidden state times the head
    runner = engine.runner
    head = runner._head.float()
    for i in range(len(rec["d0"])):
        assert int(runner.ids_of((rec["h_prev"][i] @ head.t()).argmax().view(1))[0]) == rec["d0"][i]
        assert int(runner.ids_of((rec["h_mask"][i] @ head.t()).argmax().view(1))[0]) == rec["d1"][i]


def test_the_ceiling_with_one_candidate_is_the_greedy_line_itself(rec):
    # the base model's best token at f is the greedy one, so the mixture is p(. | g[:f + 1]), whose argmax is g[f + 1]
    assert drafts.agreement(rec)["ceiling_f+1"]["pct"] == 100.0


def test_a_hole_at_the_files_start_is_skipped(engine):
    first = Task("HumanEval/3/L0", "single-line", "python", "", "x = 1\n", "y = 2\n")
    logged = []
    rec = drafts.collect(engine, [first, TASKS[0]], ceiling_n=0, k=1, log=logged.append)
    assert "skipped" in logged[0] and len(rec["d0"]) > 0 and set(rec["family"]) == {0}


def test_the_mixture_is_a_distribution(engine):
    from dg_lsp.engine.types import DenoiseParams, InfillRequest

    started = engine.lifecycle.start(InfillRequest(prefix=TASKS[0].prefix, suffix=TASKS[0].suffix, reuse_prefix=False,
                                                   params=DenoiseParams(verify_weight=1.0)))
    lead = started.canvas.canvas_ids[0, :started.canvas.lead].tolist()
    with torch.inference_mode():
        mix = drafts.mixture_next(engine.runner, started.cache, len(started.prompt), lead, k=5)
    assert mix.shape[-1] == engine.runner.head_logits(torch.zeros(1, engine.runner.text_config.hidden_size)).shape[-1]
    assert abs(float(mix.sum()) - 1.0) < 1e-4 and float(mix.min()) >= 0.0


def test_the_chain_head_starts_as_the_decoders_own_prediction_and_splits_by_family(engine, rec):
    untrained = drafts.fit_chain(engine, rec, epochs=0)
    held = sum(1 for i, g in enumerate(rec["g1"]) if g >= 0 and rec["family"][i] % 3 == 0)
    assert untrained["eval_rows"] == held > 0 and untrained["train_rows"] > 0
    assert untrained["chain_f+1"] == untrained["decoder_f+1"]
    trained = drafts.fit_chain(engine, rec, epochs=3)
    assert 0.0 <= trained["chain_f+1"] <= 100.0


def test_saved_rows_keep_every_row(rec, tmp_path):
    path = tmp_path / "rows.pt"
    drafts.save_rows(rec, str(path))
    saved = torch.load(path)
    n = len(rec["d0"])
    assert saved["h_mask"].shape == (n, rec["h_mask"][0].shape[-1]) and saved["h_mask"].dtype == torch.float16
    assert saved["g1"].tolist() == rec["g1"] and saved["family"].tolist() == rec["family"]
    assert "ceiling" not in saved


def test_main_closes_its_engine_on_both_of_its_exits(engine, monkeypatch, tmp_path):
    from dg_lsp.engine import Engine

    closed = []
    monkeypatch.setattr(Engine, "load", staticmethod(lambda *a, **k: engine))
    monkeypatch.setattr(engine, "close", lambda: closed.append(True))
    monkeypatch.setattr("dg_lsp.bench.quality.tasks.subsample", lambda tasks, n, seed: TASKS[:n])
    out = tmp_path / "drafts.json"
    assert drafts.main(["--n", "2", "--ceiling-n", "1", "--candidates", "1", "--json", str(out)]) == 0
    assert closed == [True] and out.is_file() and '"ceiling_tasks": 1' in out.read_text()
    monkeypatch.setattr(engine.runner, "verifies", False, raising=False)  # a model without a base to verify with
    assert drafts.main(["--n", "1"]) == 2
    assert closed == [True, True]
