"""Write and solve your own optimal-control problem in a few lines.

A UR5 moves its tool to a point while keeping its wrist and tool outside a sphere, with
torque limits, ending at rest (terminal equality). The same problem is solved by DDP and
by iLQR (augmented Lagrangian for the constraints), and the results are summarised.

    .venv/bin/python examples/custom_ocp.py
"""
import numpy as np

import dynamics as dyn
from optdyn.constraints import SphereClearance, StateEquality
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.ocp.problem import Problem
from optdyn.solvers.solve import solve

model = dyn.models.ur5()
q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
x0 = np.concatenate([q0, np.zeros(6)])
g0 = dyn.gravity_torques(model, q0)
target = np.array([0.4, 0.3, 0.4])

# ℓ(x, u) = ½·1e-2‖v‖² + ½·1e-3‖u − g(q0)‖² + ½·10‖p_tool0 − target‖²  (integrated over each interval)
running = (StateCost(np.r_[np.zeros(6), np.full(6, 1e-2)]) + ControlCost(1e-3, g0)
           + FramePositionCost(model, "tool0", target, 10.0))
terminal = FramePositionCost(model, "tool0", target, 1e4)
obstacle = SphereClearance(model, [("wrist_2_link", (0, 0, 0)), ("tool0", (0, 0, 0))],
                           center=(0.47, 0.25, 0.36), radius=0.05, margin=0.02)
at_rest = StateEquality(np.zeros(6), indices=range(6, 12), nx=12)

prob = Problem(model, x0, N=40, dt=0.05, running_cost=running, terminal_cost=terminal,
               substeps=2, u_lower=-model.effort_limit, u_upper=model.effort_limit,
               path_constraints=[obstacle], terminal_constraints=[at_rest],
               us_init=np.tile(g0, (40, 1)), name="ur5-custom")

for solver in ("ddp", "ilqr"):
    res = solve(prob, solver, max_iter=500)
    p_end = dyn.frame_placement(model, res.xs[-1, :6], "tool0")[1]
    print(f"{solver:>4}: {res.status}, {res.iterations} iterations, cost {res.cost:.6f}, "
          f"{res.wall_time:.2f} s; tool0 error {np.linalg.norm(p_end - target) * 1e3:.2f} mm, "
          f"min clearance {obstacle.clearance(res.xs[1:]).min() * 1e3:+.3f} mm, "
          f"max violation {prob.violation(res.xs, res.us):.1e}")
