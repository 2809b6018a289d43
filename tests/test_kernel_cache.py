"""The kernel cache never serves a stale kernel, and an unwritable cache directory does not
crash (dynamics._cache)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import dynamics as dyn
from dynamics import _cache
from dynamics._compile import Kernel, njit

pytestmark = pytest.mark.cost(32)

ROOT = Path(__file__).resolve().parents[1]
ENERGY = """
import numpy as np, dynamics as dyn
m = dyn.models.serial_chain(3)
print(repr(dyn.kinetic_energy(m, np.full(3, 0.3), np.full(3, 0.7))))
"""


def _tree_copy(tmp_path: Path) -> Path:
    """The packages copied to a temporary directory, without their caches."""
    for pkg in ("dynamics",):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _run(tree: Path, code: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    return subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, timeout=600,
                          env=dict(environ, PYTHONPATH=str(tree), **env))


def _index_files(tree: Path) -> set[str]:
    return {p.name for p in tree.rglob("*.nbi")}


def _project_dispatchers() -> list:
    import optdyn.apps.cli  # noqa: F401 — imports every kernel module
    return [obj for mod in list(sys.modules.values())
            if (getattr(mod, "__name__", "") or "").split(".")[0] in _cache.PACKAGES
            for obj in vars(mod).values() if isinstance(obj, numba.core.registry.CPUDispatcher)]


def test_every_kernel_of_the_project_uses_the_content_keyed_locator():
    """Each cached dispatcher of dynamics and optdyn (imported in full) found one of our
    locators, so none is keyed on its own file only."""
    cached = [d for d in _project_dispatchers() if d._cache.__class__.__name__ != "NullCache"]
    assert len(cached) > 100
    foreign = [d.py_func.__qualname__ for d in cached if not isinstance(d._cache._impl.locator, _cache._ProjectStamp)]
    assert not foreign


def test_every_kernel_compiles_once_per_argument_type():
    """Every dispatcher of the project is dynamics._compile's Kernel (not numba's own), and
    a kernel called with constants 0 and 1 from compiled code is compiled once, for int64,
    unless it names that parameter ``literal``."""
    foreign = [d.py_func.__qualname__ for d in _project_dispatchers() if not isinstance(d, Kernel)]
    assert not foreign

    assert [str(s) for s in _callee_after_calls_with(0, 1).signatures] == ["(float64, int64)"]
    assert sorted(str(s) for s in _callee_after_calls_with(0, 1, literal=("flag",)).signatures) == [
        "(float64, Literal[int](0))", "(float64, Literal[int](1))"]


def _callee_after_calls_with(a: int, b: int, **options):
    """A kernel ``callee(x, flag)`` (compiled with ``options``) after a compiled caller
    called it with the constants a and b."""
    @njit(**options)
    def callee(x, flag):
        return x + flag

    @njit
    def caller(x):
        return callee(x, a) + callee(x, b)

    assert caller(1.0) == 2.0 + a + b
    return callee


def test_the_stamp_follows_the_imports_and_nothing_else(tmp_path):
    """A kernel file's stamp changes when a file it imports (transitively) changes, and not
    when an unrelated file does."""
    tree = _tree_copy(tmp_path)
    energy, spatial, urdf = (str(tree / "dynamics" / f) for f in ("energy.py", "spatial.py", "urdf.py"))
    code = ("import sys; sys.path.insert(0, {t!r}); import dynamics._cache as c; "
            "print(c.source_stamp({f!r}))")
    stamp = lambda f: _run(tree, code.format(t=str(tree), f=f)).stdout.strip()  # noqa: E731
    before, spatial_before = stamp(energy), stamp(spatial)
    assert before and len(before) == 64
    Path(urdf).write_text(Path(urdf).read_text() + "\n# unrelated edit\n")
    assert stamp(energy) == before  # energy.py does not import the URDF parser
    Path(spatial).write_text(Path(spatial).read_text() + "\n# edited\n")
    assert stamp(energy) != before and stamp(spatial) != spatial_before


def test_a_files_imports_are_read_again_when_it_changes(tmp_path):
    """The names a file imports are memoised beside it (``__pycache__/<name>.imports``), keyed
    by its contents: an import added to energy.py brings urdf.py into its stamp at once."""
    tree = _tree_copy(tmp_path)
    energy, urdf = tree / "dynamics" / "energy.py", tree / "dynamics" / "urdf.py"
    code = ("import sys; sys.path.insert(0, {t!r}); import dynamics._cache as c; "
            "print(c.source_stamp({f!r}))").format(t=str(tree), f=str(energy))
    stamp = lambda: _run(tree, code).stdout.strip()  # noqa: E731
    first = stamp()
    memo = tree / "dynamics" / "__pycache__" / "energy.imports"
    assert "dynamics.spatial" in memo.read_text().split("\n")[1:]
    assert stamp() == first  # from the memo
    energy.write_text(energy.read_text() + "\nfrom . import urdf  # noqa: E402, F401\n")
    with_urdf = stamp()
    assert with_urdf != first and "dynamics.urdf" in memo.read_text().split("\n")[1:]
    urdf.write_text(urdf.read_text() + "\n# edited\n")
    assert stamp() != with_urdf


def test_editing_a_callee_in_another_file_recompiles_the_caller(tmp_path):
    """kinetic_energy's kernel (energy.py) inlines dot6_at (spatial.py): after an edit of
    spatial.py, the cached kernel must not be served (numba's own key, energy.py's contents,
    is unchanged)."""
    tree = _tree_copy(tmp_path)
    first = _run(tree, ENERGY)
    assert first.returncode == 0, first.stderr
    assert _index_files(tree), "the kernel was not cached in the tree"
    assert _run(tree, ENERGY).stdout == first.stdout  # from the cache
    spatial = tree / "dynamics" / "spatial.py"
    body = "    return (a[i, 0] * b[j, 0]"
    assert body in spatial.read_text()
    spatial.write_text(spatial.read_text().replace(body, "    return 2.0 * (a[i, 0] * b[j, 0]", 1))
    second = _run(tree, ENERGY)
    assert second.returncode == 0, second.stderr
    assert float(second.stdout) == pytest.approx(2.0 * float(first.stdout), rel=1e-12)


def test_an_unwritable_cache_warns_and_runs_uncached(tmp_path):
    """$NUMBA_CACHE_DIR, the tree's __pycache__ and the user's cache directory all
    impossible to create (a regular file stands where each directory should be): one
    warning naming the problem, then the right result (this process's, whose cache works), and
    the process's temporary cache directory is gone after it."""
    tree = _tree_copy(tmp_path / "src")
    (tree / "dynamics" / "__pycache__").write_text("not a directory")
    (tree / "dynamics" / "models" / "__pycache__").write_text("not a directory")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    out = _run(tree, ENERGY, NUMBA_CACHE_DIR=str(blocker / "numba"), XDG_CACHE_HOME=str(blocker),
               HOME=str(blocker))
    assert out.returncode == 0, out.stderr
    assert "no writable directory for the kernel cache" in out.stderr
    kept = re.search(r"kernels are kept in (\S+) for this process only", out.stderr)
    assert kept and not Path(kept.group(1)).exists()
    model = dyn.models.serial_chain(3)  # ENERGY's value, from this process's cached kernel
    assert float(out.stdout) == dyn.kinetic_energy(model, np.full(3, 0.3), np.full(3, 0.7)) > 0


SLOW_KERNEL = '''
import numpy as np
from dynamics._compile import njit

@njit(cache=True)
def leaf(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * np.cos(x[i]) + np.exp(-x[i] * x[i]) + np.arctan2(x[i], 1.0 + s * s)
    return s
''' + "".join(f'''
@njit(cache=True)
def step{i}(x):
    return leaf(x) + {"step%d(x)" % (i - 1) if i else "0.0"} + np.linalg.norm(x) * {i}
''' for i in range(12))
COMPILE = """
import sys, numpy as np
from numba.core import event
count = []
class Listener(event.Listener):
    def on_start(self, ev): count.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev): pass
event.register("numba:compile", Listener())
import slow
slow.step11(np.linspace(0.0, 1.0, 5))
print(len([n for n in count if n == "leaf" or n.startswith("step")]))
"""


def test_processes_sharing_the_cache_compile_each_kernel_once(tmp_path):
    """Two processes started together on an empty cache, both needing the same kernels: each
    kernel is compiled by one of them (under its lock file in the cache) and loaded by the
    other, so the two together compile what one alone does (without the locks each compiles
    them all)."""
    (tmp_path / "slow.py").write_text(SLOW_KERNEL)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tmp_path), str(ROOT))),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    both = [subprocess.Popen([sys.executable, "-c", COMPILE], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    counts = []
    for p in both:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
        counts.append(int(out.split()[-1]))
    assert sum(counts) == 13, counts  # leaf and step0 … step11, once
    again = subprocess.run([sys.executable, "-c", COMPILE], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0 and int(again.stdout.split()[-1]) == 0, again.stderr[-2000:]


FACTORY = """
from dynamics._compile import njit


@njit(cache=True)
def leaf(x):
    return 2.0 * x


def link_to(inner):
    @njit(cache=True)
    def link(x):
        return inner(x) + 1.0
    return link


top = link_to(link_to(leaf))
"""


def test_kernels_of_one_factory_nested_compile_under_one_lock(tmp_path):
    """Two closures of one factory share a dotted name, so the outer one's compile, typing the
    inner one for the same argument types, asks again for the lock file it holds: it must go
    on (it waited on itself forever before), and a second process loads both from the cache."""
    (tmp_path / "factory.py").write_text(FACTORY)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(tmp_path), str(ROOT))),
               NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", "import factory; print(factory.top(1.0))"], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and run.stdout.split() == ["4.0"], run.stderr[-2000:]
