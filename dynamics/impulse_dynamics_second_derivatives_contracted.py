"""Contracted second-order derivatives of impulse dynamics (the velocity jump of an impact).

The adjoint of the impact's KKT system, as :mod:`dynamics.contact_dynamics_second_derivatives_contracted`
does for contact dynamics (its eq. 2, 3 and 7), on the equations of
:mod:`dynamics.impulse_dynamics_derivatives`: with z = [v⁺; Λ], u = (q, v), Δv = v⁺ − v and
w_v = v⁺ + e v,

    F₁ = ID₀(q, 0, Δv) − J(q)ᵀΛ,   F₂ = J(q) w_v + μΛ,   K = ∂F/∂z = [M −Jᵀ; J μI]     (1)

(ID₀ the RNEA without gravity: M(q) Δv), y = [μ̂; ν] = K⁻ᵀ w, and G = yᵀF:

    G_qq = ∂²_qq(μ̂ᵀ M(q) Δv) + ∂²_qq(−Λᵀ J(q) μ̂) + ∂²_qq(νᵀ J(q) w_v)                 (2)
    G_{q_k v_j} = −Σ_i μ̂_i ∂M_ij/∂q_k + e ∂(Jᵀν)_j/∂q_k,   G_vv = 0                  (3)
    G_{q_k v⁺_j} = Σ_i μ̂_i ∂M_ij/∂q_k + ∂(Jᵀν)_j/∂q_k,   G_{q_k Λ_r} = −∂(J μ̂)_r/∂q_k  (4)

(the first term of (2) and the M terms by the contracted IDSVA-SO at (q, 0, Δv) without
gravity, started from the data of the first-order pass, the J terms by :mod:`dynamics.contact_hessians` at the velocities μ̂ and w_v), and
the Hessians of w·[v⁺; Λ] are −(G_uu' + G_uz Z_u' + Z_uᵀ G_zu') with Z the first
derivatives; Hvv = 0 (z is linear in v).
"""
from __future__ import annotations

import numpy as np

from ._compile import njit
from ._checks import as_vector
from .contact import contact_rows
from .contact_dynamics import OK, raise_if_dependent
from .contact_dynamics_second_derivatives_contracted import adjoint, adjoint_hessians, force_terms, inverse_dynamics_terms
from .contact_hessians import contact_value_hessians
from .impulse_dynamics import check_impulse_call
from .impulse_dynamics_derivatives import body_velocities, impulse_dynamics_derivative_passes
from .model import Model
from .workspace import call_views, model_workspace


@njit(cache=True)
def impulse_so_contracted_kernel(buffer, q, v, ci, cf, restitution, damping, w):
    """:func:`impulse_so_contracted_passes` on a call buffer's model and workspace."""
    m, d = call_views(buffer)
    return impulse_so_contracted_passes(m, d, q, v, ci, cf, restitution, damping, w)


@njit(cache=True)
def impulse_so_contracted_passes(m, d, q, v, ci, cf, restitution, damping, w):
    """(Hqq, Hvv, Hqv) stacked (3, nv, nv), and the status of the forward pass."""
    v_plus, imp, x, y, status, (Rc, o), kkt = impulse_dynamics_derivative_passes(m, d, q, v, ci, cf, restitution,
                                                                                 damping)
    nv = v.shape[0]
    if status != OK:
        return np.zeros((3, nv, nv)), status
    mu_hat, nu = adjoint(kkt, w)
    # ∂²_qq(μ̂ᵀ M(q) Δv) and Mq by the contracted IDSVA-SO at (q, 0, Δv), no gravity: the
    # first-order pass's RNEA, with Λ taken back out
    Rqq, _, _, Mq = inverse_dynamics_terms(m, d, ci, Rc, o, imp, mu_hat)
    # ∂²_qq(νᵀ J(q) w_v) at the body velocities of w_v = v⁺ + e v
    body_velocities(m.topology, d.S, v_plus + restitution * v, d.vel)
    Hc = np.empty((1, nv, nv))
    contact_value_hessians(m.topology, d.S, ci, cf, Rc, o, d.vel, d.vel, np.zeros(3), 1, nu, Hc)
    Gqz, Hb, N = force_terms(m, d, ci, cf, Rc, o, kkt[2], imp, mu_hat, nu, Mq)
    return adjoint_hessians(Rqq + Hb + Hc[0], restitution * N - Mq.T, np.zeros((nv, nv)), Gqz,
                            np.vstack((x, y))), status


def impulse_dynamics_second_derivatives_contracted(model: Model, q, v, contacts, w, restitution: float = 0.0,
                                                   damping: float = 0.0
                                                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partial derivatives of :func:`dynamics.impulse_dynamics` contracted with w.

    ``w`` (nv + nc,) weighs [v⁺; Λ]; returns ``(Hqq, Hvv, Hqv)``, each (nv, nv), the Hessians
    of w·[v⁺; Λ] (``Hqv[j, k] = ∂²/∂q_j∂v_k``; Hvv is zero: v⁺ and Λ are linear in v).
    q-derivatives in local coordinates (second derivatives of ε ↦ f(q ⊕ ε) at 0).
    """
    args = check_impulse_call(model, q, v, contacts, restitution, damping)
    w = as_vector(w, model.nv + contact_rows(args[2]), "w")
    if not np.all(np.isfinite(w)):
        raise ValueError("w: expected finite values, got NaN or inf")
    H, status = impulse_so_contracted_kernel(model_workspace(model), *args, w)
    raise_if_dependent(contacts, args[2], status)
    return H[0], H[1], H[2]
