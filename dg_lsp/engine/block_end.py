"""Where a multi-line answer's shown text ends, read from the tokens a left-to-right fill has accepted.

The server shows an answer that does not stop at its first line up to the end of the cursor's block
(completion/postprocess.py `cut_to_block`): it stops before the first later line that is not blank and is
indented less than the block, and after `max_lines` lines. Once the accepted, stable slots of a fill already
hold that end, later slots can change nothing that is shown, so the loop may stop there
(`DenoiseLoop.block_settled`). Without this rule a fill at the end of `return ` went on writing the next
function for all its steps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BlockEnd:
    """The block rule of one request. `texts[c]`: the text of logit column c, None for the pad, end and other
    special tokens (the hole ends there: `ends` and `answer_settled` handle that); `heal`: the healing tail the
    hole writes back before the answer; `indent`: the block's indentation in characters; `max_lines`: the most
    lines shown (None: no limit); `rest_of_line`: an answer with text before its first line break is shown up to
    it (the cursor ends a line of code); `braces`: one statement (its first line at `indent` - 1), whose block's
    `}` line at that depth is the statement's (`cut_to_block`)."""

    texts: tuple[str | None, ...]
    heal: str
    indent: int
    max_lines: int | None = None
    rest_of_line: bool = False
    braces: bool = False

    def end_slot(self, pieces: list[str | None]) -> int | None:
        """`block_end_slot` under this rule."""
        return block_end_slot(pieces, self.heal, self.indent, self.max_lines, self.rest_of_line, self.braces)

    def leading_end(self, taken: list[bool], columns: list[int]) -> int | None:
        """Over a row's hole slots in order (`taken`: whether each is accepted or kept; `columns`: its logit column):
        `end_slot` of the leading run of taken slots, None where there is none or it decides nothing yet."""
        run = next((i for i, t in enumerate(taken) if not t), len(taken))
        return self.end_slot([self.texts[c] for c in columns[:run]]) if run else None


def block_end_slot(pieces: list[str | None], heal: str, indent: int, max_lines: int | None,
                   rest_of_line: bool = False, braces: bool = False) -> int | None:
    """The index of the first piece after which the shown text is decided by the block rule, or None.

    `pieces` are the texts of a hole's leading tokens in order. The answer is their text after `heal` (a text
    that does not start with the tail is left alone: `healing.unheal` decides it). The end is decided by the
    first non-blank character of a later line indented less than `indent` (that line is not shown), by the
    line break that ends the `max_lines`-th line, or, under `rest_of_line`, by a first line break after text. With
    `braces` (one statement, its first line at `indent` - 1), the `}` line at that depth that closes the block the
    first line opens (it ends with `{`), or an Allman block's `{` line right under it and its `}` line, are the
    statement's, and the line after that decides."""
    text = ""
    for k, piece in enumerate(pieces):
        if piece is None:
            return None
        text += piece
        if len(text) < len(heal):
            if not heal.startswith(text):
                return None
            continue
        if not text.startswith(heal):
            return None
        if _decided(text[len(heal):], indent, max_lines, rest_of_line, braces):
            return k
    return None


def _decided(answer: str, indent: int, max_lines: int | None, rest_of_line: bool = False,
             braces: bool = False) -> bool:
    lines = answer.split("\n")
    if rest_of_line and len(lines) > 1 and lines[0].strip():
        return True
    if max_lines is not None and len(lines) > max_lines:
        return True
    # the block the first line opens (`if (x) {`), or an Allman `{` line; its `}` line (cut_to_block keeps both)
    opened = braces and len(lines) > 1 and lines[0].rstrip().endswith("{") and lines[0].rstrip()[-2:] != "${"
    closed = False
    for i, line in enumerate(lines[1:], 1):
        stripped = line.lstrip()
        if stripped and len(line) - len(stripped) < indent:
            at_head = braces and len(line) - len(stripped) == indent - 1
            if at_head and not opened and stripped.startswith("{") and not any(x.strip() for x in lines[1:i]):
                opened = True  # `{`, or the start of a line that may still become more than `{`
                continue
            if at_head and opened and not closed and stripped.startswith("}"):
                # a `}` line still being written decides nothing; `} else {` goes on into its next block
                closed = i < len(lines) - 1 and not line.rstrip().endswith("{")
                continue
            return True
    return False
