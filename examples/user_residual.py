"""A term of your own: a residual written in NumPy, checked, then used as a path constraint.

The tool of a UR5 reaches a point while staying above a table at z = 0.25 m (it starts
higher, the point is lower: the constraint is active at the end). The height residual
r(x) = z_tool(q) − 0.25 and its Jacobian are written by hand from the frame
Jacobian; no Hessian is given, so differences of the Jacobian supply it (the solver's
message says so). ``optdyn.check_derivatives`` compares the hand-written Jacobian with
differences before solving.
"""
import numpy as np

import dynamics as dyn
import optdyn
from optdyn.constraints import ResidualConstraint
from optdyn.costs import ControlCost, FramePositionCost, StateCost

model = dyn.models.ur5()
TABLE = 0.25


def height(x, u):
    """r (1,): the tool's height above the table."""
    return dyn.frame_placement(model, x[:6], "tool0")[1][2:] - TABLE


def height_jacobian(x, u):
    """(r_x (1, 12), r_u (1, 0)): the z row of the tool's world-aligned Jacobian; v does not enter."""
    rx = np.zeros((1, 12))
    rx[0, :6] = dyn.frame_jacobian(model, x[:6], "tool0")[2]
    return rx, np.zeros((1, 0))


above = optdyn.UserResidual(model, 1, height, height_jacobian, name="tool height")
q0 = np.array([0.0, -1.2, 1.5, -0.3, 1.57, 0.0])
x0 = np.r_[q0, np.zeros(6)]
error = optdyn.check_derivatives(above, x0 + 0.1)
print(f"largest relative error of the hand-written derivatives: {error:.1e}")

g0 = dyn.gravity_torques(model, q0)
prob = optdyn.Problem(model, x0, N=30, dt=0.05,
                      running_cost=StateCost(1e-2, x0) + ControlCost(1e-3, g0)
                      + FramePositionCost(model, "tool0", (0.5, 0.2, 0.2), 1e2),
                      terminal_cost=FramePositionCost(model, "tool0", (0.5, 0.2, 0.2), 1e4),
                      path_constraints=[ResidualConstraint(above, lower=0.0)], us_init=np.tile(g0, (30, 1)))
for solver in ("ddp", "ipopt"):
    res = optdyn.solve(prob, solver)
    z = min(height(x, None)[0] for x in res.xs[1:]) + TABLE  # the path constraint holds at nodes 1..N
    print(f"{solver}: {res.status}, cost {res.cost:.6f}, lowest tool height {z:.4f} m; {res.message}")
