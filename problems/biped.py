"""A biped walks forward on flat ground, on two 6D soles, with contact phases and impulses —
by default Talos' legs.

Robot: any model on a free-flyer root (``model=``), its soles ``soles=(left, right)`` (frames
whose z axis is the ground's normal when it stands), its standing configuration ``standing=``
(its base placement is where it starts, the ground where its soles are) and, for the contact
wrench cone, its soles' half-lengths ``sole_half_lengths=(X, Y)`` (m, along the soles' x and
y); every joint but the base is actuated. By default Talos from example-robot-data
(``talos_reduced``) on a free-flyer with its torso, arms, grippers and head locked at the
SRDF's ``half_sitting`` posture (the grippers at 0) — example-robot-data's ``talos_legs``, the
robot of Crocoddyl's biped examples: two legs of six joints, 90 kg in all; x = [q; v], nx = 37,
ndx = 36. Its soles ``left_sole_link`` and ``right_sole_link`` are frame contacts
(``kind="6d"``, their wrench in the sole's own axes), standing at ``half_sitting``.

The walk (:func:`problems.gaits.biped_gait`): ``support_knots`` intervals on both soles,
then ``steps`` single supports of ``step_knots`` intervals — the right sole swings first,
then the soles alternate — each followed by ``support_knots`` on both. A sole that leaves
the ground for n intervals follows p(s) = p_0 + (s L, 0, 4 h s (1 − s)), s = j/n at the
j-th knot of its swing, level (its initial orientation), and lands L = ``step_length``
further forward: after every second step the soles are side by side again, and the walk
advances steps · L / 2 (the touchdown knot passes the impulse map, Problem's docstring).
The structure is that of the biped walk of Crocoddyl's examples (Mastalli et al.,
*Crocoddyl: an efficient and versatile framework for multi-contact optimal control*, ICRA
2020), as :mod:`problems.quadruped` is of its quadrupedal gaits.

Costs (× dt on the running knots; :data:`problems.gaits.BIPED_WEIGHTS`, Talos'; another robot's
scaled by its mass and height as the quadruped's, :func:`problems.gaits.scaled_weights`):

    running  ℓ_k = ½ Σ_i w_i (x ⊖ x̄_k)_i² + ½·1e-3‖u‖² + ½·1e7 Σ_swing ‖log₆(T_s,k⁻¹ M_s(q))‖²
    terminal ℓ_N = 10 · ½ Σ_i w_i (x ⊖ x̄_N)_i²   (x̄_N given per node: a controller's window
                                               ends on its last node's, not the task's end)

with x̄_k the half-sitting state whose base has advanced with the walk (linearly over each
single support), weights w = 1e2 on the base's position, 5e2 on its orientation, 1e-2 on
the joints and 1 on the velocities, and T_s,k the swinging sole's placement on its arc.
Initial guess: the half-sitting state at every knot and the controls of least norm that
hold it on its stance soles; DDP and iLQR start from it by multiple shooting (the defaults
of a problem with contacts).

Constraints: at every running knot the wrench of each stance sole lies in its contact
wrench cone (Caron, Pham & Nakamura, *Stability of surface contacts for humanoid robots:
closed-form formulae of the contact wrench cone for rectangular support areas*, ICRA 2015):
friction of ``mu`` (the inner pyramid), the centre of pressure inside the sole's rectangle
and the yaw torque bounded, with a non-negative normal force
(:class:`optdyn.costs.WrenchConeResidual` as a stage constraint, A w ≤ 0). Talos' rectangle's
half-lengths (0.1025, 0.061) m are those of the ``<feet>`` block of its SRDF (width 0.205 m
along x, height 0.122 m along y); Crocoddyl's biped example uses a slightly smaller (0.1, 0.05).
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from dynamics import Contact, Model, load_srdf
from optdyn.constraints import ResidualConstraint
from optdyn.costs import ControlCost, FramePlacementCost, StateCost, WrenchConeResidual
from optdyn.ocp.problem import Problem

from .gaits import BIPED_WEIGHTS, SOLES, TALOS_SCALE, biped_gait, positive, scaled_weights, swing_references
from .legged import Stance, stance, state_weights, torque_box, with_rotors
from .robot_data import load_robot, robot_files

URDF = "talos_data/robots/talos_reduced.urdf"

SCENARIOS = ("walk", "stand")
"""The walk, or standing on both soles for ``step_knots + support_knots`` intervals (its last
held past its end by a controller: balance, e.g. against a push)."""
SRDF = "talos_data/srdf/talos.srdf"


def talos_legs() -> tuple[Model, np.ndarray, tuple[float, float]]:
    """(Talos' legs on a free-flyer, their half-sitting configuration q0 (19,), the soles'
    half-lengths (X, Y) in m), from example-robot-data's URDF and SRDF (module docstring);
    ValueError if example-robot-data is not installed."""
    robots, _ = robot_files(URDF, "biped")
    full = load_robot(URDF, "biped")
    srdf = load_srdf(full, os.path.join(robots, SRDF))
    posture = srdf.reference_configurations["half_sitting"]
    upper = {name: float(posture[full.idx_qs[i]]) for i, name in enumerate(full.joint_names)
             if name != "root_joint" and not name.startswith("leg_")}
    model = load_robot(URDF, "biped", locked_joints=upper)
    q0 = load_srdf(model, os.path.join(robots, SRDF), unknown="ignore").reference_configurations["half_sitting"]
    size = srdf.xml.find("specificities/feet/left/size")
    return model, q0.copy(), (0.5 * float(size.get("width")), 0.5 * float(size.get("height")))


def make(scenario: str = "walk", steps: int = 2, step_length: float = 0.2, step_height: float = 0.05,
         step_knots: int = 20, support_knots: int = 5, dt: float = 0.03, mu: float | None = 0.7,
         *, model: Model | str | os.PathLike | None = None, soles: Sequence[str] | None = None, standing=None,
         sole_half_lengths: Sequence[float] | None = None, torque_limit=None, armature=None) -> Problem:
    """``model`` (a robot on a free-flyer root, or its URDF file's path, standing at
    ``standing`` (nq,, or its SRDF file's path: the ``half_sitting`` posture there) on its
    ``soles`` (left, right); by default Talos' legs at half-sitting) takes ``steps`` steps (``scenario``
    "walk"; "stand": on both soles, :data:`SCENARIOS`), each sole landing ``step_length`` (m)
    further forward after an arc of apex ``step_height`` (m) in ``step_knots`` intervals of
    ``dt``, ``support_knots`` on both
    soles around every step, the stance soles' wrenches in the contact wrench cone of ``mu``
    (None: no cone) over soles of ``sole_half_lengths`` (X, Y), the joint torques within
    ``torque_limit`` (None: unbounded; "urdf": the URDF's effort limits; N·m, one or per joint:
    :func:`problems.legged.torque_box`), its joints' reflected rotor inertias
    ``armature`` (None: none; kg·m², one or per joint: :func:`problems.legged.with_rotors`) (module
    docstring)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario: expected one of {', '.join(SCENARIOS)}, got {scenario!r}")
    positive(step_length, "step_length")
    positive(step_height, "step_height")
    positive(dt, "dt")
    if mu is not None:
        positive(mu, "mu")
    robot, half_lengths = _robot(model, soles, standing, sole_half_lengths, mu)
    robot = with_rotors(robot, armature)
    lower, upper = torque_box(robot.model, torque_limit)
    name = "biped" if model is None else f"biped:{robot.model.name}"
    if scenario == "stand":  # both soles down, the base held at the standing posture
        swings, progress = [()] * (step_knots + support_knots), [0.0] * (step_knots + support_knots + 1)
    else:
        swings, progress = biped_gait(steps, step_knots, support_knots, robot.feet)
    model, N, w = robot.model, len(swings), scaled_weights(BIPED_WEIGHTS, robot.scale, TALOS_SCALE)
    x0 = np.r_[robot.q, np.zeros(model.nv)]
    refs = np.tile(x0, (N + 1, 1))
    refs[:, 0] += 0.5 * steps * step_length * np.asarray(progress)
    weights = state_weights(model, w)
    running = StateCost(weights, refs[:-1], model=model) + ControlCost(w["control"], nu=model.nv - 6)
    for sole, (R0, p0) in zip(robot.feet, robot.placements):
        path, weight = swing_references(p0, sole, swings, step_length, step_height, w["swing"])
        if not weight.any():
            continue
        targets = np.tile(np.eye(4), (N, 1, 1))
        targets[:, :3, :3], targets[:, :3, 3] = R0, path
        running = running + FramePlacementCost(model, sole, targets, weight)
    terminal = StateCost(w["terminal"] * weights, refs, model=model)  # node N's; a window's at its end
    contacts = [[Contact(s, kind="6d", reference="local") for s in robot.feet if s not in swing] for swing in swings]
    cones = [] if mu is None else [
        ResidualConstraint(r, upper=0.0, scale=r.units(robot.weight))  # in units of the weight (problems.legged)
        for r in (WrenchConeResidual(model, contacts, s, mu=mu, half_lengths=half_lengths) for s in robot.feet)]
    params = {"scenario": scenario, "steps": steps, "step_length": step_length, "step_height": step_height,
              "step_knots": step_knots, "support_knots": support_knots, "dt": dt, "mu": mu}
    for key, value in (("torque_limit", torque_limit), ("armature", armature)):
        if value is not None:
            params[key] = value
    return Problem(model, x0, N, dt, running, terminal, substeps=1, integrator="rk4", contacts=contacts,
                   path_constraints=cones, name=name, params=params, u_lower=lower, u_upper=upper)


def _robot(model: Model | None, soles: Sequence[str] | None, standing, sole_half_lengths,
           mu: float | None) -> tuple[Stance, tuple[float, float] | None]:
    """(the stance of ``model`` on ``soles`` at ``standing``, the soles' half-lengths); Talos'
    legs for model=None (its soles, its half-sitting and its soles' size where not given);
    ValueError naming what a given model lacks."""
    if model is None:
        model, q0, size = talos_legs()
        soles = SOLES if soles is None else soles
        standing = q0 if standing is None else standing
        sole_half_lengths = size if sole_half_lengths is None else sole_half_lengths
    needed = [(soles, "soles", "its two soles' frames (left, right)"),
              (standing, "standing", "its standing configuration q (nq,)")]
    if mu is not None:
        needed.append((sole_half_lengths, "sole_half_lengths", "its soles' half-lengths (X, Y) in m for the "
                                                               "contact wrench cone (or mu=None)"))
    for value, name, what in needed:
        if value is None:
            raise ValueError(f"{name}: a model= of one's own needs {what}")
    return (stance(model, soles, standing, 2, "soles", "half_sitting"),
            None if mu is None else tuple(sole_half_lengths))
