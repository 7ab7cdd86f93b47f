"""CI runs the newcomer's path: README's own test command, in a fresh clone with nothing beside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _readme_test_command() -> str:
    text = (REPO / "README.md").read_text()
    block = text.split("Install and run the tests", 1)[1].split("```", 2)[1]
    return block.split("\n", 1)[1].strip().splitlines()[0]


def test_ci_reads_the_test_command_from_the_readme():
    ci = REPO / ".ci" / "run"
    awk = re.search(r"TEST_COMMAND=\"\$\(awk '(.*?)' README\.md\)\"", ci.read_text(), re.S)
    assert awk, "the awk program that reads README's test command"
    got = subprocess.run(["awk", awk.group(1), "README.md"], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert got.stdout.strip() == _readme_test_command()
    assert "pytest" in got.stdout


def test_ci_runs_it_in_a_fresh_clone_and_needs_nothing_beside_the_checkout():
    text = (REPO / ".ci" / "run").read_text()
    assert "git clone" in text and "mktemp -d" in text and 'bash -c "$TEST_COMMAND"' in text
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "shared" not in code, "CI must not read anything from beside the checkout"
    assert "pytest" not in text.replace("README's test command", ""), "the suite runs once, by the README's command"
    assert "bash editors/vscode/e2e/install.sh" in text


def test_nothing_reads_data_from_beside_the_checkout():
    beside = ("../" + "shared", '"shared" / ' + '"data"')  # spelled apart so this file does not match itself
    for folder in ("dg_lsp", "tests"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(errors="replace")
            assert not any(b in text for b in beside), path
