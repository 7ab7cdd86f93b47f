"""Post-processing over the real protocol (issue 14, items 1, 6, 7, 8): the real server, engine and tiny model,
the model's written text scripted (tests/e2e/scripted_server.py) so the edit the editor receives can be checked
exactly: the item's insertText applied over its range to the document."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import CAPABILITIES, tiny_model_path, wait_ready

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

# [what the prefix ends with, what the model writes into the hole (healing tail included)]
ANSWERS = [
    # 14.1 cursor at column 0 before "    return total": the model writes the tail "\n", the line, and all but
    # the last space of the next line's indentation (the pinned suffix starts at " return")
    ["        total += x\n", "\n    total += 1\n   "],
    # 14.6 the fill closes g(, the suffix's ) closes f(
    ["y = f(g(a", "b)"],
    # 14.7 no line break: the next line's indentation written on the answer's own line
    ["    z = 0\n", "\n    y = 1   "],
    # 14.8 salad, and a docstring that is opened and never closed
    ["w = ", "import import import import"],
    ["def g():\n", '\n    """Return one.\n   '],
    # a lone \r in the model's text is a line break by LSP's rules: it must not reach the editor as it is
    ["q = ", "f(1)  # one\rprint(q)"],
    # the README's post-processing rules, one document each (RULES below)
    ["r1 = ", "len\n    more(b)"],
    ["r2 = ", "a\n    r3 = r2\nprint(r3)\n"],
    ["b2 = a", "\n    r3 = b2\nprint(r3)\n"],
    ["r4 = a + 1", "\n    y4 = 2\n    return r4"],
    ["z5 = g(a", "b)"],
    ["u6 = ", "1\n    \n  \n"],
    ["v7 = ", "  2"],
    ["s7 = [1,", " 3, "],
    ["m8 = ", "1\n    n8 = ("],
    ["p8 = ", "x + ("],
    ["def h8():\n", "\n    k8 = = 1\n   "],
    ["fw_a = ", "10\n\nprint(fw())"],
    ["        t10 = 1", "\n        return t10\n        return t10\n        t10 += 1"],
    # a whole line that opens a block with no body under it, where the hole is an empty block's body
    ["        if e9:\n", "\n            if e9 > 1:\n   "],
    # a blank line between two lines of code: the model writes two lines and a third's start
    ["    bl = 0\n    ", "\n    bl2 = bl\n    print(bl2)\n   "],
    ["    lp = 0\n    ", "\n    for x in lp:\n        print(x)\n    lp2 = lp\n   "],
    # a blank line opened above `return rb`: the model writes that line again
    ["    rb = 0\n    ", "\n    return rb\n   "],
    # names nothing binds: a helper the model made up, on the only line and on a second line
    ["    ub1 = ", "node_concat(a)"],
    ["    uc1 = a", "\n    uc2 = uc1 + 1\n    return uc_helper(uc2)"],
    # the same in JavaScript
    ["  const uj1 = ", "nodeConcat(a);"],
    ["  const uk1 = a;", "\n  const uk2 = uk1 + 1;\n  return ukHelper(uk2);"],
    # selection fills (SEL_SOURCE): one that runs on into a new method, one that leaves a bracket open
    ["sx_get(self):\n        ", "\n        return 2\n    def"],
    ["sx_put(self):\n        ", "\n        return [3"],
    # a selection fill in SEL_SOURCE with lone \r line breaks
    ["sx_get(self):\r        ", "return 2"],
    # the lines the engine weighed against the answer (its suffix-scored alternatives), best first: an explicit
    # request's other items
    ["    it1 = ", "range(n)", ["nope(n)", "range(m)", "range(n)", "range(n, m)\n    more(n)", "range(len(n))"]],
]
# name: (document, cursor line, cursor column)
RULES = {
    "one_line": ("def d1(a):\n    r1 = (a)\n    return r1\n", 1, 9),
    "rest_of_line": ("def b2(a):\n    r2 = \nprint(b2(1))\n", 1, 9),
    "block": ("def b2():\n    b2 = a\nprint(b2())\n", 1, 10),
    "repeats_suffix": ("def d4(a):\n    r4 = a + 1\n    return r4\n", 1, 14),
    "closer": ("ab = 1\nz5 = g(a)\n", 1, 8),
    "blank_lines": ("def d6():\n    u6 = \n    return u6\n", 1, 9),
    "prefix_join": ("v7 = \n", 0, 5),
    "suffix_join": ("s7 = [1, 2]\n", 0, 8),
    "leading_lines": ("def d8(a):\n    m8 = \n    return m8\n", 1, 9),
    "clean_start": ("x = 1\np8 = \n", 1, 5),
    "whole_line": ("def h8():\n    return 0\n", 1, 0),
    "unreachable": ("def d10(a):\n    if a:\n        t10 = 1\n    return 0\n", 2, 15),
    "no_body": ("def d9(xs):\n    for e9 in xs:\n        if e9:\n    return xs\n", 3, 0),
    "between_lines": ("def bl(x):\n    bl = 0\n    \n    return bl\n", 2, 4),
    "between_lines_block": ("def lp(x):\n    lp = 0\n    \n    return lp\n", 2, 4),
    "repeats_below": ("def rb(x):\n    rb = 0\n    \n    return rb\n", 2, 4),
    "unbound": ("def ub(a):\n    ub1 = \n    return ub1\n", 1, 10),
    "unbound_later": ("def uc(a):\n    uc1 = a\n", 1, 11),
    "unbound_js": ("function uj(a) {\n  const uj1 = \n  return uj1;\n}\n", 1, 14),
    "unbound_later_js": ("function uk(a) {\n  const uk1 = a;\n}\n", 1, 16),
    "items": ("def it(n, m):\n    it1 = \n    return it1\n", 1, 10),
}
FILL_SOURCE = "def fw():\n    fw_a = 1\n\nfw()\n"
SEL_SOURCE = "class Sx:\n    def sx_get(self):\n        return 1\n\n    def sx_put(self):\n        return 3\n"

