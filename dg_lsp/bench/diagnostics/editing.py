"""What a user's edits get from `dg-lsp serve`, driven over LSP as an editor drives it, with each answer applied to
its document: edits the quality benchmarks do not make, since they only ever fill a hole cut out of a file.

    python -m dg_lsp.bench.diagnostics.editing [PATH ...] [--files 9] [--per-file 8] [--seed 0]
        [--scenarios select,newline,blank,rest] [--server-cwd DIR] [--model DIR]
        [--check-with node|tsc|tsc-names|gcc|javac|go|cargo|php|ruby|luac|bash|pyflakes|mypy] [--json OUT]
    python -m dg_lsp.bench.diagnostics.editing --recheck RUN.json
        --check-with node|tsc|tsc-names|gcc|javac|go|cargo|php|ruby|luac|bash|pyflakes|mypy

PATHs are source files or directories (default: the held-out stdlib packages, `train.corpus.HELD_OUT_PACKAGES`), in
any language the server parses (`context.languages.EXTENSIONS`). Positions: one-line simple statements alone on their
line inside function bodies, after the first, in files that compile (Python) or parse without an error or missing
node (tree-sitter, the other languages); `--per-file` of them per file, seeded. At each position, each scenario:
- select: the statement's code selected and `dgLsp.fillSelection` run (the editor applies what it answers);
- newline: Enter at the end of the statement's line, a blank line at its indentation, nothing removed (a line added);
- blank: the statement deleted, the cursor on its blank line (`bench ... --cursor blank-line`'s view);
- rest: the statement cut after some of its code, the rest deleted (typing it).

Per scenario it prints: positions, shown (a selection: applied), broken (the file compiled, and does not with the
answer applied; the other languages: it parsed clean and does not), repeats (a suggestion at a line's start whose
lines are the next lines of the file: accepted, it doubles them), exact (the deleted text back; not for newline)
and the p50 latency. A selection fill the editor would not be sent counts its reason. `--server-cwd DIR` runs the
server from another checkout (`python -m dg_lsp` there), to compare two. `--check-with` adds the language's own
compiler's word (`compilers.py`: Node, tsc (early errors; `tsc-names`: undeclared names), gcc, javac, go, cargo,
php -l, ruby -c, luac -p, bash -n, pyflakes, mypy): how many shown answers break a file that compiler passed (judged: the
shown answers whose document, without them, that compiler passed), which a parse does not see (a name declared
twice, an undeclared name), and the rows keep its new errors;
`--recheck` does that for an earlier run's rows.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from dg_lsp.bench.diagnostics.compilers import CHECKERS, available

SCENARIOS = ("select", "newline", "blank", "rest")


# tree-sitter node types of one-line simple statements, over the grammars the server has
SIMPLE_STATEMENTS = frozenset({
    "expression_statement", "return_statement", "lexical_declaration", "variable_declaration", "declaration",
    "local_variable_declaration", "let_declaration", "short_var_declaration", "assignment_statement", "inc_statement",
    "dec_statement", "throw_statement", "var_declaration", "const_declaration"})
# Ruby's statements are its expressions
RUBY_STATEMENTS = frozenset({"assignment", "operator_assignment", "call", "return"})
# a call is one of Lua's statements
LUA_STATEMENTS = SIMPLE_STATEMENTS | {"function_call"}
# Bash's: a command, an assignment, a `local`
BASH_STATEMENTS = frozenset({"command", "variable_assignment", "declaration_command"})


def source_files(paths: list[str]) -> list[tuple[Path, str]]:
    """(file, language) of each file under `paths` whose extension the server knows."""
    from dg_lsp.context.languages import language_for_path

    out = []
    for path in map(Path, paths):
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            language = language_for_path(str(file))
            if language and file.is_file():
                out.append((file, language))
    return out


def statements(text: str, rng: random.Random, per_file: int, language: str = "python") -> list[int]:
    """0-based lines of one-line simple statements alone on their line in function bodies (after the first: in
    Python not a docstring)."""
    rows = set()
    if language == "python":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for st in node.body[1:]:
                    simple = isinstance(st, (ast.Assign, ast.Return, ast.Expr, ast.AugAssign, ast.AnnAssign))
                    literal = isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant)  # a string as a comment
                    if simple and not literal and st.lineno == st.end_lineno:
                        rows.add(st.lineno - 1)
    else:
        rows = _tree_sitter_statements(text, language)
    rows = sorted(rows)
    rng.shuffle(rows)
    return rows[:per_file]


def _tree_sitter_statements(text: str, language: str) -> set[int]:
    from dg_lsp.context.languages import get_parser

    lines = text.split("\n")
    rows, stack = set(), [get_parser(language).parse(text.encode("utf-8")).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        body = node.child_by_field_name("body") if "function" in node.type or "method" in node.type else None
        if body is None and language == "lua" and node.type in ("function_declaration", "function_definition"):
            body = next((child for child in node.named_children if child.type == "block"), None)  # no field
        if body is None:
            continue
        if [child.type for child in body.named_children] == ["statement_list"]:  # Go's block holds one
            body = body.named_children[0]
        for st in [child for child in body.named_children if "comment" not in child.type][1:]:
            row = st.start_point.row
            simple = st.type in {"ruby": RUBY_STATEMENTS, "lua": LUA_STATEMENTS, "bash": BASH_STATEMENTS}.get(
                language, SIMPLE_STATEMENTS)
            if simple and row == st.end_point.row and lines[row].strip() == st.text.decode():
                rows.add(row)
    return rows


def edit(text: str, row: int, scenario: str, rng: random.Random):
    """(document, hole start, selection end or None, deleted text or None) for a scenario at a statement's line;
    `rng` draws where `rest` cuts."""
    lines = text.split("\n")
    line = lines[row]
    indent = line[:len(line) - len(line.lstrip())]
    code = line[len(indent):]
    start = sum(len(item) + 1 for item in lines[:row]) + len(indent)
    if scenario == "select":
        return text, start, start + len(code), code
    if scenario == "newline":
        at = start + len(code)
        return text[:at] + "\n" + indent + text[at:], at + 1 + len(indent), None, None
    if scenario == "blank":
        return text[:start] + text[start + len(code):], start, None, code
    if len(code) < 6:
        return None
    cut = rng.randint(2, len(code) - 2)
    return text[:start + cut] + text[start + len(code):], start + cut, None, code[cut:]


def compiles(text: str, language: str = "python") -> bool:
    """Python: the text parses. Other languages: tree-sitter finds no ERROR or MISSING node in it."""
    if language != "python":
        from dg_lsp.context.syntax import syntax_error_count

        return syntax_error_count(text, language) == 0
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def repeats_below(doc: str, start: int, text: str) -> bool:
    """The applied answer's lines at a line's start are the next lines of the file again. Its own reading, on the
    whole document, not the server's rule (`postprocess.repeats_the_code_below`), which it checks."""
    line_prefix = doc[doc.rfind("\n", 0, start) + 1:start]
    if line_prefix.strip() or not text.strip():
        return False
    written = [line.rstrip() for line in (line_prefix + text).split("\n") if line.strip()]
    below = [line.rstrip() for line in doc[start:].split("\n")[1:] if line.strip()]
    return below[:len(written)] == written


