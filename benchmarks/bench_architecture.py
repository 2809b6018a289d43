"""Before/after of the architecture change (named records, solvers that see only the
problem, optdyn in rooms) → docs/benchmarks/, section "architecture".

Everything is measured through the public API, which both trees share, each tree in its own
process with its own numba cache, the two trees in turn over several rounds (the machine is
shared and drifts): per-call times of the rigid-body algorithms on the UR5 (and Pinocchio's
in the same process, for the ratio to it), DDP, iLQR and IPOPT per iteration on three tasks,
the interval sensitivities of a whole trajectory on 1 and 2 threads, and the cold compile
time of the README's main job (a fresh cache directory per tree).

Run from the repository root: .venv/bin/python benchmarks/bench_architecture.py  (about 25 minutes)
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from _common import ROOT, baseline_tree, machine, run_in_tree, table, write_section

BASELINE = "d32e39e"  # main before the architecture issue
TASKS = ("ur5-reach", "arm-obstacle", "space-manipulator")
SNIPPET = r"""
import json
import numpy as np
import dynamics as dyn, optdyn, problems
from _common import per_call_us

out = {}
model = dyn.models.ur5()
rng = np.random.default_rng(0)
q, v, a, lam = (rng.uniform(-1, 1, model.nv) for _ in range(4))
calls = {"rnea": lambda: dyn.rnea(model, q, v, a), "aba": lambda: dyn.aba(model, q, v, a),
         "crba": lambda: dyn.crba(model, q), "minv": lambda: dyn.minv(model, q),
         "rnea_derivatives": lambda: dyn.rnea_derivatives(model, q, v, a),
         "aba_derivatives": lambda: dyn.aba_derivatives(model, q, v, a),
         "aba_second_derivatives_contracted": lambda: dyn.aba_second_derivatives_contracted(model, q, v, a, lam)}
for name, f in calls.items():
    out["call " + name] = per_call_us(f, min_time=0.05, repeat=5)
try:
    import pinocchio as pin
except ImportError:
    pin = None
if pin is not None:
    from importlib import resources
    pm = pin.buildModelFromUrdf(str(resources.files("dynamics.models") / "ur5.urdf"))
    pd = pin.Data(pm)
    pcalls = {"rnea": lambda: pin.rnea(pm, pd, q, v, a), "aba": lambda: pin.aba(pm, pd, q, v, a),
              "crba": lambda: pin.crba(pm, pd, q), "minv": lambda: pin.computeMinverse(pm, pd, q),
              "rnea_derivatives": lambda: pin.computeRNEADerivatives(pm, pd, q, v, a),
              "aba_derivatives": lambda: pin.computeABADerivatives(pm, pd, q, v, a)}
    for name, f in pcalls.items():
        out["pinocchio " + name] = per_call_us(f, min_time=0.05, repeat=5)
for task in TASKS:
    prob = problems.get(task)
    for solver in ("ddp", "ilqr", "ipopt"):
        optdyn.solve(prob, solver)  # compiles, or loads the tree's cache
        out[task + " " + solver] = min(r.wall_time / max(r.iterations, 1) * 1e3
                                       for r in (optdyn.solve(prob, solver) for _ in range(3)))
prob = problems.get("ur5-reach")
xs, us = prob.rollout(prob.us_init), prob.us_init
lams = rng.normal(size=(prob.N, prob.ndx))
for t in (1, 2):
    optdyn.set_num_threads(t)
    out[f"trajectory {t}"] = per_call_us(lambda: prob.step_hessians(xs[:-1], us, lams, prob.step_stages(xs[:-1], us)[2]),
                                         min_time=0.05, repeat=5)
