"""The syntax gate (issue 14.8): a suggestion that adds tree-sitter errors to the window around the hole, or
opens a string or docstring it does not close, is cut to its longest clean run of leading lines, or not shown
at all. Pure functions on tree-sitter, and the production path (`finish_suggestion`) on a real context."""

import pytest

from dg_lsp.completion.gate import (_closed_ends, _closed_judge, _judge, _mends, heads_deeper_lines, past_the_window,
                                   reaching_closers)
from dg_lsp.completion.postprocess import clean_cut, finish_suggestion
from dg_lsp.context import extract_context
from dg_lsp.context.syntax import error_spans

PREFIX = "def mean(values):\n    return sum(values) / len(values"
SUFFIX = "\n"


def test_a_right_first_line_is_kept_and_the_broken_lines_after_it_are_cut():
    text = ")\n    if = len(values(\n        rest))))"
    assert clean_cut(text, PREFIX, SUFFIX, "python") == ")"


def test_the_longest_clean_run_of_lines_is_kept():
    text = ")\n    x = 1\n    y = = 2 )"  # 2 errors where the window alone has 1
    assert clean_cut(text, PREFIX, SUFFIX, "python") == ")\n    x = 1"


def test_clean_text_and_unknown_languages_are_unchanged():
    clean = ")\n    x = 1"
    assert clean_cut(clean, PREFIX, SUFFIX, "python") == clean
    assert clean_cut(")\n  (((", PREFIX, SUFFIX, None) == ")\n  ((("


def test_no_clean_cut_shows_nothing():
    # before the gate, these were passed on whole: a broken suggestion was shown when no cut was clean
    assert clean_cut("((\n    ]]", PREFIX, SUFFIX, "python") == ""
    salad = "import import import import"
    assert clean_cut(salad, "", "\n", "python") == ""
    assert clean_cut("    y = = 1\n", "def f():\n", "    return 2\n", "python") == ""  # a whole line: all or nothing


def test_a_broken_line_inside_a_line_keeps_its_longest_clean_start():
    assert clean_cut(") ((", PREFIX, SUFFIX, "python") == ")"  # was passed on whole
    assert clean_cut("x + (", "y = ", "\n", "python") == "x"


def test_a_suggestion_that_opens_a_docstring_it_does_not_close_is_not_shown():
    prefix = "def f(x):\n"
    suffix = "    return x\n\n\ndef g():\n    \"\"\"Other.\"\"\"\n    return 1\n"
    # the open docstring pairs with the next function's: tree-sitter may even find the file clean
    assert clean_cut('    """Return x.\n', prefix, suffix, "python") == ""
    assert clean_cut('    """Return x."""\n', prefix, suffix, "python") == '    """Return x."""\n'
    assert clean_cut("x = 'abc", "", "\n", "python") == "x"  # inside a line: the clean start before the quote
    assert clean_cut("a  # note", "x = f(", ")\n", "python") == "a"  # a comment that swallows the suffix


def test_production_path_gates_an_invoked_suggestion():
    doc_prefix = "def total(xs):\n    acc = 0\n    for x in xs:\n        acc += "
    doc_suffix = "\n    return acc\n"
    ctx = extract_context(doc_prefix + doc_suffix, "python", 3, len("        acc += "))
    show = finish_suggestion("x", [], doc_prefix, ctx, selection=False, max_lines=8)
    cut = finish_suggestion("x + (", [], doc_prefix, ctx, selection=False, max_lines=8)
    hide = finish_suggestion("+ (", [], doc_prefix, ctx, selection=False, max_lines=8)
    assert show == "x" and cut == "x" and hide == ""


def test_trailing_blank_lines_and_double_spaces_at_the_join_are_dropped():
    doc_prefix = "def f():\n    y = "
    doc_suffix = "\n    return y\n"
    ctx = extract_context(doc_prefix + doc_suffix, "python", 1, len("    y = "))
    out = finish_suggestion(" 1  \n    \n", [], doc_prefix, ctx, selection=False, max_lines=8)
    assert out == "1"


def test_an_error_that_runs_over_the_hole_elsewhere_in_the_window_does_not_hide_new_ones():
    # a bracket left open far above: its ERROR node spans the hole in the whole window
    prefix = "x = f(\n\n\ndef h():\n    z = 0\n"
    suffix = "    return z\n"
    assert clean_cut("    y = 1\n", prefix, suffix, "python") == "    y = 1\n"
    assert clean_cut("    y = = 1\n", prefix, suffix, "python") == ""


def test_a_hole_whose_own_line_is_broken_across_it_shows_nothing():
    # random-span: "get_pager_fi|" ... "color)" on one line; the ERROR spans the hole whatever is inserted
    assert clean_cut("late", "def f():\n    from .x import get_pager_fi", "color)\n", "python") == ""


def test_python_that_tree_sitter_takes_but_does_not_compile_is_not_shown():
    prefix = "def f(x):\n    if x:\n"
    suffix = "        return 1\n    return 2\n"
    assert clean_cut("            y = 1\n", prefix, suffix, "python") == ""  # an unexpected indent
    assert clean_cut("        y = 1\n", prefix, suffix, "python") == "        y = 1\n"


def test_in_a_window_that_does_not_compile_a_line_that_misindents_the_next_is_not_shown():
    """Found on HumanEval single-line (110/L4, 118/L0): the hole is an empty block's body, so the window never
    compiles without the suggestion, and tree-sitter took these whole lines; Python calls them indentation errors."""
    prefix = "def f(xs, ys):\n    odd = 0\n    for i in xs:\n        if i % 2 == 1:\n"
    suffix = "    for i in ys:\n        odd -= 1\n    return odd\n"
    assert clean_cut("            if i:\n", prefix, suffix, "python") == ""  # a block opened with no body under it
    assert clean_cut("            odd += 1\n", prefix, suffix, "python") == "            odd += 1\n"
    prefix = 'def g(word):\n    """Doc."""\n\n'
    suffix = '        return ""\n    return word\n'
    assert clean_cut("    return word\n", prefix, suffix, "python") == ""  # the next line is indented deeper
    assert clean_cut("    if len(word) < 3:\n", prefix, suffix, "python") == "    if len(word) < 3:\n"


def test_a_text_inside_one_line_is_not_blamed_for_the_windows_indentation_error():
    # the line after the cursor's is indented deeper than it allows whatever is written on the cursor's line
    prefix, suffix = "def h():\n    x = 1", "\n        y = 2\n    return x\n"
    assert clean_cut(" + 2", prefix, suffix, "python") == " + 2"
    assert clean_cut(" + 2\n    z = 3", prefix, suffix, "python") == " + 2"  # its second line meets y's


def test_a_line_that_leaves_the_continuation_under_it_dangling_is_not_shown():
    """Found on held-out single-line holes (email/mime/nonmultipart.py, xml/dom/minicompat.py): the hole is the
    first line of a call whose arguments continue under it, so the window does not compile without a text and
    tree-sitter took a comment or an `if` there; the document stayed broken."""
    prefix = "class M(Base):\n    def attach(self, payload):\n        # no subparts\n"
    suffix = "            'Cannot attach subparts')\n\n    def other(self):\n        return 1\n"
    assert clean_cut("        # The Base is a subclass of Base\n", prefix, suffix, "python") == ""
    assert clean_cut("        if payload:\n", prefix, suffix, "python") == ""
    right = "        raise errors.ConversionError(\n"
    assert clean_cut(right, prefix, suffix, "python") == right


