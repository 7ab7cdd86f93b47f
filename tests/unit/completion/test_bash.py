"""Bash: how the server reads a shell script (its functions as scopes, its brackets outside strings, comments and
here-documents: `completion/brackets.py`), in a small script."""

from __future__ import annotations

import shutil

import pytest

from dg_lsp.bench.metrics import own_check
from dg_lsp.completion.brackets import open_brackets
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
])
def test_bashs_brackets_are_read_with_its_strings_comments_and_here_documents(text, still_open):
    assert open_brackets(text, "bash") == still_open
