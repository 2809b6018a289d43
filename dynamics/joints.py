"""Joint types: configuration, motion subspace and Lie-group operations (jcalc).

Every joint type is one branch of the compiled switches below (Featherstone's ``jcalc``,
Pinocchio's JointModel), with Pinocchio's conventions so that q and v move freely
between the two libraries:

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
from .model import FREE_FLYER, IDX_Q, IDX_V, JTYPE, NV, PARENT, PLANAR, PRISMATIC, REVOLUTE, SPHERICAL, Model
from .spatial import matmul_add

QUATERNION_TOLERANCE = 1e-6


@allocation_free
def quaternion_offset(jtype):
    """Index of the quaternion (or planar (cos, sin)) within q_j, −1 if the type has none."""
    if jtype == SPHERICAL:
        return 0
    if jtype == FREE_FLYER:
        return 3
    if jtype == PLANAR:
        return 2
    return -1


@allocation_free
def unit_block(topology, i):
    """(start, length) in q of joint i's unit-norm block — its quaternion, or its planar
    (cos θ, sin θ) — and (−1, 0) for a joint without one."""
    o = quaternion_offset(topology[i, JTYPE])
    if o < 0:
        return -1, 0
    return topology[i, IDX_Q] + o, 2 if topology[i, JTYPE] == PLANAR else 4


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
def quaternion_rotation(x, y, z, w):
    """The rotation matrix of the unit quaternion (x, y, z, w), as its 9 entries row by row."""
    return (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))


@allocation_free
def quaternion_matrix(q, k, J):
    """J (3, 3) = rotation of the unit quaternion q[k:k+4] = (x, y, z, w)."""
    r = quaternion_rotation(q[k], q[k + 1], q[k + 2], q[k + 3])
    J[0, 0], J[0, 1], J[0, 2], J[1, 0], J[1, 1], J[1, 2], J[2, 0], J[2, 1], J[2, 2] = r


@allocation_free
def joint_motion(jtype, axis, i, q, k):
    """Joint transform X_J(q_j) of joint i, q_j = q[k:k+nq_j], as the scalars
    (J00, J01, J02, J10, …, J22, t0, t1, t2) of its rotation J and translation t."""
    if jtype == REVOLUTE:  # Rodrigues' formula about the unit axis
        x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
        s, co = np.sin(q[k]), np.cos(q[k])
        c1 = 1.0 - co
        return (co + x * x * c1, x * y * c1 - z * s, x * z * c1 + y * s,
                y * x * c1 + z * s, co + y * y * c1, y * z * c1 - x * s,
                z * x * c1 - y * s, z * y * c1 + x * s, co + z * z * c1, 0.0, 0.0, 0.0)
    if jtype == PRISMATIC:
        return 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, q[k] * axis[i, 0], q[k] * axis[i, 1], q[k] * axis[i, 2]
    if jtype == PLANAR:
        co, s = q[k + 2], q[k + 3]
        return co, -s, 0.0, s, co, 0.0, 0.0, 0.0, 1.0, q[k], q[k + 1], 0.0
    if jtype == SPHERICAL:
        return quaternion_rotation(q[k], q[k + 1], q[k + 2], q[k + 3]) + (0.0, 0.0, 0.0)
    return quaternion_rotation(q[k + 3], q[k + 4], q[k + 5], q[k + 6]) + (q[k], q[k + 1], q[k + 2])  # free-flyer


@allocation_free(inline="always")
def joint_transform(topology, joint_placement, axis, q, i, R, p):
    """World pose (R[i], p[i]) of joint frame i: ⁰T_i = ⁰T_λ(i) · X_T(i) · X_J(q_i).

    X_T(i) = ``joint_placement[i]``, X_J from :func:`joint_motion`. Rows of the stacked
    arrays are addressed by index (no views) and the 3 × 3 products are written out in
    scalars, so the recursion does no reference counting and no memory round trips.
    """
    parent = topology[i, PARENT]
    X = joint_placement
    j00, j01, j02, j10, j11, j12, j20, j21, j22, t0, t1, t2 = joint_motion(
        topology[i, JTYPE], axis, i, q, topology[i, IDX_Q])
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
def _unit(a, b):
    return 1.0 if a == b else 0.0


@allocation_free
def local_subspace(jtype, axis, i, c):
    """Column c of joint i's motion subspace in its own frame, as (ω_x, ω_y, ω_z, v_x, v_y, v_z)."""
    if jtype == REVOLUTE:
        return axis[i, 0], axis[i, 1], axis[i, 2], 0.0, 0.0, 0.0
    if jtype == PRISMATIC:
        return 0.0, 0.0, 0.0, axis[i, 0], axis[i, 1], axis[i, 2]
    if jtype == SPHERICAL or (jtype == FREE_FLYER and c >= 3):
        e = c % 3
        return _unit(e, 0), _unit(e, 1), _unit(e, 2), 0.0, 0.0, 0.0
    if jtype == FREE_FLYER or c < 2:  # linear columns of free-flyer and planar
        return 0.0, 0.0, 0.0, _unit(c, 0), _unit(c, 1), _unit(c, 2)
    return 0.0, 0.0, 1.0, 0.0, 0.0, 0.0  # planar rotation about z


