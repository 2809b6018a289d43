"""First-order derivatives of impulse dynamics (the velocity jump of a rigid impact).

The constrained form of Carpentier & Mansard, *Analytical derivatives of rigid body
dynamics algorithms* (RSS 2018), applied to the impact equations of
:mod:`dynamics.impulse_dynamics` (as Pinocchio's ``computeImpulseDynamicsDerivatives``).
At the solution (v⁺, Λ),

    ID₀(q, Δv, Λ) := M(q) Δv − J(q)ᵀ Λ = 0,   Δv = v⁺ − v,
    c(q, w) := J(q) w = −μ Λ,                  w = v⁺ + e v                         (1)

where ID₀ is the RNEA without gravity at zero velocity and acceleration Δv, with Λ as
external forces (M(q) Δv exactly). Differentiating (1):

    [M  −Jᵀ] [∂v⁺/∂q]   [−∂ID₀/∂q]        [M  −Jᵀ] [∂v⁺/∂v]   [    M    ]
    [J   μI] [∂Λ/∂q ] = [−∂c/∂q  ],       [J   μI] [∂Λ/∂v ] = [−e J     ]       (2)

so ∂Λ/∂v = −(1 + e) Λ_op⁻¹ J and ∂v⁺/∂v = I + M⁻¹Jᵀ ∂Λ/∂v (the full derivative; Pinocchio
stores it minus the identity). ∂ID₀/∂q is the RNEA derivative of Carpentier & Mansard 2018
(Alg. 2–3) with :func:`dynamics.contact.world_force_derivative`, ∂c/∂q the velocity
level of :func:`dynamics.contact.contact_value_derivatives` at the body velocities of w.
"""
from __future__ import annotations

import numpy as np

from ._compile import njit
from .contact import contact_value_derivatives, world_force_derivative
from .contact_dynamics import OK, kkt_factors, raise_if_dependent
from .contact_dynamics_derivatives import external_forces
from .contact_kkt import kkt_solve
from .contact_workspace import new_contact_work
from .impulse_dynamics import check_impulse_call, impulse_dynamics_passes
from .model import PARENT, Model
from .rnea import rnea_passes_at
from .rnea_derivatives import rnea_derivative_passes
from .spatial import joint_velocity
from .workspace import call_views, model_workspace


@njit(cache=True)
def body_velocities(topology, S, w, vel):
    """vel (n, 6) ← the world body velocities v_i = v_λ(i) + S_i w_i at joint velocity w."""
    for i in range(topology.shape[0]):
        joint_velocity(topology, S, w, i, vel, i)
        parent = topology[i, PARENT]
        if parent >= 0:
            for k in range(6):
                vel[i, k] += vel[parent, k]


@njit(cache=True)
def impulse_dynamics_derivative_passes(m, d, cw, q, v, ci, cf, restitution, damping):
    """Eq. 2: [v⁺; Λ] into cw.z and ∂[v⁺; Λ]/∂[q, v] (nv + nc, 2nv) into cw.Z; returns the
    status of :func:`dynamics.impulse_dynamics.impulse_dynamics_passes`."""
    status = impulse_dynamics_passes(m, d, cw, q, v, ci, cf, restitution, damping)
    if status != OK:
        return status
    topology, zero, J, nv = m.topology, cw.zero3, cw.J, v.shape[0]
    v_plus, imp, w = cw.z[:nv, 0], cw.z[nv:, 0], cw.vec
    # ∂c/∂q at w = v⁺ + e v
    for k in range(nv):
        w[k] = v_plus[k] + restitution * v[k]
    body_velocities(topology, d.S, w, d.vel)
    dc_dq = cw.da
    contact_value_derivatives(topology, d.S, ci, cf, cw.Rc, cw.o, d.vel, d.vel, zero, 1, dc_dq, cw.scratch)
    # ∂ID₀/∂q at (q, 0, Δv) with Λ as external forces, no gravity
    for k in range(nv):
        w[k] = v_plus[k] - v[k]
    external_forces(m, d, cw.no_force, ci, cw.Rc, cw.o, imp, cw.fx)
    rnea_passes_at(topology, zero, m.armature, d, cw.zeros, w, cw.fx)
    rnea_derivative_passes(topology, zero, d.S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, d.dq, d.dv)
    world_force_derivative(topology, d.S, ci, J, imp, d.dq, cw.scratch)
    # eq. 2: r₁ = [−∂ID₀/∂q, 0], r₂ = [−∂c/∂q, −(1 + e) J]; ∂v⁺/∂v = I + x[:, nv:]
    r1, r2 = cw.Z[:nv], cw.Z[nv:]
    for i in range(nv):
        for k in range(nv):
            r1[i, k], r1[i, nv + k] = -d.dq[i, k], 0.0
    for a in range(r2.shape[0]):
        for k in range(nv):
            r2[a, k], r2[a, nv + k] = -dc_dq[a, k], -(1.0 + restitution) * J[a, k]
    kkt_solve(*kkt_factors(cw), r1, r2, cw.tZ)
    for i in range(nv):
        r1[i, nv + i] += 1.0
    return OK


@njit(cache=True)
def impulse_dynamics_derivatives_kernel(buffer, q, v, ci, cf, restitution, damping):
    """(∂[v⁺; Λ]/∂[q, v], status) of :func:`impulse_dynamics_derivative_passes` on a call
    buffer's model and workspace."""
    m, d = call_views(buffer)
    cw = new_contact_work(m.topology, ci, 1, True)
    status = impulse_dynamics_derivative_passes(m, d, cw, q, v, ci, cf, restitution, damping)
    return cw.Z, status


def impulse_dynamics_derivatives(model: Model, q, v, contacts, restitution: float = 0.0, damping: float = 0.0
                                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """First-order partial derivatives of :func:`dynamics.impulse_dynamics`.

    Returns ``(dvplus_dq, dvplus_dv, dimp_dq, dimp_dv)``: (nv, nv) for v⁺ — ``dvplus_dv``
    the full derivative ∂v⁺/∂v — and (nc, nv) for the impulses; derivatives with respect
    to q along the tangent directions (q ⊕ ε).
    """
    args = check_impulse_call(model, q, v, contacts, restitution, damping)
    Z, status = impulse_dynamics_derivatives_kernel(model_workspace(model), *args)
    raise_if_dependent(contacts, args[2], status)
    nv = model.nv
    x, y = Z[:nv], Z[nv:]
    return x[:, :nv], x[:, nv:], y[:, :nv], y[:, nv:]
