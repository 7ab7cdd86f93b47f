"""Python's names read where nothing binds them (`context.bindings.python.unbound_reads`): Python's scope rules,
and nothing claimed where the module's names are not all in its text."""

from __future__ import annotations

import pytest

from dg_lsp.context.bindings.python import unbound_reads

MODULE = '''import os.path
from typing import List as L


class A:
    xs = [1, 2]
    ys = [x * 2 for x in xs]

    def m(self):
        return xs

    def n(self, q=xs):
        return open_ftp(q) + os.sep + self.m()

    def open_ftp(self, q):
        return q


def f(a, /, *b, c=1, **d):
    total = 0
    for i in range(a):
        total += i
    if (w := a):
        pass
    g = lambda z: z + a
    squares = [y * y for y in b if y]
    try:
        pass
    except OSError as err:
        print(err)
    return total + w + g(1) + later + unknown_thing + len(squares) + c + d + __name__


def h(v):
    global made_here
    made_here = v
    match v:
        case [first, *rest]:
            return first, rest
        case {"k": kv, **others}:
            return kv, others
    def inner():
        nonlocal v
        return v + outer_only
    return inner


later = 3
'''


def reads(source: str, span: str) -> list[str]:
    at = source.index(span)
    return [name for name, _ in unbound_reads(source, at, at + len(span))]


@pytest.mark.parametrize("span, names", [
    ("[x * 2 for x in xs]", []),  # a comprehension's first iterable is read in the class body
    ("return xs", ["xs"]),  # a method does not see its class body's names
    ("open_ftp(q) + os.sep + self.m()", ["open_ftp"]),  # nor the class's methods, called without `self.`
    ("total + w + g(1) + later + unknown_thing + len(squares) + c + d + __name__", ["unknown_thing"]),
    ("lambda z: z + a", []),
    ("print(err)", []),
    ("return first, rest", []),
    ("return kv, others", []),
    ("return v + outer_only", ["outer_only"]),
    ("made_here = v", []),
])
def test_names_are_read_by_pythons_scope_rules(span, names):
    assert reads(MODULE, span) == names


def test_every_read_is_found_with_its_offset_in_source_order():
    source = "s = 'é'\ny = é2 + zz + s\n"
    at = source.index("é2")
    assert unbound_reads(source, at, len(source)) == [("é2", at), ("zz", source.index("zz"))]


def test_a_name_bound_anywhere_in_the_scope_counts_and_a_read_outside_the_span_does_not():
    source = "def f():\n    return g() + missing\n\n\ndef g():\n    return late\n\n\nlate = 1\n"
    assert reads(source, "g() + missing") == ["missing"]
    assert reads(source, "return late") == []


@pytest.mark.parametrize("source", [
    "from helpers import *\n\ndef f():\n    return anything\n",  # a star import
    "globals()['anything'] = 1\n\ndef f():\n    return anything\n",  # a name made through globals()
    "names = globals()\nnames['anything'] = 1\n\ndef f():\n    return anything\n",  # inspect.py
    "import enum\n\n@enum.global_enum\nclass F(enum.IntFlag):\n    anything = 1\n\ndef f():\n    return anything\n",
    "exec('anything = 1')\n\ndef f():\n    return anything\n",
    "import sys\nsetattr(sys.modules[__name__], 'anything', 1)\n\ndef f():\n    return anything\n",
    "import builtins\nbuiltins.anything = 1\n\ndef f():\n    return anything\n",
    "__builtins__['anything'] = 1\n\ndef f():\n    return anything\n",
    "def f(:\n    return anything\n",  # does not parse
])
def test_nothing_is_claimed_where_the_modules_names_are_not_all_in_its_text(source):
    assert reads(source, "return anything") == []


@pytest.mark.parametrize("line", ["exec(code, {})", "NAMES = vars(CONFIG)", "MODULE = sys.modules['json']",
                                  "ONE = globals()['CONFIG']", "TWO = globals().get('x')", "THREE = 'x' in globals()"])
