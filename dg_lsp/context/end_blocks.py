"""The languages whose blocks close with a keyword: Ruby and Lua (`end`), Bash (`fi`, `done`, `esac`). Each one's lines
are read by a module of the same names (`reading`): `code_of` (a line's code, its comment dropped), `opens_block`,
`block_kind`, `takes_clause`, `closes`, `before_clause`, `needs_body`, `leaves_block_open`, `heads_block_below`, `END`
and `CLAUSE` (a line that closes, or continues, the block above it), `CLOSE_WORDS`, `GOES_ON`, `GOES_ON_FROM_ABOVE`,
`WANTS_MORE`, `CLAUSE_BELOW`, `BLOCK_BRACKETS`, and what its grammar's parse says (`END_QUERY`, `stray`, `CALL_BLOCKS`,
`BODY_BLOCKS`, `LITERAL_QUERY`, `is_long_comment`).

The grammars pair `end`s (Bash's `fi`, `done`, `esac`) with openers by count alone, so a text that drops a block's
header line, or adds one, re-pairs every `end` below it with no error until the file's last line. The languages' code
lines each line-leading `end` up with the line that opened its block, so an `end` standing at no column its opener
gives is a block closed by the wrong `end`: `end_faults` lists those (and the keywords the grammars read as names:
tree-sitter-ruby's stray `end`s, tree-sitter-lua's recovery's `else` and `end`, tree-sitter-bash's commands named
`fi` or `then`), as the syntax checks' error spans (`syntax._error_spans`): a text that adds one adds an error, and a
document that has one does not parse clean.
"""

from __future__ import annotations

import functools
import threading
from types import ModuleType

from tree_sitter import Node, Query, QueryCursor

from dg_lsp.context import bash_blocks, lua_blocks, ruby_blocks
from dg_lsp.context.languages import get_language

_READINGS = {"ruby": ruby_blocks, "lua": lua_blocks, "bash": bash_blocks}


def reading(language: str | None) -> ModuleType | None:
    """The module that reads the blocks of `language` (a canonical name), where they close with `end`; else None."""
    return _READINGS.get(language or "")


def closes_only(text: str, language: str) -> bool:
    """Whether `text` holds nothing but the words that close a block in `language` (`end`; Bash's `fi`, `done`,
    `esac`, `;;`), closing brackets and blanks (`    end` over `  end` closes a deeper block: post-processing trims
    no such text as a repeat of the lines below)."""
    return not _READINGS[language].CLOSE_WORDS.sub("", text).strip(" \t\n)]}")


@functools.cache
def _query(language: str) -> Query:
    return Query(get_language(language), _READINGS[language].END_QUERY)


def _indentation(data: bytes, node: Node) -> int:
    """The indentation (bytes of blanks) of the line `node` starts on (tree-sitter's columns count bytes)."""
    start = node.start_byte - node.start_point.column
    line = data[start: node.start_byte]
    return len(line) - len(line.lstrip(b" \t"))


# the faults of the texts read last: the gate reads a window (or the document) without a candidate once for each
# reading of each candidate, and the same text's parse gives the same faults
_FAULTS: dict[tuple[str, bytes], list[tuple[str, int, int]]] = {}
_FAULTS_KEPT = 32
_FAULTS_LOCK = threading.Lock()  # the server's handlers run on a pool


def end_faults(root: Node, data: bytes, language: str) -> list[tuple[str, int, int]]:
    """("END", start byte, end byte) of each `end` of `root` (a parse of `data` in `language`, which `reading` reads)
    that is a stray read as a name (Ruby's `end`, Lua's and Bash's keywords), and of each `end` that starts its line at
    a column that is neither its opener's line's indentation nor its opener's own column (nor, for a block that is a
    call's argument, the indentation of its call's first line; for a loop's body, its loop's column: `| while read -r x;
    do`). An `end` on its opener's line, or after code on its own line, is not judged. `root` is the parse of `data`:
    the faults of a text read lately are read again from a small cache."""
    key = (language, data)
    with _FAULTS_LOCK:
        known = _FAULTS.get(key)
    if known is None:
        known = _faults(root, data, language)
        with _FAULTS_LOCK:
            while len(_FAULTS) >= _FAULTS_KEPT:
                del _FAULTS[next(iter(_FAULTS))]  # the oldest
            _FAULTS[key] = known
    return list(known)


def _faults(root: Node, data: bytes, language: str) -> list[tuple[str, int, int]]:
    blocks = _READINGS[language]
    captures = QueryCursor(_query(language)).captures(root)
    if not captures:
        return []
    faults = [("END", node.start_byte, node.end_byte) for node in captures.get("stray", []) if blocks.stray(node)]
    for node in captures.get("end", []):
        opener = node.parent
        row, column = node.start_point
        if opener is None or node.is_missing or opener.start_point.row >= row:
            continue
        if _indentation(data, node) != column:
            continue  # code before it on its line
        allowed = {_indentation(data, opener), opener.start_point.column}
        if opener.type in blocks.CALL_BLOCKS and opener.parent is not None:
            allowed.add(_indentation(data, opener.parent))
        if opener.type in blocks.BODY_BLOCKS and opener.parent is not None:
            allowed.add(opener.parent.start_point.column)
        if column not in allowed:
            faults.append(("END", node.start_byte, node.end_byte))
    faults.sort(key=lambda span: span[1])
    return faults
