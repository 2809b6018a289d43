"""Spatial vector algebra in ground (world) coordinates, compiled.

Featherstone's conventions (Rigid Body Dynamics Algorithms, ch. 2), as in seed 004:
a motion vector is ``m = [ω; v]`` (v = velocity of the body point at the world
origin), a force vector is ``f = [n; f]`` (n = moment about the world origin).

    m×  = [[ω×, 0], [v×, ω×]]           (motion cross product, seed 004 eq. 6)
    m×* = [[ω×, v×], [0, ω×]] = −(m×)ᵀ  (force cross product, eq. 7)
    f ×̄* m = m ×* f                     (swapped force cross product)

All helpers write into caller-provided arrays so the recursions allocate nothing per
body. Every function here is tiny and inlined by LLVM.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .model import PRISMATIC


@njit(cache=True, inline="always")
def cross3(a, b, out):
    """out = a × b for 3-vectors (out must not alias a or b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def crm(m, u, out):
    """out = (m×) u: motion cross product of motion vectors (seed 004 eq. 6)."""
    out[0] = m[1] * u[2] - m[2] * u[1]
    out[1] = m[2] * u[0] - m[0] * u[2]
    out[2] = m[0] * u[1] - m[1] * u[0]
    out[3] = m[1] * u[5] - m[2] * u[4] + m[4] * u[2] - m[5] * u[1]
    out[4] = m[2] * u[3] - m[0] * u[5] + m[5] * u[0] - m[3] * u[2]
    out[5] = m[0] * u[4] - m[1] * u[3] + m[3] * u[1] - m[4] * u[0]


@njit(cache=True)
def crf(m, f, out):
    """out = (m×*) f: force cross product of motion m and force f (eq. 7)."""
    out[0] = m[1] * f[2] - m[2] * f[1] + m[4] * f[5] - m[5] * f[4]
    out[1] = m[2] * f[0] - m[0] * f[2] + m[5] * f[3] - m[3] * f[5]
    out[2] = m[0] * f[1] - m[1] * f[0] + m[3] * f[4] - m[4] * f[3]
    out[3] = m[1] * f[5] - m[2] * f[4]
    out[4] = m[2] * f[3] - m[0] * f[5]
    out[5] = m[0] * f[4] - m[1] * f[3]


@njit(cache=True)
def crm_matrix(m, out):
    """out (6, 6) = m× (eq. 6)."""
    out[:] = 0.0
    _skew_into(m[0], m[1], m[2], out, 0, 0)
    _skew_into(m[0], m[1], m[2], out, 3, 3)
    _skew_into(m[3], m[4], m[5], out, 3, 0)


@njit(cache=True)
def crf_matrix(m, out):
    """out (6, 6) = m×* (eq. 7)."""
    out[:] = 0.0
    _skew_into(m[0], m[1], m[2], out, 0, 0)
    _skew_into(m[0], m[1], m[2], out, 3, 3)
    _skew_into(m[3], m[4], m[5], out, 0, 3)


@njit(cache=True)
def crf_bar_matrix(f, out):
    """out (6, 6) = f ×̄*, the matrix with (f ×̄*) m = (m ×*) f."""
    out[:] = 0.0
    _skew_into(-f[0], -f[1], -f[2], out, 0, 0)
    _skew_into(-f[3], -f[4], -f[5], out, 0, 3)
    _skew_into(-f[3], -f[4], -f[5], out, 3, 0)


@njit(cache=True, inline="always")
def _skew_into(x, y, z, out, r, c):
    out[r, c + 1] = -z
    out[r, c + 2] = y
    out[r + 1, c] = z
    out[r + 1, c + 2] = -x
    out[r + 2, c] = -y
    out[r + 2, c + 1] = x


@njit(cache=True)
def mat6_vec(A, x, out):
    """out = A x for a (6, 6) matrix."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] = s


@njit(cache=True)
def dot6(a, b):
    """aᵀ b for 6-vectors."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True)
def joint_transform(jtype, axis, q, T_tree, R_parent, p_parent, R_out, p_out):
    """World pose of joint frame i: ⁰T_i = ⁰T_λ(i) · X_T(i) · X_J(q_i).

    ``T_tree`` (4, 4) is the fixed tree transform X_T(i); the joint transform X_J is a
    rotation of angle q about ``axis`` (Rodrigues' formula) or a translation q·axis.
    """
    for r in range(3):
        for c in range(3):
            R_out[r, c] = (R_parent[r, 0] * T_tree[0, c] + R_parent[r, 1] * T_tree[1, c]
                           + R_parent[r, 2] * T_tree[2, c])
        p_out[r] = p_parent[r] + (R_parent[r, 0] * T_tree[0, 3] + R_parent[r, 1] * T_tree[1, 3]
                                  + R_parent[r, 2] * T_tree[2, 3])
    x, y, z = axis[0], axis[1], axis[2]
    if jtype == PRISMATIC:
        for r in range(3):
            p_out[r] += q * (R_out[r, 0] * x + R_out[r, 1] * y + R_out[r, 2] * z)
        return
    s, co = np.sin(q), np.cos(q)
    t = 1.0 - co
    j00, j01, j02 = co + x * x * t, x * y * t - z * s, x * z * t + y * s
    j10, j11, j12 = y * x * t + z * s, co + y * y * t, y * z * t - x * s
    j20, j21, j22 = z * x * t - y * s, z * y * t + x * s, co + z * z * t
    for r in range(3):
        a0, a1, a2 = R_out[r, 0], R_out[r, 1], R_out[r, 2]
        R_out[r, 0] = a0 * j00 + a1 * j10 + a2 * j20
        R_out[r, 1] = a0 * j01 + a1 * j11 + a2 * j21
        R_out[r, 2] = a0 * j02 + a1 * j12 + a2 * j22


@njit(cache=True)
def motion_subspace(jtype, axis, R, p, S_out):
    """World motion subspace S_i (6,) of a 1-DoF joint at world pose (R, p).

    Revolute: S = [z; p × z] with z = R·axis; prismatic: S = [0; R·axis].
    """
    z0 = R[0, 0] * axis[0] + R[0, 1] * axis[1] + R[0, 2] * axis[2]
    z1 = R[1, 0] * axis[0] + R[1, 1] * axis[1] + R[1, 2] * axis[2]
    z2 = R[2, 0] * axis[0] + R[2, 1] * axis[1] + R[2, 2] * axis[2]
    if jtype == PRISMATIC:
        S_out[0] = S_out[1] = S_out[2] = 0.0
        S_out[3], S_out[4], S_out[5] = z0, z1, z2
        return
    S_out[0], S_out[1], S_out[2] = z0, z1, z2
    S_out[3] = p[1] * z2 - p[2] * z1
    S_out[4] = p[2] * z0 - p[0] * z2
    S_out[5] = p[0] * z1 - p[1] * z0


@njit(cache=True)
def world_inertia(params, R, p, I_out):
    """Spatial inertia (6, 6) at the world origin of a body at world pose (R, p).

    ``params`` is a row of ``Model.inertia`` (mass, CoM, I_com). With c the world CoM
    and I_c = R·I_com·Rᵀ (Featherstone eq. 2.63):
    I = [[I_c + m·c×·c×ᵀ, m·c×], [m·c×ᵀ, m·1]].
    """
    m = params[0]
    c0 = p[0] + R[0, 0] * params[1] + R[0, 1] * params[2] + R[0, 2] * params[3]
    c1 = p[1] + R[1, 0] * params[1] + R[1, 1] * params[2] + R[1, 2] * params[3]
    c2 = p[2] + R[2, 0] * params[1] + R[2, 1] * params[2] + R[2, 2] * params[3]
    for r in range(3):
        for k in range(r, 3):
            s = 0.0
            for a in range(3):
                s += R[r, a] * (params[4 + 3 * a] * R[k, 0] + params[5 + 3 * a] * R[k, 1]
                                + params[6 + 3 * a] * R[k, 2])
            I_out[r, k] = s
            I_out[k, r] = s
            I_out[r, 3 + k] = 0.0
            I_out[k, 3 + r] = 0.0
            I_out[3 + r, k] = 0.0
            I_out[3 + k, r] = 0.0
            I_out[3 + r, 3 + k] = 0.0
            I_out[3 + k, 3 + r] = 0.0
    cc = c0 * c0 + c1 * c1 + c2 * c2
    I_out[0, 0] += m * (cc - c0 * c0)
    I_out[1, 1] += m * (cc - c1 * c1)
    I_out[2, 2] += m * (cc - c2 * c2)
    I_out[0, 1] -= m * c0 * c1
    I_out[1, 0] -= m * c0 * c1
    I_out[0, 2] -= m * c0 * c2
    I_out[2, 0] -= m * c0 * c2
    I_out[1, 2] -= m * c1 * c2
    I_out[2, 1] -= m * c1 * c2
    I_out[3, 3] = I_out[4, 4] = I_out[5, 5] = m
    # upper-right block m·c×, lower-left block its transpose
    I_out[0, 4] = I_out[4, 0] = -m * c2
    I_out[0, 5] = I_out[5, 0] = m * c1
    I_out[1, 3] = I_out[3, 1] = m * c2
    I_out[1, 5] = I_out[5, 1] = -m * c0
    I_out[2, 3] = I_out[3, 2] = -m * c1
    I_out[2, 4] = I_out[4, 2] = m * c0
