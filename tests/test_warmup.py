"""optdyn.warmup(problem): after it, a solve of the problem with each solver compiles nothing
and loads nothing from the disk cache — measured in a fresh process, where every kernel a
call needs is either compiled or loaded, by numba's compile events and by the kernels'
specialisations present in the process before and after each solve."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import optdyn
import problems

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir))
SCRIPT = """
import gc, json, sys
from numba.core.registry import CPUDispatcher
import optdyn, problems
from optdyn.solvers.runtime import COMPILATION

def loaded():
    found = set()
    for o in gc.get_objects():
        if isinstance(o, CPUDispatcher) and (o.py_func.__module__ or "").split(".")[0] in ("dynamics", "optdyn"):
            found.update((o.py_func.__module__ + "." + o.py_func.__qualname__, str(s)) for s in o.overloads)
    return found

name, params, warm = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "warm"
prob = problems.get(name, **params)
if warm:
    optdyn.warmup(prob)
out = {}
for solver in ("ddp", "ilqr", "ipopt"):
    before, count = loaded(), COMPILATION.count
    res = optdyn.solve(prob, solver)
    out[solver] = {"converged": bool(res.converged), "compiled": COMPILATION.count - count,
                   "loaded": sorted(n for n, _ in loaded() - before)}
print(json.dumps(out))
"""


def solves_after(name: str, params: dict, warm: bool) -> dict:
    """{solver: converged, kernels compiled, kernels loaded} of the solves of problem ``name``
    in a fresh process, after optdyn.warmup of it if ``warm``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([sys.executable, "-c", SCRIPT, name, json.dumps(params), "warm" if warm else "cold"],
                         capture_output=True, text=True, env=env, timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.parametrize("name, params", [
    ("quadruped", {"scenario": "trot", "cycles": 1, "step_knots": 4, "support_knots": 1}),  # contacts, AL, multiple shooting
    ("arm-obstacle", {}),  # path constraints, single shooting
])
def test_after_a_warmup_the_solves_compile_and_load_nothing(name, params):
    pytest.importorskip("example_robot_data")
    warm = solves_after(name, params, warm=True)
    assert all(r["converged"] for r in warm.values()), warm
    assert all(r["compiled"] == 0 and not r["loaded"] for r in warm.values()), warm
    cold = solves_after(name, params, warm=False)  # the measure sees what a solve brings in
    # (arm-obstacle's DDP brings in 9 kernels its construction has not: the measure sees them)
    assert len(cold["ddp"]["loaded"]) > 5 and all(r["converged"] for r in cold.values()), cold


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(ValueError, match="^problem: expected an optdyn.Problem, got str"):
        optdyn.warmup("pendulum")
    prob = problems.get("pendulum")
    with pytest.raises(ValueError, match=r"^solvers: expected some of ddp, ilqr, ipopt, got \('newton',\)"):
        optdyn.warmup(prob, solvers=("newton",))
    with pytest.raises(ValueError, match=r"^solvers: expected some of"):
        optdyn.warmup(prob, solvers=())
    assert set(optdyn.warmup(prob, solvers="ilqr")) == {"ilqr"}
