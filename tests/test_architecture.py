"""The package structure of dynamics/: its modules import one another without a cycle.

The graph is read from the sources with ``ast`` (no import is executed): an edge a → b for
every ``from .b import ...``, ``from . import b`` or ``import dynamics.b`` in module a,
wherever the statement stands (a function-level import is an edge too: it is how a cycle
hides).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dynamics"


def module_name(path: Path) -> str:
    """Dotted name of a module of dynamics/ relative to the package (``models`` for
    ``models/__init__.py``, ``""`` for the package's own ``__init__``)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the source of ``path`` imports."""
    name = module_name(path)
    package = (name.split(".") if name else []) if path.name == "__init__.py" else name.split(".")[:-1]
    targets = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from .x import y / from .. import y: relative to the package
                base = package[: len(package) - node.level + 1]
            elif (node.module or "").split(".")[0] == "dynamics":
                base, node.module = [], node.module.partition(".")[2] or None
            else:
                continue
            module = base + (node.module.split(".") if node.module else [])
            targets += [module] + [module + [alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            targets += [alias.name.split(".")[1:] for alias in node.names if alias.name.startswith("dynamics.")]
    return {".".join(t) for t in targets} & modules - {name}


def import_graph() -> dict[str, set[str]]:
    """Module → the dynamics modules it imports, the package ``__init__`` left out (it
    imports every module by design and nothing imports it)."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths) - {""}
    return {name: imported_modules(path, modules) for name, path in paths.items() if name}


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as a list of modules (first = last), [] if it is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = 2
        path.pop()
        return []

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return []


def test_cycle_finder_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_graph_reads_relative_imports():
    graph = import_graph()
    assert "model" in graph["_checks"]  # from .model import Frame, Model
    assert {"builder", "model", "urdf"} <= graph["models"]  # from ..builder import ... (a subpackage)


def test_dynamics_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert not cycle, "import cycle in dynamics/: " + " → ".join(cycle)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p) or "__init__")
def test_no_function_level_import(path):
    """Imports stand at module level, where the graph above is visible at a glance."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nested = sorted({f"line {inner.lineno}" for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     for inner in ast.walk(node) if isinstance(inner, (ast.Import, ast.ImportFrom))})
    assert not nested, f"{path.name}: import inside a function or class at {', '.join(nested)}"


MAX_POSITIONAL = 12


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: module_name(p) or "__init__")
def test_no_function_takes_more_than_twelve_positional_parameters(path):
    """Longer lists pass a named record (the model record, a workspace, a scratch record)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = {node.name: len(node.args.posonlyargs) + len(node.args.args) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and len(node.args.posonlyargs) + len(node.args.args) > MAX_POSITIONAL}
    assert not long, f"{path.name}: functions with more than {MAX_POSITIONAL} positional parameters: {long}"
