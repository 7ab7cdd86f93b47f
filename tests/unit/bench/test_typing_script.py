"""The typing benchmark's scripts (bench/typing/replay.py make_script): the document's language id comes from the
file's extension as the server reads it (context/languages.py), so a C# or PHP file is typed as one."""

from __future__ import annotations

import random

import pytest

from dg_lsp.bench.typing.replay import make_script


@pytest.mark.parametrize("name,language", [("a.py", "python"), ("Program.cs", "csharp"), ("Client.php", "php"),
                                           ("lint.rb", "ruby"),
                                           ("m.hpp", "cpp"), ("notes.txt", "plaintext")])
def test_the_script_takes_the_files_language(tmp_path, name, language):
    path = tmp_path / name
    path.write_text("first line\n    second line\nthird line\n")
    script = make_script(path, random.Random(0), bursts=1)
    assert script.language_id == language
    # one line is blanked (its indentation kept) and typed back
    typed = "".join(b.text for b in script.bursts)
    assert typed in ("second line", "third line")
