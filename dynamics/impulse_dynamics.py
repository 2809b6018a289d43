"""Impulse dynamics: the velocity jump of a rigid impact.

    M(q) (v⁺ − v) = Jᵀ Λ,     J v⁺ = −e J v

(Featherstone 2008, Sec. 11.3; Pinocchio's ``impulseDynamics``): the contacts' velocity
is reversed and scaled by the restitution coefficient e ∈ [0, 1]. With the KKT system of
:mod:`dynamics.contact_kkt`, r₁ = 0 and r₂ = −(1 + e) J v:

    Λ_op Λ = −(1 + e) J v,   v⁺ = v + M⁻¹Jᵀ Λ,   Λ_op = J M⁻¹ Jᵀ (+ μ I)            (1)

The kinetic energy lost is ½ (1 − e)/(1 + e) · Λᵀ Λ_op Λ ≥ 0 (μ = 0): none for e = 1.
"""
from __future__ import annotations

import numpy as np

from ._compile import njit
from ._checks import as_vector
from .contact_dynamics import OK, check_contacts, contact_kinematics, factorise_kkt, kkt_factors, raise_if_dependent
from .contact_kkt import kkt_solve
from .contact_workspace import new_contact_work
from .kinematics import all_finite
from .model import Model
from .workspace import call_views, model_workspace


@njit(cache=True)
def impulse_dynamics_passes(m, d, cw, q, v, ci, cf, restitution, damping):
    """Eq. 1 into cw.z = [v⁺; Λ] (nv + nc, 1), the rest as
    :func:`dynamics.contact_dynamics.contact_dynamics_passes`; returns the status."""
    if not all_finite(v):
        raise ValueError("v: expected finite values, got NaN or inf")
    contact_kinematics(m, d, q, ci, cf, cw.Rc, cw.o, cw.J, cw.scratch)
    nv, J = v.shape[0], cw.J
    status = factorise_kkt(m, d, *kkt_factors(cw), damping)
    if status != OK:
        return status
    r1, r2 = cw.z[:nv], cw.z[nv:]
    r1[:, :] = 0.0
    for a in range(r2.shape[0]):  # r₂ = −(1 + e) J v
        r2[a, 0] = 0.0
        for k in range(nv):
            r2[a, 0] -= (1.0 + restitution) * J[a, k] * v[k]
    kkt_solve(*kkt_factors(cw), r1, r2, cw.t)
    for k in range(nv):  # v⁺ = v + M⁻¹JᵀΛ
        r1[k, 0] = v[k] + r1[k, 0]
    return OK


@njit(cache=True)
def impulse_dynamics_kernel(buffer, q, v, ci, cf, restitution, damping):
    """(v⁺, Λ, status) of :func:`impulse_dynamics_passes` on a call buffer's model and workspace."""
    m, d = call_views(buffer)
    cw = new_contact_work(m.topology, ci, 0, True)
    status = impulse_dynamics_passes(m, d, cw, q, v, ci, cf, restitution, damping)
    nv = v.shape[0]
    return cw.z[:nv, 0], cw.z[nv:, 0], status


def check_impulse_call(model: Model, q, v, contacts, restitution, damping):
    """(q, v, packed contacts (ints, floats), e, μ) as the kernels take them; ValueError
    naming the first bad argument."""
    q, v = as_vector(q, model.nq, "q"), as_vector(v, model.nv, "v")
    ci, cf, damping = check_contacts(model, contacts, damping)
    return q, v, ci, cf, check_restitution(restitution), damping


def check_restitution(restitution) -> float:
    """``restitution`` as a float in [0, 1]; ValueError naming it otherwise."""
    try:
        e = float(restitution)
    except (TypeError, ValueError):
        e = np.nan
    if not 0.0 <= e <= 1.0:
        raise ValueError(f"restitution: expected a number in [0, 1], got {restitution!r}")
    return e


def impulse_dynamics(model: Model, q, v, contacts, restitution: float = 0.0, damping: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The velocity after an impact on the rigid ``contacts`` (a list of :class:`dynamics.Contact`).

    Returns ``(v_plus, impulse)``: v⁺ (nv,) and the contact impulses Λ (nc,) (stacked and
    expressed like the forces of :func:`dynamics.contact_dynamics`), such that
    M (v⁺ − v) = JᵀΛ and J v⁺ = −e J v, e = ``restitution`` ∈ [0, 1] (Pinocchio's
    ``impulseDynamics``). ``damping`` as in :func:`dynamics.contact_dynamics`.
    """
    args = check_impulse_call(model, q, v, contacts, restitution, damping)
    v_plus, impulse, status = impulse_dynamics_kernel(model_workspace(model), *args)
    raise_if_dependent(contacts, args[2], status)
    return v_plus, impulse
