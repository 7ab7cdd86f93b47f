"""What a selection fill must pass besides the syntax gate, read on the whole document: `dgLsp.fillSelection`'s
answer is applied by the editor over the user's code, not shown for the user to take or leave.

`refusal` says why a fill is no fill, or None: the file would no longer compile (Python) or parse clean (the other
languages with a grammar), the fill is only comments where code was selected, it leaves unbound a name that the
selected code bound and the code after it reads, it reads a name nothing binds or leaves one unbound that the code
around it reads (Python, JavaScript, TypeScript), the selected code ended in a `return` or `throw` and the fill
does not, or (Rust) the selected code ended in the value a function returns and the fill ends in a statement."""

from __future__ import annotations

import ast
import builtins
import textwrap

from dg_lsp.context.bindings import (LANGUAGES, declarator_names, declared, go_field_names, go_names, pattern_names,
                                     rust_declared)
from dg_lsp.context.bindings.jumps import text_strays
from dg_lsp.context.preprocessor import unbalances_conditionals
from dg_lsp.context.languages import get_parser
from dg_lsp.context.python_syntax import python_complaint
from dg_lsp.context.syntax import breaks_document
from dg_lsp.context.windows import cursor_offset

from .unbound import fill_names


def refusal(document: str, start: tuple[int, int], end: tuple[int, int], text: str, language: str | None,
            names: bool = True) -> str | None:
    """Why `text` over [start, end) of `document` ((line, column) positions, its line breaks `\n`) is no fill, or
    None. `names`: also refuse a fill that reads a name nothing binds (the `nameCheck` setting)."""
    if not selection_keeps_compiling(document, start, end, text, language):
        return "the file would no longer compile or parse"
    if replaces_code_with_comments(document, start, end, text, language):
        return "only comments over selected code"
    if dropped := dropped_names(document, start, end, text, language):
        return f"it no longer binds {', '.join(dropped)}, which the code after the selection reads"
    read, left = fill_names(document, start, end, text, language) if names else ([], [])
    if read:
        return f"it reads {', '.join(read)}, which nothing has bound there"
    if left:
        return f"the code around it reads {', '.join(left)}, which it leaves unbound"
    if drops_the_exit(document, start, end, text, language):
        return "the selected code ended in a return or throw, and what the model wrote does not"
    if drops_the_value(document, start, end, text, language):
        return "the selected code ended in the function's value (its last expression), and what the model wrote " \
               "ends in a statement"
    return None


def selection_keeps_compiling(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                               language: str | None) -> bool:
    """Whether a document (its line breaks `\n`) that compiles still does with `text` over [start, end) ((line,
    column) positions), read whole: Python by its compiler, a language with a tree-sitter grammar by the parse having
    no ERROR or MISSING node. The gate reads windows around the hole, and a fill whose last line opens a block over a
    blank line and code at its depth (`if not isinstance(bg, str):` with no body, click's termui.py) passed it. A
    selection fill is rare and asked for, so the whole file is read: one that compiled keeps compiling. A language
    without a grammar, and a document that did not compile: True. (The other languages: `syntax.breaks_document`,
    which reads an inline suggestion's file the same way, and a `break` or `continue` in the fill that nothing in its
    function takes, `jumps.text_strays`, which no compiler passes, nor an `#if` or `#endif` left unmatched,
    `preprocessor`.)"""
    at, to = cursor_offset(document, *start), cursor_offset(document, *end)
    if language != "python":
        return not breaks_document(document, at, to, text, language) and \
            not text_strays(document, at, to, text, language) and \
            not unbalances_conditionals(document, at, to, text, language)
    # not through python_complaint's cache: whole files would stay in it
    if python_complaint.__wrapped__(document) is not None:
        return True
    return python_complaint.__wrapped__(document[:at] + text + document[to:]) is None


def _whole_lines(document: str, start: tuple[int, int], end: tuple[int, int]) -> tuple[int, int, str] | None:
    """(start index, end index, the indentation before the start) of a selection that starts at its line's code,
    whose text is whole statements; None for one that starts inside a line."""
    at, to = cursor_offset(document, *start), cursor_offset(document, *end)
    indent = document[document.rfind("\n", 0, at) + 1:at]
    return None if indent.strip() else (at, to, indent)


def only_comments(text: str, language: str | None) -> bool:
    """Whether `text`, read alone, is nothing but comments (at least one): tree-sitter finds no error in it and
    every node at its top is a comment. False in a language without a grammar."""
    parser = get_parser(language)
    if parser is None or not text.strip():
        return False
    root = parser.parse(text.encode("utf-8")).root_node
    return not root.has_error and all("comment" in node.type for node in root.named_children)