SCRIPT = Path(tempfile.gettempdir()) / "dg-lsp-e2e-scripted-answers.json"
SCRIPT.write_text(json.dumps(ANSWERS), encoding="utf-8")
COMMAND = [sys.executable, str(Path(__file__).with_name("scripted_server.py")), str(SCRIPT), "serve",
           "--model", tiny_model_path(), "--device", "cpu"]

SOURCE = ("def add(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n\n\n"
          "y = f(g(a)\n\n\ndef h():\n    z = 0\n    return z\n\n\nw = \n\n\ndef g():\n    return 1\n\n\n"
          "def k():\n    \"\"\"Doc.\"\"\"\n    return 2\n")
Q_SOURCE = "def f(x):\n    return x\n\n\nq = \n"
# the first function of SOURCE with lone \r line breaks (LSP: \n, \r\n and \r all end a line)
CR_SOURCE = "def add(xs):\r    total = 0\r    for x in xs:\r        total += x\r    return total\r"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=COMMAND), scope="module")
async def client(lsp_client: LanguageClient):
    lsp_client.edits = []

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        lsp_client.edits.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=CAPABILITIES, initialization_options={"maxSteps": 2, "completionCache": False}))
    status = await wait_ready(lsp_client)
    assert status["state"] == "ready", status
    yield
    await lsp_client.shutdown_session()


def _open(client, uri: str, text: str = SOURCE, language: str = "python") -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))


async def _items(client, uri: str, line: int, character: int, automatic: bool = False):
    kind = types.InlineCompletionTriggerKind.Automatic if automatic else types.InlineCompletionTriggerKind.Invoked
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=character),
        context=types.InlineCompletionContext(trigger_kind=kind)))
    return list(result.items if isinstance(result, types.InlineCompletionList) else (result or []))


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def lsp_lines(text: str) -> list[str]:
    """The document's lines as LSP counts them (breaks at \\n, \\r\\n and \\r), without their breaks."""
    return [re.sub(r"(\r\n|\r|\n)$", "", line) for line in _LINE.findall(text)]


def _apply(text: str, item: types.InlineCompletionItem) -> str:
    """The document after the editor accepts `item` (ASCII text: UTF-16 columns are code points)."""
    lines = _LINE.findall(text)

    def offset(p: types.Position) -> int:
        return sum(len(x) for x in lines[:p.line]) + p.character

    return text[:offset(item.range.start)] + item.insert_text + text[offset(item.range.end):]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_whole_line_hole_keeps_its_newline(client, automatic):
    uri = f"file:///tmp/dg_lsp_e2e_edits/whole_line_{automatic}.py"
    _open(client, uri)
    items = await _items(client, uri, 4, 0, automatic)  # column 0, before "    return total"
    assert len(items) == 1
    after = _apply(SOURCE, items[0])
    assert after.split("\n")[3:6] == ["        total += x", "    total += 1", "    return total"]


