"""The rule of allocation-free kernels that numba does not check (see dynamics._compile):
they never return one of their array arguments; and the workspace buffers those kernels
cut into views (dynamics.workspace)."""
from __future__ import annotations

import ast
import os
import platform
import subprocess
import sys
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


# ---- records passed by reference (dynamics._compile.pin) and order gates (at_order) ------------

from collections import namedtuple  # noqa: E402

from numba.core import event  # noqa: E402

from dynamics._compile import Pinned, PinnedRecord, allocation_free, at_order, njit, pin, read_only  # noqa: E402

_Record = namedtuple("_Record", ["a", "b", "nested"])


@njit
def _pinned_record(n):
    return pin(_Record(np.zeros(n), np.arange(float(n)), (np.ones(2), 3.0)))


@allocation_free
def _read_write(record, x):
    """Without numba's runtime: reads the pinned record's fields, writes into one."""
    record.a[0] += x
    return record.a[0] + record.b[-1] + record.nested[0][1] + record.nested[1]


@njit
def _use_and_drop(n, x):
    record = _pinned_record(n)
    return _read_write(record, x) + _read_write(record, x)


def test_a_pinned_record_is_read_and_written_by_kernels_without_the_runtime_and_freed():
    """Fields read through the pinned record are the record's own arrays (a write lands in
    them), a kernel compiled without NRT reads them, and every allocation is freed once
    the last reference is gone (numba's allocation counters balance)."""
    from numba.core.runtime import _nrt_python, rtsys

    assert _use_and_drop(4, 2.0) == (2.0 + 3.0 + 1.0 + 3.0) + (4.0 + 3.0 + 1.0 + 3.0)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(5):
        _use_and_drop(3, 1.0)
    after = rtsys.get_allocation_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0


def test_a_pinned_record_goes_to_python_and_back():
    record = _pinned_record(5)
    assert isinstance(record, PinnedRecord) and isinstance(record._numba_type_, Pinned)
    assert _read_write(record, 1.5) == 1.5 + 4.0 + 1.0 + 3.0
    assert _read_write(record, 1.5) == 3.0 + 4.0 + 1.0 + 3.0  # the same memory: the first write kept


@njit
def _second(x, out):
    out[0] = 2.0 * x


@njit(literal=("order",))
def _ordered(x, order, out):
    out[0] = x
    at_order(order, 2, _second, (x, out))


def _compiled_while(call) -> list[str]:
    """Names of the kernels numba compiles during ``call()``."""
    names = []

    class Listener(event.Listener):
        def on_start(self, ev):
            names.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev):
            pass
    listener = Listener()
    event.register("numba:compile", listener)
    try:
        call()
    finally:
        event.unregister("numba:compile", listener)
    return names


@njit
def _at_order_one(x, out):
    _ordered(x, 1, out)


@njit
def _at_order_two(x, out):
    _ordered(x, 2, out)


@njit
def _at_run_time_order(x, order, out):
    _ordered(x, order, out)


def test_a_call_only_higher_orders_make_is_not_compiled_for_lower_ones():
    """at_order settles the call while typing: a kernel compiled for order 1 runs without it
    and does not compile the callee; for order 2 it runs it; with a run-time order it
    decides at run time."""
    out = np.zeros(1)
    names = _compiled_while(lambda: _at_order_one(3.0, out))
    assert "_ordered" in names and "_second" not in names and out[0] == 3.0
    names = _compiled_while(lambda: _at_order_two(3.0, out))
    assert "_second" in names and out[0] == 6.0
    for order, want in ((1, 3.0), (2, 6.0)):
        _at_run_time_order(3.0, order, out)
        assert out[0] == want


@njit
def _sum(a):
    s = 0.0
    for x in a:
        s += x
    return s


@njit
def _sum_read_only(a):
    return _sum(read_only(a))


def test_read_only_types_a_writable_array_read_only_so_the_callee_compiles_once():
    """A kernel is compiled per read-only flag; a writable array passed through read_only
    reaches the specialisation a read-only one compiled (the same array: not a copy), and
    numba refuses a write to it."""
    frozen = np.arange(4.0)
    frozen.setflags(write=False)
    assert _sum(frozen) == 6.0
    assert _sum_read_only(np.arange(4.0)) == 6.0
    assert len(_sum.signatures) == 1 and not _sum.signatures[0][0].mutable

    @njit
    def write(a):
        read_only(a)[0] = 1.0
    with pytest.raises(numba.core.errors.TypingError):
        write(np.zeros(2))


def test_numba_tunes_for_the_x86_64_v3_level_where_the_host_has_it_unless_the_user_chose():
    """dynamics._compile.tune: on an x86-64 host with the level's features (and only there),
    numba's CPU name becomes x86-64-v3 — the tuning model, the host's instruction set kept —
    unless a CPU name is set already (NUMBA_CPU_NAME); the kernels' cache key carries it, also after
    a NUMBA_ variable set later made numba read them all again."""
    from numba.core import config
    from numba.core.codegen import get_host_cpu_features

    from dynamics import _compile

    v3 = ",".join((*_compile.LEVEL, "+sse4.2"))
    saved = config.CPU_NAME
    try:
        for machine, features, expected in (("x86_64", v3, _compile.TUNING), ("AMD64", v3, _compile.TUNING),
                                            ("x86_64", v3.replace("+avx2", "-avx2"), None), ("aarch64", v3, None)):
            config.CPU_NAME = None
            assert _compile.tune(machine, features) == expected, (machine, features)
        config.CPU_NAME = "generic"
        assert _compile.tune("x86_64", v3) == "generic"
    finally:
        config.CPU_NAME = saved
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    host = _compile.TUNING if x86 and all(f in get_host_cpu_features().split(",") for f in _compile.LEVEL) else None
    assert config.CPU_NAME == host
    if host is not None:
        assert _compile._KERNELS[0].targetctx.codegen().magic_tuple()[1] == host
    # and it stays when numba reads its variables again, as it does at a compile after one of them changed
    code = ("import os, dynamics, numba; os.environ['NUMBA_NRT_STATS'] = '1'; numba.core.config.reload_config(); "
            "print(numba.config.CPU_NAME)")
    clean = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CPU_NAME", "NUMBA_NRT_STATS")}
    for extra, expected in (({"NUMBA_CPU_NAME": "generic"}, "generic"), ({}, str(host))):
        out = subprocess.run([sys.executable, "-c", code], env={**clean, **extra}, capture_output=True, text=True,
                             check=True, cwd=ROOT)
        assert out.stdout.strip() == expected, extra