print("RESULT" + json.dumps(out))
""".replace("TASKS", repr(TASKS))


def interleaved(rounds: int) -> dict:
    """Each measurement of the snippet, before and after, over ``rounds`` rounds in turn."""
    runs = defaultdict(list)
    with baseline_tree(BASELINE) as base:
        run_in_tree(base, SNIPPET)  # compiles the baseline's kernels into its own cache
        run_in_tree(ROOT, SNIPPET)
        for _ in range(rounds):
            runs["before"].append(run_in_tree(base, SNIPPET))
            runs["after"].append(run_in_tree(ROOT, SNIPPET))
    return runs


def _ratio_cells(before: np.ndarray, after: np.ndarray) -> list:
    ratio = after / before
    return [float(before.min()), float(after.min()), f"{np.median(ratio):.2f}", f"{ratio.min():.2f}–{ratio.max():.2f}"]


def speed_tables(rounds: int = 5) -> str:
    runs = interleaved(rounds)
    col = {side: {k: np.array([r[k] for r in runs[side]]) for k in runs[side][0]} for side in runs}
    b, a = col["before"], col["after"]
    calls = [k.split(" ", 1)[1] for k in a if k.startswith("call ")]
    call_rows = []
    for name in calls:
        row = [name] + _ratio_cells(b["call " + name], a["call " + name])
        pin_key = "pinocchio " + name
        if pin_key in a:
            row += [f"{np.median(b['call ' + name] / b[pin_key]):.2f}", f"{np.median(a['call ' + name] / a[pin_key]):.2f}"]
        else:
            row += ["–", "–"]
        call_rows.append(row)
    solve_rows = [[task, solver] + _ratio_cells(b[f"{task} {solver}"], a[f"{task} {solver}"])
                  for task in TASKS for solver in ("ddp", "ilqr", "ipopt")]
    speedup = {side: col[side]["trajectory 1"] / col[side]["trajectory 2"] for side in col}
    thread_rows = [[t] + _ratio_cells(b[f"trajectory {t}"], a[f"trajectory {t}"]) for t in (1, 2)]
    thread_rows.append(["speed-up 1 → 2 threads (median)", f"{np.median(speedup['before']):.2f}",
                        f"{np.median(speedup['after']):.2f}", "", ""])
    head = ["before (fastest)", "after (fastest)", "after ÷ before (median)", "range over rounds"]
    return "\n\n".join([
        f"### Per call on the UR5 (µs), {rounds} interleaved rounds of one process per tree\n\n"
        + table(["function"] + head + ["÷ Pinocchio before", "÷ Pinocchio after"], call_rows),
        "### Per iteration (ms; fastest of 3 solves in each round)\n\n" + table(["task", "solver"] + head, solve_rows),
        "### ur5-reach's first-order sensitivities with stage records and the contracted Hessians of all 80 "
        "intervals (µs)\n\n" + table(["threads"] + head, thread_rows),
    ])


def cold_main_job(tree: Path) -> float:
    """Wall seconds of the README's main job in ``tree`` with an empty numba cache."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as cwd:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(tree))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "optdyn", "solve", "arm-obstacle", "--html", "arm_obstacle.html"],
                       cwd=cwd, env=env, check=True, capture_output=True, timeout=3600)
        return time.perf_counter() - start


def cold_table() -> str:
    with baseline_tree(BASELINE) as base:
        before, after = cold_main_job(base), cold_main_job(ROOT)
    return ("### Cold compile: `optdyn solve arm-obstacle --html arm_obstacle.html` with an empty numba cache "
            "(s, one run each, in turn)\n\n" + table(["before", "after", "after ÷ before"],
                                                       [[before, after, f"{after / before:.2f}"]]))


def main() -> None:
    body = "\n\n".join([
        "## Architecture: named records, solvers that see only the problem (before/after)",
        f"Machine: {machine()}. Script: `benchmarks/bench_architecture.py`. Before = `{BASELINE}` (main before "
        "the change), after = this tree; each measured in its own process with its own numba cache.",
        speed_tables(), cold_table(),
    ])
    write_section("architecture", body)


if __name__ == "__main__":
    main()
