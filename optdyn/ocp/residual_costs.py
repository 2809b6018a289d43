"""Costs ℓ = w_k · a(r(x, u)): a residual (:mod:`optdyn.ocp.residuals`) under an activation
(:mod:`optdyn.ocp.activations`), Crocoddyl's ``CostModelResidual`` (C. Mastalli et al.,
"Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control",
ICRA 2020, Sec. IV-B), with the exact Hessian

    ℓ_xx = w (r_xᵀ a_rr r_x + Σ_i (a_r)_i ∇²_xx r_i)      (likewise ℓ_ux, ℓ_uu),

the second term the residual's Hessian contracted with ρ = a_r. ``weight`` is a number ≥ 0
or one per knot (K,) (K = N for a running cost, 1 for a terminal cost).

The named costs are ½ w ‖r‖² of one residual:

* :class:`FramePlacementCost`   ½ w ‖log₆(T⁻¹ M(q))‖²
* :class:`FrameOrientationCost` ½ w ‖log₃(R*ᵀ R(q))‖²
* :class:`FrameVelocityCost`    ½ w ‖V(q, v) − V*‖² (local or world-aligned twist)
* :class:`CoMPositionCost`      ½ w ‖c(q) − c*‖²
"""
from __future__ import annotations

import numpy as np

from dynamics.model import Model

from .activations import Activation, WeightedQuadratic
from .costs import Cost
from .residuals import (CoMPositionResidual, FrameOrientationResidual, FramePlacementResidual,
                        FrameVelocityResidual, Residual, references)


def knot_weights(weight, name: str = "weight") -> np.ndarray:
    """``weight`` as a number ≥ 0 (shape ()) or per-knot numbers ≥ 0 (K,); ValueError naming ``name``."""
    try:
        w = np.array(weight, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number ≥ 0 or one per knot, got {weight!r}") from None
    if w.ndim > 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name}: expected a finite number ≥ 0 or one per knot (K,), got {weight!r}")
    return w


class ResidualCost(Cost):
    """ℓ = w · a(r(x, u)) of ``residual`` under ``activation`` (default ½‖r‖²), ``weight`` w."""

    def __init__(self, residual: Residual, activation: Activation | None = None, weight=1.0) -> None:
        if not isinstance(residual, Residual):
            raise ValueError(f"residual: expected an optdyn residual, got {type(residual).__name__}")
        activation = WeightedQuadratic(residual.size) if activation is None else activation
        if not isinstance(activation, Activation):
            raise ValueError(f"activation: expected an optdyn activation, got {type(activation).__name__}")
        activation.check_size(residual.size)
        self.residual, self.activation, self.weight = residual, activation, knot_weights(weight)
        self.ndx, self.nu, self.depends_on_x = residual.ndx, residual.nu, residual.depends_on_x

    def residuals(self) -> list:
        return [self.residual]

    def _weights(self, K: int) -> np.ndarray:
        if self.weight.ndim == 1 and self.weight.size != K:
            raise ValueError(f"weight: one weight per knot was given for {self.weight.size} knots, "
                             f"but {K} knots are evaluated")
        return np.broadcast_to(self.weight, (K,))

    def value(self, xs, us):
        return self._weights(xs.shape[0]) * self.activation.value(self.residual.value(xs, us))

    def evaluate(self, xs, us):
        K = xs.shape[0]
        t = self.residual.evaluate(xs, us)
        a, ar, arr = self.activation.evaluate(t.r)
        Hxx, Hux, Huu = t.hessians(ar)
        w = self._weights(K)
        l = w * a
        lx = w[:, None] * np.einsum("ki,kia->ka", ar, t.rx)
        lu = w[:, None] * np.einsum("ki,kia->ka", ar, t.ru)
        lxx = w[:, None, None] * (np.einsum("kia,ki,kib->kab", t.rx, arr, t.rx) + Hxx)
        lux = w[:, None, None] * (np.einsum("kia,ki,kib->kab", t.ru, arr, t.rx) + Hux)
        luu = w[:, None, None] * (np.einsum("kia,ki,kib->kab", t.ru, arr, t.ru) + Huu)
        return l, lx, lu, lxx, lux, luu


class FramePlacementCost(ResidualCost):
    """½ w ‖log₆(T⁻¹ M(q))‖² of frame ``frame``; ``target`` T a rigid transform (4, 4) or (K, 4, 4)."""

    def __init__(self, model: Model, frame: str, target, weight=1.0) -> None:
        super().__init__(FramePlacementResidual(model, frame, target), weight=weight)


class FrameOrientationCost(ResidualCost):
    """½ w ‖log₃(R*ᵀ R(q))‖² of frame ``frame``; ``R`` a rotation (3, 3) or (K, 3, 3)."""

    def __init__(self, model: Model, frame: str, R, weight=1.0) -> None:
        super().__init__(FrameOrientationResidual(model, frame, R), weight=weight)


class FrameVelocityCost(ResidualCost):
    """½ w ‖V(q, v) − target‖² of the twist of frame ``frame`` ([linear; angular] in the
    frame's axes, ``reference="local"``, or world-aligned, ``"world"``); ``target`` (6,) or (K, 6)."""

    def __init__(self, model: Model, frame: str, weight=1.0, target=np.zeros(6), reference: str = "local") -> None:
        super().__init__(FrameVelocityResidual(model, frame, target, reference), weight=weight)


class CoMPositionCost(ResidualCost):
    """½ w ‖c(q) − target‖² of the centre of mass; ``target`` (3,) or (K, 3)."""

    def __init__(self, model: Model, target, weight=1.0) -> None:
        super().__init__(CoMPositionResidual(model, references(target, (3,), "target")), weight=weight)
