"""Contracted second-order derivatives of forward dynamics under rigid contacts.

For weights w = [w_a; w_λ] (nv + nc,) on z = [q̈; λ] of :mod:`dynamics.contact_dynamics`,
this computes the Hessians of φ = wᵀz with respect to (q, v, τ) — q in local coordinates,
ε ↦ φ(q ⊕ ε) at 0 — without forming any third-order tensor: the adjoint of the KKT system,
the way FDSVA-SO follows from IDSVA-SO (Singh, Russell & Wensing, *On second-order
derivatives of rigid-body dynamics*, 2023, eq. 44–49), here for the constrained form of
Carpentier & Mansard 2018.

Derivation. z solves F(u, z) = 0 with u = (q, v, τ) and

    F₁ = ID(q, v, q̈; f_ext) − J(q)ᵀλ − τ,     F₂ = a_c(q, v, q̈) + μλ                   (1)

(ID the RNEA, a_c = J q̈ + γ the contact acceleration), whose Jacobian in z is the KKT
matrix K = [M −Jᵀ; J μI]. With Z = ∂z/∂u = −K⁻¹ F_u (the first derivatives of
:mod:`dynamics.contact_dynamics_derivatives`) and the adjoint

    y = [μ̂; ν] = K⁻ᵀ w,                                                               (2)

∂φ/∂u = −yᵀF_u, and differentiating F(u, z(u)) = 0 twice, with G = yᵀF (y held),

    ∂²φ/∂u∂u' = −(G_uu' + G_uz Z_u' + Z_uᵀ G_zu' + Z_uᵀ G_zz Z_u')                     (3)

where G_zz = 0 (F is affine in z) and G_vz = G_τz = G_ττ = G_qτ = G_vτ = 0. The terms:

    G = μ̂ᵀ ID − λᵀ J(q) μ̂ − μ̂ᵀτ + νᵀ a_c + μ νᵀλ                                      (4)
    G_uu' (u, u' ∈ {q, v}) = ∂²(μ̂ᵀID) [the contracted IDSVA-SO, with f_ext]
                        + ∂²_qq (−λᵀ J(q) μ̂) [the contact velocity at μ̂, weighted by −λ]
                        + ∂²(νᵀ a_c) [the contact acceleration, weighted by ν]          (5)
    G_{q_k q̈_j} = Σ_i μ̂_i ∂M_ij/∂q_k + ∂(Jᵀν)_j/∂q_k,   G_{q_k λ_r} = −∂(J μ̂)_r/∂q_k     (6)

(:mod:`dynamics.contact_hessians` for the contact terms of (5); the contracted IDSVA-SO starts
from the first-order data of the derivative pass, whose RNEA had λ as external forces: of
its joint vectors only e = … + S_c ×* f_i^C depends on the forces, linearly, so taking λ back
out is e_c += S_c ×* W_i, W_i the world wrench of the contact forces on the subtree of body
i; ∂(Jᵀν)/∂q is −∂ID/∂q of
the RNEA with ν as the only, external, forces at v = 0, q̈ = 0 and no gravity, and
∂(Jμ̂)/∂q the velocity-level derivative of :mod:`dynamics.contact` at μ̂). Hence

    Hqq = −(G_qq + P_q + P_qᵀ),   Hqv = −(G_qv + P_v),   Hvv = −G_vv,   Hqτ = −P_τ       (7)

with P_u = G_qz Z_u (nv, nv). The adjoint (2) is one more solve with the factorisation of
the forward pass: Kᵀ[μ̂; ν] = w ⇔ K[μ̂; −ν] = [w_a; −w_λ].
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, njit
from ._checks import as_vector
from .contact import add_contact_forces, contact_rows, contact_value_derivatives, world_force_derivative
from .contact_dynamics import OK, check_contact_call, kkt_factors, raise_if_dependent
from .contact_dynamics_derivatives import contact_dynamics_derivative_passes, external_forces
from .contact_hessians import contact_value_hessians
from .contact_kkt import kkt_solve
from .contact_workspace import new_contact_work
from .impulse_dynamics_derivatives import body_velocities
from .model import IDX_V, NV, PARENT, Model
from .rnea import rnea_passes_at, subtract_external_force
from .rnea_derivatives import E, TMP, rnea_derivative_passes
from .rnea_second_derivatives_contracted import idsva_so_contracted_passes, new_so_work
from .spatial import crf_at, symmetrize
from .workspace import call_views, model_workspace


@njit(cache=True)
def adjoint(cw, w):
    """cw.y = [μ̂; ν] = K⁻ᵀ w (eq. 2), by K [μ̂; −ν] = [w_a; −w_λ] with the forward pass's
    factors; returns the views (μ̂, ν)."""
    nv = cw.H.shape[0]
    r1, r2 = cw.y[:nv], cw.y[nv:]
    r1[:, 0] = w[:nv]
    for a in range(r2.shape[0]):
        r2[a, 0] = -w[nv + a]
    kkt_solve(*kkt_factors(cw), r1, r2, cw.t)
    for a in range(r2.shape[0]):
        r2[a, 0] = -r2[a, 0]
    return r1[:, 0], r2[:, 0]


@allocation_free
def remove_contact_forces(topology, d, ci, Rc, o, lam):
    """The joint vectors d.T of a derivative pass whose RNEA had the contact forces λ as
    external forces (:func:`dynamics.rnea_derivatives.rnea_derivative_passes`) made those
    without them: e_c = … + S_c ×* f_i^C is the only one that depends on the forces, and
    f_i^C with λ is f_i^C without minus W_i, the world wrench of the contact forces on the
    subtree of body i, so e_c += S_c ×* W_i. d.da is scratch."""
    fx, F = d.da[0], d.da[1]
    fx[:, :] = 0.0
    add_contact_forces(d.R, d.p, ci, Rc, o, lam, fx)
    F[:, :] = 0.0
    for i in range(topology.shape[0] - 1, -1, -1):  # F_i = −W_i, complete over ν(i) here
        subtract_external_force(d.R, d.p, fx, i, F)
        for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            # e_c += S_c ×* W_i = −S_c ×* F_i
            crf_at(d.S, c, F, i, d.T[c], TMP)
            for r in range(6):
                d.T[c, E, r] -= d.T[c, TMP, r]
        parent = topology[i, PARENT]
        if parent >= 0:
            for r in range(6):
                F[parent, r] += F[i, r]


@njit(cache=True)
def inverse_dynamics_terms(m, d, cw, sow, ci, lam, mu_hat):
    """cw.R = (Hqq, Hvv, Hqv, Mq) (4, nv, nv) of the contracted IDSVA-SO of μ̂ᵀ ID without
    the contact forces, at the point of the derivative pass that left its data in ``d``
    with λ as external forces (:func:`remove_contact_forces`; d.T is changed); ``sow`` the
    work of :func:`dynamics.rnea_second_derivatives_contracted.new_so_work`."""
    topology, R = m.topology, cw.R
    remove_contact_forces(topology, d, ci, cw.Rc, cw.o, lam)
    idsva_so_contracted_passes(topology, (d.S, d.IC, d.BC, d.rates, d.T), mu_hat, R[0], R[1], R[2], R[3], sow)


@njit(cache=True)
def force_terms(m, d, cw, ci, cf, lam, mu_hat, nu):
    """cw.Gqz = G_qz (nv, nv + nc) of eq. 6, cw.Hb[0] = ∂²_qq(−λᵀ J(q) μ̂) of eq. 5,
    cw.N = ∂(Jᵀν)/∂q (nv, nv), rows q_k; λ the contact forces (or impulses), with
    cw.R[3] = Mq, Mq[j, k] = Σ_i μ̂_i ∂M_ij/∂q_k. Overwrites the body velocities and the
    RNEA data of ``d``."""
    topology, zero, S, J, Mq = m.topology, cw.zero3, d.S, cw.J, cw.R[3]
    nv, nc = J.shape[1], J.shape[0]
    # at the body velocities of μ̂: ∂²_qq(−λᵀ J μ̂) and ∂(J μ̂)/∂q
    body_velocities(topology, S, mu_hat, d.vel)
    for r in range(nc):
        cw.neg[r] = -lam[r]
    contact_value_hessians(topology, S, ci, cf, (cw.Rc, cw.o), d.vel, d.vel, zero, 1, cw.neg, cw.Hb, cw.dual)
    contact_value_derivatives(topology, S, ci, cf, cw.Rc, cw.o, d.vel, d.vel, zero, 1, cw.dJmu, cw.scratch)
    # ∂(Jᵀν)/∂q = −∂ID/∂q with ν as the only forces (v = q̈ = 0, g = 0: the inertias drop out)
    external_forces(m, d, cw.no_force, ci, cw.Rc, cw.o, nu, cw.fx)
    rnea_passes_at(topology, zero, m.armature, d, cw.zeros, cw.zeros, cw.fx)
    rnea_derivative_passes(topology, zero, S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, d.dq, d.dv)
    world_force_derivative(topology, S, ci, J, nu, d.dq, cw.scratch)
    Gqz, N = cw.Gqz, cw.N
    for k in range(nv):
        for j in range(nv):
            N[k, j] = -d.dq[j, k]
            Gqz[k, j] = Mq[j, k] + N[k, j]
        for r in range(nc):
            Gqz[k, nv + r] = -cw.dJmu[r, k]


@njit(cache=True)
def adjoint_hessians(cw):
    """Eq. 7: cw.out = (Hqq, Hvv, Hqv[, Hqτ]) (4 or 3, nv, nv) from cw.G = (G_qq, G_qv,
    G_vv), cw.Gqz and Z = cw.Z = ∂z/∂[q, v(, τ)] (nz, 2nv or 3nv)."""
    G, H, P = cw.G, cw.out, cw.P
    nv = G.shape[1]
    np.dot(cw.Gqz, cw.Z, P)
    for a in range(nv):
        for b in range(nv):
            H[0, a, b] = -(G[0, a, b] + P[a, b] + P[b, a])
            H[1, a, b] = -G[2, a, b]
            H[2, a, b] = -(G[1, a, b] + P[a, nv + b])
            if H.shape[0] == 4:
                H[3, a, b] = -P[a, 2 * nv + b]
    symmetrize(H[0])  # exactly, not up to the rounding of its sums


@njit(cache=True)
def contact_so_contracted_kernel(buffer, q, v, tau, f_ext, ci, cf, damping, w):
    """:func:`contact_so_contracted_passes` on a call buffer's model and workspace:
    ((Hqq, Hvv, Hqv, Hqτ) (4, nv, nv), status)."""
    m, d = call_views(buffer)
    cw = new_contact_work(m.topology, ci, 2, False)
    status = contact_so_contracted_passes(m, d, cw, new_so_work(m.topology), q, v, tau, f_ext, ci, cf, damping, w)
    return cw.out, status


@njit(cache=True)
def contact_so_contracted_passes(m, d, cw, sow, q, v, tau, f_ext, ci, cf, damping, w):
    """(Hqq, Hvv, Hqv, Hqτ) of eq. 7 into cw.out (4, nv, nv); returns the status of the
    forward pass (cw.out unset unless −1)."""
    status = contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
    if status != OK:
        return status
    nv = v.shape[0]
    mu_hat, nu = adjoint(cw, w)
    # eq. 5: ∂²(νᵀ a_c) at the body velocities and accelerations of (v, q̈)
    Ha, R, G = cw.Ha, cw.R, cw.G
    contact_value_hessians(m.topology, d.S, ci, cf, (cw.Rc, cw.o), d.vel, d.acc, m.gravity, 2, nu, Ha, cw.dual)
    # the contracted IDSVA-SO of μ̂ᵀ ID at (q, v, q̈), from the first-order pass's data
    inverse_dynamics_terms(m, d, cw, sow, ci, cw.z[nv:, 0], mu_hat)
    force_terms(m, d, cw, ci, cf, cw.z[nv:, 0], mu_hat, nu)
    for a in range(nv):  # G_qq, G_qv, G_vv of eq. 5
        for b in range(nv):
            G[0, a, b] = R[0, a, b] + cw.Hb[0, a, b] + Ha[0, a, b]
            G[1, a, b] = R[2, a, b] + Ha[1, a, b]
            G[2, a, b] = R[1, a, b] + Ha[2, a, b]
    adjoint_hessians(cw)
    return OK


def contact_dynamics_second_derivatives_contracted(model: Model, q, v, tau, contacts, w, f_ext=None,
                                                   damping: float = 0.0
                                                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partial derivatives of :func:`dynamics.contact_dynamics` contracted with w.

    ``w`` (nv + nc,) weighs [q̈; λ]; returns ``(Hqq, Hvv, Hqv, Hqtau)``, each (nv, nv), the
    Hessians of w·[q̈; λ]: ``Hqv[j, k] = ∂²/∂q_j∂v_k``, ``Hqtau[j, k] = ∂²/∂q_j∂τ_k`` (the
    Hessians in (v, τ) and (τ, τ) vanish). q-derivatives in local coordinates (second
    derivatives of ε ↦ f(q ⊕ ε) at 0, as :func:`dynamics.aba_second_derivatives_contracted`).
    """
    args = check_contact_call(model, q, v, tau, "tau", f_ext, contacts, damping)
    w = as_vector(w, model.nv + contact_rows(args[4]), "w")
    if not np.all(np.isfinite(w)):
        raise ValueError("w: expected finite values, got NaN or inf")
    H, status = contact_so_contracted_kernel(model_workspace(model), *args, w)
    raise_if_dependent(contacts, args[4], status)
    return H[0], H[1], H[2], H[3]
