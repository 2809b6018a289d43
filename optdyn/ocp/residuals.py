"""Residuals r(x, u) with exact first and contracted second derivatives.

The pattern of Crocoddyl's residual models (C. Mastalli et al., "Crocoddyl: An Efficient
and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, Sec. IV-B): a
residual gives its value r (K, nr) at K knots, its Jacobians r_x (K, nr, ndx), r_u (K, nr, nu),
and, for any multipliers ρ (K, nr), the Hessians of ρᵀr: (H_xx (K, ndx, ndx), H_ux (K, nu, ndx),
H_uu (K, nu, nu)). A cost a(r) then has the exact Hessian r_xᵀ a_rr r_x + H(ρ = a_r) (not
Gauss–Newton); a constraint's per-row Hessians are H(ρ = e_i). Derivatives w.r.t. x are
taken along x ⊕ δx (:mod:`optdyn.ocp.state`); references may vary along the horizon: a
reference of shape (K,) + shape gives one per knot (then K must be the number of knots
evaluated: N for a running cost).

Frame residuals use the frame's world motion subspace columns S_j = [v_j; ω_j] (linear at
the world origin; angular) of the joints that move it, and its pose M = (R, p). Along
q ⊕ ε the joint columns move by D_k S_j = S_k × S_j when joint(k) ⪯ joint(j) (zero
otherwise; R. Featherstone, "Rigid Body Dynamics Algorithms", 2008, eq. 2.29 with
Ṡ = v × S; Singh, Russell & Wensing, "On second-order derivatives of rigid-body dynamics",
2023, eq. 22). Writing M(q ⊕ ε) = M exp(η(ε)), η is the body twist to second order:

    η = J_b ε + ½ εᵀ H_η ε,   J_b = Ad(M⁻¹) S,   H_η[:, a, d] = ½ Ad(M⁻¹)(S_a × S_d)

for joint(a) a strict ancestor of joint(d) (and symmetric; pairs within one joint cancel).
A pose error r = log(M*⁻¹ M) = log(exp(r₀) exp(η)) then has r_q = J_r⁻¹(r₀) J_b and
∇²(ρᵀr) = J_bᵀ L(ρ) J_b + Σ_{a≺d} ⟨λ, S_a × S_d⟩ (sym.), with L(ρ) the Hessian of
ρᵀ log(exp(r₀) exp(η)) in η (:func:`dynamics.lie.log_curvatures`) and
λ = Ad(M⁻¹)ᵀ J_r⁻ᵀ(r₀) ρ, a world wrench.

* :class:`StateResidual`          (x ⊖ x̄)[rows]          (Crocoddyl: ResidualModelState)
* :class:`JointPositionResidual`  (q ⊖ q̄) of named joints (ResidualModelState, position rows)
* :class:`JointVelocityResidual`  (v − v̄) of named joints (ResidualModelState, velocity rows)
* :class:`VectorStateResidual`    x − x̄ of a state without a model (a plain vector)
* :class:`ControlResidual`        u − ū                    (ResidualModelControl)
* :class:`FramePositionResidual`  p(q) − p*                (ResidualModelFrameTranslation)
* :class:`FrameOrientationResidual`  log(R*ᵀ R(q))         (ResidualModelFrameRotation)
* :class:`FramePlacementResidual`    log(M*⁻¹ M(q)) (6,)   (ResidualModelFramePlacement)
* :class:`FrameVelocityResidual`  frame twist − target (6,), local or world-aligned (ResidualModelFrameVelocity)
* :class:`CoMPositionResidual`    c(q) − c*                (ResidualModelCoMPosition)
* :class:`SphereClearanceResidual`  ‖p_j(q) − c‖ − radius − margin of points fixed on links
"""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dynamics._checks import check_frame
from dynamics.batch import point_kinematics_knots
from dynamics.joints import lie_jacobian_batch, neutral
from dynamics.kinematics import frame_motion_batch_kernel
from dynamics.lie import lie_blocks, log_curvatures
from dynamics.model import (FREE_FLYER, IDX_Q, IDX_V, JTYPE, NQ, NV, PARENT, SPHERICAL, SUBTREE_END, Model,
                            is_rigid_transform)

from .costs import PointSet
from .pooled import Hessians, Pooled
from .state import check_state, state_difference_batch



@dataclass
class Terms:
    """A residual's value r (K, nr), Jacobians rx (K, nr, ndx), ru (K, nr, nu), and
    ``hessians(rho)`` → (H_xx, H_ux, H_uu) of ρᵀr for ρ (K, nr), from the same evaluation;
    ``added(rho, H_xx, H_ux, H_uu)``, if given, adds them into the arrays (H_xx, H_ux None:
    left out) without making the zero blocks (:func:`position_curvature`); ``pooled``, if
    given, the second order as a part of one computation shared with other residuals
    (:class:`Pooled`; ``hessians`` is then its computation with this part alone)."""

    r: np.ndarray
    rx: np.ndarray
    ru: np.ndarray
    hessians: Callable[[np.ndarray], Hessians]
    added: Callable[..., None] | None = None
    pooled: Pooled | None = None

    def add_hessians(self, rho: np.ndarray, Hxx: np.ndarray | None, Hux: np.ndarray | None,
                     Huu: np.ndarray) -> None:
        """H += the Hessians of ρᵀr (those given)."""
        if self.added is not None:
            self.added(rho, Hxx, Hux, Huu)
            return
        for H, h in zip((Hxx, Hux, Huu), self.hessians(rho)):
            if H is not None:
                H += h


