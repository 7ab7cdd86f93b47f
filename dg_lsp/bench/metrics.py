"""Scores of one completion (exact match, edit similarity, syntax validity) and summaries of many.

Definitions:
- exact match: predicted middle == ground truth, trailing whitespace of each line ignored
  (line structure, so a missing newline, still counts);
- edit similarity: 1 - Levenshtein(pred, truth) / max(len(pred), len(truth)), on characters
  (1.0 when both are empty);
- syntax valid: the file with the completion applied has no more tree-sitter ERROR/MISSING
  nodes than the original file (None when no grammar exists for the language); for Python,
  also compiles when the original does (tree-sitter-python accepts an empty block, so a
  deleted function body would otherwise count as valid). Compiling does not run the code; for Ruby, Lua and
  Bash, where a `ruby` (a `luac`, a `bash`) is on PATH and `ruby -c` (`luac -p`, `bash -n`) accepts the original,
  that check alone judges (tree-sitter-ruby reads a stray `end` as a name, tree-sitter-bash a stray `fi` as a
  command; the gate's error count also counts `end`s at the wrong column, which these languages take:
  `context/end_blocks.py`);
- show rate: the share of requests that got a suggestion (a non-empty text, no error);
- shown syntax-clean: among the shown suggestions, the share that is syntax valid (the file as
  the editor holds it after accepting it). A syntax gate trades the first for the second.
"""

from __future__ import annotations

import ast
import functools
import math
import shutil
import subprocess
from collections.abc import Sequence

from dg_lsp.context.languages import get_parser
from dg_lsp.context.syntax import syntax_error_count


def normalize(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n"))


def exact_match(pred: str, truth: str) -> bool:
    return normalize(pred) == normalize(truth)


def levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def edit_similarity(pred: str, truth: str) -> float:
    longest = max(len(pred), len(truth))
    if longest == 0:
        return 1.0
    # Trim the common head and tail first: the DP is quadratic and most of a near-miss is shared.
    head = 0
    while head < min(len(pred), len(truth)) and pred[head] == truth[head]:
        head += 1
    tail = 0
    while tail < min(len(pred), len(truth)) - head and pred[-1 - tail] == truth[-1 - tail]:
        tail += 1
    distance = levenshtein(pred[head:len(pred) - tail], truth[head:len(truth) - tail])
    return 1.0 - distance / longest


# a language's own syntax check (nothing run), reading the text from stdin
_OWN_CHECKS = {"ruby": ("ruby", "-c", "-"), "lua": ("luac", "-p", "-"), "bash": ("bash", "-n")}


@functools.lru_cache(maxsize=256)
def own_check(text: str, language: str) -> bool | None:
    """Whether the language's own syntax check (`ruby -c`, `luac -p`, `bash -n`: nothing run) accepts `text`; None for
    another language, without the tool on PATH, or if it does not answer within 30 s."""
    command = _OWN_CHECKS.get(language)
    tool = shutil.which(command[0]) if command else None
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, *command[1:]], input=text.encode("utf-8", "surrogatepass"), capture_output=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.returncode == 0


def python_compiles(text: str) -> bool:
    try:
        compile(text, "<completion>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def syntax_valid(original: str, edited: str, language: str) -> bool | None:
    if get_parser(language) is None:
        return None
    if own_check(original, language) is True:
        return own_check(edited, language) is not False  # Ruby's and Lua's own reading, not the gate's error count
    if syntax_error_count(edited, language) > syntax_error_count(original, language):
        return False
    if language == "python" and python_compiles(original):
        return python_compiles(edited)
    return True


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100), like numpy's default; None for no values."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Sequence[float | bool | None]) -> float | None:
    xs = [float(v) for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def summarize(samples: list[dict]) -> dict:
    """One result row's metrics from its samples (see `report.py` for the field list)."""
    total = [s["latency_ms"] for s in samples]
    tokens = [s["generated_tokens"] for s in samples if s.get("generated_tokens") is not None]
    busy_ms = sum(s["latency_ms"] for s in samples if s.get("generated_tokens") is not None)
    return {
        "n": len(samples),
        "exact_match": mean([s["exact_match"] for s in samples]),
        "edit_similarity": mean([s["edit_similarity"] for s in samples]),
        "pass_at_1": mean([s["passed"] for s in samples]),
        "syntax_valid": mean([s["syntax_valid"] for s in samples]),
        "show_rate": mean([s.get("shown") for s in samples]),
        # items a shown answer had (an explicit request's others, --via lsp), and the share where any item is exact
        "items": mean([s.get("items") for s in samples if s.get("shown") and s.get("items") is not None]),
        "exact_in_items": mean([s.get("exact_in_items") for s in samples]),
        "shown_syntax_clean": mean([s["syntax_valid"] for s in samples if s.get("shown")]),
        "errors": sum(1 for s in samples if s.get("error")),
        "latency_ms": {
            "p50": percentile(total, 50), "p95": percentile(total, 95), "max": max(total, default=None),
            "mean": mean(total),
            "encode_p50": percentile([s.get("encode_ms") for s in samples], 50),
            "denoise_p50": percentile([s.get("denoise_ms") for s in samples], 50),
            "engine_p50": percentile([s.get("engine_ms") for s in samples], 50),
        },
        "steps": mean([s.get("steps") for s in samples]),
        "tokens_per_forward": mean([s.get("tokens_per_forward") for s in samples]),
        "generated_tokens": mean([s.get("generated_tokens") for s in samples]),
        "tokens_per_s": (sum(tokens) / (busy_ms / 1000.0)) if tokens and busy_ms > 0 else None,
    }
