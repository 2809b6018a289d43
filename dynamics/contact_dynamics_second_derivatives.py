"""Second-order partial derivatives of forward dynamics under rigid contacts, as full tensors.

The direct (forward-sensitivity) counterpart of the adjoint of
:mod:`dynamics.contact_dynamics_second_derivatives_contracted`, as FDSVA-SO's tensors
(Singh, Russell & Wensing, *On second-order derivatives of rigid-body dynamics*, 2023,
eq. 44–49) are to its contraction; for validation and for users who want every entry —
DDP and IPOPT take the contraction. z = [q̈; λ] solves F(u, z) = 0, u = (q, v, τ),

    F₁ = ID(q, v, q̈; f_ext) − J(q)ᵀλ − τ,     F₂ = a_c(q, v, q̈) + μλ                   (1)

(ID the RNEA, a_c = J q̈ + γ the contact acceleration, Carpentier & Mansard 2018), with
∂F/∂z = K = [M −Jᵀ; J μI] and Z = ∂z/∂u the first derivatives. Differentiating
F(u, z(u)) = 0 twice (F is affine in z, so F_zz = 0; F does not depend on τ but through −τ):

    K ∂²z/∂u_j∂w_k = −(F_{u_j w_k} + F_{u_j z} Z_{w_k} + F_{w_k z} Z_{u_j})               (2)

where only F_qz is nonzero, so, for the pages (qq, vv, qv, qτ), with P_w[:, j, k] = F_{q_j z} Z_{w_k}:

    qq: −K⁻¹ (F_qq + P_q + P_qᴿ),   vv: −K⁻¹ F_vv,   qv: −K⁻¹ (F_qv + P_v),   qτ: −K⁻¹ P_τ   (3)

(ᴿ swapping columns and pages, as FDSVA-SO's eq. 46). The terms of F:

    F₁,qq = ∂²ID/∂q² − ∂²_qq(Jᵀλ),  F₁,qv = ∂²ID/∂q∂v,  F₁,vv = ∂²ID/∂v²   [IDSVA-SO, Alg. 1]
    F₂,·· = ∂²a_c/∂(q, v)²                                   [each row's Hessians]      (4)
    F₁,{q_k q̈_j} = ∂M_·j/∂q_k,  F₁,{q_k λ_r} = −∂J_r·/∂q_k,  F₂,{q_k q̈_j} = ∂J_·j/∂q_k

with ∂²_qq((Jᵀλ)_j) the Hessian of the contact velocity at joint velocity e_j weighted by λ,
the rows of a_c and ∂J/∂q from :mod:`dynamics.contact_hessians` and
:mod:`dynamics.contact` (unit weights, unit joint velocities). q in local coordinates
(ε ↦ f(q ⊕ ε) at 0) throughout, as every Hessian above is. K is solved densely (this is
the validation path: O(n³) storage and work).
"""
from __future__ import annotations

import numpy as np

from ._compile import njit
from .contact import contact_value_derivatives
from .contact_dynamics import OK, check_contact_call, raise_if_dependent
from .contact_dynamics_derivatives import contact_dynamics_derivative_passes
from .contact_hessians import SIZE, contact_value_hessians
from .contact_workspace import new_contact_work
from .crba import crba
from .impulse_dynamics_derivatives import body_velocities, impulse_dynamics_derivative_passes
from .model import Model
from .rnea_second_derivatives import rnea_second_derivatives
from .workspace import call_views, model_workspace


@njit(cache=True)
def contact_tensor_terms(buffer, q, v, tau, f_ext, ci, cf, damping, restitution, impulse):
    """The contact terms of eq. 4 at the solution of contact (or, if ``impulse``, impulse)
    dynamics: (z (nz, 1), Z (nz, 3nv or 2nv), J (nc, nv), A (3, nc, nv, nv): the Hessians
    (qq, qv, vv) of each row of a_c (impulse: A[0] those in q of J(q) w, w = v⁺ + e v),
    dJ (nc, nv, nv) with dJ[r, i, k] = ∂J_ri/∂q_k, JH (nv, nv, nv) with JH[j] = ∂²_qq
    (J(q)ᵀλ)_j, status)."""
    m, d = call_views(buffer)
    topology, S = m.topology, d.S
    cw = new_contact_work(topology, ci, 1, impulse)
    if impulse:
        status = impulse_dynamics_derivative_passes(m, d, cw, q, v, ci, cf, restitution, damping)
    else:
        status = contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
    nv, nc = v.shape[0], cw.J.shape[0]
    A, dJ, JH = np.zeros((3, nc, nv, nv)), np.empty((nc, nv, nv)), np.empty((nv, nv, nv))
    if status != OK:
        return cw.z, cw.Z, cw.J, A, dJ, JH, status
    lam, x, H, D, W = cw.z[nv:, 0], np.zeros(nv), np.empty((3, nv, nv)), np.empty((nc, nv)), np.empty((2, SIZE))
    nu = np.zeros((nc, 1))[:, 0]  # unit weights, laid out as the adjoint's ν (one compiled Hessian kernel)
    if impulse:  # the velocity level at w = v⁺ + e v, no gravity
        for k in range(nv):
            x[k] = cw.z[k, 0] + restitution * v[k]
        body_velocities(topology, S, x, d.vel)
        x[:] = 0.0
    for r in range(nc):  # each row of a_c (d.vel, d.acc: the body motion at q̈) or of J w
        nu[r] = 1.0
        if impulse:
            contact_value_hessians(topology, S, ci, cf, (cw.Rc, cw.o), d.vel, d.vel, cw.zero3, 1, nu, H, W)
        else:
            contact_value_hessians(topology, S, ci, cf, (cw.Rc, cw.o), d.vel, d.acc, m.gravity, 2, nu, H, W)
        A[:, r] = H
        nu[r] = 0.0
    for i in range(nv):  # at the joint velocity e_i: ∂(J e_i)/∂q and ∂²_qq(λᵀ J e_i)
        x[i] = 1.0
        body_velocities(topology, S, x, d.vel)
        contact_value_derivatives(topology, S, ci, cf, cw.Rc, cw.o, d.vel, d.vel, cw.zero3, 1, D, cw.scratch)
        dJ[:, i, :] = D
        contact_value_hessians(topology, S, ci, cf, (cw.Rc, cw.o), d.vel, d.vel, cw.zero3, 1, lam, H, W)
        JH[i] = H[0]
        x[i] = 0.0
    return cw.z, cw.Z, cw.J, A, dJ, JH, status


