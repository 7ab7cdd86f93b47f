"""Errors a compiler reports before running a line that tree-sitter parses as valid code, read from its tree:
JavaScript's and TypeScript's early errors, C's and C++'s locals declared twice (`_c_redeclared`: gcc's
"redeclaration of 'n' with no linkage"), Java's locals declared again in their scope (`_java_redeclared`: javac's
"variable n is already defined"), Java's unreachable statements (`_java_unreachable`), Go's names declared twice
(`_go_redeclared`: "no new variables on left side of :="), and Go's and Java's returns that give the wrong count
of values (`_return_errors`).

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
suggestion that adds one (`gate._structure_judge`).

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

from dg_lsp.context.syntax import parsed

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


def pattern_names(node: Node | None) -> list[str]:
    """The names a binding pattern binds: not a property's key, a default value or a type annotation."""
    if node is None:
        return []
    if node.type in _NAMES:
        return [node.text.decode("utf-8", "replace")]
    if node.type in ("assignment_pattern", "object_assignment_pattern"):
        return pattern_names(node.child_by_field_name("left"))
    if node.type == "pair_pattern":
        return pattern_names(node.child_by_field_name("value"))
    if node.type in ("required_parameter", "optional_parameter"):
        return pattern_names(node.child_by_field_name("pattern"))
    if node.type in ("object_pattern", "array_pattern", "rest_pattern", "formal_parameters"):
        return [name for child in node.named_children for name in pattern_names(child)]
    return []


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


def declarator_names(node: Node, functions: bool = True) -> list[str]:
    """C, C++, Java: the names a declaration declares, each at the end of its declarator chain (`int *a, b[3] = {0}`:
    a and b; `String s`: s). `functions=False`: not a function's (`int f(void);`, which C may declare again)."""
    names = []
    if node.type in ("formal_parameter", "spread_parameter") and node.child_by_field_name("name") is not None:
        return [node.child_by_field_name("name").text.decode("utf-8", "replace")]
    for i in range(node.child_count):
        if node.field_name_for_child(i) != "declarator":
            continue
        d = node.children[i]
        while d is not None and d.type != "identifier":
            if d.type == "function_declarator" and not functions:
                break
            d = d.child_by_field_name("declarator") or d.child_by_field_name("name") \
                or (d.named_children[0] if d.named_children else None)
        if d is not None and d.type == "identifier":
            names.append(d.text.decode("utf-8", "replace"))
    return names


_C_FAMILY = frozenset({"c", "cpp", "java"})
_C_FUNCTIONS = frozenset({"function_definition", "lambda_expression"})


def _c_parameters(function: Node) -> list[str]:
    params = function.child_by_field_name("parameters")
    declarator = function.child_by_field_name("declarator")
    while params is None and declarator is not None:  # C: `int *f(int a)` holds them in its declarator chain
        if declarator.type == "function_declarator":
            params = declarator.child_by_field_name("parameters")
        declarator = declarator.child_by_field_name("declarator")
    return [name for p in (params.named_children if params is not None else []) for name in declarator_names(p)]


def _c_redeclared(root: Node) -> Counter:
    """C, C++: locals declared twice in one block, or over a parameter in a function's body ("redeclaration of 'n'
    with no linkage"). Not a function's declaration nor an `extern` one, which C may repeat; not a block with an
    ERROR or MISSING node among its statements, nor inside an ERROR node."""
    errors = Counter()
    for node, in_error in _nodes(root):
        if node.type != "compound_statement" or in_error or _broken(node):
            continue
        count = Counter(_c_parameters(node.parent) if node.parent is not None and node.parent.type in _C_FUNCTIONS
                        else [])
        for statement in node.named_children:
            extern = any(c.type == "storage_class_specifier" and c.text == b"extern" for c in statement.children)
            if statement.type in ("declaration", "local_variable_declaration") and not extern:
                count.update(declarator_names(statement, functions=False))
        _count_redeclared(errors, count, set(count))
    return errors


_JAVA_BODIES = frozenset({"class_body", "interface_body", "enum_body", "annotation_type_body"})


