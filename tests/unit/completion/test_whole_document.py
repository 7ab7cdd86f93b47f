"""An inline suggestion is read on the whole document last (`postprocess.gate_suggestion`): outside Python, one
after which a file that parsed clean no longer does is not shown. The gate reads windows and closes their blocks at
their ends; in npm's arborist (session 44) a blank line in a method, given `if (minReleaseAgeExclude) {` and a
`return`, passed it, and its `{` took the method's `}`, leaving the class open to the end of the file. Which window
lets such a text through depends on the whole file, so here the gate is made to pass the text and the test reads
what the whole-document rule does with it."""

from __future__ import annotations

from dg_lsp.completion import postprocess
from dg_lsp.context import extract_context

DOC = ("class Tree {\n  before (spec) {\n    const { before, exclude } = this.options\n    \n    return before\n  }\n"
       "}\n")
OPEN = "if (exclude) {\n      return exclude"


def test_a_suggestion_that_leaves_the_file_unparsable_is_not_shown(monkeypatch):
    monkeypatch.setattr(postprocess, "clean_cut", lambda text, *args, **kwargs: text)  # a window that sees no fault
    ctx = extract_context(DOC, "javascript", 3, 4)
    assert postprocess.gate_suggestion(OPEN, ctx.prefix, ctx) == OPEN  # windows only
    assert postprocess.gate_suggestion(OPEN, ctx.prefix, ctx, DOC) == ""
    # the rule is the file's syntax, not the name check: `nameCheck` off keeps it
    assert postprocess.gate_suggestion(OPEN, ctx.prefix, ctx, DOC, names=False) == ""
    closed = OPEN + "\n    }"
    assert postprocess.gate_suggestion(closed, ctx.prefix, ctx, DOC) == closed


def test_python_is_left_to_its_gate(monkeypatch):
    """Python's gate reads its blocks exactly (no broken Python file in sessions 38-44's editing runs): no second
    whole-file parse for it."""
    monkeypatch.setattr(postprocess, "clean_cut", lambda text, *args, **kwargs: text)
    doc = "def f(a):\n    x = a\n    \n    return x\n"
    ctx = extract_context(doc, "python", 2, 4)
    assert postprocess.gate_suggestion("y = (a", ctx.prefix, ctx, doc, names=False) == "y = (a"
