"""Model predictive control in closed loop (issue 41): step time against the control period.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mpc.py

ur5-reach over a 2 s horizon (40 intervals of 50 ms: the control period) for 3 s, pushed by
30 N along world y on tool0 from t = 1.0 s for 0.2 s; the space manipulator (30 intervals of
0.1 s) for 3 s, pushed by 100 N along world x on the satellite from t = 1.0 s for 0.2 s.
Each row is one :func:`optdyn.simulate` run of :class:`optdyn.MPC`: the median, worst and best
``MPC.step`` time over the steps after the first (whose cold solve converges; its time is
left out) as a ratio to the period, the median time the solver itself reported
(``Result.wall_time``: the rest of a step is the shift and the warm start), and the tool's
distance to the target before the push, at its largest after it, and 2 s after the push
began. As a baseline measured in the same run (the machine is shared), each case also times
20 one-iteration ``optdyn.solve`` calls of the same solver with default options on the
horizon one interval after the task's optimum, from that optimum shifted (the issue quotes
a warm one-iteration solve at 8.2 ms DDP, 5.6 ms iLQR): the ratio of the median step to
that median says what the MPC's step costs against a plain solve (MPC expands the problem
once per real-time iteration, ``optdyn.solve`` twice).
The issue's targets: the median step ≤ 0.2× the period with one DDP iteration and
≤ 0.1× with one iLQR iteration, the worst ≤ 0.5×; the tool back within 1 cm within 2 s.
Writes the section "mpc" of BENCHMARKS.md.
"""
from __future__ import annotations

import copy
import os
import time

import numpy as np
from _common import machine, table, write_section

import dynamics as dyn
import optdyn
import problems

CASES = [  # (task, solver, iterations, warm start)
    ("ur5-reach", "ddp", 1, "policy"),
    ("ur5-reach", "ilqr", 1, "policy"),
    ("ur5-reach", "ilqr", 1, "shift"),
    ("ur5-reach", "ddp", 1, "shift"),
    ("ur5-reach", "ilqr", 1, "rollout"),
    ("ur5-reach", "ddp", 1, "rollout"),
    ("ur5-reach", "ilqr", None, "policy"),
    ("ur5-reach", "ddp", None, "policy"),
    ("ur5-reach", "ipopt", 1, "shift"),
    ("ur5-reach", "ipopt", None, "shift"),
    ("space-manipulator", "ilqr", 1, "policy"),
    ("space-manipulator", "ddp", 1, "policy"),
]
TARGETS = {("ddp", 1): 0.2, ("ilqr", 1): 0.1}
PUSHES = {"ur5-reach": optdyn.Push("tool0", (0.0, 30.0, 0.0), 1.0, 0.2),
          "space-manipulator": optdyn.Push("satellite", (100.0, 0.0, 0.0), 1.0, 0.2)}
PROBLEMS = {"ur5-reach": {"N": 40}, "space-manipulator": {}}
DURATION = 3.0


def warm_iteration_ms(prob: optdyn.Problem, solver: str) -> float:
    """Median wall time, ms, of 20 one-iteration ``optdyn.solve`` calls (default options) of the
    horizon one interval after the converged solution, from that solution shifted."""
    converged = optdyn.solve(prob, solver)
    shifted = copy.copy(prob)
    shifted.x0 = converged.xs[1]
    guess = {"us_init": np.concatenate([converged.us[1:], converged.us[-1:]])}
    if solver == "ipopt":
        guess["xs_init"] = np.concatenate([converged.xs[1:], prob.step(converged.xs[-1:], converged.us[-1:])])
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        optdyn.solve(shifted, solver, max_iter=1, **guess)
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e3)


def run(task: str, solver: str, iterations, warm_start: str) -> list:
    prob = problems.get(task, **PROBLEMS[task])
    mpc = optdyn.MPC(prob, solver, iterations, warm_start=warm_start)
    solver_time = []
    step = mpc.step

    def timed_step(x, t):
        out = step(x, t)
        solver_time.append(mpc.result.wall_time)
        return out

    mpc.step = timed_step
    push = PUSHES[task]
    loop = optdyn.simulate(mpc, DURATION, disturbances=[push])
    baseline = warm_iteration_ms(prob, solver)
    target = np.array(prob.params["target"])
    d = np.array([np.linalg.norm(dyn.frame_placement(prob.model, x[: prob.model.nq], "tool0")[1] - target)
                  for x in loop.xs])
    ratio = loop.solve_time[1:] / prob.dt
    target_ratio = TARGETS.get((solver, iterations))
    after = loop.t >= push.start + 2.0 - 1e-9
    return [task, solver, "converge" if iterations is None else iterations, warm_start, f"{prob.dt * 1e3:.0f}",
            float(np.median(ratio)), float(ratio.max()), float(ratio.min()), "—" if target_ratio is None else f"≤ {target_ratio}",
            float(np.median(solver_time[1:]) * 1e3), baseline,
            float(np.median(loop.solve_time[1:]) * 1e3 / baseline),
            float(np.median(loop.iterations[1:])),
            f"{d[loop.t < push.start][-1] * 1e3:.1f}", f"{d[loop.t >= push.start].max() * 1e3:.0f}",
            f"{d[after][0] * 1e3:.1f}" if after.any() else "—", f"{d[-1] * 1e3:.1f}"]


def main() -> None:
    for task in PROBLEMS:  # compile, or load the cache, before timing
        optdyn.simulate(optdyn.MPC(problems.get(task, **PROBLEMS[task]), "ilqr"), 0.2)
    rows = []
    for case in CASES:
        rows.append(run(*case))
        print(rows[-1], flush=True)
    header = ["task", "solver", "iterations", "warm start", "period ms", "median step / period",
              "worst step / period", "best step / period", "target (median)", "solver ms (median)",
              "warm 1-iteration solve ms (median)", "median step ÷ that", "iterations (median)",
              "tool mm before push", "tool mm max after", "tool mm 2 s after push", f"tool mm at {DURATION:g} s"]
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    body = (f"## Model predictive control in closed loop (issue 41)\n\n{machine()}, one thread "
            f"(`NUMBA_NUM_THREADS=1`), load average at the end {load} (other jobs shared the cores). "
            "`benchmarks/bench_mpc.py` (tasks, pushes and columns in its docstring); the "
            "first step (a converged cold solve) is left out of the step times.\n\n" + table(header, rows))
    write_section("mpc", body)


if __name__ == "__main__":
    main()
