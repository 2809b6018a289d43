"""Activations a(r): the scalar a residual r (K, nr) is turned into by a cost.

The pattern of Crocoddyl's activation models (C. Mastalli et al., "Crocoddyl: An Efficient
and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, Sec. IV-B): a cost
is ℓ = a(r(x, u)), so ℓ_x = r_xᵀ a_r and ℓ_xx = r_xᵀ a_rr r_x + Σ_i (a_r)_i ∇²r_i — the
last term is the residual's contracted Hessian (:mod:`optdyn.ocp.residuals`) with ρ = a_r.

Every activation returns ``(a (K,), a_r (K, nr), a_rr (K, nr))``: its Hessian is diagonal
for all four below (a_rr holds the diagonal). ``weights`` (nr,) scale the entries.

* :class:`WeightedQuadratic`  ½ Σ w_i r_i²  (Crocoddyl: ActivationModelWeightedQuad)
* :class:`QuadraticBarrier`   ½ Σ w_i (max(0, r_i − u_i)² + min(0, r_i − l_i)²)
  (ActivationModelWeightedQuadraticBarrier)
* :class:`PseudoHuber`        Σ w_i δ²(√(1 + (r_i/δ)²) − 1): ≈ ½ w r² near 0, ≈ wδ|r| far
  (ActivationModelSmooth1Norm)
* :class:`LogBarrier`         −Σ w_i (log(r_i − l_i) + log(u_i − r_i)) over finite bounds, +∞ outside
* :class:`RelaxedLogBarrier`  the same, relaxed to a quadratic within δ of a bound: finite everywhere,
  curved inside (a barrier the model of a single solver step still sees far from the bound)
* :class:`Softplus`           Σ w_i β softplus(−r_i/β): ≈ w|r| below 0, ≈ 0 a few β above
  (a smooth one-sided penalty on a clearance r ≥ 0)
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from dynamics._compile import njit


def as_weights(weights, n: int, name: str = "weights") -> np.ndarray:
    """``weights`` (a number or (n,)) as finite numbers ≥ 0 of shape (n,); ValueError naming ``name``."""
    try:
        w = np.array(weights, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or {n} numbers, got {weights!r}") from None
    w = np.full(n, float(w)) if w.ndim == 0 else w
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name}: expected finite numbers ≥ 0 of shape ({n},), got {weights!r}")
    return w


def positive(value, name: str) -> float:
    """``value`` as a finite number > 0; ValueError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number > 0, got {value!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name}: expected a number > 0, got {value!r}")
    return v


def as_bounds(lower, upper, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) as (n,) arrays (numbers or ±inf, lower ≤ upper); ValueError naming the bad one."""
    out = []
    for b, name, default in ((lower, "lower", -np.inf), (upper, "upper", np.inf)):
        try:
            a = np.array(default if b is None else b, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected a number or {n} numbers, got {b!r}") from None
        a = np.full(n, float(a)) if a.ndim == 0 else a
        if a.shape != (n,) or np.any(np.isnan(a)):
            raise ValueError(f"{name}: expected numbers or ±inf of shape ({n},), got {b!r}")
        out.append(a)
    if np.any(out[0] > out[1]):
        raise ValueError(f"lower: expected lower ≤ upper elementwise, got {out[0]} > {out[1]}")
    return out[0], out[1]


class Activation(ABC):
    """a(r) of residual values r (K, nr), with its gradient and diagonal Hessian."""

    size: int

    @abstractmethod
    def evaluate(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a (K,), a_r (K, nr), diagonal of a_rr (K, nr)) at every row of r."""

    def value(self, r: np.ndarray) -> np.ndarray:
        """a (K,) only."""
        return self.evaluate(r)[0]

    def check_size(self, nr: int) -> None:
        """ValueError naming ``activation`` unless it was built for residuals of size nr."""
        if self.size != nr:
            raise ValueError(f"activation: {type(self).__name__} has size {self.size}, the residual has size {nr}")