async def test_a_closer_of_a_bracket_the_prefix_opened_is_kept(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/closers.py"
    _open(client, uri)
    items = await _items(client, uri, 7, len("y = f(g(a"))
    assert len(items) == 1
    assert _apply(SOURCE, items[0]).split("\n")[7] == "y = f(g(ab))"


async def test_an_answer_that_would_duplicate_the_next_lines_indentation_is_not_shown(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/healing.py"
    _open(client, uri)
    # "y = 1" with no line break would read "    y = 1       return z" (before: trailing blanks kept, shown)
    assert await _items(client, uri, 12, 0) == []


async def test_broken_text_is_never_shown(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/broken.py"
    _open(client, uri)
    assert await _items(client, uri, 15, len("w = ")) == []  # salad
    assert await _items(client, uri, 19, 0) == []  # opens a docstring it does not close


async def test_a_lone_carriage_return_never_reaches_the_insert_text(client):
    uri = "file:///tmp/dg_lsp_e2e_edits/carriage_return.py"
    _open(client, uri, Q_SOURCE)
    items = await _items(client, uri, 4, len("q = "))
    assert len(items) == 1
    assert "\r" not in items[0].insert_text
    # the \r ends the line: the rest of the cursor's line of code is what is shown
    assert lsp_lines(_apply(Q_SOURCE, items[0]))[4:] == ["q = f(1)  # one"]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_document_with_lone_carriage_returns_gets_the_same_edit(client, automatic):
    """Positions are on LSP's lines all the way down: a document whose lines end in a lone \\r gets the edit a
    \\n document gets (before: its cursor was taken for one on '\\n' lines, and clamped into the first line)."""
    uri = f"file:///tmp/dg_lsp_e2e_edits/lone_cr_{automatic}.py"
    _open(client, uri, CR_SOURCE)
    items = await _items(client, uri, 4, 0, automatic)  # column 0, before "    return total"
    assert len(items) == 1
    assert "\r" not in items[0].insert_text
    after = _apply(CR_SOURCE, items[0])
    assert lsp_lines(after)[3:6] == ["        total += x", "    total += 1", "    return total"]


# -- each post-processing rule the README lists, as the editor receives it -------------------------------------
async def _rule(client, name: str, automatic: bool = False) -> tuple[list, str]:
    """The items for RULES[name], and its document after the editor accepts the first (unchanged if none)."""
    text, line, column = RULES[name]
    language = "javascript" if name.endswith("_js") else "python"
    uri = f"file:///tmp/dg_lsp_e2e_edits/rule_{name}_{automatic}.{'js' if language == 'javascript' else 'py'}"
    _open(client, uri, text, language)
    items = await _items(client, uri, line, column, automatic)
    return items, (_apply(text, items[0]) if items else text)


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_cursor_with_text_after_it_gets_one_line(client, automatic):
    items, after = await _rule(client, "one_line", automatic)
    assert [i.insert_text for i in items] == ["len"]
    assert lsp_lines(after)[1] == "    r1 = len(a)"


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_blank_line_between_lines_of_code_gets_one_statement(client, automatic):
    items, after = await _rule(client, "between_lines", automatic)
    assert [i.insert_text for i in items] == ["bl2 = bl"]
    assert lsp_lines(after) == ["def bl(x):", "    bl = 0", "    bl2 = bl", "    return bl"]
    # a statement that opens a block keeps its body, not the lines after it
    items, after = await _rule(client, "between_lines_block", automatic)
    assert [i.insert_text for i in items] == ["for x in lp:\n        print(x)"]
    assert lsp_lines(after) == ["def lp(x):", "    lp = 0", "    for x in lp:", "        print(x)", "    return lp"]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_suggestion_that_is_the_next_line_again_is_not_shown(client, automatic):
    """Accepted, `return rb` above `return rb` would double it."""
    items, after = await _rule(client, "repeats_below", automatic)
    assert items == [] and after == RULES["repeats_below"][0]


async def test_code_before_the_cursor_gets_the_rest_of_its_line(client):
    items, after = await _rule(client, "rest_of_line")
    assert [i.insert_text for i in items] == ["a"]
    assert lsp_lines(after) == ["def b2(a):", "    r2 = a", "print(b2(1))"]


async def test_a_block_is_cut_where_it_dedents_out_of_the_cursors_block(client):
    """After a line that is done, the answer starts a new line: the cursor's block, up to where it dedents."""
    items, after = await _rule(client, "block")
    assert [i.insert_text for i in items] == ["\n    r3 = b2"]
    assert lsp_lines(after) == ["def b2():", "    b2 = a", "    r3 = b2", "print(b2())"]


async def test_text_that_repeats_the_suffix_is_dropped_and_suffix_tokens_bounds_what_counts(client):
    """The `suffixTokens` setting over the protocol: the suffix window the server compares with is that long. With
    the default the repeated `return r4` is dropped; with 0 the server sees no suffix, and keeps it."""
    items, after = await _rule(client, "repeats_suffix")
    assert [i.insert_text for i in items] == ["\n    y4 = 2"]
    assert lsp_lines(after)[1:4] == ["    r4 = a + 1", "    y4 = 2", "    return r4"]
    try:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"dgLsp": {"suffixTokens": 0}}))
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
        assert status["settings"]["suffixTokens"] == 0
        items, after = await _rule(client, "repeats_suffix", automatic=True)
        assert [i.insert_text for i in items] == ["\n    y4 = 2\n    return r4"]
        assert lsp_lines(after)[1:5] == ["    r4 = a + 1", "    y4 = 2", "    return r4", "    return r4"]
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"dgLsp": {"suffixTokens": 256}}))
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
        assert status["settings"]["suffixTokens"] == 256


