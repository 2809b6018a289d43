"""An arm of example-robot-data brings its tool to a 6D pose and stops there, within its torque box.

The task a new user writes for a robot the project has never seen: the robot's URDF as
example-robot-data ships it (a mobile or two-armed robot with all but one arm locked), one
frame as the tool, a target pose drawn at random, the same weights for every robot:

    running  ℓ   = ½·1e-2‖x ⊖ x0‖² + ½·1e-3‖u − g(q0)‖² + ½·10‖log₆(T*⁻¹ M_tool(q))‖²   (× dt)
    terminal ℓ_N = ½·1e4‖log₆(T*⁻¹ M_tool(q))‖² + ½·1e2‖v‖²

N = 40 intervals of 50 ms, one RK4 step each; torques boxed at the URDF's effort limits
(unbounded where it gives none); no joint limits. From rest at q0: each joint at 0 moved
inside the middle 80 % of its position range where the URDF bounds it. The target T* is the
tool's placement at a configuration q* drawn uniformly within 1 rad of q0 and inside the
middle 80 % of every bounded range (seeded by ``seed``), redrawn until the gravity torques
at q* are within 80 % of the effort limits, so that the arm can hold it at rest. Initial
guess: the problem's default, rest at x0 with the gravity torques g(q0).
"""
from __future__ import annotations

import numpy as np

from dynamics import frame_placement, gravity_torques
from optdyn.costs import ControlCost, FramePlacementCost, StateCost
from optdyn.ocp.problem import Problem

from .robot_data import load_robot

ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf", "panda_hand", ()),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", "tool0", ()),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", "tool0", ()),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", "tool0", ()),
    "kinova": ("kinova_description/robots/kinova.urdf", "j2s6s200_end_effector", ()),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", "link_eef", ()),
    "z1": ("z1_description/urdf/z1.urdf", "gripperStator", ()),
    "bravo7": ("bravo7_description/urdf/bravo7_no_ee.urdf", "end_effector_ball", ()),
    "so101": ("so_arm_description/urdf/so101.urdf", "gripper_frame_link", ()),
    "tiago": ("tiago_description/robots/tiago_no_hand.urdf", "arm_tool_link",
              ("wheel_right_joint", "wheel_left_joint", "torso_lift_joint", "head_1_joint", "head_2_joint")),
}
"""robot name: (URDF in example-robot-data, tool frame, joints locked at 0)."""
WEIGHTS = {"state": 1e-2, "control": 1e-3, "pose": 10.0, "terminal_pose": 1e4, "terminal_velocity": 1e2}
REACH = 1.0
"""The largest joint displacement (rad or m) from q0 to the target's configuration q*."""


def _middle(model) -> tuple[np.ndarray, np.ndarray]:
    """The middle 80 % of every joint's position range (±inf where the URDF bounds none)."""
    lo, hi = np.asarray(model.lower_limit, float), np.asarray(model.upper_limit, float)
    margin = np.where(np.isfinite(hi - lo), 0.1 * (hi - lo), 0.0)
    return lo + margin, hi - margin


def rest_configuration(model) -> np.ndarray:
    """q0: each joint at 0 moved inside the middle 80 % of its range."""
    lo, hi = _middle(model)
    return np.clip(np.zeros(model.nq), lo, hi)


def target_configuration(model, q0: np.ndarray, seed: int) -> np.ndarray:
    """q* (module docstring): uniform within :data:`REACH` of q0 and the middle of the ranges,
    with the gravity torques within 80 % of the effort limits."""
    lo, hi = _middle(model)
    lo, hi = np.maximum(lo, q0 - REACH), np.minimum(hi, q0 + REACH)
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        q = rng.uniform(lo, hi)
        if np.all(np.abs(gravity_torques(model, q)) <= 0.8 * model.effort_limit):
            return q
    raise ValueError(f"seed: no configuration the arm can hold at rest found in 1000 draws (seed {seed})")


def target_placement(model, tool: str, q0: np.ndarray, seed: int) -> np.ndarray:
    """T* (4, 4): the placement of ``tool`` at :func:`target_configuration`."""
    R, p = frame_placement(model, target_configuration(model, q0, seed), tool)
    target = np.eye(4)
    target[:3, :3], target[:3, 3] = R, p
    return target


def make(scenario: str = "panda", seed: int = 0, N: int = 40, dt: float = 0.05) -> Problem:
    """The pose reach (module docstring) of the robot ``scenario`` (a key of :data:`ROBOTS`)
    to the target of ``seed``; ``N`` and ``dt`` may be changed."""
    if scenario not in ROBOTS:
        raise ValueError(f"scenario: expected one of {', '.join(ROBOTS)}, got {scenario!r}")
    urdf, tool, locked = ROBOTS[scenario]
    model = load_robot(urdf, "arm-pose", root_joint=None, locked_joints={j: 0.0 for j in locked} or None)
    q0 = rest_configuration(model)
    x0 = np.concatenate([q0, np.zeros(model.nv)])
    target = target_placement(model, tool, q0, seed)
    w = WEIGHTS
    running = (StateCost(w["state"], x0, model=model) + ControlCost(w["control"], gravity_torques(model, q0))
               + FramePlacementCost(model, tool, target, w["pose"]))
    at_rest = np.concatenate([np.zeros(model.nv), np.full(model.nv, w["terminal_velocity"])])
    terminal = FramePlacementCost(model, tool, target, w["terminal_pose"]) + StateCost(at_rest, x0, model=model)
    return Problem(model, x0, N, dt, running, terminal, substeps=1, u_lower=-model.effort_limit,
                   u_upper=model.effort_limit, name="arm-pose",
                   params={"scenario": scenario, "seed": seed, "N": N, "dt": dt}, done_at_end=True)
