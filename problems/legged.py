"""What the legged tasks (:mod:`problems.quadruped`, :mod:`problems.biped`) take from a robot:
its stance — the standing configuration, the frames it stands on, its mass and the height of
its base above them — checked, with every error naming the argument; and the state weights built from it.

The tasks state their contact-force constraint rows in units of the robot's weight m‖g‖
(:attr:`Stance.weight`; ``ResidualConstraint(..., scale=)``): the same friction pyramid or
wrench cone, but the augmented Lagrangian's penalty ρ‖c‖² then weighs a violation by its share
of the weight, not in newtons, so that one default ρ serves a 2.5 kg quadruped and a 90 kg
biped, and no task carries a penalty of its own."""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from dynamics import Model, frame_placement, load_srdf, load_urdf
from dynamics.joints import normalize
from optdyn import Problem
from optdyn.constraints import ResidualConstraint


@dataclass(frozen=True)
class Stance:
    """A robot standing: ``model`` (a free-flyer root), ``q`` (nq,) its standing
    configuration, ``feet`` the frames it stands on, ``placements`` their world (R, p) at q,
    ``mass`` (kg) the robot's and ``height`` (m) its base's above the mean of its feet."""

    model: Model
    q: np.ndarray
    feet: tuple[str, ...]
    placements: tuple[tuple[np.ndarray, np.ndarray], ...]
    mass: float
    height: float

    @property
    def scale(self) -> tuple[float, float]:
        """(mass, height): what :func:`problems.gaits.scaled_weights` scales weights by."""
        return self.mass, self.height

    @property
    def weight(self) -> float:
        """m‖g‖ (N): the unit the tasks state their contact-force constraint rows in (module
        docstring)."""
        return self.mass * float(np.linalg.norm(self.model.gravity))


def stance(model: Model | str | os.PathLike, feet: Sequence[str], standing, count: int, what: str = "feet",
           reference: str = "standing") -> Stance:
    """The stance of ``model`` standing at ``standing`` (nq,) on the ``count`` frames ``feet``
    (argument named ``what``); ValueError naming ``model``, ``what`` (with the robot's frames)
    or ``standing`` for a robot without a free-flyer root, wrong frames, or a configuration
    that is not the model's or keeps the base below its feet.

    ``model`` may be a URDF file's path (the robot loaded on a free-flyer root) and
    ``standing`` an SRDF file's (its reference configuration ``reference``): what the command
    line's ``--param model=robot.urdf --param standing=robot.srdf`` gives."""
    if isinstance(model, (str, os.PathLike)):
        model = load_urdf(model, root_joint="free-flyer")
    if isinstance(standing, (str, os.PathLike)):
        standing = _reference(model, standing, reference)
    if not isinstance(model, Model) or not model.joint_types or model.joint_types[0] != "free-flyer":
        found = type(model).__name__ if not isinstance(model, Model) else f"joints {list(model.joint_types)}"
        raise ValueError(f"model: expected a dynamics.Model on a free-flyer root (load_urdf(..., "
                         f"root_joint='free-flyer')), got {found}")
    if isinstance(feet, str) or not isinstance(feet, Sequence) or len(feet) != count \
            or len(set(feet)) != count or not all(isinstance(f, str) for f in feet):
        raise ValueError(f"{what}: expected {count} distinct frame names of robot {model.name!r}, got {feet!r}")
    unknown = [f for f in feet if f not in model.frame_names]
    if unknown:
        raise ValueError(f"{what}: robot {model.name!r} has no frame {', '.join(map(repr, unknown))}; "
                         f"its frames: {', '.join(model.frame_names)}")
    q = _configuration(model, standing)
    placements = tuple(frame_placement(model, q, f) for f in feet)
    height = q[2] - np.mean([p[2] for _, p in placements])
    if not height > 0:
        raise ValueError(f"standing: the base stands {height:.3g} m above its {what} (mean height); expected > 0")
    return Stance(model, q, tuple(feet), placements, float(model.inertia[:, 0].sum()), float(height))


def torque_box(model: Model, torque_limit) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The box (u_lower, u_upper) of a legged task's joint torques (every velocity but the
    free-flyer root's): none for ``torque_limit`` None, the URDF's ``<limit effort>`` for
    "urdf", ±``torque_limit`` for a number or one per joint (nv − 6,) in N·m; ValueError naming
    ``torque_limit`` otherwise. Solo-12's URDF states 1000 N·m, a placeholder."""
    if torque_limit is None:
        return None, None
    nu = model.nv - 6
    urdf = isinstance(torque_limit, str) and torque_limit == "urdf"
    limit = np.array(model.effort_limit[6:]) if urdf else _per_joint(torque_limit, nu)
    if limit is None or not np.all(limit > 0):
        raise ValueError(f"torque_limit: expected None, 'urdf', a number or {nu} numbers > 0 (N·m), "
                         f"got {torque_limit!r}")
    return -limit, limit


