"""JavaScript and TypeScript early errors that tree-sitter parses as valid (`context.bindings`), and the syntax gate
refusing a suggestion that adds one: Node refuses the whole file. The examples are suggestions the embedded model
made in npm's lib/ (the editing diagnostic, session 39)."""

from __future__ import annotations

import pytest

from dg_lsp.completion.postprocess import clean_cut
from dg_lsp.context.bindings import adds_early_error, early_errors

CASES = {
    "function f(a) { const a = 1; }": 1,  # over a parameter
    "function f({a, b: c}, d = 2) { let c = 1; let d; let b = 3; }": 2,  # `b` is a key, not a name
    "const f = a => { const a = 1 };": 1,
    "const x = 1;\nconst x = 2;": 1,
    "class K {}\nfunction K() {}": 1,
    "export const y = 1;\nlet y;": 1,
    "switch (a) { case 1: let q = 1; break; case 2: let q = 2; }": 1,  # the cases share one block
    "const w;": 1,
    "var x = 1;\nvar x = 2;": 0,  # var may be declared again
    "let x; { let x; }": 0,  # a nested block is its own
    "for (const i of xs) { const i = 1 }": 0,
    "const {a = b, b} = o;": 0,  # a default value names no binding
    "class A { m() { return package.tar } }": 1,  # a class is strict code
    "import a from 'a'\nconst x = package.tar": 1,  # so is a module
    "'use strict'\nlet interface = 1": 1,
    "const x = package.tar": 0,  # a script is not
    "class A { static m() { let x = 1 } }": 0,  # the keyword is no name
    "async function f() { const g = function () { return await } }": 0,  # not in g, which is not async
    "async function f() { return await g() }": 0,
    "async function f(p) { return check(await (0, fs.stat)(p)) }": 0,  # read as a call of `await`
    "const _null = 1\nexport { _null as null };": 0,  # an export's name may be any word
}


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_early_errors_are_counted_by_the_specifications_block_rules(language):
    for text, want in CASES.items():
        assert early_errors(text, language).total() == want, text
    assert early_errors("declare const w: number;", "typescript").total() == 0  # ambient: no value needed
    reserved = early_errors("function f(inst) { const new = g(inst); return new }", "typescript")
    assert reserved == {("word", "new"): 2}  # a reserved word, twice
    # JavaScript's grammar reads a lone `await` as a variable (TypeScript's as an error, which the gate sees)
    lone = early_errors("async function f() {\n  const t = await\n  return t\n}", "javascript")
    assert lone == {("word", "await"): 1}
    assert early_errors("x = 1\nx = 2\n", "python").total() == 0


def test_only_an_error_the_text_adds_counts():
    prefix, suffix = "function explain(from) {\n  const str = from.name\n  ", "\n  return str\n}\n"
    assert adds_early_error(prefix, "const from = from.name", suffix, "javascript")
    assert not adds_early_error(prefix, "const to = from.name", suffix, "javascript")
    # a window cut inside a method: tree-sitter runs two methods' statements into one broken block, not judged
    cut = "    const spec = npa(a)\n    return spec\n  }\n\n  async change (user, pkg) {\n    "
    assert not adds_early_error(cut, "const spec = npa(pkg)", "\n    return spec\n  }\n}\n", "javascript")
    whole = "class A {\n  async change (user, pkg) {\n    const spec = 1\n    "
    assert adds_early_error(whole, "const spec = npa(pkg)", "\n    return spec\n  }\n}\n", "javascript")
    # a window that starts inside a signature has an error at its top: the blocks below are read all the same (zod's
    # api.ts, `const new = existing.get(inst)` in an arrow function far below the window's start)
    window = ("  fn: (data: O) => unknown,\n): Check {\n  const ch = make((inst) => {\n"
              "    const existing = get(inst)\n    ")
    assert adds_early_error(window, "const new = existing.get(inst);", "\n  })\n  return ch\n}\n", "typescript")
    assert not adds_early_error(window, "const old = existing.get(inst);", "\n  })\n  return ch\n}\n", "typescript")
    # nor a cut switch, whose `case` the recovery reads as a variable
    # (zod's from-json-schema.ts, the window's lines that still did it)
    cut_switch = '\n    case "array": {\n      } else if (items !== undefined) {'
    assert not adds_early_error("      if (typeof s", 'chema.minimum === "number") {', cut_switch, "typescript")
    # zod's regexes.ts: `const tim` typed on, `e = time.replace(opts, time)`: a value for that `const`, and `time`
    # declared again (one error gone, another come)
    body = "function datetime(args) {\n  const time = timeSource(args)\n  const tim"
    assert adds_early_error(body, "e = time.replace(opts, time);", "\n  return time\n}\n", "typescript")
    twice = "const a = 1\nconst a = 2\n"  # an error already there: a text that adds none passes
    assert not adds_early_error(twice, "const b = 3", "\n", "javascript")


