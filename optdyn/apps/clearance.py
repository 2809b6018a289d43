"""Obstacle clearance of a trajectory, checked at every integrator sub-step.

The optimisers impose the obstacle constraints only at the nodes x_1 … x_N. This checker
re-integrates every interval from its node x_k with the held control u_k, one integrator
sub-step (dt/substeps) at a time, and measures for each collision point p (a point fixed
in a frame) and each spherical obstacle (c, ρ) the signed surface distance

    d = ‖p(q) − c‖ − ρ          (negative inside the sphere)

at every sub-step — so a trajectory that cuts through an obstacle between two nodes is
caught. Any problem with :class:`~optdyn.constraints.SphereClearance` path constraints
qualifies; each constraint contributes one column per point (its own sphere and margin).
:func:`constraint_margins` does the same for every path constraint c ≥ 0 (joint limits,
residual constraints, and those on (x, u) with the interval's control held): the smallest
margin at the nodes and at the worst sub-step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ocp.constraints import SphereClearance
from ..ocp.problem import Problem
from ..ocp.task import clearance_constraints


@dataclass(frozen=True)
class Clearance:
    """Clearances of one trajectory.

    Attributes:
        min: smallest clearance over every sub-step, point and obstacle, m.
        min_nodes: smallest clearance at the nodes x_1 … x_N (where constraints act), m.
        substeps (N, m+1, P): clearance of point p at sub-step s of interval k
            (s = 0 is node x_k, s = m the integrated end of the interval).
        nodes (N+1, P): clearance at the nodes themselves.
        times (N, m+1): time of each sub-step, s.
        margin: the largest required clearance (the constraints' margins).
        margins (P,): required clearance of each column (point of a constraint).
        argmin: (k, s, p) where ``min`` is reached.
    """

    min: float
    min_nodes: float
    substeps: np.ndarray
    nodes: np.ndarray
    times: np.ndarray
    margin: float
    argmin: tuple[int, int, int]
    margins: np.ndarray | None = None


def _obstacle_constraints(problem: Problem) -> list[SphereClearance]:
    """The problem's SphereClearance path constraints; ValueError if it has none."""
    constraints = clearance_constraints(problem)
    if not constraints:
        raise ValueError(f"problem: {problem.name!r} has no obstacles (no SphereClearance path constraints)")
    return constraints


def _columns(constraints: list[SphereClearance], qs: np.ndarray) -> np.ndarray:
    qs = np.asarray(qs, dtype=float)
    return np.concatenate([c.clearance(qs) + c.margin for c in constraints], axis=1)


def point_clearances(problem: Problem, qs: np.ndarray) -> np.ndarray:
    """Clearance (K, P) at each configuration of qs (K, nq): the distance of every point of
    every SphereClearance constraint to the surface of that constraint's sphere."""
    return _columns(_obstacle_constraints(problem), qs)


def _substep_problem(problem: Problem) -> Problem:
    """One integrator step of dt/substeps: the sub-step map of ``problem``."""
    f_ext = problem.f_ext  # the same external forces, interval by interval (K = N knots)
    return Problem(problem.model, problem.x0, N=problem.N, dt=problem.dt / problem.substeps,
                   substeps=1, integrator=problem.integrator, f_ext=f_ext if f_ext.shape[1] else None,
                   actuated=problem.actuation)


def substep_states(problem: Problem, xs, us) -> np.ndarray:
    """States (N, m+1, nx) at every integrator sub-step s of every interval k (s = 0: the
    node x_k; s = m: the integrated end of the interval) of (xs (N+1, nx), us (N, nu))."""
    N, m = problem.N, problem.substeps
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    if xs.shape != (N + 1, problem.nx) or us.shape != (N, problem.nu):
        raise ValueError(f"xs, us: expected shapes ({N + 1}, {problem.nx}) and ({N}, {problem.nu}), "
                         f"got {xs.shape} and {us.shape}")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(us))):
        raise ValueError("xs, us: expected finite values, got NaN or inf")
    sub = _substep_problem(problem)
    traj = np.empty((N, m + 1, problem.nx))
    traj[:, 0] = xs[:-1]
    for s in range(m):
        traj[:, s + 1] = sub.step(traj[:, s], us)
    return traj