UNITREE_ARMATURE = 0.01
"""kg·m²: the reflected rotor inertia MuJoCo Menagerie gives every joint of Unitree's Go2 and A1,
whose URDFs have none (:func:`with_rotors`)."""


def with_rotors(robot: Stance, armature) -> Stance:
    """``robot`` whose joints carry the reflected rotor inertias ``armature`` (I_r n², kg·m²):
    unchanged for None, the same for every joint but the free-flyer root's for a number, one per
    joint for (nv − 6,) numbers (:meth:`dynamics.Model.with_armature`); ValueError naming
    ``armature`` otherwise. A URDF has no rotors: a geared motor's reflected inertia is often
    most of a light shank's joint inertia (Unitree's Go2 and A1: :data:`UNITREE_ARMATURE`)."""
    if armature is None:
        return robot
    nu = robot.model.nv - 6
    value = _per_joint(armature, nu)
    if value is None or not np.all(value >= 0):
        raise ValueError(f"armature: expected None, a number or {nu} numbers ≥ 0 (kg·m²), got {armature!r}")
    return replace(robot, model=robot.model.with_armature(np.r_[np.zeros(6), value]))


def _per_joint(value, n: int) -> np.ndarray | None:
    """``value`` — a number for every joint, or ``n`` numbers — as (n,) floats; None if it is
    neither (a bool, a string, another count). NaN stays, for the caller's bound to refuse."""
    if isinstance(value, bool):
        return None
    try:
        return np.array(np.broadcast_to(np.asarray(value, float), (n,)))
    except (TypeError, ValueError):
        return None


def _reference(model: Model, srdf: str | os.PathLike, name: str) -> np.ndarray:
    """The reference configuration ``name`` of ``model`` in the SRDF file ``srdf``; ValueError
    naming ``standing`` (with the file's configurations) if it has none of that name. Joints and
    links the model does not have are skipped with a warning (an SRDF shared by variants of a
    robot: Solo-8 with Solo's, which names Solo-12's abduction joints)."""
    found = load_srdf(model, srdf, unknown="warn").reference_configurations
    if name not in found:
        raise ValueError(f"standing: the SRDF {os.fspath(srdf)!r} has no reference configuration {name!r} "
                         f"(it has {', '.join(map(repr, found)) or 'none'}); give q (nq,) instead")
    return found[name]


def _configuration(model: Model, standing) -> np.ndarray:
    """``standing`` as a finite configuration (nq,) of ``model`` whose quaternions are unit
    (within 1e-6); ValueError naming ``standing`` otherwise."""
    try:
        q = np.array(standing, dtype=float)
    except (TypeError, ValueError):
        q = None
    if q is None or q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise ValueError(f"standing: expected a finite configuration of robot {model.name!r} ({model.nq} numbers; "
                         f"e.g. dynamics.load_srdf(model, path).reference_configurations['standing']), got "
                         f"{standing!r}")
    if np.max(np.abs(normalize(model, q) - q)) > 1e-6:
        raise ValueError("standing: its quaternions must have unit norm (dynamics.normalize)")
    return q


def state_weights(model: Model, weights: dict) -> np.ndarray:
    """(2 nv,) weights of x ⊖ x̄ of the legged tasks: ``weights`` "base_position" on the base's
    horizontal position, "base_height", "base_orientation", "joints" and "velocity"."""
    w = weights
    return np.r_[np.full(2, w["base_position"]), w["base_height"], np.full(3, w["base_orientation"]),
                 np.full(model.nv - 6, w["joints"]), np.full(model.nv, w["velocity"])]


def in_newtons(problem: Problem) -> Problem:
    """A legged task ``problem`` with its contact-force rows r ≤ 0 in newtons (unscaled), as the
    tasks stated them before they took the robot's weight as the rows' unit: the same feasible
    set, for comparing the two statements."""
    if not problem.stage_constraints:
        raise ValueError("problem: expected a legged task with contact-force rows (stage constraints), got none")
    rows = [ResidualConstraint(c.residual, upper=0.0) for c in problem.stage_constraints]
    return Problem(problem.model, problem.x0, problem.N, problem.dt, problem.running_cost, problem.terminal_cost,
                   contacts=problem.contacts, contact_damping=problem.contact_damping, path_constraints=rows,
                   name=problem.name, solver_options=problem.solver_options)
