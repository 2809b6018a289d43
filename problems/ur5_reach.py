"""UR5 reaching: bring frame ``tool0`` to a Cartesian target from rest.

The speed reference for DDP and iLQR. From rest at q0 = (0, −1.2, 1.5, −0.3, 1.57, 0),
RK4 with dt = 0.05 s, N = 80 intervals of one step (T = 4 s), x = [q; v], u = τ:

    running  ℓ   = ½·1e-2‖x − x0‖² + ½·1e-4‖u − g(q0)‖² + ½·1e2‖p_tool0(q) − p*‖²   (× dt)
    terminal ℓ_N = ½·1‖x − x0‖² + ½·1e4‖p_tool0(q) − p*‖²

with p* = (0.4, 0.3, 0.4) m and g the gravity torques. Initial guess: xs = x0 (every
node), us = g(q0) (which holds the arm at rest). No constraints, no torque limits.
"""
from __future__ import annotations

import numpy as np

import dynamics as dyn
from dynamics.models import ur5
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.ocp.problem import Problem

Q0 = (0.0, -1.2, 1.5, -0.3, 1.57, 0.0)
TARGET = (0.4, 0.3, 0.4)
WEIGHTS = {"state": 1e-2, "control": 1e-4, "position": 1e2, "terminal_state": 1.0, "terminal_position": 1e4}


def make(N: int = 80, dt: float = 0.05, target=TARGET) -> Problem:
    """The reaching benchmark; ``N``, ``dt``, ``target`` (3,) may be changed for experiments."""
    model = ur5()
    q0 = np.array(Q0)
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    g0 = dyn.gravity_torques(model, q0)
    w = WEIGHTS
    running = (StateCost(w["state"], x0) + ControlCost(w["control"], g0)
               + FramePositionCost(model, "tool0", target, w["position"]))
    terminal = StateCost(w["terminal_state"], x0) + FramePositionCost(model, "tool0", target, w["terminal_position"])
    return Problem(model, x0, N, dt, running, terminal, substeps=1, integrator="rk4",
                   xs_init=np.tile(x0, (N + 1, 1)), us_init=np.tile(g0, (N, 1)), name="ur5-reach",
                   params={"N": N, "dt": dt, "target": tuple(float(t) for t in target)})
