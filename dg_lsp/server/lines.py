"""The server's own line index, with LSP's line breaks, updated incrementally.

LSP breaks lines only at `\\n`, `\\r\\n` and `\\r`. pygls' `TextDocument.lines` uses `str.splitlines`,
which also breaks at form feed, `\\x1c`-`\\x1e`, `\\x85`, `\\u2028` and `\\u2029`; after an edit on a
line below such a character the server's copy put the text somewhere else than the editor
(issue 14.5). And pygls re-splits the whole text for every change: a keystroke in a 13.8 MB
document cost 90 ms on the event loop.

`LspDocument` keeps the lines (each with its line break) as the source of truth. An edit
re-splits only the lines it touches (and a neighbour where a `\\r` and a `\\n` may join) and
splices them in; the full text is joined lazily, when a request needs it.
"""

from __future__ import annotations

import re

from pygls.workspace import TextDocument

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their breaks, split only at \\n, \\r\\n and \\r (no empty line after a final break)."""
    if "\r" not in text:
        parts = text.split("\n")
        lines = [p + "\n" for p in parts[:-1]]
        if parts[-1]:
            lines.append(parts[-1])
        return lines
    return _LINE.findall(text)


def content(line: str) -> str:
    """A line without its break."""
    if line.endswith("\r\n"):
        return line[:-2]
    if line.endswith(("\n", "\r")):
        return line[:-1]
    return line


class LspDocument(TextDocument):
    """A pygls TextDocument whose `lines` follow LSP and whose edits are incremental.

    pygls assigns `self._source` in its constructor and reads it in `source`; here `_source`
    is a property over the line list, so every path through pygls stays consistent."""

    @property
    def _source(self) -> str:  # type: ignore[override]
        if self._text is None:
            self._text = "".join(self._lines)
        return self._text

    @_source.setter
    def _source(self, value: str | None) -> None:
        self._text = value or ""
        self._lines = split_lines(self._text)

    @property
    def source(self) -> str:  # pygls would read an unset source from disk; ours is always set
        return self._source

    @property
    def lines(self) -> list[str]:  # type: ignore[override]
        """The line list itself (not a copy): callers must not modify it."""
        return self._lines

    def replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        """Replace [start, end) given as (line, code-point column) on these lines, clamped by the caller.
        A line index past the last line means the empty line after a final line break."""
        lines = self._lines
        n = len(lines)
        (l1, c1), (l2, c2) = start, end
        head = lines[l1][:c1] if l1 < n else ""
        tail = lines[l2][c2:] if l2 < n else ""
        a, b = min(l1, n), min(l2 + 1, n)
        mid = head + text + tail
        if a > 0 and lines[a - 1].endswith("\r") and mid.startswith("\n"):
            a -= 1  # "\r" + "\n" become one break
            mid = lines[a] + mid
        if mid.endswith("\r") and b < n and lines[b].startswith("\n"):
            mid += lines[b]
            b += 1
        lines[a:b] = split_lines(mid)
        self._text = None
