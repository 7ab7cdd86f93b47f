"""Bash: what the server shows for an engine answer in a shell script (`finish_suggestion` on the request's context:
the windows, post-processing, the syntax gate with tree-sitter-bash, Bash's brackets (`completion/brackets.py`) and
its `fi`/`done`/`esac` rules (`completion/gate_end_blocks.py`, `context/bash_blocks.py`)), in a small script."""

from __future__ import annotations

import shutil

import pytest

from dg_lsp.bench.metrics import own_check
from dg_lsp.completion.brackets import open_brackets
from dg_lsp.completion.gate_end_blocks import block_judge
from dg_lsp.completion.postprocess import finish_suggestion
from dg_lsp.context import extract_context
from dg_lsp.context.syntax import error_spans

SCRIPT = """#!/usr/bin/env bash
# Sync a directory (a comment with a ( and a fi in it)
set -euo pipefail

usage() {
  cat <<EOF
usage: sync [-n] [-v] DIR (it's a ( in a here-document)
EOF
}

log() {
  if [[ $# -eq 0 ]]; then
    return 1
  elif [[ ${#1} -gt 80 ]]; then
    printf '%s\\n' "${1:0:80}"
  else
    printf '%s\\n' "$1"
  fi
}

sync_dir() {
  local dir=$1 count=0
  find "$dir" -type f | while read -r file; do
    count=$((count + 1))
    log "copy ${file#"$dir"/}"
  done
  case "$2" in
    -n|--dry-run)
      log "dry run"
      ;;
    -v)
      log "verbose"
      ;;
    *)
      rsync -a "$dir" /backup
      ;;
  esac
}

OPTS="--all
    --quiet
    --verbose"
sync_dir "${1:-.}" "${2:-}"
"""


def _shown(text: str, line: str, hole: str = "@@", source: str = SCRIPT) -> str:
    """The shown text for the engine answer `text` where the script's line `line` (with its line break) is `hole`."""
    assert source.count(line) == 1
    prefix, suffix = source.replace(line, hole).split("@@")
    lines = prefix.split("\n")
    ctx = extract_context(prefix + suffix, "bash", len(lines) - 1, len(lines[-1]))
    assert ctx.language == "bash"
    return finish_suggestion(text, [], prefix, ctx, selection=False, max_lines=8, document=prefix + suffix)


def test_the_script_is_valid_bash_and_parses_clean():
    if shutil.which("bash") is not None:
        assert own_check(SCRIPT, "bash") is True
    assert error_spans(SCRIPT, "bash") == []


def test_functions_are_the_scopes():
    lines = SCRIPT.split("\n")
    row = lines.index('    log "copy ${file#"$dir"/}"')
    ctx = extract_context(SCRIPT, "bash", row, 4)
    assert [(s.kind, s.name) for s in ctx.scopes] == [("function", "sync_dir")]
    assert lines[ctx.scopes[0].start_line] == "sync_dir() {"
    source = SCRIPT.replace("log() {", "function log {")
    row = source.split("\n").index("    return 1")
    assert [(s.kind, s.name) for s in extract_context(source, "bash", row, 4).scopes] == [("function", "log")]


@pytest.mark.parametrize("text, still_open", [
    ("if [[ $# -eq 0 ]]; then (", ["("]),  # `$#` starts no comment
    ("n=${#list[@]}; x=${y#pre} {", ["{"]),  # nor does a `#` inside a word
    ("echo '(' \"[\" # ( [ {\n", []),  # strings and a comment
    ("cat <<EOF\n( [ {\nEOF\n{", ["{"]),  # a here-document's lines are text
    ("cat <<-'END'\n\t(\n\tEND\n[", ["["]),
    ("echo \"one (\ntwo\" [", ["["]),  # a string of two lines
    ("echo 'it\\' (", ["("]),  # no escape inside single quotes
    ("find . \\( -name x \\) {", ["{"]),  # escaped brackets outside strings
    ("case $1 in\n  a|b) x ;;\n  (c) y ;;\nesac\n{", ["{"]),  # a case pattern's `)` closes nothing
    ("echo $(( 1 << 2 )) (", ["("]),  # a shift, no here-document
    ("mask=$(( 1 << bits ))\n(", ["("]),  # a shift by a name, inside its `((`
])
def test_bashs_brackets_are_read_with_its_strings_comments_and_here_documents(text, still_open):
    assert open_brackets(text, "bash") == still_open


def test_a_blocks_end_where_it_was_is_shown_and_a_statement_there_is_not():
    line = "  fi\n}\n\nsync_dir() {\n"
    hole = "@@}\n\nsync_dir() {\n"
    assert _shown("  fi\n", line, hole) == "  fi\n"
    assert _shown("  return 0\n", line, hole) == ""  # the if left open
    assert _shown("  done\n", line, hole) == ""  # a loop's end under an if


def test_a_header_where_it_was_is_shown_and_a_statement_there_is_not():
    line = "  find \"$dir\" -type f | while read -r file; do\n"
    assert _shown(line, line) == line
    assert _shown("  local n=0\n", line) == ""  # the loop's body and its `done` left with no header
    assert _shown("  if [[ -d $dir ]]; then\n", line) == ""  # an if over the loop's `done`


