"""Stage and terminal costs with exact gradients and Hessians.

A cost ℓ(x, u) is evaluated over K knots at once (``xs`` (K, nx), ``us`` (K, nu)) and
returns ``(l (K,), lx (K,nx), lu (K,nu), lxx (K,nx,nx), lux (K,nu,nx), luu (K,nu,nu))``,
unweighted by dt (the problem multiplies running costs by dt). Derivatives w.r.t. x are
taken in the tangent space at x (:mod:`optdyn.ocp.state`): lx has ndx = 2·nv columns, which is
nx for a model of revolute/prismatic joints. Used as a terminal cost,
its control part is ignored. Costs add (``c1 + c2``) and scale (``0.5 * c``).

* :class:`StateCost`      ½ Σ_i w_i (x ⊖ x̄)_i² (x − x̄ on a vector space)
* :class:`ControlCost`    ½ Σ_i w_i (u_i − ū_i)²
* :class:`FramePositionCost`  ½ w ‖p(q) − p*‖², p a point fixed in a frame (end effector)
* :class:`ObstacleCost`   Σ_j w β softplus(−d_j/β), d_j = ‖p_j(q) − c‖ − r − margin,
  a smooth one-sided penalty on the clearance of points fixed on links from a sphere.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from dynamics._compile import njit
from dynamics.batch import point_kinematics_batch_kernel, point_positions_batch_kernel
from dynamics.kinematics_derivatives import body_point
from dynamics.joints import lie_jacobian_batch, neutral
from dynamics.lie import lie_blocks, log_curvatures
from dynamics.model import Model
from dynamics.parallel import chunk_count

from .state import check_state, state_difference_batch


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
        return point_kinematics_batch_kernel(m.arrays, np.ascontiguousarray(qs), self.bodies, self.local,
                                             chunk_count(qs.shape[0]))

    def positions(self, qs: np.ndarray) -> np.ndarray:
        """World positions (K, P, 3) only (no Jacobians or Hessians computed)."""
        m = self.model
        return point_positions_batch_kernel(m.arrays, np.ascontiguousarray(qs), self.bodies, self.local,
                                            chunk_count(qs.shape[0]))

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
        """Sum of the terms' (l, lx, lu, lxx, lux, luu); terms that do not depend on x add
        nothing to lx, lxx, lux (whose width is then that of the x-dependent terms: ndx)."""
        total = None
        for w, c in sorted(self.terms, key=lambda t: not t[1].depends_on_x):
            terms = c.evaluate(xs, us)
            if total is None:
                total = tuple(w * t for t in terms)
                continue
            for i, (acc, t) in enumerate(zip(total, terms)):
                if c.depends_on_x or i in (0, 2, 5):
                    acc += w * t
        return total

    def value(self, xs, us):
        return sum(w * c.value(xs, us) for w, c in self.terms)


class _Quadratic(Cost):
    """½ Σ_i w_i (y_i − ȳ_i)² of the state (``on="x"``) or the control (``on="u"``)."""

    def __init__(self, weight, reference, n: int | None, on: str) -> None:
        if n is None:
            n = np.size(reference) if reference is not None else np.size(weight)
            if n == 1 and np.ndim(weight) == 0 and reference is None:
                raise ValueError("size: give a reference, a weight vector or the dimension")
        self.weight = _vector(weight, n, "weight")
        if np.any(self.weight < 0):
            raise ValueError(f"weight: expected weights ≥ 0, got {self.weight}")
        self.reference = np.zeros(n) if reference is None else _vector(reference, n, "reference")
        self.on = on
        if on == "x":
            self.ndx = n
        else:
            self.nu = n

    def value(self, xs, us):
        y = xs if self.on == "x" else us
        return 0.5 * np.sum(self.weight * (y - self.reference) ** 2, axis=1)

    def evaluate(self, xs, us):
        K, nx, nu = xs.shape[0], xs.shape[1], us.shape[1]
        l, lx, lu, lxx, lux, luu = _zeros(K, nx, nu)
        y = xs if self.on == "x" else us
        g, H = (lx, lxx) if self.on == "x" else (lu, luu)
        e = y - self.reference
        l[:] = 0.5 * np.sum(self.weight * e * e, axis=1)
        g[:] = self.weight * e
        H[:] = np.diag(self.weight)
        return l, lx, lu, lxx, lux, luu


class StateCost(_Quadratic):
    """½ Σ_i w_i (x ⊖ x̄)_i²; ``weight`` scalar or (ndx,), ``reference`` x̄ (nx,) (default 0).

    Without ``model`` the state is a vector space (x ⊖ x̄ = x − x̄, nx = ndx). With
    ``model`` the residual is the state difference of :mod:`optdyn.ocp.state` (x̄ (nq + nv,),
    weights (2·nv,), the default reference the neutral configuration at rest), and its
    derivatives along x ⊕ δx are exact: gradient JᵀW e with J = ∂(x ⊖ x̄)/∂δx = J_r⁻¹(e)
    per Lie joint, Hessian JᵀWJ plus the curvature (We)ᵀ∇²(x ⊖ x̄)
    (:func:`dynamics.lie.log_curvatures`; it vanishes on revolute/prismatic joints).
    """

    def __init__(self, weight, reference=None, nx: int | None = None, model: Model | None = None) -> None:
        if model is None:
            super().__init__(weight, reference, nx, "x")
            self.model = None
            return
        ref = np.concatenate([neutral(model), np.zeros(model.nv)]) if reference is None else reference
        ref = _vector(ref, model.nq + model.nv, "reference")
        check_state(model, ref, "reference")
        super().__init__(weight, np.zeros(2 * model.nv), 2 * model.nv, "x")
        self.model, self.state_reference, self.lie = model, ref, lie_blocks(model)

    def _residual(self, xs):
        """e = x ⊖ x̄ (K, ndx) and, with the model, J_r⁻¹ blocks (K, nv, nv) of ∂e/∂δq."""
        if self.model is None:
            return xs - self.reference, None
        m, nv = self.model, self.model.nv
        ref = np.broadcast_to(self.state_reference, xs.shape)
        e = state_difference_batch(m.topology, m.nq, np.ascontiguousarray(ref), np.ascontiguousarray(xs, dtype=float))
        return e, lie_jacobian_batch(m.topology, np.ascontiguousarray(e[:, :nv]), 2)

    def value(self, xs, us):
        return 0.5 * np.sum(self.weight * self._residual(xs)[0] ** 2, axis=1)

    def evaluate(self, xs, us):
        if self.model is None:
            return super().evaluate(xs, us)
        K, nv = xs.shape[0], self.model.nv
        l, lx, lu, lxx, lux, luu = _zeros(K, 2 * nv, us.shape[1])
        e, Jinv = self._residual(xs)
        We = self.weight * e
        l[:] = 0.5 * np.sum(We * e, axis=1)
        JinvT = Jinv.transpose(0, 2, 1)  # J = blockdiag(J_r⁻¹, 1): only the q block is not the identity
        lx[:, :nv], lx[:, nv:] = np.matmul(JinvT, We[:, :nv, None])[:, :, 0], We[:, nv:]
        lxx[:, :nv, :nv] = np.matmul(JinvT * self.weight[:nv], Jinv) + log_curvatures(
            self.lie, np.ascontiguousarray(e[:, :nv]), np.ascontiguousarray(We[:, :nv]), Jinv)
        lxx[:, nv:, nv:] = np.diag(self.weight[nv:])
        return l, lx, lu, lxx, lux, luu


class ControlCost(_Quadratic):
    """½ Σ_i w_i (u_i − ū_i)²; ``weight`` scalar or (nu,), ``reference`` (nu,) (default 0)."""

    depends_on_x = False

    def __init__(self, weight, reference=None, nu: int | None = None) -> None:
        super().__init__(weight, reference, nu, "u")


@njit(cache=True)
def _frame_terms(p, J, H, target, w, nv, lx, lxx):
    """½w‖p − p*‖² per knot: gradient w Jᵀe, Hessian w (JᵀJ + Σ_i e_i ∂²p_i/∂q²)."""
    K = p.shape[0]
    l = np.empty(K)
    e = np.empty(3)
    for k in range(K):
        s = 0.0
        for i in range(3):
            e[i] = p[k, 0, i] - target[i]
            s += e[i] * e[i]
        l[k] = 0.5 * w * s
        for a in range(nv):
            g = 0.0
            for i in range(3):
                g += J[k, 0, i, a] * e[i]
            lx[k, a] = w * g
            for b in range(nv):
                h = 0.0
                for i in range(3):
                    h += J[k, 0, i, a] * J[k, 0, i, b] + e[i] * H[k, 0, i, a, b]
                lxx[k, a, b] = w * h
    return l


class FramePositionCost(Cost):
    """½ w ‖p(q) − target‖² of the point ``offset`` (3,) fixed in frame ``frame``."""

    def __init__(self, model: Model, frame: str, target, weight: float, offset=(0.0, 0.0, 0.0)) -> None:
        self.points = PointSet(model, [(frame, offset)])
        self.target = _vector(target, 3, "target")
        self.weight = _nonnegative(weight, "weight")
        self.ndx, self.nv, self.nq = 2 * model.nv, model.nv, model.nq

    def value(self, xs, us):
        p = self.points.positions(xs[:, : self.nq])
        return 0.5 * self.weight * np.sum((p[:, 0] - self.target) ** 2, axis=1)

    def evaluate(self, xs, us):
        K, nv = xs.shape[0], self.nv
        l, lx, lu, lxx, lux, luu = _zeros(K, self.ndx, us.shape[1])
        p, J, H = self.points.kinematics(xs[:, : self.nq])
        l[:] = _frame_terms(p, J, H, self.target, self.weight, nv, lx, lxx)
        return l, lx, lu, lxx, lux, luu


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


def _softplus(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """softplus(z) = log(1 + eᶻ) and its derivative σ(z), overflow-safe."""
    return np.logaddexp(0.0, z), 0.5 * (1.0 + np.tanh(0.5 * z))


class ObstacleCost(Cost):
    """Σ_j w β softplus(−d_j/β) with d_j = ‖p_j − center‖ − radius − margin.

    ``points``: [(frame name, offset (3,)), ...] fixed on links; ``width`` β (m) sets how
    soft the penalty is (≈ w·|d| inside, ≈ 0 beyond a few β outside).
    """

    def __init__(self, model: Model, points, center, radius: float, weight: float,
                 margin: float = 0.0, width: float = 0.02) -> None:
        self.points = PointSet(model, points)
        self.center = _vector(center, 3, "center")
        self.radius = _nonnegative(radius, "radius")
        self.margin = float(margin)
        self.weight = _nonnegative(weight, "weight")
        if not (np.isfinite(width) and width > 0):
            raise ValueError(f"width: expected a length > 0, got {width!r}")
        self.width = float(width)
        self.ndx, self.nv, self.nq = 2 * model.nv, model.nv, model.nq

    def _clearance(self, xs, derivatives):
        d, dd, ddd = self.points.sphere_distance(xs[:, : self.nq], self.center, derivatives)
        return d - self.radius - self.margin, dd, ddd

    def value(self, xs, us):
        c = self._clearance(xs, False)[0]
        return self.weight * self.width * np.sum(_softplus(-c / self.width)[0], axis=1)

    def evaluate(self, xs, us):
        K, nv = xs.shape[0], self.nv
        l, lx, lu, lxx, lux, luu = _zeros(K, self.ndx, us.shape[1])
        c, dc, ddc = self._clearance(xs, True)
        beta, w = self.width, self.weight
        sp, sig = _softplus(-c / beta)
        l[:] = w * beta * np.sum(sp, axis=1)
        phi1 = -w * sig  # dφ/dc
        phi2 = w / beta * sig * (1.0 - sig)  # d²φ/dc²
        lx[:, :nv] = np.einsum("kj,kja->ka", phi1, dc)
        lxx[:, :nv, :nv] = (np.einsum("kj,kja,kjb->kab", phi2, dc, dc)
                            + np.einsum("kj,kjab->kab", phi1, ddc))
        return l, lx, lu, lxx, lux, luu
