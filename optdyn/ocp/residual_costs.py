"""Costs ℓ = w_k · a(r(x, u)): a residual (:mod:`optdyn.ocp.residuals`) under an activation
(:mod:`optdyn.ocp.activations`), Crocoddyl's ``CostModelResidual`` (C. Mastalli et al.,
"Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control",
ICRA 2020, Sec. IV-B), with the exact Hessian

    ℓ_xx = w (r_xᵀ a_rr r_x + Σ_i (a_r)_i ∇²_xx r_i)      (likewise ℓ_ux, ℓ_uu),

the second term the residual's Hessian contracted with ρ = a_r. ``weight`` is a number ≥ 0
or one per knot (K,) (K = N for a running cost, 1 for a terminal cost).

The named costs are ½ w ‖r‖² of one residual (the state and control costs ½ Σ_i w_i r_i²):

* :class:`StateCost`            ½ Σ_i w_i (x ⊖ x̄)_i² (x − x̄ without a model)
* :class:`ControlCost`          ½ Σ_i w_i (u_i − ū_i)²
* :class:`FramePositionCost`    ½ w ‖p(q) − p*‖², p a point fixed in a frame (end effector)
* :class:`ObstacleCost`         Σ_j w β softplus(−d_j/β) of the clearances d_j of points from a sphere
* :class:`FramePlacementCost`   ½ w ‖log₆(T⁻¹ M(q))‖²
* :class:`FrameOrientationCost` ½ w ‖log₃(R*ᵀ R(q))‖²
* :class:`FrameVelocityCost`    ½ w ‖V(q, v) − V*‖² (local or world-aligned twist)
* :class:`CoMPositionCost`      ½ w ‖c(q) − c*‖²
"""
from __future__ import annotations

import numpy as np

from dynamics._compile import njit
from dynamics.model import Model

from .activations import Activation, Softplus, WeightedQuadratic, as_weights
from .costs import Cost, _vector
from .residuals import (CoMPositionResidual, ControlResidual, FrameOrientationResidual, FramePlacementResidual,
                        FramePositionResidual, FrameVelocityResidual, Residual, SphereClearanceResidual, StateResidual,
                        VectorStateResidual, references)


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
        return self._terms(xs, us, gauss_newton=False)

    def gauss_newton(self, xs, us):
        """ℓ and ℓ_x, ℓ_u as :meth:`evaluate`, with the Gauss–Newton Hessians
        ℓ_xx = w r_xᵀ a_rr r_x (likewise ℓ_ux, ℓ_uu): the residual's curvature Σ_i (a_r)_i ∇²r_i
        left out (what Crocoddyl's cost models give, Mastalli et al. 2020)."""
        return self._terms(xs, us, gauss_newton=True)

    def _terms(self, xs, us, gauss_newton: bool):
        K, nu = xs.shape[0], us.shape[1]
        ndx = self.ndx if self.ndx is not None else xs.shape[1]
        out = (np.zeros(K), np.zeros((K, ndx)), np.zeros((K, nu)), np.zeros((K, ndx, ndx)),
               np.zeros((K, nu, ndx)), np.zeros((K, nu, nu)))
        self.add_to(xs, us, 1.0, out, gauss_newton)
        return out

    def add_to(self, xs, us, w, out, gauss_newton=False):
        """out += w·ℓ's terms without new arrays of their size: the chain rule adds
        w_k r_xᵀ a_rr r_x and the gradients, the residual adds its curvature at ρ = w_k a_r
        (∇²(ρᵀr) is linear in ρ) into out's Hessians."""
        self.add_pooled(xs, us, w, out, gauss_newton, None)

    def add_pooled(self, xs, us, w, out, gauss_newton, pools):
        """:meth:`add_to`, the curvature of a residual that pools its second order with others'
        added to ``pools`` (if given) instead (:meth:`optdyn.ocp.costs.Cost.add_pooled`)."""
        l, lx, lu, lxx, lux, luu = out
        t = self.residual.evaluate_shared(xs, us)
        a, ar, arr = self.activation.evaluate(t.r)
        wk = w * self._weights(xs.shape[0])
        l += wk * a
        x = self.depends_on_x
        # no copies for the library's residuals and activations (C-contiguous where created); a
        # user residual's other layouts are copied here
        c = [np.ascontiguousarray(v, dtype=float) for v in (wk, ar, arr, t.rx, t.ru)]
        chain_rule(*c, x, lx, lu, lxx, lux, luu)
        if gauss_newton:
            return
        if pools is not None and t.pooled is not None:
            pools.add(t.pooled, wk[:, None] * ar, x)
        else:
            t.add_hessians(wk[:, None] * ar, lxx if x else None, lux if x else None, luu)


