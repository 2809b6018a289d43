"""Obstacle-avoiding UR5: the direct-multiple-shooting case study (Sec. IV-B) of M. Neunert,
M. Giftthaler, M. Frigerio, C. Semini, J. Buchli, "Fast Derivatives of Rigid Body Dynamics
for Control, Optimization and Estimation", SIMPAR 2016 ("the paper" below).

A fixed-base 6-DoF arm (UR5 parameters) moves in T = 4 s from a rest configuration to
another around one static sphere. Both scenarios of the paper are provided:

* ``"straight"`` — the arm stretched (elbow at 0) at start and goal;
* ``"bent"``     — the elbow bent at start and goal.

In each the shoulder pans by 2 rad. The sphere (radius 0.15 m bent, 0.3 m straight) is
centred 4 cm below a forearm point of the midway configuration, so the straight
joint-space interpolation from start to goal drives the forearm through it, and the
optimal arc over it touches the margin in both scenarios.

Collision points are fixed on the last three links that have extent — the forearm
(4 points from the elbow to the wrist) and the wrist links ``wrist_2_link`` (3 points)
and ``wrist_3_link`` (3 points up to the tool flange); ``wrist_1_link``'s short segment
joins the forearm's last point to wrist_2's first.
Every point must keep ``margin`` (the links' thickness) from the sphere at the nodes
1..N: ‖p_j(q_k) − c‖ − ρ − margin ≥ 0. Between nodes nothing is imposed (as in the
paper); :func:`optdyn.apps.clearance.clearances` checks every RK4 sub-step — the optima dip
below the margin by < 1 mm there and stay well clear of the sphere.

Discretisation: 20 intervals of 0.2 s, each integrated by 4 RK4 steps of
50 ms with the torque held (the paper's setting); ``intervals=80, substeps=1`` is the finer
variant. Cost, integrated over the horizon (weights in ``WEIGHTS``):

    ℓ(x, u) = ½·w_u‖u‖² + ½·w_v‖v‖²,   w_u = 1e-4, w_v = 1      (effort + velocity)

The velocity term is what keeps the task well posed: with effort alone the cheapest
motions swing joints through whole turns (the model's ±2π limits are not constraints)
and the solvers land in different, physically silly local optima. With it, IPOPT from
the paper's initial guess and DDP/iLQR from rest reach the same optimum.

No terminal cost: the goal is reached at rest by the terminal equality
x_N = (q_goal, 0). Torques are bounded by the model's effort limits. Initial guess (as in
the paper): joint positions interpolated linearly, zero velocities, controls = the
gravity-compensation torques RNEA(q, 0, 0) at those states.
"""
from __future__ import annotations

import numpy as np

import dynamics as dyn
from dynamics.models import ur5
from optdyn.constraints import SphereClearance, StateEquality
from optdyn.costs import ControlCost, StateCost
from optdyn.ocp.problem import Problem

HORIZON = 4.0
WEIGHTS = {"control": 1e-4, "velocity": 1.0}
MARGIN = 0.05

SCENARIOS = {
    "straight": ((-1.0, -0.6, 0.0, -1.0, -1.57, 0.0), (1.0, -0.4, 0.0, -1.0, -1.57, 0.0), 0.3),
    "bent": ((-1.0, -1.2, 1.6, -1.9, -1.57, 0.0), (1.0, -1.0, 1.4, -1.9, -1.57, 0.0), 0.15),
}
"""(q_start, q_goal (rad), sphere radius (m)) of each scenario."""

COLLISION_POINTS = (
    [("forearm_link", (0.0, 0.0, z)) for z in (0.1, 0.2, 0.3, 0.39225)]
    + [("wrist_2_link", (0.0, 0.0, z)) for z in (0.0, 0.0473, 0.09465)]
    + [("wrist_3_link", (0.0, y, 0.0)) for y in (0.0, 0.041, 0.0823)]
)
"""(frame, offset (3,) in that frame, m) of every collision point."""

OBSTACLE_POINT, OBSTACLE_SHIFT = 2, (0.0, 0.0, -0.04)
"""The sphere is centred OBSTACLE_SHIFT (world, m) from this collision point at the midway
configuration (shifted so that no point of the initial guess sits at the centre, where
the distance is not differentiable)."""


