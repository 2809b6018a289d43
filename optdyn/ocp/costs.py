"""Stage and terminal costs: the interface, sums, and the points fixed on links they may measure.

A cost ℓ(x, u) is evaluated over K knots at once (``xs`` (K, nx), ``us`` (K, nu)) and
returns ``(l (K,), lx (K,nx), lu (K,nu), lxx (K,nx,nx), lux (K,nu,nx), luu (K,nu,nu))``,
unweighted by dt (the problem multiplies running costs by dt). Derivatives w.r.t. x are
taken in the tangent space at x (:mod:`optdyn.ocp.state`): lx has ndx = 2·nv columns, which is
nx for a model of revolute/prismatic joints. Used as a terminal cost,
its control part is ignored. Costs add (``c1 + c2``) and scale (``0.5 * c``).

* :class:`Cost`      the interface (``evaluate``, ``value``, ``check_dims``)
* :class:`Sum`       Σ_j w_j ℓ_j
* :class:`PointSet`  points fixed on links, their kinematics and distances to a sphere

Every named cost (state, control, frame position, obstacle, poses, velocities, centre of
mass) is a residual under an activation: :mod:`optdyn.ocp.residual_costs`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from dynamics._compile import njit
from dynamics.batch import point_kinematics_knots
from dynamics.kinematics_derivatives import body_point
from dynamics.model import Model

from .pooled import Pools


class PointSet:
    """Points fixed on links, given as [(frame name, offset (3,) in that frame), ...].

    Resolved once to their bodies (P,) and positions in the body frames (P, 3); the
    kinematics of all points at all knots are computed in one compiled call.
    """

    def __init__(self, model: Model, points) -> None:
        try:
            points = [(f, np.array(o, dtype=float)) for f, o in points]
        except (TypeError, ValueError):
            raise ValueError(f"points: expected [(frame name, offset (3,)), ...], got {points!r}") from None
        if not points:
            raise ValueError("points: expected at least one (frame name, offset) pair")
        bodies, local = [], []
        for frame, offset in points:
            if not isinstance(frame, str):
                raise ValueError(f"points: expected a frame name (str), got {frame!r}")
            if offset.shape != (3,) or not np.all(np.isfinite(offset)):
                raise ValueError(f"points: offset of {frame!r} must be 3 finite numbers, got {offset}")
            body, o = body_point(model, frame, offset)
            bodies.append(body)
            local.append(o)
        self.model = model
        self.names = tuple(f for f, _ in points)
        self.offsets = np.array([o for _, o in points])
        self.bodies = np.array(bodies, dtype=np.int64)
        self.local = np.array(local)

    def __len__(self) -> int:
        return len(self.bodies)

    def kinematics(self, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World positions p (K,P,3), Jacobians J (K,P,3,nv) and Hessians H (K,P,3,nv,nv)
        (H[.., i, a, b] = ∂²p_i/∂q_a∂q_b, tangent-space derivatives) at configurations qs (K, nq)."""
        m = self.model
        return point_kinematics_knots(m.arrays, np.ascontiguousarray(qs), self.bodies, self.local)

    def positions(self, qs: np.ndarray) -> np.ndarray:
        """World positions (K, P, 3) only (no Jacobians or Hessians computed)."""
        m = self.model
        return point_kinematics_knots(m.arrays, np.ascontiguousarray(qs), self.bodies, self.local, False)

    def sphere_distance(self, qs: np.ndarray, center: np.ndarray, derivatives: bool = True):
        """Distances d (K,P) of the points to ``center`` and, with ``derivatives``, their
        gradients (K,P,nv) and Hessians (K,P,nv,nv) w.r.t. q (else None, None)."""
        if not derivatives:
            return np.linalg.norm(self.positions(qs) - center, axis=2), None, None
        p, J, H = self.kinematics(qs)
        K, P, nv = p.shape[0], p.shape[1], self.model.nv
        d, dd, ddd = np.empty((K, P)), np.empty((K, P, nv)), np.empty((K, P, nv, nv))
        sphere_distance(p, J, H, center, d, dd, ddd)
        return d, dd, ddd


def _vector(x, n: int, name: str) -> np.ndarray:
    """Scalar or (n,) finite array broadcast to (n,)."""
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number or {n} numbers, got {x!r}") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected a finite number or shape ({n},), got {x!r}")
    return a


