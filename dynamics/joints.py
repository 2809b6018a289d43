"""Joints: configuration, motion subspace and Lie-group operations over a model (jcalc).

Every joint type is a module of :mod:`dynamics.joint_types` (Featherstone's ``jcalc``,
Pinocchio's JointModel) that the kernels below reach through a compiled switch on its code;
they follow Pinocchio's conventions so that q and v move freely between the two libraries:

=============  ====  ====  ==========================================  =====================
type           nq    nv    q                                           v (joint frame)
=============  ====  ====  ==========================================  =====================
revolute       1     1     angle (continuous joints too: one angle,    angular rate
                           where Pinocchio stores (cos, sin))
prismatic      1     1     displacement                                linear rate
spherical      4     3     unit quaternion (x, y, z, w)                angular velocity
free-flyer     7     6     translation (x, y, z) in the parent frame,  (linear, angular)
                           unit quaternion (qx, qy, qz, qw)
planar         4     3     (x, y, cos θ, sin θ), motion in the x–y     (vx, vy, ω_z)
                           plane of the joint frame
=============  ====  ====  ==========================================  =====================

The motion subspace of every type is constant in the joint's own (child) frame, so in
world coordinates S = Ad(⁰T_i) S_local and its rate is Ṡ = v_i × S, as for 1-DoF joints.
A joint of nv_j > 1 contributes nv_j "DoF columns" of S, all attached to its body.

Lie-group operations (Pinocchio's ``integrate``, ``difference``): the configuration
moves by the exponential map of the joint's group applied on the right,

    q ⊕ δ = q · exp(δ)   (SO(3) for spherical, SE(3) for free-flyer, SE(2) for planar,
                          addition for 1-DoF joints),
    q₁ ⊖ q₀ = log(q₀⁻¹ · q₁),

so derivatives with respect to q are taken in these local coordinates:
∂f/∂q_k = d/dε_k f(q ⊕ ε) at ε = 0 (Lie derivatives along the body-fixed columns of S).
"""
from __future__ import annotations

import numpy as np

from ._checks import InputError, as_vector
from ._compile import allocation_free, njit
from .groups import apply_V, exp3_quaternion, quaternion_rotation, random_quaternion, so3_coefficients
from .joint_types import REGISTRY, dispatch
from .model import IDX_Q, IDX_V, JTYPE, NV, PARENT, Model
from .spatial import matmul_add

QUATERNION_TOLERANCE = 1e-6


UNIT_OFFSET = tuple(t.UNIT[0] for t in REGISTRY)
UNIT_LENGTH = tuple(t.UNIT[1] for t in REGISTRY)
_motion, _subspace, _integrate, _difference = map(dispatch, ("motion", "subspace", "integrate", "difference"))


@allocation_free
def unit_block(topology, i):
    """(start, length) in q of joint i's unit-norm block — its quaternion, or its planar
    (cos θ, sin θ) — and (−1, 0) for a joint without one."""
    jt = topology[i, JTYPE]
    if UNIT_LENGTH[jt] == 0:
        return -1, 0
    return topology[i, IDX_Q] + UNIT_OFFSET[jt], UNIT_LENGTH[jt]


@allocation_free
def configuration_error(topology, q):
    """−1 if q is a valid configuration, −2 if it holds NaN or inf, else the number of the
    first joint whose quaternion (or planar (cos, sin)) has a norm off 1 by more than
    ``QUATERNION_TOLERANCE``."""
    for e in q:
        if not np.isfinite(e):
            return -2
    for i in range(topology.shape[0]):
        k, m = unit_block(topology, i)
        s = 0.0
        for r in range(m):
            s += q[k + r] * q[k + r]
        if m > 0 and abs(np.sqrt(s) - 1.0) > QUATERNION_TOLERANCE:
            return i
    return -1


@njit(cache=True, _nrt=True)  # its message is built at run time: needs NRT
def check_configuration(topology, q):
    """Raise ValueError naming q and the joint if q has NaN/inf or a quaternion (or a
    planar (cos, sin)) whose norm is not 1 (:func:`configuration_error`)."""
    i = configuration_error(topology, q)
    if i == -2:
        raise ValueError("q: expected finite values, got NaN or inf")
    if i >= 0:
        k, m = unit_block(topology, i)
        raise InputError("q: the unit quaternion (or planar cos, sin) of joint number", i, "has norm",
                         np.sqrt(np.sum(q[k:k + m] ** 2)), "(expected 1); use dynamics.normalize(model, q)")


