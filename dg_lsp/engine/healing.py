"""Token healing as pure string rules: which tail of the prefix the model writes back, how the suffix
is split around it, and how a generated text is cut back to the answer.

The byte-level BPE merges a newline with the next line's indentation ("\\n   " + " return"), so a
prompt that stops right after "\\n" ends in a token split the model never saw in training (the
HumanEval single-line holes all start at column 0). So the prompt stops before that tail, the model
writes it as part of the hole, and the answer is what follows it.

BPE also writes a word's leading space inside the word's token (" b"), so a prompt that stops right after
"return " ends in a lone space token the model rarely saw (the README demo: `1` after the space, ` a + b`
before it). One space after a non-blank is healed too: the prompt stops before it, and the hole's first
token is kept to tokens whose text starts with a space, or the pad or end token (nothing to insert)
(`constrained`; the engine bans every other logit column there), so the answer fits the cursor.

A cursor inside a word splits it as no training text does: `self.set_defaul` ends in "def" + "aul" where the
whole word is one token "default", and after that split the model mostly writes nothing. So a prefix that ends in
a word also backs off that word's last tokens (`word_backoffs`: at the prefix's own token boundaries, back to the
word's start at most) and the hole's first token must start with their text ("default" after "set_"). Which
back-off is taken depends on the vocabulary (the engine's `InfillLifecycle.heal_prefix`: the longest one some
token can write), so it is not a string rule of `healing_tail`, which also shapes the training data.
"""

from __future__ import annotations

import re

_HEALING_TAIL = re.compile(r"\n+[ \t]*\Z")
_SPACE_TAIL = re.compile(r"(?<=[^\s]) \Z")
_TRAILING_BLANKS = re.compile(r"[ \t]+\Z")
_WORD_END = re.compile(r"\w\Z")
_WORD_PIECE = re.compile(r" ?\w+")
MAX_WORD_TOKENS = 4  # the most prefix tokens a word tail backs off


def healing_tail(prefix: str) -> str:
    """The line breaks and indentation the prefix ends with (the cursor at the start of a line, or in
    its indentation); else "". A prefix that is nothing but the tail keeps it: nothing would be left."""
    m = _HEALING_TAIL.search(prefix)
    if m and m.start() > 0:
        return m.group(0)
    m = _SPACE_TAIL.search(prefix)
    return m.group(0) if m else ""


def ends_in_word(prefix: str) -> bool:
    """Whether the prefix ends in a letter, digit or underscore (the cursor inside or right after a word)."""
    return bool(_WORD_END.search(prefix))


def word_backoffs(pieces: list[str]) -> list[int]:
    """How many of a prefix's last tokens (their texts `pieces`, in order) a word tail may back off, longest
    first: runs of word pieces that end the prefix, up to the piece that starts the word (one with a leading
    space, or one after a piece that is not a word piece: "    " + "self" stops at "self"), never all of them."""
    counts = []
    for k in range(1, min(len(pieces) - 1, MAX_WORD_TOKENS) + 1):
        piece = pieces[-k]
        if not _WORD_PIECE.fullmatch(piece):
            break
        counts.append(k)
        if piece.startswith(" "):
            break
    return counts[::-1]


def constrained(heal: str) -> bool:
    """Whether the hole's first token must start with the tail (a trailing space: BPE writes a word's leading
    space inside the word's token, so the model writes " b" where the prompt stopped before the space; a word's
    backed-off tokens: the model writes the whole word's token, "default" where the prompt stopped at "set_"). A line
    break's tail is left to the model (`unheal` checks it): its tokens split the indentation many ways."""
    return bool(heal) and "\n" not in heal


def split_suffix(suffix: str, heal: str) -> tuple[str, str]:
    """(what the hole writes of the suffix, what the pinned head starts with).

    With a healing tail the hole ends a line, and a suffix that starts the next one with its indentation
    is split: BPE puts all but the last space of it in the line break's token ("\\n   " + " next"), so the
    pinned head starts at that last space and the model ends the hole with the line break (unheal drops
    the rest)."""
    if not (heal and "\n" in heal and suffix.startswith(" ")):
        return "", suffix
    cut = len(suffix) - len(suffix.lstrip(" ")) - 1
    return suffix[:cut], suffix[cut:]


def hole_text(prefix: str, middle: str, suffix: str, heal: bool = True) -> str:
    """What the pad-fill hole must hold for the answer `middle` by the string rules (the training data; the
    engine's `Engine.hole_text` also heals a word, which depends on the vocabulary)."""
    tail = healing_tail(prefix) if heal else ""
    return tail + middle + split_suffix(suffix, tail)[0]


def unheal(text: str, heal: str) -> str | None:
    """The part of a generated text after the healing tail, without the blanks it ends with; None if the
    text does not start with the tail.

    A healed hole starts a line and ends where the suffix starts. Blanks after its last line break are
    the next line's indentation, which the suffix has of its own. Blanks at the end of an answer with no
    line break are that indentation written on the answer's own line (`split_suffix` leaves it to the
    hole): `"\ny = 1   "` is `"y = 1"`, never `"y = 1   "` in front of the suffix's `"    return"`.

    A text that starts with fewer line breaks than the tail (`"\n    for"` after a blank line, tail `"\n\n"`)
    is the line the model would write with one blank line less. An insertion cannot remove the document's blank
    line, so the answer is that line at the cursor, as if the text had the tail's line breaks."""
    if not heal:
        return text
    breaks = len(heal) - len(heal.lstrip("\n"))
    written = len(text) - len(text.lstrip("\n"))
    if 0 < written < breaks:
        text = heal[:breaks] + text[written:]
    if not text.startswith(heal):
        return None
    return _TRAILING_BLANKS.sub("", text[len(heal):])
