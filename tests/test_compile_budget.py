"""The compile budget of the README's main job, and the helper that compiles ahead of it.

The main job (``optdyn solve arm-obstacle --html …``) on a cold cache (a fresh cache
directory): the kernel specialisations of this project it compiles, counted from numba's
compile events. Counts, never times: a change that adds a specialisation — a kernel compiled
again for read-only, F-ordered or constant arguments, a new kernel on the main job's path —
fails here, and the budget is raised on purpose or the change undone (BENCHMARKS.md, "cold
start", gives the seconds). First, on that same cache, the helper of
:mod:`optdyn.solvers.compile_ahead` compiles its part from a pickled copy of the problem:
the main job then loads what the helper compiled — the same specialisations, the line
search's forward pass among them — and compiles none of it again."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.cost(113)

ROOT = Path(__file__).resolve().parents[1]
LISTENER = """
import json
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        compiled.append([f"{fn.__module__}.{fn.__qualname__}", str(ev.data["args"])])
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
"""
HELPER = LISTENER + """
import pickle, sys, problems
from optdyn.solvers import compile_ahead
with open(sys.argv[1], "wb") as f:
    pickle.dump(problems.get("arm-obstacle"), f)
compiled.clear()  # the problem's construction is the main job's
compile_ahead.main(sys.argv[1], "second order, steps")
print("RESULT" + json.dumps(compiled))
"""
MAIN_JOB = LISTENER + """
import os, tempfile
from optdyn.apps.cli import main
with tempfile.TemporaryDirectory() as d:
    main(["solve", "arm-obstacle", "--quiet", "--html", os.path.join(d, "arm.html")])
print("RESULT" + json.dumps(compiled))
"""

BUDGET = 108  # 113 before the obstacle's centre came from the clearance's point kinematics (no frame pose kernels)
"""Kernel specialisations of this project that the main job compiles."""

PER_ORDER = {"optdyn.ocp.integrators.interval", "optdyn.ocp.integrators.free_dynamics",
             "optdyn.ocp.integrators._compose", "optdyn.ocp.integrators._accumulate",
             "optdyn.ocp.integrators._robot_dynamics.<locals>.impl"}
"""Compiled per derivative order (``literal``): 0 for the rollouts, 1 for the sensitivities."""

PER_SHAPE = {"dynamics.spatial.axpy", "dynamics.spatial.matmul_add", "dynamics.spatial.copy_into",
             "optdyn.solvers.linalg.gemm_tn", "dynamics.kinematics.all_finite", "dynamics.joints._product_into"}
"""Small array helpers compiled per dimension and layout of their arguments (rows, blocks
and slices of the workspace's arrays)."""


def _compiled(code: str, env: dict, *args: str) -> set[tuple[str, str]]:
    """The project's kernel specialisations the Python source ``code`` compiles."""
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    return {(name, argtypes) for name, argtypes in json.loads(out.stdout.split("RESULT", 1)[1])
            if name.split(".")[0] in ("dynamics", "optdyn")}


def test_the_main_job_compiles_within_its_budget_and_loads_what_the_helper_compiled(tmp_path):
    env = dict(os.environ, OPTDYN_COMPILE_AHEAD="0", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    helper = _compiled(HELPER, env, str(tmp_path / "problem.pkl"))
    main = _compiled(MAIN_JOB, env)
    assert {"optdyn.ocp.integrators.interval_hessian_part", "optdyn.ocp.integrators._step_stages_chunk",
            "optdyn.solvers.ddp.forward_pass", "optdyn.ocp.integrators._step_chunk"} <= {name for name, _ in helper}
    again = {name for name, _ in helper & main if "<locals>" not in name}  # overloads compile inside their callers
    assert not again, f"compiled again by the main job: {sorted(again)}"
    ours = helper | main
    per_kernel = Counter(name for name, _ in ours)
    twice = {name: n for name, n in per_kernel.items() if n > 1 and name not in PER_ORDER | PER_SHAPE}
    assert not twice, f"kernels compiled for more than one signature: {twice}"
    assert all(per_kernel[name] <= 2 for name in PER_ORDER)
    assert len(ours) <= BUDGET, f"{len(ours)} specialisations compiled, the budget is {BUDGET}"
    assert len(ours) >= BUDGET - 10, f"{len(ours)} specialisations: lower the budget to hold the gain"


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
