"""The context benchmark script runs and reports figures (no timing assertions)."""

from __future__ import annotations

from dg_lsp.bench.diagnostics.context import BenchOptions, run, synthetic_python
from dg_lsp.context import syntax_error_count
import random


def test_synthetic_module_is_valid_python_of_the_requested_size():
    text = synthetic_python(300, random.Random(0))

    assert text.count("\n") == 300
    assert syntax_error_count(text, "python") == 0
    assert "class Model3:" in text and "def helper_1(" in text


def test_run_reports_latency_percentiles():
    results = run(BenchOptions(lines=120, positions=5))

    assert results["lines"] == 121 and results["positions"] == 5
    assert 0 < results["p50_ms"] <= results["p95_ms"] <= results["max_ms"]
