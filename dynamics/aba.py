"""Articulated-body algorithm (ABA): forward dynamics q̈ = FD(q, v, τ).

Featherstone Table 7.1 in ground coordinates (no coordinate transforms needed):

    pass 1:  v_i = v_λ + S_i q̇_i,  c_i = v_i × S_i q̇_i,
             I_i^A = I_i,  p_i^A = v_i ×* I_i v_i − f_i^ext
    pass 2:  U_i = I_i^A S_i,  D_i = S_iᵀ U_i,  u_i = τ_i − S_iᵀ p_i^A
             I^a = I_i^A − U_i U_iᵀ / D_i,  p^a = p_i^A + I^a c_i + U_i u_i / D_i
             I_λ^A += I^a,  p_λ^A += p^a
    pass 3:  a' = a_λ + c_i,  q̈_i = (u_i − U_iᵀ a') / D_i,  a_i = a' + S_i q̈_i

For a joint of nv_j DoF, U_i is 6 × nv_j, D_i is nv_j × nv_j and the divisions are
products with D_i⁻¹ (Featherstone Table 7.1 as written, for multi-DoF joints).
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, entry_point
from .kinematics import kinematics_inertias_into
from .model import IDX_V, NV, PARENT, Model
from .rnea import check_forces, check_sizes, check_state, subtract_external_force
from .spatial import crf_at, crm_at, dot6_at, joint_inertia_inverse, joint_velocity, mat6_vec_at
from .workspace import call_on_state, call_views

NOT_POSITIVE = "model: articulated inertia about a joint is not positive definite (massless leaf body?)"


@entry_point
def aba_call(buffer, q, v, tau, f_ext, qdd):
    """q̈ = FD(q, v, τ, f_ext) into ``qdd`` (f_ext (n, 6) local, or (0, 6)), model and
    workspace cut from ``buffer`` (a :func:`dynamics.workspace.call_buffer`); inputs checked."""
    m, d = call_views(buffer)
    check_sizes(m.topology, q, v, tau, f_ext)
    if not aba_into(m, d, q, v, tau, f_ext, qdd):
        raise ValueError(NOT_POSITIVE)


@allocation_free(inline="always")
def project_out_joint(topology, U, Dinv, i, UD, IA):
    """UD (joint i's rows) = U_i D_i⁻¹ and IA[i] −= U_i D_i⁻¹ U_iᵀ: the articulated inertia
    I^a_i that body i passes to its parent (Featherstone 2008, Table 7.1), the outer
    product row by row (contiguous inner loops)."""
    c0, k = topology[i, IDX_V], topology[i, NV]
    for a in range(k):
        for r in range(6):
            s = 0.0
            for b in range(k):
                s += U[c0 + b, r] * Dinv[i, b, a]
            UD[c0 + a, r] = s
    for a in range(c0, c0 + k):
        for r in range(6):
            ud = UD[a, r]
            for col in range(6):
                IA[i, r, col] -= ud * U[a, col]


@allocation_free
def aba_into(m, d, q, v, tau, f_ext, qdd):
    """Write q̈ = FD(q, v, τ, f_ext) into ``qdd``, every intermediate in the workspace ``d``
    (:mod:`dynamics.workspace`); inputs checked for NaN/inf. False (``qdd`` unset) if an
    articulated joint inertia D_i is not positive definite (:data:`NOT_POSITIVE`)."""
    check_state(q, v, tau, "tau: expected finite values, got NaN or inf")
    check_forces(f_ext)
    topology, gravity = m.topology, m.gravity
    # the body inertias straight into d.IA: I_i^A starts as I_i
    kinematics_inertias_into(m, q, d, d.IA)
    n = topology.shape[0]
    R, p, S, IA, vel, c, pA = d.R, d.p, d.S, d.IA, d.vel, d.acc, d.pA
    U, UD, u, Dinv, h = d.U, d.UD, d.u, d.Dinv, d.h
    for i in range(n):  # pass 1, root to leaves
        parent = topology[i, PARENT]
        # v_J = S_i q̇_i
        joint_velocity(topology, S, v, i, h, 1)
        # v_i = v_λ(i) + S_i q̇_i
        for k in range(6):
            vel[i, k] = (0.0 if parent < 0 else vel[parent, k]) + h[1, k]
        # c_i = v_i × S_i q̇_i
        crm_at(vel, i, h, 1, c, i)
        # p_i^A = v_i ×* I_i v_i   (I_i^A = I_i here)
        mat6_vec_at(IA, i, vel, i, h, 0)
        crf_at(vel, i, h, 0, pA, i)
        if f_ext.shape[0] > 0:
            # p_i^A −= f_i^ext (world coordinates)
            subtract_external_force(R, p, f_ext, i, pA)
    for i in range(n - 1, -1, -1):  # pass 2, leaves to root
        c0, k = topology[i, IDX_V], topology[i, NV]
        for a in range(c0, c0 + k):
            # U_i = I_i^A S_i
            mat6_vec_at(IA, i, S, a, U, a)
            # u_i = τ_i − S_iᵀ p_i^A
            u[a] = tau[a] - dot6_at(S, a, pA, i)
        # D_i⁻¹ = (S_iᵀ U_i)⁻¹
        if not joint_inertia_inverse(topology, m.armature, S, U, i, Dinv, d.gauss):
            return False
        parent = topology[i, PARENT]
        if parent < 0:
            continue
        # I^a = I_i^A − U_i D_i⁻¹ U_iᵀ   (in place in IA[i]; UD = U_i D_i⁻¹)
        project_out_joint(topology, U, Dinv, i, UD, IA)
        # p^a = p_i^A + I^a c_i + U_i D_i⁻¹ u_i,   p_λ^A += p^a
        mat6_vec_at(IA, i, c, i, h, 0)
        for r in range(6):
            s = pA[i, r] + h[0, r]
            for a in range(c0, c0 + k):
                s += UD[a, r] * u[a]
            pA[parent, r] += s
            # I_λ^A += I^a
            for col in range(6):
                IA[parent, r, col] += IA[i, r, col]
    acc = c  # a_i overwrites c_i once used
    for i in range(n):  # pass 3, root to leaves
        parent = topology[i, PARENT]
        c0, k = topology[i, IDX_V], topology[i, NV]
        # a' = a_λ(i) + c_i,   a_0 = −[0; g]
        for r in range(6):
            acc[i, r] += acc[parent, r] if parent >= 0 else (-gravity[r - 3] if r >= 3 else 0.0)
        # q̈_i = D_i⁻¹ (u_i − U_iᵀ a')
        for a in range(k):
            h[0, a] = u[c0 + a] - dot6_at(U, c0 + a, acc, i)
        for a in range(k):
            s = 0.0
            for b in range(k):
                s += Dinv[i, a, b] * h[0, b]
            qdd[c0 + a] = s
        # a_i = a' + S_i q̈_i
        for a in range(c0, c0 + k):
            for r in range(6):
                acc[i, r] += S[a, r] * qdd[a]
    return True


def aba(model: Model, q, v, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics q̈ (nv,) = M(q)⁻¹ (τ + Σ_i J_iᵀ f_i^ext − C(q, v)·v − g(q)).

    ``f_ext`` (njoints, 6), optional: external forces as in :func:`dynamics.rnea`.
    """
    return call_on_state(aba_call, model, q, v, tau, "tau", f_ext, np.empty(model.nv))
