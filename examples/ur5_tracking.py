"""Tracking a reference trajectory: the UR5's tool follows a circle, one reference per knot.

A residual's reference may vary along the horizon: ``FramePositionResidual`` with a target
of shape (N, 3) gives knot k its own point of a horizontal circle (radius 0.1 m, one turn in
2 s, starting where the tool is), under a pseudo-Huber activation (quadratic within 2 cm
of the path, linear beyond) with per-knot weights that grow over the first quarter of a
second, while the arm starting at rest gets up to speed. DDP and IPOPT solve it; the
script prints the tracking error.

    .venv/bin/python examples/ur5_tracking.py
"""
import numpy as np

import dynamics as dyn
import optdyn
from optdyn.costs import ControlCost, FramePositionResidual, PseudoHuber, ResidualCost, StateCost

model = dyn.models.ur5()
N, dt = 40, 0.05
q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
x0 = np.r_[q0, np.zeros(6)]
g0 = dyn.gravity_torques(model, q0)
start = dyn.frame_placement(model, q0, "tool0")[1]
center = start + np.array([0.0, 0.1, 0.0])
phase = 2 * np.pi * dt * np.arange(N) / (N * dt)
circle = center + 0.1 * np.stack([np.sin(phase), -np.cos(phase), np.zeros(N)], axis=1)  # starts at `start`
weights = 1e3 * np.minimum(1.0, (np.arange(N) + 1) * dt / 0.25)

track = ResidualCost(FramePositionResidual(model, "tool0", circle), PseudoHuber(3, delta=0.02), weights)
prob = optdyn.Problem(model, x0, N, dt, StateCost(np.r_[np.zeros(6), np.full(6, 1e-3)], x0)
                      + ControlCost(1e-4, g0) + track,
                      StateCost(np.r_[np.zeros(6), np.ones(6)], x0), us_init=np.tile(g0, (N, 1)), name="ur5-tracking")
for solver in ("ddp", "ipopt"):
    res = optdyn.solve(prob, solver)
    path = np.array([dyn.frame_placement(model, x[:6], "tool0")[1] for x in res.xs[:-1]])
    error = np.linalg.norm(path - circle, axis=1)
    print(f"{solver}: {res.status}, cost {res.cost:.6f}, tracking error rms {1e3 * np.sqrt(np.mean(error ** 2)):.2f} mm, "
          f"max {1e3 * error.max():.2f} mm")