@dataclass(frozen=True)
class Margin:
    """The smallest margin min_i c_i of the path constraints c ≥ 0 (−|c_i| on equality rows):
    ``nodes`` at x_1 … x_N,
    ``substeps`` over every integrator sub-step, reached in interval ``interval`` at
    sub-step ``substep`` by a row of ``constraint`` (its type name). With contacts the
    sub-steps are not checked (``substepped`` False; ``substeps`` is then ``nodes``)."""

    nodes: float
    substeps: float
    interval: int
    substep: int
    constraint: str
    substepped: bool = True


def margin_constraints(problem: Problem) -> list:
    """The constraints whose margins :func:`margins_at` gives, in its column order: the path
    constraints, then the stage constraints."""
    return list(problem.path_constraints) + list(problem.stage_constraints)


def margins_at(problem: Problem, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
    """(K, m): the least margin min_i c_i (−|c_i| on equality rows; < 0 violated) of each of
    the m constraints of :func:`margin_constraints` at the states xs (K, nx), the stage
    constraints with the controls us (K, nu)."""
    columns = [c.least_margin(c.value(xs)) for c in problem.path_constraints] + \
        [c.least_margin(c.value_knots(xs, us)) for c in problem.stage_constraints]
    return np.stack(columns, axis=1) if columns else np.zeros((xs.shape[0], 0))


def _where_defined(constraint, margins: np.ndarray) -> np.ndarray:
    """``margins`` (N,) of a stage constraint, +inf at the knots where one of its residuals is
    0 by construction (a foot's force while it swings): a row that cannot be violated there."""
    for r in constraint.residuals():
        mask = r.defined_at()
        if mask is not None:
            margins = np.where(mask, margins, np.inf)
    return margins


def constraint_margins(problem: Problem, xs, us) -> Margin:
    """:class:`Margin` of the path constraints of ``problem`` along (xs, us), checked at every
    integrator sub-step like the clearances: those on the state at x_1 … x_N and the sub-steps,
    those on (x, u) (stage constraints) at the knots (x_k, u_k) and at the sub-steps of
    interval k with u_k held. With contacts, at the nodes and knots only: the sub-steps
    would need the contact phases, and a constraint on the contact forces has values at the
    knots alone. ValueError if it has no path constraints."""
    constraints = margin_constraints(problem)
    if not constraints:
        raise ValueError(f"problem: {problem.name!r} has no path constraints")
    if problem.contacts is not None:
        xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
        values = np.stack([c.least_margin(c.value(xs[1:])) for c in problem.path_constraints]  # node k + 1
                          + [_where_defined(c, c.least_margin(c.value_knots(xs[:-1], us)))
                             for c in problem.stage_constraints], axis=1)
        k, j = np.unravel_index(int(np.argmin(values)), values.shape)
        least = float(values[k, j])
        return Margin(least, least, int(k), 0, type(constraints[j]).__name__, substepped=False)
    traj = substep_states(problem, xs, us)
    N, m1, nx = traj.shape
    xs, held = np.asarray(xs, dtype=float), np.repeat(np.asarray(us, dtype=float), m1, axis=0)
    stage = len(problem.path_constraints)
    values = margins_at(problem, traj.reshape(-1, nx), held).reshape(N, m1, -1)
    k, s, j = np.unravel_index(int(np.argmin(values)), values.shape)
    nodes = min([float(c.least_margin(c.value(xs[1:])).min()) for c in problem.path_constraints]
                + [float(values[:, 0, stage:].min(initial=np.inf))])
    return Margin(nodes, float(values[k, s, j]), int(k), int(s), type(constraints[j]).__name__)


def clearances(problem: Problem, xs, us) -> Clearance:
    """Clearances of (xs (N+1, nx), us (N, nu)) at every sub-step of every interval."""
    constraints = _obstacle_constraints(problem)
    N, m, nq = problem.N, problem.substeps, problem.model.nq
    xs, us = np.asarray(xs, dtype=float), np.asarray(us, dtype=float)
    traj = substep_states(problem, xs, us)
    d = _columns(constraints, traj[:, :, :nq].reshape(-1, nq)).reshape(N, m + 1, -1)
    nodes = _columns(constraints, xs[:, :nq])
    k, s, p = np.unravel_index(int(np.argmin(d)), d.shape)
    times = problem.dt * (np.arange(N)[:, None] + np.arange(m + 1)[None, :] / m)
    margins = np.concatenate([np.full(len(c.points), c.margin) for c in constraints])
    return Clearance(min=float(d[k, s, p]), min_nodes=float(nodes[1:].min()), substeps=d, nodes=nodes,
                     times=times, margin=float(margins.max()), argmin=(int(k), int(s), int(p)), margins=margins)
