"""Bash's lines as `context/bash_blocks.py` reads them (which open, continue or close a block: keywords where a command
starts, a `case` arm's pattern), and the `fi`, `done` and `esac` at a column their opener does not give, which the
syntax checks count (`end_blocks.end_faults`, `context/syntax.py`)."""

from __future__ import annotations

import pytest

from dg_lsp.context import bash_blocks
from dg_lsp.context.end_blocks import closes_only
from dg_lsp.context.syntax import error_spans


@pytest.mark.parametrize("line, kind", [
    ("if [ -f \"$x\" ]; then", "if"),
    ("if test -n \"$x\" &&", "if"),  # a condition of several lines: its `then` below
    ("for candidate in \\", "do"),  # a list of several lines: its `do` below
    ("then", "then"),
    ("elif [[ $x == y ]]; then", "elif"),
    ("else", "else"),
    ("while read -r line; do", "do"),
    ("for f in *.sh", "?do"),  # waiting for its `do` on the next line
    ("while read -r a b", "?do"),
    ("if cur == \"c\" then", "?if"),  # a `then` that is an argument: the `if` still waits for one
    ("find . -name x |", None),
    ("do", "do"),
    ("until false; do", "do"),
    ("LC_ALL=C while read -r x; do", "do"),  # after an assignment a command starts
    ("find . | while read -r f; do", "do"),
    ("case \"$1\" in", "case"),
    ("-h|--help)", "arm"),
    ("  *)", "arm"),
    ("'!')", "arm"),
    ("\"$a\" | \"$b\")", "arm"),
    ("-v) verbose=1 ;;", None),  # an arm that ends on its line
    ("if a; then b; fi", None),
    ("for x in a b; do echo \"$x\"; done", None),
    ("x=$(if a; then b; fi)", None),
    ("echo if then fi done", None),  # words, not keywords
    ("echo \"if\" # then", None),  # a string and a comment
    ("(cd build && make)", None),  # a subshell, no pattern
    ("f() {", None),  # a function's body is a bracket
    ("fi", None),
    ("done < \"$file\"", None),
    ("esac", None),
])
def test_block_kind(line, kind):
    assert bash_blocks.block_kind(bash_blocks.code_of(line)) == kind


def test_code_of_drops_a_comment_that_starts_a_word():
    assert bash_blocks.code_of('echo "#x" $# ${#a[@]} ${v#p} # note  ') == 'echo "#x" $# ${#a[@]} ${v#p}'
    assert bash_blocks.code_of("echo 'a # b'") == "echo 'a # b'"


def test_clauses_ends_and_what_takes_or_closes_what():
    assert bash_blocks.CLAUSE.match("elif x; then").group(1) == "elif"
    assert bash_blocks.CLAUSE.match("-h|--help)").group(1) == "-h|--help)"
    assert bash_blocks.CLAUSE.match("done") is None and bash_blocks.CLAUSE.match("echo x") is None
    assert bash_blocks.END.match("done < file") and bash_blocks.END.match("fi") and not bash_blocks.END.match(";;")
    assert not bash_blocks.END.match("done_list=1") and not bash_blocks.END.match("fi-x")
    assert bash_blocks.takes_clause("if", "else") and bash_blocks.takes_clause("then", "elif")
    assert bash_blocks.takes_clause("do", "do") and bash_blocks.takes_clause("case", "*)")
    assert bash_blocks.takes_clause("?do", "do") and bash_blocks.takes_clause("?if", "then")
    assert not bash_blocks.takes_clause("?if", "else") and not bash_blocks.closes("?if", "fi")
    assert bash_blocks.takes_clause("arm", "-v)") and not bash_blocks.takes_clause("if", "-v)")
    assert not bash_blocks.takes_clause("do", "else") and not bash_blocks.takes_clause("case", "else")
    assert bash_blocks.closes("if", "fi") and bash_blocks.closes("do", "done") and bash_blocks.closes("case", "esac")
    assert not bash_blocks.closes("if", "done") and not bash_blocks.closes("do", "fi")
    assert bash_blocks.before_clause("*)", "log x ;;") and not bash_blocks.before_clause("*)", "log x")
    assert bash_blocks.before_clause("else", "log x")
    assert bash_blocks.leaves_block_open("else") and not bash_blocks.leaves_block_open("-h)")
    assert closes_only("  fi\ndone\n  ;;\n", "bash") and not closes_only("  fi\necho\n", "bash")


SOURCE = """walk() {
  for f in "$@"; do
    if [ -d "$f" ]; then
      walk "$f"/*
    fi
  done
}
"""


def test_a_keyword_at_its_openers_column_is_no_error_and_one_at_another_column_is():
    assert error_spans(SOURCE, "bash") == []
    # the `if` line dropped: tree-sitter-bash reads the `fi` as a command with no ERROR node
    assert [kind for kind, _, _ in error_spans(SOURCE.replace("    if [ -d \"$f\" ]; then\n", ""), "bash")] == ["END"]
    assert [kind for kind, _, _ in error_spans(SOURCE.replace("    fi", "  fi"), "bash")] == ["END"]
