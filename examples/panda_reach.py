"""Your own robot, end to end: a Franka Panda (from example-robot-data) reaches past a sphere.

Loads the Panda URDF with its meshes (``package://`` URIs resolved by ``package_dirs``),
writes the task from scratch — reach a point with the hand's tool-centre point, keep the
hand and the forearm clear of a sphere, torque limits —, solves it with DDP and writes

* ``panda_reach.npz``   the result (it stores the URDF path and the task, so
  ``optdyn show panda_reach.npz --html panda.html`` and ``optdyn plot panda_reach.npz``
  work on it later);
* ``panda_reach.html``  the offline 3-D replay (meshes, obstacle, target, path);
* ``panda_reach.png``   joint trajectories with their limits, clearance and convergence.

    .venv/bin/python examples/panda_reach.py [OUTPUT_DIR]
"""
import os
import sys

import numpy as np
import example_robot_data

import dynamics as dyn
import optdyn
from optdyn.constraints import SphereClearance
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.ocp.problem import Problem

TARGET = np.array([0.35, -0.45, 0.35])
OBSTACLE = (np.array([0.45, -0.25, 0.4]), 0.07)  # (centre, radius): across the straight line to the target


def panda() -> dyn.Model:
    """The Panda with its visual meshes: package://example-robot-data/robots/... URIs are
    found in the directory two levels above example-robot-data's ``robots`` directory."""
    robots = example_robot_data.getModelPath("panda_description/urdf/panda.urdf")
    return dyn.load_urdf(os.path.join(robots, "panda_description/urdf/panda.urdf"),
                         package_dirs=[os.path.dirname(os.path.dirname(robots))])


def make(model: dyn.Model, N: int = 40, dt: float = 0.05) -> Problem:
    """Reach TARGET with panda_hand_tcp in N·dt s, hand and forearm clear of OBSTACLE."""
    q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8, 0.02, 0.02])
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    g0 = dyn.gravity_torques(model, q0)
    running = (StateCost(np.r_[np.zeros(model.nv), np.full(model.nv, 1e-1)]) + ControlCost(1e-3, g0)
               + FramePositionCost(model, "panda_hand_tcp", TARGET, 10.0))
    terminal = FramePositionCost(model, "panda_hand_tcp", TARGET, 1e4)
    points = [("panda_hand_tcp", (0.0, 0.0, 0.0)), ("panda_hand", (0.0, 0.0, 0.0)), ("panda_link7", (0.0, 0.0, 0.0))]
    clearance = SphereClearance(model, points, OBSTACLE[0], OBSTACLE[1], margin=0.03)
    return Problem(model, x0, N, dt, running, terminal, substeps=1,
                   u_lower=-model.effort_limit, u_upper=model.effort_limit,
                   path_constraints=[clearance], us_init=np.tile(g0, (N, 1)), name="panda-past-sphere")


def write_outputs(result, out: str, stem: str) -> None:
    """``stem``.npz (the result), .html (the 3-D replay), .png (the plots) in directory ``out``."""
    for name, write in (("npz", optdyn.save_result), ("html", optdyn.save_html), ("png", optdyn.plot_trajectory)):
        path = os.path.join(out, f"{stem}.{name}")
        write(result, path)
        print(f"wrote {path}")


def main(out: str = ".") -> None:
    model = panda()
    problem = make(model)
    result = optdyn.solve(problem, "ddp", max_iter=300)
    print(result)
    write_outputs(result, out, "panda_reach")


if __name__ == "__main__":
    main(*sys.argv[1:2])