@njit(cache=True)
def chain_rule(w, ar, arr, rx, ru, x, lx, lu, Hxx, Hux, Huu):
    """Adds the derivatives of ℓ = w a(r) at K knots but the residual's curvature, from the
    residual's and the activation's (a_rr diagonal): ℓ_x = w r_xᵀ a_r, ℓ_u = w r_uᵀ a_r into
    lx (K, ndx), lu (K, nu), and w r_xᵀ a_rr r_x, w r_uᵀ a_rr r_x, w r_uᵀ a_rr r_u into H_xx,
    H_ux, H_uu (the x-derivatives only if ``x``: a cost that depends on x).

    The products r_xᵀ a_rr r_x run, row by row of r, over the nonzero entries of that row
    only (a state residual's row has one, a frame residual's none in the v columns, a control
    residual's r_x none): the sums are those of the dense product, in the same order."""
    K, nr, ndx, nu = rx.shape[0], rx.shape[1], rx.shape[2], ru.shape[2]
    jx, ju = np.empty(ndx, np.int64), np.empty(nu, np.int64)
    Gxx, Gux, Guu = np.empty((ndx, ndx)), np.empty((nu, ndx)), np.empty((nu, nu))
    for k in range(K):
        if x:
            _gradient(w[k], ar[k], rx[k], lx[k])
        _gradient(w[k], ar[k], ru[k], lu[k])
        Gxx[:] = 0.0
        Gux[:] = 0.0
        Guu[:] = 0.0
        for i in range(nr):
            if arr[k, i] == 0.0:
                continue
            mx, mu = _nonzero(rx[k, i], jx) if x else 0, _nonzero(ru[k, i], ju)
            _add_outer(rx[k, i], jx[:mx], arr[k, i], rx[k, i], jx[:mx], Gxx)  # r_xᵢᵀ a_rr,ii r_xᵢ
            _add_outer(ru[k, i], ju[:mu], arr[k, i], rx[k, i], jx[:mx], Gux)
            _add_outer(ru[k, i], ju[:mu], arr[k, i], ru[k, i], ju[:mu], Guu)
        if x:
            _add_scaled(w[k], Gxx, Hxx[k])
            _add_scaled(w[k], Gux, Hux[k])
        _add_scaled(w[k], Guu, Huu[k])


@njit(cache=True, inline="always")
def _gradient(w, ar, J, g):
    """g += w Jᵀ a_r."""
    for a in range(J.shape[1]):
        s = 0.0
        for i in range(J.shape[0]):
            s += ar[i] * J[i, a]
        g[a] += w * s


@njit(cache=True, inline="always")
def _nonzero(row, idx):
    """The indices of the nonzero entries of ``row`` into idx; returns their count."""
    m = 0
    for a in range(row.shape[0]):
        if row[a] != 0.0:
            idx[m] = a
            m += 1
    return m


@njit(cache=True, inline="always")
def _add_outer(a_row, ia, d, b_row, ib, G):
    """G[a, b] += a_a d b_b over the listed entries a ∈ ia, b ∈ ib."""
    for a in ia:
        for b in ib:
            G[a, b] += a_row[a] * d * b_row[b]


@njit(cache=True, inline="always")
def _add_scaled(w, G, H):
    """H += w G."""
    for a in range(H.shape[0]):
        for b in range(H.shape[1]):
            H[a, b] += w * G[a, b]


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


def _size(weight, reference, n: int | None) -> int:
    """The dimension of a state or control cost: ``n``, else that of the reference or weights."""
    if n is None:
        n = np.size(reference) if reference is not None else np.size(weight)
        if n == 1 and np.ndim(weight) == 0 and reference is None:
            raise ValueError("size: give a reference, a weight vector or the dimension")
    return n


class StateCost(ResidualCost):
    """½ Σ_i w_i (x ⊖ x̄)_i²; ``weight`` scalar or (ndx,), ``reference`` x̄ (nx,) (default 0),
    with ``model`` also one per knot (K, nx): the weighted quadratic of a state residual.

    Without ``model`` the state is a vector (:class:`~optdyn.ocp.residuals.VectorStateResidual`,
    x ⊖ x̄ = x − x̄, nx = ndx). With ``model`` the residual is the state difference
    (:class:`~optdyn.ocp.residuals.StateResidual`: x̄ (nq + nv,), weights (2·nv,), the default
    reference the neutral configuration at rest) with its exact curvature on Lie joints.
    """

    def __init__(self, weight, reference=None, nx: int | None = None, model: Model | None = None) -> None:
        if model is None:
            n = _size(weight, reference, nx)
            ref = np.zeros(n) if reference is None else _vector(reference, n, "reference")
            residual = VectorStateResidual(reference=ref)
        else:
            residual = StateResidual(model, reference)
        super().__init__(residual, WeightedQuadratic(residual.size, as_weights(weight, residual.size, "weight")))


class ControlCost(ResidualCost):
    """½ Σ_i w_i (u_i − ū_i)²; ``weight`` scalar or (nu,), ``reference`` (nu,) (default 0):
    the weighted quadratic of :class:`~optdyn.ocp.residuals.ControlResidual`."""

    def __init__(self, weight, reference=None, nu: int | None = None) -> None:
        n = _size(weight, reference, nu)
        residual = ControlResidual(reference=np.zeros(n) if reference is None else _vector(reference, n, "reference"))
        super().__init__(residual, WeightedQuadratic(n, as_weights(weight, n, "weight")))


class FramePositionCost(ResidualCost):
    """½ w ‖p(q) − target‖² of the point ``offset`` (3,) fixed in frame ``frame``
    (:class:`~optdyn.ocp.residuals.FramePositionResidual`); ``target`` (3,) or (K, 3)."""

    def __init__(self, model: Model, frame: str, target, weight=1.0, offset=(0.0, 0.0, 0.0)) -> None:
        target = _vector(target, 3, "target") if np.ndim(target) == 0 else target
        super().__init__(FramePositionResidual(model, frame, target, offset), weight=weight)


class ObstacleCost(ResidualCost):
    """Σ_j w β softplus(−d_j/β) with d_j = ‖p_j − center‖ − radius − margin: the
    :class:`~optdyn.ocp.activations.Softplus` of a
    :class:`~optdyn.ocp.residuals.SphereClearanceResidual`.

    ``points``: [(frame name, offset (3,)), ...] fixed on links; ``width`` β (m) sets how
    soft the penalty is (≈ w·|d| inside, ≈ 0 beyond a few β outside).
    """

    def __init__(self, model: Model, points, center, radius: float, weight: float,
                 margin: float = 0.0, width: float = 0.02) -> None:
        residual = SphereClearanceResidual(model, points, _vector(center, 3, "center"), radius, margin)
        super().__init__(residual, Softplus(residual.size, width), weight)
