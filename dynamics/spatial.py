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

from ._compile import allocation_free, njit
from .model import IDX_V, NV, PARENT


@allocation_free(inline="always")
def world_inertia(inertia, i, R, p, I):
    """Spatial inertia I[i] (6, 6) at the world origin of body i at pose (R[i], p[i]).

    ``inertia[i]`` holds mass, CoM and I_com in the body frame. With c the world CoM
    and I_c = R·I_com·Rᵀ (Featherstone eq. 2.63):
    I = [[I_c + m·c×·c×ᵀ, m·c×], [m·c×ᵀ, m·1]].
    """
    m = inertia[i, 0]
    r00, r01, r02 = R[i, 0, 0], R[i, 0, 1], R[i, 0, 2]
    r10, r11, r12 = R[i, 1, 0], R[i, 1, 1], R[i, 1, 2]
    r20, r21, r22 = R[i, 2, 0], R[i, 2, 1], R[i, 2, 2]
    k0, k1, k2 = inertia[i, 1], inertia[i, 2], inertia[i, 3]
    c0 = p[i, 0] + r00 * k0 + r01 * k1 + r02 * k2
    c1 = p[i, 1] + r10 * k0 + r11 * k1 + r12 * k2
    c2 = p[i, 2] + r20 * k0 + r21 * k1 + r22 * k2
    for r in range(3):  # row r of R·I_com, then I_c[r, k] = (R·I_com)[r] · R[k]
        a, b, d = R[i, r, 0], R[i, r, 1], R[i, r, 2]
        x0 = a * inertia[i, 4] + b * inertia[i, 7] + d * inertia[i, 10]
        x1 = a * inertia[i, 5] + b * inertia[i, 8] + d * inertia[i, 11]
        x2 = a * inertia[i, 6] + b * inertia[i, 9] + d * inertia[i, 12]
        I[i, r, 0] = x0 * r00 + x1 * r01 + x2 * r02
        I[i, r, 1] = x0 * r10 + x1 * r11 + x2 * r12
        I[i, r, 2] = x0 * r20 + x1 * r21 + x2 * r22
    mc0, mc1, mc2 = m * c0, m * c1, m * c2
    I[i, 0, 0] += mc1 * c1 + mc2 * c2
    I[i, 1, 1] += mc0 * c0 + mc2 * c2
    I[i, 2, 2] += mc0 * c0 + mc1 * c1
    I[i, 0, 1] -= mc0 * c1
    I[i, 1, 0] -= mc0 * c1
    I[i, 0, 2] -= mc0 * c2
    I[i, 2, 0] -= mc0 * c2
    I[i, 1, 2] -= mc1 * c2
    I[i, 2, 1] -= mc1 * c2
    # upper-right block m·c×, lower-left block its transpose, lower-right m·1
    I[i, 0, 3], I[i, 0, 4], I[i, 0, 5] = 0.0, -mc2, mc1
    I[i, 1, 3], I[i, 1, 4], I[i, 1, 5] = mc2, 0.0, -mc0
    I[i, 2, 3], I[i, 2, 4], I[i, 2, 5] = -mc1, mc0, 0.0
    I[i, 3, 0], I[i, 3, 1], I[i, 3, 2], I[i, 3, 3], I[i, 3, 4], I[i, 3, 5] = 0.0, mc2, -mc1, m, 0.0, 0.0
    I[i, 4, 0], I[i, 4, 1], I[i, 4, 2], I[i, 4, 3], I[i, 4, 4], I[i, 4, 5] = -mc2, 0.0, mc0, 0.0, m, 0.0
    I[i, 5, 0], I[i, 5, 1], I[i, 5, 2], I[i, 5, 3], I[i, 5, 4], I[i, 5, 5] = mc1, -mc0, 0.0, 0.0, 0.0, m


@allocation_free(inline="always")
def crm_at(m, i, u, j, out, k):
    """out[k] = (m[i]×) u[j]."""
    out[k, 0] = m[i, 1] * u[j, 2] - m[i, 2] * u[j, 1]
    out[k, 1] = m[i, 2] * u[j, 0] - m[i, 0] * u[j, 2]
    out[k, 2] = m[i, 0] * u[j, 1] - m[i, 1] * u[j, 0]
    out[k, 3] = m[i, 1] * u[j, 5] - m[i, 2] * u[j, 4] + m[i, 4] * u[j, 2] - m[i, 5] * u[j, 1]
    out[k, 4] = m[i, 2] * u[j, 3] - m[i, 0] * u[j, 5] + m[i, 5] * u[j, 0] - m[i, 3] * u[j, 2]
    out[k, 5] = m[i, 0] * u[j, 4] - m[i, 1] * u[j, 3] + m[i, 3] * u[j, 1] - m[i, 4] * u[j, 0]


