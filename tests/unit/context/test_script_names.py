"""JavaScript's and TypeScript's names read where nothing binds them (`context.bindings.script_names`): claimed only
by the language's scope rules, and only where the file shows everything that could bind them."""

from __future__ import annotations

import pytest

from dg_lsp.context.bindings.script_names import script_unbound, unbound_script_reads

FILE = """const fs = require('fs')
import { join, dirname as dir } from 'path'
import * as os from 'os'

function f(a, {b, c: [d]}, ...rest) {
  if (a) {
    let l = 2
    READ
  }
  try { g() } catch (e) { console.log(e) }
  for (const k of [1]) { k }
  hoisted()
  var late = 1
  function hoisted() { return late }
  return class K { m() { return K } }
}

const named = function inner() { return inner }

function g() { return join(dir('a'), os.EOL, fs) }
"""


def claims(read: str, source: str = FILE, body: str = "READ", language: str = "javascript") -> list[str]:
    """The names claimed in `read`, put in place of `body` in `source`, with the span `read` itself."""
    text = source.replace(body, read)
    at = text.index(read)
    return [name for name, _ in unbound_script_reads(text, at, at + len(read), language)]


def test_a_name_nothing_declares_is_claimed_where_it_is_read():
    text = FILE.replace("READ", "return nodeConcat(a)")
    at = text.index("return nodeConcat(a)")
    assert unbound_script_reads(text, at, at + len("return nodeConcat(a)"), "javascript") == \
        [("nodeConcat", at + len("return "))]


@pytest.mark.parametrize("read", [
    "return a + b + d + rest + l",  # parameters (destructured, rest) and the block's own `let`
    "return late + hoisted()",  # a `var` and a function declaration, seen in the whole function, before their line
    "return fs + join + dir + os + g + f + named",  # the file's declarations and imports
    "console.log(process.env, window, document, describe, Buffer, __dirname, globalThis, undefined, arguments)",
    "if (typeof madeUp === 'undefined') return",  # `typeof` reads an undeclared name without an error
    "sloppy = 1",  # an assignment declares a global in sloppy code: not a read
    "return { a, b }",
])
def test_bound_names_and_globals_are_not_claimed(read):
    assert claims(read) == []


@pytest.mark.parametrize("read, claimed", [
    ("return e", ["e"]),  # a `catch` parameter is seen in its clause only
    ("return k", ["k"]),  # a `for (const k of ...)` in its loop only
    ("return K + inner", ["K", "inner"]),  # a class or function expression's name in itself only
    ("return { made }", ["made"]),  # a shorthand property reads its name
    ("const x = y", ["y"]),
])
def test_names_declared_only_in_another_scope_are_claimed(read, claimed):
    assert claims(read) == claimed


def test_a_let_in_a_sibling_block_is_not_seen():
    source = "function f(a) {\n  if (a) { let inner = 1 }\n  READ\n}\n"
    assert claims("return inner", source) == ["inner"]
    assert claims("return a", source) == []


def test_typescript_types_are_not_read_and_enum_members_are_not_in_scope_outside_the_enum():
    source = ("import { A } from './a'\ninterface I { a: Foo }\ntype T = Bar<Baz>\nenum E { X = 1, Y = X }\n"
              "namespace NS { export const z = 1 }\n"
              "export function f(p: I, q?: T): Qux {\n  const r = p as unknown as Map<Key, Value>\n  READ\n}\n")
    assert claims("return [A, p, q, r, E, NS, E.X, NS.z]", source, language="typescript") == []
    assert claims("const fn = (x: number, cb: (err: Error) => void): Promise<Res> => cb(x)", source,
                  language="typescript") == []
    assert claims("return X + z + Foo", source, language="typescript") == ["X", "z", "Foo"]
    # a qualified type names a namespace, which need not be a value (excalidraw's `as unknown as React.KeyboardEvent`)
    assert claims("return p as unknown as Made.Event", source, language="typescript") == []
    assert claims("const q: Made.Event = p", source, language="typescript") == []