async def test_a_closer_the_suffix_already_has_is_dropped(client):
    items, after = await _rule(client, "closer")  # the suffix's ) closes g(: the fill's would close it twice
    assert [i.insert_text for i in items] == ["b"]
    assert lsp_lines(after)[1] == "z5 = g(ab)"  # `ab`: a name the document binds


async def test_trailing_whitespace_only_lines_are_dropped(client):
    items, after = await _rule(client, "blank_lines")
    assert [i.insert_text for i in items] == ["1"]
    assert lsp_lines(after)[1:3] == ["    u6 = 1", "    return u6"]


@pytest.mark.parametrize(("name", "line"), [("prefix_join", "v7 = 2"), ("suffix_join", "s7 = [1, 3, 2]")])
async def test_no_double_blank_where_the_text_meets_the_prefix_or_the_suffix(client, name, line):
    items, after = await _rule(client, name)
    assert len(items) == 1
    assert lsp_lines(after)[0] == line


async def test_a_block_is_cut_where_its_lines_can_no_longer_run(client):
    """The model's repeated `return`: nothing after the first runs (the document compiles either way)."""
    items, after = await _rule(client, "unreachable")
    assert [i.insert_text for i in items] == ["\n        return t10"]
    assert lsp_lines(after)[2:5] == ["        t10 = 1", "        return t10", "    return 0"]


async def test_a_suggestion_that_breaks_the_syntax_is_cut_to_its_clean_leading_lines(client):
    items, after = await _rule(client, "leading_lines")
    assert [i.insert_text for i in items] == ["1"]
    assert lsp_lines(after)[1:3] == ["    m8 = 1", "    return m8"]


async def test_a_broken_line_inside_a_line_is_cut_to_its_clean_start(client):
    items, after = await _rule(client, "clean_start")
    assert [i.insert_text for i in items] == ["x"]
    assert lsp_lines(after)[1] == "p8 = x"


async def test_a_broken_whole_line_is_not_shown_at_all(client):
    items, _ = await _rule(client, "whole_line")
    assert items == []


async def test_a_whole_line_that_leaves_an_indentation_error_is_not_shown(client):
    """The document does not compile without a suggestion (the `if` has no body yet), so the gate cannot ask that
    it compiles with one; the line written opens a block of its own with no body under it."""
    items, _ = await _rule(client, "no_body")
    assert items == []


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_suggestion_that_reads_a_name_nothing_binds_is_cut_before_that_line(client, automatic):
    """Python: run, the line would raise NameError. On the only line, no suggestion; on a later one, the lines
    before it."""
    items, after = await _rule(client, "unbound", automatic)
    assert items == [] and after == RULES["unbound"][0]
    items, after = await _rule(client, "unbound_later", automatic)
    assert [i.insert_text for i in items] == ["\n    uc2 = uc1 + 1"]
    assert lsp_lines(after) == ["def uc(a):", "    uc1 = a", "    uc2 = uc1 + 1"]


@pytest.mark.parametrize("automatic", [False, True])
async def test_a_javascript_suggestion_that_reads_a_name_nothing_declares_is_cut_before_that_line(client, automatic):
    """JavaScript: run, the line would throw a ReferenceError (TypeScript's compiler: "Cannot find name")."""
    items, after = await _rule(client, "unbound_js", automatic)
    assert items == [] and after == RULES["unbound_js"][0]
    items, after = await _rule(client, "unbound_later_js", automatic)
    assert [i.insert_text for i in items] == ["\n  const uk2 = uk1 + 1;"]
    assert lsp_lines(after) == ["function uk(a) {", "  const uk1 = a;", "  const uk2 = uk1 + 1;", "}"]


