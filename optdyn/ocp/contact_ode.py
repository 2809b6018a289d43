"""The continuous dynamics of a contact phase, as the interval kernels take it.

Within a phase with the rigid contacts C (:class:`dynamics.Contact`, Pinocchio's
conventions) the robot obeys

    M(q) q̈ + b(q, v) = B u + J(q)ᵀλ,     J(q) q̈ + γ(q, v) = 0

(:func:`dynamics.contact_dynamics`; Featherstone 2008, Sec. 8.3), so x = [q; v] follows
ẋ = f(x, u) = [v; q̈(q, v, B u)], q̈ the contact dynamics' acceleration. A
:data:`ContactODE` is that right-hand side as a record; :mod:`optdyn.ocp.integrators`
dispatches on it (``robot_dynamics`` → :func:`contact_dynamics_ode`,
``robot_dynamics_hessian`` → :func:`contact_dynamics_ode_hessian`, ``robot_work`` →
:func:`contact_work`), so the Runge–Kutta interval, its sensitivities and its contracted
second-order adjoint (:func:`optdyn.ocp.integrators.interval_hessian`) are the free
dynamics' code, unchanged. The derivatives of f with respect to z = (δq, v, u) are

    f_z = [0 I 0; ∂q̈/∂q ∂q̈/∂v ∂q̈/∂τ B]                (Carpentier & Mansard 2018, eq. 24,
                                                       constrained form: dynamics.contact_dynamics_derivatives)
    w·f_zz = Σ_i w_{nv+i} ∂²q̈_i/∂z²                    (the contracted contact second order with
                                                       weights [w_v; 0] on [q̈; λ]:
                                                       dynamics.contact_dynamics_second_derivatives_contracted)

q-derivatives in the tangent space (first order) and local coordinates (second order),
as for the free dynamics. The full tensor f_zz (order 2: the validation path and DDP's
"tensor" mode) is assembled from nv contractions with unit weights.

Workspace: each evaluation makes its own algorithm workspace and contact workspace (the
contact workspace is sized by the phase's contacts, which change from phase to phase).
:func:`contact_work` holds only what an evaluation leaves behind when asked: the contact
forces λ it solved for and, from order 1, their derivatives — the interval kernels ask it of
an interval's first stage, whose forces are those at the interval's start
(:mod:`optdyn.ocp.contact_phases`), so that residuals on the forces need not solve for them
again.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from dynamics._compile import at_order, njit
from dynamics.contact import contact_rows
from dynamics.contact_dynamics import OK, contact_dynamics_passes
from dynamics.contact_dynamics_derivatives import contact_dynamics_derivative_passes
from dynamics.contact_dynamics_second_derivatives_contracted import contact_so_contracted_passes
from dynamics.contact_workspace import new_contact_work
from dynamics.kinematics import tangent_size
from dynamics.rnea_second_derivatives_contracted import new_so_work
from dynamics.workspace import new_data

ContactODE = namedtuple("ContactODE", ["model", "actuated", "lie", "ci", "cf", "damping"])
"""ẋ = [v; q̈(q, v, B u)] under rigid contacts: the fields of a
:data:`~optdyn.ocp.integrators.RobotODE` (model record, actuated tangent indices (nu,), Lie
blocks (L, 3)), the phase's packed contacts (``ci`` int64 (ncon, 4), ``cf`` float64 (ncon,
FLOATS): :func:`dynamics.contact.pack_contacts`) and the KKT ``damping`` μ ≥ 0."""

ContactODEWork = namedtuple("ContactODEWork", ["so", "keep", "lam", "Z"])
"""The workspace record of a :data:`ContactODE`: ``so`` is what the stage terms of
:func:`optdyn.ocp.integrators.stage_terms` hand on to :func:`contact_dynamics_ode_hessian`
(empty); while ``keep[0]`` is set, the next :func:`contact_dynamics_ode` leaves its forces λ
in ``lam[:nc]`` and, from order 1, their derivatives ∂λ/∂[q, v, τ] in ``Z[:nc]`` (R, 3nv),
then clears it (R ≥ nc: the rows of the contacts the record was sized for)."""

DEPENDENT = ("contacts: dependent contact constraints (singular KKT system) in a phase of the problem; "
             "give fewer or independent contacts, or pass contact_damping > 0 (optdyn.Problem)")


@njit(cache=True, _nrt=True)
def contact_work(ode, second):
    """The :data:`ContactODEWork` of a :data:`ContactODE`, sized for the forces of all its
    contacts (``keep`` cleared)."""
    rows, n = contact_rows(ode.ci), tangent_size(ode.model.topology)
    return ContactODEWork(np.empty(0), np.zeros(1, np.int64), np.empty(rows), np.empty((rows, 3 * n)))


@njit(cache=True, inline="always")
def _leave_forces(cw, n, nc, order, work):
    """λ (the rows n … n + nc − 1 of the solution in ``cw``) into ``work.lam`` and, for order
    ≥ 1, their rows of ∂[q̈; λ]/∂[q, v, τ] into ``work.Z``; clears ``work.keep``."""
    for i in range(nc):
        work.lam[i] = cw.z[n + i, 0]
        if order >= 1:
            for j in range(3 * n):
                work.Z[i, j] = cw.Z[n + i, j]
    work.keep[0] = 0


@njit(cache=True, inline="always")
def actuated_torques(act, u, n):
    """τ = B u (nv,): u on the actuated indices ``act``, zero elsewhere."""
    tau = np.zeros(n)
    for c in range(act.shape[0]):
        tau[act[c]] = u[c]
    return tau


@njit(cache=True, literal=("order",), _nrt=True)
def contact_dynamics_ode(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
    """ẋ = [v; q̈(q, v, B u)] of the phase ``ode`` (:data:`ContactODE`) into f (ndx,); for
    order ≥ 1 its Jacobian Fz (ndx, nz) w.r.t. z = (δq, v, u), for order 2 the full
    Hessians Fzz (ndx, nz, nz). ``records`` and ``idx`` are not used (the contracted second
    order recomputes from the stage's state). ValueError if the phase's
    contacts are dependent at x. While ``work.keep`` is set, leaves the forces λ (and from
    order 1 their derivatives) in ``work`` (:data:`ContactODEWork`)."""
    m, act = ode.model, ode.actuated
    topology = m.topology
    n = tangent_size(topology)
    nq = x.shape[0] - n
    q, v = x[:nq], x[nq:]
    tau = actuated_torques(act, u, n)
    d = new_data(topology)
    f[:n] = v  # q̇ = v (in the tangent space)
    if order == 0:
        cw = new_contact_work(topology, ode.ci, 0, False)
        if contact_dynamics_passes(m, d, cw, q, v, tau, f_ext, ode.ci, ode.cf, ode.damping) != OK:
            raise ValueError(DEPENDENT)
        for i in range(n):
            f[n + i] = cw.z[i, 0]
        if work.keep[0]:
            _leave_forces(cw, n, contact_rows(ode.ci), 0, work)
        return
    cw = new_contact_work(topology, ode.ci, 1, False)
    if contact_dynamics_derivative_passes(m, d, cw, q, v, tau, f_ext, ode.ci, ode.cf, ode.damping) != OK:
        raise ValueError(DEPENDENT)
    Z = cw.Z  # ∂[q̈; λ]/∂[q, v, τ] (nv + nc, 3nv)
    Fz[:] = 0.0
    for i in range(n):
        f[n + i] = cw.z[i, 0]
        Fz[i, n + i] = 1.0
        for j in range(2 * n):
            Fz[n + i, j] = Z[i, j]
        for c in range(act.shape[0]):
            Fz[n + i, 2 * n + c] = Z[i, 2 * n + act[c]]
    if work.keep[0]:
        _leave_forces(cw, n, contact_rows(ode.ci), 1, work)
    at_order(order, 2, _contact_dynamics_tensors, (ode, q, v, tau, f_ext, d, Fzz))


@njit(cache=True, _nrt=True)
def _contact_dynamics_tensors(ode, q, v, tau, f_ext, d, Fzz):
    """Fzz (ndx, nz, nz) of :func:`contact_dynamics_ode`: the Hessians of each q̈_i, by the
    contracted second order with the unit weight on row i (d: scratch Data)."""
    topology, act, n = ode.model.topology, ode.actuated, v.shape[0]
    Fzz[:] = 0.0
    nc = contact_rows(ode.ci)
    cw2, sow, w = new_contact_work(topology, ode.ci, 2, False), new_so_work(topology), np.zeros(n + nc)
    for i in range(n):  # the Hessians of q̈_i: the contraction with the unit weight on row i
        w[i] = 1.0
        if contact_so_contracted_passes(ode.model, d, cw2, sow, q, v, tau, f_ext, ode.ci, ode.cf, ode.damping,
                                        w) != OK:
            raise ValueError(DEPENDENT)
        w[i] = 0.0
        place_blocks(cw2.out, act, n, Fzz[n + i])


@njit(cache=True, inline="always")
def place_blocks(H, act, n, W):
    """W (nz, nz) = the Hessian of a q̈ row from its blocks H = (Hqq, Hvv, Hqv, Hqτ) (the
    Hessians in (v, τ) and (τ, τ) vanish), τ = B u."""
    for j in range(n):
        for k in range(n):
            W[j, k] = H[0, j, k]
            W[n + j, n + k] = H[1, j, k]
            W[j, n + k] = W[n + k, j] = H[2, j, k]
        for c in range(act.shape[0]):
            W[j, 2 * n + c] = W[2 * n + c, j] = H[3, j, act[c]]


@njit(cache=True, _nrt=True)
def contact_dynamics_ode_hessian(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
    """W (nz, nz) = Σ_i w_i ∂²f_i/∂z² of ẋ = [v; q̈(q, v, B u)] at (x, u): only the q̈ rows
    are nonlinear, so this is the contracted contact second order with weights [w[nv:]; 0]
    on [q̈; λ] (:func:`dynamics.contact_dynamics_second_derivatives_contracted`), recomputed
    at x (the phase has no external forces: :class:`~optdyn.ocp.problem.Problem` refuses
    ``f_ext`` with contacts). ``f``, ``Fz``, ``records``, ``idx``, ``blocks``, ``so`` are
    not used."""
    m = ode.model
    topology = m.topology
    n = tangent_size(topology)
    nq = x.shape[0] - n
    q, v = x[:nq], x[nq:]
    tau = actuated_torques(ode.actuated, u, n)
    nc = contact_rows(ode.ci)
    d, cw, sow = new_data(topology), new_contact_work(topology, ode.ci, 2, False), new_so_work(topology)
    wz = np.zeros(n + nc)
    wz[:n] = w[n:]
    W[:] = 0.0
    if contact_so_contracted_passes(m, d, cw, sow, q, v, tau, cw.no_force, ode.ci, ode.cf, ode.damping, wz) != OK:
        raise ValueError(DEPENDENT)
    place_blocks(cw.out, ode.actuated, n, W)
