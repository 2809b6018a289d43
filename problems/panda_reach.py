"""Franka Panda reach: the hand to a Cartesian target from rest, with the torque box.

Robot: example-robot-data's Panda on a fixed base (nine joints: seven revolute, the two
prismatic fingers of tiny inertia); x0 = 0 at rest; N = 40 intervals of 50 ms, one RK4 step
each; torques boxed at the URDF's effort limits; no joint limits (q = 0 lies outside joint 4's
range, [−3.07, −0.07] rad: with ``JointLimits`` added, every solver stops short from this start,
and says why):

    running  ℓ   = ½·1e-2‖x − x0‖² + ½·1e-3‖u − g(q0)‖² + ½·10‖p_hand(q) − p*‖²   (× dt)
    terminal ℓ_N = ½·1e4‖p_hand(q) − p*‖²

with p_hand the origin of ``panda_hand`` and p* = ``target``. A hard task for Newton-type
solvers from the default guess (the gravity torques at rest): it has several local optima
(1.0853247, 1.0024794, 0.9454068, …), and which one a solver ends in depends on the model of
its early steps. The solvers it ships (measured: docs/benchmarks/solvers.md, "convergence") reach the
optimum 1.0024794 that IPOPT and Crocoddyl's BoxFDDP reach:

- DDP: the feasibility-driven form (:class:`optdyn.solvers.FDDP`: the costs' Gauss–Newton
  Hessians where DDP's exact model is not convex, the box once a full step is taken) — 56
  iterations (the default DDP: 152 to 1.0853247, whose exact cost Hessians lead there);
- iLQR: the feasibility-driven form (:class:`optdyn.solvers.FILQR`) — 66 (the default iLQR:
  no convergence in 300, at 1.0853);
- IPOPT: ``perturb_dec_fact=0.02`` — 113 (without it, on 2026-12-01: 236 with the library's
  defaults, whose NLP scaling leaves this objective in its units as on every task without
  contacts or constraint rows; 327 with IPOPT's own). After an iteration whose Hessian needed
  an inertia correction δ_w, IPOPT first tries κ_w⁻·δ_w at the next one (Wächter & Biegler
  2006, Algorithm IC; κ_w⁻ = 1/3 by default): a smaller κ_w⁻ drops the correction faster once
  the iterates leave the nonconvex stretch.
  Chosen on 30 Panda reaches (targets and horizons drawn at random), not on this one alone
  (docs/benchmarks/solvers.md, "The options the tasks ship").
"""
from __future__ import annotations

import numpy as np

from dynamics import gravity_torques
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.ocp.problem import Problem

from .robot_data import load_robot

TARGET = (0.4, 0.2, 0.5)
SOLVER_OPTIONS = {"ddp": {"solver": "fddp"}, "ilqr": {"solver": "filqr"},
                  "ipopt": {"perturb_dec_fact": 0.02}}


def make(N: int = 40, dt: float = 0.05, target=TARGET) -> Problem:
    """The Panda reach (module docstring); ``N``, ``dt``, ``target`` (3,) may be changed."""
    model = load_robot("panda_description/urdf/panda.urdf", "panda-reach", root_joint=None)
    x0 = np.zeros(model.nq + model.nv)
    g0 = gravity_torques(model, x0[: model.nq])
    running = StateCost(1e-2, x0) + ControlCost(1e-3, g0) + FramePositionCost(model, "panda_hand", target, 10.0)
    return Problem(model, x0, N, dt, running, FramePositionCost(model, "panda_hand", target, 1e4), substeps=1,
                   u_lower=-model.effort_limit, u_upper=model.effort_limit, name="panda-reach",
                   params={"N": N, "dt": dt, "target": tuple(float(t) for t in target)},
                   solver_options=SOLVER_OPTIONS, done_at_end=True)
