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
from .contact import SCRATCH, add_contact_forces, contact_rows, contact_value_derivatives, world_force_derivative
from .contact_dynamics import OK, check_contact_call, raise_if_dependent
from .contact_dynamics_derivatives import contact_dynamics_derivative_passes, external_forces
from .contact_hessians import contact_value_hessians
from .contact_kkt import kkt_solve
from .impulse_dynamics_derivatives import body_velocities
from .model import IDX_V, NV, PARENT, Model
from .rnea import rnea_passes_at, subtract_external_force
from .rnea_derivatives import E, TMP, rnea_derivative_passes
from .rnea_second_derivatives_contracted import idsva_so_contracted_passes, new_so_work
from .spatial import crf_at, symmetrize
from .workspace import call_views, model_workspace


@njit(cache=True)
def adjoint(kkt, w):
    """[μ̂; ν] = K⁻ᵀ w (eq. 2), by K [μ̂; −ν] = [w_a; −w_λ] with the forward pass's factors."""
    nv, nc = kkt[0].shape[0], w.shape[0] - kkt[0].shape[0]
    r1, r2 = np.empty((nv, 1)), np.empty((nc, 1))
    r1[:, 0], r2[:, 0] = w[:nv], -w[nv:]
    mu_hat, nu = kkt_solve(*kkt, r1, r2)
    return mu_hat[:, 0], -nu[:, 0]


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
def inverse_dynamics_terms(m, d, ci, Rc, o, lam, mu_hat):
    """(Hqq, Hvv, Hqv, Mq) (4, nv, nv) of the contracted IDSVA-SO of μ̂ᵀ ID without the
    contact forces, at the point of the derivative pass that left its data in ``d`` with
    λ as external forces (:func:`remove_contact_forces`; d.T is changed)."""
    topology, nv = m.topology, d.S.shape[0]
    remove_contact_forces(topology, d, ci, Rc, o, lam)
    R = np.empty((4, nv, nv))
    idsva_so_contracted_passes(topology, (d.S, d.IC, d.BC, d.rates, d.T), mu_hat, R[0], R[1], R[2], R[3],
                               new_so_work(topology))
    return R


@njit(cache=True)
def force_terms(m, d, ci, cf, Rc, o, J, lam, mu_hat, nu, Mq):
    """(G_qz (nv, nv + nc) of eq. 6, ∂²_qq(−λᵀ J(q) μ̂) (nv, nv) of eq. 5, ∂(Jᵀν)/∂q (nv, nv),
    rows q_k); λ the contact forces (or impulses), Mq[j, k] = Σ_i μ̂_i ∂M_ij/∂q_k. Overwrites
    the body velocities and the RNEA data of ``d``."""
    topology, zero, S = m.topology, np.zeros(3), d.S
    nv, nc = J.shape[1], J.shape[0]
    # at the body velocities of μ̂: ∂²_qq(−λᵀ J μ̂) and ∂(J μ̂)/∂q
    body_velocities(topology, S, mu_hat, d.vel)
    Hb = np.empty((1, nv, nv))
    contact_value_hessians(topology, S, ci, cf, Rc, o, d.vel, d.vel, zero, 1, -lam, Hb)
    dJmu = np.empty((nc, nv))
    contact_value_derivatives(topology, S, ci, cf, Rc, o, d.vel, d.vel, zero, 1, dJmu, np.empty(SCRATCH))
    # ∂(Jᵀν)/∂q = −∂ID/∂q with ν as the only forces (v = q̈ = 0, g = 0: the inertias drop out)
    rnea_passes_at(topology, zero, d, np.zeros(nv), np.zeros(nv), external_forces(m, d, np.zeros((0, 6)), ci, Rc, o, nu))
    rnea_derivative_passes(topology, zero, S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, d.dq, d.dv)
    world_force_derivative(topology, S, ci, J, nu, d.dq, np.empty(6))
    Gqz, N = np.empty((nv, nv + nc)), np.empty((nv, nv))
    for k in range(nv):
        for j in range(nv):
            N[k, j] = -d.dq[j, k]
            Gqz[k, j] = Mq[j, k] + N[k, j]
        for r in range(nc):
            Gqz[k, nv + r] = -dJmu[r, k]
    return Gqz, Hb[0], N


@njit(cache=True)
def adjoint_hessians(Gqq, Gqv, Gvv, Gqz, Z):
    """Eq. 7: (Hqq, Hvv, Hqv[, Hqτ]) stacked (3 or 4, nv, nv) from the G terms and
    Z = ∂z/∂[q, v(, τ)] (nz, 2nv or 3nv)."""
    nv = Gqq.shape[0]
    P = Gqz @ Z
    H = np.empty((Z.shape[1] // nv + 1, nv, nv))
    for a in range(nv):
        for b in range(nv):
            H[0, a, b] = -(Gqq[a, b] + P[a, b] + P[b, a])
            H[1, a, b] = -Gvv[a, b]
            H[2, a, b] = -(Gqv[a, b] + P[a, nv + b])
            if H.shape[0] == 4:
                H[3, a, b] = -P[a, 2 * nv + b]
    symmetrize(H[0])  # exactly, not up to the rounding of its sums
    return H


@njit(cache=True)
def contact_so_contracted_kernel(buffer, q, v, tau, f_ext, ci, cf, damping, w):
    """:func:`contact_so_contracted_passes` on a call buffer's model and workspace."""
    m, d = call_views(buffer)
    return contact_so_contracted_passes(m, d, q, v, tau, f_ext, ci, cf, damping, w)


@njit(cache=True)
def contact_so_contracted_passes(m, d, q, v, tau, f_ext, ci, cf, damping, w):
    """(Hqq, Hvv, Hqv, Hqτ) of eq. 7 stacked (4, nv, nv), and the status of the forward pass."""
    qdd, lam, x, y, status, (Rc, o), kkt = contact_dynamics_derivative_passes(m, d, q, v, tau, f_ext, ci, cf,
                                                                              damping)
    nv = v.shape[0]
    if status != OK:
        return np.zeros((4, nv, nv)), status
    mu_hat, nu = adjoint(kkt, w)
    # eq. 5: ∂²(νᵀ a_c) at the body velocities and accelerations of (v, q̈)
    Ha = np.empty((3, nv, nv))
    contact_value_hessians(m.topology, d.S, ci, cf, Rc, o, d.vel, d.acc, m.gravity, 2, nu, Ha)
    # the contracted IDSVA-SO of μ̂ᵀ ID at (q, v, q̈), from the first-order pass's data
    Rqq, Rvv, Rqv, Mq = inverse_dynamics_terms(m, d, ci, Rc, o, lam, mu_hat)
    Gqz, Hb, _ = force_terms(m, d, ci, cf, Rc, o, kkt[2], lam, mu_hat, nu, Mq)
    return adjoint_hessians(Rqq + Hb + Ha[0], Rqv + Ha[1], Rvv + Ha[2], Gqz, np.vstack((x, y))), status


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
