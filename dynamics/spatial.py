"""Spatial vector algebra in ground (world) coordinates, compiled.

Featherstone's conventions (Rigid Body Dynamics Algorithms, ch. 2), as in Singh, Russell & Wensing 2023:
a motion vector is ``m = [ω; v]`` (v = velocity of the body point at the world
origin), a force vector is ``f = [n; f]`` (n = moment about the world origin).

    m×  = [[ω×, 0], [v×, ω×]]           (motion cross product, Singh, Russell & Wensing 2023 eq. 6)
    m×* = [[ω×, v×], [0, ω×]] = −(m×)ᵀ  (force cross product, eq. 7)
    f ×̄* m = m ×* f                     (swapped force cross product)

All helpers write into caller-provided arrays so the recursions allocate nothing per
body. Operands are addressed as rows of stacked arrays — ``crm_at(m, i, u, j, out, k)``
is ``out[k] = m[i] × u[j]`` — because creating a numba view of a row costs reference
counting, which made the recursions about 4× slower than this row-addressed form.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .model import JTYPE, PARENT, PRISMATIC


@njit(cache=True)
def joint_transform(topology, joint_placement, axis, q, i, R, p):
    """World pose (R[i], p[i]) of joint frame i: ⁰T_i = ⁰T_λ(i) · X_T(i) · X_J(q_i).

    X_T(i) = ``joint_placement[i]``; X_J is a rotation of angle q_i about ``axis[i]``
    (Rodrigues' formula) or a translation q_i·axis[i]. Rows of the stacked arrays are
    addressed by index (no views) so the recursion does no reference counting.
    """
    lam = topology[i, PARENT]
    for r in range(3):
        for c in range(4):
            if lam < 0:
                x = joint_placement[i, r, c]
            else:
                x = (R[lam, r, 0] * joint_placement[i, 0, c] + R[lam, r, 1] * joint_placement[i, 1, c]
                     + R[lam, r, 2] * joint_placement[i, 2, c])
            if c < 3:
                R[i, r, c] = x
            else:
                p[i, r] = x + (p[lam, r] if lam >= 0 else 0.0)
    x, y, z = axis[i, 0], axis[i, 1], axis[i, 2]
    if topology[i, JTYPE] == PRISMATIC:
        for r in range(3):
            p[i, r] += q[i] * (R[i, r, 0] * x + R[i, r, 1] * y + R[i, r, 2] * z)
        return
    s, co = np.sin(q[i]), np.cos(q[i])
    t = 1.0 - co
    j00, j01, j02 = co + x * x * t, x * y * t - z * s, x * z * t + y * s
    j10, j11, j12 = y * x * t + z * s, co + y * y * t, y * z * t - x * s
    j20, j21, j22 = z * x * t - y * s, z * y * t + x * s, co + z * z * t
    for r in range(3):
        a0, a1, a2 = R[i, r, 0], R[i, r, 1], R[i, r, 2]
        R[i, r, 0] = a0 * j00 + a1 * j10 + a2 * j20
        R[i, r, 1] = a0 * j01 + a1 * j11 + a2 * j21
        R[i, r, 2] = a0 * j02 + a1 * j12 + a2 * j22


@njit(cache=True)
def motion_subspace(topology, axis, i, R, p, S):
    """World motion subspace S[i] (6,) of 1-DoF joint i at world pose (R[i], p[i]).

    Revolute: S = [z; p × z] with z = R·axis; prismatic: S = [0; R·axis].
    """
    z0 = R[i, 0, 0] * axis[i, 0] + R[i, 0, 1] * axis[i, 1] + R[i, 0, 2] * axis[i, 2]
    z1 = R[i, 1, 0] * axis[i, 0] + R[i, 1, 1] * axis[i, 1] + R[i, 1, 2] * axis[i, 2]
    z2 = R[i, 2, 0] * axis[i, 0] + R[i, 2, 1] * axis[i, 1] + R[i, 2, 2] * axis[i, 2]
    if topology[i, JTYPE] == PRISMATIC:
        S[i, 0] = S[i, 1] = S[i, 2] = 0.0
        S[i, 3], S[i, 4], S[i, 5] = z0, z1, z2
        return
    S[i, 0], S[i, 1], S[i, 2] = z0, z1, z2
    S[i, 3] = p[i, 1] * z2 - p[i, 2] * z1
    S[i, 4] = p[i, 2] * z0 - p[i, 0] * z2
    S[i, 5] = p[i, 0] * z1 - p[i, 1] * z0


@njit(cache=True)
def world_inertia(inertia, i, R, p, I):
    """Spatial inertia I[i] (6, 6) at the world origin of body i at pose (R[i], p[i]).

    ``inertia[i]`` holds mass, CoM and I_com in the body frame. With c the world CoM
    and I_c = R·I_com·Rᵀ (Featherstone eq. 2.63):
    I = [[I_c + m·c×·c×ᵀ, m·c×], [m·c×ᵀ, m·1]].
    """
    m = inertia[i, 0]
    c0 = p[i, 0] + R[i, 0, 0] * inertia[i, 1] + R[i, 0, 1] * inertia[i, 2] + R[i, 0, 2] * inertia[i, 3]
    c1 = p[i, 1] + R[i, 1, 0] * inertia[i, 1] + R[i, 1, 1] * inertia[i, 2] + R[i, 1, 2] * inertia[i, 3]
    c2 = p[i, 2] + R[i, 2, 0] * inertia[i, 1] + R[i, 2, 1] * inertia[i, 2] + R[i, 2, 2] * inertia[i, 3]
    for r in range(3):
        for k in range(r, 3):
            s = 0.0
            for a in range(3):
                s += R[i, r, a] * (inertia[i, 4 + 3 * a] * R[i, k, 0] + inertia[i, 5 + 3 * a] * R[i, k, 1]
                                   + inertia[i, 6 + 3 * a] * R[i, k, 2])
            I[i, r, k] = I[i, k, r] = s
            I[i, r, 3 + k] = I[i, k, 3 + r] = I[i, 3 + r, k] = I[i, 3 + k, r] = 0.0
            I[i, 3 + r, 3 + k] = I[i, 3 + k, 3 + r] = 0.0
    cc = c0 * c0 + c1 * c1 + c2 * c2
    I[i, 0, 0] += m * (cc - c0 * c0)
    I[i, 1, 1] += m * (cc - c1 * c1)
    I[i, 2, 2] += m * (cc - c2 * c2)
    I[i, 0, 1] -= m * c0 * c1
    I[i, 1, 0] -= m * c0 * c1
    I[i, 0, 2] -= m * c0 * c2
    I[i, 2, 0] -= m * c0 * c2
    I[i, 1, 2] -= m * c1 * c2
    I[i, 2, 1] -= m * c1 * c2
    I[i, 3, 3] = I[i, 4, 4] = I[i, 5, 5] = m
    # upper-right block m·c×, lower-left block its transpose
    I[i, 0, 4] = I[i, 4, 0] = -m * c2
    I[i, 0, 5] = I[i, 5, 0] = m * c1
    I[i, 1, 3] = I[i, 3, 1] = m * c2
    I[i, 1, 5] = I[i, 5, 1] = -m * c0
    I[i, 2, 3] = I[i, 3, 2] = -m * c1
    I[i, 2, 4] = I[i, 4, 2] = m * c0


@njit(cache=True)
def crm_at(m, i, u, j, out, k):
    """out[k] = (m[i]×) u[j]."""
    out[k, 0] = m[i, 1] * u[j, 2] - m[i, 2] * u[j, 1]
    out[k, 1] = m[i, 2] * u[j, 0] - m[i, 0] * u[j, 2]
    out[k, 2] = m[i, 0] * u[j, 1] - m[i, 1] * u[j, 0]
    out[k, 3] = m[i, 1] * u[j, 5] - m[i, 2] * u[j, 4] + m[i, 4] * u[j, 2] - m[i, 5] * u[j, 1]
    out[k, 4] = m[i, 2] * u[j, 3] - m[i, 0] * u[j, 5] + m[i, 5] * u[j, 0] - m[i, 3] * u[j, 2]
    out[k, 5] = m[i, 0] * u[j, 4] - m[i, 1] * u[j, 3] + m[i, 3] * u[j, 1] - m[i, 4] * u[j, 0]


@njit(cache=True)
def crf_at(m, i, f, j, out, k):
    """out[k] = (m[i]×*) f[j]."""
    out[k, 0] = m[i, 1] * f[j, 2] - m[i, 2] * f[j, 1] + m[i, 4] * f[j, 5] - m[i, 5] * f[j, 4]
    out[k, 1] = m[i, 2] * f[j, 0] - m[i, 0] * f[j, 2] + m[i, 5] * f[j, 3] - m[i, 3] * f[j, 5]
    out[k, 2] = m[i, 0] * f[j, 1] - m[i, 1] * f[j, 0] + m[i, 3] * f[j, 4] - m[i, 4] * f[j, 3]
    out[k, 3] = m[i, 1] * f[j, 5] - m[i, 2] * f[j, 4]
    out[k, 4] = m[i, 2] * f[j, 3] - m[i, 0] * f[j, 5]
    out[k, 5] = m[i, 0] * f[j, 4] - m[i, 1] * f[j, 3]


@njit(cache=True)
def mat6_vec_at(A, i, x, j, out, k):
    """out[k] = A[i] x[j] for stacked (6, 6) matrices and 6-vectors."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[i, r, c] * x[j, c]
        out[k, r] = s


@njit(cache=True)
def dot6_at(a, i, b, j):
    """a[i]ᵀ b[j] for stacked 6-vectors."""
    return (a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]
            + a[i, 3] * b[j, 3] + a[i, 4] * b[j, 4] + a[i, 5] * b[j, 5])


@njit(cache=True)
def add_to_parent(topology, X, i):
    """X[λ(i)] += X[i] for stacked (6, 6) matrices: the composite sums I^C, B^C of a subtree."""
    lam = topology[i, PARENT]
    if lam >= 0:
        for r in range(6):
            for c in range(6):
                X[lam, r, c] += X[i, r, c]
