"""The architecture holds: dynamics/ has no import cycle, named records travel instead of
long argument lists, solvers see only the problem, dependencies point one way.

The graph is read from the sources with ``ast`` (no import is executed): an edge a → b for
every ``from .b import ...``, ``from . import b`` or ``import dynamics.b`` in module a,
wherever the statement stands (a function-level import is an edge too: it is how a cycle
hides).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dynamics"


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


def _modules(package: str) -> dict[str, ast.Module]:
    """The parsed modules of ``package`` by dotted name."""
    root = ROOT / package
    return {".".join(p.relative_to(ROOT).with_suffix("").parts): ast.parse(p.read_text())
            for p in sorted(root.rglob("*.py"))}


def _imports(name: str, tree: ast.Module) -> set[str]:
    """Every module ``name`` imports (absolute dotted names; relative imports resolved),
    at any depth of the module."""
    package = name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found.update(f"{module}.{a.name}" for a in node.names)
    return found


def test_no_optdyn_function_takes_more_than_twelve_positional_parameters():
    """Named records travel between the layers, not long positional argument lists (as in
    dynamics/, above)."""
    long = []
    for name, tree in _modules("optdyn").items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args
                count = len(args) - (1 if args and args[0].arg in ("self", "cls") else 0)
                if count > MAX_POSITIONAL:
                    long.append(f"{name}.{node.name} ({count})")
    assert not long, f"functions with more than 12 positional parameters: {long}"


SOLVER_MAY_IMPORT_FROM_DYNAMICS = {"dynamics._compile", "dynamics.parallel", "dynamics.spatial"}


def test_solvers_see_only_the_problem():
    """No solver module imports the integrator or a rigid-body algorithm: from dynamics only
    the compile helpers, the thread settings and the dense copies and products."""
    for name, tree in _modules("optdyn").items():
        if not name.startswith("optdyn.solvers"):
            continue
        for module in _imports(name, tree):
            assert not module.startswith("optdyn.ocp.integrators"), f"{name} imports {module}"
            if module.split(".")[0] == "dynamics":
                assert any(module == m or module.startswith(m + ".") for m in SOLVER_MAY_IMPORT_FROM_DYNAMICS), \
                    f"{name} imports {module}"


def test_dependencies_point_one_way():
    """dynamics ← optdyn ← problems: dynamics imports neither of the others, optdyn does not
    import problems except in the command line."""
    for name, tree in _modules("dynamics").items():
        bad = {m for m in _imports(name, tree) if m.split(".")[0] in ("optdyn", "problems")}
        assert not bad, f"{name} imports {bad}"
    for name, tree in _modules("optdyn").items():
        bad = {m for m in _imports(name, tree) if m.split(".")[0] == "problems"}
        assert not bad or name == "optdyn.apps.cli", f"{name} imports {bad}"


def test_optdyn_keeps_a_handful_of_modules_at_its_top_level():
    top = sorted(p.name for p in (ROOT / "optdyn").glob("*.py"))
    assert len(top) <= 5, top


def test_a_joint_type_is_one_module_and_one_registration():
    """Every joint type is a module of dynamics.joint_types with the whole interface, its
    code its place in REGISTRY, and the model's tables read from the registry alone."""
    from dynamics import joint_types, joints, model

    interface = ("NAMES", "NQ", "NV", "UNIT", "NEUTRAL", "GROUP_ROWS", "BOUND",
                 "motion", "subspace", "integrate", "difference")
    package = ROOT / "dynamics" / "joint_types"
    assert {t.__name__.rpartition(".")[2] for t in joint_types.REGISTRY} == \
        {p.stem for p in package.glob("*.py") if p.stem != "__init__"}
    for code, t in enumerate(joint_types.REGISTRY):
        assert all(hasattr(t, name) for name in interface), t.__name__
        assert len(t.NEUTRAL) == t.NQ and t.NV <= t.NQ and len(t.GROUP_ROWS) in (0, t.NV), t.__name__
        offset, length = t.UNIT
        assert (offset, length) == (-1, 0) or 0 <= offset and offset + length <= t.NQ, t.__name__
        assert model.JOINT_SIZES[code] == (t.NQ, t.NV) and model.JOINT_TYPE_NAMES[code] == t.NAMES[0]
        assert all(model.JOINT_TYPES[name] == code for name in t.NAMES)
        assert joints.UNIT_OFFSET[code] == offset and joints.UNIT_LENGTH[code] == length
    names = [n for t in joint_types.REGISTRY for n in t.NAMES]
    assert len(names) == len(set(names))
