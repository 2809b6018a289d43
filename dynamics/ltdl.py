"""Sparse LTDL factorisation of the joint-space inertia matrix of a kinematic tree.

Featherstone, *Efficient factorization of the joint-space inertia matrix for branched
kinematic trees* (IJRR 2005; Rigid Body Dynamics Algorithms, 2008, Sec. 6.5, Tables 6.3
and 6.4): with λ(k) the parent DoF column of column k (the previous column of the same
joint, else the last column of the parent joint; −1 at the root), M = Lᵀ D L with L unit
lower triangular and nonzero only at (k, i), i an ancestor of k — the sparsity of M itself,
so the factorisation runs in place, without fill-in, in O(Σ_k depth(k)²):

    for k = nv−1 … 0:   for i = λ(k), λ(λ(k)), …:
        a = H_ki / H_kk;   H_ij −= a H_kj  (j = i, λ(i), …);   H_ki = a             (Table 6.3)

and M⁻¹ b = L⁻¹ D⁻¹ L⁻ᵀ b by two sparse substitutions along the ancestor chains
(Table 6.4), O(Σ_k depth(k)) per right-hand side.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, njit
from .model import IDX_V, NV, PARENT


@njit(cache=True)
def dof_parents(topology):
    """λ (nv,) int64: the parent DoF column of every column (−1 at the root)."""
    nv = topology[-1, IDX_V] + topology[-1, NV] if topology.shape[0] > 0 else 0
    lam = np.empty(nv, np.int64)
    for i in range(topology.shape[0]):
        c0, parent = topology[i, IDX_V], topology[i, PARENT]
        lam[c0] = -1 if parent < 0 else topology[parent, IDX_V] + topology[parent, NV] - 1
        for c in range(c0 + 1, c0 + topology[i, NV]):
            lam[c] = c - 1
    return lam


@allocation_free
def ltdl_in_place(H, lam):
    """H (nv, nv) = M ← its factor (Table 6.3): D on the diagonal, L below it at the
    ancestor entries (the rest of H is left as it was and never read). False if a pivot
    is not positive."""
    for k in range(H.shape[0] - 1, -1, -1):
        if not H[k, k] > 0.0:
            return False
        i = lam[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = lam[j]
            H[k, i] = a
            i = lam[i]
    return True


@allocation_free
def solve_lt(H, lam, X):
    """X ← L⁻ᵀ X, X (nv, m): m right-hand sides (Table 6.4, first loop)."""
    m = X.shape[1]
    for i in range(H.shape[0] - 1, -1, -1):
        j = lam[i]
        while j >= 0:
            f = H[i, j]
            for c in range(m):
                X[j, c] -= f * X[i, c]
            j = lam[j]


@allocation_free
def solve_l(H, lam, X):
    """X ← L⁻¹ X, X (nv, m) (Table 6.4, last loop)."""
    m = X.shape[1]
    for i in range(H.shape[0]):
        j = lam[i]
        while j >= 0:
            f = H[i, j]
            for c in range(m):
                X[i, c] -= f * X[j, c]
            j = lam[j]


@allocation_free
def solve_m(H, lam, X):
    """X ← M⁻¹ X = L⁻¹ D⁻¹ L⁻ᵀ X, X (nv, m)."""
    solve_lt(H, lam, X)
    for i in range(H.shape[0]):
        for c in range(X.shape[1]):
            X[i, c] /= H[i, i]
    solve_l(H, lam, X)
