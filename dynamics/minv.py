"""Carpentier's analytical inverse of the joint-space inertia matrix (Carpentier 2018, Alg. 1).

ABA with the affine terms removed, run on the linear map τ ↦ q̈ (v = 0, g = 0), so its
columns are M⁻¹ directly; M is never formed nor factorised. In ground coordinates:

    backward:  U_i = I_i^A S_i,  D_i = S_iᵀ U_i
               M⁻¹[i, i] = 1/D_i,  M⁻¹[i, ν̄(i)] = −S_iᵀ F_i[:, ν̄(i)] / D_i
               F_λ[:, ν(i)] += F_i[:, ν(i)] + U_i M⁻¹[i, ν(i)],  I_λ^A += I_i^A − U_i U_iᵀ/D_i
    forward:   M⁻¹[i, k≥i] −= U_iᵀ P_λ[:, k] / D_i,   P_i[:, k≥i] = P_λ[:, k] + S_i M⁻¹[i, k]

F_i is the force set collecting the contributions of the subtree ν(i) and P_i the
motion set (accelerations) of body i per unit τ_k, each stored 6 × nv (a row per spatial
coordinate) so that every inner loop runs along contiguous columns k. Only the upper
triangle (k ≥ i in depth-first order) is computed; the lower one follows by symmetry. For
a joint of nv_j DoF, the rows of M⁻¹ at its columns form a block: 1/D_i becomes the
nv_j × nv_j block D_i⁻¹ and the divisions by D_i products with it.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, entry_point
from .aba import NOT_POSITIVE, project_out_joint
from .kinematics import check_configuration_size, kinematics_inertias_into
from .model import IDX_V, NV, PARENT, SUBTREE_END, Model
from .spatial import joint_inertia_inverse, mat6_vec_at
from .workspace import call_on_configuration, call_views


@allocation_free(inline="always")
def subtree_end_column(topology, i, nv):
    """One past the last DoF column of the subtree ν(i) (columns are in depth-first order)."""
    end = topology[i, SUBTREE_END]
    return nv if end >= topology.shape[0] else topology[end, IDX_V]


@allocation_free(inline="always")
def _block_solve(A, c0, k, X, b, Dinv, i, T, start, stop, Minv):
    """Minv[c0 + a, col] −= Σ_c D_i⁻¹[a, c] (A[c0 + c] · X[b, :, col]) for the k rows of
    joint i and the columns [start, stop) (A = S or U: joint i's columns; X[b] = F_i or
    P_λ: a force or motion set); T (6, nv) is scratch for the k projections A·X."""
    for c in range(k):
        for col in range(start, stop):
            T[c, col] = 0.0
        for r in range(6):
            w = A[c0 + c, r]
            for col in range(start, stop):
                T[c, col] += w * X[b, r, col]
    for a in range(k):
        for c in range(k):
            w = Dinv[i, a, c]
            for col in range(start, stop):
                Minv[c0 + a, col] -= w * T[c, col]


@allocation_free(inline="always")
def _add_columns(A, c0, k, Minv, start, stop, Y, j):
    """Y[j, r, col] += Σ_a A[c0 + a, r] M⁻¹[c0 + a, col] for the columns [start, stop): the
    set of body j gains joint i's columns A (U_i or S_i) times joint i's rows of M⁻¹."""
    for r in range(6):
        for a in range(c0, c0 + k):
            w = A[a, r]
            for col in range(start, stop):
                Y[j, r, col] += w * Minv[a, col]


@entry_point
def minv_call(buffer, q, Minv):
    """M(q)⁻¹ into ``Minv`` (nv, nv) by the three-pass algorithm, model and workspace cut
    from ``buffer`` (a :func:`dynamics.workspace.call_buffer`); q checked."""
    m, d = call_views(buffer)
    check_configuration_size(m.topology, q)
    kinematics_inertias_into(m, q, d, d.IA)  # I_i^A starts as I_i
    if not minv_passes(m.topology, m.armature, d, d.IA, Minv):
        raise ValueError(NOT_POSITIVE)


@allocation_free
def minv_passes(topology, armature, d, IA, Minv):
    """Write M⁻¹ (nv, nv) into ``Minv`` from the world motion subspaces d.S of a
    forward-kinematics pass and the body inertias ``IA`` (n, 6, 6), which are overwritten
    (articulated inertias); the other intermediates in the workspace ``d``. False if a D_i
    is not positive definite (:data:`dynamics.aba.NOT_POSITIVE`)."""
    n, nv = topology.shape[0], d.S.shape[0]
    S, F, P, U, Dinv = d.S, d.F, d.P, d.U, d.Dinv
    Minv[:, :] = 0.0
    for i in range(n):  # F_i is read on ν(i)'s columns only (P needs no clearing: written before read)
        for r in range(6):
            for col in range(topology[i, IDX_V], subtree_end_column(topology, i, nv)):
                F[i, r, col] = 0.0
    for i in range(n - 1, -1, -1):  # backward pass, leaves to root
        c0, k = topology[i, IDX_V], topology[i, NV]
        # U_i = I_i^A S_i
        for a in range(c0, c0 + k):
            mat6_vec_at(IA, i, S, a, U, a)
        # D_i⁻¹ = (S_iᵀ U_i)⁻¹
        if not joint_inertia_inverse(topology, armature, S, U, i, Dinv, d.gauss):
            return False
        end = subtree_end_column(topology, i, nv)
        # M⁻¹[i, i] = D_i⁻¹
        for a in range(k):
            for b in range(k):
                Minv[c0 + a, c0 + b] = Dinv[i, a, b]
        # M⁻¹[i, ν̄(i)] = −D_i⁻¹ S_iᵀ F_i[:, ν̄(i)]   (P_i is free here: scratch)
        _block_solve(S, c0, k, F, i, Dinv, i, P[i], c0 + k, end, Minv)
        parent = topology[i, PARENT]
        if parent < 0:
            continue
        # F_λ[:, ν(i)] += F_i[:, ν(i)] + U_i M⁻¹[i, ν(i)]
        for r in range(6):
            for col in range(c0, end):
                F[parent, r, col] += F[i, r, col]
        _add_columns(U, c0, k, Minv, c0, end, F, parent)
        # I^a = I_i^A − U_i D_i⁻¹ U_iᵀ,   I_λ^A += I^a
        project_out_joint(topology, U, Dinv, i, d.UD, IA)
        for r in range(6):
            for c in range(6):
                IA[parent, r, c] += IA[i, r, c]
    for i in range(n):  # forward pass, root to leaves
        parent = topology[i, PARENT]
        c0, k = topology[i, IDX_V], topology[i, NV]
        # M⁻¹[i, k≥i] −= D_i⁻¹ U_iᵀ P_λ[:, k]   (F_i is free here: scratch)
        if parent >= 0:
            _block_solve(U, c0, k, P, parent, Dinv, i, F[i], c0, nv, Minv)
        # P_i[:, k≥i] = P_λ[:, k] + S_i M⁻¹[i, k]   (P_0 = 0)
        for r in range(6):
            for col in range(c0, nv):
                P[i, r, col] = P[parent, r, col] if parent >= 0 else 0.0
        _add_columns(S, c0, k, Minv, c0, nv, P, i)
    # M⁻¹[k, i] = M⁻¹[i, k]
    for r in range(nv):
        for col in range(r + 1, nv):
            Minv[col, r] = Minv[r, col]
    return True


def minv(model: Model, q) -> np.ndarray:
    """M(q)⁻¹ (nv, nv) by Carpentier's algorithm (not a factorisation of M)."""
    return call_on_configuration(minv_call, model, q, np.empty((model.nv, model.nv)))
