"""A Ruby method (or a Lua function) being written with no `end` under it yet, with no model run: what the server
shows for its right text.

    python -m dg_lsp.bench.diagnostics.new_method DIR [--language ruby|lua] [--n 150] [--seed 0]

Each method of the `.rb` files under DIR (each function of the `.lua` files: declared, or a value such as
`M.f = function(x)`, its `end` alone on its line) whose body is 1-6 lines loses its body and its `end`, in the
files the language's own check passes (`ruby -c`, `luac -p`; all where it is not on PATH); the cursor sits on an
empty line under its header at the body's indentation, as an editor leaves it after Enter with no endwise plug-in.
The right text is the body and the `end`. It goes through post-processing and the gate with the whole document
(`postprocess.finish_suggestion`); prints how many are shown, shown whole (the body and the `end`), and leave the
file valid (the bench's `syntax_valid`: the language's own check where there is one).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path


# per language: its files, and the nodes that are a method (a function) closed by `end` (not Bash's: its functions
# close with a `}`)
FILES = {"ruby": ("*.rb",), "lua": ("*.lua",), "bash": ("*.sh", "*.bash")}
_METHODS = {"ruby": ("method",), "lua": ("function_declaration", "function_definition")}


def sources(root: str, language: str):
    """(path, text) of each of the language's files under `root` (`FILES`) that its own check passes (`ruby -c`,
    `luac -p`, `bash -n`; all where it is not on PATH); `lost_header` reads the same files."""
    from dg_lsp.bench.metrics import own_check

    for path in sorted(path for pattern in FILES[language] for path in Path(root).rglob(pattern)):
        text = path.read_text(encoding="utf-8", errors="replace")
        if own_check(text, language) is not False:
            yield path, text


def cases(root: str, language: str = "ruby") -> list[tuple[Path, int, int]]:
    """(file, header row, `end` row) of each method (function) whose body is 1-6 lines, in files the language's own
    check (where there is one) passes."""
    from dg_lsp.context.syntax import parsed

    kinds = _METHODS[language]
    out = []
    for path, text in sources(root, language):
        lines = text.split("\n")
        stack = [parsed(text, language).root_node]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            first, last = node.start_point.row, node.end_point.row
            if node.type in kinds and 2 <= last - first <= 7 and lines[last].strip() == "end" \
                    and lines[first + 1].strip():
                out.append((path, first, last))
    return out


def run(root: str, n: int, seed: int, language: str = "ruby") -> dict:
    from dg_lsp.bench.metrics import syntax_valid
    from dg_lsp.completion.postprocess import finish_suggestion
    from dg_lsp.context import extract_context

    picked = cases(root, language)
    random.Random(seed).shuffle(picked)
    count = {"methods": 0, "shown": 0, "whole": 0, "valid": 0}
    for path, first, last in picked[:n]:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        indent = len(lines[first + 1]) - len(lines[first + 1].lstrip())
        right = "\n".join([lines[first + 1][indent:]] + lines[first + 2:last + 1]) + "\n"
        prefix = "\n".join(lines[:first + 1]) + "\n" + " " * indent
        suffix = "\n" + "\n".join(lines[last + 1:])
        ctx = extract_context(prefix + suffix, language, first + 1, indent)
        shown = finish_suggestion(right, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)
        original = "\n".join(lines)
        count["methods"] += 1
        count["shown"] += bool(shown)
        count["whole"] += shown.rstrip("\n") == right.rstrip("\n")
        count["valid"] += bool(shown) and syntax_valid(original, prefix + shown + suffix, language) is True
    return count


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.new_method", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", metavar="DIR")
    p.add_argument("--language", choices=sorted(_METHODS), default="ruby")
    p.add_argument("--n", type=int, default=150, help="methods drawn (seeded)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    count = run(args.root, args.n, args.seed, args.language)
    print(f"{count['methods']} methods written with no end below: {count['shown']} shown, {count['whole']} shown "
          f"whole (the body and the end), {count['valid']} leave the file valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
