"""The bench scores what the editor receives (issue 14.1): the diffusion engine runner sends the server's windows
and passes the engine's answer through the server's post-processing (`finish_suggestion`), and nothing is
re-added for the task's kind; the show rate and the share of shown suggestions that are syntax-clean."""

from __future__ import annotations

from types import SimpleNamespace

from dg_lsp.bench.metrics import summarize
from dg_lsp.bench.quality.runners import EngineRunner, RunSettings
from dg_lsp.bench.quality.scoring import apply_completion, score
from dg_lsp.bench.quality.tasks import Task
from dg_lsp.engine import InfillResult

PREFIX = "def add(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
SUFFIX = "    return total\n"
WHOLE_LINE = Task("w1", "single-line", "python", prefix=PREFIX, middle="    total *= 2\n", suffix=SUFFIX)


class FakeEngine:
    """Answers every request with a fixed text (the engine's answer after healing); records the requests."""

    def __init__(self, text: str):
        self.text, self.requests = text, []
        self.loaded = SimpleNamespace(device="cpu")

    def infill(self, request):
        self.requests.append(request)
        return InfillResult(text=self.text)


def run(text: str, task: Task = WHOLE_LINE):
    engine = FakeEngine(text)
    completion = EngineRunner(engine, RunSettings()).complete(task)
    return engine, completion


def test_a_whole_line_answer_is_scored_as_the_editor_gets_it():
    _, completion = run("    total *= 2\n")
    edited, middle = apply_completion(WHOLE_LINE, completion)
    assert edited == WHOLE_LINE.original and middle == WHOLE_LINE.middle
    assert score(WHOLE_LINE, completion)["exact_match"] is True


def test_no_newline_is_re_added_for_the_kind():
    # the answer without its line break would join "    return total": the server shows nothing, so does the
    # bench (it used to add the newline back for single-line tasks, hiding issue 14.1)
    _, completion = run("    total *= 2")
    assert completion.text == ""
    sample = score(WHOLE_LINE, completion)
    assert sample["exact_match"] is False and sample["shown"] is False


def test_the_engine_gets_the_servers_windows_and_the_answer_its_post_processing():
    task = Task("r1", "line-rest", "python", prefix="def f(x):\n    return g(h(x, ", middle="1))", suffix="\n")
    engine, completion = run(" 1))   \n\n", task)  # double blank at the join, trailing blank lines
    assert engine.requests[0].prefix == task.prefix and engine.requests[0].suffix == "\n"
    assert completion.text == "1))" and (completion.start, completion.end) == (len(task.prefix),) * 2


def test_show_rate_and_syntax_clean_share_of_the_shown():
    rows = [score(WHOLE_LINE, run(text)[1]) for text in ("    total *= 2\n", "    total *= 2", "    total *= (2\n")]
    assert [r["shown"] for r in rows] == [True, False, False]  # the last one is broken: never shown
    summary = summarize(rows)
    assert abs(summary["show_rate"] - 1 / 3) < 1e-9 and summary["shown_syntax_clean"] == 1.0
    assert summarize([dict(rows[1])])["shown_syntax_clean"] is None  # nothing shown: no share


def test_every_task_is_encoded_afresh_as_the_ar_baseline_is():
    # the prefix cache would carry a task's prompt over to the next one (HumanEval's tasks share their problem's
    # prompt), an advantage the AR baseline does not get: encode times compare like with like
    engine, _ = run("    total *= 2\n")
    assert engine.requests[0].reuse_prefix is False
