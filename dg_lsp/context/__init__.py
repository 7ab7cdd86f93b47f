"""Tree-sitter context extraction: languages, enclosing scopes, prefix/suffix windows.

No protocol or model imports here, so everything can be called, tested and
benchmarked on its own.
"""

from dg_lsp.context.document import newline_text
from dg_lsp.context.extract import CodeContext, extract_context
from dg_lsp.context.languages import (
    LANGUAGE_IDS,
    LANGUAGES,
    get_language,
    get_parser,
    language_for_path,
    normalize_language,
)
from dg_lsp.context.scopes import Scope
from dg_lsp.context.syntax import insertion_breaks_syntax, introduces_syntax_errors, syntax_error_count
from dg_lsp.context.windows import estimate_tokens

__all__ = [
    "LANGUAGE_IDS",
    "LANGUAGES",
    "CodeContext",
    "Scope",
    "estimate_tokens",
    "extract_context",
    "get_language",
    "get_parser",
    "insertion_breaks_syntax",
    "introduces_syntax_errors",
    "language_for_path",
    "newline_text",
    "normalize_language",
    "syntax_error_count",
]
