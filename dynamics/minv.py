"""Carpentier's analytical inverse of the joint-space inertia matrix (Carpentier 2018, Alg. 1).

ABA with the affine terms removed, run on the linear map τ ↦ q̈ (v = 0, g = 0), so its
columns are M⁻¹ directly; M is never formed nor factorised. In ground coordinates:

    backward:  U_i = I_i^A S_i,  D_i = S_iᵀ U_i
               M⁻¹[i, i] = 1/D_i,  M⁻¹[i, ν̄(i)] = −S_iᵀ F_i[:, ν̄(i)] / D_i
               F_λ[:, ν(i)] += F_i[:, ν(i)] + U_i M⁻¹[i, ν(i)],  I_λ^A += I_i^A − U_i U_iᵀ/D_i
    forward:   M⁻¹[i, k≥i] −= U_iᵀ P_λ[:, k] / D_i,   P_i[:, k≥i] = P_λ[:, k] + S_i M⁻¹[i, k]

F_i is the force set collecting the contributions of the subtree ν(i) and P_i the
motion set (accelerations) of body i per unit τ_k. Only the upper triangle (k ≥ i in
depth-first order) is computed; the lower one follows by symmetry.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import as_vector
from .kinematics import kinematics_and_inertias
from .model import PARENT, SUBTREE_END, Model
from .spatial import dot6_at, mat6_vec_at


@njit(cache=True)
def minv_kernel(topology, joint_placement, axis, inertia, q):
    """M(q)⁻¹ (n, n) by the three-pass algorithm; q checked for NaN/inf."""
    _, _, S, IA = kinematics_and_inertias(topology, joint_placement, axis, inertia, q)
    n = topology.shape[0]
    Minv = np.zeros((n, n))
    F, P = np.zeros((n, 6, n)), np.zeros((n, 6, n))
    U, D = np.empty((n, 6)), np.empty(n)
    for i in range(n - 1, -1, -1):
        mat6_vec_at(IA, i, S, i, U, i)
        D[i] = dot6_at(S, i, U, i)
        if not D[i] > 0.0:
            raise ValueError("model: articulated inertia about a joint axis is not positive (massless leaf?)")
        end = topology[i, SUBTREE_END]
        Minv[i, i] = 1.0 / D[i]
        for k in range(i + 1, end):
            s = 0.0
            for r in range(6):
                s += S[i, r] * F[i, r, k]
            Minv[i, k] = -s / D[i]
        lam = topology[i, PARENT]
        if lam < 0:
            continue
        for k in range(i, end):
            for r in range(6):
                F[lam, r, k] += F[i, r, k] + U[i, r] * Minv[i, k]
        for r in range(6):
            for c in range(6):
                IA[lam, r, c] += IA[i, r, c] - U[i, r] * U[i, c] / D[i]
    for i in range(n):
        lam = topology[i, PARENT]
        for k in range(i, n):
            if lam >= 0:
                s = 0.0
                for r in range(6):
                    s += U[i, r] * P[lam, r, k]
                Minv[i, k] -= s / D[i]
            for r in range(6):
                P[i, r, k] = S[i, r] * Minv[i, k] + (P[lam, r, k] if lam >= 0 else 0.0)
    for i in range(n):
        for k in range(i + 1, n):
            Minv[k, i] = Minv[i, k]
    return Minv


def minv(model: Model, q) -> np.ndarray:
    """M(q)⁻¹ (nv, nv) by Carpentier's algorithm (not a factorisation of M)."""
    q = as_vector(q, model.nq, "q")
    return minv_kernel(model.topology, model.joint_placement, model.axis, model.inertia, q)
