"""The KKT system of rigid contacts, solved through a sparse factorisation of M and a small
Cholesky factor.

Every contact algorithm of this package solves systems with the KKT matrix

    K = [M  −Jᵀ]      K [x; y] = [r₁; r₂]   ⇔   y = Λ⁻¹ (r₂ − J M⁻¹ r₁),
        [J   μI]                              x = M⁻¹ (r₁ + Jᵀ y),

Λ = J M⁻¹ Jᵀ + μ I the operational-space (Delassus) matrix of the contacts plus the
``damping`` μ (Carpentier, Budhiraja & Mansard, *Proximal and sparse resolution of
constrained dynamic equations*, RSS 2021, eq. 9–12; the block elimination of Featherstone
2008, Sec. 8.3). M = Lᵀ D L is factorised by Featherstone's sparse LTDL
(:mod:`dynamics.ltdl`), so with W = J L⁻¹ (each row an L⁻ᵀ substitution),
Λ = W D⁻¹ Wᵀ + μ I, factorised by Cholesky: no inverse of M or K is formed. With μ = 0, a
Λ that is not positive definite means dependent contacts.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free
from .ltdl import solve_lt, solve_m

DEPENDENT = 1e-10
"""Relative size of a Cholesky pivot of Λ (against Λ's largest diagonal entry) below
which the contact rows are taken as dependent."""


@allocation_free
def cholesky_in_place(L, damping):
    """Overwrite the lower triangle of the symmetric L with its Cholesky factor; −1, or the
    first row whose pivot is not positive: not above :data:`DEPENDENT` times the largest
    diagonal entry, nor (for L = Λ + μI, whose pivots are ≥ μ) above μ/2."""
    n = L.shape[0]
    scale = 0.0
    for i in range(n):
        scale = max(scale, L[i, i])
    tol = DEPENDENT * scale if damping == 0.0 else min(DEPENDENT * scale, 0.5 * damping)
    for j in range(n):
        d = L[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > tol:
            return j
        d = np.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return -1


@allocation_free
def cholesky_solve(L, B):
    """B ← (L Lᵀ)⁻¹ B in place, B (n, m): m right-hand sides, inner loops along rows."""
    n, m = B.shape
    for i in range(n):  # L Z = B
        for k in range(i):
            f = L[i, k]
            for c in range(m):
                B[i, c] -= f * B[k, c]
        for c in range(m):
            B[i, c] /= L[i, i]
    for i in range(n - 1, -1, -1):  # Lᵀ Y = Z
        for k in range(i + 1, n):
            f = L[k, i]
            for c in range(m):
                B[i, c] -= f * B[k, c]
        for c in range(m):
            B[i, c] /= L[i, i]


@allocation_free
def delassus(H, lam, J, damping, Wt, L):
    """Wᵀ = (J L⁻¹)ᵀ (nv, nc) and Λ = W D⁻¹ Wᵀ + μ I (nc, nc), Cholesky-factorised in the
    lower triangle of L, from the LTDL factor H of M (:func:`dynamics.ltdl.ltdl_in_place`)
    and its DoF parents ``lam``; returns the failing row or −1 of :func:`cholesky_in_place`."""
    nv, nc = J.shape[1], J.shape[0]
    for k in range(nv):
        for a in range(nc):
            Wt[k, a] = J[a, k]
    solve_lt(H, lam, Wt)  # Wᵀ = L⁻ᵀ Jᵀ
    for a in range(nc):
        for b in range(a + 1):
            s = damping if a == b else 0.0
            for k in range(nv):
                s += Wt[k, a] * Wt[k, b] / H[k, k]
            L[a, b] = L[b, a] = s
    return cholesky_in_place(L, damping)


@allocation_free
def kkt_solve(H, lam, J, Wt, L, r1, r2, t):
    """K [x; y] = [r₁; r₂] (module docstring) for m right-hand sides r₁ (nv, m), r₂ (nc, m),
    in place (r₁ ← x, r₂ ← y), with the factors of :func:`delassus` and t (nv, m) scratch:
    y = Λ⁻¹ (r₂ − W D⁻¹ L⁻ᵀ r₁), x = M⁻¹ (r₁ + Jᵀ y)."""
    nv, nc, m = r1.shape[0], r2.shape[0], r1.shape[1]
    for k in range(nv):
        for c in range(m):
            t[k, c] = r1[k, c]
    solve_lt(H, lam, t)
    for k in range(nv):  # y = r₂ − W D⁻¹ (L⁻ᵀ r₁)
        for a in range(nc):
            f = Wt[k, a] / H[k, k]
            for c in range(m):
                r2[a, c] -= f * t[k, c]
    cholesky_solve(L, r2)
    for a in range(nc):  # x = M⁻¹ (r₁ + Jᵀ y)
        for k in range(nv):
            f = J[a, k]
            if f != 0.0:
                for c in range(m):
                    r1[k, c] += f * r2[a, c]
    solve_m(H, lam, r1)
