"""A selection fill's whole-document checks (`completion/selection.py`) beyond compiling: a fill that leaves unbound
a name the selected code bound and the code after it reads is no fill. The examples are fills the embedded model
wrote in the editing diagnostic (session 39): the stdlib's domreg.py, npm's sbom-spdx.js, libidn2's register.c."""

from __future__ import annotations

from dg_lsp.completion.selection import dropped_names, refusal

PY = ("import os\n\n\ndef names(s, sep):\n    parts = s.split(sep)\n    n = len(parts)\n    if n:\n"
      "        first = parts[0]\n    else:\n        first = None\n    return n, first, os.sep\n")


def test_a_python_fill_that_no_longer_binds_a_name_read_below_is_refused():
    loop = "for p in s:\n        print(p)"
    assert dropped_names(PY, (4, 4), (4, 24), loop, "python") == ["parts"]
    assert refusal(PY, (4, 4), (4, 24), loop, "python") == \
        "it no longer binds parts, which the code after the selection reads"
    assert dropped_names(PY, (4, 4), (4, 24), "parts = s.split()", "python") == []  # still bound
    assert dropped_names(PY, (4, 4), (4, 24), "parts, rest = s.split(sep), None", "python") == []


def test_a_name_bound_elsewhere_or_read_only_above_is_not_dropped():
    assert dropped_names(PY, (7, 8), (7, 24), "first = parts[-1]", "python") == []
    assert dropped_names(PY, (7, 8), (7, 24), "pass", "python") == []  # `first` is bound in the else too
    assert dropped_names(PY, (5, 4), (5, 18), "m = len(parts)", "python") == ["n"]
    assert dropped_names(PY, (5, 4), (5, 18), "sep = 1", "python") == ["n"]  # a parameter stays bound
    assert dropped_names(PY, (0, 0), (0, 9), "import sys", "python") == ["os"]  # the module's import
    assert dropped_names(PY, (4, 10), (4, 24), "s.strip()", "python") == []  # inside a line: not a statement
    assert dropped_names(PY, (4, 4), (4, 24), "parts = (", "python") == []  # the fill does not parse: unknown


JS = ("function toSpdx(node, seen) {\n  const uuid = crypto.randomUUID()\n  let license = node.license\n"
      "  return { uuid, license, seen }\n}\n")


def test_a_script_fill_that_no_longer_declares_a_name_read_below_is_refused():
    assert dropped_names(JS, (1, 2), (1, 34), "const childID = node.id", "javascript") == ["uuid"]  # `{ uuid }`
    assert dropped_names(JS, (1, 2), (1, 34), "const uuid = node.id", "javascript") == []
    assert dropped_names(JS, (2, 2), (2, 28), "const url = node.url", "typescript") == ["license"]
    assert dropped_names(JS, (1, 2), (1, 34), "const seen = 1", "javascript") == ["uuid"]
    assert dropped_names("x = 1\ny = x\n", (0, 0), (0, 5), "z = 1", "ruby") == []  # no grammar: not read


C = ("int main(int argc, char **argv) {\n  char src[BUFSIZ];\n  int n = argc;\n"
     "  return copy(src, argv[1]) + n;\n}\n")


def test_a_c_or_java_fill_that_no_longer_declares_a_name_read_below_is_refused():
    """libidn2's register.c: `char src[BUFSIZ];` selected, `int *i;` written; gcc: 'src' undeclared."""
    assert dropped_names(C, (1, 2), (1, 19), "int *i;", "c") == ["src"]
    assert dropped_names(C, (1, 2), (1, 19), "char src[64];", "c") == []
    assert dropped_names(C, (2, 2), (2, 15), "argc = 1;", "cpp") == ["n"]  # a statement, read in a function's body
    java = "class A {\n  int f(int x) {\n    int y = x + 1;\n    return y;\n  }\n}\n"
    assert dropped_names(java, (2, 4), (2, 18), "x++;", "java") == ["y"]
    assert dropped_names(java, (2, 4), (2, 18), "int y = 2, z = 3;", "java") == []


RUST = ("impl<N: Copy> Graph<N> {\n    fn remove_edge(&mut self, a: N, b: N) -> Option<E> {\n"
        "        let weight = self.edges.remove(&(a, b));\n        let (low, high) = (a, b);\n"
        "        if let Some(w) = weight {\n            return Some(w);\n        }\n        weight\n    }\n}\n")


