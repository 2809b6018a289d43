"""A Franka Panda (example-robot-data) reaches a full 6-D pose and arrives at rest, within its
joint limits.

The hand's tool-centre point must reach a position *and* an orientation (a pose target,
``FramePlacementCost``: ½ w ‖log₆(T⁻¹ M(q))‖²) in one second, with the tool at rest at the
end (``FrameVelocityCost``, and the joints at rest: a terminal ``StateCost`` on v); ``JointLimits`` keeps every joint within its position and
velocity limits at every node (DDP by the augmented Lagrangian, IPOPT as bounds on its
variables). Without the limits the fast motion goes beyond them; with them velocity limits
are active. Writes ``panda_pose.npz`` (``optdyn show``/``plot`` rebuild the task
from it), ``panda_pose.html`` (pose target drawn as axes) and ``panda_pose.png``.

    .venv/bin/python examples/panda_pose.py [OUTPUT_DIR]
"""
import sys

import numpy as np

import dynamics as dyn
import optdyn
from optdyn.constraints import JointLimits
from optdyn.costs import ControlCost, FramePlacementCost, FrameVelocityCost, StateCost
from optdyn.ocp.problem import Problem
from panda_reach import panda, write_outputs

FRAME = "panda_hand_tcp"


def target_pose(model: dyn.Model) -> np.ndarray:
    """A pose of the tool (4, 4): where it is at another configuration, pointing down."""
    q = np.array([1.4, 0.4, 0.2, -1.6, 0.1, 2.0, 0.3, 0.02, 0.02])
    R, p = dyn.frame_placement(model, q, FRAME)
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, p
    return T


def make(model: dyn.Model, limits: bool = True, N: int = 25, dt: float = 0.04) -> Problem:
    """Reach target_pose() with the tool at rest in N·dt s; ``limits``: enforce the joint limits."""
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8, 0.02, 0.02])
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    g0 = dyn.gravity_torques(model, q0)
    T = target_pose(model)
    running = (StateCost(np.r_[np.full(model.nv, 1e-3), np.full(model.nv, 1e-2)], x0) + ControlCost(1e-3, g0)
               + FramePlacementCost(model, FRAME, T, 1.0))
    terminal = (FramePlacementCost(model, FRAME, T, 1e3) + FrameVelocityCost(model, FRAME, 1e2)
                + StateCost(np.r_[np.zeros(model.nv), np.full(model.nv, 10.0)], x0))
    return Problem(model, x0, N, dt, running, terminal, u_lower=-model.effort_limit, u_upper=model.effort_limit,
                   path_constraints=[JointLimits(model)] if limits else [], us_init=np.tile(g0, (N, 1)),
                   name="panda-pose")


def report(name: str, problem: Problem, result) -> None:
    """One line: status, cost, pose error at the end, the smallest margin to the joint limits."""
    model, xs = problem.model, result.xs
    R, p = dyn.frame_placement(model, xs[-1, : model.nq], FRAME)
    T = target_pose(model)
    angle = np.arccos(np.clip((np.trace(T[:3, :3].T @ R) - 1) / 2, -1, 1))
    margin = JointLimits(model).evaluate(xs[1:])[0].min()
    print(f"{name}: {result.status}, cost {result.cost:.6f}, position error {1e3 * np.linalg.norm(p - T[:3, 3]):.2f} mm,"
          f" angle error {np.degrees(angle):.3f} deg, final speed {np.abs(xs[-1, model.nq:]).max():.4f} rad/s,"
          f" smallest limit margin {margin:+.5f}")


def main(out: str = ".") -> None:
    model = panda()
    free = optdyn.solve(make(model, limits=False), "ddp", max_iter=300)
    report("ddp without limits", make(model, limits=False), free)
    problem = make(model)
    for solver in ("ddp", "ipopt"):
        result = optdyn.solve(problem, solver, max_iter=1000)
        report(solver, problem, result)
    write_outputs(result, out, "panda_pose")


if __name__ == "__main__":
    main(*sys.argv[1:2])
