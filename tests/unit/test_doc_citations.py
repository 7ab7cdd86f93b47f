"""No tracked file cites a Markdown document the repository lacks (issue 12: the code used to cite a DESIGN.md that
lives outside the repository). A citation is any `name.md` in a source or documentation file; it must be the name
of a tracked file. The few names that are not documents are listed with their reason."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_DOCUMENTS = {
    "gpu-bench.md": "the report `dg-lsp bench gpu` writes",
    "card_notes.md": "an optional notes file a training run folder may hold, appended to the model card",
    "readme.md": "a file name inside the packaged .vsix that the VS Code test looks for",
}
CITE = re.compile(r"(?<![\w.-])([\w.-]+\.md)\b")
SUFFIXES = (".py", ".md", ".json", ".lua", ".ts", ".js", ".toml", ".sh", ".txt", ".vim")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_every_cited_markdown_document_is_in_the_repository():
    files = _tracked()
    names = {os.path.basename(f) for f in files}
    missing = []
    this = Path(__file__).resolve().relative_to(ROOT).as_posix()  # it names missing documents on purpose
    for f in files:
        if f == this:
            continue
        if not f.endswith(SUFFIXES) and not f.startswith(".ci/"):
            continue
        try:
            text = (ROOT / f).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        missing += [f"{f}: {m}" for m in CITE.findall(text) if m not in names and m not in NOT_DOCUMENTS]
    assert not missing, missing


def test_the_check_reads_citations_in_prose_and_paths():
    assert CITE.findall("see DESIGN.md sections 3 and 6, and docs/ARCHITECTURE.md") == ["DESIGN.md", "ARCHITECTURE.md"]
