"""Space manipulator: a UR5 on a free-floating 300 kg satellite reaches a target at rest.

Robot :func:`dynamics.models.space_manipulator` (free-flyer ``root_joint``, zero gravity);
x = [q; v] with q = (satellite position, quaternion, six arm angles), nx = 25, ndx = 24;
only the arm is actuated (u = the six arm torques, the satellite has no thrusters). From
rest at q0 = (0, 0, 0, identity, Q_ARM), bring ``tool0`` to ``target`` (m, world frame)
and stop there within T = N·dt (3 s: 30 intervals of 0.1 s, one RK4 step each):

    running  ℓ   = ½·1e-2‖u‖² + ½ Σ_i w_i (x ⊖ x0)_i²           (× dt)
    terminal ℓ_N = ½·1e4‖p_tool0(q) − p*‖² + ½·10‖v‖²

with state weights w = 0 on the satellite's pose (it drifts freely: position and
attitude are whatever the reaction of the arm makes them), 1e-3 on the arm angles,
1e-1 on the satellite's and 1e-2 on the arm's velocities. Nothing external acts, so the
spatial momentum of the whole system stays zero along every trajectory of the dynamics.

``attitude_bound`` (rad) adds the path constraint ‖log(R_0⁻¹ R_sat)‖ ≤ attitude_bound at
every node (:class:`optdyn.constraints.OrientationBound`): the satellite may not turn
more than that from its initial attitude (the free solution turns it by about 0.057 rad).
A tight bound makes the task markedly non-convex: from rest, IPOPT and the
augmented-Lagrangian DDP/iLQR may stop in different local optima (BENCHMARKS.md).
Initial guess: rest (xs = x0, us = 0).

Solver options: the defaults, but for IPOPT with ``attitude_bound``, which the task solves
without IPOPT's gradient-based NLP scaling (``nlp_scaling_method="none"``). With that scaling
IPOPT stops in a local optimum 1.4–3.3× as costly on every active bound measured (0.01–0.05
rad; at 0.02: 0.2052 against 0.0617, DDP 0.0775); without it, within 0.05 % of DDP's optimum
or below it, but at 0.01 (0.156 against DDP's 0.121 and the scaled IPOPT's 0.332). Without
the bound the defaults reach the same optimum as the options the task shipped before (costs
within 1e-8, relative): iLQR in 18 iterations (FILQR 9), IPOPT in 15 (its objective left in
its units, the library's default on a task without constraint rows or contacts; 74 scaled by
IPOPT's default bound), DDP 23; docs/benchmarks/solvers.md, "The options the tasks ship".

``station=True`` is the station-keeping task: hold ``tool0`` at its station relative to the
satellite, M* = M_sat⁻¹ M_tool0 at the arm angles ``Q_STATION`` (where the reach above
leaves the arm at T; any satellite pose), and damp the arm:

    running  ℓ   = ½·1e-2‖u‖² + ½·1e2‖log₆(M*⁻¹ M_sat(q)⁻¹ M_tool0(q))‖²
                   + ½·1e-3‖q_arm − Q_STATION‖² + ½·1e-1‖v_arm‖²     (× dt)
    terminal ℓ_N = ½·1e4‖log₆(M*⁻¹ M_sat⁻¹ M_tool0)‖² + ½·10‖v_arm‖²

(:class:`optdyn.ocp.relative_residuals.RelativePlacementCost`). Nothing weighs the
satellite's pose or velocity: after a push the system keeps the push's momentum, which the
arm cannot cancel, so a task in inertial coordinates (the reach's) cannot be held for long,
while one relative to the satellite can, for ever, under a receding horizon (MPC;
BENCHMARKS.md, "Model predictive control in closed loop").
"""
from __future__ import annotations

import numpy as np

from dynamics.models import space_manipulator
from optdyn.constraints import OrientationBound
from optdyn.costs import ControlCost, FramePositionCost, RelativePlacementCost, StateCost
from optdyn.ocp.problem import Problem
from optdyn.ocp.relative_residuals import RelativeMotion