def _java_lambda_parameters(node: Node) -> list[str]:
    params = node.child_by_field_name("parameters")
    if params is None:
        return []
    if params.type == "identifier":  # `v -> v`
        return [params.text.decode("utf-8", "replace")]
    if params.type == "inferred_parameters":  # `(a, b) -> a`
        return [c.text.decode("utf-8", "replace") for c in params.named_children if c.type == "identifier"]
    return [name for p in params.named_children for name in declarator_names(p)]


def _java_declares(node: Node) -> list[str]:
    """The locals a Java construct declares for what it encloses: a `for`'s init, an enhanced `for`'s variable, a
    `catch`'s parameter, a `try`'s resources, a lambda's parameters."""
    if node.type == "for_statement":
        return [name for i in range(node.child_count) if node.field_name_for_child(i) == "init"
                and node.children[i].type == "local_variable_declaration"
                for name in declarator_names(node.children[i], functions=False)]
    if node.type == "enhanced_for_statement" and node.child_by_field_name("name") is not None:
        return [node.child_by_field_name("name").text.decode("utf-8", "replace")]
    if node.type == "catch_clause":
        return [c.child_by_field_name("name").text.decode("utf-8", "replace") for c in node.named_children
                if c.type == "catch_formal_parameter" and c.child_by_field_name("name") is not None]
    if node.type == "try_with_resources_statement":
        resources = node.child_by_field_name("resources")
        return [r.child_by_field_name("name").text.decode("utf-8", "replace")
                for r in (resources.named_children if resources is not None else [])
                if r.type == "resource" and r.child_by_field_name("name") is not None]
    if node.type == "lambda_expression":
        return _java_lambda_parameters(node)
    return []


def _java_redeclared(root: Node) -> Counter:
    """Java: a local declared again while another local or parameter of that name is in scope, in its block or an
    enclosing one of the same method, lambdas included ("variable n is already defined in method f": Java, unlike C,
    lets no local shadow another). A `for`'s variables, an enhanced `for`'s, a `catch`'s parameter, a `try`'s
    resources and a lambda's parameters count as declared too. A class body (a local or anonymous class) starts
    afresh; a switch group is read as a block of its own. Not read: a block with an ERROR or MISSING node among its
    statements (its declarations do not count), nor anything inside an ERROR node."""
    errors, stack = Counter(), [(root, frozenset(), False)]
    while stack:
        node, scope, in_error = stack.pop()
        in_error = in_error or node.is_error
        if node.type in _JAVA_BODIES:
            scope = frozenset()
        if node.type in ("method_declaration", "constructor_declaration"):
            scope = frozenset(_c_parameters(node))
        elif names := _java_declares(node):
            if not in_error:
                for name in names:
                    errors["redeclared", name] += name in scope
            scope = scope | frozenset(names)
        if node.type in ("block", "constructor_body", "switch_block_statement_group") and not in_error \
                and not _broken(node):
            declared = set()
            for child in node.children:
                if child.type == "local_variable_declaration":
                    for name in declarator_names(child, functions=False):
                        errors["redeclared", name] += name in scope or name in declared
                        declared.add(name)
                stack.append((child, scope | frozenset(declared), in_error))
            continue
        stack.extend((child, scope, in_error) for child in node.children)
    return +errors


_JAVA_EXITS = frozenset({"return_statement", "throw_statement", "break_statement", "continue_statement"})


def _java_unreachable(root: Node) -> Counter:
    """Java: a statement after a `return`, `throw`, `break` or `continue` in the same block or switch group
    ("unreachable statement": javac refuses code that cannot run), once per block. Not read, as in `_c_redeclared`:
    a block with an ERROR or MISSING node among its statements, nor inside an ERROR node."""
    errors = Counter()
    for node, in_error in _nodes(root):
        if node.type not in ("block", "switch_block_statement_group") or in_error or _broken(node):
            continue
        statements = [c for c in node.named_children if "comment" not in c.type and c.type != "switch_label"]
        if any(s.type in _JAVA_EXITS for s in statements[:-1]):
            errors["unreachable", ""] += 1
    return errors


