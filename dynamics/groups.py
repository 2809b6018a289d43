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


SERIES_BELOW = 0.2
"""The rotation angle (rad) below which :func:`so3_coefficients` sums Taylor series: their
closed forms subtract nearly equal numbers there (θ − sin θ ≈ θ³/6, 1 − (θ/2)cot(θ/2) ≈
θ²/12, …), losing a relative 1e-16/θ² to 1e-16/θ⁴ — all the digits of e near θ = 2e-5, where
a foot's orientation meets its target, which put the SE(3) logarithm's translation off by up to
6e-8 of itself. Five terms of each series are exact to rounding below 0.2; the closed forms
lose at most 4e-12 above it."""

_SERIES = np.array([
    [1 / 2, -1 / 24, 1 / 720, -1 / 40320, 1 / 3628800],  # a: (−1)^k/(2k+2)!
    [1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800],  # b: (−1)^k/(2k+3)!
    [1 / 24, -1 / 720, 1 / 40320, -1 / 3628800, 1 / 479001600],  # c: (−1)^k/(2k+4)!
    [1 / 120, -2 / 5040, 3 / 362880, -4 / 39916800, 5 / 6227020800],  # d: (−1)^k (k+1)/(2k+5)!
    [1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160]])  # e: of 1 − x cot x, x = θ/2
"""The Taylor coefficients in θ² of :func:`so3_coefficients`' a, b, c, d, e."""


@allocation_free
def so3_coefficients(th):
    """(a, b, c, d, e) of the SO(3) and SE(3) Jacobians at the rotation angle th = θ ≥ 0
    (Barfoot 2017, eq. 7.85–7.95; Murray, Li & Sastry 1994, ch. 2):

        a = (1 − cos θ)/θ²,  b = (θ − sin θ)/θ³,  c = (θ² + 2 cos θ − 2)/(2θ⁴),
        d = (2θ − 3 sin θ + θ cos θ)/(2θ⁵),  e = (1 − (θ/2) cot(θ/2))/θ²,

    so that J_l(ω) = 1 + a[ω]× + b[ω]×², J_l(ω)⁻¹ = 1 − ½[ω]× + e[ω]×², and c, d weigh
    the SE(3) coupling block Q. Taylor series below :data:`SERIES_BELOW`; above it the closed
    forms, with 1 − cos θ = 2 sin²(θ/2)."""
    t2 = th * th
    if th < SERIES_BELOW:  # the five series by Horner's rule
        a = b = c = d = e = 0.0
        for k in range(_SERIES.shape[1] - 1, -1, -1):
            a, b, c = a * t2 + _SERIES[0, k], b * t2 + _SERIES[1, k], c * t2 + _SERIES[2, k]
            d, e = d * t2 + _SERIES[3, k], e * t2 + _SERIES[4, k]
        return a, b, c, d, e
    sn, co, h = np.sin(th), np.cos(th), np.sin(0.5 * th)
    vers = 2.0 * h * h  # 1 − cos θ
    return (vers / t2, (th - sn) / (t2 * th), (t2 - 2.0 * vers) / (2.0 * t2 * t2),
            (2.0 * th - 3.0 * sn + th * co) / (2.0 * t2 * t2 * th),
            (1.0 - 0.5 * th * np.cos(0.5 * th) / h) / t2)


@allocation_free
def apply_V(w0, w1, w2, u0, u1, u2, inverse):
    """V(ω) u, or V(ω)⁻¹ u, as 3 scalars, for the SE(3) exponential (Murray, Li & Sastry
    1994, ch. 2): V = J_l(ω), coefficients of :func:`so3_coefficients`."""
    th = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    x0, x1, x2 = w1 * u2 - w2 * u1, w2 * u0 - w0 * u2, w0 * u1 - w1 * u0  # ω × u
    y0, y1, y2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0  # ω × (ω × u)
    a, b, _, _, e = so3_coefficients(th)
    if inverse:
        a, b = -0.5, e
    return u0 + a * x0 + b * y0, u1 + a * x1 + b * y1, u2 + a * x2 + b * y2


@allocation_free
def se2_coefficients(w):
    """(a, b) of the SE(2) exponential: translation [[a, −b], [b, a]] (vx, vy) for rate ω = w."""
    if abs(w) < 1e-8:
        return 1.0 - w * w / 6.0, 0.5 * w
    h = np.sin(0.5 * w)
    return np.sin(w) / w, 2.0 * h * h / w  # 1 − cos w = 2 sin²(w/2), without cancellation


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
