"""Errors a compiler reports before running a line that tree-sitter parses as valid code, read from its tree, one
module a language:
- `script`: JavaScript's and TypeScript's early errors (a name declared again in its block, a `const` without a
  value, reserved words as names, `await` as a name where it is a keyword);
- `c_family`: C's and C++'s locals declared twice in one block;
- `java`: Java's locals declared again in their scope, and its unreachable statements;
- `csharp`: C#'s locals declared again in their scope;
- `go`: Go's names declared twice in one block and its `:=` with no new name;
- `returns`: Go's and Java's returns that give the wrong count of values;
- `rust`: Rust's `self` outside a method, and a value left as the last expression of a function that returns
  nothing (and the names Rust's patterns bind, for the selection rules);
- `lua`: Lua's `...` in a function that takes none;
- `jumps`: every brace language's, PHP's and Lua's `break` or `continue` with no loop (or switch) around it in its
  function;
- `walk`: what they share.
Beside them, read on a whole document rather than a window (`completion/unbound.py`): `python` and
`python_attributes`, Python's names and `self` attributes read where nothing binds them, `script_names`,
JavaScript's and TypeScript's, and `php_names`, PHP's variables that their function never gives a value.
`early_errors` finds them in a text, so that the syntax gate can refuse a suggestion that adds one
(`gate_structure.structure_judge`).
"""

from __future__ import annotations

from collections import Counter

from dg_lsp.context.bindings.c_family import C_FAMILY, c_redeclared, declarator_names
from dg_lsp.context.bindings.csharp import csharp_redeclared
from dg_lsp.context.bindings.go import go_field_names, go_names, go_redeclared
from dg_lsp.context.bindings.java import java_redeclared, java_unreachable
from dg_lsp.context.bindings.jumps import stray_jumps
from dg_lsp.context.bindings.lua import lua_errors
from dg_lsp.context.bindings.returns import return_errors
from dg_lsp.context.bindings.rust import rust_declared, rust_errors
from dg_lsp.context.bindings.script import LANGUAGES, declared, pattern_names, script_errors
from dg_lsp.context.syntax import parsed

__all__ = ["LANGUAGES", "adds_early_error", "declarator_names", "declared", "early_errors", "go_field_names",
           "go_names", "pattern_names", "rust_declared"]


def early_errors(text: str, language: str | None) -> Counter:
    """The early errors (see the module's docstring) in `text` parsed as `language`, as a count of (kind, name):
    names declared twice in one block where one of the declarations is lexical (`"redeclared"`), `const`
    declarations without a value outside TypeScript's `declare` (`"const"`), reserved words as names, strict
    code's reserved words as names in strict code, and `await` as a name where it is a keyword (`"word"`). In C
    and C++, locals declared twice in one block (`c_redeclared`); in Java, a local declared where another of that
    name is in scope (`java_redeclared`) and a statement after a `return`, `throw`, `break` or `continue`
    (`java_unreachable`); in C#, a local declared where another of that name is in scope (`csharp_redeclared`);
    in Go, names declared twice in one block and a `:=` without a new name
    (`go_redeclared`); in both, a `return` with the wrong count of values (`"returns"`, `return_errors`); in Rust,
    `self` outside a method and a value as the last expression of a function without a return type
    (`rust_errors`); in Lua, a `...` in a function that takes none (`lua_errors`). In all of them and PHP, a `break`
    or `continue` with nothing around it in its function that it can leave (`stray_jumps`). Empty in other
    languages."""
    if language not in LANGUAGES and language not in C_FAMILY and language not in ("go", "rust", "csharp", "php",
                                                                                   "lua"):
        return Counter()
    root = parsed(text, language).root_node  # the gate parses the same window in its other checks
    jumps = stray_jumps(root, language)
    if language == "php":
        return jumps
    if language == "lua":
        return lua_errors(root) + jumps
    if language == "csharp":
        return csharp_redeclared(root) + jumps
    if language == "rust":
        return rust_errors(root) + jumps
    if language == "go":
        return go_redeclared(root) + return_errors(root, language) + jumps
    if language == "java":
        return java_redeclared(root) + java_unreachable(root) + return_errors(root, language) + jumps
    return (c_redeclared(root) if language in C_FAMILY else script_errors(root)) + jumps


def adds_early_error(prefix: str, text: str, suffix: str, language: str | None) -> bool:
    """Whether `prefix + text + suffix` has an early error that `prefix + suffix` has not (by kind and name: a text
    that ends `const tim` with `e = time.replace(...)` takes that `const`'s missing value away and redeclares
    `time`, which a total count misses)."""
    return bool(early_errors(prefix + text + suffix, language) - early_errors(prefix + suffix, language))