def test_the_gate_refuses_a_suggestion_that_declares_a_name_its_block_has():
    prefix = ("class Pack {\n  async exec (args) {\n    const unicode = this.npm.config.get('unicode')\n"
              "    const json = this.npm.config.get('json')\n    ")
    suffix = "\n    return json\n  }\n}\n"
    assert clean_cut("const unicode = unicode.replace('-', ' ')", prefix, suffix, "javascript") == ""
    assert clean_cut("const dryRun = this.npm.config.get('dry-run')", prefix, suffix, "javascript") == \
        "const dryRun = this.npm.config.get('dry-run')"
    assert clean_cut("const cache", prefix, suffix, "typescript") == ""  # no value
    assert clean_cut("const tar = await package.tar.load(args)", prefix, suffix, "javascript") == ""


def test_c_cpp_and_java_locals_declared_twice_in_a_block_are_early_errors():
    """libidn2's register.c: `char *insertname2;` written where the block has it; gcc: "redeclaration of
    'insertname2' with no linkage". Not a function's declaration nor an `extern` one, which C may repeat."""
    c = ("int f(int a) {\n  int a2 = 1;\n  int b; int b;\n  { int b; }\n  int g(void); int g(void);\n"
         "  extern int e; extern int e;\n}\n")
    assert early_errors(c, "c") == {("redeclared", "b"): 1}
    assert early_errors("int f(int a) { int a = 1; return a; }", "c") == {("redeclared", "a"): 1}  # a parameter
    over = early_errors("int *f(char **argv) {\n  char *argv = 0;\n  return 0;\n}\n", "cpp")
    assert over == {("redeclared", "argv"): 1}
    assert early_errors("class A { void f(int a) { String s; String s; } }", "java") == {("redeclared", "s"): 1}
    prefix = "int main(void) {\n  char *insertname;\n  char *insertname2;\n  "
    suffix = "\n  return use(insertname, insertname2);\n}\n"
    assert clean_cut("char *insertname2;", prefix, suffix, "c") == ""
    assert clean_cut("char *insertname3;", prefix, suffix, "c") == "char *insertname3;"


def test_go_names_declared_twice_in_a_block_and_a_colon_equals_with_no_new_name_are_early_errors():
    """go build: "no new variables on left side of :=" (`err := f()` where the block has `err`, a parameter or a named
    result included) and "x redeclared in this block". A `:=` with one new name among old ones is an assignment to
    those; a nested block, an `if`'s header and `_` declare afresh; `init` may be declared again."""
    go = ("package p\n\nfunc (r *T) f(x int) (n int, err error) {\n\tx := 2\n\ta, b := 1, 2\n\ta, c := 3, 4\n"
          "\tvar c = 1\n\t_, _ = 1, 2\n\t_ := 3\n\ts.x := 1\n\tif err := g(); err != nil {\n\t\terr := 3\n\t}\n"
          "\t{\n\t\tx := 4\n\t}\n\tr := 5\n\treturn\n}\n\nfunc init() {}\nfunc init() {}\nfunc g() {}\nfunc g() {}\n")
    assert early_errors(go, "go") == {("no new", "x"): 1, ("redeclared", "c"): 1, ("non-name", "s.x"): 1,
                                      ("no new", "r"): 1, ("redeclared", "g"): 1}
    prefix = "package p\n\nfunc load(path string) error {\n\tdata, err := read(path)\n\t"
    suffix = "\n\treturn use(data, err)\n}\n"
    assert clean_cut("err := check(data)", prefix, suffix, "go") == "err"  # its longest start that declares nothing
    assert clean_cut("err = check(data)", prefix, suffix, "go") == "err = check(data)"
    assert clean_cut("n, err := check(data)", prefix, suffix, "go") == "n, err := check(data)"


