"""`python -m dg_lsp.bench.diagnostics.editing`: an editor's edits through the real server (the tiny model), each
answer applied to its document and judged. Its pure parts on known texts; one run end to end."""

from __future__ import annotations

import json
import random

import pytest

from dg_lsp.bench.diagnostics import editing

from .conftest import tiny_model_path

pytestmark = pytest.mark.timeout(300)

SOURCE = ("def f(xs):\n    \"\"\"Doc.\"\"\"\n    total = sum(xs)\n    total += 1\n    return total\n\n\n"
          "def g(a):\n    b = a * 2\n    return b\n")


def test_each_scenario_edits_the_statement_as_a_user_would():
    rows = editing.statements(SOURCE, random.Random(0), 10)
    assert sorted(rows) == [2, 3, 4, 9]  # not the docstring, not g's first statement
    row, code = 3, "total += 1"
    start = SOURCE.index(code)
    assert editing.edit(SOURCE, row, "select", random.Random(0)) == (SOURCE, start, start + len(code), code)
    doc, at, end, deleted = editing.edit(SOURCE, row, "newline", random.Random(0))
    assert doc == SOURCE.replace(code + "\n", code + "\n    \n") and at == start + len(code) + 5
    assert end is None and deleted is None
    doc, at, _, deleted = editing.edit(SOURCE, row, "blank", random.Random(0))
    assert doc == SOURCE.replace(code, "") and at == start and deleted == code
    doc, at, _, deleted = editing.edit(SOURCE, row, "rest", random.Random(0))
    assert doc[:at].endswith("    " + code[:len(code) - len(deleted)]) and doc[at:].startswith("\n    return total")


JS = ("function f(xs) {\n  // sum\n  let total = 0;\n  for (const x of xs) total += x;\n  total += 1;\n"
      "  if (total) { total--; }\n  return total;\n}\n")


def test_other_languages_take_their_one_line_statements_and_judge_by_tree_sitter():
    rows = editing.statements(JS, random.Random(0), 10, "javascript")
    assert sorted(rows) == [4, 6]  # not the first statement, the comment, the loop or the if
    assert editing.compiles(JS, "javascript")
    assert not editing.compiles(JS.replace("total += 1;", "total += (1;"), "javascript")
    doc, at, end, deleted = editing.edit(JS, 4, "select", random.Random(0))
    assert doc[at:end] == deleted == "total += 1;"


def test_go_statements_are_read_inside_the_blocks_statement_list():
    go = ("package p\n\nfunc f(xs int) int {\n\ttotal := xs\n\ttotal += 1\n\tif total > 2 {\n\t\ttotal--\n\t}\n"
          "\treturn total\n}\n")
    assert sorted(editing.statements(go, random.Random(0), 10, "go")) == [4, 8]  # not the first, not the if's body


def test_ruby_statements_are_its_assignments_calls_and_returns():
    ruby = ("def f(xs)\n  total = xs\n  total += 1\n  log(total)\n  if total > 2\n    total -= 1\n  end\n"
            "  return total\nend\n")
    # not the first, not the if or its body
    assert sorted(editing.statements(ruby, random.Random(0), 10, "ruby")) == [2, 3, 7]


def test_bash_statements_are_its_commands_assignments_and_locals():
    bash = ("f() {\n  local total=$1\n  total=$((total + 1))\n  log \"$total\"\n  if [ \"$total\" -gt 2 ]; then\n"
            "    total=1\n  fi\n  echo \"$total\"\n}\n")
    # not the first, not the if or its body
    assert sorted(editing.statements(bash, random.Random(0), 10, "bash")) == [2, 3, 7]


def test_lua_statements_are_its_assignments_locals_calls_and_returns():
    lua = ("local function f(xs)\n  local total = xs\n  total = total + 1\n  log(total)\n  if total > 2 then\n"
           "    total = total - 1\n  end\n  return total\nend\n")
    # not the first, not the if or its body
    assert sorted(editing.statements(lua, random.Random(0), 10, "lua")) == [2, 3, 7]


