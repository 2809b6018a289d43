"""The rule of allocation-free kernels that numba does not check (see dynamics._compile):
they never return one of their array arguments; and the workspace buffers those kernels
cut into views (dynamics.workspace)."""
from __future__ import annotations

import ast
from pathlib import Path

import numba
import numpy as np
import pytest

from dynamics.workspace import call_views, model_workspace

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for pkg in ("dynamics", "optdyn") for p in (ROOT / pkg).rglob("*.py"))


def _decorator_name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")


def _returned_arguments(fn: ast.FunctionDef) -> list[str]:
    """Names of ``fn``'s parameters returned bare (alone or in a returned tuple)."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    found = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            found += [v.id for v in values if isinstance(v, ast.Name) and v.id in params]
    return found


def _allocation_free_functions(path: Path) -> list[ast.FunctionDef]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
            and any(_decorator_name(d) == "allocation_free" for d in node.decorator_list)]


def test_the_rule_is_found_when_broken():
    bad = ast.parse("@allocation_free\ndef f(x, y):\n    if y > 0:\n        return x, 1.0\n    return 0.0, 1.0\n")
    assert _returned_arguments(bad.body[0]) == ["x"]


def test_there_are_allocation_free_kernels():
    assert sum(len(_allocation_free_functions(p)) for p in SOURCES) >= 40


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_allocation_free_kernels_return_no_argument(path):
    bad = {fn.name: names for fn in _allocation_free_functions(path) if (names := _returned_arguments(fn))}
    assert not bad, f"{path.name}: allocation-free functions returning an argument: {bad}"


def test_the_workspace_fields_are_disjoint_views_filling_one_buffer():
    """new_data cuts data_size entries into the Data fields with no overlap (an overlap
    would let one pass overwrite another's intermediate) but the documented one: IC is I,
    the composites summed in place over the body inertias."""
    import dynamics as dyn
    from dynamics.workspace import data_size, new_data

    for model in (dyn.models.ur5(), dyn.models.binary_tree(3), dyn.models.space_manipulator()):
        fields = new_data(model.topology)
        assert fields.IC.ctypes.data == fields.I.ctypes.data and fields.IC.shape == fields.I.shape
        distinct = [(name, f) for name, f in zip(fields._fields, fields) if name != "IC"]
        assert sum(f.size for _, f in distinct) == data_size(model.njoints, model.nv)
        for a in range(len(distinct)):
            assert distinct[a][1].flags.c_contiguous
            for b in range(a):
                assert not np.shares_memory(distinct[a][1], distinct[b][1]), (distinct[a][0], distinct[b][0])


@numba.njit
def _unpacked(b):
    m, d = call_views(b)
    return m, d.gauss.shape


def test_the_call_buffer_holds_the_model_record_bit_for_bit():
    import dynamics as dyn

    model = dyn.models.ur5(gravity=(0.5, -1.0, -9.0))
    record, gauss_shape = _unpacked(model_workspace(model))
    assert gauss_shape == (6, 12) and type(record) is type(model.arrays) and record._fields == model.arrays._fields
    assert not any(a.flags.writeable for a in model.arrays)
    for ours, packed in zip(model.arrays, record):
        assert packed.dtype == ours.dtype and packed.flags.c_contiguous
        np.testing.assert_array_equal(packed, ours)