class Session:
    """`dg-lsp serve` over stdio, initialized and ready, as lsp_runner starts it (`notebooks`: as an editor that
    syncs notebooks, diagnostics/notebooks.py)."""

    def __init__(self, cwd: str | None, model: str | None = None, notebooks: bool = False):
        from dg_lsp.bench.lsp_client import LspClient

        argv = [sys.executable, "-m", "dg_lsp", "serve", "--device", "cpu"] + (["--model", model] if model else [])
        self.client = LspClient(argv, settings={}, cwd=cwd)
        capabilities = {"general": {"positionEncodings": ["utf-16"]},
                        "workspace": {"configuration": True, "applyEdit": True}}
        if notebooks:
            capabilities["notebookDocument"] = {"synchronization": {}}
        self.client.request("initialize", {"processId": os.getpid(), "rootUri": "file:///tmp/dg-lsp-editing",
                                           "capabilities": capabilities}, timeout=600)
        self.client.notify("initialized", {})
        deadline = time.monotonic() + 600
        while (status := self.status()).get("state") != "ready":
            if status.get("state") == "error" or time.monotonic() > deadline:
                raise RuntimeError(f"dg-lsp serve did not load its model: {status.get('error')}")
            time.sleep(0.2)

    def status(self) -> dict:
        return self.client.request("workspace/executeCommand", {"command": "dgLsp.status", "arguments": []}) or {}

    def answer(self, uri: str, doc: str, start: int, end: int | None,
               language: str = "python") -> tuple[str, int, int, str | None]:
        """(text, range start, range end, refusal reason) as the editor would apply it."""
        from dg_lsp.bench.quality.lsp_runner import first_item, offset_of, utf16_position

        self.client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1,
                                                                     "text": doc}})
        try:
            if end is not None:
                rng = {"start": utf16_position(doc, start), "end": utf16_position(doc, end)}
                res = self.client.request("workspace/executeCommand", {"command": "dgLsp.fillSelection",
                                                                       "arguments": [{"uri": uri, "range": rng}]}) or {}
                # the client answers applyEdit with applied: false, so a fill the editor was sent says so
                if res.get("reason", "").startswith("the editor did not apply"):
                    return res.get("text", ""), start, end, None
                return "", start, start, res.get("reason", "no answer")
            res = self.client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": utf16_position(doc, start), "context": {"triggerKind": 1}})
            item = first_item(res)
            if item is None:
                return "", start, start, None
            text = item["insertText"] if isinstance(item["insertText"], str) else item["insertText"]["value"]
            if item.get("range"):
                return text, offset_of(doc, item["range"]["start"]), offset_of(doc, item["range"]["end"]), None
            return text, start, start, None
        finally:
            self.client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def close(self) -> None:
        self.client.close()


