"""What a problem asks of the robot, read from its costs and constraints.

The viewer, the clearance checker, the plots and the result files all take the task's
geometry from here, and only from the problem's own cost and constraint objects (no
extra attributes on the problem):

* obstacles: every :class:`~optdyn.constraints.SphereClearance` path constraint and every
  :class:`~optdyn.costs.ObstacleCost` term (centre, radius, margin);
* collision points: the points those obstacles are measured from;
* targets: the target of every :class:`~optdyn.costs.FramePositionCost` (running or
  terminal), :class:`~optdyn.constraints.FramePositionEquality` (terminal), and of the frame
  position and placement residuals of residual costs and constraints (placements: poses,
  drawn as axes);
* the path frame: the frame (and offset) the first target names.

:func:`record` writes a problem as JSON-able data (model source, horizon, bounds, costs
and constraints of the types above and :class:`~optdyn.costs.StateCost`,
:class:`~optdyn.costs.ControlCost`, :class:`~optdyn.constraints.StateEquality`, the residual
costs and constraints and the joint limits, :mod:`optdyn.ocp.residual_records`);
:func:`rebuild` makes the problem again from it, so that a saved result can be drawn,
plotted and checked without the script that built it. Costs and constraints of other
types (written by the user) are left out of the record: the rebuilt problem then draws
and checks what it can, and its cost is that of the recorded terms only.

:func:`problem_of` answers "which problem made this result" for the viewer, the plots
and the command line alike.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dynamics.urdf import load_urdf

from .constraints import FramePositionEquality, SphereClearance, StateEquality
from .contact_residuals import MU, FrictionConeResidual, SmoothFrictionConeResidual
from .costs import Cost, Sum, cost_terms
from .problem import Problem
from .residual_costs import ControlCost, FramePositionCost, ObstacleCost, StateCost
from .relative_residuals import RelativePlacementResidual, RelativePositionResidual
from .residual_records import constraint_record, cost_record, make_constraint, make_cost
from .residuals import FramePlacementResidual, FramePositionResidual, SphereClearanceResidual, VectorStateResidual

if TYPE_CHECKING:  # annotations only: the solvers' Result is read by attribute, not imported
    from ..solvers.result import Result

RECORD_VERSION = 1


@dataclass(frozen=True)
class Obstacle:
    """A sphere the collision points must keep ``margin`` away from."""

    center: np.ndarray
    radius: float
    margin: float


@dataclass(frozen=True)
class FrameTarget:
    """Point ``offset`` fixed in ``frame`` should reach ``target`` (3,); ``kind`` "cost" or
    "constraint"; ``rotation`` (3, 3) the frame's target orientation for a pose target (else None);
    ``relative_to`` the frame whose axes and origin ``target`` and ``rotation`` are expressed in
    (a relative placement), None for the world. A reference trajectory (one target per knot)
    also has its ``path`` (K, 3) at the knots ``knots`` (K,) (0 … N−1 for a running cost, 1 … N
    for a path constraint), ``target`` being its last point."""

    frame: str
    offset: np.ndarray
    target: np.ndarray
    kind: str
    rotation: np.ndarray | None = None
    relative_to: str | None = None
    path: np.ndarray | None = None
    knots: np.ndarray | None = None


def _require_problem(problem) -> None:
    if not isinstance(problem, Problem):
        raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")


def clearance_constraints(problem: Problem) -> list[SphereClearance]:
    """The problem's :class:`~optdyn.constraints.SphereClearance` path constraints."""
    _require_problem(problem)
    return [c for c in problem.path_constraints if isinstance(c, SphereClearance)]


def _obstacle_terms(problem: Problem) -> list:
    """Clearance constraints, then the sphere-clearance residuals of costs (obstacle costs)."""
    soft = [r for c in cost_terms(problem.running_cost) + cost_terms(problem.terminal_cost)
            for r in c.residuals() if isinstance(r, SphereClearanceResidual)]
    return clearance_constraints(problem) + soft


def obstacles(problem: Problem) -> list[Obstacle]:
    """Every obstacle of the problem (clearance constraints, then obstacle costs), without repeats."""
    found: dict[tuple, Obstacle] = {}
    for c in _obstacle_terms(problem):
        key = (*np.round(c.center, 12), round(c.radius, 12), round(c.margin, 12))
        found.setdefault(key, Obstacle(c.center.copy(), c.radius, c.margin))
    return list(found.values())


def collision_points(problem: Problem) -> list[tuple[str, np.ndarray]]:
    """Every point the obstacles are measured from, as (frame, offset (3,)), without repeats."""
    found: dict[tuple, tuple[str, np.ndarray]] = {}
    for c in _obstacle_terms(problem):
        for name, offset in zip(c.points.names, c.points.offsets):
            found.setdefault((name, *np.round(offset, 12)), (name, offset.copy()))
    return list(found.values())


