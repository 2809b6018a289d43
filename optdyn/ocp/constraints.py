"""State constraints with exact first and second derivatives.

A constraint maps states xs (K, nx) to values c (K, m) with Jacobians cx (K, m, ndx) and
Hessians cxx (K, m, ndx, ndx), taken in the tangent space at x (:mod:`optdyn.ocp.state`;
ndx = nx on a model of revolute/prismatic joints). The problem reads path constraints as inequalities c ≥ 0
(imposed at nodes 1..N) and terminal constraints as equalities h = 0 (at node N).
Control bounds are not constraints objects: they are ``Problem.u_lower/u_upper``.

* :class:`SphereClearance`  c_j = ‖p_j(q) − center‖ − radius − margin ≥ 0 for points fixed on links
* :class:`StateEquality`    h = x[indices] − target (goal state, e.g. at rest)
* :class:`FramePositionEquality`  h = p(q) − target for a point fixed in a frame
* :class:`OrientationBound`  c = θ_max² − ‖log(R_ref⁻¹ R_j(q))‖² ≥ 0 for a spherical or free-flyer joint
* :class:`ResidualConstraint`  lower ≤ r(x) ≤ upper for any state residual (:mod:`optdyn.ocp.residuals`)
* :class:`ResidualEquality`    h = r(x) (a terminal constraint on any state residual)
* :class:`JointLimits`         the model's position and velocity limits (IPOPT: variable bounds)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from dynamics.joints import lie_jacobian_batch
from dynamics.lie import lie_blocks, log_curvatures
from dynamics.model import FREE_FLYER, JTYPE, PRISMATIC, REVOLUTE, SPHERICAL, Model

from .activations import as_bounds
from .costs import PointSet, _vector
from .residuals import Residual, StateResidual
from .state import check_state, state_difference_batch


class Constraint(ABC):
    """Abstract base: ``size`` values per state; subclasses implement ``evaluate``."""

    size: int = 0
    ndx: int | None = None

    @abstractmethod
    def evaluate(self, xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(c (K,size), cx (K,size,nx), cxx (K,size,nx,nx)) at every state of xs (K, nx)."""

    def value(self, xs: np.ndarray) -> np.ndarray:
        """c (K, size) only."""
        return self.evaluate(xs)[0]

    def residuals(self) -> list:
        """The residuals (:mod:`optdyn.ocp.residuals`) this constraint is built on."""
        return [self.residual] if isinstance(getattr(self, "residual", None), Residual) else []

    def check_dims(self, nx: int, name: str) -> None:
        """ValueError naming ``name`` if built for another state dimension."""
        if self.ndx is not None and self.ndx != nx:
            raise ValueError(f"{name}: {type(self).__name__} built for nx={self.ndx}; the problem has nx={nx}")


def stack_constraints(constraints: Sequence[Constraint], xs: np.ndarray, nx: int):
    """Concatenate the constraints' (c, cx, cxx) along the constraint axis."""
    K = xs.shape[0]
    if not constraints:
        return np.zeros((K, 0)), np.zeros((K, 0, nx)), np.zeros((K, 0, nx, nx))
    parts = [c.evaluate(xs) for c in constraints]
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

    def evaluate(self, xs):
        K, nv = xs.shape[0], self.nv
        d, dd, ddd = self.points.sphere_distance(xs[:, : self.nq], self.center)
        cx, cxx = np.zeros((K, self.size, self.ndx)), np.zeros((K, self.size, self.ndx, self.ndx))
        cx[:, :, :nv] = dd
        cxx[:, :, :nv, :nv] = ddd
        return d - self.radius - self.margin, cx, cxx

    def clearance(self, xs) -> np.ndarray:
        """c (K, P) only (for checkers and plots)."""
        d, _, _ = self.points.sphere_distance(np.asarray(xs, dtype=float)[:, : self.nq], self.center, False)
        return d - self.radius - self.margin


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

    def evaluate(self, xs):
        K, nx = xs.shape
        cx = np.zeros((K, self.size, nx))
        cx[:, np.arange(self.size), self.indices] = 1.0
        return xs[:, self.indices] - self.target, cx, np.zeros((K, self.size, nx, nx))