def test_a_header_with_no_then_or_do_is_not_shown_over_its_blocks_clause():
    line = "  if [[ $# -eq 0 ]]; then\n"
    assert _shown("  if [ $# -eq 0 ]; then\n", line) == "  if [ $# -eq 0 ]; then\n"
    assert _shown("  if [ $# -eq 0 ]\n", line) == ""  # a `then` on no line of its own below: the `elif` is its
    assert _shown("  if x == 0 then\n", line) == ""  # a `then` that is an argument
    line = '  find "$dir" -type f | while read -r file; do\n'
    assert _shown('  find "$dir" -type f | while read -r file\n', line) == ""  # the loop's body with no `do`
    # where a loop's `done` was: an `if` with no `then` over the lines after the loop
    source = 'f() {\n  for f in "$@"; do\n    rm -f "$f"\n  done\n  echo removed\n}\n'
    assert _shown('  done\n', '  done\n', source=source) == '  done\n'
    prefix, suffix = source.split('  done\n')
    assert block_judge(prefix, suffix, "bash")('    if [[ -z "$f" ]]\n')


def test_a_condition_of_several_lines_gives_its_then_on_a_deeper_line():
    source = "f() {\n  if (( n > 2 ))\n    [[ -n $x ]]; then\n    echo \"$x\"\n  else\n    echo none\n  fi\n}\n"
    line = "  if (( n > 2 ))\n"
    assert _shown(line, line, source=source) == line
    assert _shown("    echo none\n", "    echo none\n", source=source) == "    echo none\n"


def test_an_arms_pattern_where_it_was_is_shown_and_a_statement_or_comment_there_is_not():
    line = "    -v)\n"
    assert _shown("    -v)\n", line) == "    -v)\n"
    assert _shown("    -q|--quiet)\n", line) == "    -q|--quiet)\n"
    assert _shown("    log \"verbose\"\n", line) == ""
    # the last arm: its `;;` in its body, the `esac` at the `case` line's column, left of the pattern's
    assert _shown("*)", "    *)\n", "    @@\n") == "*)"
    line = "  case \"$2\" in\n"
    assert _shown("  case \"$2\" in\n", line) == "  case \"$2\" in\n"
    assert _shown("  log \"case\"\n", line) == ""  # the arms below left with no case
    assert _shown("  # the options\n", line) == ""


def test_an_arms_end_stands_over_the_next_arm_and_nothing_else():
    line = "      ;;\n    -v)\n"
    hole = "@@    -v)\n"
    assert _shown("      ;;\n", line, hole) == "      ;;\n"
    assert _shown("      log \"again\"\n", line, hole) == ""  # the arm above left without its `;;`
    line = "      log \"verbose\"\n"
    assert _shown("      ;;\n", line) == ""  # a `;;` over a line of the arm's body


def test_the_first_line_of_a_string_of_several_lines_is_not_replaced_by_a_statement():
    line = "OPTS=\"--all\n"
    assert _shown("OPTS=\"--all\n", line) == "OPTS=\"--all\n"
    assert _shown("set -x\n", line) == ""  # the string's later lines would be read as commands


def test_an_arms_pattern_is_not_shown_over_no_body_of_its_own():
    source = ("main() {\n\tcase $prev in\n\t\t-h)\n\t\t\tusage\n\t\t\t;;\n\t\t-V)\n\t\t\tversion\n\t\t\t;;\n"
              "\tesac\n\tlocal IFS=$'\\n'\n\tcompopt -o filenames\n}\n")
    line = "\tesac\n"
    assert _shown(line, line, source=source) == line
    assert _shown("\t\t*)\n", line, source=source) == ""  # a pattern where the `esac` was: the arm empty, no `esac`
    prefix, suffix = source.split(line)
    assert block_judge(prefix, suffix, "bash")("\t\t*)\n")


def test_a_lines_start_that_leaves_a_lists_lines_below_as_commands_is_not_shown():
    source = "f() {\n  local -A OPTS=(\n    [ALL]='-h --help'\n    [ARG]='-o --output'\n  )\n  echo \"${OPTS[ALL]}\"\n}\n"
    line = "  local -A OPTS=(\n"
    assert _shown("cal -A OPTS=(", line, "  lo@@\n", source=source) == "cal -A OPTS=("
    assert _shown("cal", line, "  lo@@\n", source=source) == ""  # `local` alone is a command: nothing goes on


def test_an_arms_body_that_ends_with_its_end_of_arm_in_the_style_of_git():
    source = ("main() {\n\tcase \"$1\" in\n\thelp)\n\t\tusage ;;\n\tlog)\n\t\tshow_log || exit ;;\n"
              "\t*)\n\t\trun \"$@\" ;;\n\tesac\n}\n")
    line = "\t\tshow_log || exit ;;\n"
    assert _shown("\t\tshow_log || exit ;;\n", line, source=source) == "\t\tshow_log || exit ;;\n"
    assert _shown("\t\tshow_log\n", line, source=source) == ""  # the next arm under an arm with no `;;`