def _nonnegative(w, name: str) -> float:
    if not (isinstance(w, (int, float, np.floating, np.integer)) and np.isfinite(w) and w >= 0):
        raise ValueError(f"{name}: expected a finite number ≥ 0, got {w!r}")
    return float(w)


def _zeros(K: int, nx: int, nu: int) -> tuple[np.ndarray, ...]:
    return (np.zeros(K), np.zeros((K, nx)), np.zeros((K, nu)), np.zeros((K, nx, nx)),
            np.zeros((K, nu, nx)), np.zeros((K, nu, nu)))


class Cost(ABC):
    """Abstract base: subclasses implement ``evaluate`` (and may speed up ``value``)."""

    ndx: int | None = None
    nu: int | None = None
    depends_on_x: bool = True  # False: lx, lxx, lux are zero (a control cost)

    @abstractmethod
    def evaluate(self, xs: np.ndarray, us: np.ndarray) -> tuple[np.ndarray, ...]:
        """(l, lx, lu, lxx, lux, luu) at every knot; shapes in the module docstring."""

    def value(self, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
        """l (K,) only."""
        return self.evaluate(xs, us)[0]

    def gauss_newton(self, xs: np.ndarray, us: np.ndarray) -> tuple[np.ndarray, ...]:
        """``evaluate`` with the Gauss–Newton Hessians of a residual cost (its residuals'
        curvature left out, :meth:`optdyn.ocp.residual_costs.ResidualCost.gauss_newton`);
        a cost without a residual keeps its exact Hessians."""
        return self.evaluate(xs, us)

    def add_to(self, xs: np.ndarray, us: np.ndarray, w: float, out: tuple[np.ndarray, ...],
               gauss_newton: bool = False) -> None:
        """out += w·(l, lx, lu, lxx, lux, luu) at every knot, into the arrays ``out`` of the
        shapes of :meth:`evaluate` (lx, lxx, lux untouched by a cost that does not depend on
        x); ``gauss_newton``: the terms of :meth:`gauss_newton`. A problem sums its costs so into
        arrays it keeps (:meth:`optdyn.Problem.running_cost_terms`); here through the new
        arrays of :meth:`evaluate`, which a residual cost does without."""
        terms = self.gauss_newton(xs, us) if gauss_newton else self.evaluate(xs, us)
        for i, (acc, t) in enumerate(zip(out, terms)):
            if self.depends_on_x or i in (0, 2, 5):
                acc += w * t

    def add_pooled(self, xs: np.ndarray, us: np.ndarray, w: float, out: tuple[np.ndarray, ...], gauss_newton: bool,
                   pools: Pools) -> None:
        """:meth:`add_to`, but a residual's second order that pools with others'
        (:class:`~optdyn.ocp.pooled.Pooled`) added to ``pools`` (layout: whether the cost depends
        on x), for the caller to contract once for all (:meth:`Sum.add_to`). Here: :meth:`add_to`."""
        self.add_to(xs, us, w, out, gauss_newton)

    def residuals(self) -> list:
        """The residuals (:mod:`optdyn.ocp.residuals`) this cost is built on (none here)."""
        return []

    def check_dims(self, nx: int, nu: int, name: str) -> None:
        """ValueError naming ``name`` if the cost was built for other dimensions."""
        if (self.ndx is not None and self.ndx != nx) or (self.nu is not None and self.nu != nu):
            raise ValueError(f"{name}: {type(self).__name__} built for nx={self.ndx}, nu={self.nu}; "
                             f"the problem has nx={nx}, nu={nu}")

    def __add__(self, other: Cost) -> Sum:
        if not isinstance(other, Cost):
            return NotImplemented
        return Sum([(1.0, self), (1.0, other)])

    def __rmul__(self, w: float) -> Sum:
        return Sum([(_nonnegative(w, "weight"), self)])


class Sum(Cost):
    """Weighted sum Σ w_j ℓ_j of costs ``terms`` = [(w_j, ℓ_j), ...] (nested sums flattened)."""

    def __init__(self, terms: Sequence[tuple[float, Cost]]) -> None:
        self.terms = []
        for w, c in terms:
            if not isinstance(c, Cost):
                raise ValueError(f"terms: expected (weight, Cost) pairs, got {type(c).__name__}")
            w = _nonnegative(w, "weight")
            if isinstance(c, Sum):
                self.terms.extend((w * wi, ci) for wi, ci in c.terms)
            else:
                self.terms.append((w, c))

    def check_dims(self, nx: int, nu: int, name: str) -> None:
        for _, c in self.terms:
            c.check_dims(nx, nu, name)

    @property
    def depends_on_x(self) -> bool:
        return any(c.depends_on_x for _, c in self.terms)

    def residuals(self) -> list:
        return [r for _, c in self.terms for r in c.residuals()]

    def evaluate(self, xs, us):
        """Sum of the terms' (l, lx, lu, lxx, lux, luu) in new arrays; terms that do not depend
        on x add nothing to lx, lxx, lux (whose width is then that of the x-dependent terms: ndx)."""
        return self._sum(xs, us, False)

    def gauss_newton(self, xs, us):
        return self._sum(xs, us, True)

    def _sum(self, xs, us, gauss_newton: bool):
        (w, first), *rest = sorted(self.terms, key=lambda t: not t[1].depends_on_x)
        terms = first.gauss_newton(xs, us) if gauss_newton else first.evaluate(xs, us)
        total = tuple(w * t for t in terms)  # new arrays (1·t = t exactly), the width of the first term's
        for wi, c in rest:
            c.add_to(xs, us, wi, total, gauss_newton)
        return total

    def add_to(self, xs, us, w, out, gauss_newton=False):
        """out += w·Σ_j w_j ℓ_j's terms, the residual costs whose residuals pool their second
        order (:class:`~optdyn.ocp.pooled.Pooled`: the contact-force residuals of one
        sequence) contracted together, once for all."""
        pools = Pools()
        self.add_pooled(xs, us, w, out, gauss_newton, pools)
        lxx, lux, luu = out[3:]
        for x, (Hxx, Hux, Huu) in pools.contracted():
            if x:
                lxx += Hxx
                lux += Hux
            luu += Huu

    def add_pooled(self, xs, us, w, out, gauss_newton, pools):
        for wi, c in self.terms:
            c.add_pooled(xs, us, w * wi, out, gauss_newton, pools)

    def value(self, xs, us):
        return sum(w * c.value(xs, us) for w, c in self.terms)


def cost_terms(cost: Cost | None) -> list[Cost]:
    """The terms of a cost (a :class:`Sum` flattened), [] for None."""
    if cost is None:
        return []
    return [c for _, c in cost.terms] if isinstance(cost, Sum) else [cost]


def terms_taking_forces(cost: Cost | None, forces: bool) -> Cost | None:
    """The terms of ``cost`` that read the contact forces a problem's dynamics keep (their
    residuals' ``takes_forces``), or with ``forces`` False the others: ``cost`` itself where
    every term is of that kind, None where none is, else their :class:`Sum`."""
    weighted = cost.terms if isinstance(cost, Sum) else [] if cost is None else [(1.0, cost)]
    kept = [(w, c) for w, c in weighted if any(r.takes_forces for r in c.residuals()) == forces]
    if not kept:
        return None
    return cost if len(kept) == len(weighted) else Sum(kept)


@njit(cache=True)
def sphere_distance(p, J, H, center, d, dd, ddd):
    """Signed distance d = ‖p − c‖ of every point to ``center`` with gradient and Hessian.

    p (K,P,3), J (K,P,3,nv), H (K,P,3,nv,nv) -> d (K,P), dd (K,P,nv), ddd (K,P,nv,nv):
    ∇d = nᵀJ, ∇²d = Jᵀ(I − nnᵀ)J/‖p − c‖ + Σ_i n_i ∂²p_i/∂q², n = (p − c)/‖p − c‖.
    At the centre itself (d = 0, not differentiable) the derivatives are set to 0.
    """
    K, P, nv = p.shape[0], p.shape[1], J.shape[3]
    n, PJ = np.empty(3), np.empty((3, nv))
    for k in range(K):
        for j in range(P):
            r = 0.0
            for i in range(3):
                n[i] = p[k, j, i] - center[i]
                r += n[i] * n[i]
            r = np.sqrt(r)
            d[k, j] = r
            if r == 0.0:
                dd[k, j] = 0.0
                ddd[k, j] = 0.0
                continue
            n /= r
            for a in range(nv):
                s = 0.0
                for i in range(3):
                    s += n[i] * J[k, j, i, a]
                dd[k, j, a] = s
                for i in range(3):  # (I − nnᵀ) J / r
                    PJ[i, a] = (J[k, j, i, a] - n[i] * s) / r
            for a in range(nv):
                for b in range(nv):
                    h = 0.0
                    for i in range(3):
                        h += J[k, j, i, a] * PJ[i, b] + n[i] * H[k, j, i, a, b]
                    ddd[k, j, a, b] = h