def position_curvature(K: int, ndx: int, nu: int, Hqq: Callable[[np.ndarray], np.ndarray]) -> tuple:
    """(hessians, added) of :class:`Terms` for a residual whose curvature lies in H_xx's
    position block: ``Hqq(rho)`` (K, nv, nv)."""
    def added(rho, Hxx, Hux, Huu):
        if Hxx is not None:
            H = Hqq(rho)
            Hxx[:, : H.shape[1], : H.shape[1]] += H
    return (lambda rho: _hessians(K, ndx, nu, Hqq(rho))), added


def _no_curvature(rho, Hxx, Hux, Huu) -> None:
    """``added`` of a residual linear in (x, u)."""


def references(ref, shape: tuple[int, ...], name: str = "reference") -> np.ndarray:
    """``ref`` as finite floats of ``shape`` (one for every knot) or (K,) + ``shape`` (one
    per knot); ValueError naming ``name`` otherwise."""
    try:
        a = np.array(ref, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected numbers of shape {shape} or (K, *{shape}), got {ref!r}") from None
    if a.shape[a.ndim - len(shape):] != shape or a.ndim not in (len(shape), len(shape) + 1) or a.size == 0:
        raise ValueError(f"{name}: expected shape {shape} (every knot) or (K, *{shape}) (one per knot), "
                         f"got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return a


def at_knots(ref: np.ndarray, K: int, ndim: int, name: str = "reference") -> np.ndarray:
    """A reference of :func:`references` broadcast to K knots (ValueError if it has another count)."""
    if ref.ndim == ndim:
        return np.broadcast_to(ref, (K,) + ref.shape)
    if ref.shape[0] != K:
        raise ValueError(f"{name}: one reference per knot was given for {ref.shape[0]} knots, "
                         f"but {K} knots are evaluated")
    return ref


class KeptArrays:
    """Evaluations into arrays the object keeps (:func:`kept_array`): ``evaluate_shared`` calls
    ``evaluate(..., kept=...)`` with the object's own dict if the class sets ``keeps_arrays``
    (its evaluate then takes ``kept``), else plain ``evaluate``. Like a Pinocchio Data, the
    kept arrays serve one caller at a time: threads evaluating one object at once would share
    them (the solvers and :class:`optdyn.MPC` evaluate from one thread; sweeps run each
    solve in a process of its own)."""

    keeps_arrays: bool = False

    def evaluate_shared(self, *args):
        """``evaluate(*args)``, whose derivative arrays may be arrays this object keeps and
        overwrites at its next call of this method (on it or on a shallow copy): for a
        caller that uses them at once (a cost's expansion, a penalty's), so that the
        library's terms make their derivatives' zero and identity blocks once."""
        if not self.keeps_arrays:
            return self.evaluate(*args)
        return self.evaluate(*args, kept=self.__dict__.setdefault("_kept", {}))


class Residual(KeptArrays, ABC):
    """Abstract residual r(x, u) of ``size`` entries; subclasses implement :meth:`evaluate`
    (the library's with ``kept``: :class:`KeptArrays`)."""

    size: int = 0
    ndx: int | None = None
    nu: int | None = None
    depends_on_x: bool = True
    depends_on_u: bool = False
    approximate_hessian: bool = False  # True: Hessians by differences (a user term without one)
    takes_forces: bool = False  # True: it reads the contact forces a problem's dynamics keep

    @abstractmethod
    def evaluate(self, xs: np.ndarray, us: np.ndarray) -> Terms:
        """:class:`Terms` at the knots xs (K, nx), us (K, nu)."""

    def knots(self) -> int | None:
        """How many knots its reference gives one for (a trajectory to track), None if one
        serves every knot."""
        ref, ndim = self._reference()
        return ref.shape[0] if ref is not None and ref.ndim > ndim else None

    def _reference(self) -> tuple[np.ndarray | None, int]:
        """(the reference or target array, the number of dimensions of one knot's) (None: none)."""
        return None, 0

    knot_arrays: tuple[str, ...] = ()
    """The attributes that hold one row per knot when the reference does (:meth:`window`)."""

    def window(self, rows: np.ndarray) -> Residual:
        """This residual at its knots ``rows`` (an index array, repeats allowed): itself if one
        reference serves every knot, else a copy with the per-knot rows taken
        (:mod:`optdyn.ocp.windows`)."""
        if self.knots() is None:
            return self
        self.__dict__.setdefault("_kept", {})  # its windows share its kept arrays (KeptArrays)
        out = copy.copy(self)
        out._take_rows(np.asarray(rows, dtype=np.int64))
        return out

    def _take_rows(self, rows: np.ndarray) -> None:
        """Keep the rows ``rows`` of the per-knot data (of a copy: :meth:`window`)."""
        for name in self.knot_arrays:
            setattr(self, name, getattr(self, name)[rows])

    def defined_at(self) -> np.ndarray | None:
        """(knots,) bool: the knots where the residual means something — elsewhere it is 0 by
        construction (the force of a contact out of contact) — or None: everywhere."""
        return None

    def final_value(self, x: np.ndarray, nu: int) -> np.ndarray:
        """r (size,) at the state x (nx,), zero controls and the last knot's reference."""
        K = self.knots() or 1
        return self.value(np.repeat(np.asarray(x, dtype=float)[None], K, 0), np.zeros((K, nu)))[-1]

    def value(self, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
        """r (K, size) only."""
        return self.evaluate(xs, us).r

    def check_problem(self, contacts: list | None, actuated: np.ndarray, name: str, terminal: bool = False,
                      shared: dict | None = None) -> None:
        """ValueError naming ``name`` if this residual cannot serve a problem with the contact
        sequence ``contacts`` (None: none) and actuated DoFs ``actuated`` (as a term at node N:
        ``terminal``). ``shared``: the problem's dict of what its residuals share, by kind (the
        residuals of contact forces share their knots there). Here: none (the residuals of
        contact forces check theirs)."""

    def _zeros(self, K: int, nu: int, nx: int | None = None, kept: dict | None = None):
        """(r_x, r_u) of zeros, r_x of width ``nx`` (default ndx): new, or those ``kept``
        (:func:`kept_array`)."""
        return (kept_array(kept, "rx", (K, self.size, self.ndx if nx is None else nx)),
                kept_array(kept, "ru", (K, self.size, nu)))


def kept_array(kept: dict | None, name: str, shape: tuple[int, ...], fill: Callable | None = None) -> np.ndarray:
    """Zeros of ``shape`` (then ``fill(a)``): new if ``kept`` is None, else the array kept
    there under (name, shape), made so once — whatever its user writes stays for the next
    (:meth:`KeptArrays.evaluate_shared`: the user rewrites the same blocks at every call)."""
    if kept is not None and (name, shape) in kept:
        return kept[name, shape]
    a = np.zeros(shape)
    if fill is not None:
        fill(a)
    if kept is not None:
        kept[name, shape] = a
    return a


def _identities(a: np.ndarray) -> None:
    """a (K, n, n) ← identities."""
    a[:] = np.eye(a.shape[1])


def _hessians(K: int, ndx: int, nu: int, Hqq: np.ndarray | None = None) -> Hessians:
    """(H_xx, H_ux, H_uu) of zeros, with H_qq (K, nv, nv) in H_xx's position block if given."""
    Hxx = np.zeros((K, ndx, ndx))
    if Hqq is not None:
        Hxx[:, : Hqq.shape[1], : Hqq.shape[1]] = Hqq
    return Hxx, np.zeros((K, nu, ndx)), np.zeros((K, nu, nu))


# ---------------------------------------------------------------- state and control
class StateResidual(Residual):
    """r = (x ⊖ x̄)[rows]; ``reference`` x̄ (nq + nv,) or (K, nq + nv) (default: the neutral
    configuration at rest), ``rows`` tangent indices (default all 2·nv).

    r_x = rows of blockdiag(J_r⁻¹(q ⊖ q̄), I); ρᵀr has the curvature of the log on Lie
    joints (:func:`dynamics.lie.log_curvatures`), none on revolute/prismatic joints."""

    def __init__(self, model: Model, reference=None, rows=None) -> None:
        nx, nv = model.nq + model.nv, model.nv
        ref = np.concatenate([neutral(model), np.zeros(nv)]) if reference is None else reference
        self.reference = references(ref, (nx,))
        check_state(model, self.reference, "reference")
        self.rows = np.arange(2 * nv) if rows is None else np.array(rows, dtype=np.int64).ravel()
        if self.rows.size == 0 or np.any((self.rows < 0) | (self.rows >= 2 * nv)):
            raise ValueError(f"rows: expected tangent indices in [0, {2 * nv}), got {rows!r}")
        self.model, self.lie = model, lie_blocks(model)
        self.size, self.ndx = self.rows.size, 2 * nv
        self.all_rows = np.array_equal(self.rows, np.arange(2 * nv))

    knot_arrays = ("reference",)

    def _reference(self):
        return self.reference, 1

    def _difference(self, xs):
        m = self.model
        ref = np.ascontiguousarray(at_knots(self.reference, xs.shape[0], 1))
        return state_difference_batch(m.topology, m.nq, ref, np.ascontiguousarray(xs, dtype=float))

    def value(self, xs, us):
        return self._difference(xs)[:, self.rows]

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nv, nu = xs.shape[0], self.model.nv, us.shape[1]
        e = self._difference(xs)
        Jinv = lie_jacobian_batch(self.model.topology, np.ascontiguousarray(e[:, :nv]), 2)
        D = kept_array(kept, "D", (K, self.ndx, self.ndx), _identities)
        D[:, :nv, :nv] = Jinv

        def Hqq(rho):
            M = np.zeros((K, self.ndx))
            M[:, self.rows] = rho
            return log_curvatures(self.lie, np.ascontiguousarray(e[:, :nv]), np.ascontiguousarray(M[:, :nv]), Jinv)
        # take, not e[:, rows]: an index array on axis 1 gives a Fortran-ordered copy
        r, rx = (e, D) if self.all_rows else (e.take(self.rows, axis=1), D.take(self.rows, axis=1))
        return Terms(r, rx, kept_array(kept, "ru", (K, self.size, nu)), *position_curvature(K, self.ndx, nu, Hqq))


def joint_rows(model: Model, joints, velocity: bool) -> np.ndarray:
    """Tangent indices of the named ``joints`` (default all) in x's tangent: their position
    rows, or with ``velocity`` their velocity rows (offset by nv)."""
    names = list(model.joint_names) if joints is None else ([joints] if isinstance(joints, str) else list(joints))
    idx = [model.joint_index(j) if isinstance(j, str) else None for j in names]
    if None in idx or not idx:
        raise ValueError(f"joints: expected joint names of {list(model.joint_names)}, got {joints!r}")
    rows = [d for i in idx for d in range(model.idx_vs[i], model.idx_vs[i] + model.nvs[i])]
    return np.array(rows, dtype=np.int64) + (model.nv if velocity else 0)


class JointPositionResidual(StateResidual):
    """r = (q ⊖ q̄) of the named ``joints`` (default all); ``reference`` q̄ (nq,) or (K, nq),
    default neutral (then r = q on revolute and prismatic joints)."""

    def __init__(self, model: Model, reference=None, joints=None) -> None:
        q = references(neutral(model) if reference is None else reference, (model.nq,))
        x = np.concatenate([q, np.zeros(q.shape[:-1] + (model.nv,))], axis=-1)
        super().__init__(model, x, joint_rows(model, joints, False))


class JointVelocityResidual(StateResidual):
    """r = v − v̄ of the named ``joints`` (default all); ``reference`` v̄ (nv,) or (K, nv) (default 0)."""

    def __init__(self, model: Model, reference=None, joints=None) -> None:
        v = references(np.zeros(model.nv) if reference is None else reference, (model.nv,))
        q = np.broadcast_to(neutral(model), v.shape[:-1] + (model.nq,))
        super().__init__(model, np.concatenate([q, v], axis=-1), joint_rows(model, joints, True))


class _Difference(Residual):
    """r = y − ȳ of y = u (the control) or x (a state on a vector space): an identity
    Jacobian, no curvature; ``reference`` ȳ (n,) or (K, n), default 0 of size ``n``."""

    def __init__(self, n: int | None, reference, name: str) -> None:
        if reference is None and not (isinstance(n, (int, np.integer)) and n >= 1):
            raise ValueError(f"{name}: expected the dimension (an integer ≥ 1) or a reference, got {n!r}")
        self.reference = references(np.zeros(n) if reference is None else reference,
                                    (n,) if n is not None else np.shape(reference)[-1:])
        self.size = self.reference.shape[-1]

    knot_arrays = ("reference",)

    def _reference(self):
        return self.reference, 1

    def value(self, xs, us):
        y = us if self.depends_on_u else xs
        return y - at_knots(self.reference, y.shape[0], 1)

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nu = xs.shape[0], us.shape[1]
        ndx = xs.shape[1] if self.ndx is None else self.ndx
        eye = kept_array(kept, "eye", (K, self.size, self.size), _identities)
        rx, ru = ((kept_array(kept, "rx", (K, self.size, ndx)), eye) if self.depends_on_u
                  else (eye, kept_array(kept, "ru", (K, self.size, nu))))
        return Terms(self.value(xs, us), rx, ru, lambda rho: _hessians(K, ndx, nu), _no_curvature)


class ControlResidual(_Difference):
    """r = u − ū; ``reference`` ū (nu,) or (K, nu) (default 0, then give ``nu``); ``ndx`` the
    state's tangent size (the width of its zero r_x; default: that of the states passed)."""

    depends_on_x, depends_on_u = False, True

    def __init__(self, nu: int | None = None, reference=None, ndx: int | None = None) -> None:
        super().__init__(nu, reference, "nu")
        self.nu, self.ndx = self.size, ndx


class VectorStateResidual(_Difference):
    """r = x − x̄ of a state that is a plain vector (no model: q ⊖ q̄ = q − q̄, as on
    revolute and prismatic joints); ``reference`` x̄ (nx,) or (K, nx) (default 0, then give ``nx``)."""

    def __init__(self, nx: int | None = None, reference=None) -> None:
        super().__init__(nx, reference, "nx")
        self.ndx = self.size


# ---------------------------------------------------------------- points: frame origin, centre of mass
class PointPositions:
    """The world positions of the points of a problem's point residuals (frame positions,
    centres of mass) of one model at the configurations they were last valued at: one compiled
    pass over the knots for all of them (:func:`dynamics.batch.point_kinematics_knots`: one
    forward kinematics per knot serves every point), not one per residual — the values of a
    line search's trials and of an iterate. A problem gives one to its point residuals
    (:meth:`_PointsResidual.check_problem`), each of which finds its points at its rows. It
    keeps the last configurations' positions only; like
    :class:`~optdyn.ocp.contact_residuals.ContactKnots`, it serves one caller at a time."""

    def __init__(self, model: Model) -> None:
        self.model, self.bodies, self.local = model, np.empty(0, np.int64), np.empty((0, 3))
        self._key, self._positions = None, np.empty((0, 0, 3))

    def add(self, bodies: np.ndarray, local: np.ndarray) -> slice:
        """Take on the points of ``bodies`` (P,) at ``local`` (P, 3); returns their rows."""
        rows = slice(self.bodies.size, self.bodies.size + bodies.size)
        self.bodies, self.local = np.concatenate([self.bodies, bodies]), np.concatenate([self.local, local])
        self._key = None
        return rows

    def positions(self, qs: np.ndarray, rows: slice) -> np.ndarray:
        """(K, P, 3) of the points at ``rows`` at the configurations qs (K, nq), C-contiguous."""
        key = (qs.shape, qs.tobytes())
        if key != self._key:
            self._positions = point_kinematics_knots(self.model.arrays, qs, self.bodies, self.local, False)
            self._key = key
        return self._positions[:, rows]


class _PointsResidual(Residual):
    """r = Σ_i w_i p_i(q) − target for points p_i fixed on bodies (weights w (P,)): shared
    by the frame position (one point) and the centre of mass (the bodies' CoMs, w = mᵢ/m).
    Its values take the positions from the :class:`PointPositions` of its problem (one of its
    own until a problem gives it one: :meth:`check_problem`)."""

    def __init__(self, model: Model, bodies, local, weights, target) -> None:
        self.model, self.bodies, self.local = model, np.asarray(bodies, np.int64), np.asarray(local, float)
        self.weights = np.asarray(weights, dtype=float)
        self.target = references(target, (3,), "target")
        self.size, self.ndx = 3, 2 * model.nv
        self._points = PointPositions(model)
        self._rows = self._points.add(self.bodies, self.local)

    def check_problem(self, contacts, actuated: np.ndarray, name: str, terminal: bool = False,
                      shared: dict | None = None) -> None:
        """As :meth:`Residual.check_problem`; then its values take their positions from the
        problem's :class:`PointPositions` of its model (in ``shared``), with its other point
        residuals'."""
        if shared is None:
            return
        points = shared.setdefault((PointPositions, id(self.model)), PointPositions(self.model))
        if points is not self._points:
            self._points, self._rows = points, points.add(self.bodies, self.local)

    knot_arrays = ("target",)

    def _reference(self):
        return self.target, 1

    def _kinematics(self, xs):
        """(p, J, H) of the points at xs."""
        return point_kinematics_knots(self.model.arrays, np.ascontiguousarray(xs[:, : self.model.nq]), self.bodies,
                                      self.local)

    def _residual(self, p):
        """Σ_i w_i p_i − target (K, 3) of the points' positions p (K, P, 3)."""
        return np.matmul(self.weights, p) - at_knots(self.target, p.shape[0], 1, "target")

    def _positions(self, xs):
        """(K, P, 3) of the points at xs, from the positions shared with the problem's other point residuals."""
        return self._points.positions(np.ascontiguousarray(xs[:, : self.model.nq]), self._rows)

    def point(self, xs: np.ndarray) -> np.ndarray:
        """Σ_i w_i p_i(q) (K, 3): the world position of the frame's point or of the centre of mass."""
        return np.matmul(self.weights, self._positions(xs))

    def value(self, xs, us):
        return self._residual(self._positions(xs))

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nv, P = xs.shape[0], self.model.nv, self.weights.size
        p, J, H = self._kinematics(xs)
        r = self._residual(p)
        rx, ru = self._zeros(K, us.shape[1], kept=kept)
        rx[:, :, :nv] = np.matmul(self.weights, J.reshape(K, P, 3 * nv)).reshape(K, 3, nv)  # Σ_i w_i J_i

        def Hqq(rho):  # Σ_i w_i Σ_a ρ_a ∇²p_ia, as one product per knot
            coef = (self.weights[None, :, None] * rho[:, None, :]).reshape(K, 1, 3 * P)
            return np.matmul(coef, H.reshape(K, 3 * P, nv * nv)).reshape(K, nv, nv)
        return Terms(r, rx, ru, *position_curvature(K, self.ndx, us.shape[1], Hqq))


class FramePositionResidual(_PointsResidual):
    """r = p(q) − target: world position of the point ``offset`` (3,) of frame ``frame``;
    ``target`` (3,) or (K, 3) (a reference trajectory)."""

    def __init__(self, model: Model, frame: str, target=(0.0, 0.0, 0.0), offset=(0.0, 0.0, 0.0)) -> None:
        points = PointSet(model, [(frame, offset)])
        super().__init__(model, points.bodies, points.local, [1.0], target)
        self.frame, self.offset = frame, points.offsets[0]


class CoMPositionResidual(_PointsResidual):
    """r = c(q) − target: the centre of mass c = Σ m_i c_i(q) / Σ m_i of the moving bodies."""

    def __init__(self, model: Model, target=(0.0, 0.0, 0.0)) -> None:
        mass = model.inertia[:, 0]
        if not mass.sum() > 0:
            raise ValueError(f"model: {model.name!r} has no mass")
        super().__init__(model, np.arange(model.njoints), model.inertia[:, 1:4], mass / mass.sum(), target)


class SphereClearanceResidual(Residual):
    """r_j = ‖p_j(q) − center‖ − radius − margin (P,): the clearance from a sphere of points
    ``points`` = [(frame name, offset (3,)), ...] fixed on links; r_q = nᵀJ, ∇²(ρᵀr) =
    Σ_j ρ_j (J_jᵀ(I − nnᵀ)J_j/‖p_j − c‖ + Σ_i n_i ∇²p_ji) (:func:`optdyn.ocp.costs.sphere_distance`)."""

    def __init__(self, model: Model, points, center, radius: float, margin: float = 0.0) -> None:
        self.points, self.model = PointSet(model, points), model
        self.center = references(center, (3,), "center")
        if self.center.ndim != 1:
            raise ValueError(f"center: expected shape (3,), got {self.center.shape}")
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a finite length ≥ 0, got {radius!r}")
        if not np.isfinite(margin):
            raise ValueError(f"margin: expected a finite length, got {margin!r}")
        self.radius, self.margin = float(radius), float(margin)
        self.size, self.ndx = len(self.points), 2 * model.nv

    def value(self, xs, us):
        d = self.points.sphere_distance(xs[:, : self.model.nq], self.center, False)[0]
        return d - self.radius - self.margin

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nv, nu = xs.shape[0], self.model.nv, us.shape[1]
        d, dd, ddd = self.points.sphere_distance(xs[:, : self.model.nq], self.center)
        rx, ru = self._zeros(K, nu, kept=kept)
        rx[:, :, :nv] = dd
        return Terms(d - self.radius - self.margin, rx, ru,
                     *position_curvature(K, self.ndx, nu, lambda rho: np.einsum("kj,kjab->kab", rho, ddd)))


# ---------------------------------------------------------------- frame poses and velocities
def _ancestors(model: Model, strict: bool = True) -> np.ndarray:
    """A (nv, nv): A[a, d] = 1 when the joint of column a is an ancestor of that of d
    (``strict``: not the same joint)."""
    col = np.repeat(np.arange(model.njoints), model.nvs)
    return np.array([[float((col[a] != col[d] or not strict) and col[a] in model.support(col[d]))
                      for d in range(model.nv)] for a in range(model.nv)])


def motion_cross(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """X × Y of twists [v; ω] (…, 6), broadcast: [ω_X × v_Y + v_X × ω_Y; ω_X × ω_Y]."""
    vx, wx, vy, wy = X[..., :3], X[..., 3:], Y[..., :3], Y[..., 3:]
    return np.concatenate([np.cross(wx, vy) + np.cross(vx, wy), np.cross(wx, wy)], axis=-1)


def spatial_pairs(lam: np.ndarray, S: np.ndarray) -> np.ndarray:
    """C (K, nv, nv), C[a, d] = ⟨λ, S_a × S_d⟩ for world twists S (K, nv, 6) = [v; ω] and
    wrenches λ (K, 6) = [f; n]: S_a × S_d = [ω_a × v_d + v_a × ω_d; ω_a × ω_d]."""
    return np.einsum("ki,kadi->kad", lam, motion_cross(S[:, :, None], S[:, None]))


def to_frame(R: np.ndarray, p: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Ad(M⁻¹) X: twists X (K, n, 6) = [v; ω] (linear part at the origin) expressed in the
    axes and at the origin of M = (R (K, 3, 3), p (K, 3))."""
    v = X[..., :3] + np.cross(X[..., 3:], p[:, None])
    return np.concatenate([np.matmul(v, R), np.matmul(X[..., 3:], R)], axis=-1)  # rows Rᵀv, Rᵀω


class FrameMotion:
    """The pose M = (R, p) of frame ``frame`` at knots, its world columns S (K, nv, 6) = [v; ω]
    and body Jacobian J_b = Ad(M⁻¹) S (K, 6, nv) (rows [linear; angular], Pinocchio's LOCAL)."""

    def __init__(self, model: Model, frame: str) -> None:
        f = check_frame(model, frame)
        self.model, self.frame, self.body, self.placement = model, frame, f.body, np.asarray(f.placement, float)
        self.ancestors = _ancestors(model)

    def __call__(self, xs):
        qs = np.ascontiguousarray(xs[:, : self.model.nq])
        R, p, S = frame_motion_batch_kernel(self.model.arrays, qs, self.body, self.placement)
        S = np.concatenate([S[:, :, 3:], S[:, :, :3]], axis=2)  # [ω; v] → [v; ω]
        return R, p, S, np.ascontiguousarray(to_frame(R, p, S).transpose(0, 2, 1))

    def twist_hessian(self, R, p, S, rho):
        """Σ_i ρ_i ∇²η_i (K, nv, nv) of the body twist η (module docstring) for ρ (K, 6)."""
        f = np.einsum("kij,kj->ki", R, rho[:, :3])
        lam = np.concatenate([f, np.cross(p, f) + np.einsum("kij,kj->ki", R, rho[:, 3:])], axis=1)
        C = 0.5 * self.ancestors * spatial_pairs(lam, S)
        return C + C.transpose(0, 2, 1)


def rotation_quaternions(R: np.ndarray) -> np.ndarray:
    """Unit quaternions (K, 4) = (x, y, z, w) of rotations R (K, 3, 3), by the largest of the
    four diagonal combinations (S. W. Shepperd, "Quaternion from rotation matrix", J.
    Guidance and Control, 1978)."""
    t = np.stack([1 + R[:, 0, 0] - R[:, 1, 1] - R[:, 2, 2], 1 - R[:, 0, 0] + R[:, 1, 1] - R[:, 2, 2],
                  1 - R[:, 0, 0] - R[:, 1, 1] + R[:, 2, 2], 1 + R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]], axis=1)
    a01, a02, a12 = R[:, 0, 1] + R[:, 1, 0], R[:, 0, 2] + R[:, 2, 0], R[:, 1, 2] + R[:, 2, 1]
    s0, s1, s2 = R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]
    cand = np.stack([np.stack([t[:, 0], a01, a02, s0], 1), np.stack([a01, t[:, 1], a12, s1], 1),
                     np.stack([a02, a12, t[:, 2], s2], 1), np.stack([s0, s1, s2, t[:, 3]], 1)], axis=1)
    i = np.argmax(t, axis=1)
    q = cand[np.arange(R.shape[0]), i] / (2.0 * np.sqrt(np.maximum(t[np.arange(R.shape[0]), i], 1e-300)))[:, None]
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def rigid_transforms(target, name: str = "target") -> np.ndarray:
    """``target`` as homogeneous rigid transforms (4, 4) or (K, 4, 4): rotation block
    orthonormal with determinant 1, last row (0, 0, 0, 1); ValueError naming ``name``."""
    T = references(target, (4, 4), name)
    if not is_rigid_transform(T):
        raise ValueError(f"{name}: expected a rigid transform (rotation block orthonormal with det 1, "
                         f"last row 0 0 0 1), got {target!r}")
    return T


def _group_topology(jtype: int) -> np.ndarray:
    """topology (1, 7) of a single joint of type ``jtype`` (its group: SE(3) or SO(3)),
    read-only as a model's is: the state kernels are compiled once for both."""
    nq, nv = (7, 6) if jtype == FREE_FLYER else (4, 3)
    t = np.zeros((1, 7), dtype=np.int64)
    t[0, PARENT], t[0, JTYPE], t[0, IDX_Q], t[0, IDX_V], t[0, NQ], t[0, NV] = -1, jtype, 0, 0, nq, nv
    t[0, SUBTREE_END] = 1
    t.setflags(write=False)
    return t


class _PoseResidual(Residual):
    """r = log(T⁻¹ X(q)) on SE(3) (6,: [linear; angular], ``jtype`` FREE_FLYER) or on SO(3)
    (3,, SPHERICAL) of the frame pose X and the targets T (K, 4, 4) (module docstring)."""

    def __init__(self, model: Model, frame: str, targets: np.ndarray, jtype: int) -> None:
        self.motion, self.model = FrameMotion(model, frame), model
        self.topology, self.lie = _group_topology(jtype), np.array([[jtype, 0, 6 if jtype == FREE_FLYER else 3]])
        self.size, self.ndx = int(self.lie[0, 2]), 2 * model.nv
        self.rows = slice(6 - self.size, 6)  # SO(3): the angular rows of a twist
        self.target = targets
        T = targets.reshape(-1, 4, 4)
        self.target_coordinates = self._coordinates(T[:, :3, :3], T[:, :3, 3])  # (1 or K, nq + nv)

    knot_arrays = ("target", "target_coordinates")

    def _reference(self):
        return self.target, 2

    def _coordinates(self, R, p):
        """Group coordinates (K, nq + nv) of poses: (p, quaternion) on SE(3), the quaternion on SO(3)."""
        q = rotation_quaternions(R)
        q = np.concatenate([p, q], axis=1) if self.size == 6 else q
        return np.concatenate([q, np.zeros((q.shape[0], self.size))], axis=1)

    def _error(self, R, p):
        K, T = R.shape[0], self.target_coordinates
        T = np.broadcast_to(T, (K, T.shape[1])) if T.shape[0] == 1 else at_knots(T, K, 1, "target")
        X = self._coordinates(R, p)
        return state_difference_batch(self.topology, self.topology[0, NQ], np.ascontiguousarray(T),
                                      np.ascontiguousarray(X))[:, : self.size]

    def value(self, xs, us):
        R, p, _, _ = self.motion(xs)
        return self._error(R, p)

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nv, nu = xs.shape[0], self.model.nv, us.shape[1]
        R, p, S, Jb = self.motion(xs)
        r = self._error(R, p)
        Jinv = lie_jacobian_batch(self.topology, np.ascontiguousarray(r), 2)
        Jg = Jb[:, self.rows]
        rx, ru = self._zeros(K, nu, kept=kept)
        rx[:, :, :nv] = np.matmul(Jinv, Jg)

        def Hqq(rho):
            L = log_curvatures(self.lie, np.ascontiguousarray(r), np.ascontiguousarray(rho, dtype=float), Jinv)
            rho_eta = np.zeros((K, 6))
            rho_eta[:, self.rows] = np.einsum("kij,ki->kj", Jinv, rho)
            return np.matmul(Jg.transpose(0, 2, 1), np.matmul(L, Jg)) + self.motion.twist_hessian(R, p, S, rho_eta)
        return Terms(r, rx, ru, *position_curvature(K, self.ndx, nu, Hqq))


class FramePlacementResidual(_PoseResidual):
    """r = log₆(T⁻¹ M(q)) (6,: [linear; angular], Pinocchio's log6) of frame ``frame``;
    ``target`` T a rigid transform (4, 4) or one per knot (K, 4, 4)."""

    def __init__(self, model: Model, frame: str, target) -> None:
        super().__init__(model, frame, rigid_transforms(target), FREE_FLYER)


class FrameOrientationResidual(_PoseResidual):
    """r = log₃(R*ᵀ R(q)) (3,) of frame ``frame``; ``rotation`` R* (3, 3) or (K, 3, 3)."""

    def __init__(self, model: Model, frame: str, rotation) -> None:
        R = references(rotation, (3, 3), "rotation")
        T = np.zeros(R.shape[:-2] + (4, 4))
        T[..., :3, :3], T[..., 3, 3] = R, 1.0
        try:
            rigid_transforms(T)
        except ValueError:
            raise ValueError(f"rotation: expected a rotation matrix (orthonormal, det 1), got {rotation!r}") from None
        super().__init__(model, frame, T, SPHERICAL)


class FrameVelocityResidual(Residual):
    """r = V(q, v) − target (6,: [linear; angular]): the twist of frame ``frame`` in its own
    axes (``reference="local"``: J_b v, Pinocchio's LOCAL) or the velocity of its origin and
    its angular velocity in world axes (``"world"``: LOCAL_WORLD_ALIGNED); ``target`` (6,) or (K, 6).

    With V_s = Σ_j v_j S_j the world twist at the origin and U_k = Σ_{j ⪰ k} v_j S_j,
    D_k V_s = S_k × U_k; ρᵀV = λ(q)ᵀV_s with λ = (a, p × a + b), (a, b) = (Rρ_v, Rρ_ω)
    locally or (ρ_v, ρ_ω) world-aligned, and the Hessian of ρᵀV is that of this product
    (D_k R c = ω_k × Rc, D_k p = v_k + ω_k × p; H_vv = 0)."""

    def __init__(self, model: Model, frame: str, target=np.zeros(6), reference: str = "local") -> None:
        if reference not in ("local", "world"):
            raise ValueError(f"reference: expected 'local' or 'world', got {reference!r}")
        self.motion, self.model, self.reference = FrameMotion(model, frame), model, reference
        self.target = references(target, (6,), "target")
        self.size, self.ndx = 6, 2 * model.nv
        self.before = _ancestors(model, strict=False)  # P[l, k]: joint(l) ⪯ joint(k)

    knot_arrays = ("target",)

    def _reference(self):
        return self.target, 1

    def _express(self, X, R, p):
        """The world twists X (K, …, 6) at the origin in the frame's expression (``reference``)."""
        shape = (R.shape[0],) + (1,) * (X.ndim - 2)
        lin = X[..., :3] + np.cross(X[..., 3:], p.reshape(shape + (3,)))
        out = np.concatenate([lin, X[..., 3:]], axis=-1)
        if self.reference == "world":
            return out
        Rt = R.transpose(0, 2, 1).reshape(shape + (3, 3))
        return np.concatenate([np.einsum("k...ij,k...j->k...i", Rt, out[..., :3]),
                               np.einsum("k...ij,k...j->k...i", Rt, out[..., 3:])], axis=-1)

    def _velocities(self, xs):
        """(R, p, S, v, V_s = Σ_j v_j S_j) of the frame's support at xs."""
        R, p, S, _ = self.motion(xs)
        v = xs[:, self.model.nq:]
        return R, p, S, v, np.einsum("bj,bji->bi", v, S)

    def value(self, xs, us):
        R, p, _, _, Vs = self._velocities(xs)
        return self._express(Vs[:, None], R, p)[:, 0] - at_knots(self.target, xs.shape[0], 1, "target")

    keeps_arrays = True

    def evaluate(self, xs, us, kept=None):
        K, nv, nu = xs.shape[0], self.model.nv, us.shape[1]
        R, p, S, v, Vs = self._velocities(xs)
        U = np.einsum("kj,bj,bji->bki", self.before, v, S)  # U_k = Σ_{j ⪰ k} v_j S_j
        DV = motion_cross(S, U)  # D_k V_s
        rx, ru = self._zeros(K, nu, kept=kept)
        rx[:, :, nv:] = self._express(S, R, p).transpose(0, 2, 1)
        if self.reference == "local":  # D_k (Ad(M⁻¹) V_s) = Ad(M⁻¹)(D_k V_s − S_k × V_s)
            rx[:, :, :nv] = self._express(DV - motion_cross(S, Vs[:, None]), R, p).transpose(0, 2, 1)
        else:  # D_k [V_v + V_ω × p; V_ω] = [·](D_k V_s) + [V_ω × D_k p; 0]
            Jp = S[..., :3] + np.cross(S[..., 3:], p[:, None])
            rx[:, :, :nv] = self._express(DV, R, p).transpose(0, 2, 1)
            rx[:, :3, :nv] += np.cross(Vs[:, None, 3:], Jp).transpose(0, 2, 1)
        r = self._express(Vs[:, None], R, p)[:, 0] - at_knots(self.target, K, 1, "target")
        return Terms(r, rx, ru, lambda rho: self._hessians(R, p, S, v, U, Vs, DV, rho, nu))

    def _hessians(self, R, p, S, v, U, Vs, DV, rho, nu):
        K, nv, P = S.shape[0], S.shape[1], self.before
        DS = P[None, :, :, None] * motion_cross(S[:, :, None], S[:, None])  # DS[l, j] = D_l S_j
        DDV = motion_cross(DS, U[:, None]) + motion_cross(S[:, None], np.einsum("kj,bj,blji->blki", P, v, DS))
        Jp = S[..., :3] + np.cross(S[..., 3:], p[:, None])  # D_k p
        DDp = DS[..., :3] + np.cross(DS[..., 3:], p[:, None, None]) + np.cross(S[:, None, :, 3:], Jp[:, :, None])
        (a, Da, DDa), (b, Db, DDb) = (self._rotated(R, S, rho[:, i:i + 3]) for i in (0, 3))
        lam = np.concatenate([a, np.cross(p, a) + b], axis=1)
        Dlam = np.concatenate([Da, np.cross(Jp, a[:, None]) + np.cross(p[:, None], Da) + Db], axis=2)
        DDlam = np.concatenate([DDa, np.cross(DDp, a[:, None, None]) + np.cross(Jp[:, None], Da[:, :, None])
                                + np.cross(Jp[:, :, None], Da[:, None]) + np.cross(p[:, None, None], DDa) + DDb],
                               axis=3)  # DDlam[l, k] = D_l D_k λ
        Hqq = (np.einsum("blki,bi->blk", DDlam, Vs) + np.einsum("bki,bli->blk", Dlam, DV)
               + np.einsum("bli,bki->blk", Dlam, DV) + np.einsum("bi,blki->blk", lam, DDV))
        Hxx = np.zeros((K, self.ndx, self.ndx))
        Hxx[:, :nv, :nv] = 0.5 * (Hqq + Hqq.transpose(0, 2, 1))
        Hxx[:, :nv, nv:] = np.einsum("bki,bji->bkj", Dlam, S) + np.einsum("bi,bkji->bkj", lam, DS)
        Hxx[:, nv:, :nv] = Hxx[:, :nv, nv:].transpose(0, 2, 1)
        return Hxx, np.zeros((K, nu, self.ndx)), np.zeros((K, nu, nu))

    def _rotated(self, R, S, c):
        """(c̃, D_k c̃ (K, nv, 3), D_l D_k c̃ (K, nv, nv, 3)) of c̃ = R c (local) or c (world)."""
        K, nv = S.shape[0], S.shape[1]
        if self.reference == "world":
            return c, np.zeros((K, nv, 3)), np.zeros((K, nv, nv, 3))
        w = S[..., 3:]
        c = np.einsum("kij,kj->ki", R, c)
        Dc = np.cross(w, c[:, None])
        DDc = (self.before[None, :, :, None] * np.cross(np.cross(w[:, :, None], w[:, None]), c[:, None, None])
               + np.cross(w[:, None], Dc[:, :, None]))  # D_l (ω_k × c̃) = (D_l ω_k) × c̃ + ω_k × (ω_l × c̃)
        return c, Dc, DDc
