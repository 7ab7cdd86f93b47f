"""Score completions against their tasks: apply the edit, compare middles, check syntax, run tests."""

from __future__ import annotations

from dg_lsp.bench.quality import executor
from dg_lsp.bench import metrics
from dg_lsp.bench.quality.runners import TaskEdit
from dg_lsp.bench.quality.tasks import Task


def apply_completion(task: Task, completion: TaskEdit) -> tuple[str, str]:
    """(edited file, predicted middle) for a completion's edit of the document `prefix + suffix`.

    An edit that also rewrites text around the hole (an LSP item whose range covers part of the
    line) is accepted when it keeps that text: the middle is what it adds between prefix and
    suffix. If it changes the surrounding text, the middle is the whole replacement text and
    the file is scored as edited.
    """
    doc = task.prefix + task.suffix
    hole = len(task.prefix)
    start, end = sorted((max(0, min(completion.start, len(doc))), max(0, min(completion.end, len(doc)))))
    edited = doc[:start] + completion.text + doc[end:]
    if start <= hole <= end:
        before, after = doc[start:hole], doc[hole:end]
        text = completion.text
        if text.startswith(before) and text.endswith(after) and len(text) >= len(before) + len(after):
            return edited, text[len(before):len(text) - len(after)]
    return edited, completion.text


def score(task: Task, completion: TaskEdit) -> dict:
    """One sample's record (everything but the test outcome, which `run_tests` adds)."""
    edited, middle = apply_completion(task, completion)
    timings = completion.timings_ms or {}
    exact = metrics.exact_match(middle, task.middle) if completion.error is None else False
    shown = completion.error is None and bool(completion.text)
    return {
        "task_id": task.task_id,
        "kind": task.kind,
        "language": task.language,
        "completion": middle,
        "exact_match": exact,
        "edit_similarity": metrics.edit_similarity(middle, task.middle),
        "syntax_valid": metrics.syntax_valid(task.original, edited, task.language),
        # the editor got a suggestion (a non-empty item): the show rate, and the share of shown ones that
        # are syntax-clean, are what a user sees
        "shown": shown,
        # the items the editor can cycle through (the answer and its others), and whether any is exact
        "items": (1 + len(completion.others)) if shown else 0,
        "exact_in_items": exact or any(metrics.exact_match(apply_completion(task, other)[1], task.middle)
                                       for other in completion.others),
        "passed": None,
        "exec_status": None,
        "latency_ms": completion.latency_ms,
        "encode_ms": timings.get("encode"),
        "denoise_ms": timings.get("denoise"),
        "engine_ms": timings.get("engine", timings.get("total")),
        "steps": completion.steps,
        "tokens_per_forward": completion.tokens_per_forward,
        "generated_tokens": completion.generated_tokens,
        "error": completion.error,
        "_edited": edited,
    }


def run_tests(tasks: list[Task], samples: list[dict], limits: executor.Limits, workers: int = 2,
              progress=None) -> None:
    """Fill `passed` / `exec_status` of the samples whose task has a test (HumanEval-style)."""
    todo = [(t, s) for t, s in zip(tasks, samples) if t.test and t.entry_point]
    programs = [executor.humaneval_program(s["_edited"], t.test, t.entry_point) for t, s in todo]
    for (_, sample), result in zip(todo, executor.run_many(programs, limits, workers, progress)):
        sample["passed"] = result.passed
        sample["exec_status"] = result.status


def strip_private(samples: list[dict]) -> list[dict]:
    return [{k: v for k, v in s.items() if not k.startswith("_")} for s in samples]
