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


_JS = """const Base = require('./base.js')

class Runner extends Base {
  static description = 'Run the items'
  static params = [
    'json',
    'quiet',
  ]

  async exec (items) {
    const results = []
    for (const item of items) {
      if (!item.ready) {
        continue
      }
      results.push(await this.run(item))
    }
    if (this.npm.config.get('json')) {
      this.output(JSON.stringify(results))
      return results
    }
    for (const result of results) {
      this.output(`${result.name}: ${result.status}`)
    }
    return results
  }
}

module.exports = Runner
"""


def test_a_code_tree_s_right_answers_and_borrowed_wrong_lines_are_counted(tmp_path):
    tree = tmp_path / "lib"
    tree.mkdir()
    (tree / "runner.js").write_text(_JS)
    out = tmp_path / "repo.json"
    assert gate_check.main(["--repo", str(tree), "--language", "javascript", "--per-kind", "12",
                            "--json", str(out)]) == 0
    rows = {(row["kind"], row["text"]): row for row in json.loads(out.read_text())}
    assert set(rows) == {("single-line", "right"), ("single-line", "wrong"), ("line-rest", "right"),
                         ("multi-line", "right")}
    # every right line and line rest of this clean file is shown (a multi-line hole shows one line, or none where
    # it is a block's header alone), and none leaves the file broken
    for kind in ("single-line", "line-rest"):
        assert rows[(kind, "right")]["shown"] == rows[(kind, "right")]["n"] > 0
    assert rows[("line-rest", "right")]["whole"] == rows[("line-rest", "right")]["n"]
    assert all(row["shown_invalid"] == 0 for (_, text), row in rows.items() if text == "right")
    # the lines borrowed from elsewhere in the file: most are refused, and none that is shown leaves the file broken
    # (before the gate's lost-opener and early-closer rules, 7 of these 11 were shown, 6 of them breaking the file)
    wrong = rows[("single-line", "wrong")]
    assert wrong["n"] == 11 and wrong["shown"] <= 2 and wrong["shown_invalid"] == 0
