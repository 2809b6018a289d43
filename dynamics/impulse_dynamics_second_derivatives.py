"""Second-order partial derivatives of impulse dynamics (the velocity jump of an impact), as full tensors.

The direct counterpart of :mod:`dynamics.impulse_dynamics_second_derivatives_contracted`, by
eq. 2–3 of :mod:`dynamics.contact_dynamics_second_derivatives` on the impact's equations
(Featherstone 2008, Sec. 11.3; the constrained form of Carpentier & Mansard 2018): with
z = [v⁺; Λ], u = (q, v), Δv = v⁺ − v and w_v = v⁺ + e v,

    F₁ = M(q) Δv − J(q)ᵀΛ,     F₂ = J(q) w_v + μΛ,     ∂F/∂z = K = [M −Jᵀ; J μI]        (1)

    F₁,qq = ∂²_qq(M(q) Δv) − ∂²_qq(J(q)ᵀΛ),   F₂,qq = ∂²_qq(J(q) w_v)
    F₁,{q_k v_j} = −∂M_·j/∂q_k,   F₂,{q_k v_j} = e ∂J_·j/∂q_k,   F_vv = 0                 (2)

and F_qz as for contact dynamics (v⁺ in place of q̈, Λ of λ). ∂²_qq(M(q) Δv) is IDSVA-SO's
(Singh, Russell & Wensing 2023, Alg. 1) ∂²ID/∂q² at (q, 0, Δv) without gravity
(ID(q, 0, a) = M(q) a), which also gives ∂M/∂q. For validation: O(n³).
"""
from __future__ import annotations

import numpy as np

from ._checks import NO_FORCE
from .contact_dynamics import raise_if_dependent
from .contact_dynamics_second_derivatives import contact_tensor_terms, z_derivative_pages
from .impulse_dynamics import check_impulse_call
from .model import Model
from .rnea_second_derivatives import rnea_second_derivatives
from .workspace import model_workspace


def impulse_dynamics_second_derivatives(model: Model, q, v, contacts, restitution: float = 0.0, damping: float = 0.0
                                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partial derivatives of :func:`dynamics.impulse_dynamics`, as full tensors.

    Returns ``(d2z_dq2, d2z_dv2, d2z_dqdv)``, each (nv + nc, nv, nv), of z = [v⁺; Λ], laid
    out T[i, j, k] = ∂²z_i/∂y_j∂z_k (d2z_dqdv[i, j, k] = ∂²z_i/∂q_j∂v_k; d2z_dv2 is zero:
    z is linear in v). q-derivatives in local coordinates (ε ↦ z(q ⊕ ε) at 0). Contracting
    the first axis with w gives :func:`dynamics.impulse_dynamics_second_derivatives_contracted`.
    """
    q, v, ci, cf, e, mu = check_impulse_call(model, q, v, contacts, restitution, damping)
    nv = model.nv
    z, Z, J, A, dJ, JH, status = contact_tensor_terms(model_workspace(model), q, v, np.zeros(nv), NO_FORCE, ci,
                                                      cf, mu, e, True)
    raise_if_dependent(contacts, ci, status)
    Iqq, _, _, dM = rnea_second_derivatives(model.with_gravity((0.0, 0.0, 0.0)), q, np.zeros(nv), z[:nv, 0] - v)
    Fqq = np.concatenate((Iqq - JH, A[0]))
    Fqv = np.concatenate((-dM.transpose(0, 2, 1), e * dJ.transpose(0, 2, 1)))
    return z_derivative_pages(model, q, J, mu, Fqq, Fqv, np.zeros_like(Fqq), dM, dJ, Z)