@allocation_free
def quaternion_matrix(q, k, J):
    """J (3, 3) = rotation of the unit quaternion q[k:k+4] = (x, y, z, w)."""
    r = quaternion_rotation(q[k], q[k + 1], q[k + 2], q[k + 3])
    J[0, 0], J[0, 1], J[0, 2], J[1, 0], J[1, 1], J[1, 2], J[2, 0], J[2, 1], J[2, 2] = r


@allocation_free(inline="always")
def joint_transform(topology, joint_placement, axis, q, i, R, p):
    """World pose (R[i], p[i]) of joint frame i: ⁰T_i = ⁰T_λ(i) · X_T(i) · X_J(q_i).

    X_T(i) = ``joint_placement[i]``, X_J from the joint type's ``motion``. Rows of the stacked
    arrays are addressed by index (no views) and the 3 × 3 products are written out in
    scalars, so the recursion does no reference counting and no memory round trips.
    """
    parent = topology[i, PARENT]
    X = joint_placement
    j00, j01, j02, j10, j11, j12, j20, j21, j22, t0, t1, t2 = _motion(
        topology[i, JTYPE], (axis, i, q, topology[i, IDX_Q]))
    for r in range(3):
        if parent < 0:  # row r of ⁰T_λ · X_T
            a0, a1, a2, a3 = X[i, r, 0], X[i, r, 1], X[i, r, 2], X[i, r, 3]
        else:
            b0, b1, b2 = R[parent, r, 0], R[parent, r, 1], R[parent, r, 2]
            a0 = b0 * X[i, 0, 0] + b1 * X[i, 1, 0] + b2 * X[i, 2, 0]
            a1 = b0 * X[i, 0, 1] + b1 * X[i, 1, 1] + b2 * X[i, 2, 1]
            a2 = b0 * X[i, 0, 2] + b1 * X[i, 1, 2] + b2 * X[i, 2, 2]
            a3 = b0 * X[i, 0, 3] + b1 * X[i, 1, 3] + b2 * X[i, 2, 3] + p[parent, r]
        p[i, r] = a3 + a0 * t0 + a1 * t1 + a2 * t2
        R[i, r, 0] = a0 * j00 + a1 * j10 + a2 * j20
        R[i, r, 1] = a0 * j01 + a1 * j11 + a2 * j21
        R[i, r, 2] = a0 * j02 + a1 * j12 + a2 * j22


@allocation_free(inline="always")
def motion_subspace(topology, axis, i, R, p, S):
    """World motion subspace of joint i at world pose (R[i], p[i]): the columns
    S[IDX_V[i] : IDX_V[i] + NV[i]] (rows of S (nv, 6)).

    With the local column [ω_l; v_l]: S = [R ω_l; p × (R ω_l) + R v_l].
    """
    for c in range(topology[i, NV]):
        w0, w1, w2, u0, u1, u2 = _subspace(topology[i, JTYPE], (axis, i, c))
        k = topology[i, IDX_V] + c
        z0 = R[i, 0, 0] * w0 + R[i, 0, 1] * w1 + R[i, 0, 2] * w2
        z1 = R[i, 1, 0] * w0 + R[i, 1, 1] * w1 + R[i, 1, 2] * w2
        z2 = R[i, 2, 0] * w0 + R[i, 2, 1] * w1 + R[i, 2, 2] * w2
        S[k, 0], S[k, 1], S[k, 2] = z0, z1, z2
        S[k, 3] = p[i, 1] * z2 - p[i, 2] * z1 + R[i, 0, 0] * u0 + R[i, 0, 1] * u1 + R[i, 0, 2] * u2
        S[k, 4] = p[i, 2] * z0 - p[i, 0] * z2 + R[i, 1, 0] * u0 + R[i, 1, 1] * u1 + R[i, 1, 2] * u2
        S[k, 5] = p[i, 0] * z1 - p[i, 1] * z0 + R[i, 2, 0] * u0 + R[i, 2, 1] * u1 + R[i, 2, 2] * u2


# ---------------------------------------------------------------- Lie-group operations

