"""Language ids, file extensions and cached grammars."""

from __future__ import annotations

import threading

import pytest
from tree_sitter import Language, Parser

from dg_lsp.context import (
    LANGUAGE_IDS,
    LANGUAGES,
    get_language,
    get_parser,
    language_for_path,
    normalize_language,
)


@pytest.mark.parametrize(
    ("language_id", "canonical"),
    [
        ("python", "python"),
        ("javascript", "javascript"),
        ("javascriptreact", "javascript"),
        ("typescript", "typescript"),
        ("typescriptreact", "tsx"),
        ("go", "go"),
        ("rust", "rust"),
        ("java", "java"),
        ("c", "c"),
        ("cpp", "cpp"),
        ("c++", "cpp"),
        ("C++", "cpp"),
        ("tsx", "tsx"),
        ("csharp", "csharp"),
        ("cs", "csharp"),
        ("c#", "csharp"),
        ("php", "php"),
        ("PHP", "php"),
        ("ruby", "ruby"),
        ("lua", "lua"),
        ("bash", "bash"),
        ("shellscript", "bash"),
        ("sh", "bash"),
    ],
)
def test_normalize_language(language_id, canonical):
    assert normalize_language(language_id) == canonical
    assert LANGUAGE_IDS[language_id.lower()] == canonical


@pytest.mark.parametrize("language_id", ["plaintext", "markdown", "", None, "cobol"])
def test_unknown_language_ids(language_id):
    assert normalize_language(language_id) is None
    assert get_language(language_id) is None
    assert get_parser(language_id) is None


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b/c.py", "python"),
        ("stubs/x.pyi", "python"),
        ("x.js", "javascript"),
        ("x.mjs", "javascript"),
        ("x.cjs", "javascript"),
        ("x.jsx", "javascript"),
        ("x.ts", "typescript"),
        ("x.mts", "typescript"),
        ("x.cts", "typescript"),
        ("X.TSX", "tsx"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("A.java", "java"),
        ("m.c", "c"),
        ("m.h", "c"),
        ("m.cc", "cpp"),
        ("m.cpp", "cpp"),
        ("m.cxx", "cpp"),
        ("m.hpp", "cpp"),
        ("m.hh", "cpp"),
        ("m.hxx", "cpp"),
        ("Program.cs", "csharp"),
        ("src/Client.php", "php"),
        ("lib/rack/lint.rb", "ruby"),
        ("tasks/release.rake", "ruby"),
        ("rack.gemspec", "ruby"),
        ("config.ru", "ruby"),
        ("lua/vim/lsp/util.lua", "lua"),
        ("install.sh", "bash"),
        ("lib/bats-core/common.bash", "bash"),
        ("/home/u/README.md", None),
        ("Makefile", None),
    ],
)
def test_language_for_path(path, language):
    assert language_for_path(path) == language


@pytest.mark.parametrize("name", LANGUAGES)
def test_every_canonical_language_has_a_working_parser(name):
    language = get_language(name)
    parser = get_parser(name)

    assert isinstance(language, Language) and isinstance(parser, Parser)
    assert get_language(name) is language
    assert get_parser(name) is parser
    assert parser.parse(b"x").root_node.type in {
        "module", "program", "source_file", "translation_unit", "compilation_unit", "chunk"
    }


def test_lsp_ids_share_the_canonical_parser():
    assert get_parser("typescriptreact") is get_parser("tsx")
    assert get_parser("javascriptreact") is get_parser("javascript")


def test_parsers_are_per_thread():
    seen = []
    worker = threading.Thread(target=lambda: seen.append(get_parser("python")))
    worker.start()
    worker.join()

    assert isinstance(seen[0], Parser)
    assert seen[0] is not get_parser("python")
