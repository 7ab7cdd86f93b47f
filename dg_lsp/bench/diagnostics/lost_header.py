"""A block's header line answered with a line of its body, in Ruby, Lua or Bash, with no model run: what the server
shows.

    python -m dg_lsp.bench.diagnostics.lost_header DIR [--language ruby|lua|bash] [--n 200] [--seed 0]

Each line of the `.rb` (`.lua`, `.sh` and `.bash`) files under DIR that opens a block (not a clause), with its body's
first line indented deeper below it, in files the language's own check passes (`ruby -c`, `luac -p`, `bash -n`; all
where it is not on PATH), is a hole; the cursor at its start, as after the line is deleted. Two texts go through post-processing and
the gate with the whole document (`postprocess.finish_suggestion`): the header itself (the right text), and a
statement at the body's indentation (`x = 1`): a model writing the body where its header was, which leaves the body
and its `end` with no header. Prints how many right headers are shown whole, and how many wrong lines are shown and
of those leave the file broken (the bench's `syntax_valid`: the language's own check where there is one).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from dg_lsp.bench.diagnostics.new_method import FILES, sources

def cases(root: str, language: str) -> list[tuple[Path, int]]:
    """(file, row) of each line that opens a block (not a clause) over a deeper line, in files the language's own
    check (where there is one) passes."""
    from dg_lsp.context.end_blocks import reading

    blocks = reading(language)
    out = []
    for path, text in sources(root, language):
        lines = text.split("\n")
        for row in range(len(lines) - 1):
            code, below = blocks.code_of(lines[row]).strip(), lines[row + 1]
            indent = len(lines[row]) - len(lines[row].lstrip())
            if code and blocks.opens_block(code) and not blocks.CLAUSE.match(code) and below.strip() \
                    and len(below) - len(below.lstrip()) > indent:
                out.append((path, row))
    return out


def run(root: str, language: str, n: int, seed: int) -> dict:
    from dg_lsp.bench.metrics import syntax_valid
    from dg_lsp.completion.postprocess import finish_suggestion
    from dg_lsp.context import extract_context

    picked = cases(root, language)
    random.Random(seed).shuffle(picked)
    count = {"headers": 0, "right_whole": 0, "wrong_shown": 0, "wrong_broken": 0}
    for path, row in picked[:n]:
        lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
        original = "\n".join(lines)
        prefix, suffix = "\n".join(lines[:row]) + "\n", "\n" + "\n".join(lines[row + 1:])
        ctx = extract_context(prefix + suffix, language, row, 0)
        body = lines[row + 1][:len(lines[row + 1]) - len(lines[row + 1].lstrip())]
        count["headers"] += 1
        right = lines[row] + "\n"
        shown = finish_suggestion(right, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)
        count["right_whole"] += shown.rstrip("\n") == right.rstrip("\n")
        shown = finish_suggestion(body + "x = 1\n", [], prefix, ctx, selection=False, max_lines=8,
                                  document=prefix + suffix)
        count["wrong_shown"] += bool(shown)
        count["wrong_broken"] += bool(shown) and syntax_valid(original, prefix + shown + suffix, language) is False
    return count


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dg_lsp.bench.diagnostics.lost_header", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root", metavar="DIR")
    p.add_argument("--language", choices=sorted(FILES), default="ruby")
    p.add_argument("--n", type=int, default=200, help="headers drawn (seeded)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    count = run(args.root, args.language, args.n, args.seed)
    print(f"{count['headers']} headers: {count['right_whole']} shown whole where they were; a body's line there: "
          f"{count['wrong_shown']} shown, {count['wrong_broken']} of those leave the file broken")
    return 0


if __name__ == "__main__":
    sys.exit(main())