def replaces_code_with_comments(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                                language: str | None) -> bool:
    """A selection fill that is only comments over selected text that is not: applied, it deletes the user's code
    (npm's queryable.js: `this.#data = JSON.parse(obj.data)` selected, `// if the data is not a string, ...`
    written)."""
    selected = document[cursor_offset(document, *start):cursor_offset(document, *end)]
    return bool(selected.strip()) and only_comments(text, language) and not only_comments(selected, language)


def dropped_names(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                  language: str | None) -> list[str]:
    """The names the selected code declares or assigns that the fill does not, and that the code after the
    selection reads, with nothing else binding them: applied, the fill leaves them unbound (the stdlib's domreg.py:
    `parts = s.split()` selected, a `for` loop written, `parts` read below). Python (its `ast`: in the function
    around the selection, or the module, and not a module global or a builtin); JavaScript, TypeScript, C, C++, Java,
    Go and Rust (tree-sitter: declarations, and not declared anywhere else in the file; Rust: in the function around
    the selection, whose locals no other function reads). Where the selected code or the
    fill does not parse alone, or the document with the fill does not, nothing is known: []."""
    if (lines := _whole_lines(document, start, end)) is None:
        return []  # a selection inside a line: a part of a statement binds nothing alone
    at, to, indent = lines
    applied = document[:at] + text + document[to:]
    first, last = start[0], start[0] + text.count("\n")  # the fill's lines in the applied document, 0-based
    if language == "python":
        return _python_dropped(indent + document[at:to], indent + text, applied, first, last)
    if language in TREE_LANGUAGES:
        return _tree_dropped(indent + document[at:to], indent + text, applied, at, at + len(text), language)
    return []


def _python_bound(code: str) -> set[str] | None:
    try:
        tree = ast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError):
        return None
    return _python_binds(tree)


def _python_binds(tree: ast.AST, outside: range | None = None) -> set[str]:
    """Names `tree` binds (assigned, defined, imported, a parameter, an `except ... as`), on lines (1-based) outside
    `outside` where given."""
    names = set()
    for node in ast.walk(tree):
        if outside is not None and getattr(node, "lineno", None) in outside:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _python_dropped(selected: str, text: str, applied: str, first: int, last: int) -> list[str]:
    before, after = _python_bound(selected), _python_bound(text)
    if before is None or after is None or not before - after:
        return []
    try:
        module = ast.parse(applied)
    except (SyntaxError, ValueError):
        return []
    scope = module
    for node in ast.walk(module):  # the innermost function around the fill's first line
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= first + 1 <= node.end_lineno and node.lineno >= getattr(scope, "lineno", 0):
            scope = node
    fill = range(first + 1, last + 2)
    bound = _python_binds(scope, fill) | set(dir(builtins))
    if scope is not module:
        bound |= _python_globals(module)
    read = {node.id for node in ast.walk(scope)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.lineno > last + 1}
    return sorted((before - after) & read - bound)


def _python_globals(module: ast.Module) -> set[str]:
    """The names the module's own statements bind, not what its functions and classes bind inside them."""
    names, stack = set(), list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    return names


# C, C++, Java, Go and Rust: the statements of a function's body, which a fill's text is, parse inside one
_WRAPPED = {"c": ("void __f(void) {\n", "\n}\n"), "cpp": ("void __f() {\n", "\n}\n"),
            "java": ("class __C { void __f() {\n", "\n} }\n"), "go": ("package p\n\nfunc __f() {\n", "\n}\n"),
            "rust": ("fn __f() {\n", "\n}\n")}
_C_DECLARATIONS = frozenset({"declaration", "parameter_declaration", "function_definition",
                             "local_variable_declaration", "field_declaration", "formal_parameter", "spread_parameter"})
TREE_LANGUAGES = LANGUAGES | frozenset(_WRAPPED)  # Go and Rust included


def _names_declared(node, language: str) -> list[str]:
    """The names one node declares: JavaScript and TypeScript, a declaration's or a parameter list's; C, C++ and Java,
    a declaration's (parameters included); Go, a declaration's, a `:=`'s or a parameter's; Rust, a pattern's (a `let`,
    a parameter, a closure, a `for`, an `if let`, a match arm) or an item's."""
    if language == "rust":
        return rust_declared(node)
    if language == "go":
        if node.type == "short_var_declaration" and node.child_by_field_name("left") is not None:
            return [n.text.decode("utf-8", "replace") for n in node.child_by_field_name("left").named_children
                    if n.type == "identifier"]
        if node.type in ("parameter_declaration", "variadic_parameter_declaration"):
            return go_field_names(node)
        return go_names(node)
    if language in LANGUAGES:
        if node.type == "formal_parameters":
            return pattern_names(node)
        if node.type == "arrow_function" and node.child_by_field_name("parameter") is not None:
            return pattern_names(node.child_by_field_name("parameter"))
        return declared(node)[0]
    return declarator_names(node) if node.type in _C_DECLARATIONS else []