@njit(cache=True)
def integrate_kernel(topology, q, dv):
    """q ⊕ dv joint by joint (see the module docstring); q must be normalised."""
    out = np.empty(q.shape[0])
    integrate_into(topology, q, dv, out)
    return out


@allocation_free
def integrate_into(topology, q, dv, out):
    """out (nq,) = q ⊕ dv (:func:`integrate_kernel`), without temporaries."""
    for i in range(topology.shape[0]):
        _integrate(topology[i, JTYPE], (q, topology[i, IDX_Q], dv, topology[i, IDX_V], out))


@njit(cache=True)
def difference_kernel(topology, nv, q0, q1):
    """q1 ⊖ q0 = log(q0⁻¹ q1) joint by joint (nv,); the inverse of :func:`integrate_kernel`."""
    out = np.empty(nv)
    difference_into(topology, q0, q1, out)
    return out


@allocation_free
def difference_into(topology, q0, q1, out):
    """out (nv,) = q1 ⊖ q0 (:func:`difference_kernel`), without temporaries."""
    for i in range(topology.shape[0]):
        _difference(topology[i, JTYPE], (q0, q1, topology[i, IDX_Q], topology[i, IDX_V], out))


@njit(cache=True)
def normalize_kernel(topology, q):
    """q with every quaternion and planar (cos, sin) scaled to unit norm."""
    out = q.copy()
    for i in range(topology.shape[0]):
        k, m = unit_block(topology, i)
        if m == 0:
            continue
        s = np.sqrt(np.sum(q[k: k + m] ** 2))
        if not s > 0.0:
            raise InputError("q: the quaternion (or planar cos, sin) of joint number", i, "is zero")
        out[k: k + m] = q[k: k + m] / s
    return out


# ---------------------------------------------------------------- Jacobians of the Lie-group operations

@allocation_free
def _hat_into(x0, x1, x2, out):
    """out (3, 3) = [x]×."""
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -x2, x1
    out[1, 0], out[1, 1], out[1, 2] = x2, 0.0, -x0
    out[2, 0], out[2, 1], out[2, 2] = -x1, x0, 0.0


@allocation_free
def _product_into(A, B, out):
    """out = A @ B (small matrices)."""
    out[:] = 0.0
    matmul_add(A, B, out)


@allocation_free
def _se3_left_jacobian_into(xi, inverse, J, T):
    """J (6, 6) = left Jacobian J_l(ξ) of the SE(3) exponential, or its inverse, for
    ξ = (ρ, φ) = (linear, angular) (Barfoot 2017, eq. 7.85–7.95: the rotation block is
    J_l(φ) of SO(3), the coupling block Q(ρ, φ)); T (8, 3, 3) is scratch."""
    P, Rh, PP, PR, RP, PRP, X, Y = T[0], T[1], T[2], T[3], T[4], T[5], T[6], T[7]
    _hat_into(xi[3], xi[4], xi[5], P)
    _hat_into(xi[0], xi[1], xi[2], Rh)
    ca, cb, cc, cd, ce = so3_coefficients(np.sqrt(xi[3] * xi[3] + xi[4] * xi[4] + xi[5] * xi[5]))
    _product_into(P, P, PP)
    _product_into(P, Rh, PR)
    _product_into(Rh, P, RP)
    _product_into(PR, P, PRP)
    _product_into(PP, Rh, X)  # X = PP Rh + Rh PP, Y = PR PP + PP RP
    matmul_add(Rh, PP, X)
    _product_into(PR, PP, Y)
    matmul_add(PP, RP, Y)
    J[:] = 0.0
    Q = J[:3, 3:]
    s1 = -0.5 if inverse else ca
    s2 = ce if inverse else cb
    for r in range(3):
        for c in range(3):
            Q[r, c] = (0.5 * Rh[r, c] + cb * (PR[r, c] + RP[r, c] + PRP[r, c]) + cc * (X[r, c] - 3.0 * PRP[r, c])
                       + cd * Y[r, c])
            X[r, c] = (1.0 if r == c else 0.0) + s1 * P[r, c] + s2 * PP[r, c]  # J_l(φ), or its inverse
            J[r, c] = J[3 + r, 3 + c] = X[r, c]
    if inverse:  # coupling block −J_l⁻¹ Q J_l⁻¹
        _product_into(X, Q, Y)
        _product_into(Y, X, Q)
        for r in range(3):
            for c in range(3):
                Q[r, c] = -Q[r, c]


