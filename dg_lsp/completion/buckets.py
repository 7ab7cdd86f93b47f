"""Canvas sizes per trigger (issue 15.2): a diffusion step costs in proportion to the canvas, and inline holes are
mostly short, so a request gets the smallest pad-fill hole that its kind of completion needs.

- an automatic trigger in the middle of a line (code before the cursor on its line): the rest of one line,
  `MID_LINE_SLOTS` positions;
- an automatic trigger on a blank line (only indentation before the cursor): one whole line, `LINE_SLOTS`;
- an invoked completion or a selection fill: the model's whole canvas (None).

The adapted Gemma was trained on holes of 8, 16 and 32 slots (its model card); the engine caps any size at the
model's canvas.
"""

from __future__ import annotations

MID_LINE_SLOTS = 16
LINE_SLOTS = 32


def hole_slots(prefix: str, automatic: bool, selection: bool = False) -> int | None:
    """The hole's slots for a request whose document text before the cursor is `prefix`."""
    if selection or not automatic:
        return None
    line = prefix[prefix.rfind("\n") + 1:]
    return MID_LINE_SLOTS if line.strip() else LINE_SLOTS