class FramePositionEquality(Constraint):
    """h = p(q) − target (3 values) for the point ``offset`` fixed in frame ``frame``."""

    def __init__(self, model: Model, frame: str, target, offset=(0.0, 0.0, 0.0)) -> None:
        self.points = PointSet(model, [(frame, offset)])
        self.target = _vector(target, 3, "target")
        self.size, self.ndx, self.nv, self.nq = 3, 2 * model.nv, model.nv, model.nq

    def evaluate(self, xs):
        K, nv = xs.shape[0], self.nv
        p, J, H = self.points.kinematics(xs[:, : self.nq])
        cx, cxx = np.zeros((K, 3, self.ndx)), np.zeros((K, 3, self.ndx, self.ndx))
        cx[:, :, :nv] = J[:, 0]
        cxx[:, :, :nv, :nv] = H[:, 0]
        return p[:, 0] - self.target, cx, cxx


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


def _check_state_residual(residual: Residual) -> None:
    if not isinstance(residual, Residual):
        raise ValueError(f"residual: expected an optdyn residual, got {type(residual).__name__}")
    if residual.depends_on_u:
        raise ValueError(f"residual: constraints act on states; {type(residual).__name__} depends on the control")


def _residual_rows(residual: Residual, xs: np.ndarray, rows: np.ndarray, signs: np.ndarray):
    """(s_i r_i, s_i ∂r_i/∂x, s_i ∇²r_i) of the residual's ``rows`` with signs ``signs`` at xs (K, nx):
    the row Hessians are its contracted Hessians with ρ = s_i e_i."""
    K = xs.shape[0]
    t = residual.evaluate(xs, np.zeros((K, 0)))
    cxx = np.empty((K, rows.size, t.rx.shape[2], t.rx.shape[2]))
    for i, (row, s) in enumerate(zip(rows, signs)):
        rho = np.zeros((K, residual.size))
        rho[:, row] = s
        cxx[:, i] = t.hessians(rho)[0]
    return signs * t.r[:, rows], signs[:, None] * t.rx[:, rows], cxx


class ResidualConstraint(Constraint):
    """lower ≤ r(x) ≤ upper for a residual of the state (:mod:`optdyn.ocp.residuals`), as the
    rows c ≥ 0: r_i − lower_i (finite lower bounds), then upper_i − r_i (finite upper bounds).
    As a path constraint it holds at nodes 1..N, in every solver (IPOPT natively, DDP/iLQR by
    the augmented Lagrangian); bounds numbers or (size,), ±inf for none, lower ≤ upper."""

    def __init__(self, residual: Residual, lower=None, upper=None) -> None:
        _check_state_residual(residual)
        self.lower, self.upper = as_bounds(lower, upper, residual.size)
        lo, hi = np.flatnonzero(np.isfinite(self.lower)), np.flatnonzero(np.isfinite(self.upper))
        if lo.size + hi.size == 0:
            raise ValueError("lower: expected at least one finite bound")
        self.residual, self.rows = residual, np.concatenate([lo, hi])
        self.signs = np.concatenate([np.ones(lo.size), -np.ones(hi.size)])
        self.offsets = np.concatenate([-self.lower[lo], self.upper[hi]])
        self.size, self.ndx = self.rows.size, residual.ndx

    def evaluate(self, xs):
        c, cx, cxx = _residual_rows(self.residual, xs, self.rows, self.signs)
        return c + self.offsets, cx, cxx

    def value(self, xs):
        return self.signs * self.residual.value(xs, np.zeros((xs.shape[0], 0)))[:, self.rows] + self.offsets


class ResidualEquality(Constraint):
    """h = r(x) = 0 for a residual of the state (a terminal constraint: e.g. a frame placement
    error, a velocity at rest)."""

    def __init__(self, residual: Residual) -> None:
        _check_state_residual(residual)
        self.residual, self.size, self.ndx = residual, residual.size, residual.ndx

    def evaluate(self, xs):
        return _residual_rows(self.residual, xs, np.arange(self.size), np.ones(self.size))

    def value(self, xs):
        return self.residual.value(xs, np.zeros((xs.shape[0], 0)))


class JointLimits(ResidualConstraint):
    """The model's joint limits at every node: lower + margin ≤ q ≤ upper − margin
    (``position``) and |v| ≤ v_max − margin (``velocity``), on the revolute and prismatic
    joints whose limits are finite. IPOPT takes these rows as bounds on its variables.

    Attributes: ``coordinates`` (the state coordinates [q; v] indices of the rows' residual
    entries) and ``tangent`` (their tangent indices), with ``lower``/``upper`` per entry."""

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
        self.model, self.position, self.velocity, self.margin = model, position, velocity, float(margin)
        self.tangent, self.coordinates = tangent[keep], coordinates[keep]
        super().__init__(StateResidual(model, rows=self.tangent), lo[keep], hi[keep])
