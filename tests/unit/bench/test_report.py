"""Report rows, the Markdown table, compare, and how completions are applied and scored."""

from __future__ import annotations

from dg_lsp.bench.quality import lsp_runner, report
from dg_lsp.bench.quality.lsp_runner import LspRunner, offset_of, utf16_position
from dg_lsp.bench.quality.runners import TaskEdit, shape_continuation
from dg_lsp.bench.quality.scoring import apply_completion, score
from dg_lsp.bench.quality.tasks import Task, infer_kind, on_a_blank_line

TASK = Task("t1", "line-rest", "python", prefix="def f(x):\n    return x", middle=" + 1", suffix="\n")


def test_apply_insertion_and_lsp_range():
    assert apply_completion(TASK, TaskEdit(" + 1", 22, 22, 1.0)) == ("def f(x):\n    return x + 1\n", " + 1")
    # An item replacing the whole line keeps the text before the cursor: the middle is what it adds.
    item = TaskEdit("    return x + 1", 10, 22, 1.0)
    assert apply_completion(TASK, item) == ("def f(x):\n    return x + 1\n", " + 1")
    assert score(TASK, item)["exact_match"] is True
    # An item that rewrites the text before the cursor is scored as what it inserts.
    edited, middle = apply_completion(TASK, TaskEdit("    yield x", 10, 22, 1.0))
    assert edited == "def f(x):\n    yield x\n" and middle == "    yield x"


def test_the_other_items_are_scored_as_the_editor_applies_them():
    """An explicit request's other items (--via lsp): how many a shown answer had, and whether any is exact, each
    applied over its own range; the first item alone still makes `exact_match`."""
    others = (TaskEdit(" * 2", 22, 22, 1.0), TaskEdit("    return x + 1", 10, 22, 1.0))
    first = TaskEdit(" - 1", 22, 22, 1.0, others=others)
    got = score(TASK, first)
    assert (got["exact_match"], got["exact_in_items"], got["items"]) == (False, True, 3)
    alone = score(TASK, TaskEdit(" - 1", 22, 22, 1.0, others=(TaskEdit(" * 2", 22, 22, 1.0),)))
    assert (alone["exact_in_items"], alone["items"]) == (False, 2)
    assert score(TASK, TaskEdit("", 22, 22, 1.0))["items"] == 0
    rows = report.build_rows([{"label": "d", "mode": "diffusion", "via": "lsp", "max_steps": 16}],
                             [dict(got, label="d", latency_ms=1.0), dict(alone, label="d", latency_ms=1.0)])
    assert (rows[0]["items"], rows[0]["exact_in_items"], rows[0]["exact_match"]) == (2.5, 0.5, 0.0)
    assert "2.50 items a shown answer; EM of any item 50.0% (the first: 0.0%)" in report.markdown_table(rows)
    doc = TASK.prefix + TASK.suffix
    assert [LspRunner._to_completion(TASK, doc, item, 1.0, None).text for item in lsp_runner.all_items(
        {"items": [{"insertText": " - 1"}, {"insertText": " + 1"}]})] == [" - 1", " + 1"]


def test_utf16_positions_round_trip():
    text = "a = '😀é'\nb"
    offset = text.index("'", 5) + 1  # after the closing quote
    pos = utf16_position(text, offset)
    assert pos == {"line": 0, "character": 9}
    assert offset_of(text, pos) == offset
    assert offset_of(text, {"line": 1, "character": 1}) == len(text)


def test_lsp_item_conversion():
    doc = TASK.prefix + TASK.suffix
    c = LspRunner._to_completion(TASK, doc, {"insertText": " + 1"}, 5.0, None)
    assert (c.start, c.end, c.text) == (22, 22, " + 1")
    c = LspRunner._to_completion(TASK, doc, {"insertText": {"kind": "snippet", "value": "x"},
                                             "range": {"start": {"line": 1, "character": 4},
                                                       "end": {"line": 1, "character": 12}}}, 5.0, None)
    assert (c.start, c.end, c.text) == (14, 22, "x")
    assert LspRunner._to_completion(TASK, doc, None, 5.0, "timeout").error == "timeout"


def test_shape_continuation_for_the_ar_baseline():
    line = Task("t", "single-line", "python", "def f():\n", "    return 1\n", "")
    assert shape_continuation(line, "    return 1\n    more\n") == "    return 1\n"
    rest = Task("t", "line-rest", "python", "x = ", "1", "\n")
    assert shape_continuation(rest, "1\nprint(x)\n") == "1"
    block = Task("t", "multi-line", "python", "def f():\n", "    a = 1\n    return a\n", "")
    assert shape_continuation(block, "    a = 1\n\n    return a\ndef g():\n") == "    a = 1\n\n    return a\n"
    assert infer_kind("x") == "line-rest" and infer_kind("x\n") == "single-line"
    assert infer_kind("a\nb\n") == "multi-line"