def run(args) -> list[dict]:
    from dg_lsp.train.corpus import HELD_OUT_PACKAGES, stdlib_dir

    paths = args.paths or [str(stdlib_dir() / name) for name in HELD_OUT_PACKAGES]
    rng = random.Random(args.seed)
    files = [(f, language) for f, language in source_files(paths)
             if compiles(f.read_text(encoding="utf-8", errors="replace"), language)]
    rng.shuffle(files)
    files = files[:args.files]
    session, rows, count = Session(args.server_cwd, args.model), [], 0
    try:
        for path, language in files:
            text = path.read_text(encoding="utf-8")
            for row in statements(text, rng, args.per_file, language):
                for scenario in args.scenarios:
                    # its own draw: the positions and the cuts do not depend on which scenarios run
                    made = edit(text, row, scenario, random.Random(f"{args.seed}:{path.name}:{row}"))
                    if made is None:
                        continue
                    doc, start, end, deleted = made
                    count += 1
                    t0 = time.perf_counter()
                    new, s, e, reason = session.answer(f"file:///tmp/dg-lsp-editing/{count}/{path.name}", doc, start,
                                                       end, language)
                    ms = (time.perf_counter() - t0) * 1000
                    applied = doc[:s] + new + doc[e:]
                    rows.append({"file": str(path), "language": language, "line": row + 1, "scenario": scenario,
                                 "deleted": deleted, "text": new, "range": [s, e], "reason": reason, "ms": ms,
                                 "shown": bool(new.strip()),
                                 "broken": bool(new.strip()) and compiles(doc, language)
                                 and not compiles(applied, language),
                                 "repeats": scenario != "select" and repeats_below(doc, s, new),
                                 "exact": deleted is not None and bool(new.strip()) and new.strip() == deleted.strip()})
                    if args.progress:
                        print(f"{scenario} {path.name}:{row + 1} {new[:50]!r}", file=sys.stderr, flush=True)
    finally:
        session.close()
    return rows


