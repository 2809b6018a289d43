"""The compile budget of the README's main job, and the helper that compiles ahead of it.

The main job (``optdyn solve arm-obstacle --html …``): the kernel specialisations of this
project it compiles on an empty cache, counted from numba's dispatchers with what their code
calls (:func:`dynamics._compile.specialisations`, recorded in the disk cache), so on the
suite's own cache, empty or not. Counts, never times: a change that adds a specialisation — a
kernel compiled again for read-only, F-ordered or constant arguments, a new kernel on the main
job's path — fails here, and the budget is raised on purpose or the change undone
(BENCHMARKS.md, "cold start", gives the seconds). First, the helper of
:mod:`optdyn.solvers.compile_ahead` compiles its part from a pickled copy of the problem: its
specialisations — the line search's forward pass among them — must be the main job's own (the
same argument types), which the main job then loads instead of compiling them again."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.cost(15)

ROOT = Path(__file__).resolve().parents[1]
REPORT = """
import json
from dynamics._compile import specialisations
def report(before={}):  # the specialisations counted so far, but those counted before
    print("RESULT" + json.dumps([[name, args] for name, signatures in specialisations().items()
                                 for args in signatures if args not in before.get(name, ())]))
"""
HELPER = REPORT + """
import pickle, sys, problems
from optdyn.solvers import compile_ahead
with open(sys.argv[1], "wb") as f:
    pickle.dump(problems.get("arm-obstacle"), f)
built = specialisations()  # the problem's construction is the main job's
compile_ahead.main(sys.argv[1], "second order, steps")
report(built)
"""
MAIN_JOB = REPORT + """
import os, tempfile
from optdyn.apps.cli import main
with tempfile.TemporaryDirectory() as d:
    main(["solve", "arm-obstacle", "--quiet", "--html", os.path.join(d, "arm.html")])
report()
"""

BUDGET = 125  # from the records since 2026-11-30; the 108 compile events counted before missed the
# construction's kernels (compiled in the helper's process before its part, then loaded by the main job);
# 124 before the steps on the rows a step crosses, whose path in the model is riccati.linear_path
"""Kernel specialisations of this project that the main job compiles."""

PER_ORDER = {"optdyn.ocp.integrators.interval", "optdyn.ocp.integrators.free_dynamics",
             "optdyn.ocp.integrators._compose", "optdyn.ocp.integrators._accumulate"}
"""Compiled per derivative order (``literal``): 0 for the rollouts, 1 for the sensitivities."""

PER_SHAPE = {"dynamics.spatial.axpy", "dynamics.spatial.matmul_add", "dynamics.spatial.copy_into",
             "optdyn.solvers.linalg.gemm_tn", "dynamics.kinematics.all_finite", "dynamics.joints._product_into"}
"""Small array helpers compiled per dimension and layout of their arguments (rows, blocks
and slices of the workspace's arrays)."""


def _specialisations(code: str, env: dict, *args: str) -> set[tuple[str, str]]:
    """The project's kernel specialisations the Python source ``code`` reports."""
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    return {(name, argtypes) for name, argtypes in json.loads(out.stdout.split("RESULT", 1)[1])
            if name.split(".")[0] in ("dynamics", "optdyn")}


def test_the_main_job_compiles_within_its_budget_and_loads_what_the_helper_compiled(tmp_path):
    env = dict(os.environ, OPTDYN_COMPILE_AHEAD="0")
    helper = _specialisations(HELPER, env, str(tmp_path / "problem.pkl"))
    main = _specialisations(MAIN_JOB, env)
    shared = {name for name, _ in helper & main}  # compiled by the helper for the main job's own argument types
    assert {"optdyn.ocp.integrators.interval_hessian_part", "optdyn.ocp.integrators._step_stages_chunk",
            "optdyn.solvers.ddp.forward_pass", "optdyn.ocp.integrators._step_chunk"} <= shared
    per_kernel = Counter(name for name, _ in main)
    twice = {name: n for name, n in per_kernel.items() if n > 1 and name not in PER_ORDER | PER_SHAPE}
    assert not twice, f"kernels compiled for more than one signature: {twice}"
    assert all(per_kernel[name] <= 2 for name in PER_ORDER)
    assert len(main) <= BUDGET, f"{len(main)} specialisations compiled, the budget is {BUDGET}"
    assert len(main) >= BUDGET - 10, f"{len(main)} specialisations: lower the budget to hold the gain"


def test_a_warm_process_counts_what_a_cold_one_compiles(tmp_path):
    """The count does not depend on the cache: the project's specialisations a process
    compiles on an empty cache (numba's compile events) are those it counts, and those a
    process that loads them from the cache counts (ABA and the kinetic energy of a chain)."""
    code = REPORT + """
from numba.core import event
compiled = set()
class Listener(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        compiled.add((f"{fn.__module__}.{fn.__qualname__}", str(ev.data["args"])))
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
import numpy as np, dynamics as dyn
from dynamics._compile import _KERNELS
m = dyn.models.serial_chain(3)
dyn.aba(m, np.full(3, 0.3), np.full(3, 0.7), np.full(3, 0.1))
dyn.kinetic_energy(m, np.full(3, 0.3), np.full(3, 0.7))
print("COMPILED" + json.dumps(sorted(compiled)))
print("LOADED", sum(len(k.overloads) for k in _KERNELS))
report()
"""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr[-3000:] + runs[1].stderr[-3000:]
    compiled = [{tuple(x) for x in json.loads(run.stdout.split("COMPILED", 1)[1].split("\n", 1)[0])
                 if x[0].split(".")[0] in ("dynamics", "optdyn") and "<locals>" not in x[0]} for run in runs]
    counted = [{tuple(x) for x in json.loads(run.stdout.split("RESULT", 1)[1])} for run in runs]
    loaded = int(runs[1].stdout.split("LOADED ", 1)[1].split()[0])
    assert len(compiled[0]) > 3 and not compiled[1]  # the second process only loads
    assert counted[0] == counted[1] == compiled[0]
    assert loaded < len(counted[1])  # some of them counted from the records alone


def test_the_helpers_begin_before_a_task_without_contacts_is_built_on_a_stand_in_of_its_type():
    """``optdyn solve`` begins the helpers at the first compilation of a task's construction,
    on a stand-in problem (the CLI's ``_stand_in``), for the tasks the registry says have no contacts: the
    helpers' kernels are compiled for the type of the problem's dynamics, so the stand-in's
    must be every such task's — and a task whose type differs must be flagged as having
    contacts (the CLI then leaves the helpers to its solve)."""
    import argparse
    import contextlib

    import numba
    import problems
    from optdyn.apps.cli import _building_ahead, _stand_in
    from optdyn.solvers.compile_ahead import Ahead

    kind = numba.typeof(_stand_in().dynamics)
    for name in problems.names():
        assert (numba.typeof(problems.get(name).dynamics) == kind) != problems.entry(name).contacts, name
        ahead = _building_ahead(argparse.Namespace(problem=name, solver="ddp"))
        assert isinstance(ahead, contextlib.nullcontext if problems.entry(name).contacts else Ahead), name