def friction_coefficient(problem: Problem) -> float:
    """The friction coefficient μ of the problem's friction-cone terms (the first one's: its
    constraints, then its running cost), the default :data:`~optdyn.ocp.contact_residuals.MU`
    if it has none: the cone that the viewer draws and the plot measures margins to."""
    _require_problem(problem)
    terms = [*problem.stage_constraints, *problem.path_constraints, *cost_terms(problem.running_cost)]
    cones = [r for t in terms for r in t.residuals() if isinstance(r, (FrictionConeResidual, SmoothFrictionConeResidual))]
    return cones[0].mu if cones else MU


def frame_targets(problem: Problem) -> list[FrameTarget]:
    """Targets of terminal constraints, then of the frame residuals of constraints, terminal
    costs and running costs (frame position costs among them), without repeats."""
    _require_problem(problem)
    items = [(c, "constraint") for c in problem.terminal_constraints if isinstance(c, FramePositionEquality)]
    found: dict[tuple, FrameTarget] = {}
    for c, kind in items:
        name, offset = c.points.names[0], c.points.offsets[0]
        key = (name, *np.round(offset, 12), *np.round(c.target, 12))
        found.setdefault(key, FrameTarget(name, offset.copy(), c.target.copy(), kind))
    for t in _residual_targets(problem):
        path = None if t.path is None else t.path.tobytes()
        found.setdefault((t.frame, t.relative_to, *np.round(t.offset, 12), *np.round(t.target, 12), path), t)
    return list(found.values())


def _residual_targets(problem: Problem) -> list[FrameTarget]:
    """Targets of frame position and placement residuals in costs and constraints (a
    reference trajectory's last point, and its path); placements carry their rotation."""
    terms = [(c, "constraint", None) for c in problem.terminal_constraints]
    terms += [(c, "constraint", 1) for c in problem.path_constraints]
    terms += [(c, "cost", None) for c in cost_terms(problem.terminal_cost)]
    terms += [(c, "cost", 0) for c in cost_terms(problem.running_cost)]
    out = []
    for c, kind, first in terms:
        for r in c.residuals():
            if isinstance(r, (FramePositionResidual, RelativePositionResidual)):
                points, rotations = r.target.reshape(-1, 3), None
            elif isinstance(r, (FramePlacementResidual, RelativePlacementResidual)):
                T = r.target.reshape(-1, 4, 4)
                points, rotations = T[:, :3, 3], T[:, :3, :3]
            else:
                continue
            frame, offset = (r.frame, r.offset.copy()) if isinstance(r, FramePositionResidual) else \
                (r.motion.frame, np.zeros(3))
            relative_to = getattr(getattr(r, "motion", None), "relative_to", None)
            per_knot = r.target.ndim == (2 if rotations is None else 3)  # a reference trajectory
            knots = _weighted_knots(c, len(points)) if per_knot and first is not None else None
            last = -1 if knots is None else knots[-1]
            rotation = None if rotations is None else rotations[last].copy()
            path = {} if knots is None else {"path": points[knots].copy(), "knots": first + knots}
            out.append(FrameTarget(frame, offset, points[last].copy(), kind, rotation, relative_to, **path))
    return out


def _weighted_knots(term, K: int) -> np.ndarray | None:
    """The knots (indices < K) where ``term`` (a cost or constraint on a reference with K
    knots) acts: where a cost's per-knot weight is positive (a swing foot's arc is weighted
    only in its swing), every knot otherwise; None if there are none."""
    weight = np.asarray(getattr(term, "weight", 1.0))
    knots = np.flatnonzero(weight > 0) if weight.ndim == 1 and weight.size == K else np.arange(K)
    return knots if knots.size else None


def path_frame(problem: Problem) -> tuple[str, np.ndarray]:
    """(frame, offset) whose path is drawn: the first target's, else "tool0", else the last frame."""
    targets = frame_targets(problem)
    if targets:
        return targets[0].frame, targets[0].offset
    names = problem.model.frame_names
    return ("tool0" if "tool0" in names else names[-1]), np.zeros(3)


# ------------------------------------------------------------------ record / rebuild

