"""Planar joint: q = (x, y, cos θ, sin θ), motion in the x–y plane of the joint frame,
v = (v_x, v_y, ω_z) in the joint frame; ⊕ and ⊖ on SE(2)."""
from __future__ import annotations

import numpy as np

from .._compile import allocation_free
from ..groups import se2_coefficients, unit_vector

NAMES = ("planar",)
NQ, NV = 4, 3
UNIT = (2, 2)
NEUTRAL = (0.0, 0.0, 1.0, 0.0)
GROUP_ROWS = (0, 1, 5)  # se(2): linear x, y and angular z of se(3)
BOUND = 1.0


@allocation_free(inline="always")
def motion(args):
    """X_J(q) = (rotation by θ about z, (x, y, 0)); args = (axis, i, q, k)."""
    axis, i, q, k = args
    co, s = q[k + 2], q[k + 3]
    return co, -s, 0.0, s, co, 0.0, 0.0, 0.0, 1.0, q[k], q[k + 1], 0.0


@allocation_free(inline="always")
def subspace(args):
    """Column c of S: e_x, e_y linear, then the rotation about z; args = (axis, i, c)."""
    axis, i, c = args
    if c < 2:
        return (0.0, 0.0, 0.0) + unit_vector(c)
    return 0.0, 0.0, 1.0, 0.0, 0.0, 0.0


@allocation_free(inline="always")
def integrate(args):
    """out[k:k+4] = q ⊕ (v_x, v_y, ω) by the SE(2) exponential; args = (q, k, dv, m, out)."""
    q, k, dv, m, out = args
    vx, vy, w = dv[m], dv[m + 1], dv[m + 2]
    a, b = se2_coefficients(w)
    tx, ty = a * vx - b * vy, b * vx + a * vy
    co, s = q[k + 2], q[k + 3]
    out[k] = q[k] + co * tx - s * ty
    out[k + 1] = q[k + 1] + s * tx + co * ty
    cw, sw = np.cos(w), np.sin(w)
    out[k + 2], out[k + 3] = co * cw - s * sw, s * cw + co * sw


@allocation_free(inline="always")
def difference(args):
    """out[m:m+3] = log(q0⁻¹ q1) on SE(2); args = (q0, q1, k, m, out)."""
    q0, q1, k, m, out = args
    c0, s0, c1, s1 = q0[k + 2], q0[k + 3], q1[k + 2], q1[k + 3]
    w = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
    dx, dy = q1[k] - q0[k], q1[k + 1] - q0[k + 1]
    tx, ty = c0 * dx + s0 * dy, -s0 * dx + c0 * dy
    a, b = se2_coefficients(w)
    det = a * a + b * b  # inverse of [[a, −b], [b, a]]
    out[m], out[m + 1], out[m + 2] = (a * tx + b * ty) / det, (-b * tx + a * ty) / det, w
