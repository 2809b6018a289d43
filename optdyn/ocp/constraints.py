"""Constraints with exact first and second derivatives.

A constraint maps states xs (K, nx) to values c (K, m) with Jacobians cx (K, m, ndx) and
Hessians cxx (K, m, ndx, ndx), taken in the tangent space at x (:mod:`optdyn.ocp.state`;
ndx = nx on a model of revolute/prismatic joints). A constraint on a residual of the state
and the control (``depends_on_u``) maps knots (xs, us) to c (K, m), c_z (K, m, nz),
c_zz (K, m, nz, nz) in z = (δx, u), nz = ndx + nu (:meth:`Constraint.evaluate_knots`).
Each row is an inequality c ≥ 0 or, where ``equality`` is set, an equality c = 0.

Where the problem imposes them (:class:`optdyn.ocp.problem.Problem`):

* path constraints on the state: at nodes 1..N (x_0 is given);
* path constraints whose residual depends on the control ("stage constraints"): on
  (x_k, u_k) at the knots k = 0..N−1 where u_k exists, as the constraints of Crocoddyl's
  running action models (C. Mastalli et al., "Crocoddyl", ICRA 2020);
* terminal constraints: equalities h(x_N) = 0 at node N.

Control bounds are not constraints objects: they are ``Problem.u_lower/u_upper``.

* :class:`SphereClearance`  c_j = ‖p_j(q) − center‖ − radius − margin ≥ 0 for points fixed on links
* :class:`StateEquality`    h = x[indices] − target (goal state, e.g. at rest)
* :class:`FramePositionEquality`  h = p(q) − target for a point fixed in a frame
* :class:`OrientationBound`  c = θ_max² − ‖log(R_ref⁻¹ R_j(q))‖² ≥ 0 for a spherical or free-flyer joint
* :class:`ResidualConstraint`  lower ≤ r(x, u) ≤ upper for any residual (:mod:`optdyn.ocp.residuals`)
* :class:`ResidualEquality`    r(x, u) = 0 for any residual (terminal, path or stage)
* :class:`JointLimits`         the model's position and velocity limits (IPOPT: variable bounds)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from dynamics.joints import lie_jacobian_batch
from dynamics.lie import lie_blocks, log_curvatures
from dynamics.model import FREE_FLYER, JTYPE, PRISMATIC, REVOLUTE, SPHERICAL, Model

from .activations import as_bounds
from .costs import PointSet, _vector
from .pooled import Pools
from .residuals import Hessians, KeptArrays, Residual, StateResidual, Terms, kept_array
from .state import check_state, state_difference_batch


class Constraint(KeptArrays, ABC):
    """Abstract base: ``size`` values per state; subclasses implement ``evaluate`` (the
    library's with ``kept``: :class:`~optdyn.ocp.residuals.KeptArrays`).

    ``equality``: the rows are equalities c = 0 (else inequalities c ≥ 0); ``depends_on_u``:
    the rows depend on the control, so they are evaluated at knots (:meth:`evaluate_knots`)."""

    size: int = 0
    ndx: int | None = None
    nu: int | None = None
    equality: bool = False
    depends_on_u: bool = False

    @abstractmethod
    def evaluate(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(c (K,size), cx (K,size,nx), cxx (K,size,nx,nx)) at every state of xs (K, nx)."""

    def value(self, xs: np.ndarray) -> np.ndarray:
        """c (K, size) only."""
        return self.evaluate(xs)[0]

    def evaluate_knots(self, xs: np.ndarray, us: np.ndarray, ndx: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(c (K,size), c_z (K,size,nz), c_zz (K,size,nz,nz)) at the knots xs (K, nx), us (K, nu),
        z = (δx, u), nz = ndx + nu; ``ndx`` the width of the x-part where the rows do not
        depend on x (default: that of their own Jacobian). Here: :meth:`evaluate` with zero
        control parts."""
        c, cx, cxx = self.evaluate(xs)
        return (c,) + _with_control(cx, cxx, us.shape[1])

    def value_knots(self, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
        """c (K, size) only, at the knots (xs, us)."""
        return self.value(xs)

    def contracted_knots(self, xs: np.ndarray, us: np.ndarray, ndx: int | None = None
                         ) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """(c, c_z, hessian) of :meth:`evaluate_knots` from one evaluation, the rows' Hessians
        left contracted: ``hessian(w)`` = Σ_r w_r c_zz,r (K, nz, nz) for weights w (K, size) —
        the constraints' part of a Lagrangian's Hessian (w the multipliers) or of a penalty's
        (w = ψ'). Here from the per-row Hessians; a residual constraint contracts its
        residual's second order instead, never forming them."""
        c, cz, czz = self.evaluate_knots(xs, us, ndx)
        return c, cz, lambda w: np.einsum("kr,krab->kab", w, czz)

    def least_margin(self, values: np.ndarray) -> np.ndarray:
        """min_i over the rows of values c (K, size): c_i, or −|c_i| for equalities (K,); < 0 is a
        violation (of an equality: its size)."""
        return (-np.abs(values) if self.equality else values).min(axis=1)

    def violation_at(self, x: np.ndarray) -> tuple[float, str]:
        """(How far the state x (nx,) violates the rows — 0 inside —, what is violated, for a
        message): here the largest violation and the constraint's type."""
        return max(0.0, -float(self.least_margin(self.value(np.asarray(x, dtype=float)[None]))[0])), type(self).__name__

    def residuals(self) -> list:
        """The residuals (:mod:`optdyn.ocp.residuals`) this constraint is built on."""
        return [self.residual] if isinstance(getattr(self, "residual", None), Residual) else []

    def check_dims(self, nx: int, name: str) -> None:
        """ValueError naming ``name`` if built for another state dimension."""
        if self.ndx is not None and self.ndx != nx:
            raise ValueError(f"{name}: {type(self).__name__} built for nx={self.ndx}; the problem has nx={nx}")


def _with_control(cx: np.ndarray, cxx: np.ndarray, nu: int) -> tuple[np.ndarray, np.ndarray]:
    """(c_z, c_zz) in z = (δx, u) of state-only derivatives cx (K, m, n), cxx (K, m, n, n)."""
    K, m, n = cx.shape
    cz, czz = np.zeros((K, m, n + nu)), np.zeros((K, m, n + nu, n + nu))
    cz[:, :, :n], czz[:, :, :n, :n] = cx, cxx
    return cz, czz


def equality_rows(constraints: Sequence[Constraint]) -> np.ndarray:
    """(Σ size,) bool: True on the rows of the equality constraints."""
    return np.concatenate([np.full(c.size, c.equality) for c in constraints] + [np.zeros(0, bool)])


def stack_constraints(constraints: Sequence[Constraint], xs: np.ndarray, nx: int, shared: bool = False):
    """Concatenate the constraints' (c, cx, cxx) along the constraint axis (one constraint's
    own arrays, made C-contiguous where they are not: the kernels that take them are compiled
    for one layout); ``shared``: their :meth:`~optdyn.ocp.residuals.KeptArrays.evaluate_shared`."""
    K = xs.shape[0]
    if not constraints:
        return np.zeros((K, 0)), np.zeros((K, 0, nx)), np.zeros((K, 0, nx, nx))
    parts = [c.evaluate_shared(xs) if shared else c.evaluate(xs) for c in constraints]
    if len(parts) == 1:
        return tuple(np.ascontiguousarray(a) for a in parts[0])
    return tuple(np.concatenate([p[i] for p in parts], axis=1) for i in range(3))


class SphereClearance(Constraint):
    """c_j = ‖p_j(q) − center‖ − radius − margin ≥ 0 for every point j.

    ``points``: [(frame name, offset (3,) in that frame), ...] fixed on links.
    """

    def __init__(self, model: Model, points, center, radius: float, margin: float = 0.0) -> None:
        self.points = PointSet(model, points)
        self.center = _vector(center, 3, "center")
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a finite length ≥ 0, got {radius!r}")
        if not np.isfinite(margin):
            raise ValueError(f"margin: expected a finite length, got {margin!r}")
        self.radius, self.margin = float(radius), float(margin)
        self.size, self.ndx, self.nv, self.nq = len(self.points), 2 * model.nv, model.nv, model.nq

    keeps_arrays = True

    def evaluate(self, xs, kept=None):
        K, nv = xs.shape[0], self.nv
        d, dd, ddd = self.points.sphere_distance(xs[:, : self.nq], self.center)
        cx = kept_array(kept, "cx", (K, self.size, self.ndx))
        cxx = kept_array(kept, "cxx", (K, self.size, self.ndx, self.ndx))
        cx[:, :, :nv] = dd
        cxx[:, :, :nv, :nv] = ddd
        return d - self.radius - self.margin, cx, cxx

    def clearance(self, xs) -> np.ndarray:
        """c (K, P) only (for checkers and plots)."""
        d, _, _ = self.points.sphere_distance(np.asarray(xs, dtype=float)[:, : self.nq], self.center, False)
        return d - self.radius - self.margin

    def value(self, xs):
        return self.clearance(xs)


class StateEquality(Constraint):
    """h = x[indices] − target (all of x if ``indices`` is None)."""

    def __init__(self, target, indices=None, nx: int | None = None) -> None:
        if indices is None:
            target = np.array(target, dtype=float)
            self.ndx = target.size if nx is None else nx
            indices = np.arange(self.ndx)
        self.indices = np.array(indices, dtype=np.int64).ravel()
        self.size = self.indices.size
        self.target = _vector(target, self.size, "target")
        if nx is not None:
            self.ndx = nx
        if self.ndx is not None and np.any((self.indices < 0) | (self.indices >= self.ndx)):
            raise ValueError(f"indices: expected state indices in [0, {self.ndx}), got {self.indices}")

    def check_dims(self, nx: int, name: str) -> None:
        super().check_dims(nx, name)
        if np.any((self.indices < 0) | (self.indices >= nx)):
            raise ValueError(f"{name}: StateEquality indices {self.indices} out of range for nx={nx}")

    keeps_arrays = True

    def evaluate(self, xs, kept=None):
        K, nx = xs.shape
        cx = kept_array(kept, "cx", (K, self.size, nx), self._unit_rows)
        return self.value(xs), cx, kept_array(kept, "cxx", (K, self.size, nx, nx))

    def _unit_rows(self, cx):
        cx[:, np.arange(self.size), self.indices] = 1.0

    def value(self, xs):
        return xs[:, self.indices] - self.target


class FramePositionEquality(Constraint):
    """h = p(q) − target (3 values) for the point ``offset`` fixed in frame ``frame``."""

    def __init__(self, model: Model, frame: str, target, offset=(0.0, 0.0, 0.0)) -> None:
        self.points = PointSet(model, [(frame, offset)])
        self.target = _vector(target, 3, "target")
        self.size, self.ndx, self.nv, self.nq = 3, 2 * model.nv, model.nv, model.nq

    keeps_arrays = True

    def evaluate(self, xs, kept=None):
        K, nv = xs.shape[0], self.nv
        p, J, H = self.points.kinematics(xs[:, : self.nq])
        cx, cxx = kept_array(kept, "cx", (K, 3, self.ndx)), kept_array(kept, "cxx", (K, 3, self.ndx, self.ndx))
        cx[:, :, :nv] = J[:, 0]
        cxx[:, :, :nv, :nv] = H[:, 0]
        return p[:, 0] - self.target, cx, cxx

    def value(self, xs):
        return self.points.positions(xs[:, : self.nq])[:, 0] - self.target


class OrientationBound(Constraint):
    """c = θ_max² − ‖φ‖² ≥ 0: the rotation φ = log(R_ref⁻¹ R_j(q)) of joint ``joint`` (a
    spherical or free-flyer joint, e.g. a floating base's "root_joint") from its
    orientation in ``reference`` (nq,) stays within ``max_angle`` (rad, < π).

    φ is the angular part of q_j ⊖ q_ref,j; its derivatives along q ⊕ δq are exact
    (Jacobian J_r⁻¹ rows, Hessian with the curvature of the log, :func:`dynamics.lie.log_curvatures`).
    """

    def __init__(self, model: Model, joint: str, reference, max_angle: float) -> None:
        if joint not in model.joint_names:
            raise ValueError(f"joint: unknown joint {joint!r}; the model's joints are {list(model.joint_names)}")
        i = list(model.joint_names).index(joint)
        if int(model.topology[i, JTYPE]) not in (SPHERICAL, FREE_FLYER):
            raise ValueError(f"joint: {joint!r} is {model.joint_types[i]}; expected a spherical or free-flyer joint")
        if not (np.isfinite(max_angle) and 0 < max_angle < np.pi):
            raise ValueError(f"max_angle: expected an angle in (0, π) rad, got {max_angle!r}")
        self.reference = _vector(reference, model.nq, "reference")
        check_state(model, self.reference, "reference")
        self.model, self.joint, self.max_angle = model, joint, float(max_angle)
        self.m, self.k = int(model.idx_vs[i]), int(model.nvs[i])
        self.reference_state, self.lie = np.concatenate([self.reference, np.zeros(model.nv)]), lie_blocks(model)
        self.size, self.ndx = 1, 2 * model.nv

    def evaluate(self, xs):
        K, m, k, model = xs.shape[0], self.m, self.k, self.model
        nq, nv = model.nq, model.nv
        r = m + k - 3  # the rotation rows of the joint's tangent block
        ref = np.broadcast_to(self.reference_state, (K, nq + nv))
        D = state_difference_batch(model.topology, nq, np.ascontiguousarray(ref),
                                   np.ascontiguousarray(xs, dtype=float))[:, :nv]  # q ⊖ q_ref
        Jinv = lie_jacobian_batch(model.topology, np.ascontiguousarray(D), 2)
        phi, J = D[:, r: m + k], Jinv[:, r: m + k, m: m + k]  # φ and ∂φ/∂δq_j (K, 3, k)
        M = np.zeros((K, nv))
        M[:, r: m + k] = phi
        c, cx, cxx = np.empty((K, 1)), np.zeros((K, 1, self.ndx)), np.zeros((K, 1, self.ndx, self.ndx))
        c[:, 0] = self.max_angle ** 2 - np.sum(phi * phi, axis=1)
        cx[:, 0, m: m + k] = -2.0 * np.matmul(phi[:, None, :], J)[:, 0]
        curvature = log_curvatures(self.lie, np.ascontiguousarray(D), M, Jinv)[:, m: m + k, m: m + k]
        cxx[:, 0, m: m + k, m: m + k] = -2.0 * (np.matmul(J.transpose(0, 2, 1), J) + curvature)
        return c, cx, cxx


def _check_residual(residual: Residual) -> Residual:
    if not isinstance(residual, Residual):
        raise ValueError(f"residual: expected an optdyn residual, got {type(residual).__name__}")
    return residual


def _residual_rows(residual: Residual, xs: np.ndarray, us: np.ndarray, rows: np.ndarray, signs: np.ndarray,
                   ndx: int | None = None):
    """(s_i r_i, s_i ∂r_i/∂z, s_i ∇²_z r_i) of the residual's ``rows`` with signs ``signs`` at the
    knots xs (K, nx), us (K, nu), z = (δx, u) (z = δx when nu = 0): the row Hessians are
    :func:`_row_hessians`. Where r does not depend on x and ``ndx`` is given, the x-part has
    width ndx and is zero."""
    t = residual.evaluate(xs, us)
    c, cz = _row_gradients(residual, t, us.shape[1], rows, signs, ndx)
    return c, cz, _z_hessians(_row_hessians(t, residual.size, rows, signs), cz.shape[2] - us.shape[1],
                              us.shape[1], residual.depends_on_x or ndx is None)


def _row_gradients(residual: Residual, t: Terms, nu: int, rows: np.ndarray, signs: np.ndarray,
                   ndx: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(s_i r_i, s_i ∂r_i/∂z) of :func:`_residual_rows` from the residual's evaluation ``t``."""
    K = t.r.shape[0]
    own = residual.depends_on_x or ndx is None
    rx = t.rx[:, rows] if own else np.zeros((K, rows.size, ndx))
    return signs * t.r[:, rows], signs[:, None] * (np.concatenate([rx, t.ru[:, rows]], axis=2) if nu else rx)


def _z_hessians(hessians: Hessians, n: int, nu: int, own: bool) -> np.ndarray:
    """(…, n + nu, n + nu) in z = (δx, u) from (H_xx, H_ux, H_uu) (…, ·, ·); the x-blocks zero
    unless ``own`` (a residual that does not depend on x)."""
    Hxx, Hux, Huu = hessians
    H = np.zeros(Huu.shape[:-2] + (n + nu, n + nu))
    if own:
        H[..., :n, :n] = Hxx
        H[..., n:, :n] = Hux
        H[..., :n, n:] = np.swapaxes(Hux, -1, -2)
    H[..., n:, n:] = Huu
    return H


def _row_hessians(t: Terms, size: int, rows: np.ndarray, signs: np.ndarray) -> Hessians:
    """(H_xx (K, m, ndx, ndx), H_ux (K, m, nu, ndx), H_uu (K, m, nu, nu)) of s_i r_i for the m
    ``rows`` with ``signs`` of a residual of ``size`` entries evaluated into ``t``: its
    contracted Hessians with ρ = s_i e_i, row by row."""
    K = t.r.shape[0]
    per_row = []
    for row, s in zip(rows, signs):
        rho = np.zeros((K, size))
        rho[:, row] = s
        per_row.append(t.hessians(rho))
    return tuple(np.stack(h, axis=1) for h in zip(*per_row))


class RowsHessian:
    """``hessian(w)`` (K, n + nu, n + nu) of a residual constraint's rows s_i r_i
    (:meth:`_ResidualRows.contracted_knots`) at the knots its residual was evaluated at (``terms``):
    ∇²_z(ρᵀr), ρ = :meth:`weights` (w), in z = (δx, u), n the width of the x-part (its blocks
    zero unless ``own``: :func:`_z_hessians`)."""

    def __init__(self, constraint: _ResidualRows, terms: Terms, n: int, nu: int, own: bool) -> None:
        self.constraint, self.terms, self.n, self.nu, self.own = constraint, terms, n, nu, own

    def weights(self, w: np.ndarray) -> np.ndarray:
        """ρ (K, size of the residual): ρ_j = Σ_{i: row i is entry j} s_i w_i for weights w (K, rows)."""
        c = self.constraint
        rho = np.zeros((w.shape[0], c.residual.size))
        np.add.at(rho.T, c.rows, (c.signs * w).T)
        return rho

    def __call__(self, w: np.ndarray) -> np.ndarray:
        return _z_hessians(self.terms.hessians(self.weights(w)), self.n, self.nu, self.own)


def summed_hessian(hessians: Sequence[Callable[[np.ndarray], np.ndarray]], weights: Sequence[np.ndarray],
                   shape: tuple[int, int, int]) -> np.ndarray:
    """Σ_j hessian_j(w_j) (``shape``: K, nz, nz) of several constraints' contracted Hessians
    (:meth:`Constraint.contracted_knots`) at the same knots, with their weights w_j (K, size_j):
    the rows of residual constraints whose residuals pool their second order
    (:class:`~optdyn.ocp.residuals.Pooled`, same key and layout in z) are contracted together,
    in one computation for all (∇²(ρᵀr) is linear in ρ: the contact-force residuals of a
    problem, one compiled pass per knot for every foot's cone), the others one by one."""
    out, pools = np.zeros(shape), Pools()
    for hessian, w in zip(hessians, weights):
        pooled = hessian.terms.pooled if isinstance(hessian, RowsHessian) else None
        if pooled is None:
            out += hessian(w)
        else:
            pools.add(pooled, hessian.weights(w), (hessian.n, hessian.nu, hessian.own))
    for layout, h in pools.contracted():
        out += _z_hessians(h, *layout)
    return out


class _ResidualRows(Constraint):
    """Constraint rows s_i r_i(x, u) + o_i of a residual's entries ``rows`` (signs s, offsets o),
    divided by the entries' ``scale`` (n,): the unit each row is stated in (default 1)."""

    def __init__(self, residual: Residual, rows: np.ndarray, signs: np.ndarray, offsets: np.ndarray,
                 scale=1.0) -> None:
        self.scale = _vector(scale, residual.size, "scale")  # one per residual entry
        if not np.all(self.scale > 0):
            raise ValueError(f"scale: expected units > 0, got {scale!r}")
        self.residual, self.rows = residual, rows
        self.signs, self.offsets = signs / self.scale[rows], offsets / self.scale[rows]
        self.size, self.ndx, self.nu = rows.size, residual.ndx, residual.nu
        self.depends_on_u = residual.depends_on_u

    def _states_only(self, what: str) -> None:
        if self.depends_on_u:
            raise ValueError(f"{what}: {type(self.residual).__name__} depends on the control; evaluate this "
                             f"{type(self).__name__} at knots (evaluate_knots(xs, us))")

    def evaluate(self, xs):
        self._states_only("xs")
        c, cz, czz = _residual_rows(self.residual, xs, np.zeros((xs.shape[0], 0)), self.rows, self.signs)
        return c + self.offsets, cz, czz

    def evaluate_knots(self, xs, us, ndx=None):
        c, cz, czz = _residual_rows(self.residual, xs, us, self.rows, self.signs, ndx)
        return c + self.offsets, cz, czz

    def contracted_knots(self, xs, us, ndx=None):
        """The Hessian ∇²(ρᵀr) with ρ_j = Σ_{i: row i is entry j} s_i w_i: one contracted second
        order of the residual (a lower and an upper bound on one entry share it), as a
        :class:`RowsHessian`."""
        t = self.residual.evaluate(xs, us)
        c, cz = _row_gradients(self.residual, t, us.shape[1], self.rows, self.signs, ndx)
        return c + self.offsets, cz, RowsHessian(self, t, cz.shape[2] - us.shape[1], us.shape[1],
                                                 self.residual.depends_on_x or ndx is None)

    def value(self, xs):
        self._states_only("xs")
        return self.value_knots(xs, np.zeros((xs.shape[0], 0)))

    def value_knots(self, xs, us):
        return self.signs * self.residual.value(xs, us)[:, self.rows] + self.offsets


class ResidualConstraint(_ResidualRows):
    """lower ≤ r(x, u) ≤ upper for a residual (:mod:`optdyn.ocp.residuals`), as the rows c ≥ 0:
    r_i − lower_i (finite lower bounds), then upper_i − r_i (finite upper bounds). As a path
    constraint it holds at nodes 1..N, or, if r depends on the control, on (x_k, u_k) at the
    knots 0..N−1; in every solver (IPOPT natively, DDP/iLQR by the augmented Lagrangian).
    Bounds numbers or (size,), ±inf for none, lower ≤ upper (for lower = upper, use
    :class:`ResidualEquality`).

    ``scale`` (a number > 0, or one per residual entry): the unit the rows are stated in, the
    rows being (r_i − lower_i)/scale_i and (upper_i − r_i)/scale_i — the same feasible set, but
    the solvers' penalty, multipliers and violation tolerance see numbers of order one where
    the residual's own are not, e.g. contact forces in units of the robot's weight m g: then
    the augmented Lagrangian's default penalty serves a 2.5 kg quadruped and a 90 kg biped
    alike."""

    def __init__(self, residual: Residual, lower=None, upper=None, *, scale=1.0) -> None:
        _check_residual(residual)
        self.lower, self.upper = as_bounds(lower, upper, residual.size)
        lo, hi = np.flatnonzero(np.isfinite(self.lower)), np.flatnonzero(np.isfinite(self.upper))
        if lo.size + hi.size == 0:
            raise ValueError("lower: expected at least one finite bound")
        super().__init__(residual, np.concatenate([lo, hi]), np.concatenate([np.ones(lo.size), -np.ones(hi.size)]),
                         np.concatenate([-self.lower[lo], self.upper[hi]]), scale)


class ResidualEquality(_ResidualRows):
    """h = r(x, u) = 0 for any residual: a terminal constraint at node N (a residual of the
    state: e.g. a frame placement error, a velocity at rest), or a path constraint — at nodes
    1..N on the state, on (x_k, u_k) at the knots 0..N−1 if r depends on the control (e.g. a
    frame velocity held at a target along the path, a control fixed to a reference).

    ``rows``: the residual's entries to hold at zero (default all), e.g. [2] for the vertical
    velocity of a world-aligned :class:`~optdyn.ocp.residuals.FrameVelocityResidual`.
    ``scale``: the unit the rows are stated in, h_i = r_i/scale_i (as :class:`ResidualConstraint`)."""

    equality = True

    def __init__(self, residual: Residual, rows=None, *, scale=1.0) -> None:
        _check_residual(residual)
        idx = np.arange(residual.size) if rows is None else np.array(rows).ravel()
        if (idx.size == 0 or idx.dtype.kind not in "iu" or len(set(idx.tolist())) != idx.size
                or np.any((idx < 0) | (idx >= residual.size))):
            raise ValueError(f"rows: expected distinct entries of the residual in [0, {residual.size}), got {rows!r}")
        super().__init__(residual, idx.astype(np.int64), np.ones(idx.size), np.zeros(idx.size), scale)


class JointLimits(ResidualConstraint):
    """The model's joint limits at every node: lower + margin ≤ q ≤ upper − margin
    (``position``) and |v| ≤ v_max − margin (``velocity``), on the revolute and prismatic
    joints whose limits are finite. IPOPT takes these rows as bounds on its variables.

    Attributes: ``coordinates`` (the state coordinates [q; v] indices of the rows' residual
    entries), ``tangent`` (their tangent indices) and ``joints`` (their joints' names), with
    ``lower``/``upper`` per entry."""

    def __init__(self, model: Model, position: bool = True, velocity: bool = True, margin: float = 0.0) -> None:
        if not (isinstance(margin, (int, float, np.integer, np.floating)) and np.isfinite(margin) and margin >= 0):
            raise ValueError(f"margin: expected a finite number ≥ 0, got {margin!r}")
        one_dof = [i for i, t in enumerate(model.topology[:, JTYPE]) if t in (REVOLUTE, PRISMATIC)]
        qi, vi = model.idx_qs[one_dof], model.idx_vs[one_dof]
        lo, hi = [], []
        if position:
            lo.append(model.lower_limit[qi] + margin)
            hi.append(model.upper_limit[qi] - margin)
        if velocity:
            lo.append(-model.velocity_limit[vi] + margin)
            hi.append(model.velocity_limit[vi] - margin)
        tangent = np.concatenate([vi] * position + [vi + model.nv] * velocity + [np.zeros(0, np.int64)])
        coordinates = np.concatenate([qi] * position + [vi + model.nq] * velocity + [np.zeros(0, np.int64)])
        lo, hi = (np.concatenate(b) if b else np.zeros(0) for b in (lo, hi))
        keep = np.isfinite(lo) | np.isfinite(hi)
        if not np.any(keep):
            raise ValueError(f"model: {model.name!r} has no finite joint limits to enforce "
                             f"(position={position}, velocity={velocity})")
        if np.any(lo > hi):
            raise ValueError(f"margin: {margin} leaves an empty range between a joint's limits")
        names = [model.joint_names[i] for i in one_dof]
        self.model, self.position, self.velocity, self.margin = model, position, velocity, float(margin)
        self.tangent, self.coordinates = tangent[keep], coordinates[keep]
        self.joints = tuple(np.array(names * position + names * velocity, dtype=object)[keep])
        super().__init__(StateResidual(model, rows=self.tangent), lo[keep], hi[keep])

    def violation_at(self, x: np.ndarray) -> tuple[float, str]:
        """As :meth:`Constraint.violation_at`, naming the joint, the coordinate and its limits."""
        values = np.asarray(x, dtype=float)[self.coordinates]
        outside = np.maximum(self.lower - values, values - self.upper)
        i = int(np.argmax(outside))
        kind = "velocity" if self.coordinates[i] >= self.model.nq else "position"
        return max(0.0, float(outside[i])), (f"JointLimits: {self.joints[i]} {kind} {values[i]:.4g} outside "
                                             f"[{self.lower[i]:.4g}, {self.upper[i]:.4g}]")
