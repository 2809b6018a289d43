"""Windows of a task under MPC (the references move with time): a moving target and
the quadruped's trot.

    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_mpc_windows.py [--converged]

Each row is one :func:`optdyn.simulate` run of :class:`optdyn.MPC` with one iLQR iteration per
step (real-time iteration) and a horizon of H intervals moving along a longer task
(:meth:`optdyn.Problem.window`):

- circle: the UR5's tool0 target goes round a 10 cm circle about ur5-reach's target in 4 s
  (80 intervals of 50 ms, one ``FramePositionCost`` target per knot, no terminal cost), H = 20;
  error = the tool's largest distance to the target of the moment after the first second.
  Beside it, the same loop with the first target held (a controller whose reference does not
  move), and the open-loop optimum of the whole task (its own lag behind the target).
- trot: the Solo-12 trot (``quadruped`` scenario trot, 2 cycles, 50 intervals of 20 ms) for
  1.5 s, H = 20, undisturbed and pushed sideways on the base (10 N from 0.3 s for 0.1 s), the
  plant on the task's contact sequence; error = the base's largest distance to the open-loop
  optimum over the task's 1 s, and the feet's largest height above their start at the end.
  Without the friction pyramid (``mu=None``), and with it (μ = 0.7, its default): as stage
  constraints (``cone="constraint"``, the default: one augmented-Lagrangian iteration per
  step), or as a relaxed-log-barrier cost (``cone="cost"``); with ``--converged`` also the
  constraints solved to convergence at every step (about 5 minutes). For the pyramid, the
  least margin of its rows over the stance knots (``ClosedLoop.margins`` holds the plant's
  fine states; the knots' forces are those the controller plans with).

Step times: the median and worst ``MPC.step`` over the steps after the first (a cold solve to
convergence), as ratios to the control period — the physical bound of a real-time loop —, and
for the circle, measured in the same run, the median step of the same controller on the task
whose target is held (every interval alike: its windows share the task's terms), which shows
what windows with per-knot data cost. Writes the section "mpc-windows" of BENCHMARKS.md.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from _common import machine, table, write_section

import dynamics as dyn
import optdyn
import problems
from optdyn.costs import ControlCost, FramePositionCost, FrictionConeResidual, StateCost
from problems import quadruped
from problems.quadruped import FEET


def circle_task(target_of) -> optdyn.Problem:
    """ur5-reach's weights over 80 intervals of 50 ms with ``target_of(targets)`` for tool0."""
    reach = problems.get("ur5-reach", N=80)
    N, dt = 80, 0.05
    angle = 2 * np.pi * np.arange(N) * dt / 4.0
    targets = np.array(reach.params["target"]) + 0.1 * np.c_[np.cos(angle), np.sin(angle), np.zeros(N)]
    g0 = reach.us_init[0]
    running = (StateCost(1e-2, reach.x0) + ControlCost(1e-4, g0)
               + FramePositionCost(reach.model, "tool0", target_of(targets), 100.0))
    return optdyn.Problem(reach.model, reach.x0, N, dt, running, None, us_init=np.tile(g0, (N, 1))), targets


def tool(prob: optdyn.Problem, xs: np.ndarray) -> np.ndarray:
    return np.array([dyn.frame_placement(prob.model, x[: prob.model.nq], "tool0")[1] for x in xs])


def steps(loop) -> tuple[float, float]:
    """(median, worst) step time after the first, as ratios to the period."""
    t = loop.solve_time[1:] / loop.dt
    return float(np.median(t)), float(t.max())


def circle_rows() -> list[list]:
    rows = []
    moving, targets = circle_task(lambda t: t)
    held, _ = circle_task(lambda t: t[0])
    optimum = optdyn.solve(moving, "ilqr")
    lag = np.linalg.norm(tool(moving, optimum.xs[:-1]) - targets, axis=1)[20:].max()
    base = steps(optdyn.simulate(optdyn.MPC(held, "ilqr", horizon=20), 4.0))[0]
    for name, prob in (("moving target", moving), ("first target held", held)):
        loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", horizon=20), 4.0)
        error = np.linalg.norm(tool(prob, loop.xs[:-1]) - targets, axis=1)[20:].max()
        median, worst = steps(loop)
        rows.append([f"circle, {name}", 20, "1", f"{1e3 * error:.1f} mm", f"{1e3 * lag:.1f} mm (optimum)",
                     f"{median:.3f}", f"{worst:.3f}", f"{base:.3f}"])
    return rows


def pyramid_margin(task: optdyn.Problem, loop, mu: float) -> float:
    """The least margin (N; < 0 outside) of the friction pyramid's rows over every foot's
    stance knots of the closed loop: the task's own residual at the loop's states and controls."""
    window = task.window(0, len(loop.us))  # the contact sequence of every step, held past the end
    least = np.inf
    for foot in FEET:
        r = FrictionConeResidual(task.model, window.contacts, foot, mu=mu)
        least = min(least, -float(r.value(loop.xs[:-1], loop.us)[r.defined_at()].max()))
    return least


def trot_rows(converged: bool) -> list[list]:
    rows = []
    cases = [(None, 1, 0.0, "constraint"), (None, 1, 10.0, "constraint"), (0.7, 1, 0.0, "constraint"),
             (0.7, 1, 0.0, "cost"), (0.7, 1, 10.0, "cost")] + ([(0.7, None, 0.0, "constraint")] if converged else [])
    for mu, iterations, force, cone in cases:
        task = quadruped.make("trot", mu=mu, cone=cone)
        optimum = optdyn.solve(task, "ilqr")
        pushes = [optdyn.Push("base_link", (0.0, force, 0.0), 0.3, 0.1)] if force else []
        started = time.perf_counter()
        loop = optdyn.simulate(optdyn.MPC(task, "ilqr", iterations, horizon=20), task.T + 0.5, disturbances=pushes)
        wall = time.perf_counter() - started
        n = min(task.N + 1, len(loop.xs))
        base = np.linalg.norm(loop.xs[:n, :3] - optimum.xs[:n, :3], axis=1).max()
        feet = [dyn.frame_placement(task.model, loop.xs[k, : task.model.nq], f)[1][2] for k in (0, -1) for f in FEET]
        height = max(abs(b - a) for a, b in zip(feet[:4], feet[4:]))
        median, worst = steps(loop)
        pyramid = "no friction pyramid" if mu is None else f"friction pyramid μ = {mu} as a {cone}"
        what = f"trot, {pyramid}" + (f", pushed {force:g} N" if force else "")
        margin = "" if mu is None or loop.stopped else f", pyramid ≥ {pyramid_margin(task, loop, mu):+.3g} N"
        rows.append([what, 20, "1" if iterations else "converge",
                     f"base {100 * base:.1f} cm, feet {1e3 * height:.1f} mm{margin}",
                     loop.stopped or f"ran {loop.t[-1]:g} s ({wall:.0f} s wall)", f"{median:.3f}", f"{worst:.3f}", ""])
    return rows


def main() -> None:
    rows = circle_rows() + trot_rows("--converged" in sys.argv)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    body = (f"## Windows of a task under MPC (`benchmarks/bench_mpc_windows.py`)\n\n{machine()}; load average "
            f"{load} at the end (a shared machine)\n\n"
            + table(["loop", "H", "iterations", "error", "note", "median step / period", "worst / period",
                     "held target: median / period"], rows))
    write_section("mpc-windows", body)


if __name__ == "__main__":
    main()