@allocation_free
def _se3_adjoint_of_exp_into(xi, A, T):
    """A (6, 6) = Ad of exp(ξ) in (linear, angular) coordinates: [[R, [p]× R], [0, R]];
    T (≥ 2, 3, 3) is scratch."""
    e = exp3_quaternion(xi[3], xi[4], xi[5])
    R = quaternion_rotation(e[0], e[1], e[2], e[3])
    p = apply_V(xi[3], xi[4], xi[5], xi[0], xi[1], xi[2], False)
    _hat_into(p[0], p[1], p[2], T[0])
    A[:] = 0.0
    for r in range(3):
        for c in range(3):
            A[r, c] = A[3 + r, 3 + c] = T[1, r, c] = R[3 * r + c]
    matmul_add(T[0], T[1], A[:3, 3:])


GROUP_ROW = tuple(t.GROUP_ROWS + (-1,) * (6 - len(t.GROUP_ROWS)) for t in REGISTRY)
"""Per joint type, the rows of se(3) = (linear, angular) that its tangent coordinates occupy
(padded with −1): spherical so(3), planar se(2), free-flyer se(3); none for ℝ^nv."""


@njit(cache=True)
def _group_rows(jt):
    """The rows of se(3) a joint type's tangent space occupies (:data:`GROUP_ROW`)."""
    return np.array([r for r in GROUP_ROW[jt] if r >= 0])


GROUP_SCRATCH = 6 + 36 + 72
"""Size of the scratch of :func:`lie_jacobian_into`."""


@allocation_free
def _joint_block_into(jt, d, m, k, which, out, scratch):
    """out (k, k) = block of joint tangent displacement d[m:m+k] from the SE(3) formulas:
    which = 0: Ad(exp(−d)), 1: J_r(d) = J_l(−d), 2: J_r⁻¹(d) = J_l⁻¹(−d), 3: −J_l⁻¹(d).
    Spherical and planar joints are the subgroups SO(3) and SE(2) of SE(3).
    ``scratch`` (:data:`GROUP_SCRATCH`,)."""
    xi, B, T = scratch[:6], scratch[6:42].reshape((6, 6)), scratch[42:].reshape((8, 3, 3))
    xi[:] = 0.0
    for r in range(k):
        xi[GROUP_ROW[jt][r]] = -d[m + r] if which < 3 else d[m + r]
    if which == 0:
        _se3_adjoint_of_exp_into(xi, B, T)
    else:
        _se3_left_jacobian_into(xi, which >= 2, B, T)
    sign = -1.0 if which == 3 else 1.0
    for r in range(k):
        for c in range(k):
            out[r, c] = sign * B[GROUP_ROW[jt][r], GROUP_ROW[jt][c]]


@allocation_free
def lie_jacobian_into(topology, d, which, A, scratch):
    """A (nv, nv) = block-diagonal Jacobian of a Lie-group operation at tangent
    displacement d: block ``which`` of :func:`_joint_block_into` per joint (±1 on 1-DoF
    joints); ``scratch`` (:data:`GROUP_SCRATCH`,)."""
    A[:] = 0.0
    for i in range(topology.shape[0]):
        jt, m, k = topology[i, JTYPE], topology[i, IDX_V], topology[i, NV]
        if GROUP_ROW[jt][0] < 0:  # ⊕ is addition
            A[m, m] = -1.0 if which == 3 else 1.0
        else:
            _joint_block_into(jt, d, m, k, which, A[m: m + k, m: m + k], scratch)


@njit(cache=True)
def lie_jacobian_kernel(topology, d, which):
    """:func:`lie_jacobian_into` into a new (nv, nv) array."""
    A = np.empty((d.shape[0], d.shape[0]))
    lie_jacobian_into(topology, d, which, A, np.empty(GROUP_SCRATCH))
    return A


@njit(cache=True)
def lie_jacobians_kernel(topology, d, first, second):
    """The Jacobians ``first`` and ``second`` of :func:`lie_jacobian_kernel` at d."""
    return lie_jacobian_kernel(topology, d, first), lie_jacobian_kernel(topology, d, second)