def test_a_rust_fill_that_no_longer_declares_a_name_read_below_or_no_longer_returns_is_refused():
    """petgraph's graphmap.rs (session 41): `let weight = ...` selected, an `if` written; cargo: "cannot find value
    `weight` in this scope". A pattern binds each of its names; a shadowing `let` declares the name again; a
    block's last expression is its value, which is not read as a return."""
    assert dropped_names(RUST, (2, 8), (2, 48), "if self.edges.is_empty() {\n            return None;\n        }",
                         "rust") == ["weight"]
    assert dropped_names(RUST, (2, 8), (2, 48), "let mut weight = self.edges.remove(&(b, a));", "rust") == []
    other = RUST + "fn add_edge(weight: E) -> E {\n    weight\n}\n"  # another function's `weight` is another name
    assert dropped_names(other, (2, 8), (2, 48), "if low == high {\n            return None;\n        }", "rust") \
        == ["weight"]
    static = RUST + "static weight: Option<E> = None;\n"  # an item binds anywhere
    assert dropped_names(static, (2, 8), (2, 48), "if low == high {\n            return None;\n        }", "rust") == []
    assert dropped_names(RUST, (3, 8), (3, 33), "let low = a;", "rust") == []  # `high` is read nowhere
    assert dropped_names(RUST, (2, 8), (3, 33), "let Some(weight) = self.edges.get(&(a, b)) else {\n"
                         "            return None;\n        };", "rust") == []
    assert refusal(RUST, (5, 12), (5, 27), "self.count += 1;", "rust") == \
        "the selected code ended in a return or throw, and what the model wrote does not"
    assert refusal(RUST, (5, 12), (5, 27), "panic!(\"no edge\");", "rust") is None
    assert refusal(RUST, (5, 12), (5, 27), "return Some(w.clone());", "rust") is None
    assert refusal(RUST, (7, 8), (7, 14), "return weight;", "rust") is None  # the value is no return


def test_a_rust_fill_that_ends_in_a_statement_where_the_selection_ended_in_the_functions_value_is_refused():
    """A Rust function's value is its body's last expression: `weight` selected at the end of `-> Option<E>`, a
    statement written, and rustc's "expected `Option<E>`, found `()`". An expression, a return, a panic or an `if`
    may give the value; a function of `()`, or a last expression inside an inner block, is not read."""
    why = "the selected code ended in the function's value (its last expression), and what the model wrote ends in " \
          "a statement"
    assert refusal(RUST, (7, 8), (7, 14), "self.count += 1;", "rust") == why
    assert refusal(RUST, (7, 8), (7, 14), "let w = weight.or(None);", "rust") == why
    assert refusal(RUST, (6, 8), (7, 14), "}\n        weight.or(None)", "rust") is None
    for text in ("weight.or(None)", "return weight;", "panic!(\"gone\");",
                 "if low == high {\n            None\n        } else {\n            weight\n        }"):
        assert refusal(RUST, (7, 8), (7, 14), text, "rust") is None, text
    unit = "impl A {\n    fn touch(&mut self) {\n        self.count += 1;\n        self.flush()\n    }\n}\n"
    assert refusal(unit, (3, 8), (3, 20), "self.flush();", "rust") is None
    inner = "fn f(x: bool) -> i32 {\n    if x {\n        g();\n        1\n    } else {\n        2\n    }\n}\n"
    assert refusal(inner, (3, 8), (3, 9), "g();", "rust") is None


JAVA = ("class S {\n  static boolean none(CharSequence cs, String invalid) {\n    if (invalid == null) {\n"
        "      return true;\n    }\n    return none(cs, invalid.toCharArray());\n  }\n}\n")


def test_a_fill_that_no_longer_returns_where_the_selection_did_is_refused():
    """commons-lang's StringUtils (session 40): the method's last `return` selected, two declarations written; javac:
    "missing return statement". jinja2's `return ident` became an `else:` branch."""
    two = "final int csLen = cs.length();\n    final int csLast = csLen - 1;"
    assert refusal(JAVA, (5, 4), (5, 43), two, "java") == \
        "the selected code ended in a return or throw, and what the model wrote does not"
    assert refusal(JAVA, (5, 4), (5, 43), "return none(cs, invalid.chars());", "java") is None
    assert refusal(JAVA, (5, 4), (5, 43), "if (cs == null) {\n      return false;\n    } else {\n"
                   "      throw new IllegalStateException();\n    }", "java") is None  # both ways exit
    assert refusal(JAVA, (5, 4), (5, 43), "if (cs == null) {\n      return false;\n    }", "java") is not None
    assert refusal(JAVA, (5, 4), (5, 43), "for (char c : cs) {\n      return c;\n    }", "java") is None  # not read
    assert refusal(JAVA, (3, 6), (3, 18), "x = 1;", "java") is not None  # inside an if's block too
    assert refusal(JAVA, (5, 11), (5, 42), "cs.length() == 0", "java") is None  # inside a line
    py = "def get(self, ident):\n    ident = self.find(ident)\n    return ident\n"
    assert refusal(py, (2, 4), (2, 16), "else:\n        self.loads[ident] = None", "python") is not None
    assert refusal(py, (2, 4), (2, 16), "if ident:\n        return ident\n    raise KeyError(ident)", "python") is None
    assert refusal(py, (1, 4), (1, 28), "ident = self.lookup(ident)", "python") is None  # no exit selected
    go = "package p\n\nfunc f(x int) int {\n\ty := x + 1\n\treturn y\n}\n"
    assert refusal(go, (4, 1), (4, 9), "y++", "go") is not None
    assert refusal(go, (4, 1), (4, 9), "return y * 2", "go") is None
    assert refusal(go, (4, 1), (4, 9), 'panic("no y")', "go") is None  # panic ends the function too
    assert refusal(go, (3, 1), (3, 11), "z := x", "go") == \
        "it no longer binds y, which the code after the selection reads"


