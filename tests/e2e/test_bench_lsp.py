"""`dg-lsp bench --via lsp`: the real `dg-lsp serve` driven over stdio, as an editor drives it."""

from __future__ import annotations

import json
import subprocess
import sys


def test_humaneval_via_lsp(tiny_model_dir, tmp_path):
    out = tmp_path / "lsp.json"
    done = subprocess.run(
        [sys.executable, "-m", "dg_lsp", "bench", "humaneval", "--split", "single-line", "--n", "3", "--via", "lsp",
         "--steps", "2", "--model", tiny_model_dir, "--device", "cpu", "--exec-timeout", "5",
         "--lsp-setting", "maxLines=4", "--no-progress", "--out", str(out)],
        capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| diffusion | lsp | 2 | single-line | python | 3 |" in done.stdout
    report = json.loads(out.read_text())
    config = report["configs"][0]
    assert config["via"] == "lsp" and config["server_settings"]["maxSteps"] == 2
    assert config["server_settings"]["maxLines"] == 4 and config["peak_memory_kind"] == "server_max_rss"
    (row,) = report["rows"]
    assert row["n"] == 3 and row["errors"] == 0 and row["pass_at_1"] is not None
    assert row["latency_ms"]["p50"] > 0 and row["latency_ms"]["p95"] >= row["latency_ms"]["p50"]
    for sample in report["samples"]:
        assert sample["error"] is None and sample["exec_status"] is not None
        if sample["completion"]:  # the engine's share comes from dgLsp.status
            assert 0 < sample["engine_ms"] <= sample["latency_ms"]