# per checker: the file (under the test's folder), its language, the statement's row, and a text that declares its
# name again
CASES = {
    "node": ("mod.js", JS, "javascript", 4, "let total = 2;"),
    "gcc": ("mod.c", "int f(int xs) {\n  int total = xs;\n  total += 1;\n  return total;\n}\n", "c", 2,
            "int total = 2;"),
    "javac": ("Mod.java", "class Mod {\n  int f(int xs) {\n    int total = xs;\n    total += 1;\n    return total;\n"
              "  }\n}\n", "java", 3, "int total = 2;"),
    "go": ("src/p/mod.go", "package p\n\nfunc f(xs int) int {\n\ttotal := xs\n\ttotal += 1\n\treturn total\n}\n", "go",
           4, "total := 2"),
    # Rust lets a name be declared again: the text assigns to an immutable local instead
    "cargo": ("src/lib.rs", "pub fn f(xs: i32) -> i32 {\n    let mut total = xs;\n    total += 1;\n    total\n}\n",
              "rust", 2, "let total = 1; total = 2;"),
    # Python declares by assigning: the text reads a name nothing binds instead
    "pyflakes": ("mod.py", "def f(xs):\n    total = xs\n    total += 1\n    return total\n", "python", 2,
                 "total += missing"),
    # an undeclared name, which TypeScript's compiler reports in JavaScript too ("Cannot find name")
    "tsc-names": ("mod.js", JS, "javascript", 4, "total += missing;"),
    # PHP: a `break` outside any loop, which PHP's compiler refuses (a fatal error before the code runs)
    "php": ("mod.php", "<?php\nfunction f($xs) {\n    $total = $xs;\n    $total += 1;\n    return $total;\n}\n",
            "php", 3, "break;"),
    # Ruby: an `end` that closes the method early, whose own `end` then closes nothing: tree-sitter-ruby reads that
    # one as a name, with no error node
    "ruby": ("mod.rb", "def f(xs)\n  total = xs\n  total += 1\n  total\nend\n", "ruby", 2, "end"),
    # Lua: `...` in a function that takes none, which luac refuses and tree-sitter-lua parses
    "luac": ("mod.lua", "local function f(xs)\n  local total = xs\n  total = total + 1\n  return total\nend\n",
             "lua", 2, "total = ..."),
    # Bash: a `fi` that closes nothing, which `bash -n` refuses and tree-sitter-bash reads as a command
    "bash": ("mod.sh", "f() {\n  local total=$1\n  total=$((total + 1))\n  echo \"$total\"\n}\n", "bash", 2, "fi"),
    "mypy": ("cls.py", "class Q:\n    def f(self):\n        total = 0\n        total += 1\n        return total\n",
             "python", 3, "total += self.missing"),
}


# per language, where it is not `total += 2;`: a text each compiler takes
FINE = {"go": "total += 2", "php": "$total += 2;", "lua": "total = total + 2", "bash": "total=2"}


@pytest.mark.parametrize("checker", sorted(CASES))
def test_the_languages_own_compiler_sees_what_the_parse_does_not(tmp_path, checker):
    """`--check-with`: a name declared twice parses clean, and Node, gcc, javac and go refuse it (go: in a GOPATH, the
    `src` folder above the file); so does an assignment to an immutable local, which cargo refuses (a crate whose
    dev-dependency is nowhere: checking its library does not need it), a name nothing binds, which pyflakes
    reports (and TypeScript's compiler, in JavaScript: `tsc-names`), an attribute the class does not have, which
    mypy reports, PHP's `break` outside a loop, which `php -l` refuses, Ruby's stray `end`, which `ruby -c`
    refuses, Lua's `...` outside a function that takes it, which `luac -p` refuses, and Bash's `fi` that closes
    nothing, which `bash -n` refuses."""
    from dg_lsp.bench.diagnostics.compilers import available

    if available(checker):
        pytest.skip(available(checker))
    name, source, language, row, twice = CASES[checker]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    if checker == "cargo":  # a crate of its own, with no dependencies and no Cargo.lock
        (tmp_path / "Cargo.toml").write_text('[package]\nname = "m"\nversion = "0.1.0"\nedition = "2021"\n\n'
                                             '[dev-dependencies]\nnot-there = "1"\n', encoding="utf-8")
    rows = [{"file": str(path), "line": row + 1, "scenario": "select", "shown": True, "text": text,
             "language": language} for text in (twice, FINE.get(language, "total += 2;"))]
    editing.check_with(rows, checker, 0)
    assert [r["compiler_broken"] for r in rows] == [True, False] and all(r["compiler_judged"] for r in rows)
    assert rows[0]["compiler_errors"] and rows[1]["compiler_errors"] == []
    assert editing.compiles(source, language)  # the parse sees nothing wrong in either
    table = editing.report([dict(r, broken=False, repeats=False, exact=False, ms=1.0, reason=None) for r in rows],
                           checker).splitlines()
    assert f"| broken ({checker}) | judged ({checker}) |" in table[0]
    assert table[2].startswith("| select | 2 | 2 | 0 | 1 | 2 |")


def test_a_suggestion_that_is_the_next_lines_again_counts_as_repeating_them():
    doc, at, _, _ = editing.edit(SOURCE, 3, "newline", random.Random(0))
    assert editing.repeats_below(doc, at, "return total")
    assert not editing.repeats_below(doc, at, "total *= 2")
    assert not editing.repeats_below(doc, at, "")


def test_a_run_through_the_real_server_applies_and_judges_every_answer(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text(SOURCE, encoding="utf-8")
    out = tmp_path / "rows.json"
    assert editing.main([str(path), "--model", tiny_model_path(), "--per-file", "2", "--json", str(out)]) == 0
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert {r["scenario"] for r in rows} == set(editing.SCENARIOS) and len(rows) == 8
    for r in rows:
        assert r["broken"] <= r["shown"]  # only an answer can break the file
        if r["scenario"] == "select" and not r["shown"]:
            assert r["reason"]  # a fill not sent to the editor says why
    report = editing.report(rows)
    assert report.splitlines()[0].startswith("| scenario | positions |")
