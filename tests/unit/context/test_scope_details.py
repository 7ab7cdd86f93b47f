"""Scope kinds, names and ranges in less common shapes, and robustness fallbacks."""

from __future__ import annotations

import pytest

from dg_lsp.context import Scope, extract_context

from .helpers import after, at


def chain(source: str, language: str, position: tuple[int, int]) -> list[tuple]:
    ctx = extract_context(source, language, *position)
    return [(s.kind, s.name, s.start_line, s.end_line) for s in ctx.scopes]


@pytest.mark.parametrize(
    ("language", "source", "needle", "expected"),
    [
        (
            "python",
            "class A:\n    @property\n    def size(self):\n        return 1\n",
            "return",
            [("class", "A", 0, 3), ("method", "size", 1, 3)],  # decorators start the scope
        ),
        (
            "python",
            "async def fetch(url):\n    data = await get(url)\n",
            "data",
            [("function", "fetch", 0, 1)],
        ),
        (
            "javascript",
            "const obj = {\n  run: function () {\n    go();\n  },\n};\n",
            "go()",
            [("function", "run", 1, 3)],
        ),
        (
            "javascript",
            "let handler;\nhandler = async (e) => {\n  stop(e);\n};\n",
            "stop(e)",
            [("function", "handler", 1, 3)],
        ),
        (
            "javascript",
            "function* gen() {\n  yield 1;\n}\n",
            "yield",
            [("function", "gen", 0, 2)],
        ),
        (
            "typescript",
            "abstract class Base {\n  abstract id(): string;\n  name(): string {\n    return 'b';\n  }\n}\n",
            "return",
            [("class", "Base", 0, 5), ("method", "name", 2, 4)],
        ),
        (
            "typescript",
            "interface Shape {\n  area(): number;\n}\n",
            "area",
            [("interface", "Shape", 0, 2)],
        ),
        (
            "go",
            "package m\n\ntype Reader interface {\n\tRead() int\n}\n",
            "Read()",
            [("interface", "Reader", 2, 4)],
        ),
        (
            "go",
            "package m\n\nfunc f() {\n\tgo func() {\n\t\twork()\n\t}()\n}\n",
            "work()",
            [("function", "f", 2, 6), ("function", None, 3, 5)],
        ),
        (
            "rust",
            "trait Speak {\n    fn speak(&self) -> String {\n        String::new()\n    }\n}\n",
            "String::new",
            [("trait", "Speak", 0, 4), ("method", "speak", 1, 3)],
        ),
        (
            "rust",
            "enum Color {\n    Red,\n    Green,\n}\n",
            "Green",
            [("enum", "Color", 0, 3)],
        ),
        (
            "java",
            "interface Greeter {\n    default String hi() {\n        return \"hi\";\n    }\n}\n",
            "return",
            [("interface", "Greeter", 0, 4), ("method", "hi", 1, 3)],
        ),
        (
            "java",
            "record Point(int x, int y) {\n    Point {\n        check(x);\n    }\n}\n",
            "check",
            [("class", "Point", 0, 4), ("method", "Point", 1, 3)],
        ),
        (
            "c",
            "static const char **\nnames(void)\n{\n    return table;\n}\n",
            "return",
            [("function", "names", 0, 4)],  # GNU style: return type on its own line
        ),
        (
            "c",
            "int f(void) {\nint x = 1;\nreturn x;\n}\n",
            "return",
            [("function", "f", 0, 3)],  # unindented body
        ),
        (
            "cpp",
            "namespace ns {\nint Box::size() const {\n  return n;\n}\n}\n",
            "return",
            [("function", "Box::size", 1, 3)],
        ),
        (
            "cpp",
            "template <typename T>\nstruct Holder {\n  T get() { return value; }\n  T value;\n};\n",
            "return",
            [("struct", "Holder", 1, 4), ("method", "get", 2, 2)],
        ),
        (
            "cpp",
            "class Widget {\n public:\n  ~Widget() {\n    release();\n  }\n};\n",
            "release",
            [("class", "Widget", 0, 5), ("method", "~Widget", 2, 4)],
        ),
    ],
)
def test_kinds_names_and_ranges(language, source, needle, expected):
    assert chain(source, language, at(source, needle)) == expected


def test_python_trailing_comment_stays_in_the_function_when_indented():
    source = "def f():\n    x = 1\n    # done\n    \n\ny = 2\n"
    assert chain(source, "python", (3, 4)) == [("function", "f", 0, 3)]
    assert chain(source, "python", (4, 0)) == []