def test_jsx_element_and_attribute_names_are_not_read():
    source = "import React from 'react'\nexport function App(p) {\n  READ\n}\n"
    assert claims("return <Widget.Item size={p.size} label={made} />", source) == ["made"]
    assert claims("return <div className={p.c}>{p.text}</div>", source, language="tsx") == []


def test_nothing_is_known_where_the_file_reads_an_unknown_name_elsewhere():
    """Its environment has globals the list does not know (a bundler's define, a `/* global */` comment): a name
    made up in the span may be one of them."""
    source = FILE + "\nfunction h() { return injectedGlobal }\n"
    assert claims("return nodeConcat(a)", source) == []


def test_names_read_below_the_span_in_its_function_do_not_stop_the_reading():
    """A statement deleted and being written again: the code below reads what it bound, and waits for it."""
    source = "function f(a) {\n  READ\n  return messages.length + a\n}\n"
    assert claims("const link = node + a", source) == ["node"]
    # a name read unbound below too is never claimed: the environment (or the next statement) may have it
    assert claims("const link = messages", source) == []


def test_a_name_typeof_tests_elsewhere_is_not_claimed_but_one_it_tests_in_the_span_is():
    source = "const has = typeof AsyncIterator === 'function'\nfunction f(a) {\n  READ\n}\n"
    assert claims("return AsyncIterator", source) == []
    assert claims("return typeof made === 'number' && made > a", source) == ["made"]
    # `typeof` of a local elsewhere is a type test: json-stringify-nice's `val => typeof val === 'object'`
    source = "const isObj = val => typeof val === 'object'\nconst compare = (ak, bk) =>\n  READ\n"
    assert claims("ak < val", source) == ["val"]


@pytest.mark.parametrize("extra", ["with (a) { x }", "eval('var hidden = 1')"])
def test_with_and_eval_may_bind_names_no_statement_shows(extra):
    source = "function f(a) {\n  " + extra + "\n  READ\n}\n"
    assert claims("return hidden", source) == []


def test_a_file_that_does_not_parse_clean_is_not_read():
    assert claims("return nodeConcat(a)", FILE + "\nfunction broken( {\n") == []
    assert claims("return nodeConcat(a)", FILE, language="python") == []


def test_keywords_tree_sitter_reads_as_names_and_bundler_names_are_not_claimed():
    source = "async function f(a) {\n  READ\n}\n"
    assert claims("return await (0, a.b)(1)", source) == []
    assert claims("return __webpack_require__(a) || __DEV__", source) == []
    # `new.target` and `import.meta` hold no name: `target` and `meta` are names like any other
    assert claims("return new.target || import.meta.url || target || meta", source) == ["target", "meta"]


def test_esbuilds_dead_export_annotation_is_not_read():
    source = "function f(a) {\n  return a\n}\n0 && (module.exports = {\n  f,\n  READ\n});\n"
    assert claims("notDefined", source) == []


def test_offsets_count_characters_not_bytes():
    text = "const s = 'é€😀'\nfunction f() {\n  return made\n}\n"
    at = text.index("return made")
    assert unbound_script_reads(text, at, len(text), "javascript") == [("made", at + len("return "))]
    assert script_unbound(text, "javascript") == [("made", at + len("return "))]


def test_a_lone_surrogate_is_nothing_known_not_an_error():
    """A broken UTF-16 text from the editor has no UTF-8 form for tree-sitter."""
    text = "const s = '\ud800'\nfunction f() {\n  return made\n}\n"
    assert unbound_script_reads(text, text.index("return"), len(text), "javascript") == []
    assert script_unbound(text, "javascript") is None


def test_script_unbound_reads_the_whole_file_without_the_guard():
    text = "function f() {\n  return one + two\n}\nfunction g() {\n  return console\n}\n"
    assert script_unbound(text, "javascript") == [("one", 24), ("two", 30)]
    assert script_unbound(text + "function broken( {\n", "javascript") is None
