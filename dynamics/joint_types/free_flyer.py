"""Free-flyer (floating) joint: q = (x, y, z, qx, qy, qz, qw), the translation in the
parent frame and a unit quaternion; v = (linear, angular) in the joint frame, as
Pinocchio's JointModelFreeFlyer. ⊕ and ⊖ on SE(3) (Murray, Li & Sastry 1994, ch. 2):
q ⊕ (v, ω) = (p + R V(ω) v, q ⊗ exp(ω))."""
from __future__ import annotations

from .._compile import allocation_free
from ..groups import apply_V, quaternion_rotation, so3_difference, so3_integrate_into, unit_vector

NAMES = ("free-flyer", "floating")
NQ, NV = 7, 6
UNIT = (3, 4)
NEUTRAL = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
GROUP_ROWS = (0, 1, 2, 3, 4, 5)  # se(3)
BOUND = 1.0


@allocation_free(inline="always")
def motion(args):
    """X_J(q) = (R(quaternion), translation); args = (axis, i, q, k)."""
    axis, i, q, k = args
    return quaternion_rotation(q[k + 3], q[k + 4], q[k + 5], q[k + 6]) + (q[k], q[k + 1], q[k + 2])


@allocation_free(inline="always")
def subspace(args):
    """Column c of S = I₆ in (angular, linear) order: linear columns first (c < 3), as v;
    args = (axis, i, c)."""
    axis, i, c = args
    if c >= 3:
        return unit_vector(c % 3) + (0.0, 0.0, 0.0)
    return (0.0, 0.0, 0.0) + unit_vector(c)


@allocation_free(inline="always")
def integrate(args):
    """out[k:k+7] = q ⊕ dv[m:m+6]: p ← p + R V(ω) v, then the quaternion on SO(3);
    args = (q, k, dv, m, out)."""
    q, k, dv, m, out = args
    R = quaternion_rotation(q[k + 3], q[k + 4], q[k + 5], q[k + 6])
    x = apply_V(dv[m + 3], dv[m + 4], dv[m + 5], dv[m], dv[m + 1], dv[m + 2], False)
    for r in range(3):
        out[k + r] = q[k + r] + R[3 * r] * x[0] + R[3 * r + 1] * x[1] + R[3 * r + 2] * x[2]
    so3_integrate_into(q, k + 3, dv[m + 3], dv[m + 4], dv[m + 5], out)


@allocation_free(inline="always")
def difference(args):
    """out[m:m+6] = log(q0⁻¹ q1): ω on SO(3), then v = V(ω)⁻¹ R0ᵀ (p1 − p0);
    args = (q0, q1, k, m, out)."""
    q0, q1, k, m, out = args
    w = so3_difference(q0, q1, k + 3)
    out[m + 3], out[m + 4], out[m + 5] = w
    R = quaternion_rotation(q0[k + 3], q0[k + 4], q0[k + 5], q0[k + 6])
    dp = (q1[k] - q0[k], q1[k + 1] - q0[k + 1], q1[k + 2] - q0[k + 2])
    x0 = R[0] * dp[0] + R[3] * dp[1] + R[6] * dp[2]
    x1 = R[1] * dp[0] + R[4] * dp[1] + R[7] * dp[2]
    x2 = R[2] * dp[0] + R[5] * dp[1] + R[8] * dp[2]
    out[m], out[m + 1], out[m + 2] = apply_V(w[0], w[1], w[2], x0, x1, x2, True)