def _cost_record(cost: Cost) -> dict | None:
    """JSON-able description of one cost term; None for types it does not know."""
    r = getattr(cost, "residual", None)
    if isinstance(cost, ControlCost) or (isinstance(cost, StateCost) and isinstance(r, VectorStateResidual)):
        return {"type": type(cost).__name__, "weight": cost.activation.weights.tolist(),
                "reference": r.reference.tolist()}
    if isinstance(cost, FramePositionCost):
        return {"type": "FramePositionCost", "frame": r.frame, "offset": r.offset.tolist(),
                "target": r.target.tolist(), "weight": cost.weight.tolist()}
    if isinstance(cost, ObstacleCost):
        return {"type": "ObstacleCost", "points": _points(r.points), "center": r.center.tolist(),
                "radius": r.radius, "weight": cost.weight.tolist(), "margin": r.margin,
                "width": cost.activation.width}
    return cost_record(cost)  # a StateCost with a model: the ResidualCost of its StateResidual


def _points(points) -> list:
    return [[n, o.tolist()] for n, o in zip(points.names, points.offsets)]


def _costs_record(cost: Cost | None) -> list[dict]:
    weights = [w for w, _ in cost.terms] if isinstance(cost, Sum) else [1.0]
    records = [(w, _cost_record(c)) for w, c in zip(weights, cost_terms(cost))]
    return [dict(r, scale=w) for w, r in records if r is not None]


def _constraint_record(c) -> dict | None:
    if isinstance(c, SphereClearance):
        return {"type": "SphereClearance", "points": _points(c.points), "center": c.center.tolist(),
                "radius": c.radius, "margin": c.margin}
    if isinstance(c, FramePositionEquality):
        return {"type": "FramePositionEquality", "frame": c.points.names[0],
                "offset": c.points.offsets[0].tolist(), "target": c.target.tolist()}
    if isinstance(c, StateEquality):
        return {"type": "StateEquality", "target": c.target.tolist(), "indices": c.indices.tolist(), "nx": c.ndx}
    return constraint_record(c)


def _bounds(a: np.ndarray) -> list:
    return [float(v) if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in a]


def _package_dirs(model) -> list[str]:
    """Directories that resolve the model's ``package://`` meshes again (from their resolved paths)."""
    try:
        with open(model.source, encoding="utf-8") as f:
            uris = set(re.findall(r"package://([^\"'\s]+)", f.read()))
    except OSError:
        return []
    dirs = {g.filename[: -len(rel) - 1] for g in model.visuals for rel in uris
            if os.path.isabs(g.filename) and g.filename.endswith(os.sep + rel)}
    return sorted(dirs)


def model_record(model) -> dict | None:
    """{"source": URDF path, "package_dirs": [...]} of a model loaded from a file, else None."""
    if not model.source or not os.path.isfile(model.source):
        return None
    return {"source": os.path.abspath(model.source), "package_dirs": _package_dirs(model)}


def record(problem: Problem) -> dict | None:
    """JSON-able description of ``problem`` that :func:`rebuild` reads; None if its model
    was not loaded from a URDF file (built in code: nothing to reload it from), or has a
    floating base (its root joint, gravity and actuation are not part of the record; a
    registered floating-base problem is rebuilt by name)."""
    _require_problem(problem)
    model = model_record(problem.model)
    if model is None or problem.model.nq != problem.model.nv:
        return None
    # the stage constraints are path constraints the Problem sets apart (their residual depends on u): one list
    paths = [r for r in map(_constraint_record, problem.path_constraints + problem.stage_constraints) if r is not None]
    terminals = [r for r in map(_constraint_record, problem.terminal_constraints) if r is not None]
    return {"version": RECORD_VERSION, "model": model, "name": problem.name, "x0": problem.x0.tolist(),
            "N": problem.N, "dt": problem.dt, "substeps": problem.substeps, "integrator": problem.integrator,
            "u_lower": _bounds(problem.u_lower), "u_upper": _bounds(problem.u_upper),
            "running_cost": _costs_record(problem.running_cost),
            "terminal_cost": _costs_record(problem.terminal_cost),
            "path_constraints": paths, "terminal_constraints": terminals}


def _make_cost(model, r: dict) -> Cost:
    kind = r["type"]
    if kind in ("StateCost", "ControlCost"):
        return {"StateCost": StateCost, "ControlCost": ControlCost}[kind](r["weight"], r["reference"])
    if kind == "FramePositionCost":
        return FramePositionCost(model, r["frame"], r["target"], r["weight"], r["offset"])
    if kind == "ObstacleCost":
        return ObstacleCost(model, r["points"], r["center"], r["radius"], r["weight"], r["margin"], r["width"])
    if kind == "ResidualCost":
        return make_cost(model, r)
    raise ValueError(f"record: unknown cost type {kind!r}")


