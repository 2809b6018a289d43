"""Articulated-body algorithm (ABA): forward dynamics q̈ = FD(q, v, τ).

Featherstone Table 7.1 in ground coordinates (no coordinate transforms needed):

    pass 1:  v_i = v_λ + S_i q̇_i,  c_i = v_i × S_i q̇_i,
             I_i^A = I_i,  p_i^A = v_i ×* I_i v_i
    pass 2:  U_i = I_i^A S_i,  D_i = S_iᵀ U_i,  u_i = τ_i − S_iᵀ p_i^A
             I^a = I_i^A − U_i U_iᵀ / D_i,  p^a = p_i^A + I^a c_i + U_i u_i / D_i
             I_λ^A += I^a,  p_λ^A += p^a
    pass 3:  a' = a_λ + c_i,  q̈_i = (u_i − U_iᵀ a') / D_i,  a_i = a' + S_i q̈_i
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import as_vector
from .kinematics import kinematics_and_inertias
from .model import PARENT, Model
from .rnea import check_state
from .spatial import crf_at, crm_at, dot6_at, mat6_vec_at


@njit(cache=True)
def aba_kernel(topology, joint_placement, axis, inertia, gravity, q, v, tau):
    """q̈ = FD(q, v, τ), inputs checked for NaN/inf."""
    check_state(q, v, tau, "tau: expected finite values, got NaN or inf")
    _, _, S, IA = kinematics_and_inertias(topology, joint_placement, axis, inertia, q)
    n = topology.shape[0]
    vel, c, pA = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    U, D, u = np.empty((n, 6)), np.empty(n), np.empty(n)
    h = np.empty((1, 6))
    for i in range(n):
        lam = topology[i, PARENT]
        for k in range(6):
            vel[i, k] = (0.0 if lam < 0 else vel[lam, k]) + S[i, k] * v[i]
        crm_at(vel, i, S, i, c, i)
        for k in range(6):
            c[i, k] *= v[i]
        mat6_vec_at(IA, i, vel, i, h, 0)
        crf_at(vel, i, h, 0, pA, i)
    for i in range(n - 1, -1, -1):
        mat6_vec_at(IA, i, S, i, U, i)
        D[i] = dot6_at(S, i, U, i)
        if not D[i] > 0.0:
            raise ValueError("model: articulated inertia about a joint axis is not positive (massless leaf?)")
        u[i] = tau[i] - dot6_at(S, i, pA, i)
        lam = topology[i, PARENT]
        if lam < 0:
            continue
        for r in range(6):
            for k in range(6):
                IA[i, r, k] -= U[i, r] * U[i, k] / D[i]
        mat6_vec_at(IA, i, c, i, h, 0)
        for r in range(6):
            pA[lam, r] += pA[i, r] + h[0, r] + U[i, r] * u[i] / D[i]
            for k in range(6):
                IA[lam, r, k] += IA[i, r, k]
    qdd = np.empty(n)
    acc = c  # a_i overwrites c_i once used
    for i in range(n):
        lam = topology[i, PARENT]
        for k in range(6):
            acc[i, k] += acc[lam, k] if lam >= 0 else (-gravity[k - 3] if k >= 3 else 0.0)
        qdd[i] = (u[i] - dot6_at(U, i, acc, i)) / D[i]
        for k in range(6):
            acc[i, k] += S[i, k] * qdd[i]
    return qdd


def aba(model: Model, q, v, tau) -> np.ndarray:
    """Forward dynamics q̈ (nv,) = M(q)⁻¹ (τ − C(q, v)·v − g(q))."""
    q, v, tau = as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v"), as_vector(tau, model.nv, "tau")
    return aba_kernel(model.topology, model.joint_placement, model.axis, model.inertia, model.gravity, q, v, tau)
