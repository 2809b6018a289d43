"""A UR5 presses its tool on a horizontal table with a prescribed force while sliding along it.

The table (height of ``tool0`` at q0) pushes up on the tool with the normal force
F_n = 20 N (the tool pushes down with 20 N): a known external wrench w = [0, 0, 20; 0, 0, 0]
on the robot at frame ``tool0``, world-aligned, moment about the tool origin. The tool
slides 0.15 m along x on the table in 2 s and stops, keeping its orientation (costs: tool
position towards the end point, its height on the table, joints towards the inverse-kinematics solution there,
torques near the static ones g(q) − Jᵀw, velocities; DDP).

The wrench enters the dynamics as f_ext (Problem(..., f_ext=...)): per interval, in the
body frame of ``wrist_3_link`` (Pinocchio's fext convention), converted from the world
wrench at reference configurations by :func:`optdyn.ocp.problem.frame_wrenches` — here the
planned path, joint-space interpolation from q0 to the inverse-kinematics solution at the
end point. Such a force is body-fixed: it is the world wrench only where q equals the
reference, and turns with the tool elsewhere — which is what the solver's derivatives
assume. So the wrench is then re-converted on the solution's own path and the problem
re-solved from that solution; the printed wrench errors are how far the applied wrench is
from [0, 0, 20; 0, 0, 0] along each solution.

What a contact model would add later: the normal force as a decision variable (not a
given), with complementarity (F_n ≥ 0, gap ≥ 0, F_n · gap = 0) or a stiff contact law,
the tool held on the table by a holonomic constraint instead of a cost, friction forces
inside the friction cone ‖F_t‖ ≤ μ F_n (here friction is ignored: the tangential force is
zero), and the wrench depending on q through the contact point (world-fixed direction).

    .venv/bin/python examples/ur5_press.py
"""
import numpy as np

import dynamics as dyn
from optdyn.costs import ControlCost, Cost, FramePositionCost, PointSet, StateCost
from optdyn.ocp.problem import Problem, frame_wrenches
from optdyn.solvers.solve import solve

N, DT, FN = 40, 0.05, 20.0
model = dyn.models.ur5()
q0 = np.array([0.0, -1.2, 1.5, -1.87, -1.57, 0.0])   # tool pointing down at the table
x0 = np.concatenate([q0, np.zeros(6)])
wrench = np.array([0.0, 0.0, FN, 0.0, 0.0, 0.0])     # on the robot: the table pushes up
R0, start = dyn.frame_placement(model, q0, "tool0")
end = start + np.array([0.15, 0.0, 0.0])              # on the table (same height)


def inverse_kinematics(q: np.ndarray, p_goal: np.ndarray, R_goal: np.ndarray) -> np.ndarray:
    """q with tool0 at (p_goal, R_goal): Gauss–Newton on the world-aligned frame Jacobian."""
    for _ in range(50):
        R, p = dyn.frame_placement(model, q, "tool0")
        E = R_goal @ R.T
        err = np.r_[p_goal - p, 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])]
        if np.max(np.abs(err)) < 1e-12:
            break
        q = q + np.linalg.lstsq(dyn.frame_jacobian(model, q, "tool0"), err, rcond=None)[0]
    return q


q_end = inverse_kinematics(q0, end, R0)               # same tool orientation at the end point
q_ref = np.array([q0 + (q_end - q0) * k / N for k in range(N)])   # planned path, interval starts


def static_torques(q: np.ndarray) -> np.ndarray:
    """τ holding q at rest against the table: g(q) − Jᵀw."""
    return dyn.gravity_torques(model, q) - dyn.frame_jacobian(model, q, "tool0").T @ wrench


