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

from ._compile import allocation_free, entry_point, njit
from .kinematics import kinematics_into
from .aba import NOT_POSITIVE
from .minv import minv_passes
from .model import PARENT, Model
from .rnea import check_forces, check_sizes, check_state, rnea_passes_at
from .rnea_derivatives import rnea_derivative_passes
from .spatial import copy_into, joint_velocity, mat6_vec_at
from .workspace import call_on_state, call_views, new_data


@allocation_free
def add_joint_acceleration(topology, S, I, qdd, acc, fC, work):
    """Move RNEA accelerations ``acc`` and composite forces ``fC`` (n, 6), computed at
    q̈ = 0, to joint accelerations ``qdd`` (ID is affine in q̈); work (2, n, 6) is scratch."""
    n = topology.shape[0]
    da, dfC = work[0], work[1]
    for i in range(n):
        parent = topology[i, PARENT]
        # Δa_i = Δa_λ(i) + S_i q̈_i,   a_i += Δa_i
        joint_velocity(topology, S, qdd, i, da, i)
        for k in range(6):
            if parent >= 0:
                da[i, k] += da[parent, k]
            acc[i, k] += da[i, k]
        # Δf_i = I_i Δa_i
        mat6_vec_at(I, i, da, i, dfC, i)
    for i in range(n - 1, -1, -1):
        parent = topology[i, PARENT]
        # f_i^C += Δf_i^C,   Δf_λ(i)^C += Δf_i^C
        for k in range(6):
            fC[i, k] += dfC[i, k]
            if parent >= 0:
                dfC[parent, k] += dfC[i, k]


@njit(cache=True)
def aba_derivatives_kernel(m, q, v, tau, f_ext):
    """(q̈ (nv,), ∂q̈/∂q (nv, nv), ∂q̈/∂q̇ (nv, nv), M⁻¹ (nv, nv)), inputs checked for NaN/inf."""
    return aba_derivatives_data(m, q, v, tau, f_ext)[:4]


@njit(cache=True)
def aba_derivatives_data(m, q, v, tau, f_ext):
    """:func:`aba_derivatives_kernel` plus the first-order data at q̈ that second-order
    passes start from: (S, I^C, B^C, rates = (Ψ̇, Ψ̈, Ṡ), joint vectors T) of
    :func:`dynamics.rnea_derivatives.rnea_derivative_passes`, as a 5th element."""
    nv = v.shape[0]
    d, qdd, out = new_data(m.topology), np.empty(nv), np.empty((3, nv, nv))
    if not aba_derivatives_into(m, d, q, v, tau, f_ext, qdd, out[0], out[1], out[2]):
        raise ValueError(NOT_POSITIVE)
    return qdd, out[0], out[1], out[2], (d.S, d.IC, d.BC, d.rates, d.T)


@entry_point
def aba_derivatives_call(buffer, q, v, tau, f_ext, out):
    """(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹) into out[0:3] and q̈ into out[3, 0] (out (4, nv, nv); the rest
    of out[3] is unused), model and workspace cut from ``buffer`` (a
    :func:`dynamics.workspace.call_buffer`); inputs checked."""
    m, d = call_views(buffer)
    check_sizes(m.topology, q, v, tau, f_ext)
    if not aba_derivatives_into(m, d, q, v, tau, f_ext, out[3, 0], out[0], out[1], out[2]):
        raise ValueError(NOT_POSITIVE)


@allocation_free
def aba_derivatives_into(m, d, q, v, tau, f_ext, qdd, dqdd_dq, dqdd_dv, Minv):
    """Write q̈, ∂q̈/∂q, ∂q̈/∂q̇ and M⁻¹ into the last four arguments, every intermediate in
    the workspace ``d`` (:mod:`dynamics.workspace`), which keeps the first-order data of
    :func:`aba_derivatives_data` (d.S, d.IC, d.BC, d.rates, d.T) and ∂τ/∂q, ∂τ/∂q̇ at
    q̈ (d.dq, d.dv); inputs checked for NaN/inf. False (outputs unset) if a D_i is not
    positive definite (:data:`dynamics.aba.NOT_POSITIVE`)."""
    check_state(q, v, tau, "tau: expected finite values, got NaN or inf")
    check_forces(f_ext)
    topology = m.topology
    kinematics_into(m, q, d)  # one forward kinematics for M⁻¹ and the RNEA
    nv = v.shape[0]
    # M⁻¹ by Carpentier's three passes, from I^A = I (d.I keeps the body inertias for the RNEA)
    copy_into(d.IA, d.I)
    if not minv_passes(topology, m.armature, d, d.IA, Minv):
        return False
    # nle = ID(q, v, 0) = C(q, v) v + g(q) − Σ J_iᵀ f_i^ext
    d.u[:] = 0.0
    rnea_passes_at(topology, m.gravity, m.armature, d, v, d.u, f_ext)
    nle = d.tau
    for r in range(nv):  # q̈ = FD = M⁻¹ (τ − nle)
        s = 0.0
        for k in range(nv):
            s += Minv[r, k] * (tau[k] - nle[k])
        qdd[r] = s
    # the RNEA's accelerations and forces at q̈ instead of 0 (ID is affine in q̈)
    add_joint_acceleration(topology, d.S, d.I, qdd, d.acc, d.fC, d.da)
    dtau_dq, dtau_dv = d.dq, d.dv
    # ∂ID/∂q, ∂ID/∂q̇ at (q, v, q̈)   (Carpentier & Mansard 2018, Alg. 2–3)
    rnea_derivative_passes(topology, m.gravity, d.S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, dtau_dq, dtau_dv)
    for r in range(nv):  # eq. 24: −M⁻¹ ∂ID/∂u, row by row (contiguous inner loops)
        dqdd_dq[r, :] = 0.0
        dqdd_dv[r, :] = 0.0
        for k in range(nv):
            mk = Minv[r, k]
            for c in range(nv):
                dqdd_dq[r, c] -= mk * dtau_dq[k, c]
                dqdd_dv[r, c] -= mk * dtau_dv[k, c]
    return True


def aba_derivatives(model: Model, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics q̈ = FD(q, v, τ, f_ext), gravity included;
    ``f_ext`` as in :func:`dynamics.rnea`.

    Returns ``(dqdd_dq, dqdd_dv, dqdd_dtau)``, each (nv, nv) with
    ``dqdd_dq[i, j] = ∂q̈_i/∂q_j`` (tangent direction j, as :func:`dynamics.rnea_derivatives`);
    ``dqdd_dtau`` = M(q)⁻¹ (symmetric).
    """
    out = call_on_state(aba_derivatives_call, model, q, v, tau, "tau", f_ext, np.empty((4, model.nv, model.nv)))
    return out[0], out[1], out[2]
