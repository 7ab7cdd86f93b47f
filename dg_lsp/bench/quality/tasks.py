"""Benchmark tasks: one hole in one file, and the loaders for HumanEval-Infilling and custom JSONL.

A task is `prefix + middle + suffix` = the original file; the model sees prefix and suffix and
must produce `middle`. HumanEval-style tasks also carry `test` and `entry_point` and are
scored by running them (`executor.py`).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path

KINDS = ("line-rest", "single-line", "multi-line", "body", "random-span")

HUMANEVAL_SPLITS = {
    "single-line": "HumanEval-SingleLineInfilling.jsonl.gz",
    "multi-line": "HumanEval-MultiLineInfilling.jsonl.gz",
    "random-span-light": "HumanEval-RandomSpanInfillingLight.jsonl.gz",
}
# The kind each split's holes are, in the vocabulary of mined holes.
_SPLIT_KIND = {"single-line": "single-line", "multi-line": "multi-line", "random-span-light": "random-span"}


@dataclass(frozen=True)
class Task:
    task_id: str
    kind: str
    language: str
    prefix: str
    middle: str  # the ground truth
    suffix: str
    path: str = ""  # file the hole was mined from (relative to the repository), if any
    test: str | None = None  # HumanEval `check(candidate)` source; None: no pass@1
    entry_point: str | None = None

    @property
    def original(self) -> str:
        return self.prefix + self.middle + self.suffix

    def to_json(self) -> dict:
        return asdict(self)


DATA_DIR = Path(__file__).resolve().parent / "data"  # shipped with the package (data/README.md, MIT)


def default_data_dir() -> Path:
    """$DG_LSP_HUMANEVAL_DIR, else the copy shipped in the package (`bench/quality/data/`)."""
    if os.environ.get("DG_LSP_HUMANEVAL_DIR"):
        return Path(os.environ["DG_LSP_HUMANEVAL_DIR"])
    return DATA_DIR


def infer_kind(middle: str) -> str:
    """Hole kind of a middle with no declared kind: no newline, one whole line, or several lines."""
    if "\n" not in middle:
        return "line-rest"
    if middle.endswith("\n") and middle.count("\n") == 1:
        return "single-line"
    return "multi-line"


def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def task_from_record(rec: dict, kind: str | None = None, language: str = "python") -> Task:
    """A Task from a HumanEval-Infilling record (task_id, prompt, canonical_solution, suffix, test, entry_point)."""
    missing = [k for k in ("task_id", "prompt", "canonical_solution", "suffix") if k not in rec]
    if missing:
        raise ValueError(f"task {rec.get('task_id', '?')}: missing fields {missing}")
    middle = rec["canonical_solution"]
    return Task(
        task_id=str(rec["task_id"]),
        kind=rec.get("kind") or kind or infer_kind(middle),
        language=rec.get("language") or language,
        prefix=rec["prompt"],
        middle=middle,
        suffix=rec["suffix"],
        test=rec.get("test") or None,
        entry_point=rec.get("entry_point") or None,
    )


def load_tasks_jsonl(path: str | Path, kind: str | None = None) -> list[Task]:
    """Custom tasks: a JSONL (optionally .gz) of HumanEval-Infilling records; optional `kind`, `language`."""
    return [task_from_record(rec, kind=kind) for rec in _read_jsonl(Path(path))]


def load_humaneval(split: str, data_dir: str | Path | None = None) -> list[Task]:
    if split not in HUMANEVAL_SPLITS:
        raise ValueError(f"unknown split {split!r}; choose from {sorted(HUMANEVAL_SPLITS)}")
    path = Path(data_dir or default_data_dir()) / HUMANEVAL_SPLITS[split]
    if not path.is_file():
        where = "--data-dir" if data_dir else "$DG_LSP_HUMANEVAL_DIR" if os.environ.get("DG_LSP_HUMANEVAL_DIR") else \
            "the package data (reinstall dg-lsp)"
        raise FileNotFoundError(f"{path} not found (from {where})")
    return load_tasks_jsonl(path, kind=_SPLIT_KIND[split])


CURSORS = ("next-line", "blank-line")


def on_a_blank_line(task: Task) -> Task:
    """The same document and hole, with the editor's cursor on a blank line opened where the hole's lines go, at the
    first one's indentation (an editor after Enter): the first line's indentation joins the prefix, the last line
    break the suffix. A hole of whole lines is otherwise seen with the cursor at the start of the line after it,
    which has text after the cursor (a one-line suggestion there). Other holes are left as they are."""
    middle = task.middle
    if not (task.prefix.endswith("\n") or task.prefix == "") or not middle.endswith("\n") or not middle.strip():
        return task
    indent = middle[:len(middle) - len(middle.lstrip(" \t"))]
    return replace(task, prefix=task.prefix + indent, middle=middle[len(indent):-1], suffix="\n" + task.suffix)


def subsample(tasks: list[Task], n: int | None, seed: int) -> list[Task]:
    """At most `n` tasks, a seeded random choice kept in the original order (all when n is None)."""
    import random

    if n is None or n >= len(tasks):
        return list(tasks)
    picked = sorted(random.Random(seed).sample(range(len(tasks)), n))
    return [tasks[i] for i in picked]
