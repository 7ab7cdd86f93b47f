"""dgLsp.fillSelection's rules without a model (issue 14.3, 14.4): a selection fill is never cut inside the
selection's block, stops where it leaves that block, is applied clean or not at all, an empty fill is never
applied, a selection longer than the canvas is refused."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from lsprotocol import types

from dg_lsp.completion import CompletionRequest, CompletionService, Suggestion
from dg_lsp.completion.selection import replaces_code_with_comments, selection_keeps_compiling
from dg_lsp.config import Settings
from dg_lsp.engine import InfillResult
from dg_lsp.server import build_server

pytestmark = pytest.mark.timeout(60)

SOURCE = "def add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"


def test_a_selection_fill_is_never_cut_at_a_dedent():
    """`return total\\n\\n\\nprint(add(1, 2))` lost its print line to cut_to_block."""
    service = CompletionService(engine=None, settings=Settings())
    req = CompletionRequest(SOURCE, "python", 2, 4, end=(5, 16), automatic=False, doc_key="k")
    p = service._prepare(req)  # noqa: SLF001
    answer = "return total\n\n\nprint(add(1, 2))"
    assert service._finish(p, InfillResult(text=answer)) == (answer, None)  # noqa: SLF001
    long = "x = 0\n" + "".join(f"    x{i} = {i}\n" for i in range(40)) + "print(1)"
    assert service._finish(p, InfillResult(text=long)) == (long, None)  # noqa: SLF001 - more lines than maxLines


CLASS = ("class Box:\n    def get(self):\n        return self.item\n\n    def put(self, item):\n"
         "        self.item = item\n        return self\n\n\ndef main():\n    return Box()\n")


def _finish(source: str, start: tuple[int, int], end: tuple[int, int], answer: str) -> str:
    service = CompletionService(engine=None, settings=Settings())
    p = service._prepare(CompletionRequest(source, "python", *start, end=end, doc_key="k"))  # noqa: SLF001
    return service._finish(p, InfillResult(text=answer))[0]  # noqa: SLF001


def test_a_selection_fill_ends_where_it_dedents_out_of_the_selections_block():
    """A fill of one selected statement ran on into a new method, left open (click's core.py: `return
    self.command.get_help(self)` + `\n\n    def get_resource(...):\n        \"\"\"`); the editor applied it over the
    user's code. It ends before the line that dedents below the selected lines; lines at the block's depth stay."""
    ran_on = "return self.item\n\n    def get_resource(self, name):\n        \"\"\""
    assert _finish(CLASS, (2, 8), (2, 24), ran_on) == "return self.item"
    two = "self.item = item\n        self.count = 1"
    assert _finish(CLASS, (5, 8), (5, 24), two) == two  # the selection's block: both lines
    # a selection that starts at column 0 of whole lines: the lines' own indentation is the block
    one = "        self.item = item\n"
    assert _finish(CLASS, (5, 0), (6, 0), one + "    def more(self):\n") == one
    # over the method's `return self` too, the same cut no longer returns: no fill (`selection.drops_the_exit`)
    assert _finish(CLASS, (5, 0), (7, 0), "        self.item = item\n    def more(self):\n") == ""


def test_a_selection_fill_that_breaks_the_code_around_it_is_not_applied_at_all():
    """Not cut to a clean part either: a comment alone would replace the selected `return` (click's core.py)."""
    assert _finish(CLASS, (10, 4), (10, 16), "return [\n        Box()") == ""  # a bracket left open
    assert _finish(CLASS, (10, 4), (10, 16), "# make one.\n    if Box and") == ""
    assert _finish(CLASS, (10, 4), (10, 16), "return Box(1)") == "return Box(1)"


def test_a_selection_fill_after_which_the_file_no_longer_compiles_is_not_applied():
    """click's termui.py: the prompt's window starts inside a long signature, so it never compiles and the gate's
    windows let a fill end with a block header over a blank line and code at its depth. The whole file, which
    compiled, is read for a selection fill: `if not bg:` with no body is no fill; with a body it is applied."""
    params = "".join(f"    p{i}: int | None = None,\n" for i in range(40))
    docstring = '    """Style.\n\n' + "".join(f"    Line {i} of the docstring, long enough to take room.\n"
                                              for i in range(50)) + '    """\n'
    doc = ("def style(\n" + params + ") -> str:\n" + docstring + "    if p1:\n        p1 = 1\n\n    bits = []\n\n"
           "    if p2 is not None:\n        bits.append(p2)\n    return bits\n")
    row = doc.split("\n").index("    bits = []")
    ran_on = "if not p1:\n        p1 = 2\n    if not p2:"
    assert _finish(doc, (row, 4), (row, 13), ran_on) == ""
    whole = ran_on + "\n        p2 = 3\n    bits = []"  # it keeps `bits`, which the code below reads
    assert _finish(doc, (row, 4), (row, 13), whole) == whole


def test_a_selection_fill_after_which_a_file_no_longer_parses_clean_is_not_applied():
    """The other languages are read whole by tree-sitter: a file that parsed clean must still parse clean."""
    js = "function f(xs) {\n  let total = 0;\n  total += xs.length;\n  return total;\n}\n"
    assert selection_keeps_compiling(js, (2, 2), (2, 21), "total += 2;", "javascript")
    assert not selection_keeps_compiling(js, (2, 2), (2, 21), "if (xs) {", "javascript")  # a brace left open
    assert not selection_keeps_compiling(js, (2, 2), (2, 21), "total += (1;", "javascript")
    go = "package m\n\nfunc f(x int) int {\n\ty := x + 1\n\treturn y\n}\n"
    assert not selection_keeps_compiling(go, (3, 1), (3, 11), "y := x +", "go")
    assert selection_keeps_compiling(go, (3, 1), (3, 11), "y := x * 2", "go")
    broken = js.replace("return total;", "return (total;")  # did not parse clean before: not judged
    assert selection_keeps_compiling(broken, (2, 2), (2, 21), "if (xs) {", "javascript")
    assert selection_keeps_compiling("a b c\n", (0, 0), (0, 1), "(", "haskell")  # no grammar


def test_a_selection_fill_of_only_comments_over_selected_code_is_not_applied():
    """npm's queryable.js: `this.#data = JSON.parse(obj.data)` selected, `// if the data is not a string, ...`
    written; applied, the code is gone. A comment over a selected comment, or comments with code, are applied."""
    js = "function f(obj) {\n  let data = 0;\n  data = JSON.parse(obj.data);\n  // parse it\n  return data;\n}\n"
    assert replaces_code_with_comments(js, (2, 2), (2, 29), "// if the data is not a string", "javascript")
    assert replaces_code_with_comments(js, (2, 2), (2, 29), "/* a */\n  // b", "javascript")
    assert not replaces_code_with_comments(js, (3, 2), (3, 13), "// parse the data", "javascript")
    assert not replaces_code_with_comments(js, (2, 2), (2, 29), "// parse\n  data = 1;", "javascript")
    # `self.item = item` selected: a comment alone still compiles there (`return self` follows)
    assert _finish(CLASS, (5, 8), (5, 24), "# keep the item") == ""
    assert _finish(CLASS, (5, 8), (5, 24), "# keep it\n        self.item = item") == "# keep it\n        self.item = item"


def test_a_selection_inside_a_line_is_filled_on_that_line():
    """Text after the selection on its line: one line; after code on its line: the rest of that line."""
    assert _finish(CLASS, (10, 11), (10, 14), "Box\n    x = 1") == "Box"  # `return Box()`: "Box" selected
    assert _finish(CLASS, (10, 11), (10, 16), "Box(2)\n    x = 1") == "Box(2)"  # up to the line's end


def _server(text: str, completion_text: str, generated: int = 1, hole: int = 12, cut_short: bool = False,
            written: str | None = None, refusal: str | None = None):
    server = build_server(Settings())
    doc = SimpleNamespace(version=3, position_codec=None)
    server.snapshot = lambda uri: (doc, text, text.splitlines(True))
    applied = []

    async def complete_at(uri, start, end, automatic, queue_key=None, snap=None, check=None):
        return (Suggestion(text=completion_text, start=(0, 0), end=(0, 0),
                           result=InfillResult(text=completion_text if written is None else written,
                                               generated_tokens=generated, hole_length=hole, cut_short=cut_short),
                           refusal=refusal),
                types.Range(start=start, end=end))

    async def apply(params):
        applied.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    server.complete_at = complete_at
    server.workspace_apply_edit_async = apply
    server.protocol._workspace = SimpleNamespace(text_documents={"file:///a.py": doc})  # noqa: SLF001
    return server, applied


RANGE = types.Range(start=types.Position(line=1, character=4), end=types.Position(line=1, character=9))


@pytest.mark.parametrize("fill", ["", "   ", "\n\n", " \t\n  "])
def test_an_empty_or_blank_fill_is_never_applied(fill):
    server, applied = _server(SOURCE, fill)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and result["reason"] == "no fill"
    assert applied == []


def test_a_fill_the_model_wrote_that_does_not_fit_says_so():
    """The engine's text was refused by post-processing (a bracket left open): still no fill, and the reason says the
    model wrote something."""
    server, applied = _server(SOURCE, "", written="return [3")
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and result["reason"].startswith("no fill: what the model wrote does not fit")
    assert applied == []


def test_a_fill_the_whole_document_refuses_says_why():
    """`selection.refusal`'s reason reaches the user: the service's `_finish` gives it, the server says it."""
    service = CompletionService(engine=None, settings=Settings())
    p = service._prepare(CompletionRequest(SOURCE, "python", 1, 4, end=(1, 17), doc_key="k"))  # noqa: SLF001
    text, why = service._finish(p, InfillResult(text="print(a, b)"))  # noqa: SLF001 - `total` is read below
    assert text == "" and why == "it no longer binds total, which the code after the selection reads"
    server, applied = _server(SOURCE, "", written="print(a, b)", refusal=why)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and result["reason"] == f"no fill: what the model wrote does not fit there: {why}"
    assert applied == []


def test_a_fill_that_used_the_whole_canvas_is_refused_not_applied_cut():
    server, applied = _server(SOURCE, '"""', generated=12, hole=12)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and "whole canvas" in result["reason"]
    assert applied == []


def test_a_fill_the_loop_stopped_inside_is_refused_not_applied_cut():
    """Its steps or its deadline ran out inside the fill: its complete lines are all there is (`total\n`), and
    applied they would replace the selection with part of a fill."""
    server, applied = _server(SOURCE, "total\n", generated=3, hole=12, cut_short=True)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result["applied"] is False and "before its end" in result["reason"]
    assert applied == []


def test_a_fill_is_applied_with_the_version_it_was_computed_on():
    server, applied = _server(SOURCE, "total", generated=2, hole=12)
    result = asyncio.run(server.fill_selection("file:///a.py", RANGE))
    assert result == {"applied": True, "text": "total"}
    (params,) = applied
    (change,) = params.edit.document_changes
    assert change.text_document.uri == "file:///a.py" and change.text_document.version == 3
    assert change.edits == [types.TextEdit(range=RANGE, new_text="total")]
    assert params.edit.changes is None