def _nodes(root: Node):
    """Every node under `root` (itself included), each with whether it lies inside an ERROR node (or is one)."""
    stack = [(root, False)]
    while stack:
        node, in_error = stack.pop()
        in_error = in_error or node.is_error
        stack.extend((child, in_error) for child in node.children)
        yield node, in_error


def _broken(block: Node) -> bool:
    """An ERROR or MISSING node among a block's own statements: its declarations are not read."""
    return any(child.is_error or child.is_missing for child in block.children)


def _count_redeclared(errors: Counter, declarations: Counter, lexical: set[str]) -> None:
    """Into `errors`, each name of `lexical` that `declarations` counts more than once, once per extra declaration."""
    for name, n in declarations.items():
        if n > 1 and name in lexical:
            errors["redeclared", name] += n - 1


_GO_FUNCTIONS = frozenset({"function_declaration", "method_declaration", "func_literal"})
_GO_DECLARATIONS = frozenset({"var_declaration", "const_declaration", "type_declaration"})
_GO_SPECS = frozenset({"var_spec", "const_spec", "type_spec", "type_alias"})
_GO_NAMES = frozenset({"identifier", "type_identifier", "iota", "true", "false", "nil"})  # predeclared names too


def go_field_names(node: Node) -> list[str]:
    """Go: the names in a node's `name` fields (a spec's, a parameter declaration's: `a, b int` has two)."""
    return [node.children[i].text.decode("utf-8", "replace") for i in range(node.child_count)
            if node.field_name_for_child(i) == "name" and node.children[i].type in _GO_NAMES]


def go_names(node: Node) -> list[str]:
    """Go: the names a `var`, `const` or `type` declaration declares, grouped ones (`var ( ... )`) included."""
    if node.type in _GO_SPECS:
        return go_field_names(node)
    if node.type in _GO_DECLARATIONS or node.type in ("var_spec_list", "const_spec_list", "type_spec_list"):
        return [name for child in node.named_children for name in go_names(child)]
    return []


def _go_parameters(body: Node) -> list[str]:
    """The receiver's, the parameters' and the named results' names of the function whose body `body` is: Go puts
    them in the body's own block."""
    function = body.parent
    if function is None or function.type not in _GO_FUNCTIONS:
        return []
    names = []
    for field in ("receiver", "parameters", "result"):
        params = function.child_by_field_name(field)
        for p in (params.named_children if params is not None and params.type == "parameter_list" else []):
            names += go_field_names(p)
    return names


def _go_redeclared(root: Node) -> Counter:
    """Go: in one block, a name declared again by `var`, `const` or `type` ("x redeclared in this block"), a `:=`
    that declares no new name ("no new variables on left side of :="), and a `:=` whose left side is not names
    (`s.x := 1`). A function's body starts with its receiver, parameters and named results declared; a file starts
    with nothing (its package's other files are not read). Functions at a file's top level count too, but not
    `init` nor methods. The blocks of `if`, `for` and `switch` headers, and a case's implicitly declared names, are
    not read; nor, as in C, a block with an ERROR or MISSING node among its statements, nor what is inside an ERROR."""
    errors = Counter()
    for node, in_error in _nodes(root):
        if node.type not in ("statement_list", "source_file") or in_error or _broken(node):
            continue
        seen = set(_go_parameters(node.parent)) if node.parent is not None and node.parent.type == "block" else set()
        seen.discard("_")
        for statement in node.named_children:
            if statement.type == "short_var_declaration":
                left = statement.child_by_field_name("left")
                items = left.named_children if left is not None else []
                if any(item.type not in _GO_NAMES for item in items):
                    errors["non-name", left.text.decode("utf-8", "replace")] += 1
                    continue
                names = [item.text.decode("utf-8", "replace") for item in items]
                names = [name for name in names if name != "_"]
                if names and all(name in seen for name in names):
                    errors["no new", ", ".join(names)] += 1
                seen.update(names)
                continue
            names = go_names(statement)
            if statement.type == "function_declaration" and statement.child_by_field_name("name") is not None:
                names = [statement.child_by_field_name("name").text.decode("utf-8", "replace")]
                names = [name for name in names if name != "init"]
            for name in names:
                if name != "_" and name in seen:
                    errors["redeclared", name] += 1
                seen.add(name)
    return errors