class TableHeightCost(Cost):
    """½ w (z_tool0(q) − z_table)²: keeps the tool on the table (a cost, not a contact)."""

    def __init__(self, z_table: float, weight: float) -> None:
        self.points, self.z, self.w = PointSet(model, [("tool0", (0.0, 0.0, 0.0))]), z_table, weight
        self.nx, self.nu = 12, 6

    def evaluate(self, xs, us):
        K = xs.shape[0]
        p, J, H = self.points.kinematics(xs[:, :6])
        e, Jz, Hz = p[:, 0, 2] - self.z, J[:, 0, 2], H[:, 0, 2]
        lx, lxx = np.zeros((K, 12)), np.zeros((K, 12, 12))
        lx[:, :6] = self.w * e[:, None] * Jz
        lxx[:, :6, :6] = self.w * (Jz[:, :, None] * Jz[:, None, :] + e[:, None, None] * Hz)
        return (0.5 * self.w * e ** 2, lx, np.zeros((K, 6)), lxx, np.zeros((K, 6, 12)), np.zeros((K, 6, 6)))


x_end = np.r_[q_end, np.zeros(6)]
running = (StateCost(np.r_[np.full(6, 1e-1), np.full(6, 1.0)], x_end) + ControlCost(1e-3, static_torques(q0))
           + FramePositionCost(model, "tool0", end, 1e1) + TableHeightCost(start[2], 1e5))
terminal = StateCost(np.r_[np.full(6, 1e2), np.full(6, 1.0)], x_end) + FramePositionCost(model, "tool0", end, 1e4)


def press_problem(q_ref: np.ndarray) -> Problem:
    """The task with the table's wrench converted to f_ext at the configurations q_ref (N, nq)."""
    return Problem(model, x0, N, DT, running, terminal, substeps=1,
                   f_ext=frame_wrenches(model, "tool0", wrench, q_ref),
                   us_init=np.tile(static_torques(q0), (N, 1)), name="ur5-press")


def world_wrench_error(prob: Problem, xs: np.ndarray) -> float:
    """Largest |applied world wrench − w| along xs: the body-fixed f_ext seen from the world
    (force R f, moment about the tool origin R n + (p_body − p_tool) × R f)."""
    tool = model.frame("tool0")
    err = 0.0
    for k in range(N):
        R_tool, p_tool = dyn.frame_placement(model, xs[k, :6], "tool0")
        R = R_tool @ tool.placement[:3, :3].T            # the body's joint frame
        p = p_tool - R @ tool.placement[:3, 3]
        f, n = prob.f_ext[k, tool.body, :3], prob.f_ext[k, tool.body, 3:]
        applied = np.r_[R @ f, R @ n + np.cross(p - p_tool, R @ f)]
        err = max(err, float(np.max(np.abs(applied - wrench))))
    return err


planned = solve(press_problem(q_ref), "ddp", max_iter=200)
prob = press_problem(planned.xs[:-1, :6])        # re-converted on the solution's own path
res = solve(prob, "ddp", init=planned, max_iter=200)
free = solve(Problem(model, x0, N, DT, running, terminal, substeps=1,
                     us_init=np.tile(dyn.gravity_torques(model, q0), (N, 1))), "ddp", max_iter=200)

heights = np.array([dyn.frame_placement(model, x[:6], "tool0")[1][2] for x in res.xs]) - start[2]
for name, r in (("planned path", planned), ("first solution's path", res)):
    print(f"ddp, wrench converted on the {name}: {r.status}, {r.iterations} iterations, cost {r.cost:.6f}")
print(f"tool end error {np.linalg.norm(dyn.frame_placement(model, res.xs[-1, :6], 'tool0')[1] - end) * 1e3:.2f} mm, "
      f"largest height off the table {np.max(np.abs(heights)) * 1e3:.2f} mm")
print(f"applied wrench vs the prescribed one along the path: max error {world_wrench_error(prob, res.xs):.2e} "
      f"(converted on the planned path: {world_wrench_error(press_problem(q_ref), planned.xs):.2e})")
print(f"final torque − static g(q) − Jᵀw: {np.max(np.abs(res.us[-1] - static_torques(res.xs[-1, :6]))):.3f} N·m; "
      f"torques with the force − without: up to {np.max(np.abs(res.us - free.us)):.2f} N·m")
