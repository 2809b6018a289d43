"""JSON-able records of the residual terms, so that a saved result rebuilds them
(:func:`optdyn.ocp.task.record` / :func:`optdyn.ocp.task.rebuild`).

A :class:`~optdyn.ocp.residual_costs.ResidualCost` is written as its residual, activation
and weight; :class:`~optdyn.ocp.constraints.ResidualConstraint`,
:class:`~optdyn.ocp.constraints.ResidualEquality` as their residual (and bounds, or the rows an
equality holds when not all: ``"rows"``, absent from records of every row);
:class:`~optdyn.ocp.constraints.JointLimits` by its options. The named costs
(``FramePlacementCost`` …) come back as the ResidualCost they are, joint residuals as the
:class:`~optdyn.ocp.residuals.StateResidual` they are. A user residual (NumPy code) has
no record: like any term of unknown type it is left out.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dynamics.model import Model

from .activations import (Activation, LogBarrier, PseudoHuber, QuadraticBarrier, RelaxedLogBarrier, Softplus,
                          WeightedQuadratic)
from .constraints import JointLimits, ResidualConstraint, ResidualEquality
from .relative_residuals import RelativePlacementResidual, RelativePositionResidual
from .residual_costs import ResidualCost
from .residuals import (CoMPositionResidual, ControlResidual, FrameOrientationResidual, FramePlacementResidual,
                        FramePositionResidual, FrameVelocityResidual, Residual, SphereClearanceResidual,
                        StateResidual, VectorStateResidual)

# type → (fields written from the object, function making it again from (model, record))
_RESIDUALS: dict[type, tuple[Callable, Callable]] = {
    StateResidual: (lambda r: {"reference": r.reference, "rows": r.rows},
                    lambda m, d: StateResidual(m, d["reference"], d["rows"])),
    VectorStateResidual: (lambda r: {"reference": r.reference},
                          lambda m, d: VectorStateResidual(reference=d["reference"])),
    SphereClearanceResidual: (lambda r: {"points": [[n, o] for n, o in zip(r.points.names, r.points.offsets.tolist())],
                                         "center": r.center, "radius": r.radius, "margin": r.margin},
                              lambda m, d: SphereClearanceResidual(m, d["points"], d["center"], d["radius"],
                                                                   d["margin"])),
    ControlResidual: (lambda r: {"reference": r.reference, "ndx": r.ndx},
                      lambda m, d: ControlResidual(reference=d["reference"], ndx=d["ndx"])),
    FramePositionResidual: (lambda r: {"frame": r.frame, "target": r.target, "offset": r.offset},
                            lambda m, d: FramePositionResidual(m, d["frame"], d["target"], d["offset"])),
    CoMPositionResidual: (lambda r: {"target": r.target}, lambda m, d: CoMPositionResidual(m, d["target"])),
    FramePlacementResidual: (lambda r: {"frame": r.motion.frame, "target": r.target},
                             lambda m, d: FramePlacementResidual(m, d["frame"], d["target"])),
    FrameOrientationResidual: (lambda r: {"frame": r.motion.frame, "rotation": r.target[..., :3, :3]},
                               lambda m, d: FrameOrientationResidual(m, d["frame"], d["rotation"])),
    FrameVelocityResidual: (lambda r: {"frame": r.motion.frame, "target": r.target, "reference": r.reference},
                            lambda m, d: FrameVelocityResidual(m, d["frame"], d["target"], d["reference"])),
    RelativePlacementResidual: (lambda r: {"frame": r.motion.frame, "relative_to": r.motion.relative_to,
                                           "target": r.target},
                                lambda m, d: RelativePlacementResidual(m, d["frame"], d["relative_to"], d["target"])),
    RelativePositionResidual: (lambda r: {"frame": r.motion.frame, "relative_to": r.motion.relative_to,
                                          "target": r.target},
                               lambda m, d: RelativePositionResidual(m, d["frame"], d["relative_to"], d["target"])),
}
_ACTIVATIONS: dict[type, tuple[Callable, Callable]] = {
    WeightedQuadratic: (lambda a: {"size": a.size, "weights": a.weights},
                        lambda d: WeightedQuadratic(d["size"], d["weights"])),
    QuadraticBarrier: (lambda a: {"lower": a.lower, "upper": a.upper, "weights": a.weights},
                       lambda d: QuadraticBarrier(d["lower"], d["upper"], d["weights"])),
    PseudoHuber: (lambda a: {"size": a.size, "delta": a.delta, "weights": a.weights},
                  lambda d: PseudoHuber(d["size"], d["delta"], d["weights"])),
    LogBarrier: (lambda a: {"lower": a.lower, "upper": a.upper, "weights": a.weights},
                 lambda d: LogBarrier(d["lower"], d["upper"], d["weights"])),
    Softplus: (lambda a: {"size": a.size, "width": a.width, "weights": a.weights},
               lambda d: Softplus(d["size"], d["width"], d["weights"])),
    RelaxedLogBarrier: (lambda a: {"lower": a.lower, "upper": a.upper, "delta": a.delta, "weights": a.weights},
                        lambda d: RelaxedLogBarrier(d["lower"], d["upper"], d["delta"], d["weights"])),
}


def _plain(fields: dict) -> dict:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in fields.items()}


def _lookup(table: dict, obj) -> tuple[str, tuple[Callable, Callable]] | None:
    """(type name, entry) of the most specific recorded type ``obj`` is an instance of."""
    for cls in type(obj).__mro__:
        if cls in table:
            return cls.__name__, table[cls]
    return None


def _record(table: dict, obj) -> dict | None:
    found = _lookup(table, obj)
    return None if found is None else dict(_plain(found[1][0](obj)), type=found[0])


def _make(table: dict, d: dict, *model) -> Residual | Activation:
    for cls, (_, make) in table.items():
        if cls.__name__ == d.get("type"):
            return make(*model, d)
    raise ValueError(f"record: unknown term type {d.get('type')!r}")


def cost_record(cost) -> dict | None:
    """Record of a :class:`ResidualCost` (None for another cost or a user residual)."""
    if not isinstance(cost, ResidualCost):
        return None
    residual, activation = _record(_RESIDUALS, cost.residual), _record(_ACTIVATIONS, cost.activation)
    if residual is None or activation is None:
        return None
    return {"type": "ResidualCost", "residual": residual, "activation": activation, "weight": cost.weight.tolist()}


def constraint_record(c) -> dict | None:
    """Record of a residual constraint or joint limits (None for other constraints)."""
    if isinstance(c, JointLimits):
        return {"type": "JointLimits", "position": c.position, "velocity": c.velocity, "margin": c.margin}
    if not isinstance(c, (ResidualConstraint, ResidualEquality)):
        return None
    residual = _record(_RESIDUALS, c.residual)
    if residual is None:
        return None
    scale = {} if np.all(c.scale == 1.0) else {"scale": c.scale.tolist()}  # unscaled: the first format
    if isinstance(c, ResidualEquality):
        every = np.array_equal(c.rows, np.arange(c.residual.size))  # every row in order: the first format
        rows = {} if every else {"rows": c.rows.tolist()}
        return {"type": "ResidualEquality", "residual": residual, **rows, **scale}
    return {"type": "ResidualConstraint", "residual": residual, "lower": c.lower.tolist(), "upper": c.upper.tolist(),
            **scale}


def make_cost(model: Model, d: dict) -> ResidualCost:
    """The cost of a :func:`cost_record`."""
    return ResidualCost(_make(_RESIDUALS, d["residual"], model), _make(_ACTIVATIONS, d["activation"]), d["weight"])


def make_constraint(model: Model, d: dict):
    """The constraint of a :func:`constraint_record`."""
    if d["type"] == "JointLimits":
        return JointLimits(model, d["position"], d["velocity"], d["margin"])
    residual = _make(_RESIDUALS, d["residual"], model)
    if d["type"] == "ResidualEquality":
        return ResidualEquality(residual, d.get("rows"), scale=d.get("scale", 1.0))
    return ResidualConstraint(residual, d["lower"], d["upper"], scale=d.get("scale", 1.0))