@allocation_free(inline="always")
def motion_subspace(topology, axis, i, R, p, S):
    """World motion subspace of joint i at world pose (R[i], p[i]): the columns
    S[IDX_V[i] : IDX_V[i] + NV[i]] (rows of S (nv, 6)).

    With the local column [ω_l; v_l]: S = [R ω_l; p × (R ω_l) + R v_l].
    """
    for c in range(topology[i, NV]):
        w0, w1, w2, u0, u1, u2 = local_subspace(topology[i, JTYPE], axis, i, c)
        k = topology[i, IDX_V] + c
        z0 = R[i, 0, 0] * w0 + R[i, 0, 1] * w1 + R[i, 0, 2] * w2
        z1 = R[i, 1, 0] * w0 + R[i, 1, 1] * w1 + R[i, 1, 2] * w2
        z2 = R[i, 2, 0] * w0 + R[i, 2, 1] * w1 + R[i, 2, 2] * w2
        S[k, 0], S[k, 1], S[k, 2] = z0, z1, z2
        S[k, 3] = p[i, 1] * z2 - p[i, 2] * z1 + R[i, 0, 0] * u0 + R[i, 0, 1] * u1 + R[i, 0, 2] * u2
        S[k, 4] = p[i, 2] * z0 - p[i, 0] * z2 + R[i, 1, 0] * u0 + R[i, 1, 1] * u1 + R[i, 1, 2] * u2
        S[k, 5] = p[i, 0] * z1 - p[i, 1] * z0 + R[i, 2, 0] * u0 + R[i, 2, 1] * u1 + R[i, 2, 2] * u2


# ---------------------------------------------------------------- Lie-group operations

@allocation_free
def _exp3_quaternion(w0, w1, w2):
    """Unit quaternion (x, y, z, w) of the rotation exp([ω]×)."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if th < 1e-8:
        s = 0.5 - th * th / 48.0
    else:
        s = np.sin(0.5 * th) / th
    return s * w0, s * w1, s * w2, np.cos(0.5 * th)


@allocation_free
def _quaternion_product(a, b):
    """a ⊗ b for quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


@allocation_free
def _log3_quaternion(x, y, z, w):
    """ω with exp([ω]×) = rotation of the unit quaternion (x, y, z, w), |ω| ≤ π."""
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    th = 2.0 * np.arctan2(s, w)
    f = 2.0 + s * s / 3.0 if s < 1e-8 else th / s  # th/s → 2 (1 + s²/6) as s → 0
    return f * x, f * y, f * z


@allocation_free
def _left_jacobian_coefficients(th):
    """(a, b) of V(ω) = 1 + a [ω]× + b [ω]×², the left Jacobian of SO(3) (|ω| = th)."""
    if th < 1e-5:
        return 0.5 - th * th / 24.0, 1.0 / 6.0 - th * th / 120.0
    return (1.0 - np.cos(th)) / (th * th), (th - np.sin(th)) / (th * th * th)