def _go_results(function: Node) -> tuple[int, bool]:
    """How many values a Go function returns, and whether its results are named (a bare `return` then returns them)."""
    result = function.child_by_field_name("result")
    if result is None:
        return 0, False
    if result.type != "parameter_list":
        return 1, False
    count, named = 0, False
    for p in result.named_children:
        names = go_field_names(p)
        count += max(1, len(names)) if p.type == "parameter_declaration" else 0
        named = named or bool(names)
    return count, named


def _return_errors(root: Node, language: str) -> Counter:
    """A `return` that does not give its function's count of values: Go's "not enough return values" and "too many
    return values" (one call may stand for several values), Java's "missing return value" and "unexpected return
    value" (by whether the method is `void`). Returns inside a lambda (Java) are not read, nor anything inside an
    ERROR node."""
    errors, stack = Counter(), [(root, None, False)]
    functions = _GO_FUNCTIONS if language == "go" else ("method_declaration", "constructor_declaration",
                                                        "compact_constructor_declaration", "lambda_expression")
    while stack:
        node, function, in_error = stack.pop()
        in_error = in_error or node.is_error
        if node.type in functions:
            function = node
        stack.extend((child, function, in_error) for child in node.children)
        if node.type != "return_statement" or function is None or in_error:
            continue
        values = [c for c in node.named_children if "comment" not in c.type]
        if language == "go":
            values = values[0].named_children if values and values[0].type == "expression_list" else values
            expected, named = _go_results(function)
            one_call = len(values) == 1 and values[0].type == "call_expression"
            if (values or not named) and len(values) != expected and not (one_call and expected > 1):
                errors["returns", ""] += 1
        elif function.type != "lambda_expression":
            void = function.type in ("constructor_declaration", "compact_constructor_declaration") or (
                function.child_by_field_name("type") is not None
                and function.child_by_field_name("type").type == "void_type")
            errors["returns", ""] += bool(values) == void
    return errors


def early_errors(text: str, language: str | None) -> Counter:
    """The early errors (see the module's docstring) in `text` parsed as `language`, as a count of (kind, name):
    names declared twice in one block where one of the declarations is lexical (`"redeclared"`), `const`
    declarations without a value outside TypeScript's `declare` (`"const"`), reserved words as names, strict
    code's reserved words as names in strict code, and `await` as a name where it is a keyword (`"word"`). In C
    and C++, locals declared twice in one block (`_c_redeclared`); in Java, a local declared where another of that
    name is in scope (`_java_redeclared`) and a statement after a `return`, `throw`, `break` or `continue`
    (`_java_unreachable`); in Go, names declared twice in one block and a `:=` without a new name
    (`_go_redeclared`); in both, a `return` with the wrong count of values (`"returns"`, `_return_errors`). Empty in
    other languages."""
    if language not in LANGUAGES and language not in _C_FAMILY and language != "go":
        return Counter()
    root = parsed(text, language).root_node  # the gate parses the same window in its other checks
    if language == "go":
        return _go_redeclared(root) + _return_errors(root, language)
    if language == "java":
        return _java_redeclared(root) + _java_unreachable(root) + _return_errors(root, language)
    return _c_redeclared(root) if language in _C_FAMILY else _script_errors(root)


def _script_errors(root: Node) -> Counter:
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
            broken = _broken(node)
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
        _count_redeclared(errors, count, lexical)
    return errors


def adds_early_error(prefix: str, text: str, suffix: str, language: str | None) -> bool:
    """Whether `prefix + text + suffix` has an early error that `prefix + suffix` has not (by kind and name: a text
    that ends `const tim` with `e = time.replace(...)` takes that `const`'s missing value away and redeclares
    `time`, which a total count misses)."""
    return bool(early_errors(prefix + text + suffix, language) - early_errors(prefix + suffix, language))