def test_java_statements_after_a_return_throw_break_or_continue_are_early_errors():
    """javac: "unreachable statement" (commons-lang's RegExUtils: `return null;` suggested on a new line above the
    method's own code). A switch group's `return` before the next label, and a `break` ending a loop's body, are
    not."""
    java = ("class A {\n  int f(int x) {\n    switch (x) { case 1: return 2; case 2: x++; break; default: return 3; }\n"
            "    while (true) { if (x > 0) break; x++; }\n    { return x; }\n  }\n"
            "  int g(int x) {\n    if (x > 0) { throw new E(); x++; }\n    return x;\n    // a comment\n  }\n}\n")
    assert early_errors(java, "java") == {("unreachable", ""): 1}
    prefix = "class A {\n  String f(String s) {\n    if (s == null) {\n      return null;\n    }\n    "
    suffix = "\n    return s.trim();\n  }\n}\n"
    assert clean_cut("return null;", prefix, suffix, "java") == ""
    assert clean_cut("s = s.strip();", prefix, suffix, "java") == "s = s.strip();"


def test_a_java_local_may_not_shadow_another_local_or_parameter_of_its_method():
    """javac: "variable i is already defined in method f(int)", in a nested block too (`for (int i ...)` inside
    another's body; a `case` group's local in a later group of the same switch). A block's locals are out of scope
    after it (an arrow rule's body too); a local or anonymous class starts afresh."""
    java = ("class A {\n  void f(int x) {\n    for (int i = 0; i < 3; i++) {\n      int y;\n"
            "      for (int i = 1; ; ) { }\n    }\n    for (String s : xs) { int s; }\n"
            "    try (Reader r = open()) { int r; } catch (IOException | E e) { int e; }\n"
            "    Runnable q = () -> { int x; };\n    Function<Integer, Integer> g = x -> x;\n"
            "    { int y; }\n    int y;\n    new Object() { void h() { int x; } };\n  }\n}\n")
    assert early_errors(java, "java") == {("redeclared", "i"): 1, ("redeclared", "s"): 1, ("redeclared", "r"): 1,
                                          ("redeclared", "e"): 1, ("redeclared", "x"): 2}
    switch = ("class A {\n  void f(int k) {\n    switch (k) {\n      case 1: int a = 1; break;\n"
              "      case 2: int a = 2; { int b; } int b; break;\n    }\n"
              "    switch (k) { case 1 -> { int c = 1; } case 2 -> { int c = 2; } default -> {} }\n  }\n}\n")
    assert early_errors(switch, "java") == {("redeclared", "a"): 1}  # a switch's groups share one scope
    prefix = "class A {\n  int sum(int[] xs) {\n    int total = 0;\n    for (int x : xs) {\n      "
    suffix = "\n    }\n    return total;\n  }\n}\n"
    assert clean_cut("int total = x * 2;", prefix, suffix, "java") == ""
    assert clean_cut("total += x;", prefix, suffix, "java") == "total += x;"


