"""Tree-sitter context extraction: languages, enclosing scopes, prefix/suffix windows."""

from dg_lsp.context.languages import (
    LANGUAGE_IDS,
    LANGUAGES,
    get_language,
    get_parser,
    language_for_path,
    normalize_language,
)

__all__ = [
    "LANGUAGE_IDS",
    "LANGUAGES",
    "get_language",
    "get_parser",
    "language_for_path",
    "normalize_language",
]