async def test_an_answer_comes_with_the_other_lines_the_engine_weighed_as_more_items(client):
    """The answer first, then the alternatives by their score, each finished and checked as the answer is: one that
    reads a name nothing binds is left out, one the same as the answer too, one that runs on is cut to the cursor's
    line, and no more than `maxSuggestions` items (3). An automatic request gets them too."""
    for automatic in (False, True):
        items, after = await _rule(client, "items", automatic)
        assert [i.insert_text for i in items] == ["range(n)", "range(m)", "range(n, m)"]
        assert all(i.range == items[0].range for i in items)
        assert lsp_lines(after)[1] == "    it1 = range(n)"
    try:
        for most, texts in ((1, ["range(n)"]), (8, ["range(n)", "range(m)", "range(n, m)", "range(len(n))"])):
            client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
                settings={"dgLsp": {"maxSuggestions": most}}))
            status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
            assert status["settings"]["maxSuggestions"] == most
            items, _ = await _rule(client, "items")
            assert [i.insert_text for i in items] == texts
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"dgLsp": {"maxSuggestions": 3}}))
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="dgLsp.status"))
        assert status["settings"]["maxSuggestions"] == 3


async def test_a_selection_fill_is_applied_whole(client):
    """Not cut where it dedents out of the block (an inline suggestion would be): the selection's whole
    replacement, applied as it is. (The tiny model's canvas holds 12 tokens: a short selection.)"""
    uri = "file:///tmp/dg_lsp_e2e_edits/fill_whole.py"
    _open(client, uri, FILL_SOURCE)
    client.edits.clear()
    rng = {"start": {"line": 1, "character": len("    fw_a = ")}, "end": {"line": 3, "character": len("fw()")}}
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dgLsp.fillSelection", arguments=[{"uri": uri, "range": rng}]))
    assert result["applied"] is True, result
    (edit,) = client.edits
    (text_edit,) = edit.document_changes[0].edits
    assert text_edit.new_text == "10\n\nprint(fw())"
    after = _apply(FILL_SOURCE, types.InlineCompletionItem(insert_text=text_edit.new_text, range=text_edit.range))
    assert lsp_lines(after) == ["def fw():", "    fw_a = 10", "", "print(fw())"]


async def _fill(client, uri: str, line: int, start: int, end: int):
    rng = {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dgLsp.fillSelection", arguments=[{"uri": uri, "range": rng}]))


@pytest.mark.parametrize("line_break", ["\n", "\r"])
async def test_a_selection_fill_ends_where_it_leaves_the_selections_block(client, line_break):
    """The fill of one selected statement ran on into a new method (`def` at the class's depth, left open), and the
    editor applied it over the user's code: it now ends before that line. In an old Mac file (lone `\r`, a line break
    to LSP) too: the server hands the fill's checks (`selection.refusal`, which reads `\n` line breaks) the document
    with `\n` for each (`newline_text`), and the fill lands over the right range of the `\r` file."""
    uri = f"file:///tmp/dg_lsp_e2e_edits/sel_block_{ord(line_break)}.py"
    source = SEL_SOURCE.replace("\n", line_break)
    _open(client, uri, source)
    client.edits.clear()
    result = await _fill(client, uri, 2, 8, 16)
    assert result["applied"] is True, result
    (edit,) = client.edits
    (text_edit,) = edit.document_changes[0].edits
    assert text_edit.new_text == "return 2"
    after = _apply(source, types.InlineCompletionItem(insert_text=text_edit.new_text, range=text_edit.range))
    assert lsp_lines(after)[2] == "        return 2" and lsp_lines(after)[4] == "    def sx_put(self):"


async def test_a_selection_fill_that_breaks_the_code_is_not_applied(client):
    """`return [3` over `return 3` leaves a bracket open: nothing is applied, not even a clean part of it."""
    uri = "file:///tmp/dg_lsp_e2e_edits/sel_broken.py"
    _open(client, uri, SEL_SOURCE)
    client.edits.clear()
    result = await _fill(client, uri, 5, 8, 16)
    assert result["applied"] is False and result["reason"].startswith("no fill: what the model wrote does not fit"), \
        result
    assert client.edits == []
