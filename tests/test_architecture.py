"""The architecture holds: named records instead of long argument lists, solvers that see
only the problem, dependencies pointing one way (read from the sources with ``ast``)."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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


@pytest.mark.parametrize("package", ["dynamics", "optdyn"])
def test_no_function_takes_more_than_twelve_positional_parameters(package):
    """Named records travel between the layers, not long positional argument lists."""
    long = []
    for name, tree in _modules(package).items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args.posonlyargs + node.args.args
                count = len(args) - (1 if args and args[0].arg in ("self", "cls") else 0)
                if count > 12:
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
