"""Pendulum and double-pendulum swing-up: from hanging down at rest to upright at rest.

Models: :func:`dynamics.models.pendulum` (1 kg point mass on a 1 m rod) and
:func:`dynamics.models.double_pendulum` (two 1 kg masses, 1 m rods), q = 0 hanging down,
every joint actuated. RK4, one step per interval.

    running  ℓ   = ½·w_u‖u‖² + ½·w_x‖x − x*‖²      (w_u = 1e-2, w_x = 1e-3; × dt)
    goal     x*  = (π, 0) resp. (π, 0, 0, 0)  (upright, at rest)

``terminal="constraint"`` (default) imposes x_N = x* as a terminal equality;
``terminal="cost"`` adds ½·1e3‖x_N − x*‖² instead. ``u_max`` bounds |u_i| (the single
pendulum's default 5 N·m is about half the 9.81 N·m needed to lift it statically, so it
has to pump; the double pendulum is unbounded by default). Initial guess: x0 at every
node, zero torques.
"""
from __future__ import annotations

import numpy as np

from dynamics.models import double_pendulum, pendulum
from optdyn.constraints import StateEquality
from optdyn.costs import ControlCost, StateCost
from optdyn.ocp.problem import Problem

WEIGHTS = {"control": 1e-2, "state": 1e-3, "terminal": 1e3}


def _swing_up(model, name: str, N: int, dt: float, terminal: str, u_max: float) -> Problem:
    if terminal not in ("constraint", "cost"):
        raise ValueError(f"terminal: expected 'constraint' or 'cost', got {terminal!r}")
    if not (u_max > 0):
        raise ValueError(f"u_max: expected a torque bound > 0 (inf for none), got {u_max!r}")
    nv = model.nv
    x0 = np.zeros(2 * nv)
    goal = np.zeros(2 * nv)
    goal[0] = np.pi
    w = WEIGHTS
    running = ControlCost(w["control"], nu=nv) + StateCost(w["state"], goal)
    kw = {"terminal_constraints": [StateEquality(goal)]} if terminal == "constraint" else {}
    terminal_cost = StateCost(w["terminal"], goal) if terminal == "cost" else None
    return Problem(model, x0, N, dt, running, terminal_cost, substeps=1, integrator="rk4",
                   u_lower=np.full(nv, -u_max), u_upper=np.full(nv, u_max), name=name,
                   params={"N": N, "dt": dt, "terminal": terminal, "u_max": u_max}, done_at_end=True, **kw)


def make_pendulum(N: int = 60, dt: float = 0.05, terminal: str = "constraint", u_max: float = 5.0) -> Problem:
    """Single-pendulum swing-up in N·dt = 3 s with |u| ≤ u_max."""
    return _swing_up(pendulum(), "pendulum", N, dt, terminal, u_max)


def make_double_pendulum(N: int = 50, dt: float = 0.05, terminal: str = "constraint",
                         u_max: float = np.inf) -> Problem:
    """Fully actuated double-pendulum swing-up in N·dt = 2.5 s."""
    return _swing_up(double_pendulum(), "double-pendulum", N, dt, terminal, u_max)
