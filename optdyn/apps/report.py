"""How far a trajectory is from achieving its task, independently of the solver's status.

``Result.converged`` only says that the solver's own tolerance was met. Whether the robot
did what was asked is measured here, on the trajectory itself:

* targets: for every :class:`~optdyn.costs.FramePositionCost` of the running or terminal
  cost, the distance (m) from its point to its target at the final node;
* violation: the largest violation of control bounds, path inequalities (nodes 1..N) and
  terminal equalities (:meth:`optdyn.ocp.problem.Problem.violation`);
* active bounds: how many controls sit on a finite bound (within 1e-9 relative).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ocp.residual_costs import FramePositionCost
from ..ocp.problem import Problem
from ..ocp.task import cost_terms


@dataclass
class Target:
    """A frame-position target: point ``frame`` + offset should reach ``target`` (3,)."""

    frame: str
    target: np.ndarray
    distance: float  # at the final node, m


@dataclass
class TaskErrors:
    """Task-level errors of a trajectory (module docstring)."""

    targets: list[Target]
    violation: float
    active_bounds: int
    controls: int  # N·nu, the number of control entries


def task_errors(problem: Problem, xs: np.ndarray, us: np.ndarray) -> TaskErrors:
    """Task errors of the trajectory xs (N+1, nx), us (N, nu) of ``problem``.

    Non-finite trajectories give NaN distances and violation (never an exception).
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    if xs.shape != (problem.N + 1, problem.nx) or us.shape != (problem.N, problem.nu):
        raise ValueError(f"xs, us: expected shapes {(problem.N + 1, problem.nx)} and {(problem.N, problem.nu)}, "
                         f"got {xs.shape} and {us.shape}")
    finite = bool(np.all(np.isfinite(xs)))
    seen, targets = set(), []
    frame_costs = [c for c in cost_terms(problem.terminal_cost) + cost_terms(problem.running_cost)
                   if isinstance(c, FramePositionCost)]
    for c in frame_costs:
        r = c.residual
        target = r.target.reshape(-1, 3)[-1]  # the last knot's of a reference trajectory
        key = (r.frame, tuple(r.offset), tuple(target))
        if key in seen:
            continue
        seen.add(key)
        d = float(np.linalg.norm(r.point(xs[-1:])[0] - target)) if finite else np.nan
        targets.append(Target(r.frame, target.copy(), d))
    violation = problem.violation(xs, us) if finite else np.nan
    tol = 1e-9 * (1.0 + np.abs(us))
    lo = np.isfinite(problem.u_lower) & (us <= problem.u_lower + tol)
    hi = np.isfinite(problem.u_upper) & (us >= problem.u_upper - tol)
    return TaskErrors(targets, violation, int(np.count_nonzero(lo | hi)), us.size)


def task_lines(errors: TaskErrors) -> list[str]:
    """Summary lines (label padded to 12 characters) of :class:`TaskErrors`."""
    lines = [f"target      {t.frame}: {t.distance:.4g} m from ({', '.join(f'{v:g}' for v in t.target)}) "
             f"at the final node" for t in errors.targets]
    lines.append(f"violation   {errors.violation:.3g} (largest of control bounds, path and terminal constraints)")
    lines.append(f"bounds      {errors.active_bounds} of {errors.controls} controls on a bound")
    return lines
