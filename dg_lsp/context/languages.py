"""Map LSP language ids and file paths to tree-sitter grammars and parsers.

Canonical names: python, javascript, typescript, tsx, go, rust, java, c, cpp, csharp, php, ruby, lua, bash.
Grammars come from the official ``tree-sitter-<lang>`` wheels; languages and
parsers are built once and cached.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable

from tree_sitter import Language, Parser

LANGUAGE_IDS: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",
    "jsx": "javascript",
    "typescript": "typescript",
    "typescriptreact": "tsx",
    "tsx": "tsx",
    "go": "go",
    "rust": "rust",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "csharp": "csharp",  # VS Code's id
    "cs": "csharp",  # Neovim's filetype
    "c#": "csharp",
    "php": "php",
    "ruby": "ruby",
    "lua": "lua",
    "bash": "bash",
    "shellscript": "bash",  # VS Code's id
    "sh": "bash",  # Neovim's filetype for a .sh file (a POSIX sh script reads as Bash, a subset)
}

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".php": "php",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".ru": "ruby",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
}

# canonical name -> (module, function returning the grammar capsule)
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    # PHP alone, not its HTML-embedding grammar: a window cut below `<?php` is still read as code (a template's
    # HTML reads as errors, which the checks count before and after a text alike)
    "php": ("tree_sitter_php", "language_php_only"),
    "ruby": ("tree_sitter_ruby", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

LANGUAGES: tuple[str, ...] = tuple(_GRAMMARS)


def normalize_language(language_id: str | None) -> str | None:
    """Canonical name for an LSP languageId (or a canonical name); None if unknown."""
    if not language_id:
        return None
    return LANGUAGE_IDS.get(language_id.strip().lower())


def language_for_path(path: str) -> str | None:
    """Canonical language name guessed from a file's extension; None if unknown."""
    _, ext = os.path.splitext(path)
    return EXTENSIONS.get(ext.lower())


@functools.cache
def get_language(name: str | None) -> Language | None:
    """The tree-sitter Language for a canonical name or LSP id; None if unknown or not installed."""
    canonical = normalize_language(name)
    if canonical is None:
        return None
    module_name, func_name = _GRAMMARS[canonical]
    try:
        grammar: Callable[[], object] = getattr(importlib.import_module(module_name), func_name)
        return Language(grammar())
    except (ImportError, AttributeError, ValueError):
        return None


_local = threading.local()


def get_parser(name: str | None) -> Parser | None:
    """A cached tree-sitter Parser for a canonical name or LSP id; None if unknown.

    Parsers hold mutable state, so the cache is per thread: handlers on a pool
    never share one.
    """
    canonical = normalize_language(name)
    language = get_language(canonical)
    if language is None:
        return None
    parsers: dict[str, Parser] = _local.__dict__.setdefault("parsers", {})
    parser = parsers.get(canonical)
    if parser is None:
        parser = parsers[canonical] = Parser(language)
    return parser
