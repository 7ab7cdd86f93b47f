"""Recent suggestions: an exact LRU keyed by the context, and typing-through.

A suggestion depends only on the text around the cursor (the prefix window and the suffix
window) and on the settings that shape it, so that and the document are the key: going back to
a context seen before in a document (undo, retyping) gets its suggestion without the model.
(Not across documents: a benchmark that opens each task as a new document measures every
request, and a hit there would be a coincidence anyway.) Typing-through: when the user
types the first characters of a suggestion, the rest of it is the suggestion for the new
position, served at once.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass

# Enough of the text before the cursor to tell that two requests sit in the same place.
_CHECK_CHARS = 512


@dataclass(frozen=True)
class SuggestionContext:
    doc_key: str | None
    prefix: str  # document text from the window's anchor to the cursor
    suffix: str  # document text after the cursor (the syntax gate's window, which holds the model's)
    cursor: int  # offset of the cursor in the document
    variant: tuple  # everything else that shapes the answer (settings, trigger kind)

    @property
    def key(self) -> tuple:
        return (self.doc_key, self.prefix, self.suffix, self.variant)


def typed_since(old: SuggestionContext, new: SuggestionContext) -> str | None:
    """The text typed at `old`'s cursor to reach `new`, if `new` is `old` plus typing (else None)."""
    if old.doc_key != new.doc_key or old.suffix != new.suffix or old.variant != new.variant:
        return None
    typed = new.cursor - old.cursor
    if typed < 0 or typed > len(new.prefix):
        return None
    before = new.prefix[: len(new.prefix) - typed]
    check = min(len(old.prefix), len(before), _CHECK_CHARS)
    if typed == 0:
        return "" if new.prefix == old.prefix else None
    if not before.endswith(old.prefix[len(old.prefix) - check:]) or (check == 0 and old.prefix):
        return None
    return new.prefix[len(new.prefix) - typed:]


def rest_after_typing(old: SuggestionContext, suggestion: str, new: SuggestionContext) -> str | None:
    """What is left of `suggestion` (made for `old`) once the user has typed its start to reach `new`."""
    typed = typed_since(old, new)
    if not typed or not suggestion.startswith(typed) or len(typed) >= len(suggestion):
        return None
    return suggestion[len(typed):]


class SuggestionCache:
    def __init__(self, capacity: int = 256, per_document: int = 4, documents: int = 64):
        self.capacity = capacity  # exact entries; each holds its windows (a few kB)
        self._exact: OrderedDict[tuple, str] = OrderedDict()
        self._recent: OrderedDict[object, deque] = OrderedDict()  # doc_key -> recent (context, text)
        self._per_document = per_document
        self._documents = documents

    def __len__(self) -> int:
        return len(self._exact)

    def clear(self) -> None:
        self._exact.clear()
        self._recent.clear()

    def put(self, ctx: SuggestionContext, text: str, others: tuple[str, ...] = ()) -> None:
        """Keep `text` (the answer, possibly empty) and `others` (an explicit request's other items) for `ctx`."""
        self._exact[ctx.key] = (text, tuple(others))
        self._exact.move_to_end(ctx.key)
        while len(self._exact) > self.capacity:
            self._exact.popitem(last=False)
        if text:
            recent = self._recent.pop(ctx.doc_key, None) or deque(maxlen=self._per_document)
            recent.append((ctx, (text, *others)))
            self._recent[ctx.doc_key] = recent
            while len(self._recent) > self._documents:
                self._recent.popitem(last=False)

    def get(self, ctx: SuggestionContext) -> tuple[str, tuple[str, ...]] | None:
        """(the answer, the other items) kept for this very context, or None."""
        found = self._exact.get(ctx.key)
        if found is not None:
            self._exact.move_to_end(ctx.key)
        return found

    def type_through(self, ctx: SuggestionContext) -> tuple[str, tuple[str, ...]] | None:
        """The rest of a recent suggestion for this document whose start the user has typed, and the rests of its
        other items that start so too (typing `for i in range(` through `...(n):` and `...(m):` keeps both); the
        answer's rest first where it matches, else the first other's that does."""
        for old, texts in reversed(self._recent.get(ctx.doc_key, ())):
            rests = [r for r in (rest_after_typing(old, t, ctx) for t in texts) if r is not None]
            if rests:
                rests = list(dict.fromkeys(rests))
                return rests[0], tuple(rests[1:])
        return None