def test_exec_in_a_namespace_of_its_own_or_reading_another_module_binds_nothing_unseen(line):
    """jinja2's debug.py runs `exec(code, globals, locals)`, click's parser.py reads `globals()[f"_{name}"]`: their
    modules' names are all in their text still."""
    source = f"import sys\nCONFIG = code = 1\n{line}\n\ndef f():\n    return anything\n"
    assert reads(source, "return anything") == ["anything"]


def test_builtins_and_the_names_every_module_has_are_bound():
    source = "def f(xs):\n    return len(xs) + __file__ + _('text') + WindowsError\n"
    assert reads(source, "return len(xs) + __file__ + _('text') + WindowsError") == []


ORDER = '''import logging
from typing import Optional

logger = logging.getLogger()
counter = 0


def f(a, msg):
    logger = logger(msg)
    a = a + 1
    x = 1
    x = x + 1
    if (m := a.match()) and m.group():
        pass
    try:
        from json import JSONDecodeError
    except JSONDecodeError:
        pass
    for item in a:
        total = total + item
    while a:
        late = 1
    print(late)
    while node:
        node = node.parent
    profiler: Optional[cProfile.Profile]
    import cProfile
    return x


def g():
    global counter
    counter = counter + 1
'''


@pytest.mark.parametrize("span, names", [
    ("logger = logger(msg)", ["logger"]),  # its own name, bound only by this assignment: UnboundLocalError
    ("a = a + 1", []),  # a parameter
    ("x = x + 1", []),  # bound by an earlier statement
    ("(m := a.match()) and m.group()", []),  # a walrus binds before what follows it
    ("except JSONDecodeError:", []),  # the handler comes after the `try` body's import
    ("total = total + item", []),  # in a loop: an earlier pass may have bound it
    ("print(late)", []),  # bound in a loop before it
    ("while node:", ["node"]),  # a `while` test runs before the first pass of the body that binds it
    ("node = node.parent", []),  # in the body: a later pass reads the earlier pass's binding
    ("Optional[cProfile.Profile]", []),  # a local's annotation is never run (IPython's completer.py)
    ("counter = counter + 1", []),  # declared global
])
def test_a_functions_own_name_read_before_anything_binds_it_is_unbound(span, names):
    assert reads(ORDER, span) == names


def test_a_read_a_name_error_handler_expects_is_not_claimed():
    """pyflakes' rule: `try: unicode` / `except NameError: unicode = str` is Python 2 compatibility, not a mistake."""
    source = "try:\n    text = unicode\nexcept (KeyError, NameError):\n    text = str\n"
    at = source.index("unicode")
    assert unbound_reads(source, at, at + 7) == []
    # other handlers, the handler itself, and a function defined in the guarded body (it runs later) are claimed
    for other in ("try:\n    text = unicode\nexcept ImportError:\n    text = str\n",
                  "try:\n    pass\nexcept NameError:\n    text = unicode\n",
                  "try:\n    def f():\n        return unicode\nexcept NameError:\n    pass\n"):
        at = other.index("unicode")
        assert unbound_reads(other, at, at + 7) == [("unicode", at)]


def test_annotations_that_never_run_are_read_for_names_bound_nowhere_not_for_the_order():
    """torch's scheduler: `def rename(n: str)` in a function that binds a local `str` later; under `from __future__
    import annotations` the annotation is never evaluated."""
    body = "def outer():\n    def rename(n: str) -> str:\n        return n\n    str = 1\n    return rename\n"
    at = body.index("str")
    assert unbound_reads(body, at, at + 3) == [("str", at)]  # evaluated at the def: UnboundLocalError
    lazy = "from __future__ import annotations\n" + body
    at = lazy.index("str)")
    assert unbound_reads(lazy, at, at + 3) == []
    made_up = lazy.replace("n: str", "n: Strr")
    at = made_up.index("Strr")
    assert unbound_reads(made_up, at, at + 4) == [("Strr", at)]  # a name bound nowhere is still a mistake