def test_where_the_window_complains_above_the_hole_the_lines_nearer_it_judge():
    """Found on held-out email/header.py: the window starts inside a deeper block, so Python's first complaint is
    at its top and says nothing about the hole; the lines from a least-indented one above still show the string
    under the hole dangling."""
    prefix = ("                formatter.newline()\n        if self._chunks:\n            formatter.add_transition()\n"
              "        value = formatter._str(linesep)\n        if _embedded_header.search(value):\n")
    suffix = ("                \"an embedded header: {!r}\".format(value))\n        return value\n\n"
              "    def _normalize(self):\n        chunks = []\n")  # dedented alone, it would misindent the block
    assert clean_cut("            if other(value):\n", prefix, suffix, "python") == ""
    right = "            raise HeaderParseError(\"header value appears to contain \"\n"
    assert clean_cut(right, prefix, suffix, "python") == right


def test_a_string_that_the_next_line_continues_by_adjacency_is_not_an_open_literal():
    # tree-sitter joins adjacent strings into one `concatenated_string`, which starts in the text and ends after it
    prefix, suffix = "def f():\n    msg = (\n", '        "second part")\n    return msg\n'
    assert clean_cut('        "first part "\n', prefix, suffix, "python") == '        "first part "\n'
    assert clean_cut('        "first part \n', prefix, suffix, "python") == ""  # a string it does leave open


def test_a_text_that_makes_the_window_compile_is_shown_whatever_tree_sitter_makes_of_a_part_of_it():
    """Found on HumanEval single-line 105/L10 and 19/L11, the right answer never shown: the `}` that closes a dict
    opened 30 lines up. Tree-sitter's error runs over the hole in the window, so a run of lines nearer the hole,
    inside the dict, judged the brace, and there it is an error. Python compiles the window with it."""
    prefix = "def f(x):\n    value_map = {\n" + "".join(f"        'k{i}': {i},\n" for i in range(30))
    suffix = "    return value_map[x]\n"
    assert clean_cut("    }\n", prefix, suffix, "python") == "    }\n"
    assert clean_cut("    ]\n", prefix, suffix, "python") == ""


def test_the_first_line_of_a_call_continued_under_the_hole_is_shown_in_a_window_cut_inside_a_string():
    """Found on held-out http/__init__.py (`PAYMENT_REQUIRED = (402, 'Payment Required',` never shown): the window
    ends inside a string and the hole's own line is broken across it, so tree-sitter asked the text to mend
    what it cannot see. Python finds the hole's complaint gone and only the cut's left."""
    prefix = "class S:\n    OK = (200, 'OK',\n        'Request fulfilled')\n"
    suffix = "        'Document created')\n    ACCEPTED = (202, 'Accepted',\n        'Request accepted"
    right = "    CREATED = (201, 'Created',\n"
    assert clean_cut(right, prefix, suffix, "python") == right
    assert clean_cut("    # created\n", prefix, suffix, "python") == ""


def test_where_the_scope_compiles_with_the_text_the_windows_broken_top_does_not_count():
    """Found on held-out email/utils.py (a function's whole body, never shown): the window starts at the closing
    quotes of a docstring, so tree-sitter reads its strings as code and its code as strings, and a body with a
    docstring of its own moved those errors. The function itself compiles without the body and with it."""
    prefix = ('    """\n    x = compute()\n    return x\n\n\ndef format_it(dt):\n'
              '    """Turn a value into a string as RFC 2822 says.\n\n'
              '    If usegmt is True, dt must be aware.\n    """\n'
              "    return dt\n\n\ndef decode_rfc2231(s):\n")
    suffix = "    return parts\n\n\ndef encode_rfc2231(s):\n    return s\n"
    body = ('    """Decode string according to RFC 2231"""\n    parts = s.split("\'", 2)\n'
            "    if len(parts) <= 2:\n        return None, None, s\n")
    scope = ("def decode_rfc2231(s):\n", "    return parts\n")
    assert clean_cut(body, prefix, suffix, "python", scope) == body
    assert clean_cut("    if len(parts) <= 2:\n", prefix, suffix, "python", scope) == ""  # no body under it


def test_a_line_end_that_opens_a_block_with_no_body_under_it_is_not_shown():
    """Found on held-out email/quoprimime.py (seed 7): at a blank line of a window that does not compile (it starts
    inside a block), `if soft_break:` with no line break, the next line at its own indentation."""
    prefix = "        raise ValueError(x)\n    if not body:\n        return body\n\n    soft_break = '=' + eol\n    "
    suffix = "\n\n    encoded_body = []\n    return encoded_body\n"
    assert clean_cut("if soft_break:", prefix, suffix, "python") == ""
    assert clean_cut("maxlinelen1 = maxlinelen - 1", prefix, suffix, "python") == "maxlinelen1 = maxlinelen - 1"
    # a body under the cursor's line: the block it opens is not empty
    body = "\n        encoded_body = []\n    return encoded_body\n"
    assert clean_cut("if soft_break:", prefix, body, "python") == "if soft_break:"


def _shown_js(prefix: str, suffix: str, text: str) -> str:
    """What the server shows for the engine answer `text` at the end of `prefix` in a JavaScript document."""
    lines = prefix.split("\n")
    ctx = extract_context(prefix + suffix, "javascript", len(lines) - 1, len(lines[-1]))
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8)


def _js_else(method: str) -> tuple[str, str]:
    prefix = ("class Runner {\n"
              f"  {method} (items) {{\n"
              "    if (items.length) {\n"
              "      if (!this.quiet) {\n"
              "        console.log('items')\n"
              "      } el")
    suffix = ("\n"
              "        console.log('quiet')\n"
              "      }\n"
              "      for (const item of items) {\n"
              "        console.log(item)\n"
              "      }\n"
              "    }\n"
              "    return true\n"
              "  }\n"
              "}\n")
    return prefix, suffix


@pytest.mark.parametrize("method", ["list", "async #list"])
def test_a_text_that_opens_a_block_whose_closer_is_below_is_shown(method):
    # `} el|` with the else's body and its `}` below: the scope found in the document without the text ends one
    # closer early (its brackets close the method at the if's `}`), so the scope must reach the closer the text needs
    prefix, suffix = _js_else(method)
    assert _shown_js(prefix, suffix, "se {\n") == "se {"
    assert _shown_js(prefix, suffix, "se if (x) {\n") == "se if (x) {"
    # one brace too many breaks the file whatever the scope reaches, and its clean start `se` leaves the else's body
    # without the opener the hole lost (`brackets.lost_opener`): nothing is shown
    assert _shown_js(prefix, suffix, "se {{\n") == ""


def test_the_scope_reaches_only_as_far_as_the_closers_the_text_needs():
    window_suffix = "\n    a()\n  }\n}\nb()\n}\n"
    scope_suffix = "\n    a()\n  }\n"
    prefix = "f() {\n  if (x) {\n    y()\n  } el"
    # the text opens one brace more than the region closes: the region goes on through the next closer's line
    assert reaching_closers(prefix, "se {", scope_suffix, window_suffix, "javascript") == "\n    a()\n  }\n}\n"
    # a text that opens nothing, or whose brackets close on its own, leaves the region as it was
    assert reaching_closers(prefix, "se", scope_suffix, window_suffix, "javascript") == scope_suffix
    assert reaching_closers(prefix, "se {}", scope_suffix, window_suffix, "javascript") == scope_suffix
    # nothing in the window closes what the text opens: the region stays
    assert reaching_closers(prefix, "se {{{", scope_suffix, window_suffix, "javascript") == scope_suffix
    # the window's own region (its suffix is the whole window's) is never taken on
    assert reaching_closers(prefix, "se {", window_suffix, window_suffix, "javascript") == window_suffix
    # an opener over lines of its own depth heads nothing below: its brace would take an outer block's closer
    assert reaching_closers("f() {\n  ", "if (b) {", "\n  y()\n", "\n  y()\n}\n}\n", "javascript") == "\n  y()\n"
    # a second opener over a block that has one: the closers below would go out of line with their openers
    block = " {\n    y()\n  }\n"
    assert reaching_closers("f() {\n  if (a) ", "{", block, block + "}\n}\n", "javascript") == block


