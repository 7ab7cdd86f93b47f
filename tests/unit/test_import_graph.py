"""No import circle between dg_lsp modules, counting imports inside functions too.

The graph is read from the source with `ast`, so a circle hidden behind a function-level import
(which runs fine until the day someone moves it to the top) still counts. Edges go to the module an
import names: `from .x import y` is an edge to `x`, or to `x.y` when that is a module of its own;
the implicit import of a package's `__init__` on the way to a submodule is not an edge.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "dg_lsp"


def module_names(root: Path = PACKAGE_DIR) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The dg_lsp modules that `module` imports anywhere in its file."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, is_package, node)
            targets = [f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target
                       for alias in node.names]
        else:
            continue
        for name in targets:
            while name and name not in modules:  # `import dg_lsp.a.b` names b's module or its package
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_function_level_imports(tmp_path):
    pkg = tmp_path / "dg_lsp"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from .b import thing\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from dg_lsp.sub import a\n")
    modules = module_names(pkg)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert graph["dg_lsp.sub.a"] == {"dg_lsp.sub.b"}
    assert graph["dg_lsp.sub.b"] == {"dg_lsp.sub.a"}
    assert find_cycles(graph) == [["dg_lsp.sub.a", "dg_lsp.sub.b"]]


def test_no_import_cycles_in_dg_lsp():
    cycles = find_cycles(import_graph())
    assert not cycles, "import circles in dg_lsp/: " + "; ".join(" <-> ".join(c) for c in cycles)
