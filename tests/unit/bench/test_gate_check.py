"""bench/diagnostics/gate_check.py: the syntax gate on texts whose worth is known (no model)."""

import argparse
import json

from dg_lsp.bench.diagnostics import gate_check
from dg_lsp.bench.quality.sources import load_tasks


def test_the_gate_shows_every_right_answer_of_humaneval_and_of_a_seeded_held_out_sample(tmp_path):
    """Before session 24's Python rules the gate dropped 3 HumanEval single-line answers (105/L10 and 19/L11, the
    `}` of a dict opened far above; 156/L3) and 17 multi-line ones; 45 of 2,633 with the held-out holes."""
    out = tmp_path / "truths.json"
    assert gate_check.main(["--seed", "5", "--sizes", "1033,600,15,15,6", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [row["set"] for row in rows] == [f"{s} {k}" for s, k in gate_check.SETS]
    assert [row["n"] for row in rows] == [1033, 600, 15, 15, 6]
    assert [row["rejected"] for row in rows] == [0, 0, 0, 0, 0]


def test_ungated_answers_are_counted_through_the_gate(tmp_path):
    args = argparse.Namespace(command="humaneval", split="single-line", data_dir=None, n=3, seed=0)
    tasks = load_tasks(args)[0]
    # a report as `dg-lsp bench` writes it: the right answer, a line that breaks the file, and an empty answer
    samples = [{"label": "ar/engine", "task_id": tasks[0].task_id, "completion": tasks[0].middle},
               {"label": "ar/engine", "task_id": tasks[1].task_id, "completion": "    return (\n"},
               {"label": "ar/engine", "task_id": tasks[2].task_id, "completion": ""},
               {"label": "diffusion/engine s=16", "task_id": tasks[0].task_id, "completion": "x"}]
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"command": "dg-lsp bench humaneval --split single-line --n 3 --seed 0",
                                  "samples": samples}))
    out = tmp_path / "answers.json"
    assert gate_check.main(["--answers", str(report), "--json", str(out)]) == 0
    [row] = json.loads(out.read_text())
    assert (row["answers"], row["shown"], row["shown_exact"], row["shown_invalid"]) == (2, 1, 1, 0)
