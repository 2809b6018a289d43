"""Analytical first-order partial derivatives of forward dynamics q̈ = FD(q, q̇, τ).

Carpentier & Mansard 2018, eq. 24: differentiating ID(q, q̇, FD(q, q̇, τ)) = τ gives

    ∂FD/∂u = −M⁻¹(q) · ∂ID/∂u |_(q, q̇, q̈ = FD(q, q̇, τ)),   u ∈ {q, q̇},
    ∂FD/∂τ = M⁻¹(q)                                                    (eq. 17)

so one run of Carpentier's M⁻¹ algorithm (Carpentier 2018) and one pass of the RNEA
derivatives (:mod:`dynamics.rnea_derivatives`) evaluated at q̈ give all three.

q̈ itself comes from the same RNEA run: ID is affine in q̈, so the RNEA is run once at
q̈ = 0, giving the bias b = ID(q, q̇, 0) and FD = M⁻¹ (τ − b); its accelerations and
composite forces are then moved to q̈ by adding the joint-acceleration terms
Δa_i = Δa_λ(i) + S_i q̈_i and Δf_i^C = Σ_{k ⪰ i} I_k Δa_k. This replaces a separate ABA
and one more forward-kinematics pass.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._checks import as_forces, as_vector
from .kinematics import kinematics_and_inertias
from .minv import minv_passes
from .model import PARENT, Model
from .rnea import check_forces, check_state, rnea_passes_at
from .rnea_derivatives import rnea_derivative_passes
from .spatial import joint_velocity, mat6_vec_at


@njit(cache=True)
def add_joint_acceleration(topology, S, I, qdd, acc, fC):
    """Move RNEA accelerations ``acc`` and composite forces ``fC`` (n, 6), computed at
    q̈ = 0, to joint accelerations ``qdd`` (ID is affine in q̈)."""
    n = topology.shape[0]
    work = np.empty((2, n, 6))
    da, dfC = work[0], work[1]
    for i in range(n):
        lam = topology[i, PARENT]
        joint_velocity(topology, S, qdd, i, da, i)
        for k in range(6):
            if lam >= 0:
                da[i, k] += da[lam, k]
            acc[i, k] += da[i, k]
        mat6_vec_at(I, i, da, i, dfC, i)
    for i in range(n - 1, -1, -1):
        lam = topology[i, PARENT]
        for k in range(6):
            fC[i, k] += dfC[i, k]
            if lam >= 0:
                dfC[lam, k] += dfC[i, k]


@njit(cache=True)
def aba_derivatives_kernel(m, q, v, tau, f_ext):
    """(q̈ (nv,), ∂q̈/∂q (nv, nv), ∂q̈/∂q̇ (nv, nv), M⁻¹ (nv, nv)), inputs checked for NaN/inf."""
    return aba_derivatives_data(m, q, v, tau, f_ext)[:4]


@njit(cache=True)
def aba_derivatives_data(m, q, v, tau, f_ext):
    """:func:`aba_derivatives_kernel` plus the first-order data at q̈ that second-order
    passes start from: (S, I^C, B^C, rates = (Ψ̇, Ψ̈, Ṡ), joint vectors T) of
    :func:`dynamics.rnea_derivatives.rnea_derivative_passes`, as a 5th element."""
    check_state(q, v, tau, "tau: expected finite values, got NaN or inf")
    check_forces(f_ext)
    topology = m[0]
    R, p, S, I = kinematics_and_inertias(m, q)  # one forward kinematics for M⁻¹ and the RNEA
    n, nv = topology.shape[0], v.shape[0]
    Minv = minv_passes(topology, S, I.copy())
    S, I, vel, acc, fC, b = rnea_passes_at(topology, m[4], R, p, S, I, v, np.zeros(nv), f_ext)
    qdd = np.empty(nv)
    for r in range(nv):  # FD = M⁻¹ (τ − b)
        s = 0.0
        for k in range(nv):
            s += Minv[r, k] * (tau[k] - b[k])
        qdd[r] = s
    add_joint_acceleration(topology, S, I, qdd, acc, fC)
    out = np.empty((4, nv, nv))
    dtau_dq, dtau_dv, dqdd_dq, dqdd_dv = out[0], out[1], out[2], out[3]
    rates, BC, T = np.empty((3, nv, 6)), np.empty((n, 6, 6)), np.empty((nv, 6, 6))
    rnea_derivative_passes(topology, m[4], S, I, vel, acc, fC, rates, BC, T, dtau_dq, dtau_dv)
    for r in range(nv):  # eq. 24: −M⁻¹ ∂ID/∂u
        for c in range(nv):
            sq = sv = 0.0
            for k in range(nv):
                sq += Minv[r, k] * dtau_dq[k, c]
                sv += Minv[r, k] * dtau_dv[k, c]
            dqdd_dq[r, c], dqdd_dv[r, c] = -sq, -sv
    return qdd, dqdd_dq, dqdd_dv, Minv, (S, I, BC, rates, T)


def aba_derivatives(model: Model, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics q̈ = FD(q, v, τ, f_ext), gravity included;
    ``f_ext`` as in :func:`dynamics.rnea`.

    Returns ``(dqdd_dq, dqdd_dv, dqdd_dtau)``, each (nv, nv) with
    ``dqdd_dq[i, j] = ∂q̈_i/∂q_j`` (tangent direction j, as :func:`dynamics.rnea_derivatives`);
    ``dqdd_dtau`` = M(q)⁻¹ (symmetric).
    """
    q, v, tau = as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v"), as_vector(tau, model.nv, "tau")
    _, dqdd_dq, dqdd_dv, Minv = aba_derivatives_kernel(model.arrays, q, v, tau, as_forces(model, f_ext))
    return dqdd_dq, dqdd_dv, Minv
