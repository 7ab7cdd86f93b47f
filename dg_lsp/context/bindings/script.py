"""JavaScript's and TypeScript's early errors, read from a tree-sitter tree.

Node and the TypeScript compiler refuse a whole file, before running a line of it, where:
- a name is declared again in its block (`const str = ...` above or below another `const str`, or over a parameter
  `str`: "Identifier 'str' has already been declared");
- a `const` has no value ("Missing initializer in const declaration");
- a word reserved everywhere is a name (TypeScript's grammar reads `const new = existing.get(inst)`);
- a word strict code reserves is a name in strict code (`package.tar.load(args)` in a class: "Unexpected strict mode
  reserved word");
- `await` is a name in an async function or a module (`const tar = await` over the next line's `return`, which
  JavaScript's grammar reads as `await` the variable).
tree-sitter reads all of them as valid. `early_errors` finds them in a text, so that the syntax gate can refuse a
suggestion that adds one (`gate_structure.structure_judge`).

The declaration rules are the ECMAScript specification's for one block: a name declared by `let`, `const` or `class`
may not be declared again in the same block (by any declaration, `var` and function declarations included) nor, in
a function's body, be one of its parameters. `var` hoisting out of nested blocks is not followed. Code is strict
inside a class, and in a file that imports, exports or starts with "use strict"; a function's own "use strict" is
not read. A block with an ERROR or MISSING node among its statements is not read (the blocks inside it are, each
on its own), nor is what lies inside an ERROR node: tree-sitter's recovery runs the statements of a window cut
inside a method into one block (two methods' `const spec` read as one block's), and reads a cut switch's `case` as
a variable. An error deeper down does not stop a block being read: most windows start inside some statement.
"""

from __future__ import annotations

from collections import Counter

from tree_sitter import Node

from dg_lsp.context.bindings.walk import broken_block, count_redeclared

LANGUAGES = frozenset({"javascript", "typescript", "tsx"})

_SCOPES = frozenset({"program", "statement_block", "switch_body", "class_static_block"})
_FUNCTIONS = frozenset({"function_declaration", "function_expression", "function", "arrow_function",
                        "generator_function_declaration", "generator_function", "method_definition"})
_HOISTED = frozenset({"function_declaration", "generator_function_declaration", "variable_declaration"})
_LEXICAL = frozenset({"lexical_declaration", "class_declaration", "abstract_class_declaration"})
_NAMES = frozenset({"identifier", "shorthand_property_identifier_pattern", "type_identifier"})
_RESERVED = frozenset({
    "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete", "do", "else", "enum",
    "export", "extends", "false", "finally", "for", "function", "if", "import", "in", "instanceof", "new", "null",
    "return", "super", "switch", "this", "throw", "true", "try", "typeof", "var", "void", "while", "with"})
_ANY_NAME = frozenset({"export_specifier", "import_specifier"})  # `export { _null as null }`
_STRICT_RESERVED = frozenset({"implements", "interface", "let", "package", "private", "protected", "public", "static",
                              "yield"})


def pattern_nodes(node: Node | None) -> list[Node]:
    """The name nodes a binding pattern binds (a declaration's, a parameter list's, a destructuring assignment's
    left side): not a property's key, a default value or a type annotation."""
    if node is None:
        return []
    if node.type in _NAMES:
        return [node]
    if node.type in ("assignment_pattern", "object_assignment_pattern"):
        return pattern_nodes(node.child_by_field_name("left"))
    if node.type == "pair_pattern":
        return pattern_nodes(node.child_by_field_name("value"))
    if node.type in ("required_parameter", "optional_parameter"):
        return pattern_nodes(node.child_by_field_name("pattern"))
    if node.type in ("object_pattern", "array_pattern", "rest_pattern", "formal_parameters", "array", "object",
                     "spread_element", "parenthesized_expression"):
        return [name for child in node.named_children for name in pattern_nodes(child)]
    return []


def pattern_names(node: Node | None) -> list[str]:
    """The names a binding pattern binds (`pattern_nodes`)."""
    return [name.text.decode("utf-8", "replace") for name in pattern_nodes(node)]


def declared(node: Node) -> tuple[list[str], bool]:
    """The names a statement of a block declares, and whether they are lexical (`let`, `const`, `class`)."""
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration")
        return declared(inner) if inner is not None else ([], False)
    if node.type in ("lexical_declaration", "variable_declaration"):
        names = [name for d in node.named_children if d.type == "variable_declarator"
                 for name in pattern_names(d.child_by_field_name("name"))]
        return names, node.type in _LEXICAL
    if node.type in _HOISTED or node.type in _LEXICAL:
        name = node.child_by_field_name("name")
        return ([name.text.decode("utf-8", "replace")] if name is not None else []), node.type in _LEXICAL
    return [], False


def _statements(scope: Node) -> list[Node]:
    if scope.type == "switch_body":  # the cases of one switch share its block
        return [s for case in scope.named_children for s in case.named_children]
    return scope.named_children


def _strict_file(root: Node) -> bool:
    first = root.named_children[0] if root.named_children else None
    directive = first is not None and first.type == "expression_statement" and first.named_children \
        and first.named_children[0].type == "string" and first.text.decode("utf-8", "replace")[1:11] == "use strict"
    return bool(directive) or any(s.type in ("import_statement", "export_statement") for s in root.named_children)



def script_errors(root: Node) -> Counter:
    """`early_errors` of a JavaScript or TypeScript tree."""
    errors = Counter()
    module = any(s.type in ("import_statement", "export_statement") for s in root.named_children)
    stack = [(root, _strict_file(root), module, False, False)]
    while stack:
        node, strict, asynchronous, broken, in_error = stack.pop()
        strict = strict or node.type == "class_body"
        if node.type in _FUNCTIONS:  # its body awaits where it is async (a module's top level always may)
            asynchronous = any(child.type == "async" for child in node.children)
        if node.type in _SCOPES:  # a block with an error among its statements is not read (the module's docstring)
            broken = broken_block(node)
        in_error = in_error or node.is_error
        stack.extend((child, strict, asynchronous, broken, in_error) for child in node.children)
        if broken or in_error:
            continue
        if node.type == "identifier" and node.parent is not None and node.parent.type not in _ANY_NAME:
            word = node.text.decode("utf-8", "replace")
            # the grammar reads `await (0, f)(path)` as a call of `await`: only a bare `await` counts
            if word in _RESERVED or (strict and word in _STRICT_RESERVED) \
                    or (asynchronous and word == "await" and node.parent.type != "call_expression"):
                errors["word", word] += 1
        if node.type == "lexical_declaration" and node.child_by_field_name("kind") is not None \
                and node.child_by_field_name("kind").type == "const" \
                and (node.parent is None or node.parent.type != "ambient_declaration"):
            for d in node.named_children:
                if d.type == "variable_declarator" and d.child_by_field_name("value") is None:
                    errors["const", d.text.decode("utf-8", "replace")] += 1
        if node.type not in _SCOPES:
            continue
        count, lexical = Counter(), set()
        if node.parent is not None and node.parent.type in _FUNCTIONS:  # `(a, b) =>` or `a =>`
            params = node.parent.child_by_field_name("parameters") or node.parent.child_by_field_name("parameter")
            count.update(pattern_names(params))
        for statement in _statements(node):
            names, is_lexical = declared(statement)
            count.update(names)
            if is_lexical:
                lexical.update(names)
        count_redeclared(errors, count, lexical)
    return errors

