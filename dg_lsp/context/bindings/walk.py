"""What the early-error and name readings of every language share: a text's UTF-8 form and its nodes' offsets, a
walk of a tree that knows where ERROR nodes are, the count of names declared twice, and the scoped walk of the
languages where no local shadows another."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node


def encoded(source: str) -> bytes | None:
    """`source` in UTF-8; None where it holds a lone surrogate (a broken UTF-16 text from the editor)."""
    try:
        return source.encode("utf-8")
    except UnicodeEncodeError:
        return None


def named(data: bytes, reads: list[Node]) -> list[tuple[str, int]]:
    """(text, offset in characters) of each of `reads` (nodes of the tree of `data`, UTF-8), in source order,
    decoding `data` once."""
    out, byte, char = [], 0, 0
    for read in reads:
        char += len(data[byte:read.start_byte].decode("utf-8", "replace"))
        byte = read.start_byte
        out.append((read.text.decode("utf-8", "replace"), char))
    return out


def nodes(root: Node):
    """Every node under `root` (itself included), each with whether it lies inside an ERROR node (or is one)."""
    stack = [(root, False)]
    while stack:
        node, in_error = stack.pop()
        in_error = in_error or node.is_error
        stack.extend((child, in_error) for child in node.children)
        yield node, in_error


def broken_block(block: Node) -> bool:
    """An ERROR or MISSING node among a block's own statements: its declarations are not read."""
    return any(child.is_error or child.is_missing for child in block.children)


def count_redeclared(errors: Counter, declarations: Counter, lexical: set[str]) -> None:
    """Into `errors`, each name of `lexical` that `declarations` counts more than once, once per extra declaration."""
    for name, n in declarations.items():
        if n > 1 and name in lexical:
            errors["redeclared", name] += n - 1


@dataclass(frozen=True)
class ScopeRules:
    """How a language where no local may shadow another (Java, C#) scopes its locals, for `scoped_redeclared`."""

    bodies: frozenset[str]  # a type's body: what is inside starts afresh
    parameters: Callable[[Node], list[str] | None]  # a function's parameters, its scope's start; None: not a function
    declares: Callable[[Node], list[str]]  # what a construct declares for what it encloses (a `for`'s variables)
    blocks: frozenset[str]  # statement lists, each a scope
    groups: frozenset[str]  # a switch's groups inside a block: their statements share the block's scope
    locals: Callable[[Node], list[str]]  # the locals one statement of a block declares


def scoped_redeclared(root: Node, rules: ScopeRules) -> Counter:
    """A local (or a construct's variable, `rules.declares`) declared while another local or parameter of that name
    is in scope: in its block or an enclosing one of the same function, declarations before it. Not read: a block
    with an ERROR or MISSING node among its statements (its declarations do not count), nor inside an ERROR node."""
    errors, stack = Counter(), [(root, frozenset(), False)]
    while stack:
        node, scope, in_error = stack.pop()
        in_error = in_error or node.is_error
        if node.type in rules.bodies:
            scope = frozenset()
        if (parameters := rules.parameters(node)) is not None:
            scope = frozenset(parameters)
        elif names := rules.declares(node):
            if not in_error:
                for name in names:
                    errors["redeclared", name] += name in scope
            scope = scope | frozenset(names)
        groups = [c for c in node.children if c.type in rules.groups]
        if node.type in rules.blocks and not in_error and not any(map(broken_block, [node, *groups])):
            declared: set[str] = set()
            for child in (s for c in node.children for s in (c.children if c.type in rules.groups else [c])):
                for name in rules.locals(child):
                    errors["redeclared", name] += name in scope or name in declared
                    declared.add(name)
                stack.append((child, scope | frozenset(declared), in_error))
            continue
        stack.extend((child, scope, in_error) for child in node.children)
    return +errors