def _statements(code: str, language: str) -> list | None:
    """The statements of `code` (a run of whole statements, comments left out), None where it does not parse alone."""
    head, tail = _WRAPPED.get(language, ("", ""))
    root = get_parser(language).parse((head + textwrap.dedent(code) + tail).encode("utf-8")).root_node
    if root.has_error:
        return None
    body = root
    if head:  # the wrapping function's body
        stack = [root]
        while stack and body is root:
            node = stack.pop()
            if node.type in ("compound_statement", "block"):
                body = node
            stack.extend(reversed(node.children))
    if [c.type for c in body.named_children] == ["statement_list"]:  # Go
        body = body.named_children[0]
    return [c for c in body.named_children if "comment" not in c.type]


def _statements_declared(code: str, language: str) -> set[str] | None:
    """The names the statements of `code` (a run of whole statements) declare, None where it does not parse alone."""
    statements = _statements(code, language)
    if statements is None:
        return None
    return {name for statement in statements for name in _names_declared(statement, language)}


def _tree_dropped(selected: str, text: str, applied: str, at: int, until: int, language: str) -> list[str]:
    before, after = _statements_declared(selected, language), _statements_declared(text, language)
    if before is None or after is None or not before - after:
        return []
    root = get_parser(language).parse(applied.encode("utf-8")).root_node
    if root.has_error:
        return []
    lo, hi = len(applied[:at].encode("utf-8")), len(applied[:until].encode("utf-8"))
    # Rust: a local is only ever its function's, so only the function around the fill reads and binds (items, a
    # `const` or a `fn`, bind anywhere); the other languages read the whole file
    function = _around(root, lo, hi, "function_item") if language == "rust" else None
    start, end = (function.start_byte, function.end_byte) if function is not None else (0, root.end_byte)
    read, bound, stack = set(), set(), [root]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        inside = start <= node.start_byte and node.end_byte <= end
        if node.type in ("identifier", "shorthand_property_identifier") and node.start_byte >= hi and inside:
            read.add(node.text.decode("utf-8", "replace"))
        if (node.start_byte >= hi or node.end_byte <= lo) and (inside or node.type.endswith("_item")):
            bound.update(_names_declared(node, language))  # outside the fill
    return sorted((before - after) & read - bound)


def _around(root, lo: int, hi: int, kind: str):
    """The innermost node of type `kind` around the bytes [lo, hi) of `root`'s text, or None."""
    node = root.descendant_for_byte_range(lo, max(lo, hi - 1))
    while node is not None and node.type != kind:
        node = node.parent
    return node


# tree-sitter statements that never exit; any other, but for the exits, the ifs and the blocks, is not judged
_SIMPLE = frozenset({"expression_statement", "lexical_declaration", "variable_declaration", "declaration",
                     "local_variable_declaration", "short_var_declaration", "assignment_statement", "inc_statement",
                     "dec_statement", "var_declaration", "const_declaration", "empty_statement", "let_declaration"})
_BLOCKS = frozenset({"statement_block", "compound_statement", "block", "statement_list", "else_clause"})
# Rust: what a statement of an expression holds that may exit however it ends (a loop's `break`, a match's arms)
_RUST_NOT_READ = frozenset({"match_expression", "loop_expression", "while_expression", "for_expression", "block",
                            "unsafe_block", "async_block", "try_block", "const_block"})
_RUST_PANICS = frozenset({b"panic", b"unreachable", b"todo", b"unimplemented"})


