"""Single against multiple shooting for DDP and iLQR: iterations, cost reached, wall time.

    .venv/bin/python benchmarks/bench_multiple_shooting.py

Single shooting is :class:`optdyn.solvers.DDP` and :class:`~optdyn.solvers.ILQR`, multiple
shooting their feasibility-driven forms :class:`~optdyn.solvers.FDDP` and
:class:`~optdyn.solvers.FILQR` (from states and controls, the gaps closed by the steps).
Tasks: ur5-reach from its own guess and from states moved off the rollout (random tangent
displacements, 0.3 rad / rad s⁻¹, seed 0: gaps between every interval), and the Panda reach
(``problems.get("panda-reach")``, frame panda_hand) from its own guess (g(q0), at rest: a
rollout up to rounding) and from zero torques with the states at x0 (the arm falls: large
gaps). Writes the section "multiple shooting" of docs/benchmarks/.
"""
from __future__ import annotations

import time

import numpy as np
from _common import machine, table, write_section
import optdyn
import problems
from optdyn.solvers import DDP, FDDP, FILQR, ILQR


def perturbed_states(prob: optdyn.Problem, scale: float = 0.3, seed: int = 0) -> np.ndarray:
    dx = scale * np.random.default_rng(seed).normal(size=(prob.N + 1, prob.ndx))
    dx[0] = 0.0
    return prob.state_integrate(prob.rollout(prob.us_init), dx)


def cases():
    """(task, start, problem, options of :func:`optdyn.solve`), each solved single-shooting
    (DDP, iLQR) or multiple-shooting (FDDP, FiLQR) as its start says."""
    reach, panda = problems.get("ur5-reach"), problems.get("panda-reach")
    yield "ur5-reach", "own guess", reach, {}
    yield "ur5-reach", "own guess, multiple", reach, {"xs_init": reach.rollout(reach.us_init)}
    yield "ur5-reach", "states off the rollout, multiple", reach, {"xs_init": perturbed_states(reach)}
    yield "Panda reach", "own guess", panda, {}
    yield "Panda reach", "own guess, multiple", panda, {}
    yield "Panda reach", "zero torques, x0, multiple", panda, {"us_init": np.zeros((panda.N, panda.nu))}


def main() -> None:
    rows = []
    for task, start, prob, options in cases():
        for solver in (FDDP(), FILQR()) if start.endswith("multiple") else (DDP(), ILQR()):
            optdyn.solve(prob, solver, max_iter=1, **options)  # compiled or loaded before timing
            t0 = time.perf_counter()
            res = optdyn.solve(prob, solver, max_iter=600, **options)
            rows.append([task, start, solver.name, res.status, res.iterations, f"{res.cost:.7f}",
                         f"{time.perf_counter() - t0:.2f}"])
            print(rows[-1], flush=True)
    body = (f"## Single and multiple shooting (DDP, iLQR)\n\n{machine()}. `benchmarks/bench_multiple_shooting.py`"
            " (tasks in its docstring); iterations and costs do not depend on the machine, wall times do.\n\n"
            + table(["task", "start", "solver", "status", "iterations", "cost", "wall s"], rows))
    write_section("multiple shooting", body)


if __name__ == "__main__":
    main()