class WeightedQuadratic(Activation):
    """½ Σ_i w_i r_i²; ``weights`` a number ≥ 0 or (size,)."""

    def __init__(self, size: int, weights=1.0) -> None:
        self.size = int(size)
        self.weights = as_weights(weights, self.size)

    def evaluate(self, r):
        wr = self.weights * r
        return 0.5 * np.sum(wr * r, axis=1), wr, np.repeat(self.weights[None], r.shape[0], axis=0)

    def value(self, r):
        return 0.5 * np.einsum("i,ki,ki->k", self.weights, r, r)


class QuadraticBarrier(Activation):
    """½ Σ_i w_i e_i², e_i = max(0, r_i − upper_i) + min(0, r_i − lower_i): zero between the
    bounds, quadratic outside (bounds numbers or ±inf, lower ≤ upper; ``size`` when both are numbers)."""

    def __init__(self, lower, upper, weights=1.0, size: int | None = None) -> None:
        self.lower, self.upper = as_bounds(lower, upper, max(np.size(lower), np.size(upper)) if size is None else size)
        self.size = self.lower.size
        self.weights = as_weights(weights, self.size)

    def evaluate(self, r):
        e = np.maximum(0.0, r - self.upper) + np.minimum(0.0, r - self.lower)
        we = self.weights * e
        return 0.5 * np.sum(we * e, axis=1), we, self.weights * (e != 0.0)


class PseudoHuber(Activation):
    """Σ_i w_i δ² (√(1 + (r_i/δ)²) − 1), a smooth |r| of slope w δ beyond |r| ≫ δ
    (P. J. Huber, "Robust Estimation of a Location Parameter", 1964; the smooth form of
    R. Hartley, A. Zisserman, "Multiple View Geometry", 2003, App. 6.8); ``delta`` > 0."""

    def __init__(self, size: int, delta: float = 1.0, weights=1.0) -> None:
        self.size, self.delta, self.weights = int(size), positive(delta, "delta"), as_weights(weights, int(size))

    def evaluate(self, r):
        d, w = self.delta, self.weights
        s = np.sqrt(1.0 + (r / d) ** 2)
        return np.sum(w * d * d * (s - 1.0), axis=1), w * r / s, w / s ** 3