def test_a_text_heads_the_lines_below_only_where_they_are_indented_deeper():
    assert heads_deeper_lines("  } el", "se {", "\n    a()\n  }\n")
    assert heads_deeper_lines("", "  for (x of xs) {\n", "\n    use(x)\n  }\n")  # a whole line, blank lines skipped
    assert not heads_deeper_lines("    ", "if (b) {", "\n    y()\n  }\n")
    assert not heads_deeper_lines("  } el", "se {", "\n  }\n")  # an empty block: its closer comes next
    assert not heads_deeper_lines("", "", "x()\n")


def test_an_opener_at_a_blank_line_over_code_of_its_depth_is_not_shown_whatever_closer_is_below():
    # a window that starts inside the class: the class's `}` below is a closer too many there, so the window takes
    # `if (b) {` as a mend; the method's scope must still refuse it (y() would become its body, the class unclosed)
    prefix = "  f() {\n    x()\n    "
    suffix = "\n    y()\n  }\n}\n"
    scope = (prefix, "\n    y()\n  }\n")
    # nor its start `if (b)`, which makes y() its body just the same (`gate_structure.takes_the_next_line`; it was shown
    # before session 40)
    assert clean_cut("if (b) {", prefix, suffix, "javascript", scope) == ""
    assert clean_cut("if (b) {}", prefix, suffix, "javascript", scope) == "if (b) {}"


def test_a_whole_line_that_heads_a_chained_block_below_is_shown():
    # the hole is the `.map(i => {` line of a chain: its body and `})` are below, and that `}` closes nothing in
    # the statement's lines without it
    prefix = ("function run (tree) {\n"
              "  const getValues = (tree) =>\n"
              "    [...tree.values()]\n"
              "      .filter(i => !i.isRoot)\n")
    suffix = ("        return i\n"
              "      })\n"
              "      .sort((a, b) => a.depth - b.depth)\n"
              "\n"
              "  return getValues(tree)\n"
              "}\n")
    assert _shown_js(prefix, suffix, "      .map(i => {\n") == "      .map(i => {\n"
    assert _shown_js(prefix, suffix, "      .map(i => {{\n") == ""  # a whole line is shown whole or not at all


def test_a_window_that_starts_inside_a_class_does_not_let_an_extra_opener_through():
    # the window starts inside a method above, so the class's `}` at its end closes nothing there: the window takes
    # `se {{` for a mend. The scope, taken on to the closers below, must leave every block closer in line with its
    # opener, which `se {` does and `se {{` does not (the file would lose the class's closer)
    method = ("  async #list (items) {\n    if (items.length) {\n      if (!this.quiet) {\n"
              "        console.log('items')\n      } el")
    prefix = "      this.x = 1\n    }\n  }\n\n" + method
    body = ("\n        console.log('quiet')\n      }\n      for (const item of items) {\n        console.log(item)\n"
            "      }\n    }\n")
    suffix = body + "    return true\n  }\n}\n\nmodule.exports = Runner\n"
    assert clean_cut("se {", prefix, suffix, "javascript", (method, body)) == "se {"
    assert clean_cut("se {{", prefix, suffix, "javascript", (method, body)) == ""  # `se` leaves the body unopened


def _installer(methods_above: int, else_body: str = "          throw err\n") -> tuple[str, str]:
    """`} el|` in a method longer than the server's suffix window (the window ends before the method's `}`), after
    `methods_above` methods of the class (60: the window starts inside the class)."""
    above = "".join(f"  step{i} (items) {{\n    return this.compute(items, {i})\n  }}\n\n"
                    for i in range(methods_above))
    prefix = ("class Installer {\n" + above + "  async exec (args) {\n    const forced = this.forced\n"
              "    if (this.global && args.length) {\n      try {\n        this.check(args)\n      } catch (err) {\n"
              "        if (forced) {\n          this.warn(err)\n        } el")
    rest = "".join(f"    const value{i} = this.compute(args, {i})\n" for i in range(80)) + "    return true\n  }\n}\n"
    return prefix, "\n" + else_body + "        }\n      }\n    }\n" + rest


@pytest.mark.parametrize("methods_above", [0, 60])
def test_a_block_opener_whose_method_ends_past_the_window_is_shown(methods_above):
    # without the text, the else's `}` closes the method early, so the method's own `}` is one too few for the text in
    # the window, and it lies past the window's end: the window must not blame the text for it (npm's install.js:127)
    prefix, suffix = _installer(methods_above)
    ctx_lines = prefix.split("\n")
    assert extract_context(prefix + suffix, "javascript", len(ctx_lines) - 1, len(ctx_lines[-1])).suffix_truncated
    assert _shown_js(prefix, suffix, "se {\n") == "se {"
    assert _shown_js(prefix, suffix, "se if (x) {\n") == "se if (x) {"
    assert _shown_js(prefix, suffix, "se {{\n") == ""  # the second brace has no closer; `se` opens no body


def test_past_the_window_the_text_must_close_its_own_brackets_and_mend_the_closers_below():
    # the else's body runs past the gate's window: the text's own brace is open at the window's end, so nothing
    # vouches for it
    prefix, suffix = _installer(60, "".join(f"          this.log(err, {i})\n" for i in range(400)))
    assert _shown_js(prefix, suffix, "se {\n") == "se"
    # a body past the model's window (256 tokens) but inside the gate's (`CodeContext.judge_suffix`, 2048): its `}`
    # is there to vouch for the brace (before session 36 the gate judged in the model's window, and refused it)
    prefix, suffix = _installer(60, "".join(f"          this.log(err, {i})\n" for i in range(80)))
    assert _shown_js(prefix, suffix, "se {\n") == "se {"
    # an opener over deeper lines where every closer below was in line already supplies no missing opener
    rest = "".join(f"    const value{i} = this.compute(args, {i})\n" for i in range(80)) + "    return true\n  }\n}\n"
    prefix = "class Installer {\n  async exec (args) {\n    const forced = this.forced\n    "
    assert _shown_js(prefix, "\n      this.check(args)\n    this.done()\n" + rest, "if (forced) {\n") == "if (forced)"


def test_past_the_window_adds_the_closers_of_the_blocks_the_text_leaves_open():
    prefix = "  f() {\n    if (a) {\n      x()\n    } el"
    window_suffix = "\n      y()\n    }\n    z()\n"
    # the function's `{`, which the else's `}` closed without the text, is closed after the window's end
    assert past_the_window(prefix, "se {", window_suffix, "javascript") == window_suffix + "\n  }\n"
    taken_on = reaching_closers(prefix, "se {", window_suffix, window_suffix, "javascript", True)
    assert taken_on == window_suffix + "\n  }\n"
    # only for a window that ends before the document does: else the window's own region is never taken on
    assert reaching_closers(prefix, "se {", window_suffix, window_suffix, "javascript") == window_suffix
    assert past_the_window(prefix, "se {{", window_suffix, "javascript") is None  # its own `{` stays open
    assert past_the_window(prefix, "se {", window_suffix, "python") is None
    # a region inside the window that the text cannot be judged past keeps its own end
    scope_suffix = "\n      y()\n    }\n"
    assert reaching_closers(prefix, "se {{", scope_suffix, window_suffix, "javascript", True) == scope_suffix
    # a truncated window alone changes nothing where the text's closers are in it
    assert clean_cut("se {", prefix, window_suffix + "  }\n", "javascript", None, True) == "se {"


