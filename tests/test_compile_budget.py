"""The compile budget of the README's main job: the kernel specialisations it compiles on
a cold cache (a fresh cache directory, no helper processes), counted from numba's compile
events. Counts, never times: a change that adds a specialisation — a kernel compiled again
for read-only, F-ordered or constant arguments, a new kernel on the main job's path —
fails here, and the budget is raised on purpose or the change undone (BENCHMARKS.md, "cold
start", gives the seconds)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAIN_JOB = """
import json, os, tempfile
from numba.core import event
compiled = []
class Listener(event.Listener):
    def on_start(self, ev):
        fn = ev.data["dispatcher"].py_func
        compiled.append([f"{fn.__module__}.{fn.__qualname__}", str(ev.data["args"])])
    def on_end(self, ev):
        pass
event.register("numba:compile", Listener())
from optdyn.apps.cli import main
with tempfile.TemporaryDirectory() as d:
    main(["solve", "arm-obstacle", "--quiet", "--html", os.path.join(d, "arm.html")])
print("RESULT" + json.dumps(compiled))
"""

BUDGET = 132
"""Kernel specialisations of this project that the main job (``optdyn solve arm-obstacle
--html …``) compiles."""

PER_ORDER = {"optdyn.ocp.integrators.interval", "optdyn.ocp.integrators.free_dynamics",
             "optdyn.ocp.integrators._compose", "optdyn.ocp.integrators._accumulate",
             "optdyn.ocp.integrators._robot_dynamics.<locals>.impl", "dynamics._compile._at_order.<locals>.<lambda>"}
"""Compiled per derivative order (``literal``): 0 for the rollouts, 1 for the sensitivities."""

PER_SHAPE = {"optdyn.ocp.integrators._axpy", "dynamics.spatial.matmul_add", "dynamics.spatial.copy_into",
             "optdyn.solvers.linalg.gemm_tn", "dynamics.kinematics.all_finite", "dynamics.joints._product_into"}
"""Small array helpers compiled per dimension and layout of their arguments (rows, blocks
and slices of the workspace's arrays)."""


def test_the_main_job_compiles_within_its_budget(tmp_path):
    env = dict(os.environ, OPTDYN_COMPILE_AHEAD="0", NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", MAIN_JOB], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    ours = {(name, args) for name, args in json.loads(out.stdout.split("RESULT", 1)[1])
            if name.split(".")[0] in ("dynamics", "optdyn")}
    per_kernel = Counter(name for name, _ in ours)
    again = {name: n for name, n in per_kernel.items() if n > 1 and name not in PER_ORDER | PER_SHAPE}
    assert not again, f"kernels compiled for more than one signature: {again}"
    assert all(per_kernel[name] <= 2 for name in PER_ORDER)
    assert len(ours) <= BUDGET, f"{len(ours)} specialisations compiled, the budget is {BUDGET}"
    assert len(ours) >= BUDGET - 10, f"{len(ours)} specialisations: lower the budget to hold the gain"