def test_a_loops_done_may_line_up_with_its_while_after_a_pipe():
    source = "f() {\n  printf '%s\\n' a b \\\n    | while read -r x; do\n        echo \"$x\"\n      done\n}\n"
    assert error_spans(source, "bash") == []
    assert error_spans(source.replace("      done", "     done"), "bash") != []  # at no column its loop gives


def test_a_keyword_tree_sitter_bash_reads_as_a_command_is_an_error():
    assert error_spans("f() {\n  echo a\n  fi\n}\n", "bash") != []  # tree-sitter-bash: a command named `fi`
    assert error_spans("f() {\n  echo fi done\n}\n", "bash") == []  # words, no keywords


def test_a_call_written_as_another_languages_is_an_error_and_not_shown():
    # bash -n: "syntax error near unexpected token"; tree-sitter-bash: a command, then a subshell
    assert error_spans("f() {\n  print(\"hi\")\n}\n", "bash") != []
    assert error_spans("f() {\n  (cd x && make)\n  a | (b)\n  x=(a b)\n  diff <(a) <(b)\n}\n", "bash") == []
    line = "    printf '%s\\n' \"$1\"\n"
    assert _shown(line, line) == line
    assert _shown("    print(\"$1\")\n", line) == ""
    assert _shown("f(\"$1\")", line, "    print@@\n") == "f"  # its clean start: `printf` alone


def test_a_header_that_breaks_the_blocks_is_judged_on_the_lines_below_it_as_they_were():
    # a `case` where a `then` was: tree-sitter-bash then pairs the quotes below it the wrong way round, reading the
    # lines between two strings as one string's; the block rules read those lines as the file without the text does
    source = ('merge() {\n\tcase "$1" in\n\tadd)\n\t\tif test -f "$4"\n\t\tthen\n\t\t\trm -f -- "$4" &&\n'
              '\t\t\trmdir -p "$(dirname "$4")" || :\n\t\tfi &&\n\t\t\texec git update-index --remove -- "$4"\n'
              '\t\t;;\n\t*)\n\t\techo "ERROR: $4" >&2\n\t\techo "done"\n\t\t;;\n\tesac\n}\n')
    assert _shown("\t\tthen\n", "\t\tthen\n", source=source) == "\t\tthen\n"
    assert _shown("\t\tcase \",$6,$7,\" in\n", "\t\tthen\n", source=source) == ""
    # the rules alone (the whole document's reading, after the windows'): the `case` over the `fi` is refused
    prefix, suffix = source.split("\t\tthen\n")
    assert block_judge(prefix, suffix, "bash")("\t\tcase \",$6,$7,\" in\n")
    assert not block_judge(prefix, suffix, "bash")("\t\tthen\n")


def test_arms_at_the_cases_column_need_their_case_line_above_them():
    source = "main() {\n  case \"$1\" in\n  -h)\n    usage\n    ;;\n  *)\n    run \"$@\"\n    ;;\n  esac\n}\n"
    line = "  case \"$1\" in\n"
    assert _shown(line, line, source=source) == line
    assert _shown("  log \"case\"\n", line, source=source) == ""
    assert _shown("  # the options\n", line, source=source) == ""


def test_an_arms_end_stands_over_the_next_arm_not_over_the_arms_next_line():
    source = SCRIPT.replace('      log "dry run"\n', '      log "dry run"\n      dry=1\n')
    line = '      log "dry run"\n'
    assert _shown(line, line, source=source) == line
    assert _shown("      ;;\n", line, source=source) == ""
    prefix, suffix = source.split(line)
    assert block_judge(prefix, suffix, "bash")("      ;;\n")
    assert not block_judge(prefix, suffix, "bash")(line)


def test_a_body_line_where_its_header_was_is_not_shown_in_a_functions_braces():
    # the header's line emptied, the cursor on it: a line of the body written there at the body's column leaves the
    # body and its `fi` with no header (the line above heads nothing, and the function's `{` holds lines, not a
    # call's arguments)
    source = "f() {\n  local x=1\n  if [[ -n $x ]]; then\n    echo \"$x\"\n  fi\n  echo done\n}\n"
    line = "  if [[ -n $x ]]; then\n"
    assert _shown(line, line, "@@\n", source=source) == line.rstrip("\n")
    assert _shown("    x = 1\n", line, "@@\n", source=source) == ""
    # an empty value ends its line's statement (`x=`): the line below is no value of it
    source = source.replace("  local x=1\n", "  local x=\n")
    assert _shown("    x = 1\n", line, "@@\n", source=source) == ""


def test_a_body_line_where_its_header_was_under_a_line_that_goes_on_is_not_shown():
    source = ("f() {\n  eval \"$setup\" ||\n    die \"setup failed\"\n  while read -r commit; do\n"
              "    count=$((count + 1))\n  done\n}\n")
    line = "  while read -r commit; do\n"
    assert _shown(line, line, "@@\n", source=source) == line.rstrip("\n")
    # at the body's column, as deep as the line above: the `done` below is left with no header
    assert _shown("    x = 1\n", line, "@@\n", source=source) == ""