def test_the_closers_added_past_the_window_never_refuse_what_the_region_as_it_was_shows():
    # a window that starts inside a signature (its `(` cut off above): the `}` added past the window's end closes
    # nothing there, so that reading alone would refuse the right line that the region's own end shows (zod)
    prefix = ("  ctx: Context,\n  schema: T\n): Payload<T> {\n  const root = ctx.seen.get(schema);\n\n"
              "  const flatten = (node: Node) => {\n    node.done = true;\n  };\n\n")
    text = "  for (const entry of [...ctx.seen.entries()].reverse()) {\n"
    body = "    flatten(entry[0]);\n  }\n"
    suffix = (body + "\n  const result = {};\n  if (ctx.target) {\n    result.x = 1;\n  }\n\n"
              "  Object.assign(result, root.def);\n\n")
    assert clean_cut(text, prefix, suffix, "typescript", (prefix, body), True) == text
    assert clean_cut(text, prefix, suffix, "typescript", (prefix, body)) == text


def _shown_truncated_js(prefix: str, suffix: str, text: str) -> str:
    lines = prefix.split("\n")
    assert extract_context(prefix + suffix, "javascript", len(lines) - 1, len(lines[-1])).suffix_truncated
    return _shown_js(prefix, suffix, text)


def _steps(n: int, indent: str = "    ") -> str:
    return "".join(f"{indent}const value{i} = await this.step(args, {i})\n" for i in range(n))


def test_a_window_that_ends_inside_a_block_is_judged_with_that_block_closed_after_it():
    # tree-sitter reads a window cut inside a class or an object as one error node across the whole of it, and a
    # right line inside that error was refused: the window is read with its open blocks closed after its end too
    suffix = ("const BaseCommand = require('../base-cmd.js')\n\nclass Exec extends BaseCommand {\n"
              "  async exec (args) {\n" + _steps(120) + "  }\n}\n")
    line = "const { resolve } = require('node:path')\n"
    assert _shown_truncated_js("", suffix, line) == line
    prefix = "const aliases = {\n  author: 'owner',\n  home: 'docs',\n"
    suffix = "".join(f"  alias{i}: 'command{i}',\n" for i in range(150)) + "}\n"
    assert _shown_truncated_js(prefix, suffix, "  rm: 'uninstall',\n") == "  rm: 'uninstall',\n"


def test_the_closed_reading_judges_only_texts_that_leave_the_windows_open_blocks_as_they_were():
    # the closers added fit the window without the text: a header over a method's body mends the errors the missing
    # header caused, and a second brace would then pass as part of that mend
    prefix = "class Help {\n"
    suffix = "    const section = this.section(args)\n" + _steps(120) + "  }\n}\n"
    assert _shown_truncated_js(prefix, suffix, "  async exec (args) {\n") == "  async exec (args) {\n"
    assert _shown_truncated_js(prefix, suffix, "  async exec (args) {{\n") == ""
    # a call's rest that opens a block: the added `)` would meet the text's `{`
    prefix = ("class Ci {\n  async exec (args) {\n    try {\n      await this.load()\n    } catch (err) {\n"
              "      log.verbose('loadVirtual', er")
    suffix = "\n    }\n" + _steps(120) + "  }\n}\n"
    assert _shown_truncated_js(prefix, suffix, "r.stack)") == "r.stack)"
    assert _shown_truncated_js(prefix, suffix, "r.stack) {") == "r.stack)"


def test_the_closed_reading_leaves_a_text_that_changes_the_windows_open_blocks_to_the_window_as_it_was():
    # a window that ends inside a callback of a method whose header is the hole: without the header its body reads as
    # class members, so any header mends errors, and with the window's blocks closed after its end a doubled brace
    # would pass as part of that mend. The closers added fit the window without the text, so it is not judged there
    prefix = "class Help {\n"
    window_suffix = ("    const section = this.section(args)\n"
                     + "".join(f"    if (args.length > {i}) {{\n      this.use(args[{i}])\n    }}\n" for i in range(3))
                     + "    const found = glob(f).then(r => r.sort((a, b) => {\n"
                     + "".join(f"      const m{i} = a.match(regex)?.[{i}] || 999\n" for i in range(5)))
    closed = _closed_ends(prefix, window_suffix, "javascript", None)
    assert closed is not None and closed[1] == window_suffix + "\n    }\n)\n)\n}\n"
    doubled = "  async exec (args) {{\n"
    assert not _judge(*closed[:2], "javascript", closed[2], False)(doubled)  # the mend alone would show it
    assert _closed_judge(prefix, window_suffix, None, "javascript")(doubled)
    assert _closed_judge(prefix, window_suffix, None, "javascript")("  async exec (args) {\n")  # the window's own


def test_a_line_rest_that_closes_its_condition_and_opens_the_block_below_is_shown():
    # `if (items.len|`: without the text, the `(` stays open and the block's `}` closes it and the function (as a
    # parser recovers), so the scope ends there; with `gth) {` the function's own `}` further down is needed. Counted
    # without that recovery, the text seemed to leave no more open than the document did, and the scope stayed short
    prefix = "const run = (items) => {\n  if (!items) {\n    return\n  }\n\n  if (items.len"
    suffix = "\n    console.log(items)\n  }\n\n  return items.length\n}\n\nmodule.exports = run\n"
    assert _shown_js(prefix, suffix, "gth) {") == "gth) {"
    # `gth) {{` leaves the function's `}` missing where the hole left a `)` missing: one error for one, but in the
    # whole function (its scope, ended at its `}` by indentation) a `}` goes missing that was not (`gate.
    # _leaves_a_block_open`); `gth)` alone, its clean start, would leave the block's `}` to close the function:
    # nothing is shown (`brackets.lost_opener`: the `{` must come back on the header's line)
    assert _shown_js(prefix, suffix, "gth) {{") == ""


@pytest.mark.parametrize("language,prefix,suffix,right,wrong", [
    # symfony/console's ChoiceQuestion: `foreach ($selectedCho` + `ices as $k => $v)`, no `{`; the foreach's `}`
    # then met the closure's `{`, which counted as the opener the hole lost
    ("php", "<?php\nfunction f($xs) {\n    return function ($x) use ($xs) {\n        foreach ($xs as $v) {\n"
            "            $y = 1;\n        }\n        foreach ($selectedCho",
     "\n            $results[] = $value;\n        }\n        return $results;\n    };\n}\n",
     "ices as $value) {", "ices as $k => $v)"),
    ("javascript", "function f (xs) {\n  return (x) => {\n    for (const v of xs) {\n      y(v)\n    }\n"
                   "    for (const value of sel",
     "\n      results.push(value)\n    }\n    return results\n  }\n}\n",
     "ected) {", "ected)"),
])
def test_a_header_line_rest_must_give_back_its_blocks_opener_on_its_line(language, prefix, suffix, right, wrong):
    """The hole's line heads a block (the lines under it deeper, its `}` at the line's depth): a text that closes the
    `(` the hole left open but not the `{` leaves that `}` to close the function around it, whose `{` took it for the
    opener the hole lost."""
    assert clean_cut(right, prefix, suffix, language) == right
    assert clean_cut(wrong, prefix, suffix, language) == ""