class ArmObstacleProblem(Problem):
    """:class:`~optdyn.ocp.problem.Problem` that also exposes the task's geometry.

    Attributes (besides the Problem's): ``scenario``, ``q_start``, ``q_goal`` (nq,),
    ``x_goal`` (nx,), ``obstacles`` [(center (3,), radius)], ``margin``,
    ``collision_points`` [(frame name, offset (3,))], ``weights``. These repeat the
    task for scripts; the viewer, plots and clearance checker read the constraints
    themselves (:mod:`optdyn.ocp.task`).
    """

    def __init__(self, *args, scenario: str, q_start, q_goal, obstacles, margin: float,
                 collision_points, weights: dict, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.scenario = scenario
        self.q_start, self.q_goal = np.array(q_start), np.array(q_goal)
        self.x_goal = np.concatenate([self.q_goal, np.zeros(self.model.nv)])
        self.obstacles = [(np.array(c, dtype=float), float(r)) for c, r in obstacles]
        self.margin = float(margin)
        self.collision_points = [(f, np.array(o, dtype=float)) for f, o in collision_points]
        self.weights = dict(weights)


def _count(n, name: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name}: expected an integer ≥ 1, got {n!r}")
    return int(n)


def obstacle_center(model: dyn.Model, q_start: np.ndarray, q_goal: np.ndarray) -> np.ndarray:
    """Sphere centre (3,): collision point ``OBSTACLE_POINT`` at the midway configuration
    plus ``OBSTACLE_SHIFT``. (The point's position comes from the batched point kinematics
    that the clearance constraint evaluates anyway: on a cold cache, a kernel of its own for
    this one evaluation would be compiled on the main job's critical path.)"""
    frame, offset = COLLISION_POINTS[OBSTACLE_POINT]
    q_mid = 0.5 * (q_start + q_goal)
    return dyn.batch.point_kinematics_batch(model, q_mid[None], [frame], [offset])[0][0, 0] + np.array(OBSTACLE_SHIFT)


def make(scenario: str = "bent", intervals: int = 20, substeps: int = 4,
         horizon: float = HORIZON) -> ArmObstacleProblem:
    """The obstacle task; ``scenario`` "bent" | "straight", grid ``intervals`` × ``substeps``.

    Intervals last horizon/intervals s (4 s / 20 = 0.2 s by default), each integrated by
    ``substeps`` RK4 steps. A shorter ``horizon`` gives small instances for tests.
    """
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario: expected one of {sorted(SCENARIOS)}, got {scenario!r}")
    N, m = _count(intervals, "intervals"), _count(substeps, "substeps")
    if not (isinstance(horizon, (int, float, np.floating)) and np.isfinite(horizon) and horizon > 0):
        raise ValueError(f"horizon: expected a duration > 0 s, got {horizon!r}")
    model = ur5()
    nv = model.nv
    q_start, q_goal, radius = SCENARIOS[scenario]
    q_start, q_goal = np.array(q_start), np.array(q_goal)
    x0 = np.concatenate([q_start, np.zeros(nv)])
    x_goal = np.concatenate([q_goal, np.zeros(nv)])
    center = obstacle_center(model, q_start, q_goal)

    s = np.linspace(0.0, 1.0, N + 1)[:, None]
    xs_init = np.hstack([(1 - s) * q_start + s * q_goal, np.zeros((N + 1, nv))])
    us_init = np.array([dyn.gravity_torques(model, x[:nv]) for x in xs_init[:-1]])

    w = WEIGHTS
    running = ControlCost(w["control"], nu=nv) + StateCost(np.r_[np.zeros(nv), np.full(nv, w["velocity"])])
    return ArmObstacleProblem(
        model, x0, N, float(horizon) / N, running, None, substeps=m, integrator="rk4",
        u_lower=-model.effort_limit, u_upper=model.effort_limit,
        path_constraints=[SphereClearance(model, COLLISION_POINTS, center, radius, MARGIN)],
        terminal_constraints=[StateEquality(x_goal)],
        xs_init=xs_init, us_init=us_init, name="arm-obstacle", done_at_end=True,
        params={"scenario": scenario, "intervals": N, "substeps": m, "horizon": float(horizon)},
        scenario=scenario, q_start=q_start, q_goal=q_goal, obstacles=[(center, radius)],
        margin=MARGIN, collision_points=COLLISION_POINTS, weights=w)