@njit(cache=True)
def lie_jacobian_batch(topology, D, which):
    """(K, nv, nv): :func:`lie_jacobian_kernel` at every row of D (K, nv)."""
    out = np.empty((D.shape[0], D.shape[1], D.shape[1]))
    for k in range(D.shape[0]):
        out[k] = lie_jacobian_kernel(topology, D[k], which)
    return out


# ---------------------------------------------------------------- public functions

def neutral(model: Model) -> np.ndarray:
    """The neutral configuration (nq,): zero angles and displacements, identity rotations
    (Pinocchio's ``neutral``)."""
    return np.concatenate([REGISTRY[jt].NEUTRAL for jt in model.topology[:, JTYPE]] or [np.zeros(0)])


def integrate(model: Model, q, dv) -> np.ndarray:
    """q ⊕ dv (nq,): the configuration reached from q by the tangent displacement dv (nv,),
    joint by joint through the exponential map of the joint's group."""
    q, dv = as_vector(q, model.nq, "q"), as_vector(dv, model.nv, "dv")
    check_configuration(model.topology, q)
    if not np.all(np.isfinite(dv)):
        raise ValueError("dv: expected finite values, got NaN or inf")
    return integrate_kernel(model.topology, q, dv)


def difference(model: Model, q0, q1) -> np.ndarray:
    """q1 ⊖ q0 (nv,): the tangent displacement dv with integrate(q0, dv) = q1."""
    q0, q1 = as_vector(q0, model.nq, "q0"), as_vector(q1, model.nq, "q1")
    for name, q in (("q0", q0), ("q1", q1)):
        try:
            check_configuration(model.topology, q)
        except ValueError as e:
            raise ValueError(str(e).replace("q:", f"{name}:", 1)) from None
    return difference_kernel(model.topology, model.nv, q0, q1)


def integrate_jacobians(model: Model, q, dv) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians (nv, nv) of q ⊕ dv with respect to q and to dv, in tangent coordinates
    (Pinocchio's ``dIntegrate`` ARG0 and ARG1): per joint Ad(exp(−dv_j)) and the right
    Jacobian J_r(dv_j) of the exponential (identity for 1-DoF joints)."""
    q, dv = as_vector(q, model.nq, "q"), as_vector(dv, model.nv, "dv")
    check_configuration(model.topology, q)
    if not np.all(np.isfinite(dv)):
        raise ValueError("dv: expected finite values, got NaN or inf")
    return lie_jacobians_kernel(model.topology, dv, 0, 1)


def difference_jacobians(model: Model, q0, q1) -> tuple[np.ndarray, np.ndarray]:
    """Jacobians (nv, nv) of q1 ⊖ q0 with respect to q0 and to q1, in tangent coordinates
    (Pinocchio's ``dDifference`` ARG0 and ARG1): per joint −J_l⁻¹(d_j) and J_r⁻¹(d_j),
    d = q1 ⊖ q0."""
    d = difference(model, q0, q1)
    return lie_jacobians_kernel(model.topology, d, 3, 2)


def normalize(model: Model, q) -> np.ndarray:
    """q with every quaternion (and planar (cos, sin)) scaled to unit norm."""
    q = as_vector(q, model.nq, "q")
    if not np.all(np.isfinite(q)):
        raise ValueError("q: expected finite values, got NaN or inf")
    return normalize_kernel(model.topology, q)


def random_configuration(model: Model, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """A random configuration (nq,): 1-DoF joints and translations uniform within their
    position limits (infinite limits replaced by ±π for angles and ±1 m otherwise),
    rotations uniform on SO(3) (SO(2) for planar joints)."""
    rng = np.random.default_rng(rng)
    lo, hi = model.lower_limit.copy(), model.upper_limit.copy()
    bound = np.concatenate([np.full(REGISTRY[jt].NQ, REGISTRY[jt].BOUND) for jt in model.topology[:, JTYPE]]
                           or [np.zeros(0)])
    lo, hi = np.where(np.isfinite(lo), lo, -bound), np.where(np.isfinite(hi), hi, bound)
    q = rng.uniform(lo, hi)
    for i in range(model.topology.shape[0]):
        k, m = unit_block(model.topology, i)
        if m == 2:  # (cos θ, sin θ)
            th = rng.uniform(-np.pi, np.pi)
            q[k: k + 2] = np.cos(th), np.sin(th)
        elif m == 4:
            q[k: k + 4] = random_quaternion(rng)
    return q