@allocation_free(inline="always")
def crf_at(m, i, f, j, out, k):
    """out[k] = (m[i]×*) f[j]."""
    out[k, 0] = m[i, 1] * f[j, 2] - m[i, 2] * f[j, 1] + m[i, 4] * f[j, 5] - m[i, 5] * f[j, 4]
    out[k, 1] = m[i, 2] * f[j, 0] - m[i, 0] * f[j, 2] + m[i, 5] * f[j, 3] - m[i, 3] * f[j, 5]
    out[k, 2] = m[i, 0] * f[j, 1] - m[i, 1] * f[j, 0] + m[i, 3] * f[j, 4] - m[i, 4] * f[j, 3]
    out[k, 3] = m[i, 1] * f[j, 5] - m[i, 2] * f[j, 4]
    out[k, 4] = m[i, 2] * f[j, 3] - m[i, 0] * f[j, 5]
    out[k, 5] = m[i, 0] * f[j, 4] - m[i, 1] * f[j, 3]


@allocation_free(inline="always")
def mat6_vec_at(A, i, x, j, out, k):
    """out[k] = A[i] x[j] for stacked (6, 6) matrices and 6-vectors."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[i, r, c] * x[j, c]
        out[k, r] = s


@allocation_free(inline="always")
def dot6_at(a, i, b, j):
    """a[i]ᵀ b[j] for stacked 6-vectors."""
    return (a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]
            + a[i, 3] * b[j, 3] + a[i, 4] * b[j, 4] + a[i, 5] * b[j, 5])


@allocation_free(inline="always")
def add_to_parent(topology, X, i):
    """X[λ(i)] += X[i] for stacked (6, 6) matrices: the composite sums I^C, B^C of a subtree."""
    parent = topology[i, PARENT]
    if parent >= 0:
        for r in range(6):
            for c in range(6):
                X[parent, r, c] += X[i, r, c]


@allocation_free(inline="always")
def joint_velocity(topology, S, v, i, out, k):
    """out[k] = S_i v_i = Σ_c S[c] v[c] over the DoF columns c of joint i."""
    for r in range(6):
        out[k, r] = 0.0
    for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
        for r in range(6):
            out[k, r] += S[c, r] * v[c]


@allocation_free(inline="always")
def joint_inertia_inverse(topology, armature, S, U, i, Dinv, A):
    """Dinv[i, :nv_j, :nv_j] = D_i⁻¹ with D_i = S_iᵀ U_i + diag(armature_i) (nv_j × nv_j,
    U_i = I_i^A S_i in the rows of U at joint i's DoF columns; the joint's reflected rotor
    inertias on the diagonal), by Gauss–Jordan elimination on the symmetric
    positive-definite D_i (no pivoting needed; A (6, 12) is the tableau). False if D_i is
    not positive definite (a massless leaf body without armature, say)."""
    c0, k = topology[i, IDX_V], topology[i, NV]
    for r in range(k):
        for c in range(k):
            A[r, c] = dot6_at(S, c0 + r, U, c0 + c)
            A[r, k + c] = 1.0 if r == c else 0.0
        A[r, r] += armature[c0 + r]
    for piv in range(k):
        d = A[piv, piv]
        if not d > 1e-12 * max(1.0, abs(A[0, 0])):
            return False
        for c in range(2 * k):
            A[piv, c] /= d
        for r in range(k):
            if r != piv:
                f = A[r, piv]
                for c in range(2 * k):
                    A[r, c] -= f * A[piv, c]
    for r in range(k):
        for c in range(k):
            Dinv[i, r, c] = A[r, k + c]
    return True


@allocation_free
def symmetrize(H):
    """H ← ½(H + Hᵀ) in place, for a square H symmetric up to the rounding of its sums."""
    for i in range(H.shape[0]):
        for j in range(i):
            H[i, j] = H[j, i] = 0.5 * (H[i, j] + H[j, i])


@allocation_free
def mirror_upper(H):
    """H[i, j] = H[j, i] for i > j: a square H made symmetric from its upper triangle alone
    (its lower one is never read)."""
    for i in range(H.shape[0]):
        for j in range(i):
            H[i, j] = H[j, i]


@allocation_free
def copy_into(dst, src):
    """dst[...] = src for C-contiguous arrays of one size, element by element (numba's
    ``dst[:] = src`` may make a temporary copy, which an allocation-free kernel cannot)."""
    d, s = dst.reshape(-1), src.reshape(-1)
    for i in range(d.shape[0]):
        d[i] = s[i]


@allocation_free
def axpy(c, x, y):
    """y += c·x for C-contiguous arrays of equal shape, without temporaries."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    for i in range(xf.shape[0]):
        yf[i] += c * xf[i]


@njit(cache=True)
def matmul_add(A, B, out):
    """out += A @ B in plain loops (zero entries of A skipped), for the small matrices of
    the Lie-group formulas, where numba's ``@`` calls BLAS at about a microsecond per
    product."""
    for i in range(A.shape[0]):
        for p in range(A.shape[1]):
            a = A[i, p]
            if a != 0.0:
                for j in range(B.shape[1]):
                    out[i, j] += a * B[p, j]


@njit(cache=True)
def matmul_small(A, B):
    """A @ B (a new array) by :func:`matmul_add`: 3 × 3 to 6 × 6, or a few rows against
    many columns."""
    out = np.zeros((A.shape[0], B.shape[1]))
    matmul_add(A, B, out)
    return out