@pytest.mark.parametrize("entries", [5, 150])
def test_a_text_that_leaves_its_region_without_errors_and_its_brackets_as_they_were_is_shown(entries):
    # `issues: 'b|` in an object literal: without the text the entry runs into the next one, the errors run across
    # the hole in every region, and the lines near it, judged alone, lack the object's `{`, so `ugs',` was cut to
    # `ugs`. With it the window has no error at all and the same brackets open: it is shown (in a window that ends
    # with the document, and in one cut by the suffix budget)
    prefix = "const aliases = {\n  author: 'owner',\n  home: 'docs',\n  issues: 'b"
    suffix = ("\n  info: 'view',\n" + "".join(f"  alias{i}: 'command{i}',\n" for i in range(entries))
              + "}\n\nmodule.exports = aliases\n")
    assert _shown_js(prefix, suffix, "ugs',") == "ugs',"
    assert _shown_js(prefix, suffix, "ugs', {") == "ugs"  # a brace more: the brackets are not as they were


def test_a_region_left_without_errors_counts_only_where_the_brackets_stay_as_they_were():
    assert _mends("x = {\n  a: 'b", "',", "\n  c: 1,\n}\n", "javascript")
    assert not _mends("x = {\n  a: 'b", "', /* c", "\n  c: 1,\n}\n", "javascript")  # a comment it does not close
    # a region that starts inside a block has a closer too many; `); {` hands that closer a block of its own, and the
    # region parses clean, though in the file the brace takes the closer of the block around it
    region = ("    h(o", "\n    k()\n  }\n")
    assert error_spans(region[0] + "); {" + region[1], "javascript") == []
    assert not _mends(region[0], "); {", region[1], "javascript")


# -- a hole that lost its block's opener (`brackets.lost_opener`) ---------------------------------------------------
_INSTALL_TEST = ("const Install = require('./install.js')\n\n",
                 "  static description = 'Install package(s) and run tests'\n  static name = 'install-test'\n\n"
                 "  async exec (args) {\n    await this.npm.exec('install', args)\n  }\n}\n\n"
                 "module.exports = InstallTest\n")
_OUTDATED = ("class Outdated {\n  async exec () {\n    const outdated = this.list()\n\n",
             "      output.buffer(this.json(outdated))\n      return\n    }\n\n    output.standard(outdated)\n  }\n}\n")

_ADDUSER = ("class AddUser extends BaseCommand {\n  async exec () {\n"
            "    const scope = this.npm.config.get('scope')\n\n",
            "      ...this.npm.flatOptions,\n      creds,\n      registry,\n    })\n\n"
            "    output.standard(message)\n  }\n}\n\nmodule.exports = AddUser\n")

_TEST = ("const LifecycleCmd = require('../lifecycle-cmd.js')\n\nclass Test extends LifecycleCmd {\n"
         "  static name = 'test'\n",
         "    'ignore-scripts',\n    'script-shell',\n  ]\n}\n\nmodule.exports = Test\n")


@pytest.mark.parametrize("doc,right,wrong", [
    # npm's install-test.js: the class's header was at the hole, and its `}` closes nothing without it
    (_INSTALL_TEST, "class InstallTest extends Install {\n", "const InstallOptions = require('./options.js')\n"),
    # npm's outdated.js: an if's header, whose `}` (indented 4) closes the method's `{` (indented 2) without it
    (_OUTDATED, "    if (this.json) {\n", "    const other = outdated.map((e) => e.name)\n"),
    # npm's adduser.js: a call's `(` and an object's `{` were lost (`})` below); `if (scope) {` gives back a `{` in
    # line with the `}`, but the `)` after it then closes nothing of its kind
    (_ADDUSER, "    const { message } = await auth.adduser(this.npm, {\n", "    if (scope) {\n"),
    # npm's test.js: a list's `[` was lost, and its `  ]` meets the class's `{`
    (_TEST, "  static params = [\n", "  static description = 'Test a package'\n"),
])
def test_a_line_that_leaves_the_block_below_without_its_lost_opener_is_not_shown(doc, right, wrong):
    # the file is broken without the hole's line, and a line that opens nothing leaves it as broken: no error count
    # tells that from a line that breaks nothing, so it was shown
    prefix, suffix = doc
    assert _shown_js(prefix, suffix, right) == right
    assert _shown_js(prefix, suffix, wrong) == ""
    assert _shown_js(prefix, suffix, "  const s = `\n") == ""  # a template literal that swallows the closer


def test_a_line_rest_must_give_back_the_call_and_object_it_lost():
    # zod's util.ts: `shape[key] = new Class({` over the object's entries and their `})`
    prefix = "function f (shape, mask) {\n  for (const key in mask) {\n    if (!mask[key]) continue\n    shape"
    suffix = "\n      type: 'nonoptional',\n      inner: shape[key],\n    })\n  }\n  return shape\n}\n"
    assert _shown_js(prefix, suffix, "[key] = new Class({") == "[key] = new Class({"
    assert _shown_js(prefix, suffix, "[key] = Class") == ""  # nor its clean start `[key]`: the entries stay unopened


def test_a_block_still_being_written_or_another_open_bracket_is_no_lost_opener():
    # `if (a) {` typed with no closer yet (an editor without auto-pairs): the function's `}` below is indented less
    # than the if's `{`, so a body line is shown
    assert _shown_js("function f (a) {\n  if (a) {\n", "}\n", "    a.run()\n") == "    a.run()\n"
    # prettier's `? {` puts the object's `}` deeper than its `{`; the call left open at the hole meets it first, and
    # a text that closes the call is shown (zod's parse.ts), one that leaves it open is not
    prefix = ("const f = (result) => {\n  return result.issues.length\n    ? {\n        success: false,\n"
              "        error: new Err(result")
    suffix = "\n      }\n    : { success: true }\n}\n"
    assert _shown_js(prefix, suffix, ".issues.map((iss) => fin(iss))),") == ".issues.map((iss) => fin(iss))),"
    assert _shown_js(prefix, suffix, ".issues.map((iss) => fin(iss)),") == ""


def test_a_closer_that_closes_nothing_counts_only_in_a_window_that_starts_the_document():
    # a window that starts inside a method: the `}` below may close its `{` above the window
    prefix, suffix = "    this.x = 1\n", "    this.y = 2\n  }\n}\n"
    assert clean_cut("    this.z = 3\n", prefix, suffix, "javascript", prefix_truncated=True) == "    this.z = 3\n"
    assert clean_cut("    this.z = 3\n", prefix, suffix, "javascript", prefix_truncated=False) == ""


def test_a_text_that_closes_a_block_early_is_not_shown():
    # a `}` in the text ends the function early: the lines below then close what they did not (the function's `}`
    # closes nothing). The window's error count may not say so where the document goes on past it
    prefix = "function f (a) {\n  const b = a + 1\n"
    suffix = "".join(f"  const v{i} = b + {i}\n" for i in range(120)) + "  return b\n}\n\nmodule.exports = f\n"
    assert _shown_js(prefix, suffix, "  const c = b * 2\n") == "  const c = b * 2\n"
    assert _shown_js(prefix, suffix, "  }\n") == ""  # past it, the lines below read as top-level statements
    # a condition continued over lines puts its `{` on a line indented deeper than the `}`: no closer out of line
    text = "  if (a &&\n    b > 1) {\n    run()\n  }\n"
    assert clean_cut(text, prefix, suffix, "javascript", prefix_truncated=False) == text


