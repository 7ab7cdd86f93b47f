"""An inline suggestion that reads a name nothing binds (`completion.unbound.without_unbound`, run by
`postprocess.finish_suggestion` with the whole document): cut before that line where the lines before it are whole
and clean, else not shown."""

from __future__ import annotations

from dg_lsp.completion.unbound import unbound_names, without_unbound

DOC = "import os\n\n\ndef f(a):\n    x = a\n    \n    return x\n"
AT = (5, 4)  # the blank line's indentation


def shown(text: str, clean=lambda kept: True) -> str:
    return without_unbound(text, DOC, AT, AT, "python", clean)


def test_a_suggestion_that_reads_only_bound_names_is_kept_whole():
    assert shown("y = os.path.join(a, x)\n") == "y = os.path.join(a, x)\n"


def test_a_made_up_name_on_the_first_line_is_not_shown():
    assert shown("y = node_concat(a)\n") == ""


def test_a_made_up_name_on_a_later_line_cuts_before_that_line():
    # a whole-line hole's text ends its lines: the kept line keeps its break
    assert shown("y = a\n    z = helper(y)\n") == "y = a\n"
    # a text that starts its lines (written after code on the cursor's line) does not end in a break
    assert shown("\n    y = a\n    z = helper(y)") == "\n    y = a"


def test_the_lines_kept_must_be_clean_by_themselves():
    assert shown("if a:\n        z = helper(a)\n", clean=lambda kept: not kept.rstrip().endswith(":")) == ""


def test_the_names_are_read_with_the_suggestion_over_its_range():
    # the selected `x = a` is replaced: the fill's `y` binds nothing that `return x` needs, but reads no unbound name
    assert unbound_names(DOC, (4, 4), (4, 9), "y = a", "python") == []
    assert unbound_names(DOC, (4, 4), (4, 9), "x = b", "python") == [("b", 4)]


def test_javascript_and_typescript_are_read_too():
    doc = "function f(a) {\n  \n}\n"
    assert unbound_names(doc, (1, 2), (1, 2), "nodeConcat(a);", "javascript") == [("nodeConcat", 0)]
    assert unbound_names(doc, (1, 2), (1, 2), "console.log(a);", "javascript") == []
    assert unbound_names(doc, (1, 2), (1, 2), "return a + b;", "typescript") == [("b", 11)]
    assert without_unbound("const b = a;\n  return nodeConcat(b);", doc, (1, 2), (1, 2), "javascript",
                           lambda kept: True) == "const b = a;"


def test_other_languages_are_not_read():
    assert unbound_names("func f() {\n  \n}\n", (1, 2), (1, 2), "nodeConcat(a)", "go") == []


def test_the_name_check_setting_and_its_flag_turn_it_off():
    """`nameCheck` false (`--no-name-check`): a call to a function not yet written is shown, as the model wrote it."""
    from dg_lsp.cli import _settings, build_parser
    from dg_lsp.completion import CompletionRequest, CompletionService
    from dg_lsp.config import Settings
    from dg_lsp.engine import InfillResult

    doc = "def f(a):\n    x = \n"
    for settings, expected in ((Settings(), ""), (Settings(name_check=False), "helper(a)")):
        service = CompletionService(engine=None, settings=settings)
        p = service._prepare(CompletionRequest(doc, "python", 1, 8, doc_key="k"))  # noqa: SLF001
        assert service._finish(p, InfillResult(text="helper(a)")) == (expected, None)  # noqa: SLF001
    assert _settings(build_parser().parse_args(["serve"])).name_check is True
    assert _settings(build_parser().parse_args(["serve", "--no-name-check"])).name_check is False


def test_a_name_typed_before_the_cursor_and_finished_by_the_suggestion_is_read():
    """jinja2's optimizer.py: `Opt` typed, `imization(node, environment)` suggested: `Optimization` is bound nowhere."""
    doc = "def f(node, environment):\n    return Opt\n"
    at = (1, len("    return Opt"))
    assert unbound_names(doc, at, at, "imization(node)", "python") == [("Optimization", 0)]
    assert without_unbound("imization(node)", doc, at, at, "python", lambda kept: True) == ""
    assert unbound_names(doc, at, at, "", "python") == []
    assert unbound_names("def f(node, Optimizer):\n    return Opt\n", at, at, "imizer(node)", "python") == []


CLASS_DOC = "class Queue:\n    def __init__(self, items):\n        self._items = items\n\n    def copy(self):\n" \
            "        \n"


def test_an_attribute_the_class_never_binds_is_cut_like_a_name():
    at = (5, 8)
    assert unbound_names(CLASS_DOC, at, at, "return self._copy()", "python") == [("self._copy", 7)]
    assert without_unbound("items = self._items\n        return self._copy(items)\n", CLASS_DOC, at, at, "python",
                           lambda kept: True) == "items = self._items\n"
    assert without_unbound("return list(self._items)", CLASS_DOC, at, at, "python",
                           lambda kept: True) == "return list(self._items)"
