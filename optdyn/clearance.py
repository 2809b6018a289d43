"""Obstacle clearance of a trajectory, checked at every integrator sub-step.

The optimisers impose the obstacle constraints only at the nodes x_1 … x_N. This checker
re-integrates every interval from its node x_k with the held control u_k, one integrator
sub-step (dt/substeps) at a time, and measures for each collision point p (a point fixed
in a frame) and each spherical obstacle (c, ρ) the signed surface distance

    d = ‖p(q) − c‖ − ρ          (negative inside the sphere)

at every sub-step — so a trajectory that cuts through an obstacle between two nodes is
caught. A problem qualifies if it has ``obstacles`` (list of (center (3,), radius)),
``collision_points`` (list of (frame_name, offset (3,) in that frame)) and ``margin``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .costs import PointSet
from .problem import Problem


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
        margin: the problem's required clearance.
        argmin: (k, s, p) where ``min`` is reached.
    """

    min: float
    min_nodes: float
    substeps: np.ndarray
    nodes: np.ndarray
    times: np.ndarray
    margin: float
    argmin: tuple[int, int, int]


def point_clearances(problem, qs: np.ndarray) -> np.ndarray:
    """Clearance (K, P) of every collision point at each configuration of qs (K, nq):
    the distance to the surface of the nearest obstacle."""
    p = PointSet(problem.model, problem.collision_points).positions(np.asarray(qs, dtype=float))
    d = [np.linalg.norm(p - np.asarray(c), axis=2) - rho for c, rho in problem.obstacles]
    return np.min(d, axis=0)


def _substep_problem(problem: Problem) -> Problem:
    """One integrator step of dt/substeps: the sub-step map of ``problem``."""
    F = problem.forces  # the same external forces, interval by interval (K = N knots)
    return Problem(problem.model, problem.x0, N=problem.N, dt=problem.dt / problem.substeps,
                   substeps=1, integrator=problem.integrator, f_ext=F if F.shape[1] else None)


def clearances(problem, xs, us) -> Clearance:
    """Clearances of (xs (N+1, nx), us (N, nu)) at every sub-step of every interval."""
    for attr in ("obstacles", "collision_points", "margin"):
        if not hasattr(problem, attr):
            raise ValueError(f"problem: expected a problem with obstacles, collision_points and margin; "
                             f"{type(problem).__name__} has no {attr!r}")
    N, m, nq = problem.N, problem.substeps, problem.model.nq
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
    P = len(problem.collision_points)
    d = point_clearances(problem, traj[:, :, :nq].reshape(-1, nq)).reshape(N, m + 1, P)
    nodes = point_clearances(problem, xs[:, :nq])
    k, s, p = np.unravel_index(int(np.argmin(d)), d.shape)
    times = problem.dt * (np.arange(N)[:, None] + np.arange(m + 1)[None, :] / m)
    return Clearance(min=float(d[k, s, p]), min_nodes=float(nodes[1:].min()), substeps=d, nodes=nodes,
                     times=times, margin=float(problem.margin), argmin=(int(k), int(s), int(p)))
