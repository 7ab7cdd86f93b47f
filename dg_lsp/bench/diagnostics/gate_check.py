"""What the syntax gate (completion/gate.py `clean_cut`) does to texts whose worth is known, with no model run.

    python -m dg_lsp.bench.diagnostics.gate_check [--seed 5] [--sizes 1033,600,400,400,200] [--json OUT]
    python -m dg_lsp.bench.diagnostics.gate_check --answers REPORT.json [REPORT.json ...]
    python -m dg_lsp.bench.diagnostics.gate_check --repo DIR --language L [--per-kind 300] [--seed 11]

Truths (the default): the reference answer of each task, in the server's view of its document (the window and the
scope the server builds), through the gate and Python's name check (`completion/unbound.py`, on the whole
document), for the HumanEval-Infilling single- and multi-line splits and the
held-out stdlib packages' single-line, line-rest and multi-line holes. A right answer the gate cuts or drops is an
answer the editor can never show; prints how many, and which.

Answers (`--answers`): the ungated answers a benchmark report holds (its `ar` and `nosuffix` rows: the AR twin's
line and the suffix-blind fill are shaped but never gated), through the gate: how many it shows, how many of those
leave the document syntax-invalid (the benchmark's own check, on the whole file), how many are the exact answer.
The report's command is re-read to rebuild its tasks (the same seed and sizes). Run it in two checkouts to compare
two gates on the same answers.

Repository (`--repo`): holes mined from a code tree as `dg-lsp bench repo` mines them (single-line and line-rest,
`--per-kind` each; multi-line, half as many), in files that parse cleanly. Each hole's right answer goes through
post-processing and the gate (`finish_suggestion`, in the server's view); at each single-line hole, so does a wrong
line: another line of the same file at the right answer's indentation (seeded), the kind of plausible line a model
writes in the wrong place. Prints per kind how many right answers are shown whole and shown at all, and how many
wrong lines are shown and how many of those leave the file syntax-invalid (the benchmark's own check): the broken
suggestions a user would see.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter

SETS = (("humaneval", "single-line"), ("humaneval", "multi-line"), ("heldout", "single-line"),
        ("heldout", "line-rest"), ("heldout", "multi-line"))


def _gate(task, text: str) -> str:
    from dg_lsp.bench.quality.runners import editor_view
    from dg_lsp.completion.postprocess import gate_suggestion

    view = editor_view(task, 1024)
    # as `postprocess.finish_suggestion` gates, the names read on the whole document
    return gate_suggestion(text, view.prefix, view.ctx, task.prefix + task.suffix)


def truths(seed: int, sizes: list[int]) -> list[dict]:
    from dg_lsp.bench.quality.sources import load_tasks

    rows = []
    for (source, kind), n in zip(SETS, sizes):
        if source == "humaneval":
            args = argparse.Namespace(command="humaneval", split=kind, data_dir=None, n=n, seed=seed)
        else:
            args = argparse.Namespace(command="heldout", languages=None, kinds=kind, per_kind=n, seed=seed, n=None,
                                      path=None)
        tasks = load_tasks(args)[0]
        rejected = [t.task_id for t in tasks if _gate(t, t.middle) != t.middle]
        rows.append({"set": f"{source} {kind}", "n": len(tasks), "rejected": len(rejected), "tasks": rejected})
        print(f"{source} {kind}: {len(rejected)} of {len(tasks)} right answers cut or not shown", flush=True)
        for task_id in rejected:
            print(f"    {task_id}")
    return rows


def answers(paths: list[str]) -> list[dict]:
    from dg_lsp.bench.cli import build_parser
    from dg_lsp.bench.metrics import syntax_valid
    from dg_lsp.bench.quality.sources import load_tasks

    rows = []
    for path in paths:
        report = json.load(open(path))
        tasks = load_tasks(build_parser().parse_args(shlex.split(report["command"])[2:]))[0]
        by_id = {t.task_id: t for t in tasks}
        count = Counter()
        for sample in report["samples"]:
            if not sample["label"].startswith(("ar", "nosuffix")) or not sample["completion"]:
                continue
            task = by_id[sample["task_id"]]
            shown = _gate(task, sample["completion"])
            count["answers"] += 1
            count["shown"] += bool(shown)
            count["shown_invalid"] += bool(shown) and syntax_valid(
                task.original, task.prefix + shown + task.suffix, task.language) is False
            count["shown_exact"] += bool(shown) and shown == task.middle
        rows.append({"report": path, **count})
        print(f"{path}: {dict(count)}", flush=True)
    return rows


def repo(root: str, language: str, per_kind: int, seed: int) -> list[dict]:
    import random

    from dg_lsp.bench.metrics import syntax_valid
    from dg_lsp.bench.quality.files import discover_many
    from dg_lsp.bench.quality.mining import mine
    from dg_lsp.bench.quality.runners import editor_view
    from dg_lsp.completion.postprocess import finish_suggestion
    from dg_lsp.context.syntax import error_spans

    tasks = mine(discover_many([root], {language}),
                 {"single-line": per_kind, "line-rest": per_kind, "multi-line": per_kind // 2}, seed=seed)
    rnd = random.Random(seed)
    count = Counter()
    for task in tasks:
        if error_spans(task.original, language):
            continue
        view = editor_view(task, 1024)
        texts = {"right": task.middle}
        if task.kind == "single-line":
            indent = task.middle[:len(task.middle) - len(task.middle.lstrip())]
            others = [line for line in (task.prefix + task.suffix).split("\n")
                      if line.strip() and line.startswith(indent) and not line[len(indent):len(indent) + 1].isspace()
                      and line + "\n" != task.middle]
            if others:
                texts["wrong"] = rnd.choice(others) + "\n"
        for name, text in texts.items():
            shown = finish_suggestion(text, [], view.prefix, view.ctx, selection=False, max_lines=8,
                                      document=task.prefix + task.suffix)
            count[(task.kind, name)] += 1
            count[(task.kind, name, "whole")] += shown == text
            count[(task.kind, name, "shown")] += bool(shown)
            count[(task.kind, name, "shown_invalid")] += bool(shown) and syntax_valid(
                task.original, task.prefix + shown + task.suffix, language) is False
    rows = []
    for kind in ("single-line", "line-rest", "multi-line"):
        for name in ("right", "wrong"):
            if count[(kind, name)]:
                row = {"kind": kind, "text": name, "n": count[(kind, name)],
                       **{k: count[(kind, name, k)] for k in ("whole", "shown", "shown_invalid")}}
                rows.append(row)
                print(f"{kind} {name}: {row['n']} texts, {row['whole']} shown whole, {row['shown']} shown, "
                      f"{row['shown_invalid']} of those leave the file syntax-invalid", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.gate_check", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, help="the tasks' seed: 5 by default, 11 with --repo")
    p.add_argument("--sizes", default="1033,600,400,400,200",
                   help="tasks per set: HumanEval single, multi; held-out single, line-rest, multi")
    p.add_argument("--answers", nargs="+", metavar="REPORT", help="gate the ungated answers of these reports")
    p.add_argument("--repo", metavar="DIR", help="mine holes from this code tree (with --language)")
    p.add_argument("--language", help="the --repo files' language (a canonical name: javascript, cpp, ...)")
    p.add_argument("--per-kind", type=int, default=300, help="--repo: single-line and line-rest holes each")
    p.add_argument("--json", help="write the rows here")
    args = p.parse_args(argv)
    if args.repo:
        if not args.language:
            p.error("--repo needs --language")
        rows = repo(args.repo, args.language, args.per_kind, 11 if args.seed is None else args.seed)
    elif args.answers:
        rows = answers(args.answers)
    else:
        sizes = [int(x) for x in args.sizes.split(",")]
        if len(sizes) != len(SETS):
            p.error(f"--sizes takes {len(SETS)} numbers")
        rows = truths(5 if args.seed is None else args.seed, sizes)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
