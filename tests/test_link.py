"""Large callee kernels are called by symbol, not copied into their callers (dynamics._link):
the caller's code declares the callee instead of holding it, its cache entry loads the callee
first, an entry whose callee cannot be had under the same symbol is compiled again, and numba's
own cache does not save code that calls by symbol."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE = """
import numpy as np
from dynamics._compile import njit


@njit(cache=True)
def callee(x):
    s = 0.0
    for v in x:
        s += np.sin(v)
    return s


@njit(cache=True)
def caller(x):
    return 2.0 * callee(x) + 1.0
"""
CALL = """
import numpy as np, numba
from dynamics import _link
_link.INLINE_LIMIT = 0  # every callee kernel by symbol, however small
import linked
{before}
x = np.linspace(0.0, 1.0, 7)
print("VALUE", repr(float(linked.caller(x))), repr(float(2.0 * np.sin(x).sum() + 1.0)))
args = (numba.typeof(x),)
print("SYMBOL", linked.callee.overloads[args].fndesc.llvm_func_name)
print("CALLER", dict(linked.caller.stats.cache_hits), dict(linked.caller.stats.cache_misses))
"""
SHIFT = """
@numba.njit
def shift(a):
    return a
for t in (1, 1.0, 1j, np.int32(1), np.float32(1), (1,), (1.0,), (1, 1.0), np.ones(1), np.ones((1, 1))):
    shift(t)  # each specialisation draws numba's counter of function identities, which names symbols
"""


def _run(tmp_path: Path, code: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{ROOT}", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.stdout.splitlines() if " " in line} | {
        "stderr": out.stderr}


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    (tmp_path / "linked.py").write_text(MODULE)
    return tmp_path


def _value_is_right(result: dict[str, str]) -> None:
    got, expected = result["VALUE"].split()
    assert float(got) == pytest.approx(float(expected), rel=1e-14)


def test_the_caller_declares_the_callee_and_records_it(linked):
    result = _run(linked, CALL.format(before="") + """
library = linked.caller.overloads[args].library
symbol = linked.callee.overloads[args].fndesc.llvm_func_name
print("RECORDED", library.symbol_callees == {("linked", "callee", args, symbol)})
print("DECLARED", bool(library._final_module.get_function(symbol).is_declaration),
      bool(linked.callee.overloads[args].library._final_module.get_function(symbol).is_declaration))
""")
    _value_is_right(result)
    assert result["RECORDED"] == "True"
    assert result["DECLARED"] == "True False"  # in the caller's module a declaration, in the callee's the code


def test_a_cached_caller_loads_its_callee_first(linked):
    first = _run(linked, CALL.format(before=""))
    second = _run(linked, CALL.format(before=""))
    _value_is_right(first)
    _value_is_right(second)
    assert first["CALLER"].startswith("{} ")  # compiled
    assert second["CALLER"].endswith(" {}")  # loaded, the callee loaded before it
    assert first["SYMBOL"] == second["SYMBOL"]


def test_a_caller_whose_callee_has_another_symbol_is_compiled_again(linked):
    first = _run(linked, CALL.format(before=""))
    for index in (linked / "cache").rglob("linked.callee-*"):
        index.unlink()  # the callee's entry gone: the next process compiles it under another symbol
    second = _run(linked, CALL.format(before=SHIFT))
    assert second["SYMBOL"] != first["SYMBOL"]
    _value_is_right(second)
    assert second["CALLER"].startswith("{} ")  # the caller's entry refused, the caller compiled
    third = _run(linked, CALL.format(before=SHIFT))
    _value_is_right(third)
    assert third["CALLER"].endswith(" {}")


def test_numbas_own_cache_does_not_save_code_calling_by_symbol(linked):
    (linked / "user.py").write_text("import numba, linked\n\n\n@numba.njit(cache=True)\ndef user(x):\n"
                                    "    return linked.caller(x)\n")
    code = CALL.format(before="import user\nprint('USER', repr(float(user.user(np.linspace(0.0, 1.0, 7)))))")
    first = _run(linked, code)
    second = _run(linked, code)
    assert 'Cannot cache compiled function "user"' in first["stderr"]
    assert 'Cannot cache compiled function "user"' in second["stderr"]
    assert first["USER"] == second["USER"] == first["VALUE"].split()[0]