def test_python_blank_line_between_methods_is_in_the_class_only():
    source = "class A:\n    def a(self):\n        pass\n\n    def b(self):\n        pass\n"
    assert chain(source, "python", (3, 0)) == [("class", "A", 0, 5)]


def test_python_column_zero_lines_inside_a_string_do_not_lose_the_function():
    source = 'def query():\n    sql = """\nSELECT *\nFROM t\n"""\n    return sql\n'
    assert chain(source, "python", (3, 2)) == [("function", "query", 0, 5)]
    assert chain(source, "python", (5, 4)) == [("function", "query", 0, 5)]


def test_python_unfinished_header_falls_back_to_indentation():
    source = "class Repo:\n    def find(self, key:\n        value = self.get(\n        "
    ctx = extract_context(source, "python", *after(source, "self.get(\n        "))
    assert ctx.scopes == (Scope("class", "Repo", 0, 3), Scope("method", "find", 1, 3))


def test_brace_languages_repair_unclosed_brackets_at_end_of_file():
    source = "func main() {\n\tfor i := range xs {\n\t\tfmt.Println(i,\n\t\t"
    ctx = extract_context("package m\n" + source, "go", 4, 2)
    assert ctx.enclosing is not None
    assert (ctx.enclosing.kind, ctx.enclosing.name, ctx.enclosing.start_line) == (
        "function",
        "main",
        1,
    )


def test_nested_closures_report_outer_to_inner():
    source = "function outer() {\n  items.forEach((item) => {\n    use(item);\n  });\n}\n"
    assert chain(source, "javascript", at(source, "use(")) == [
        ("function", "outer", 0, 4),
        ("function", None, 1, 3),
    ]


# A line cut in the middle leaves the code around the hole broken; tree-sitter's recovery can then give the
# enclosing scope another end than its `}` (the gate reads the scope's lines as one whole: gate_windows).
_TESTS = (
    "suite('lines', () => {\n"
    "\ttest('first', () => {\n"
    "\t\tconst document = newDocument('\\nABCDE');\n"
    "\t\tassert.deepEqual(document.positio\n"
    "\n"
    "\t});\n"
    "\n"
    "\ttest('second', () => {\n"
    "\t\tassert.equal(lines, 2);\n"
    "\t});\n"
    "});\n"
)


def test_a_broken_line_does_not_run_its_function_on_past_its_closer():
    ctx = extract_context(_TESTS, "typescript", *after(_TESTS, "document.positio"))
    assert (ctx.enclosing.start_line, ctx.enclosing.end_line) == (1, 5)  # `\t});`, not the file's end


def test_a_broken_header_does_not_end_its_function_at_the_hole():
    source = ("export namespace Disposable {\n"
              "\texport function create(func: \n"
              "\t\treturn {\n"
              "\t\t\tdispose: func\n"
              "\t\t};\n"
              "\t}\n"
              "}\n")
    ctx = extract_context(source, "typescript", *after(source, "create(func: "))
    assert (ctx.enclosing.name, ctx.enclosing.start_line, ctx.enclosing.end_line) == ("create", 1, 5)


def test_the_parses_end_stands_where_the_indentation_does_not_give_one():
    # below the hole, a line at the header's indentation that is no `}` (a template literal's line at column 0)
    source = ("function page(x) {\n"
              "  const body = render(x, \n"
              "  const html = `\n"
              "<p>${body}</p>`;\n"
              "  return html;\n"
              "}\n")
    ctx = extract_context(source, "javascript", *after(source, "render(x, "))
    assert ctx.enclosing.name == "page" and ctx.enclosing.end_line != 3
    # where the scope's first line and its name's are indented differently (a PHP attribute the parse gave to
    # the method of a class whose header line is the hole), the parse's end stands
    php = ("<?php\n"
           "namespace Symfony\\Component\\Console\\Attribute;\n"
           "\n"
           "#[\\Attribute(\\Attribute::TARGET_CLASS)]\n"
           "{\n"
           "    public function __construct(\n"
           "        public string $name,\n"
           "    ) {\n"
           "        $this->name = $name;\n"
           "    }\n"
           "}\n")
    ctx = extract_context(php, "php", 4, 0)  # the class's line taken out: the cursor before its `{`
    assert ctx.enclosing is not None and ctx.enclosing.start_line == 3 and ctx.enclosing.end_line != 10
