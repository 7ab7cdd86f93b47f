"""Planning configurations, and a failing completion becoming a failed sample rather than a failed run."""

from __future__ import annotations

from dg_lsp.bench.quality.harness import BenchOptions, _complete, plan, run_benchmark
from dg_lsp.bench.quality.tasks import Task

TASK = Task("t", "single-line", "python", "def f():\n", "    return 1\n", "\nassert f() == 1\n",
            test="def check(candidate):\n    assert candidate() == 1\n", entry_point="f")


def test_plan_labels():
    configs = plan(BenchOptions(via="lsp", baselines=("ar", "empty"), steps=(4, 8)))
    assert [c.label for c in configs] == ["diffusion/lsp s=4", "diffusion/lsp s=8", "ar/engine", "empty"]
    assert [c.max_steps for c in configs] == [4, 8, None, None]


def test_a_raising_runner_gives_an_error_sample():
    class Broken:
        def complete(self, task):
            raise RuntimeError("boom")

    completion = _complete(Broken(), TASK)
    assert completion.text == "" and completion.error == "RuntimeError: boom"


def test_empty_baseline_runs_tests_without_a_model():
    report = run_benchmark([TASK], BenchOptions(baselines=("empty",), steps=(), progress=False), {"type": "tasks"})
    (sample,) = report["samples"]
    assert sample["passed"] is False and sample["exec_status"] == "syntax_error"  # a def without a body
    assert report["rows"][0]["pass_at_1"] == 0.0 and report["model"] is None