def test_a_csharp_local_may_not_take_the_name_of_another_local_or_parameter_in_scope():
    """csc: CS0128 "A local variable named 'x' is already defined in this scope", CS0136 in a nested block (a `for`'s,
    a `foreach`'s, a `catch`'s and a `using`'s variables included; a switch's sections share one scope). Sibling
    blocks, other methods, lambdas and local functions are not read across."""
    cs = ("class A\n{\n    int F(int a)\n    {\n        int x = 1, y;\n        int a = 2;\n"
          "        for (int i = 0; i < 3; i++) { int x = i; }\n        foreach (var y in Xs()) { }\n"
          "        try { } catch (Exception e) { var e = 1; }\n        using (var s = Open()) { int s = 0; }\n"
          "        { int z = 1; }\n        { int z = 2; }\n        Func<int, int> g = q => q;\n"
          "        int L(int x) { return x; }\n        return x;\n    }\n\n    int G() { int x = 3; return x; }\n}\n")
    assert early_errors(cs, "csharp") == {("redeclared", "a"): 1, ("redeclared", "x"): 1, ("redeclared", "y"): 1,
                                          ("redeclared", "e"): 1, ("redeclared", "s"): 1}
    switch = "class A { void F(int k) { switch (k) { case 1: int c = 1; break; case 2: int c = 2; break; } } }"
    assert early_errors(switch, "csharp") == {("redeclared", "c"): 1}
    prefix = "class A\n{\n    int Sum(int[] xs)\n    {\n        int total = 0;\n        foreach (var x in xs)\n"
    prefix += "        {\n            "
    suffix = "\n        }\n        return total;\n    }\n}\n"
    assert clean_cut("int total = x * 2;", prefix, suffix, "csharp") == ""
    assert clean_cut("total += x;", prefix, suffix, "csharp") == "total += x;"


def test_a_return_that_does_not_give_its_functions_count_of_values_is_an_early_error():
    """go build: "not enough return values" (pflag's float32.go: `return v` in a function of (float32, error)) and
    "too many return values"; a call may stand for several values and a bare return gives the named results.
    javac: "missing return value", "unexpected return value"; a lambda's returns are not read."""
    go = ("package p\n\nfunc a() (float32, error) { return v }\nfunc b() (float32, error) { return f() }\n"
          "func c() (n int, err error) { return }\nfunc d() (int, error) { return }\nfunc e() { return 1 }\n"
          "func g() int { return 1, 2 }\nfunc h() (a, b int) { return 1, 2 }\n"
          "func k() { f := func() int { return 1 }; return }\n")
    assert early_errors(go, "go") == {("returns", ""): 4}  # a, d, e, g
    java = ("class A { A() { return; } void f() { return 1; } int g() { return; }\n"
            "  int h() { Runnable r = () -> { return; }; return 1; } void i() { return; } }")
    assert early_errors(java, "java") == {("returns", ""): 2}  # f, g
    record = "class A {{ int f() {{ record R(int x) {{ R {{ {} }} }} return 1; }} }}"  # a compact constructor
    assert not early_errors(record.format("if (x < 0) return;"), "java")
    assert early_errors(record.format("return 1;"), "java") == {("returns", ""): 1}
    prefix = "package p\n\nfunc parse(s string) (float32, error) {\n\tv, err := strconv.ParseFloat(s, 32)\n\t"
    suffix = "\n}\n"
    assert clean_cut("return v", prefix, suffix, "go") == ""
    assert clean_cut("return float32(v), err", prefix, suffix, "go") == "return float32(v), err"