def test_a_fill_that_reads_a_name_nothing_binds_is_refused_and_says_which():
    """Python: `self.rfc2109 = r` written where no `r` is (the stdlib's cookiejar.py, session 42) raises NameError."""
    source = "class C:\n    def __init__(self, rest, rfc2109):\n        self.rest = rest\n        self.rfc = rfc2109\n"
    start, end = (3, 8), (3, 26)
    assert refusal(source, start, end, "self.rfc = r", "python") == "it reads r, which nothing has bound there"
    assert refusal(source, start, end, "self.rfc = rest", "python") is None


def test_a_fill_after_which_the_code_around_it_reads_a_name_before_it_is_bound_is_refused():
    """jinja2's `url_quote` (session 42): `rv = ...` selected, two `if`s written; `rv = rv.replace(...)` below still
    binds `rv`, which `dropped_names` takes for bound, but reads it first."""
    source = ("from urllib.parse import quote\n\n\ndef url_quote(obj, for_qs):\n    safe = b'/'\n"
              "    rv = quote(obj, safe)\n    if for_qs:\n        rv = rv.replace('%20', '+')\n    return rv\n")
    start, end = (5, 4), (5, 25)
    assert refusal(source, start, end, "if len(obj) == 1:\n        return safe", "python") \
        == "the code around it reads rv, which it leaves unbound"
    assert refusal(source, start, end, "rv = quote(obj, b'')", "python") is None
    assert refusal(source, start, end, "if len(obj) == 1:\n        return safe", "python", names=False) is None


def test_a_fill_that_reads_or_leaves_an_attribute_nothing_binds_is_refused():
    """Python: a method's `self.<name>` that the class never binds raises AttributeError."""
    source = ("class Queue:\n    def __init__(self, items):\n        self._items = list(items)\n\n"
              "    def size(self):\n        return len(self._items)\n")
    start, end = (2, 8), (2, 33)
    assert refusal(source, start, end, "self._items = self._copy(items)", "python") \
        == "it reads self._copy, which nothing has bound there"
    assert refusal(source, start, end, "self.items = items", "python") \
        == "the code around it reads self._items, which it leaves unbound"
    assert refusal(source, start, end, "self._items = [*items]", "python") is None


def test_a_script_fill_that_reads_or_leaves_a_name_nothing_declares_is_refused():
    """JavaScript and TypeScript: zod's util.ts (session 39's rows), `Struct` made up; zod's fr.test.ts, where the
    selected `const numberResult = ...` is replaced and the code below still reads it (another test declares its
    own `numberResult`, so `dropped_names`, which reads only names declared nowhere else, does not see it)."""
    source = ("export function clone(o: unknown) {\n  if (o instanceof Map) return new Map(o as any);\n"
              "  return o;\n}\n")
    start, end = (1, 2), (1, 48)
    assert refusal(source, start, end, "if (o instanceof Struct) return new Struct(o);", "typescript") \
        == "it reads Struct, which nothing has bound there"
    assert refusal(source, start, end, "if (o instanceof Set) return new Set(o as any);", "typescript") is None
    tests = ("test('a', () => {\n  const numberResult = check(1);\n  expect(numberResult).toBe(1);\n});\n"
             "test('b', () => {\n  const numberResult = check(2);\n  expect(numberResult).toBe(2);\n});\n"
             "function check(n) {\n  return n;\n}\n")
    start, end = (1, 2), (1, 33)
    assert refusal(tests, start, end, "const arrayResult = check([]);", "javascript") \
        == "the code around it reads numberResult, which it leaves unbound"
    assert refusal(tests, start, end, "const numberResult = check(3);", "javascript") is None
    assert refusal(tests, start, end, "const arrayResult = check([]);", "javascript", names=False) is None


def test_a_script_fill_that_finishes_a_word_begun_before_the_selection_is_judged_as_its_own_read():
    """`fo` with only its `o` selected, `oo` written: `foo` is the fill's read, unbound below too (the environment may
    have it), so not claimed; nor is it the code around the fill that reads it."""
    source = "function f(a) {\n  const v = fo;\n  return foo;\n}\n"
    assert refusal(source, (1, 13), (1, 14), "oo", "javascript") is None