def test_a_hole_of_whole_lines_seen_from_a_blank_line_keeps_its_document_and_answer():
    block = Task("t", "multi-line", "python", "def f():\n", "    a = 1\n    return a\n", "print(f())\n")
    opened = on_a_blank_line(block)
    assert opened.original == block.original
    assert (opened.prefix, opened.middle, opened.suffix) == ("def f():\n    ", "a = 1\n    return a", "\nprint(f())\n")
    # the cursor's line is blank (nothing after the cursor on it), at the first line's indentation
    assert opened.suffix.split("\n")[0] == "" and opened.prefix.rsplit("\n", 1)[1] == "    "
    for other in (TASK, Task("t", "random-span", "python", "x = f(", "a)\n", ""),
                  Task("t", "single-line", "python", "x = 1\n", "\n", "y = 2\n")):
        assert on_a_blank_line(other) == other


def test_the_bench_cli_takes_the_cursor_on_a_blank_line(tmp_path):
    from dg_lsp.bench.cli import build_parser, load_tasks

    (tmp_path / "m.py").write_text("def f(x):\n    y = x + 1\n    return y\n")
    for cursor in ("next-line", "blank-line"):
        args = build_parser().parse_args(["repo", str(tmp_path), "--kinds", "single-line", "--per-kind", "5",
                                          "--cursor", cursor])
        tasks, source = load_tasks(args)
        assert len(tasks) == 3 and all(t.original == "def f(x):\n    y = x + 1\n    return y\n" for t in tasks)
        # the cursor's line: text after the cursor, or none (a blank line)
        assert all(bool(t.suffix.split("\n")[0]) == (cursor == "next-line") for t in tasks if t.suffix.strip())
        assert source.get("cursor", "next-line") == cursor

def _report(em: float, label: str = "diffusion/engine s=8") -> dict:
    configs = [{"label": label, "mode": "diffusion", "via": "engine", "max_steps": 8, "peak_memory_mb": 100.0}]
    samples = []
    for i, kind in enumerate(["single-line", "single-line", "body", "body"]):
        samples.append({"label": label, "task_id": str(i), "kind": kind, "language": "python",
                        "exact_match": i < 4 * em, "edit_similarity": 0.5, "passed": None, "syntax_valid": True,
                        "latency_ms": 50.0 + i, "encode_ms": 5.0, "denoise_ms": 40.0, "steps": 8,
                        "tokens_per_forward": 1.5, "generated_tokens": 12, "error": None})
    return {"schema": report.SCHEMA, "configs": configs, "rows": report.build_rows(configs, samples),
            "samples": samples}


def test_rows_table_and_compare(tmp_path):
    a, b = _report(0.25), _report(0.75)
    rows = a["rows"]
    assert [(r["kind"], r["language"], r["n"]) for r in rows] == [("body", "python", 2), ("single-line", "python", 2),
                                                                  ("all", "all", 4)]
    for field in ("kind", "language", "mode", "n", "exact_match", "edit_similarity", "pass_at_1", "syntax_valid",
                  "tokens_per_forward"):
        assert field in rows[0]
    assert rows[0]["pass_at_1"] is None and rows[-1]["exact_match"] == 0.25
    assert rows[0]["latency_ms"]["p50"] is not None and rows[0]["latency_ms"]["p95"] is not None
    table = report.markdown_table(rows)
    assert table.count("\n") == 4 and "| diffusion | engine | 8 | all | all | 4 | 25.0 |" in table
    report.write_json(a, tmp_path / "a.json")
    report.write_json(b, tmp_path / "b.json")
    delta = report.compare_table(report.load_json(tmp_path / "a.json"), report.load_json(tmp_path / "b.json"))
    assert "25.0 -> 75.0 (+50.0)" in delta


def test_sign_test_p_values():
    assert report.sign_test_p(0, 0) == 1.0
    assert report.sign_test_p(3, 3) == 1.0
    # 8 against 0: 2 * 0.5**8
    assert abs(report.sign_test_p(8, 0) - 2 / 256) < 1e-12
    assert abs(report.sign_test_p(1, 9) - 2 * 11 / 1024) < 1e-12


def test_paired_table_counts_tasks_that_change_sides():
    a, b = _report(0.25), _report(0.75, label="diffusion/engine s=16")  # other label, same mode: paired
    for s, passed in zip(a["samples"], [True, True, False, None]):
        s["passed"], s["completion"] = passed, "x"
    for s, passed in zip(b["samples"], [True, False, True, None]):
        s["passed"], s["completion"] = passed, "x" if passed else "y"
    table = report.paired_table(a, b)
    row = table.splitlines()[2]
    # 4 shared tasks, 2 completions differ (tasks 1 and 3); pass: task 1 only in A, task 2 only in B;
    # EM: A matches task 0, B tasks 0-2, so 2 only in B.
    assert row == "| diffusion/engine s=8 | diffusion/engine s=16 | 4 | 2 | 1 | 1 | 1 | 0 | 2 | 0.5 |"
