"""Where the quality suite's tasks come from: mined from directories or the held-out stdlib, HumanEval-Infilling,
or a JSONL file. Used by `dg-lsp bench` and by the probe (bench/diagnostics/probe.py)."""

from __future__ import annotations

import argparse

from dg_lsp.bench.quality import tasks as T
from dg_lsp.bench.quality.tasks import KINDS


def parse_kinds(text: str, per_kind: int) -> dict[str, int]:
    """`single-line=50,body` -> {"single-line": 50, "body": per_kind}; unknown kinds are an error."""
    counts = {}
    for item in filter(None, text.replace(" ", "").split(",")):
        kind, _, count = item.partition("=")
        if kind not in KINDS:
            raise argparse.ArgumentTypeError(f"unknown hole kind {kind!r}; kinds: {', '.join(KINDS)}")
        counts[kind] = int(count) if count else per_kind
    return counts


def load_tasks(args) -> tuple[list, dict]:
    """The tasks an argparse namespace of the quality suite names (its `command`, `path`, `kinds`, `split`,
    ...), seeded-subsampled to `args.n`, and a description of their source for the report."""
    if args.command in ("repo", "heldout"):
        from dg_lsp.bench.quality.files import discover_many
        from dg_lsp.bench.quality.mining import mine

        if args.command == "heldout":
            from dg_lsp.train.corpus import HELD_OUT_PACKAGES, stdlib_dir

            roots = [str(stdlib_dir() / name) for name in HELD_OUT_PACKAGES]
        else:
            roots = list(args.path)
        languages = set(args.languages.split(",")) if args.languages else None
        files = discover_many(roots, languages)
        found = mine(files, parse_kinds(args.kinds, args.per_kind), seed=args.seed)
        source = {"type": args.command, "path": ", ".join(roots), "split": None,
                  "files": len(files)}
    elif args.command == "humaneval":
        found = T.load_humaneval(args.split, args.data_dir)
        source = {"type": "humaneval", "path": args.data_dir or str(T.default_data_dir()), "split": args.split}
    else:
        found = T.load_tasks_jsonl(args.file)
        source = {"type": "tasks", "path": args.file, "split": None}
    source["seed"] = args.seed
    tasks = T.subsample(found, args.n, args.seed)
    cursor = getattr(args, "cursor", None) or "next-line"
    if cursor == "blank-line":
        tasks = [T.on_a_blank_line(t) for t in tasks]
        source["cursor"] = cursor
    return tasks, source
