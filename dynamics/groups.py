"""The Lie groups of the joints: exponential and logarithm of SO(3), SE(3) and SE(2) in
scalars, and ⊕, ⊖ on ℝ (addition), for the joint types of :mod:`dynamics.joint_types`
(their ⊕ = q·exp(δ) and ⊖ = log(q₀⁻¹q₁)). Quaternions are (x, y, z, w), SE(3) tangent
vectors (linear, angular), as in Pinocchio; the formulas are those of Murray, Li & Sastry
1994, ch. 2, and Barfoot 2017, ch. 7.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free


@allocation_free
def quaternion_rotation(x, y, z, w):
    """The rotation matrix of the unit quaternion (x, y, z, w), as its 9 entries row by row."""
    return (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
            2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
            2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))


@allocation_free
def exp3_quaternion(w0, w1, w2):
    """Unit quaternion (x, y, z, w) of the rotation exp([ω]×)."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if th < 1e-8:
        s = 0.5 - th * th / 48.0
    else:
        s = np.sin(0.5 * th) / th
    return s * w0, s * w1, s * w2, np.cos(0.5 * th)


@allocation_free
def quaternion_product(a, b):
    """a ⊗ b for quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


@allocation_free
def log3_quaternion(x, y, z, w):
    """ω with exp([ω]×) = rotation of the unit quaternion (x, y, z, w), |ω| ≤ π."""
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    s = np.sqrt(x * x + y * y + z * z)
    th = 2.0 * np.arctan2(s, w)
    f = 2.0 + s * s / 3.0 if s < 1e-8 else th / s  # th/s → 2 (1 + s²/6) as s → 0
    return f * x, f * y, f * z


@allocation_free
def left_jacobian_coefficients(th):
    """(a, b) of V(ω) = 1 + a [ω]× + b [ω]×², the left Jacobian of SO(3) (|ω| = th)."""
    if th < 1e-5:
        return 0.5 - th * th / 24.0, 1.0 / 6.0 - th * th / 120.0
    return (1.0 - np.cos(th)) / (th * th), (th - np.sin(th)) / (th * th * th)


@allocation_free
def apply_V(w0, w1, w2, u0, u1, u2, inverse):
    """V(ω) u, or V(ω)⁻¹ u, as 3 scalars, for the SE(3) exponential (Murray, Li & Sastry
    1994, ch. 2)."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0  # ω × u
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0  # ω × (ω × u)
    if not inverse:
        a, b = left_jacobian_coefficients(th)
    else:
        a = -0.5
        b = 1.0 / 12.0 + th * th / 720.0 if th < 1e-5 else (1.0 - th * np.sin(th) / (2.0 * (1.0 - np.cos(th)))) / (th * th)
    return u0 + a * x0 + b * y0, u1 + a * x1 + b * y1, u2 + a * x2 + b * y2


@allocation_free
def se2_coefficients(w):
    """(a, b) of the SE(2) exponential: translation [[a, −b], [b, a]] (vx, vy) for rate ω = w."""
    if abs(w) < 1e-8:
        return 1.0 - w * w / 6.0, 0.5 * w
    return np.sin(w) / w, (1.0 - np.cos(w)) / w


@allocation_free(inline="always")
def so3_integrate_into(q, k, w0, w1, w2, out):
    """out[k:k+4] = q[k:k+4] ⊗ exp(ω): the unit quaternion moved by the body rate ω."""
    e = quaternion_product((q[k], q[k + 1], q[k + 2], q[k + 3]), exp3_quaternion(w0, w1, w2))
    for r in range(4):
        out[k + r] = e[r]


@allocation_free(inline="always")
def so3_difference(q0, q1, k):
    """ω = log(q0[k:k+4]⁻¹ ⊗ q1[k:k+4]), |ω| ≤ π, as 3 scalars."""
    a = (-q0[k], -q0[k + 1], -q0[k + 2], q0[k + 3])  # conjugate
    d = quaternion_product(a, (q1[k], q1[k + 1], q1[k + 2], q1[k + 3]))
    return log3_quaternion(d[0], d[1], d[2], d[3])


def random_quaternion(rng: np.random.Generator) -> np.ndarray:
    """A unit quaternion (x, y, z, w) uniform on SO(3) (a normalised Gaussian 4-vector)."""
    u = rng.normal(size=4)
    return u / np.linalg.norm(u)


@allocation_free(inline="always")
def unit_vector(c):
    """e_c of ℝ³ (c < 3) as 3 scalars."""
    return 1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0


@allocation_free(inline="always")
def line_integrate(args):
    """⊕ on ℝ: out[k] = q[k] + dv[m]; args = (q, k, dv, m, out)."""
    q, k, dv, m, out = args
    out[k] = q[k] + dv[m]


@allocation_free(inline="always")
def line_difference(args):
    """⊖ on ℝ: out[m] = q1[k] − q0[k]; args = (q0, q1, k, m, out)."""
    q0, q1, k, m, out = args
    out[m] = q1[k] - q0[k]