def test_the_bracket_rules_stand_aside_where_the_hole_is_inside_a_string():
    # npm's access.js: the cursor inside a template literal's `${ite|`, in a window that starts inside the method.
    # Without the text, the scan reads the literal on to the end, and no closer below; with it, the method's and the
    # class's `}` close nothing in the window. The text that ends the literal is right
    prefix = "    for (const item of items) {\n      if (item) {\n        output.standard(`${ite"
    suffix = "\n      }\n    }\n  }\n}\n\nmodule.exports = Access\n"
    text = "m}: ${outputs[item]}`)"
    assert clean_cut(text, prefix, suffix, "javascript", prefix_truncated=True) == text


def test_a_block_that_lost_its_opener_above_the_hole_asks_nothing_of_a_line_at_its_end():
    # `  if (a) {` deleted lines above: the if's `}` closes the function's `{`, but no body lies between the hole and
    # that `}`, so the hole did not lose it: a body line at its end is shown, as before the lost-opener rule
    prefix, suffix = "function f (a) {\n  a.w()\n    a.y()\n", "  }\n  return a\n}\n"
    assert clean_cut("    a.z()\n", prefix, suffix, "javascript", prefix_truncated=False) == "    a.z()\n"


def test_a_block_header_over_lines_of_its_own_level_is_not_shown():
    # a `{` left open at the end of the text over a next line indented no deeper: nothing gives its `}` where the
    # window ends before the function does (npm's qrcode-terminal; zod's `if (normaliz|` + `edTarget) {`)
    body = "".join(f"  var row{i} = render(platte, {i})\n" for i in range(120))
    prefix, suffix = "function draw (qrcode, platte) {\n  qrcode.make()\n", "  var top = 1\n" + body + "}\n"
    assert _shown_js(prefix, suffix, "  var size = qrcode.size\n") == "  var size = qrcode.size\n"
    assert _shown_js(prefix, suffix, "  qrcode.modules.forEach(function (row) {\n") == ""
    # an opener over deeper lines, or over its own `}`, is a block with its body: shown
    assert _shown_js(prefix, "    var top = 1\n  })\n" + body + "}\n",
                     "  qrcode.modules.forEach(function (row) {\n") == "  qrcode.modules.forEach(function (row) {\n"
    assert clean_cut("  if (qrcode.empty) {\n", prefix, "  }\n  var top = 1\n}\n", "javascript",
                     prefix_truncated=False) == "  if (qrcode.empty) {\n"
    prefix = "class G {\n  constructor (params) {\n    let target = params.target\n    if (targ"
    suffix = "\n    if (target === 'draft-7') target = 'draft-07'\n" + body.replace("  ", "    ") + "  }\n}\n"
    assert _shown_js(prefix, suffix, "et) {") == "et)"  # its clean start, a condition over the next line


def test_a_statement_the_text_starts_may_not_take_in_the_users_next_line():
    """commons-lang's FieldUtils and InheritanceUtils (session 40): at a blank line, `if (cls != null)` over the
    user's `final Class<?> cls = ...` (javac: "variable declaration not allowed here") and `final` over `d = ...`
    make the next line part of what the text starts. Over deeper lines a header is a block's with its body; a
    label, an annotation over a method and a statement the prefix started are not read."""
    from dg_lsp.completion.gate_structure import takes_the_next_line

    prefix = "class A {\n  Object f(Object target) {\n    int d = 1;\n    "
    suffix = "\n    final Class<?> cls = target.getClass();\n    return cls;\n  }\n}\n"
    for text in ("if (cls != null)", "final", "use(d);\n    while (d-- > 0)"):
        assert takes_the_next_line(prefix, text, suffix, "java"), text
        assert clean_cut(text, prefix, suffix, "java") in ("", "use(d);")
    assert clean_cut("if (d > 0) {", prefix, suffix, "java") == ""  # a block opened over it: the older rule's
    for text in ("use(d);", "d++; // one more", "outer:"):
        assert not takes_the_next_line(prefix, text, suffix, "java"), text
    deeper = "\n      final Class<?> cls = target.getClass();\n    }\n    return null;\n  }\n}\n"
    assert not takes_the_next_line(prefix, "if (d > 0) {", deeper, "java")
    assert not takes_the_next_line(prefix, "if (d > 0)", deeper, "java")
    assert not takes_the_next_line("class A {\n  ", "@Override", "\n  public String toString() { return s; }\n}\n",
                                    "java")
    assert not takes_the_next_line(prefix + "if (d > 0", ")", suffix, "java")  # the prefix started it
    # JavaScript without semicolons: a line that runs into a next line starting with `[`
    prefix, suffix = "function f (a) {\n  const x = a\n  ", "\n  [x, a] = [a, x]\n  return x\n}\n"
    assert takes_the_next_line(prefix, "const y = x", suffix, "javascript")
    assert not takes_the_next_line(prefix, "const y = x;", suffix, "javascript")
    prefix, suffix = "int f(int a) {\n  int b = 0;\n  ", "\n  b = a * 2;\n  return b;\n}\n"
    assert takes_the_next_line(prefix, "if (a)", suffix, "c") and not takes_the_next_line(prefix, "a++;", suffix, "c")


def test_a_text_that_does_not_parse_where_it_stands_is_not_shown_for_the_errors_it_mends():
    # npm's prune.js: `a|` over a method's body. Without the text the body reads as class members (four errors);
    # `sync function run() {` leaves one, on `run`, inside the text: fewer errors, but the text's own
    prefix = "class Prune extends ArboristCmd {\n  static usage = ['[[<@scope>/]<pkg>...]']\n\n  a"
    suffix = ("\n    const where = this.npm.prefix\n    const opts = {\n      ...this.npm.flatOptions,\n"
              "      path: where,\n    }\n    await arb.prune(opts)\n  }\n}\n\nmodule.exports = Prune\n")
    assert _shown_js(prefix, suffix, "sync exec () {") == "sync exec () {"
    assert _shown_js(prefix, suffix, "sync function run() {") == ""


def test_the_gates_window_ends_at_the_next_top_level_statement_and_before_closers_from_above():
    from dg_lsp.completion.gate_windows import judge_window
    body = "".join(f"  total += values[{i}]\n" for i in range(40))
    doc = ("interface Options {\n  target: string;\n  over\n  depth: number;\n}\n\n"
           "export function sum (values) {\n  let total = 0\n" + body + "  return total\n}\n")
    line = 2
    ctx = extract_context(doc, "typescript", line, 6, suffix_budget=4, judge_budget=2048)
    assert ctx.suffix == "\n" and ctx.judge_suffix.endswith("return total\n}\n")  # the context's window: all of it
    # the gate's: through the interface's `}`, up to `export function`, which starts a statement at column 0
    assert judge_window(ctx.prefix, ctx) == ("\n  depth: number;\n}\n\n", True)
    # a window that starts inside a class: past the model's window, it ends before the class's `}`, which closes a
    # block opened above the window (it would read as closing nothing, with any text or without one)
    methods = "".join(f"  m{i} () {{\n    return {i}\n  }}\n\n" for i in range(30))
    doc = "class Big {\n" + methods + "  last () {\n    return v\n  }\n}\n\nmodule.exports = Big\n"
    line = doc.count("\n", 0, doc.index("return v"))
    ctx = extract_context(doc, "javascript", line, 4, prefix_budget=40, suffix_budget=3, judge_budget=2048)
    assert ctx.prefix_truncated and ctx.suffix == "return v\n"
    assert judge_window(ctx.prefix, ctx) == ("return v\n  }\n", True)
    # C and C++ put a namespace's code at column 0: no statement cut there
    doc = "namespace n {\nint f() {\n  int a = 1;\n  a\n  return a;\n}\nint g() { return 2; }\n}\n"
    ctx = extract_context(doc, "cpp", 3, 3, suffix_budget=2, judge_budget=2048)
    assert judge_window(ctx.prefix, ctx) == (ctx.judge_suffix, False)