def test_rust_self_outside_a_method_and_a_value_ending_a_function_that_returns_nothing_are_errors():
    """rustc E0424 (rayon's chunks.rs: `self.chunk_size = rem_len;` suggested in `fn new(chunk_size: usize, ...)`)
    and E0308 "expected `()`" (crossbeam's context.rs: a suggestion ending in a bare `self.thread_id` above the `}`
    of `fn reset(&self)`). `self` in a path, a `use`, a visibility or a macro's tokens is not the receiver; a
    closure takes its method's; a call, a macro or an `if` may be `()` and is not read; shadowing is allowed."""
    rust = ("use self::inner::Thing;\npub(self) fn g() { let v = self::inner::X; let v = v + 1; quote! { self.x } }\n"
            "impl A {\n    fn m(&self) -> i32 { let c = |a| self.x + a; self.x }\n"
            "    fn n(mut self: Box<Self>) { self.y(); }\n    fn new(c: usize) -> Self { self.c = c; Self { c } }\n}\n"
            "fn reset(&self) { self.inner.store(1); self.thread_id }\nfn unit() { foo() }\nfn unit2() { x.y(); }\n"
            "fn valued() -> i32 { 1 }\nfn branch(x: bool) { if x { a() } else { b() } }\n"
            "impl IntoAbi for () { fn into_abi(self) { self } }\n")  # wasm-bindgen: there `self` is `()`
    assert early_errors(rust, "rust") == {("self", ""): 1, ("unit tail", ""): 1}  # new, reset
    prefix = "impl Context {\n    fn reset(&self) {\n        self.inner.store(0, Ordering::Release);\n        "
    suffix = "\n    }\n}\n"
    assert clean_cut("self.thread_id", prefix, suffix, "rust") == ""
    assert clean_cut("self.thread_id.store(0, Ordering::Release);", prefix, suffix, "rust") \
        == "self.thread_id.store(0, Ordering::Release);"
    prefix = ("impl<T> Chunks<T> {\n    fn new(size: usize, slice: &[T]) -> Self {\n"
              "        let rem = slice.len() % size;\n        ")
    suffix = "\n        Self { size, slice }\n    }\n}\n"
    assert clean_cut("self.size = rem;", prefix, suffix, "rust") == ""
    assert clean_cut("let len = slice.len() - rem;", prefix, suffix, "rust") == "let len = slice.len() - rem;"


# per language: a function whose loops and switches each hold a `break` or `continue` they take (none stray), then
# the same jumps where nothing around them in their function takes them
JUMPS = {
    "javascript": ("function f(xs) { for (const x of xs) { if (x) break; } while (1) { continue; } "
                   "switch (1) { case 1: break; } a: { break a; } do { break; } while (0); for (k in xs) break; }",
                   "function f(xs) { for (const x of xs) { g(() => { break; }); } switch (1) { case 1: continue; } }"),
    "java": ("class C { void f(int[] xs) { for (int x : xs) { break; } for (;;) { continue; } "
             "while (true) { break; } do { break; } while (true); switch (1) { case 1: break; } }",
             "class C { void f(int[] xs) { for (int x : xs) { Runnable r = () -> { break; }; } continue; } }"),
    "csharp": ("class C { void F(int[] xs) { foreach (var x in xs) { break; } for (;;) { continue; } "
               "while (true) { break; } switch (1) { case 1: break; } } }",
               "class C { void F(int[] xs) { switch (1) { case 1: continue; } break; } }"),
    "c": ("void f(void) { for (;;) { break; } while (1) { continue; } do { break; } while (1); "
          "switch (1) { case 1: break; } }",
          "void f(void) { if (1) { break; } switch (1) { case 1: continue; } }"),
    "cpp": ("void f() { for (int x : xs) { break; } for (;;) { continue; } }",
            "void f() { for (;;) { auto l = []() { break; }; } continue; }"),
    "go": ("package p\nfunc f(xs []int) { for range xs { break }\nswitch { case true: break }\n"
           "select { default: break }\nfor { select { default: continue } } }\n",
           "package p\nfunc f(xs []int) { for range xs { g := func() { break }; g() }\n"
           "switch { case true: continue } }\n"),
    "rust": ("fn f() { loop { break; } while true { continue; } for x in xs { break; } 'a: loop { break 'a; } }",
             "fn f() { loop { let c = || { break; }; } continue; }"),
    "php": ("<?php function f($xs) { foreach ($xs as $x) { break; } for (;;) { continue; } "
            "while (1) { switch ($x) { case 1: break 2; case 2: continue; } } }",
            "<?php function f($xs) { foreach ($xs as $x) { $c = function () { break; }; } while (1) { break 2; } }"),
}


