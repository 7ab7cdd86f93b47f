"""`dg-lsp bench` as a newcomer meets it: tables before plots, no matplotlib is not a crash, bad input is
one line and never a traceback, and stderr is quiet when it is not a terminal."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from dg_lsp.bench import cli as bench_cli
from dg_lsp.bench.quality.tasks import default_data_dir

NO_MATPLOTLIB = """
import sys

class NoMatplotlib:
    def find_spec(self, name, path=None, target=None):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMatplotlib())
from dg_lsp.cli import main
raise SystemExit(main(["bench"] + sys.argv[1:]))
"""


def _tasks_file(tmp_path, n: int = 2):
    rows = [json.loads(line) for line in gzip.open(default_data_dir() / "HumanEval-RandomSpanInfillingLight.jsonl.gz",
                                                   "rt")][:n]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_without_matplotlib_the_bench_says_how_to_get_plots_once_and_exits_0(tiny_model_dir, tmp_path):
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-c", NO_MATPLOTLIB, "tasks", str(_tasks_file(tmp_path)), "--steps", "1,2",
                           "--model", tiny_model_dir, "--device", "cpu", "--exec-timeout", "5", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert "| diffusion | engine | 1 |" in done.stdout and "| diffusion | engine | 2 |" in done.stdout
    assert done.stderr.count("pip install 'dg-lsp[bench]'") == 1, done.stderr
    assert json.loads(out.read_text())["schema"] == "dg-lsp-bench/1"
    assert not list(tmp_path.glob("*.png"))
    # quiet by default: stderr is a pipe here, so no progress bar, no "Loading weights", no INFO line
    assert "it/s" not in done.stderr and "Loading weights" not in done.stderr and " INFO " not in done.stderr


def test_the_table_and_the_json_come_before_the_plots(tiny_model_dir, tmp_path, capsys, monkeypatch):
    from dg_lsp.bench.quality import plots

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)  # restored after: the bench sets it
    out = tmp_path / "r.json"
    seen = {}

    def write_plots(report, json_path):
        seen["stdout"] = capsys.readouterr().out
        seen["json"] = out.is_file()
        return []

    monkeypatch.setattr(plots, "write_plots", write_plots)
    rc = bench_cli.main(["tasks", str(_tasks_file(tmp_path, 1)), "--steps", "1", "--model", tiny_model_dir,
                         "--device", "cpu", "--out", str(out)])
    assert rc == 0
    assert "| diffusion | engine | 1 |" in seen["stdout"] and seen["json"]


def test_progress_bars_with_verbose(tiny_model_dir, tmp_path):
    done = subprocess.run([sys.executable, "-m", "dg_lsp", "bench", "tasks", str(_tasks_file(tmp_path, 1)), "--steps",
                           "1", "--model", tiny_model_dir, "--device", "cpu", "--verbose"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "task/s" in done.stderr or "s/task" in done.stderr, done.stderr[-2000:]


BAD = [
    (["compare", "{tmp}/missing.json", "{tmp}/missing.json"], 2, "No such file"),
    (["compare", "{tmp}/notjson.txt", "{tmp}/notjson.txt"], 2, "not JSON"),
    (["compare", "{tmp}/list.json", "{tmp}/list.json"], 2, "not a dg-lsp bench report"),
    (["compare", "{tmp}/other.json", "{tmp}/other.json"], 2, "not a dg-lsp-bench/1 report"),
    (["tasks", "{tmp}/missing.jsonl"], 2, "No such file"),
    (["tasks", "{tmp}/notjson.txt"], 2, "not JSON lines"),
    (["tasks", "{tmp}/latin1.jsonl"], 2, "not UTF-8"),
    (["tasks", "{tmp}/bad.jsonl.gz"], 2, "Not a gzipped file"),
    (["tasks", "{tmp}/fields.jsonl"], 2, "missing fields"),
    (["tasks", "{tmp}"], 2, "is a directory"),
    (["humaneval", "--data-dir", "{tmp}/nope"], 2, "not found (from --data-dir)"),
    (["humaneval", "--split", "nope"], 2, "invalid choice"),
    (["humaneval", "--steps", "0"], 2, "positive integers"),
    (["humaneval", "--out", "{tmp}"], 2, "is a directory"),
    (["humaneval", "--out", "{tmp}/notjson.txt/x.json"], 2, "cannot write"),
    (["humaneval", "--n", "1", "--model", "{tmp}/nope"], 1, "model directory not found"),
    (["repo", "{tmp}/nope"], 2, "no such directory"),
    (["repo", "{tmp}/empty"], 1, "no tasks found"),
    (["heldout", "--kinds", "bogus"], 2, "unknown hole kind"),
    (["gpu", "--scale", "bogus"], 2, "expected a comma-separated subset"),
    (["typing", "--modes", "bogus"], 2, "--modes takes"),
    (["typing", "--files", "{tmp}/nope.py", "--docs", "1"], 2, "No such file"),
    ([], 2, "required"),
    (["frob"], 2, "invalid choice"),
]


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    (tmp / "notjson.txt").write_text("not json\n")
    (tmp / "list.json").write_text("[1]\n")
    (tmp / "other.json").write_text('{"schema": "something-else"}\n')
    (tmp / "latin1.jsonl").write_bytes(b'{"task_id": "\xff"}\n')
    (tmp / "bad.jsonl.gz").write_bytes(b"garbage")
    (tmp / "fields.jsonl").write_text('{"task_id": 1}\n')
    (tmp / "empty").mkdir()
    return tmp


@pytest.mark.parametrize("args,code,says", BAD, ids=[" ".join(a[:2]) or "none" for a, _, _ in BAD])
def test_bad_input_is_one_line_and_never_a_traceback(bad_inputs, args, code, says):
    argv = [a.replace("{tmp}", str(bad_inputs)) for a in args]
    done = subprocess.run([sys.executable, "-m", "dg_lsp", "bench", *argv], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and says in done.stderr, done.stderr
    assert done.stdout == ""
