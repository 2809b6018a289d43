"""Single against multiple shooting for DDP and iLQR: iterations, cost reached, wall time.

    .venv/bin/python benchmarks/bench_multiple_shooting.py

Tasks: ur5-reach from its own guess and from states moved off the rollout (random tangent
displacements, 0.3 rad / rad s⁻¹, seed 0: gaps between every interval), and a Panda reach
(example-robot-data, q0 = 0 at rest, N = 40, dt = 0.05, one RK4 step per interval, running
cost ½·1e-2‖x − x0‖² + ½·1e-3‖u − g(q0)‖² + ½·10‖p_tcp − (0.4, 0.2, 0.5)‖², terminal
½·1e4‖p_tcp − p*‖², torques within the effort limits) from its own guess (g(q0), at rest:
a rollout, no gaps) and from zero torques with the states at x0 (the arm falls: large gaps).
Writes the section "multiple shooting" of BENCHMARKS.md.
"""
from __future__ import annotations

import os
import time

import example_robot_data
import numpy as np
from _common import machine, table, write_section

import dynamics as dyn
import optdyn
import problems
from optdyn.costs import ControlCost, FramePositionCost, StateCost


def panda_reach() -> optdyn.Problem:
    robots = example_robot_data.getModelPath("panda_description/urdf/panda.urdf")
    model = dyn.load_urdf(os.path.join(robots, "panda_description", "urdf", "panda.urdf"))
    x0 = np.zeros(model.nq + model.nv)
    g0 = dyn.gravity_torques(model, x0[:model.nq])
    target = np.array([0.4, 0.2, 0.5])
    return optdyn.Problem(model, x0, N=40, dt=0.05, substeps=1,
                          running_cost=StateCost(1e-2, x0) + ControlCost(1e-3, g0)
                          + FramePositionCost(model, "panda_hand_tcp", target, 10.0),
                          terminal_cost=FramePositionCost(model, "panda_hand_tcp", target, 1e4),
                          u_lower=-model.effort_limit, u_upper=model.effort_limit)


def perturbed_states(prob: optdyn.Problem, scale: float = 0.3, seed: int = 0) -> np.ndarray:
    dx = scale * np.random.default_rng(seed).normal(size=(prob.N + 1, prob.ndx))
    dx[0] = 0.0
    return prob.state_integrate(prob.rollout(prob.us_init), dx)


def cases():
    reach, panda = problems.get("ur5-reach"), panda_reach()
    yield "ur5-reach", "own guess", reach, {}
    yield "ur5-reach", "own guess, multiple", reach, {"shooting": "multiple", "xs_init": reach.rollout(reach.us_init)}
    yield "ur5-reach", "states off the rollout, multiple", reach, {"shooting": "multiple",
                                                                  "xs_init": perturbed_states(reach)}
    yield "Panda reach", "own guess", panda, {}
    yield "Panda reach", "own guess, multiple", panda, {"shooting": "multiple"}
    yield "Panda reach", "zero torques, x0, multiple", panda, {"shooting": "multiple",
                                                                "us_init": np.zeros((panda.N, panda.nu))}


def main() -> None:
    rows = []
    for task, start, prob, options in cases():
        for solver in ("ddp", "ilqr"):
            optdyn.solve(prob, solver, max_iter=1, **options)  # compiled or loaded before timing
            t0 = time.perf_counter()
            res = optdyn.solve(prob, solver, max_iter=600, **options)
            rows.append([task, start, solver, res.status, res.iterations, f"{res.cost:.7f}",
                         f"{time.perf_counter() - t0:.2f}"])
            print(rows[-1], flush=True)
    body = (f"## Single and multiple shooting (DDP, iLQR)\n\n{machine()}. `benchmarks/bench_multiple_shooting.py`"
            " (tasks in its docstring); iterations and costs do not depend on the machine, wall times do.\n\n"
            + table(["task", "start", "solver", "status", "iterations", "cost", "wall s"], rows))
    write_section("multiple shooting", body)


if __name__ == "__main__":
    main()
