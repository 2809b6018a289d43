"""Quadruped gaits: walk, trot and jump on flat ground, with contact phases and impulses,
for any robot on four feet — by default Solo-12.

Robot: any model on a free-flyer root (``model=``), its four feet ``feet=(lf, rf, lh, rh)``
(left front, right front, left hind, right hind) and its standing configuration
``standing=`` (e.g. its SRDF's, :func:`dynamics.load_srdf`); the base placement of that
configuration is where it starts, and the ground is where its feet are; every joint but the
base is actuated. By default Solo-12 from example-robot-data (four legs of three joints, point
feet ``FL_FOOT``, ``FR_FOOT``, ``HL_FOOT``, ``HR_FOOT``; 2.5 kg) in its SRDF's ``standing``;
x = [q; v], nx = 37, ndx = 36. A HyQ trot::

    model = dyn.load_urdf(hyq_urdf, root_joint="free-flyer")
    standing = dyn.load_srdf(model, hyq_srdf).reference_configurations["standing"]
    prob = problems.quadruped.make(model=model, feet=("lf_foot", "rf_foot", "lh_foot", "rh_foot"),
                                   standing=standing)

The gait builder (:func:`gait`) turns a scenario and its timing into the contact sequence —
one list of stance feet per interval — and the swing-foot references: a foot that leaves the
ground for n intervals follows p(s) = p_0 + (s L, 0, 4 h s (1 − s)), s = j/n at the j-th knot
of its swing, and lands L further forward (the touchdown knot passes the impulse map: the
Problem's docstring). The structure is that of the quadrupedal gait problems of Crocoddyl
(Mastalli et al., *Crocoddyl: an efficient and versatile framework for multi-contact optimal
control*, ICRA 2020, Sec. VI; its ``SimpleQuadrupedalGaitProblem(model, lf, rf, lh, rh)``
takes the robot the same way): phases of stance feet held by rigid contacts, swing feet
tracking their references, the base regularised towards its standing posture.

Scenarios (timing in intervals of ``dt``):

* ``walk``: one foot at a time (HL, FL, HR, FR), ``step_knots`` each, ``support_knots``
  on four feet in between; the body advances L per cycle.
* ``trot``: the diagonal pairs (FL, HR) then (FR, HL), ``step_knots`` each, with
  ``support_knots`` on four feet in between; L per cycle.
* ``jump``: ``support_knots`` on four feet, a flight phase of the length that a ballistic
  apex ``step_height`` above the start needs (T = √(8h/g)), and ``support_knots`` on four
  feet after landing L further forward (one cycle).

Costs (× dt on the running knots):

    running  ℓ_k = ½ Σ_i w_i (x ⊖ x̄_k)_i² + ½·1e-1‖u‖² + ½·1e6 Σ_swing ‖p_f(q) − p_f,k‖²
    terminal ℓ_N = 10 · ½ Σ_i w_i (x ⊖ x̄_N)_i²   (x̄_N given per node: a controller's window
                                               ends on its last node's, not the task's end)

with x̄_k the standing state whose base has advanced with the gait (linearly within each
moving phase; in the jump's flight it also rises on the arc 4 h s (1 − s)), weights w = 0 on
the base's horizontal position, 1e2 on its height, 5e2 on its orientation, 1e-2 on the joints
and 1 on the velocities. These weights (:data:`problems.gaits.WEIGHTS`) are Solo-12's; another
robot's are scaled from them by its mass and the height of its base above its feet
(:func:`problems.gaits.scaled_weights`: those of lengths by (h₀/h)², of torques by
(m₀h₀/(mh))², the barrier's width by m/m₀). Initial guess: the
standing state at every knot and the controls of least norm that hold it on its stance
feet: DDP and iLQR start from it by multiple shooting (the defaults of a problem with contacts).

Constraints: at every running knot the force of each stance foot lies in the inner friction
pyramid of ``mu`` (four facets) with a non-negative normal force
(:class:`optdyn.costs.FrictionConeResidual` as a stage constraint, A f ≤ 0): IPOPT imposes
it directly, DDP and iLQR through their augmented Lagrangian. Without it the trot's optimum
pushes the feet outwards harder than any friction would allow (23 N outside the pyramid on
one cycle).

For a controller (``cone="cost"``): the pyramid as a running cost instead, each row under the
relaxed logarithmic barrier of Hauser & Saccon (2006) (:class:`optdyn.costs.RelaxedLogBarrier`,
weight 0.1, δ = 0.1 N: −log(z/δ) on the margin z = −A f inside, a quadratic from δ on and
beyond the boundary), so that iLQR with one iteration per step (:class:`optdyn.MPC`) keeps the
forces inside. The augmented Lagrangian's penalty (Powell–Hestenes–Rockafellar), like a
quadratic penalty on the violation, is flat at a row inside by more than λ/ρ: one step of its
Gauss–Newton model from a shifted warm start crosses such rows (6.6 N at the first step of
the trot), and under real-time iterations the trot with the constraint diverges. The barrier
is curved at every row inside, so the model sees a row before the step crosses it. Its optimum lies
inside the pyramid (the barrier's slope at the boundary, 2w/δ = 2 per N, 0.04 with dt,
exceeds the largest multiplier of the constrained trot, 0.0104) and costs 1 % more on the
task's own cost (20.63 against 20.42); the barrier's value, negative far inside, is part of
the problem's cost.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from dynamics import Contact, Model, frame_placement
from optdyn.constraints import ResidualConstraint
from optdyn.costs import (ControlCost, FramePositionCost, FrictionConeResidual, RelaxedLogBarrier, ResidualCost,
                          StateCost)
from optdyn.ocp.problem import Problem

from .gaits import FEET, SOLO_SCALE, WEIGHTS, gait, positive, scaled_weights, swing_references
from .legged import Stance, stance, state_weights, torque_box, with_rotors
from .robot_data import load_robot, robot_files

URDF = "solo_description/robots/solo12.urdf"
SRDF = "solo_description/srdf/solo.srdf"

CONES = ("constraint", "cost")
"""How the friction pyramid enters the problem (:func:`make`)."""


def solo12() -> Model:
    """Solo-12 on a free-flyer, from example-robot-data (ValueError if it is not installed)."""
    return load_robot(URDF, "quadruped")


def make(scenario: str = "trot", cycles: int = 2, step_length: float = 0.15, step_height: float = 0.05,
         step_knots: int = 10, support_knots: int = 2, dt: float = 0.02, mu: float | None = 0.7,
         cone: str = "constraint", *, model: Model | str | os.PathLike | None = None,
         feet: Sequence[str] | None = None, standing=None, torque_limit=None, armature=None,
         contact_damping: float = 0.0) -> Problem:
    """The ``scenario`` ("walk", "trot" or "jump") of ``cycles`` gait cycles, each foot
    stepping ``step_length`` (m) forward with an apex ``step_height`` (m) in ``step_knots``
    intervals, ``support_knots`` on four feet between steps, the stance feet's forces in the
    friction pyramid of ``mu`` (None: no friction constraint), as stage constraints
    (``cone="constraint"``) or as a barrier cost for real-time MPC (``cone="cost"``); of
    ``model`` (a robot on a free-flyer root, or its URDF file's path) on its ``feet`` (left
    front, right front, left hind, right hind frames) from its ``standing`` configuration
    (nq,, or its SRDF file's path: the ``standing`` posture there), by default Solo-12 in its
    SRDF's ``standing``; the joint torques within ``torque_limit`` (None: unbounded; "urdf": the
    URDF's effort limits; N·m, one or per joint: :func:`problems.legged.torque_box`), its joints'
    reflected rotor inertias ``armature`` (None: none; kg·m², one or per joint:
    :func:`problems.legged.with_rotors`) (module docstring); ``contact_damping``: the damping of
    the contact dynamics where four point feet are dependent, as on a robot without abduction
    joints such as Solo-8 (:class:`optdyn.Problem`'s ``contact_damping``)."""
    positive(step_length, "step_length")
    positive(step_height, "step_height")
    positive(dt, "dt")
    if mu is not None:
        positive(mu, "mu")
    if cone not in CONES:
        raise ValueError(f"cone: expected one of {', '.join(CONES)}, got {cone!r}")
    robot = _robot(model, feet, standing)
    robot = with_rotors(robot, armature)
    lower, upper = torque_box(robot.model, torque_limit)
    name = "quadruped" if model is None else f"quadruped:{robot.model.name}"
    swings, progress = gait(scenario, cycles, step_knots, support_knots, dt, step_height, robot.feet)
    model, N, w = robot.model, len(swings), scaled_weights(WEIGHTS, robot.scale, SOLO_SCALE)
    x0 = np.r_[robot.q, np.zeros(model.nv)]
    distance = step_length * (1 if scenario == "jump" else cycles)
    refs = np.tile(x0, (N + 1, 1))
    s = np.asarray(progress)
    refs[:, 0] += distance * s
    if scenario == "jump":  # the base's ballistic arc over the flight
        refs[:, 2] += 4.0 * step_height * s * (1.0 - s)
    weights = state_weights(model, w)
    running = StateCost(weights, refs[:-1], model=model) + ControlCost(w["control"], nu=model.nv - 6)
    for foot, (_, p0) in zip(robot.feet, robot.placements):
        target, weight = swing_references(p0, foot, swings, step_length, step_height, w["swing"])
        if weight.any():
            running = running + FramePositionCost(model, foot, target, weight)
    terminal = StateCost(w["terminal"] * weights, refs, model=model)  # node N's; a window's at its end
    contacts = [[Contact(f) for f in robot.feet if f not in swing] for swing in swings]
    pyramids = [] if mu is None else [FrictionConeResidual(model, contacts, f, mu=mu) for f in robot.feet]
    cones = [ResidualConstraint(r, upper=0.0, scale=robot.weight)  # in units of the weight (problems.legged)
             for r in pyramids] if cone == "constraint" else []
    for r in pyramids if cone == "cost" else ():
        running = running + ResidualCost(r, RelaxedLogBarrier(-np.inf, 0.0, w["cone_width"], size=r.size), w["cone"])
    params = {"scenario": scenario, "cycles": cycles, "step_length": step_length, "step_height": step_height,
              "step_knots": step_knots, "support_knots": support_knots, "dt": dt, "mu": mu, "cone": cone}
    optional = (("torque_limit", torque_limit), ("armature", armature), ("contact_damping", contact_damping or None))
    params.update((key, value) for key, value in optional if value is not None)
    return Problem(model, x0, N, dt, running, terminal, substeps=1, integrator="rk4", contacts=contacts,
                   contact_damping=contact_damping, path_constraints=cones, name=name, params=params,
                   u_lower=lower, u_upper=upper)


def _robot(model: Model | None, feet: Sequence[str] | None, standing) -> Stance:
    """The stance of ``model`` on ``feet`` at ``standing``; Solo-12 for model=None (its feet
    and its SRDF's standing where not given); ValueError naming what a given model lacks."""
    if model is None:
        model = solo12()
        feet = FEET if feet is None else feet
        if standing is None:
            standing = os.path.join(robot_files(URDF, "quadruped")[0], SRDF)  # its "standing" (problems.legged.stance)
    for value, name, what in ((feet, "feet", "its four feet's frames (lf, rf, lh, rh)"),
                              (standing, "standing", "its standing configuration q (nq,)")):
        if value is None:
            raise ValueError(f"{name}: a model= of one's own needs {what}")
    robot = stance(model, feet, standing, 4)
    _check_order(robot)
    return robot


def _check_order(robot: Stance) -> None:
    """ValueError naming ``feet`` unless, in the base's axes at the standing posture, each
    front foot is ahead of the hind foot of its side and each left foot left of the right foot
    of its end (x forward, y left): the gaits pair the feet by their place."""
    R, p = frame_placement(robot.model, robot.q, robot.model.body_names[0])
    x, y = np.array([R.T @ (foot - p) for _, foot in robot.placements])[:, :2].T
    if not (x[0] > x[2] and x[1] > x[3] and y[0] > y[1] and y[2] > y[3]):
        where = ", ".join(f"{f} ({a:+.3f}, {b:+.3f})" for f, a, b in zip(robot.feet, x, y))
        raise ValueError(f"feet: expected (left front, right front, left hind, right hind) in the base's axes "
                         f"(x forward, y left); standing, they are at {where} m")
