"""What the server shows for an engine answer at a marked hole of a source (`finish_suggestion` on the request's
context: the windows, post-processing, the syntax gate), for the per-language tests (C#, PHP)."""

from __future__ import annotations

from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context


def shown_at_hole(source: str, language: str, text: str, hole: int = 0) -> str:
    """The shown text for the engine answer `text` at the `hole`-th @@ of `source` (the others removed), whose
    enclosing scope there is a method."""
    parts = source.split("@@")
    prefix = "".join(parts[:hole + 1])
    document = prefix + "".join(parts[hole + 1:])
    lines = prefix.split("\n")
    ctx = extract_context(document, language, len(lines) - 1, len(lines[-1]))
    assert ctx.language == language and ctx.enclosing is not None and ctx.enclosing.kind == "method"
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=document)