@pytest.mark.parametrize("language", sorted(JUMPS))
def test_a_break_or_continue_that_nothing_in_its_function_takes_is_an_early_error(language):
    """Every brace language's compiler and PHP's refuse a `break` outside any loop or switch of its function, and a
    `continue` outside any loop (PHP: a switch takes it too), and tree-sitter parses both (guzzle's
    MessageFormatter: `break;` suggested below the switch its line was in)."""
    taken, stray = JUMPS[language]
    assert early_errors(taken, language).total() == 0, taken
    assert early_errors(stray, language).total() == 2, early_errors(stray, language)
    assert all(kind == "jump" for kind, _ in early_errors(stray, language))


def test_a_window_cut_inside_a_function_does_not_judge_its_jumps():
    """Where the window does not show the function around the jump, it does not show its loops either."""
    assert early_errors("        x += 1;\n        break;\n    }\n", "php").total() == 0
    prefix = ("<?php\nfunction f($xs) {\n    switch ($xs) {\n        case 1:\n            $y = 1;\n"
              "            break;\n    }\n    ")
    suffix = "\n    return $y;\n}\n"
    assert clean_cut("break;", prefix, suffix, "php") == ""
    assert clean_cut("$y = 2;", prefix, suffix, "php") == "$y = 2;"


def test_a_texts_stray_jump_is_read_on_the_whole_document_where_a_window_starts_inside_a_long_function():
    """guzzle's MessageFormatter: a blank line below a `switch` in a 100-line closure, whose header the window does
    not hold; `$result = ...;` and `break;` suggested there (`php -l`: "'break' not in the 'loop' or 'switch'
    context"). Read on the whole document with the text, the closure and its switch are in view."""
    from dg_lsp.completion.selection import selection_keeps_compiling
    from dg_lsp.context.bindings.jumps import text_strays

    cases = "".join(f"            case '{k}':\n                $result = {k};\n                break;\n"
                    for k in range(60))
    document = ("<?php\nfunction f(array $xs) {\n    return array_map(function ($x) {\n        switch ($x) {\n"
                + cases + "        }\n        \n        return $result;\n    }, $xs);\n}\n")
    at = document.index("        \n        return $result;") + 8
    assert text_strays(document, at, at, "$result = 1;\n        break;", "php")
    assert not text_strays(document, at, at, "$result = $result * 2;", "php")
    inside = document.index("                break;\n") + len("                break;\n")
    assert not text_strays(document, inside, inside, "                break;\n", "php")  # in a case: taken
    # outside any function, a whole file's jump is stray too; a window's is not known
    assert text_strays("<?php\n$x = 1;\n", 13, 13, "\nbreak;", "php")
    assert early_errors("<?php\n$x = 1;\nbreak;\n", "php").total() == 0
    # a selection fill is read the same way
    line = document[:at].count("\n")
    assert not selection_keeps_compiling(document, (line, 8), (line, 8), "break;", "php")
    assert selection_keeps_compiling(document, (line, 8), (line, 8), "$x = 2;", "php")


def test_luas_vararg_outside_a_function_that_takes_one_and_its_stray_break():
    # luac: "cannot use '...' outside a vararg function", "break outside a loop"; tree-sitter-lua parses both
    fine = "local function f(a, ...)\n  for i = 1, 3 do\n    if i > a then break end\n  end\n  return ...\nend\nprint(...)\n"
    assert early_errors(fine, "lua") == {}
    vararg = "local function f(a)\n  return select('#', ...)\nend\n"
    assert early_errors(vararg, "lua") == {("vararg", "..."): 1}
    assert early_errors("local f = function(...)\n  return function() return ... end\nend\n", "lua") == \
        {("vararg", "..."): 1}
    assert early_errors("local function f(a)\n  if a then break end\nend\n", "lua") == {("jump", "break"): 1}
    # the live case: a header's line-rest that drops the `...` its body uses
    prefix, suffix = "function M.zip", "\n  return M.map(...)\nend\n"
    assert adds_early_error(prefix, "(t, cmp)", suffix, "lua")
    assert not adds_early_error(prefix, "(...)", suffix, "lua")