def test_a_window_that_starts_inside_a_class_still_asks_for_a_lost_method_header():
    # cordova-android's SystemWebViewEngine.java: `public View getView() {` lost under `@Override`, in a window that
    # starts inside the class. The method's `}` closes nothing in the window; the line above the hole is at its level,
    # so the body below is the lost method's, not the hole's
    prefix = "  parent () {\n    return this.parent\n  }\n\n"
    suffix = "    return this.view\n  }\n\n  other () {\n    return 1\n  }\n}\n"
    right, wrong = "  getView () {\n", "  // the view\n"
    assert clean_cut(right, prefix, suffix, "javascript", prefix_truncated=True) == right
    assert clean_cut(wrong, prefix, suffix, "javascript", prefix_truncated=True) == ""
    # a hole in a body whose block opened above the window: the line above is deeper than the closer
    prefix, suffix = "    const a = 1\n", "    return a\n  }\n"
    assert clean_cut("    const b = 2\n", prefix, suffix, "javascript", prefix_truncated=True) == "    const b = 2\n"


def test_a_text_ending_in_a_block_header_with_no_body_is_cut_where_the_window_starts_inside_a_signature():
    """click's termui.py `style()`: its signature and docstring are longer than the prompt's window, so the window
    starts inside the signature and never compiles, and Python's first complaint is at that cut. The lines nearer
    the hole (from a least-indented line above it) judge a text that breaks lines too: `if not p3:` ending the text,
    over blank lines and the next function, has no body, and was shown."""
    params = "".join(f"    p{i}: int | None = None,\n" for i in range(40))
    docstring = '    """Style.\n\n' + "".join(f"    Line {i} of the docstring, long enough to take room.\n"
                                            for i in range(50)) + '    """\n'
    doc = ("def style(\n" + params + ") -> str:\n" + docstring + "    bits = []\n    if p1:\n        bits.append(p1)\n"
           "    \n\n\ndef plain(text):\n    return text\n")
    row = doc.split("\n").index("        bits.append(p1)") + 1
    ctx = extract_context(doc, "python", row, 4)
    assert ctx.prefix.startswith("    p")  # the window starts inside the signature
    raw = "if not p2:\n        bits.append(p2)\n    if not p3:"
    assert finish_suggestion(raw, [], ctx.prefix, ctx, selection=False, max_lines=8) == \
        "if not p2:\n        bits.append(p2)"


def test_a_block_statement_at_a_blank_line_above_code_at_its_depth_is_shown_through_its_closing_brace():
    """One statement is shown at a blank line above code at the cursor's depth: in a brace language a block statement
    ends with its `}` line (back at the cursor's depth), which was cut before, leaving the block open: not shown."""
    prefix, suffix = "function f(n) {\n  const a = 1;\n  ", "\n  return n;\n}\n"
    block = "if (n < 0) {\n    n = -n;\n  }"
    assert _shown_js(prefix, suffix, block + "\n  return n * 2;") == block
    both = "if (n < 0) {\n    n = -n;\n  } else {\n    n = 1;\n  }"
    assert _shown_js(prefix, suffix, both + "\n  log(n);") == both
    assert _shown_js(prefix, suffix, "n = -n;\n  return n;") == "n = -n;"


@pytest.mark.parametrize("language,prefix,text,scope_prefix", [
    ("java", '        return 1;\n    }\n\n    String join(String[] tokens) {\n        String s = "x";\n'
             '        return String.join(" ", ', "tokens);",
     '    String join(String[] tokens) {\n        String s = "x";\n        return String.join(" ", '),
    ("php", '        return 1;\n    }\n\n    public function join(array $tokens): string\n    {\n'
            '        return implode(" ", ', "$tokens);",
     '    public function join(array $tokens): string\n    {\n        return implode(" ", '),
])
def test_a_text_that_completes_the_whole_scope_is_shown_whatever_a_window_cut_inside_its_class_reads(
        language, prefix, text, scope_prefix):
    """A window that starts inside a class reads the class's `}` as closing nothing; without the text that `}` is
    inside the error the cut line makes, and a text that mends the line lets it out as an error of its own. Where the
    scope's every line is in the window (`scope_is_whole`), a text after which the scope parses clean with every
    bracket closed is shown (symfony/console's ArgvInput: `return implode(' ', ` + `$tokens);`); one that leaves the
    scope broken or closes its block early is not."""
    suffix, scope = "\n    }\n}\n", (scope_prefix, "\n    }\n")
    assert clean_cut(text, prefix, suffix, language, scope, False, True) == ""  # the window's reading alone
    assert clean_cut(text, prefix, suffix, language, scope, False, True, whole_scope=True) == text
    assert clean_cut(text + " }", prefix, suffix, language, scope, False, True, whole_scope=True) == ""
    assert clean_cut(text[:-2], prefix, suffix, language, scope, False, True, whole_scope=True) == ""


def test_the_scope_is_whole_where_the_window_holds_its_header_and_its_last_line():
    from dg_lsp.completion.gate_windows import scope_is_whole

    source = "class A {\n    int f() {\n        int x = 1;\n        return x;\n    }\n}\n"
    ctx = extract_context(source, "java", 3, 8)
    assert ctx.enclosing.name == "f"
    assert scope_is_whole(ctx.prefix, ctx.suffix, ctx)
    assert not scope_is_whole(ctx.prefix.split("\n", 2)[2], ctx.suffix, ctx)  # the header's line not in the window
    assert not scope_is_whole(ctx.prefix, "\n", ctx)  # nor its last


def test_a_line_rest_in_a_test_callback_is_shown_in_its_whole_scope():
    # `assert.deepEqual(document.positio|`: the line's `(` left open, tree-sitter ran the callback on past its
    # `});` to the file's end, and the scope so read (the next test's lines in it) broke with the right rest too;
    # ended at its `}` by indentation (`scopes._closed_by_indentation`), the callback is whole with it
    prefix = ("suite('lines', () => {\n"
              "\ttest('first', () => {\n"
              "\t\tconst document = newDocument('\\nABCDE');\n"
              "\t\tassert.deepEqual(document.positionAt(1), Positions.create(1, 0));\n"
              "\t\tassert.deepEqual(document.positio")
    suffix = ("\n\n\t});\n\n\ttest('second', () => {\n\t\tlet document = newDocument('ABCDE\\rFGHIJ');\n"
              "\t\tassert.equal(document.lineCount, 2);\n\t});\n});\n")
    lines = prefix.split("\n")
    ctx = extract_context(prefix + suffix, "typescript", len(lines) - 1, len(lines[-1]))
    rest = "nAt(6), Positions.create(1, 5));"
    assert finish_suggestion(rest, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix) == rest


def _shown_at(source: str, language: str, text: str) -> str:
    """What the server shows for the engine answer `text` at the @@ of `source`, with the whole document."""
    prefix, suffix = source.split("@@")
    lines = prefix.split("\n")
    ctx = extract_context(prefix + suffix, language, len(lines) - 1, len(lines[-1]))
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)


_ALLMAN_CLASS = ("using System;\n"
                 "\n"
                 "namespace MediatR.Examples;\n"
                 "\n"
                 "@@{\n"
                 "    private readonly TextWriter _writer;\n"
                 "\n"
                 "    public Pinged(TextWriter writer)\n"
                 "    {\n"
                 "        _writer = writer;\n"
                 "    }\n"
                 "}\n")