def barrier_bounds(lower, upper, size: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of :func:`as_bounds` (``size`` entries, or as many as the bounds given),
    each entry with a finite lower or upper bound (a barrier on nothing: ValueError naming ``lower``)."""
    lower, upper = as_bounds(lower, upper, max(np.size(lower), np.size(upper)) if size is None else size)
    if not np.all(np.isfinite(lower) | np.isfinite(upper)):
        raise ValueError("lower: every entry needs a finite lower or upper bound")
    return lower, upper


class LogBarrier(Activation):
    """−Σ_i w_i (log(r_i − lower_i) + log(upper_i − r_i)), each term only where its bound is
    finite; +∞ (gradient NaN) outside the open box: a start strictly inside is needed
    (``size`` when both bounds are numbers)."""

    def __init__(self, lower, upper, weights=1.0, size: int | None = None) -> None:
        self.lower, self.upper = barrier_bounds(lower, upper, size)
        self.size = self.lower.size
        self.weights = as_weights(weights, self.size)

    def evaluate(self, r):
        lo, hi = np.isfinite(self.lower).astype(float), np.isfinite(self.upper).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            a, b = np.where(lo > 0, r - self.lower, 1.0), np.where(hi > 0, self.upper - r, 1.0)
            inside = (a > 0) & (b > 0)
            value = -np.sum(self.weights * (np.log(a) + np.log(b)), axis=1)
            value = np.where(np.all(inside, axis=1), value, np.inf)
            grad = self.weights * (-lo / a + hi / b)
            hess = self.weights * (lo / a ** 2 + hi / b ** 2)
        return value, np.where(inside, grad, np.nan), np.where(inside, hess, np.nan)


class Softplus(Activation):
    """Σ_i w_i β log(1 + exp(−r_i/β)), a smooth max(0, −r) of slope w (C. Dugas et al.,
    "Incorporating second-order functional knowledge for better option pricing", NIPS 2000);
    ``width`` β > 0 sets how soft: a_r = −w σ(−r/β), a_rr = (w/β) σ (1 − σ)."""

    def __init__(self, size: int, width: float = 0.02, weights=1.0) -> None:
        self.size, self.width, self.weights = int(size), positive(width, "width"), as_weights(weights, int(size))

    def evaluate(self, r):
        beta, w = self.width, self.weights
        z = -r / beta
        sig = 0.5 * (1.0 + np.tanh(0.5 * z))  # σ(z), overflow-safe
        return np.sum(w * beta * np.logaddexp(0.0, z), axis=1), -w * sig, w / beta * sig * (1.0 - sig)


class RelaxedLogBarrier(Activation):
    """Σ_i w_i (β(r_i − lower_i) + β(upper_i − r_i)), each term only where its bound is
    finite, with the relaxed logarithmic barrier of J. Hauser and A. Saccon, "A barrier
    function method for the optimization of trajectory functionals with constraints", CDC
    2006 (Sec. III, k = 2), here shifted to vanish at z = δ:

        β(z) = −log(z/δ)                 for z > δ,
        β(z) = ½(((z − 2δ)/δ)² − 1)       for z ≤ δ,

    C² at z = δ (β' = −1/z, β'' = 1/z² inside; (z − 2δ)/δ², 1/δ² below δ), finite outside
    the bounds, where it grows as a quadratic penalty of slope 2w/δ at the bound. Unlike
    :class:`QuadraticBarrier` its curvature w/z² is never zero inside, so a Gauss–Newton model
    sees a bound before a step crosses it; unlike :class:`LogBarrier` it needs no start inside.
    The relaxed barrier of model predictive control (C. Feller and C. Ebenbauer, "Relaxed
    logarithmic barrier function based model predictive control of linear systems", IEEE
    TAC 2017). ``delta`` δ > 0 in the units of r; ``size`` when both bounds are numbers."""

    def __init__(self, lower, upper, delta: float = 1.0, weights=1.0, size: int | None = None) -> None:
        self.lower, self.upper = barrier_bounds(lower, upper, size)
        self.size, self.delta = self.lower.size, positive(delta, "delta")
        self.weights = as_weights(weights, self.size)

    def evaluate(self, r):
        return relaxed_log_barrier(np.ascontiguousarray(r, dtype=float), self.lower, self.upper, self.delta,
                                   self.weights)


@njit(cache=True)
def relaxed_log_barrier(r, lower, upper, delta, weights):
    """(a (K,), a_r (K, nr), a_rr (K, nr)) of :class:`RelaxedLogBarrier` at r (K, nr), bounds
    lower, upper (nr,), in one compiled pass over the knots: the terms of the finite lower
    bounds, z = r − lower, then of the finite upper ones, z = upper − r (a_r with the sign of dz/dr)."""
    K, n = r.shape
    a, a_r, a_rr = np.zeros(K), np.zeros((K, n)), np.zeros((K, n))
    for k in range(K):
        for bounds, sign in ((lower, 1.0), (upper, -1.0)):
            total = 0.0
            for i in range(n):
                if not np.isfinite(bounds[i]):
                    continue
                z = sign * (r[k, i] - bounds[i])
                if z > delta:  # β = −log(z/δ), β' = −1/z, β'' = 1/z²
                    b, b1, b2 = -np.log(z / delta), -1.0 / z, 1.0 / (z * z)
                else:  # β = ½(((z − 2δ)/δ)² − 1), β' = (z − 2δ)/δ², β'' = 1/δ²
                    b, b1, b2 = 0.5 * (((z - 2.0 * delta) / delta) ** 2 - 1.0), (z - 2.0 * delta) / delta ** 2, \
                        1.0 / delta ** 2
                total += weights[i] * b
                a_r[k, i] += sign * weights[i] * b1
                a_rr[k, i] += weights[i] * b2
            a[k] += total
    return a, a_r, a_rr