def kkt_matrix(M: np.ndarray, J: np.ndarray, damping: float) -> np.ndarray:
    """K = [M −Jᵀ; J μI] (nv + nc, nv + nc), dense."""
    nc = J.shape[0]
    return np.block([[M, -J.T], [J, damping * np.eye(nc)]])


def z_derivative_pages(model: Model, q: np.ndarray, J: np.ndarray, damping: float, Fqq, Fqv, Fvv, dM: np.ndarray,
                       dJ: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, ...]:
    """Eq. 3: the pages (qq, vv, qv[, qτ]) of ∂²z, each (nz, nv, nv), from the second
    derivatives of F (nz, nv, nv), ∂M/∂q and ∂J/∂q (Fqz of :func:`force_jacobian_terms`) and
    Z = ∂z/∂[q, v(, τ)] (nz, 2nv or 3nv): one solve with the KKT matrix K at q for every page."""
    nv = model.nv
    Fqz = force_jacobian_terms(dM, dJ)
    P = [np.einsum("ajs,sk->ajk", Fqz, Z[:, b * nv:(b + 1) * nv]) for b in range(Z.shape[1] // nv)]
    rhs = [Fqq + P[0] + P[0].transpose(0, 2, 1), Fvv, Fqv + P[1]] + P[2:]
    K = kkt_matrix(crba(model, q), J, damping)
    nz = K.shape[0]
    X = -np.linalg.solve(K, np.concatenate([B.reshape(nz, nv * nv) for B in rhs], axis=1))
    pages = [X[:, i * nv * nv:(i + 1) * nv * nv].reshape(nz, nv, nv) for i in range(len(rhs))]
    pages[0] = 0.5 * (pages[0] + pages[0].transpose(0, 2, 1))  # symmetric exactly, not up to rounding
    return tuple(pages)


def force_jacobian_terms(dM: np.ndarray, dJ: np.ndarray) -> np.ndarray:
    """Fqz (nz, nv, nz) of eq. 4: rows F₁ then F₂, pages z = [q̈ (or v⁺); λ (or Λ)]:
    ∂M_ij/∂q_k, −∂J_ri/∂q_k and ∂J_rj/∂q_k, from dM[i, j, k] = ∂M_ij/∂q_k and
    dJ[r, i, k] = ∂J_ri/∂q_k."""
    nc, nv = dJ.shape[0], dJ.shape[1]
    Fqz = np.zeros((nv + nc, nv, nv + nc))
    Fqz[:nv, :, :nv] = dM.transpose(0, 2, 1)
    Fqz[:nv, :, nv:] = -dJ.transpose(1, 2, 0)
    Fqz[nv:, :, :nv] = dJ.transpose(0, 2, 1)
    return Fqz


def contact_dynamics_second_derivatives(model: Model, q, v, tau, contacts, f_ext=None, damping: float = 0.0
                                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partial derivatives of :func:`dynamics.contact_dynamics`, as full tensors (eq. 3).

    Returns ``(d2z_dq2, d2z_dv2, d2z_dqdv, d2z_dqdtau)``, each (nv + nc, nv, nv), of
    z = [q̈; λ], laid out T[i, j, k] = ∂²z_i/∂y_j∂z_k (d2z_dqdv[i, j, k] = ∂²z_i/∂q_j∂v_k;
    ∂²z/∂v∂τ = ∂²z/∂τ² = 0). q-derivatives in local coordinates (ε ↦ z(q ⊕ ε) at 0,
    d2z_dq2 symmetric in j, k), as :func:`dynamics.aba_second_derivatives`. Contracting
    the first axis with w gives :func:`dynamics.contact_dynamics_second_derivatives_contracted`,
    which is what solvers should call: this one is O(n³) in storage and work.
    """
    args = check_contact_call(model, q, v, tau, "tau", f_ext, contacts, damping)
    z, Z, J, A, dJ, JH, status = contact_tensor_terms(model_workspace(model), *args, 0.0, False)
    raise_if_dependent(contacts, args[4], status)
    nv = model.nv
    Iqq, Ivv, Iqv, dM = rnea_second_derivatives(model, args[0], args[1], z[:nv, 0].copy(), f_ext)
    Fqq, Fqv, Fvv = (np.concatenate((I, a)) for I, a in ((Iqq - JH, A[0]), (Iqv, A[1]), (Ivv, A[2])))
    return z_derivative_pages(model, args[0], J, args[6], Fqq, Fqv, Fvv, dM, dJ, Z)