@allocation_free
def _apply_V(w0, w1, w2, u0, u1, u2, inverse):
    """V(ω) u, or V(ω)⁻¹ u, as 3 scalars, for the SE(3) exponential (Murray, Li & Sastry
    1994, ch. 2)."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0  # ω × u
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0  # ω × (ω × u)
    if not inverse:
        a, b = _left_jacobian_coefficients(th)
    else:
        a = -0.5
        b = 1.0 / 12.0 + th * th / 720.0 if th < 1e-5 else (1.0 - th * np.sin(th) / (2.0 * (1.0 - np.cos(th)))) / (th * th)
    return u0 + a * x0 + b * y0, u1 + a * x1 + b * y1, u2 + a * x2 + b * y2


@allocation_free
def _se2_coefficients(w):
    """(a, b) of the SE(2) exponential: translation [[a, −b], [b, a]] (vx, vy) for rate ω = w."""
    if abs(w) < 1e-8:
        return 1.0 - w * w / 6.0, 0.5 * w
    return np.sin(w) / w, (1.0 - np.cos(w)) / w


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
        jt, k, m = topology[i, JTYPE], topology[i, IDX_Q], topology[i, IDX_V]
        if jt == REVOLUTE or jt == PRISMATIC:
            out[k] = q[k] + dv[m]
        elif jt == SPHERICAL or jt == FREE_FLYER:
            o = 3 if jt == FREE_FLYER else 0
            w0, w1, w2 = dv[m + o], dv[m + o + 1], dv[m + o + 2]
            a = (q[k + o], q[k + o + 1], q[k + o + 2], q[k + o + 3])
            if jt == FREE_FLYER:  # p ← p + R V(ω) v
                R = quaternion_rotation(a[0], a[1], a[2], a[3])
                x = _apply_V(w0, w1, w2, dv[m], dv[m + 1], dv[m + 2], False)
                for r in range(3):
                    out[k + r] = q[k + r] + R[3 * r] * x[0] + R[3 * r + 1] * x[1] + R[3 * r + 2] * x[2]
            e = _quaternion_product(a, _exp3_quaternion(w0, w1, w2))
            for r in range(4):
                out[k + o + r] = e[r]
        else:  # PLANAR: SE(2) exponential
            vx, vy, w = dv[m], dv[m + 1], dv[m + 2]
            a, b = _se2_coefficients(w)
            tx, ty = a * vx - b * vy, b * vx + a * vy
            co, s = q[k + 2], q[k + 3]
            out[k] = q[k] + co * tx - s * ty
            out[k + 1] = q[k + 1] + s * tx + co * ty
            cw, sw = np.cos(w), np.sin(w)
            out[k + 2], out[k + 3] = co * cw - s * sw, s * cw + co * sw


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
        jt, k, m = topology[i, JTYPE], topology[i, IDX_Q], topology[i, IDX_V]
        if jt == REVOLUTE or jt == PRISMATIC:
            out[m] = q1[k] - q0[k]
        elif jt == SPHERICAL or jt == FREE_FLYER:
            o = 3 if jt == FREE_FLYER else 0
            a = (-q0[k + o], -q0[k + o + 1], -q0[k + o + 2], q0[k + o + 3])  # conjugate
            d = _quaternion_product(a, (q1[k + o], q1[k + o + 1], q1[k + o + 2], q1[k + o + 3]))
            w = _log3_quaternion(d[0], d[1], d[2], d[3])
            out[m + o], out[m + o + 1], out[m + o + 2] = w
            if jt == FREE_FLYER:  # v = V(ω)⁻¹ R0ᵀ (p1 − p0)
                R = quaternion_rotation(q0[k + 3], q0[k + 4], q0[k + 5], q0[k + 6])
                dp = (q1[k] - q0[k], q1[k + 1] - q0[k + 1], q1[k + 2] - q0[k + 2])
                x0 = R[0] * dp[0] + R[3] * dp[1] + R[6] * dp[2]
                x1 = R[1] * dp[0] + R[4] * dp[1] + R[7] * dp[2]
                x2 = R[2] * dp[0] + R[5] * dp[1] + R[8] * dp[2]
                out[m], out[m + 1], out[m + 2] = _apply_V(w[0], w[1], w[2], x0, x1, x2, True)
        else:  # PLANAR
            c0, s0, c1, s1 = q0[k + 2], q0[k + 3], q1[k + 2], q1[k + 3]
            w = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
            dx, dy = q1[k] - q0[k], q1[k + 1] - q0[k + 1]
            tx, ty = c0 * dx + s0 * dy, -s0 * dx + c0 * dy
            a, b = _se2_coefficients(w)
            det = a * a + b * b  # inverse of [[a, −b], [b, a]]
            out[m], out[m + 1], out[m + 2] = (a * tx + b * ty) / det, (-b * tx + a * ty) / det, w


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
    th2 = xi[3] * xi[3] + xi[4] * xi[4] + xi[5] * xi[5]
    th = np.sqrt(th2)
    if th < 1e-4:  # Taylor expansions of the coefficients
        ca, cb = 0.5 - th2 / 24.0, 1.0 / 6.0 - th2 / 120.0
        cc, cd = 1.0 / 24.0 - th2 / 720.0, 1.0 / 120.0 - th2 / 2520.0
        ce = 1.0 / 12.0 + th2 / 720.0
    else:
        sn, co = np.sin(th), np.cos(th)
        ca, cb = (1.0 - co) / th2, (th - sn) / (th2 * th)
        cc, cd = (th2 + 2.0 * co - 2.0) / (2.0 * th2 * th2), (2.0 * th - 3.0 * sn + th * co) / (2.0 * th2 * th2 * th)
        ce = (1.0 - th * sn / (2.0 * (1.0 - co))) / th2
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
    e = _exp3_quaternion(xi[3], xi[4], xi[5])
    R = quaternion_rotation(e[0], e[1], e[2], e[3])
    p = _apply_V(xi[3], xi[4], xi[5], xi[0], xi[1], xi[2], False)
    _hat_into(p[0], p[1], p[2], T[0])
    A[:] = 0.0
    for r in range(3):
        for c in range(3):
            A[r, c] = A[3 + r, 3 + c] = T[1, r, c] = R[3 * r + c]
    matmul_add(T[0], T[1], A[:3, 3:])


@njit(cache=True)
def _group_row(jt, r):
    """The row of SE(3)'s (linear, angular) coordinates that coordinate r of a joint's
    tangent space occupies (spherical: so(3), planar: se(2))."""
    if jt == SPHERICAL:
        return 3 + r
    if jt == PLANAR:
        return 5 if r == 2 else r
    return r


@njit(cache=True)
def _group_rows(jt):
    """The rows of SE(3)'s (linear, angular) coordinates a joint's tangent space occupies."""
    k = 3 if jt == SPHERICAL or jt == PLANAR else 6
    return np.array([_group_row(jt, r) for r in range(k)])


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
        xi[_group_row(jt, r)] = -d[m + r] if which < 3 else d[m + r]
    if which == 0:
        _se3_adjoint_of_exp_into(xi, B, T)
    else:
        _se3_left_jacobian_into(xi, which >= 2, B, T)
    sign = -1.0 if which == 3 else 1.0
    for r in range(k):
        for c in range(k):
            out[r, c] = sign * B[_group_row(jt, r), _group_row(jt, c)]


@allocation_free
def lie_jacobian_into(topology, d, which, A, scratch):
    """A (nv, nv) = block-diagonal Jacobian of a Lie-group operation at tangent
    displacement d: block ``which`` of :func:`_joint_block_into` per joint (±1 on 1-DoF
    joints); ``scratch`` (:data:`GROUP_SCRATCH`,)."""
    A[:] = 0.0
    for i in range(topology.shape[0]):
        jt, m, k = topology[i, JTYPE], topology[i, IDX_V], topology[i, NV]
        if jt == REVOLUTE or jt == PRISMATIC:
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
    q = np.zeros(model.nq)
    for i, jt in enumerate(model.topology[:, JTYPE]):
        o = quaternion_offset(jt)
        if o >= 0:
            q[model.topology[i, IDX_Q] + o + (0 if jt == PLANAR else 3)] = 1.0
    return q


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
    angle = np.zeros(model.nq, dtype=bool)
    angle[model.topology[model.topology[:, JTYPE] == REVOLUTE, IDX_Q]] = True
    bound = np.where(angle, np.pi, 1.0)
    lo, hi = np.where(np.isfinite(lo), lo, -bound), np.where(np.isfinite(hi), hi, bound)
    q = rng.uniform(lo, hi)
    for i, jt in enumerate(model.topology[:, JTYPE]):
        k = model.topology[i, IDX_Q] + quaternion_offset(jt)
        if jt == PLANAR:
            th = rng.uniform(-np.pi, np.pi)
            q[k: k + 2] = np.cos(th), np.sin(th)
        elif jt in (SPHERICAL, FREE_FLYER):
            u = rng.normal(size=4)
            q[k: k + 4] = u / np.linalg.norm(u)
    return q
