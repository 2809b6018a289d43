"""Spherical (ball) joint: q a unit quaternion (x, y, z, w), v the angular velocity in the
joint frame; ⊕ and ⊖ on SO(3), q ⊕ ω = q ⊗ exp(ω)."""
from __future__ import annotations

from .._compile import allocation_free
from ..groups import quaternion_rotation, so3_difference, so3_integrate_into, unit_vector

NAMES = ("spherical",)
NQ, NV = 4, 3
UNIT = (0, 4)
NEUTRAL = (0.0, 0.0, 0.0, 1.0)
GROUP_ROWS = (3, 4, 5)  # so(3): the angular rows of se(3)
BOUND = 1.0


@allocation_free(inline="always")
def motion(args):
    """X_J(q) = (R(q), 0); args = (axis, i, q, k)."""
    axis, i, q, k = args
    return quaternion_rotation(q[k], q[k + 1], q[k + 2], q[k + 3]) + (0.0, 0.0, 0.0)


@allocation_free(inline="always")
def subspace(args):
    """Column c of S = [I₃; 0]; args = (axis, i, c)."""
    axis, i, c = args
    return unit_vector(c) + (0.0, 0.0, 0.0)


@allocation_free(inline="always")
def integrate(args):
    """out[k:k+4] = q ⊗ exp(ω), ω = dv[m:m+3]; args = (q, k, dv, m, out)."""
    q, k, dv, m, out = args
    so3_integrate_into(q, k, dv[m], dv[m + 1], dv[m + 2], out)


@allocation_free(inline="always")
def difference(args):
    """out[m:m+3] = log(q0⁻¹ ⊗ q1); args = (q0, q1, k, m, out)."""
    q0, q1, k, m, out = args
    out[m], out[m + 1], out[m + 2] = so3_difference(q0, q1, k)