def _make_constraint(model, r: dict):
    kind = r["type"]
    if kind == "SphereClearance":
        return SphereClearance(model, r["points"], r["center"], r["radius"], r["margin"])
    if kind == "FramePositionEquality":
        return FramePositionEquality(model, r["frame"], r["target"], r["offset"])
    if kind == "StateEquality":
        return StateEquality(r["target"], r["indices"], r["nx"])
    if kind in ("ResidualConstraint", "ResidualEquality", "JointLimits"):
        return make_constraint(model, r)
    raise ValueError(f"record: unknown constraint type {kind!r}")


def _make_costs(model, records: list[dict]) -> Cost | None:
    terms = [(r["scale"], _make_cost(model, r)) for r in records]
    return Sum(terms) if terms else None


def rebuild(rec: dict) -> Problem:
    """The problem described by ``rec`` (from :func:`record`); ValueError if it cannot be made."""
    if not isinstance(rec, dict) or rec.get("version") != RECORD_VERSION:
        raise ValueError(f"record: expected a problem record of version {RECORD_VERSION}")
    try:
        source = rec["model"]["source"]
        if not os.path.isfile(source):
            raise ValueError(f"record: the model file {source} no longer exists")
        model = load_urdf(source, package_dirs=rec["model"]["package_dirs"] or None)
        return Problem(model, rec["x0"], rec["N"], rec["dt"], _make_costs(model, rec["running_cost"]),
                       _make_costs(model, rec["terminal_cost"]), substeps=rec["substeps"],
                       integrator=rec["integrator"], u_lower=[float(v) for v in rec["u_lower"]],
                       u_upper=[float(v) for v in rec["u_upper"]],
                       path_constraints=[_make_constraint(model, r) for r in rec["path_constraints"]],
                       terminal_constraints=[_make_constraint(model, r) for r in rec["terminal_constraints"]],
                       name=rec["name"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"record: incomplete problem record ({type(e).__name__}: {e})") from None


# ------------------------------------------------------------------ which problem

def _task_part(rec: dict | None) -> dict | None:
    """A problem record without where its model's files are (a machine's paths) and its format
    version: what the task is."""
    return None if rec is None else {k: v for k, v in rec.items() if k not in ("model", "version")}


def _same_joints(problem: Problem, result: Result) -> Problem:
    """``problem``, if its model's joints are those ``result.extra["joint_names"]`` saved
    (when it saved them), in the same order; ValueError naming both otherwise."""
    saved = result.extra.get("joint_names")
    if saved is not None and list(saved) != list(problem.model.joint_names):
        raise ValueError(f"the result's joints {list(saved)} are not the rebuilt model's "
                         f"{list(problem.model.joint_names)}")
    return problem


def problem_of(result: Result, problem: Problem | None = None, *,
               make: Callable[[str, dict], Problem | None] | None = None) -> Problem:
    """The problem ``result`` was solved on, from the first of these that has it:

    1. ``problem``, if given (it must be a :class:`~optdyn.ocp.problem.Problem`);
    2. ``result.source``, the problem :func:`optdyn.solve` attached (results loaded from
       disk have none);
    3. ``make(result.problem, result.params)``, if ``make`` is given: a lookup of named
       problems (the command line passes one over the ``problems`` registry) returning
       the problem built with those construction parameters, or None for a name it does
       not know — unless the result's record (4.) describes another problem: a problem of
       one's own that happens to share a registered task's name;
    4. the result's ``extra["problem_record"]`` (written by
       :func:`optdyn.apps.io.save_result`), rebuilt by :func:`rebuild`.

    ValueError naming ``problem`` if none of them gives it ("cannot rebuild problem
    'name': ..."), if ``make`` or :func:`rebuild` fails (their reason quoted), if the
    problem found in 3. or 4. has other joints than the result's ``extra["joint_names"]``
    (saved by :func:`optdyn.apps.io.save_result`), or if ``problem`` is not a Problem.
    """
    if problem is None:
        problem = result.source
    if problem is not None:
        _require_problem(problem)
        return problem
    name = result.problem
    try:
        named = None if make is None else make(name, dict(result.params or {}))
        rec = result.extra.get("problem_record")
        if named is not None:
            _require_problem(named)
            if rec is None or _task_part(json.loads(json.dumps(record(named)))) == _task_part(rec):
                return _same_joints(named, result)
        if rec is not None:
            return _same_joints(rebuild(rec), result)
    except (ValueError, TypeError) as e:
        raise ValueError(f"problem: cannot rebuild problem {name!r} ({e})") from None
    registered = "" if make is None else "it is not registered, "
    raise ValueError(f"problem: cannot rebuild problem {name!r}: none was given, the result carries none "
                     f"(results loaded from disk do not), {registered}and it holds no problem record (its model "
                     "was not loaded from a URDF file, or has a floating base); pass problem=...")
