"""First-order derivatives of forward dynamics under rigid contacts.

The constrained form of Carpentier & Mansard, *Analytical derivatives of rigid body
dynamics algorithms* (RSS 2018), eq. 24 (as in Pinocchio's
``computeConstraintDynamicsDerivatives``). At the solution (q̈, λ) of
:mod:`dynamics.contact_dynamics`,

    ID(q, v, q̈, λ) := M q̈ + b − Jᵀλ = τ,     a_c(q, v, q̈) := J q̈ + γ = −μ λ     (1)

(ID with the contact forces as external forces, a_c the contact acceleration with the
Baumgarte terms). Differentiating (1) along u ∈ {q, v, τ}:

    [M  −Jᵀ] [∂q̈/∂u]   [∂τ/∂u − ∂ID/∂u]
    [J   μI] [∂λ/∂u ] = [   −∂a_c/∂u   ]                                        (2)

where ∂ID/∂u (q̈ and λ held) is the RNEA derivative of Carpentier & Mansard 2018 (Alg. 2–3)
with λ as external forces, plus :func:`dynamics.contact.world_force_derivative` for forces
held in world axes, and ∂a_c/∂u (q̈ held) is :func:`dynamics.contact.contact_value_derivatives`.
System (2) is solved with the factorisation of the forward pass
(:mod:`dynamics.contact_kkt`): the sparse LTDL factor of M and the Cholesky factor
of Λ, for all 3·nv right-hand sides at once.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, njit
from .contact import add_contact_forces, contact_value_derivatives, world_force_derivative
from .contact_dynamics import OK, check_contact_call, contact_dynamics_passes, kkt_factors, raise_if_dependent
from .contact_kkt import kkt_solve
from .contact_workspace import new_contact_work
from .model import Model
from .rnea import rnea_passes_at
from .rnea_derivatives import rnea_derivative_passes
from .workspace import call_views, model_workspace


@allocation_free
def external_forces(m, d, f_ext, ci, Rc, o, lam, fx):
    """fx (n, 6) ← f_ext (or zeros) plus the contact forces λ as external forces."""
    for i in range(fx.shape[0]):  # loops: an array-to-array copy may allocate (if they overlap)
        for r in range(6):
            fx[i, r] = f_ext[i, r] if f_ext.shape[0] > 0 else 0.0
    add_contact_forces(d.R, d.p, ci, Rc, o, lam, fx)


@njit(cache=True)
def contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping):
    """Eq. 2: [q̈; λ] into cw.z and ∂[q̈; λ]/∂[q, v, τ] (nv + nc, 3nv) into cw.Z; returns the
    status of :func:`dynamics.contact_dynamics.contact_dynamics_passes`. d.vel, d.acc hold
    the body velocities and accelerations at q̈."""
    status = contact_dynamics_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
    if status != OK:
        return status
    topology, gravity, nv = m.topology, m.gravity, v.shape[0]
    qdd, lam = cw.z[:nv, 0], cw.z[nv:, 0]
    # ∂ID/∂q, ∂ID/∂v at (q, v, q̈) with λ as external forces
    external_forces(m, d, f_ext, ci, cw.Rc, cw.o, lam, cw.fx)
    rnea_passes_at(topology, gravity, m.armature, d, v, qdd, cw.fx)
    rnea_derivative_passes(topology, gravity, d.S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, d.dq, d.dv)
    world_force_derivative(topology, d.S, ci, cw.J, lam, d.dq, cw.scratch)
    # ∂a_c/∂q, ∂a_c/∂v at q̈
    contact_value_derivatives(topology, d.S, ci, cf, cw.Rc, cw.o, d.vel, d.acc, gravity, 2, cw.da, cw.scratch)
    # eq. 2 for u = q, v, τ: r₁ = [−∂ID/∂q, −∂ID/∂v, I],  r₂ = [−∂a_c/∂q, −∂a_c/∂v, 0]
    r1, r2 = cw.Z[:nv], cw.Z[nv:]
    r1[:, :] = 0.0
    for i in range(nv):
        r1[i, 2 * nv + i] = 1.0
        for k in range(nv):
            r1[i, k], r1[i, nv + k] = -d.dq[i, k], -d.dv[i, k]
    for a in range(r2.shape[0]):
        for k in range(2 * nv):
            r2[a, k] = -cw.da[a, k]
        for k in range(2 * nv, 3 * nv):
            r2[a, k] = 0.0
    kkt_solve(*kkt_factors(cw), r1, r2, cw.tZ)
    return OK


@njit(cache=True)
def contact_dynamics_derivatives_kernel(buffer, q, v, tau, f_ext, ci, cf, damping):
    """(∂[q̈; λ]/∂[q, v, τ], status) of :func:`contact_dynamics_derivative_passes` on a call
    buffer's model and workspace."""
    m, d = call_views(buffer)
    cw = new_contact_work(m.topology, ci, 1, False)
    status = contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ci, cf, damping)
    return cw.Z, status


def contact_dynamics_derivatives(model: Model, q, v, tau, contacts, f_ext=None, damping: float = 0.0
                                 ) -> tuple[np.ndarray, ...]:
    """First-order partial derivatives of :func:`dynamics.contact_dynamics`.

    Returns ``(dqdd_dq, dqdd_dv, dqdd_dtau, dlam_dq, dlam_dv, dlam_dtau)``: (nv, nv) for
    q̈, (nc, nv) for λ; derivatives with respect to q along the tangent directions
    (q ⊕ ε, as :func:`dynamics.aba_derivatives`). ``f_ext`` is held fixed in the joints'
    frames (as in :func:`dynamics.rnea_derivatives`).
    """
    args = check_contact_call(model, q, v, tau, "tau", f_ext, contacts, damping)
    Z, status = contact_dynamics_derivatives_kernel(model_workspace(model), *args)
    raise_if_dependent(contacts, args[4], status)
    nv = model.nv
    x, y = Z[:nv], Z[nv:]
    return x[:, :nv], x[:, nv:2 * nv], x[:, 2 * nv:], y[:, :nv], y[:, nv:2 * nv], y[:, 2 * nv:]
