"""Mine holes from a repository's source files with tree-sitter, seeded and deterministic.

Kinds (see `tasks.KINDS`):
- `line-rest`: the rest of a code line from a random column (no newline);
- `single-line`: one whole code line, newline included (HumanEval-Infilling's single-line);
- `multi-line`: 2-8 whole lines made of consecutive statements of one block;
- `body`: a whole function body (after a Python docstring; between the braces elsewhere);
- `random-span`: a random character span inside a function body (may cut mid-token).
"Code line" excludes blank lines, comments, lines inside strings and bracket-only lines.
Every hole satisfies `prefix + middle + suffix == file text`. Files that do not parse
cleanly are skipped, so a completion's syntax check measures the completion alone.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from dg_lsp.bench.quality.files import SourceFile
from dg_lsp.bench.quality.tasks import KINDS, Task
from dg_lsp.context.languages import get_parser

BLOCK_TYPES = frozenset({"block", "statement_block", "compound_statement", "statement_list"})
FUNCTION_TYPES = frozenset({
    "function_definition", "function_declaration", "method_definition", "method_declaration",
    "constructor_declaration", "function_item", "function_expression", "arrow_function",
    "generator_function_declaration",
})
MIN_MULTI_LINES, MAX_MULTI_LINES = 2, 8
MAX_BODY_LINES = 30
MIN_SPAN_CHARS, MAX_SPAN_CHARS = 4, 160

Span = tuple[int, int]  # character offsets [start, end) of the middle


class ParsedFile:
    """A source file with its line offsets, syntax tree, and hole candidates per kind (computed lazily)."""

    def __init__(self, source: SourceFile):
        self.source = source
        self.text = source.text
        self.lines = self.text.splitlines(keepends=True)
        self.offsets = [0]
        for line in self.lines:
            self.offsets.append(self.offsets[-1] + len(line))
        parser = get_parser(source.language)
        self.tree = parser.parse(self.text.encode("utf-8")) if parser else None
        self._candidates: dict[str, list[Span]] = {}

    @property
    def parses(self) -> bool:
        return self.tree is not None and not self.tree.root_node.has_error

    def rows(self, first: int, last: int) -> Span:
        """Span of whole lines first..last (inclusive), newline of the last included."""
        return self.offsets[first], self.offsets[last + 1]

    def is_code_line(self, row: int) -> bool:
        line = self.lines[row].rstrip("\r\n")
        stripped = line.strip()
        if sum(ch.isalnum() for ch in stripped) < 2:
            return False
        col = len(line[: len(line) - len(line.lstrip())].encode("utf-8"))
        node = self.tree.root_node.descendant_for_point_range((row, col), (row, col + 1))
        while node is not None:
            if "comment" in node.type or "string" in node.type:
                return False
            node = node.parent
        return True

    def candidates(self, kind: str) -> list[Span]:
        if kind not in self._candidates:
            self._candidates[kind] = list(getattr(self, "_" + kind.replace("-", "_"))())
        return self._candidates[kind]

    def _code_rows(self) -> list[int]:
        return [r for r in range(len(self.lines)) if self.is_code_line(r)]

    def _single_line(self) -> Iterable[Span]:
        return (self.rows(r, r) for r in self._code_rows())

    def _line_rest(self) -> Iterable[Span]:
        # One span per line; the column is chosen at pick time (see `_cut_line`).
        return (self.rows(r, r) for r in self._code_rows())

    def _multi_line(self) -> Iterable[Span]:
        seen: set[Span] = set()
        for block in _walk(self.tree.root_node, BLOCK_TYPES):
            stmts = [c for c in block.named_children if c.type not in BLOCK_TYPES]
            for i, first in enumerate(stmts):
                if not self._starts_line(first):
                    continue
                for last in stmts[i:]:
                    n_lines = last.end_point[0] - first.start_point[0] + 1
                    if n_lines > MAX_MULTI_LINES:
                        break
                    if n_lines >= MIN_MULTI_LINES and self._ends_line(last):
                        seen.add(self.rows(first.start_point[0], last.end_point[0]))
        return sorted(seen)

    def _body(self) -> Iterable[Span]:
        for fn in _walk(self.tree.root_node, FUNCTION_TYPES):
            span = self._body_span(fn)
            if span is not None:
                yield span

    def _random_span(self) -> Iterable[Span]:
        return self._body()  # the span itself is cut at pick time (see `_cut_span`)

    def _body_span(self, fn) -> Span | None:
        body = fn.child_by_field_name("body")
        if body is None:
            return None
        if body.type == "block" and self.source.language == "python":
            stmts = body.named_children
            if stmts and stmts[0].type == "expression_statement" and stmts[0].named_children \
                    and stmts[0].named_children[0].type == "string":
                stmts = stmts[1:]  # keep the docstring in the prompt, as HumanEval does
            if not stmts or not self._starts_line(stmts[0]) or not self._ends_line(stmts[-1]):
                return None
            first, last = stmts[0].start_point[0], stmts[-1].end_point[0]
        else:
            if self.text_at(body)[:1] != "{" or self.text_at(body)[-1:] != "}":
                return None
            first, last = body.start_point[0] + 1, body.end_point[0] - 1
            if self.lines[body.start_point[0]].rstrip()[-1:] != "{" \
                    or self.lines[body.end_point[0]].strip()[:1] != "}":
                return None
        if last < first or last - first + 1 > MAX_BODY_LINES:
            return None
        span = self.rows(first, last)
        return span if self.text[span[0]:span[1]].strip() else None

    def text_at(self, node) -> str:
        return node.text.decode("utf-8", "replace")

    def _starts_line(self, node) -> bool:
        row, col = node.start_point
        return not self.lines[row].encode("utf-8")[:col].strip()

    def _ends_line(self, node) -> bool:
        row, col = node.end_point
        return row < len(self.lines) and not self.lines[row].encode("utf-8")[col:].strip()


def _walk(node, types: frozenset[str]):
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in types:
            yield n
        stack.extend(reversed(n.children))


def _cut_line(text: str, span: Span, rng: random.Random) -> Span | None:
    """Rest of the line from a random column after the indentation; keeps at least one word character."""
    start, end = span
    line = text[start:end].rstrip("\r\n")
    indent = len(line) - len(line.lstrip())
    cols = [c for c in range(indent + 1, len(line)) if any(ch.isalnum() for ch in line[c:])]
    if not cols:
        return None
    return start + rng.choice(cols), start + len(line)


def _cut_span(text: str, span: Span, rng: random.Random) -> Span | None:
    start, end = span
    if end - start < MIN_SPAN_CHARS:
        return None
    length = rng.randint(MIN_SPAN_CHARS, min(MAX_SPAN_CHARS, end - start))
    lo = start + rng.randrange(0, end - start - length + 1)
    return (lo, lo + length) if text[lo:lo + length].strip() else None


def _make_task(parsed: ParsedFile, kind: str, span: Span) -> Task:
    text, (start, end) = parsed.text, span
    row = text.count("\n", 0, start)
    col = start - (text.rfind("\n", 0, start) + 1)
    return Task(task_id=f"{parsed.source.path}:{row + 1}:{col + 1}/{kind}", kind=kind,
                language=parsed.source.language, prefix=text[:start], middle=text[start:end],
                suffix=text[end:], path=parsed.source.path)


def mine(files: list[SourceFile], counts: dict[str, int], seed: int = 0) -> list[Task]:
    """`counts[kind]` holes of each kind for each language, spread over files round-robin.

    Deterministic for given files and seed: each (language, kind) has its own RNG seeded
    from a string (string seeds do not depend on PYTHONHASHSEED).
    """
    parsed: dict[str, ParsedFile | None] = {}

    def get(src: SourceFile) -> ParsedFile | None:
        if src.path not in parsed:
            pf = ParsedFile(src)
            parsed[src.path] = pf if pf.parses else None
        return parsed[src.path]

    tasks: list[Task] = []
    for language in sorted({f.language for f in files}):
        lang_files = [f for f in files if f.language == language]
        for kind in KINDS:
            want = counts.get(kind, 0)
            rng = random.Random(f"{seed}/{language}/{kind}")
            order = lang_files[:]
            rng.shuffle(order)
            used: set[tuple[str, Span]] = set()
            picked: list[Task] = []
            progress = True
            while len(picked) < want and progress:
                progress = False
                for src in order:
                    if len(picked) >= want:
                        break
                    pf = get(src)
                    free = [s for s in pf.candidates(kind) if (src.path, s) not in used] if pf else []
                    if not free:
                        continue
                    span = rng.choice(free)
                    used.add((src.path, span))
                    progress = True
                    if kind == "line-rest":
                        span = _cut_line(pf.text, span, rng)
                    elif kind == "random-span":
                        span = _cut_span(pf.text, span, rng)
                    if span is not None:
                        picked.append(_make_task(pf, kind, span))
            tasks.extend(picked)
    return tasks
