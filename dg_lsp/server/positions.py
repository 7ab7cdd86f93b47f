"""The protocol boundary for positions: LSP positions (UTF-16 code units by default) <-> the one unit
below the protocol, (line, code-point column) on the server's LSP lines (server/lines.py).

A client position is converted here once (`to_server`); everything below takes that unit
(`completion.CompletionRequest`), and the answer's range is converted back here (`to_client`).
Everything goes through the document's position codec so the negotiated encoding is honoured;
out-of-range positions clamp to the end of the line / document instead of raising.
"""

from __future__ import annotations

from lsprotocol import types


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def to_server(lines, codec, position: types.Position) -> tuple[int, int]:
    """Client position -> (line, code-point column), clamped into the document."""
    if not lines:
        return 0, 0
    line_no = max(0, position.line)
    if line_no >= len(lines):
        last = len(lines) - 1
        if lines[last].endswith(("\n", "\r")):  # the empty line after a final newline
            return len(lines), 0
        return last, len(_content(lines[last]))
    text = _content(lines[line_no])
    units, col = 0, 0
    for ch in text:
        if units >= position.character:
            break
        units += codec.client_num_units(ch)
        col += 1
    return line_no, col


def to_client(lines, codec, line: int, column: int) -> types.Position:
    """(line, code-point column) -> client position."""
    if line >= len(lines):
        return types.Position(line=line, character=0)
    text = _content(lines[line])[:column]
    return types.Position(line=line, character=codec.client_num_units(text))