_ALLMAN_LAMBDA = ("class Runner\n"
                  "{\n"
                  "    private static IMediator Build(Writer writer)\n"
                  "    {\n"
                  "        var services = new ServiceCollection();\n"
                  "@@        {\n"
                  "            cfg.Scan(typeof(Ping));\n"
                  "        });\n"
                  "        return services.Build();\n"
                  "    }\n"
                  "}\n")


def test_a_line_that_heads_no_block_over_a_brace_on_its_own_line_is_not_shown():
    # GNU and Allman styles: the `{` alone on the line below is the hole's line's block. A `using` or a statement
    # there leaves it a bare block (the class's members, the lambda's statements), which the window's error count
    # misses: without the line the file was as broken (`gate_structure.leaves_a_bare_block`)
    assert _shown_at(_ALLMAN_CLASS, "csharp", "using System.Threading;\n") == ""
    assert _shown_at(_ALLMAN_CLASS, "csharp", "public class Pinged : INotificationHandler<Pinged>\n") \
        == "public class Pinged : INotificationHandler<Pinged>\n"
    assert _shown_at(_ALLMAN_LAMBDA, "csharp", "        var mediator = services.GetService<IMediator>();\n") == ""
    assert _shown_at(_ALLMAN_LAMBDA, "csharp", "        services.AddMediatR(cfg =>\n") \
        == "        services.AddMediatR(cfg =>\n"


def test_a_bare_block_the_code_already_has_is_read_as_a_block():
    # a `case` label over its `{` heads it; in Go (no GNU or Allman style there) a statement over a bare block stays
    source = ("int run(int kind) {\n"
              "    switch (kind) {\n"
              "@@    {\n"
              "        return 1;\n"
              "    }\n"
              "    }\n"
              "    return 0;\n"
              "}\n")
    assert _shown_at(source, "c", "    case 1:\n") == "    case 1:\n"
    go = "package m\n\nfunc run() int {\n\tx := 1\n@@\t{\n\t\tx++\n\t}\n\treturn x\n}\n"
    assert _shown_at(go, "go", "\tx += 2\n") == "\tx += 2\n"


def test_a_call_whose_first_line_was_at_the_hole_must_get_its_bracket_back():
    # the hole was `  EXPECT_EQ(fmt::detail::type_of(args),`: the line below ends the call, its `)` meeting the
    # function's `{` (`brackets.lost_opener`, whose closer need not start its line where it is a `)` or `]` on a
    # line below the hole's); a whole statement there leaves that line dangling
    source = ("TEST(no_builtin_types_test, double_is_custom_type) {\n"
              "  double d = 42;\n"
              "  auto args = fmt::make_format_args(d);\n"
              "@@"
              "            fmt::detail::type::custom_type);\n"
              "}\n")
    assert _shown_at(source, "cpp", '  EXPECT_EQ(fmt::format("{}", 42L), "42");\n') == ""
    assert _shown_at(source, "cpp", "  EXPECT_EQ(fmt::detail::type_of(args),\n") \
        == "  EXPECT_EQ(fmt::detail::type_of(args),\n"


def test_a_text_the_whole_file_reads_clean_with_is_shown_whole():
    # a window cut inside a class: the field's line, read without the class, merged with the constructor below it
    # into one broken scope, where `put;` added an error and its cut `put` did not; `put` leaves the file broken,
    # `put;` leaves it clean, which is what the gate reads where the whole document parses with the text
    members = "".join(f"        public int Value{i}(int x)\n        {{\n            return x + {i};\n        }}\n\n"
                      for i in range(100))
    source = ("namespace MediatR.Tests;\n\npublic class PipelineTests\n{\n"
              "    public class ConcreteBehavior : IStreamPipelineBehavior<Ping, Pong>\n    {\n" + members
              + "        private readonly Logger _out@@\n\n        public ConcreteBehavior(Logger output)\n        {\n"
              "            _output = output;\n        }\n    }\n}\n")
    prefix = source.split("@@")[0]
    lines = prefix.split("\n")
    ctx = extract_context(source.replace("@@", ""), "csharp", len(lines) - 1, len(lines[-1]))
    assert ctx.prefix_truncated  # the class's header is not in the window
    assert _shown_at(source, "csharp", "put;") == "put;"
    # a text the file does not read clean with is judged by the windows
    assert _shown_at(source, "csharp", "put; {") != "put; {"


def test_a_lost_function_header_is_seen_past_a_directive_at_column_0():
    # the hole was `TEST(assert_test, fail) {`: the body's first line is a `#if` at column 0, the code under it
    # indented (`brackets.lost_opener` reads the body's first line that is no directive)
    source = ('#include "fmt/base.h"\n'
              '#include "gtest/gtest.h"\n'
              '\n'
              '@@'
              '#if GTEST_HAS_DEATH_TEST\n'
              '  EXPECT_DEBUG_DEATH(FMT_ASSERT(false, "don\'t panic!"), "don\'t panic!");\n'
              '#else\n'
              '  fmt::print("warning: death tests are not supported\\n");\n'
              '#endif\n'
              '}\n')
    assert _shown_at(source, "cpp", '#include "gtest/gtest.h"\n') == ""
    assert _shown_at(source, "cpp", "TEST(assert_test, fail) {\n") == "TEST(assert_test, fail) {\n"


def test_a_window_that_starts_inside_a_raw_string_is_read_from_the_code_after_it():
    # cobra's completion scripts: the window starts inside a long Go raw string, so the bracket scan read the
    # string's closing backtick as an opening and the hole as inside a string, and the structure rules stood down;
    # read from the line after the declaration that holds the string (`postprocess._window_after_a_literal`, the
    # whole document's parse), a comment where the function's header was is refused (its `{` is lost)
    body = "".join(f"__complete_{i}() {{\n    local cur prev words cword\n"
                   f"    _get_comp_words_by_ref -n \"=:\" cur prev\n}}\n" for i in range(60))
    source = ("package cobra\n\nimport \"io\"\n\nvar script = `\n" + body + "`\n\n"
              "// GenScript writes the script.\n@@\treturn write(w, script)\n}\n")
    prefix = source.split("@@")[0]
    document = source.replace("@@", "")
    ctx = extract_context(document, "go", prefix.count("\n"), 0)
    assert ctx.prefix_truncated  # the server's window: the prompt's prefix, which starts inside the string

    def shown(text: str) -> str:
        return finish_suggestion(text, [], ctx.prefix, ctx, selection=False, max_lines=8, document=document)
    assert shown("// Copyright 2013-2023 The Cobra Authors\n") == ""
    assert shown("func GenScript(w io.Writer) error {\n") == "func GenScript(w io.Writer) error {\n"


def test_a_text_that_closes_its_whole_scope_early_is_not_shown():
    # google/uuid: `\t}{` where the loop's header was closes the function's `{`, and the stray `}` it leaves at the
    # function's end reads as the one the hole left without it (`gate._leaves_a_block_open`)
    source = ("package uuid\n\n"
              "func BenchmarkUnmarshalJSON(b *testing.B) {\n"
              "\tjs := []byte(`{\"uuid\":\"f47ac10b\"}`)\n"
              "\tvar x *struct {\n"
              "\t\tUUID UUID `json:\"uuid\"`\n"
              "\t}\n"
              "@@"
              "\t\terr := json.Unmarshal(js, &x)\n"
              "\t\tif err != nil {\n"
              "\t\t\tb.Fatalf(\"marshal json: %#v (%v)\", js, err)\n"
              "\t\t}\n"
              "\t}\n"
              "}\n")
    assert _shown_at(source, "go", "\t}{\n") == ""
    assert _shown_at(source, "go", "\tfor i := 0; i < b.N; i++ {\n") == "\tfor i := 0; i < b.N; i++ {\n"