def check_with(rows: list[dict], checker: str, seed: int) -> None:
    """Each shown row's `compiler_judged`, `compiler_broken` and `compiler_errors` (`compilers.new_errors`): the
    document as the scenario made it, and with the answer applied over its range, through `checker` (judged: it
    passed the document without the answer)."""
    from dg_lsp.bench.diagnostics.compilers import new_errors

    shown = [r for r in rows if r["shown"]]
    triples = []
    for r in shown:
        text = Path(r["file"]).read_text(encoding="utf-8")
        doc, start, end, _ = edit(text, r["line"] - 1, r["scenario"],
                                  random.Random(f"{seed}:{Path(r['file']).name}:{r['line'] - 1}"))
        s, e = r.get("range") or (start, start if end is None else end)
        triples.append((doc, doc[:s] + r["text"] + doc[e:], r["file"]))
    for r, errors in zip(shown, new_errors(triples, checker)):
        r["compiler_judged"] = errors is not None  # the compiler passed the document without the answer
        r["compiler_broken"], r["compiler_errors"] = bool(errors), errors or []


def report(rows: list[dict], checker: str | None = None) -> str:
    column = f" broken ({checker}) | judged ({checker}) |" if checker else ""
    out = [f"| scenario | positions | shown / applied | broken |{column} repeats the code below | exact | p50 ms |",
           "|---|---|---|---|---|---|---|" + ("---|---|" if checker else "")]
    for scenario in SCENARIOS:
        these = [r for r in rows if r["scenario"] == scenario]
        if not these:
            continue
        count = Counter()
        for r in these:
            count.update(k for k in ("shown", "broken", "repeats", "exact", "compiler_broken", "compiler_judged")
                         if r.get(k))
        exact = "-" if scenario == "newline" else str(count["exact"])
        compiler = f" {count['compiler_broken']} | {count['compiler_judged']} |" if checker else ""
        out.append(f"| {scenario} | {len(these)} | {count['shown']} | {count['broken']} |{compiler} {count['repeats']} "
                   f"| {exact} | {statistics.median(r['ms'] for r in these):,.0f} |")
    reasons = Counter(r["reason"] for r in rows if r["reason"])
    if reasons:
        out.append("")
        out += [f"selection fills not sent to the editor: {n} x {reason}" for reason, n in reasons.most_common()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.editing", description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="source files or directories (default: the held-out stdlib packages)")
    parser.add_argument("--files", type=int, default=9, help="files drawn, seeded")
    parser.add_argument("--per-file", type=int, default=8, help="statements per file")
    parser.add_argument("--scenarios", type=lambda s: [x for x in s.split(",") if x], default=list(SCENARIOS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--server-cwd", default=None, help="run `python -m dg_lsp serve` from this checkout")
    parser.add_argument("--model", default=None, help="the server's --model (default: the embedded model)")
    parser.add_argument("--json", default=None, help="write the rows here")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--check-with", choices=CHECKERS, default=None,
                        help="also judge each shown answer by the language's own compiler (diagnostics/compilers.py)")
    parser.add_argument("--recheck", metavar="JSON", default=None,
                        help="no server: the rows of an earlier run's --json, judged again (with --check-with)")
    args = parser.parse_args(argv)
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios: {', '.join(sorted(unknown))}")
    if args.check_with and (why := available(args.check_with)):
        parser.error(f"--check-with {args.check_with}: {why}")
    if args.recheck:
        earlier = json.loads(Path(args.recheck).read_text(encoding="utf-8"))
        rows, seed = earlier["rows"], earlier.get("seed", 0)
    else:
        rows, seed = run(args), args.seed
    if args.check_with:
        check_with(rows, args.check_with, seed)
    if args.json:  # first: a report piped into `head` may stop the print
        Path(args.json).write_text(json.dumps({"command": " ".join(sys.argv), "seed": seed, "rows": rows}, indent=1),
                                   encoding="utf-8")
    print(report(rows, args.check_with))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