def _tree_exits(node) -> bool | None:
    """Whether a statement always ends in a `return` or `throw` (an `if` with an `else`: both ways); None where that is
    not read (a loop, a `switch`, a `try`; in Rust a `match`, and a block's last expression, its value)."""
    if node.type in ("return_statement", "throw_statement", "return_expression") or (
            node.type == "expression_statement" and node.text.startswith(b"panic(")):
        return True  # Go's `panic(...)` ends its function too
    if node.type == "expression_statement" and node.named_children:  # Rust: `return x;`, `panic!(...)`, an `if`
        inner = node.named_children[0]
        if inner.type == "macro_invocation" and inner.child_by_field_name("macro") is not None \
                and inner.child_by_field_name("macro").text in _RUST_PANICS:
            return True
        if inner.type in ("return_expression", "if_expression"):
            return _tree_exits(inner)
        if inner.type in _RUST_NOT_READ:
            return None
    if node.type in _BLOCKS:
        inner = [c for c in node.named_children if "comment" not in c.type]
        return _tree_exits(inner[-1]) if inner else False
    if node.type in ("if_statement", "if_expression"):
        alternative = node.child_by_field_name("alternative")
        if alternative is None:
            return False
        ways = (_tree_exits(node.child_by_field_name("consequence")), _tree_exits(alternative))
        return None if None in ways else all(ways)
    return False if node.type in _SIMPLE else None


def _python_exits(node: ast.stmt) -> bool | None:
    """`_tree_exits` for a Python statement: `return`, `raise`, an `if` with an `else` whose ways both do."""
    if isinstance(node, (ast.Return, ast.Raise)):
        return True
    if isinstance(node, ast.If):
        if not node.orelse:
            return False
        ways = (_python_exits(node.body[-1]), _python_exits(node.orelse[-1]))
        return None if None in ways else all(ways)
    compound = (ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match)
    return None if isinstance(node, compound) or type(node).__name__ == "TryStar" else False


def _ends_in_exit(code: str, language: str | None) -> bool | None:
    """Whether the run of whole statements `code` ends in a `return` or `throw` (`_tree_exits`); None where it does not
    parse alone, is empty, or its last statement is not read."""
    if language == "python":
        try:
            body = ast.parse(textwrap.dedent(code)).body
        except (SyntaxError, ValueError):
            return None
        return _python_exits(body[-1]) if body else None
    if language not in TREE_LANGUAGES:
        return None
    statements = _statements(code, language)
    return _tree_exits(statements[-1]) if statements else None


def drops_the_exit(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                   language: str | None) -> bool:
    """A selection fill that does not end in a `return` or `throw` (`raise`) where the selected code, whole
    statements, did: applied, the code falls through where it returned (commons-lang's StringUtils: a method's last
    `return containsNone(...)` selected, two declarations written, and javac's "missing return statement"; jinja2's
    `return ident` replaced by an `else:` branch). Where either does not parse alone as statements, or the fill's
    last statement is a loop, `switch` or `try` (not read): False."""
    if (lines := _whole_lines(document, start, end)) is None:
        return False  # a selection inside a line
    at, to, indent = lines
    return _ends_in_exit(indent + document[at:to], language) is True and _ends_in_exit(indent + text, language) is False


def drops_the_value(document: str, start: tuple[int, int], end: tuple[int, int], text: str,
                    language: str | None) -> bool:
    """Rust: the selection ends with the last expression of the body of a function that returns a value (`weight`,
    the end of petgraph's `fn remove_edge(...) -> Option<E>`), and the fill ends in a statement that gives none: a
    `let`, or an expression with its `;` that does not return or panic. Applied, the function's body ends in `()`
    (rustc: "mismatched types: expected `Option<E>`, found `()`"). A fill that ends in an expression, an `if`, a
    `match` or a loop is not read. Other languages, a selection inside a line, or code that does not parse: False."""
    if language != "rust":
        return False
    lines = _whole_lines(document, start, end)
    if lines is None or not _ends_the_body_value(document, lines[0], lines[1]):
        return False
    indent = lines[2]
    statements = _statements(indent + text, language)
    if not statements:
        return False
    last = statements[-1]
    if _tree_exits(last) is True:
        return False
    return last.type == "let_declaration" or (last.type == "expression_statement" and last.text.endswith(b";"))


def _ends_the_body_value(document: str, at: int, to: int) -> bool:
    """Whether the Rust code [at, to) of `document` ends with the last expression (no `;`) of a function's body whose
    function declares a return type other than `()`."""
    root = get_parser("rust").parse(document.encode("utf-8")).root_node
    if root.has_error:
        return False
    lo, hi = len(document[:at].encode("utf-8")), len(document[:to].encode("utf-8"))
    node = _around(root, lo, hi, "block")
    function = node.parent if node is not None else None
    if function is None or function.type != "function_item":
        return False
    returns = function.child_by_field_name("return_type")
    inner = [c for c in node.named_children if "comment" not in c.type]
    if returns is None or returns.type == "unit_type" or not inner:
        return False
    tail = inner[-1]
    value = tail.type not in ("expression_statement", "let_declaration") and not tail.type.endswith("_item")
    return value and lo <= tail.start_byte and tail.end_byte <= hi <= node.end_byte - 1
