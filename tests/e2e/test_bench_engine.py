"""`dg-lsp bench` end to end through the engine, on the tiny random model (plumbing, not quality)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

from dg_lsp.bench.cli import main
from dg_lsp.bench.quality.tasks import default_data_dir

ROW_FIELDS = ("label", "mode", "via", "max_steps", "kind", "language", "n", "exact_match", "edit_similarity",
              "pass_at_1", "syntax_valid", "errors", "latency_ms", "steps", "tokens_per_forward", "tokens_per_s",
              "generated_tokens", "peak_memory_mb")


def _run(args: list[str], model: str, capsys) -> tuple[int, str]:
    rc = main(args + ["--model", model, "--device", "cpu", "--no-progress"])
    return rc, capsys.readouterr().out


def test_humaneval_with_baselines_and_steps(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "he.json"
    rc, stdout = _run(["humaneval", "--split", "single-line", "--n", "3", "--steps", "1,2", "--baseline", "ar",
                       "--baseline", "empty", "--exec-timeout", "5", "--out", str(out)], tiny_model_dir, capsys)
    assert rc == 0
    report = json.loads(out.read_text())
    assert report["schema"] == "dg-lsp-bench/1" and report["source"]["n_tasks"] == 3
    assert [c["label"] for c in report["configs"]] == ["diffusion/engine s=1", "diffusion/engine s=2", "ar/engine",
                                                       "empty"]
    assert len(report["rows"]) == 4 and len(report["samples"]) == 12
    for row in report["rows"]:
        assert set(ROW_FIELDS) <= set(row)
        assert row["kind"] == "single-line" and row["language"] == "python" and row["n"] == 3
        assert row["pass_at_1"] is not None and {"p50", "p95", "max"} <= set(row["latency_ms"])
    diffusion = report["rows"][0]
    assert diffusion["steps"] <= 1 and diffusion["latency_ms"]["encode_p50"] is not None
    statuses = {s["exec_status"] for s in report["samples"]}
    assert statuses <= {"passed", "failed", "timeout", "syntax_error", "crashed"}
    assert "| diffusion | engine | 1 | single-line | python | 3 |" in stdout
    assert "| ar | engine | - | single-line | python | 3 |" in stdout
    assert (tmp_path / "he.latency_cdf.png").stat().st_size > 0
    assert (tmp_path / "he.quality_vs_steps.png").stat().st_size > 0


def test_repo_and_compare(tiny_model_dir, tmp_path, capsys):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text("def f(a, b):\n    c = a + b\n    d = c * 2\n    return d\n\n\nx = f(1, 2)\n")
    (repo / "m.js").write_text("function g(a) {\n  const b = a + 1;\n  return b;\n}\n")
    outs = []
    for steps in ("1", "2"):
        outs.append(tmp_path / f"r{steps}.json")
        rc, _ = _run(["repo", str(repo), "--kinds", "single-line,body,line-rest", "--per-kind", "1", "--steps", steps,
                      "--out", str(outs[-1])], tiny_model_dir, capsys)
        assert rc == 0
    report = json.loads(outs[0].read_text())
    kinds = {(r["kind"], r["language"]) for r in report["rows"]}
    assert {("single-line", "python"), ("body", "javascript"), ("all", "all")} <= kinds
    assert all(r["pass_at_1"] is None and r["syntax_valid"] is not None for r in report["rows"])
    done = subprocess.run([sys.executable, "-m", "dg_lsp.bench", "compare", str(outs[0]), str(outs[1])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| diffusion | engine | 1->2 | all | all |" in done.stdout


def test_custom_tasks_file(tiny_model_dir, tmp_path, capsys):
    rows = [json.loads(line) for line in gzip.open(default_data_dir() / "HumanEval-RandomSpanInfillingLight.jsonl.gz",
                                                   "rt")][:2]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, stdout = _run(["tasks", str(path), "--steps", "1"], tiny_model_dir, capsys)
    assert rc == 0 and "| diffusion | engine | 1 |" in stdout


def test_bad_input_is_an_error_not_a_crash(tmp_path, capsys):
    assert main(["tasks", str(tmp_path / "missing.jsonl"), "--no-progress"]) == 2
    assert main(["repo", str(tmp_path), "--kinds", "nonsense"]) == 2
    assert "unknown hole kind" in capsys.readouterr().err