Q_ARM = (0.0, -1.2, 1.5, -0.3, 1.57, 0.0)
TARGET = (0.3, 0.5, 1.0)
BOUNDED_OPTIONS = {"ipopt": {"nlp_scaling_method": "none"}}
"""The solver options of the task with ``attitude_bound`` (none without it; module docstring)."""
Q_STATION = (0.9511, -1.4336, 1.3125, -0.3254, 1.4839, -0.0223)
"""The arm angles where the reach (default make(), DDP) ends at T, to 1e-4 rad (checked by
tests/test_station_keeping.py): the station-keeping task's station."""
WEIGHTS = {"control": 1e-2, "arm": 1e-3, "base_velocity": 1e-1, "arm_velocity": 1e-2,
           "terminal_position": 1e4, "terminal_velocity": 10.0}
STATION_WEIGHTS = {"control": 1e-2, "station": 1e2, "arm": 1e-3, "arm_velocity": 1e-1,
                   "terminal_station": 1e4, "terminal_velocity": 10.0}


def make(N: int = 30, dt: float = 0.1, target=TARGET, attitude_bound: float | None = None,
         station: bool = False) -> Problem:
    """The space-manipulator reach; ``attitude_bound`` (rad, None = free attitude) bounds
    the satellite's rotation from its initial attitude at every node; ``station`` makes it
    the station-keeping task (module docstring; it takes no ``target``)."""
    if not isinstance(station, (bool, np.bool_)):
        raise ValueError(f"station: expected True or False, got {station!r}")
    model = space_manipulator()
    q0 = np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], Q_ARM])
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    if station:
        if np.shape(target) != (3,) or not np.array_equal(np.asarray(target, dtype=float), TARGET):
            raise ValueError(f"target: the station-keeping task holds tool0 relative to the satellite and takes "
                             f"no inertial target, got {target!r}")
        running, terminal = _station_costs(model, q0)
    else:
        running, terminal = _reach_costs(model, x0, target)
    path = [] if attitude_bound is None else [OrientationBound(model, "root_joint", q0, attitude_bound)]
    return Problem(model, x0, N, dt, running, terminal, substeps=1, integrator="rk4", path_constraints=path,
                   us_init=np.zeros((N, 6)), name="space-manipulator",
                   params={"N": N, "dt": dt, "target": tuple(float(t) for t in target),
                           "attitude_bound": attitude_bound, "station": bool(station)},
                   solver_options=None if attitude_bound is None else BOUNDED_OPTIONS,
                   done_at_end=not station)  # the reach at T; the station held from then on


def _reach_costs(model, x0: np.ndarray, target):
    """(running, terminal) costs of the reach to ``target`` (module docstring)."""
    w = WEIGHTS
    weights = np.concatenate([np.zeros(6), np.full(6, w["arm"]), np.full(6, w["base_velocity"]),
                              np.full(6, w["arm_velocity"])])
    running = ControlCost(w["control"], np.zeros(6)) + StateCost(weights, x0, model=model)
    at_rest = np.concatenate([np.zeros(model.nv), np.full(model.nv, w["terminal_velocity"])])
    terminal = (FramePositionCost(model, "tool0", target, w["terminal_position"])
                + StateCost(at_rest, x0, model=model))
    return running, terminal


def station_placement(model) -> np.ndarray:
    """M* (4, 4): the placement of tool0 in the satellite's frame at the arm angles Q_STATION."""
    x = np.concatenate([[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], Q_STATION, np.zeros(model.nv)])
    R, p = (a[0] for a in RelativeMotion(model, "tool0", "satellite").pose(x[None])[:2])
    M = np.eye(4)
    M[:3, :3], M[:3, 3] = R, p
    return M


def _station_costs(model, q0: np.ndarray):
    """(running, terminal) costs of the station-keeping task (module docstring): nothing on
    the satellite's pose or velocity."""
    w, station = STATION_WEIGHTS, station_placement(model)
    x_station = np.concatenate([q0[:7], Q_STATION, np.zeros(model.nv)])
    weights = np.concatenate([np.zeros(6), np.full(6, w["arm"]), np.zeros(6), np.full(6, w["arm_velocity"])])
    at_rest = np.concatenate([np.zeros(18), np.full(6, w["terminal_velocity"])])
    running = (ControlCost(w["control"], np.zeros(6)) + StateCost(weights, x_station, model=model)
               + RelativePlacementCost(model, "tool0", "satellite", station, w["station"]))
    terminal = (RelativePlacementCost(model, "tool0", "satellite", station, w["terminal_station"])
                + StateCost(at_rest, x_station, model=model))
    return running, terminal
