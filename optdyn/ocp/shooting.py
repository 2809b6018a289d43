"""The compiled entry points of the discrete problem: what the solvers' kernels call.

A solver sees the dynamics x_{k+1} = F_k(x_k, u_k) of a :class:`~optdyn.ocp.problem.Problem`
only through its record ``problem.dynamics`` and these functions of it (compiled and
inlined into the solvers' own compiled loops at numba's IR level: a thin layer that is no
compiled unit of its own, since each unit re-optimises every kernel it calls), next to the
problem's batch methods
(``step``, ``step_derivatives``, ``step_stages``, ``step_hessians``) for whole
trajectories and :func:`rollout` (``problem.rollout``):

    transition(dyn, k, x, u, y, work)                 y = x⁺ = F_k(x, u); False if it diverged
    transition_hessian(dyn, k, u, stages, lam, Hz, work)
                                                      Hz = ∇²_z(λᵀF_k)(x_k, u_k), z = (δx, u)
    transition_hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts)
    transition_hessian_close(dyn, k, stages, lam, Hz)
                                                      the same in parts (for several threads)
    transition_work(dyn, nx, nu, order)               the workspace of both
    state_error(dyn, x0, x1, dx)                      dx = x1 ⊖ x0 (tangent space at x0)
    state_retract(dyn, x, dx, y)                      y = x ⊕ dx

``stages`` are the records of ``problem.step_stages`` along the trajectory (knot k's rows
are found here, not by the solver). The record says which interval dynamics it is, and
these functions dispatch on its type (at compile time):

- an :data:`~optdyn.ocp.integrators.IntervalDynamics`: every interval is the explicit
  Runge–Kutta integration of the robot's free dynamics (:mod:`optdyn.ocp.integrators`);
- a :data:`~optdyn.ocp.contact_phases.PhasedDynamics`: contact phases, with the impulse map
  where an interval gains contacts (:mod:`optdyn.ocp.contact_phases`).

No solver knows which.
"""
from __future__ import annotations

import numpy as np
from numba.extending import overload

from dynamics._compile import allocation_free, njit
from dynamics.spatial import mirror_upper

from . import contact_phases
from .contact_phases import PhasedDynamics
from .integrators import _is, interval, interval_hessian_part, interval_work, lie_structure
from .state import state_difference, state_integrate_into


def _work(dyn, nx, nu, order):
    """:func:`transition_work` of the record's type."""


def _transition(dyn, k, x, u, y, work):
    """:func:`transition` of the record's type."""


def _hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts):
    """:func:`transition_hessian_part` of the record's type."""


def _hessian_close(dyn, k, stages, lam, Hz):
    """:func:`transition_hessian_close` of the record's type."""


@overload(_work, inline="always")
def _work_impl(dyn, nx, nu, order):
    if _is(dyn, PhasedDynamics):
        return lambda dyn, nx, nu, order: contact_phases.phased_work(dyn, nx, nu, order)
    return lambda dyn, nx, nu, order: interval_work(dyn, nx, nu, order)


@overload(_transition, inline="always")
def _transition_impl(dyn, k, x, u, y, work):
    if _is(dyn, PhasedDynamics):
        return lambda dyn, k, x, u, y, work: contact_phases.transition(dyn, k, x, u, y, work)
    return lambda dyn, k, x, u, y, work: interval(dyn, k, x, u, 0, y, work.no_Y, work.no_H, work.no_stages, 0, work)


@overload(_hessian_part, inline="always")
def _hessian_part_impl(dyn, k, u, stages, lam, Hz, work, part, parts):
    if _is(dyn, PhasedDynamics):
        def phased(dyn, k, u, stages, lam, Hz, work, part, parts):
            contact_phases.transition_hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts)
        return phased

    def free(dyn, k, u, stages, lam, Hz, work, part, parts):
        interval_hessian_part(dyn, u, stages, k * dyn.substeps * dyn.b.shape[0], lam, Hz, work, part, parts)
    return free


@overload(_hessian_close, inline="always")
def _hessian_close_impl(dyn, k, stages, lam, Hz):
    if _is(dyn, PhasedDynamics):
        def phased(dyn, k, stages, lam, Hz):
            contact_phases.transition_hessian_close(dyn, k, stages, lam, Hz)
        return phased
    return lambda dyn, k, stages, lam, Hz: mirror_upper(Hz)


@njit(cache=True, inline="always")
def transition_work(dyn, nx, nu, order):
    """Workspace of :func:`transition` (``order`` 0) or :func:`transition_hessian`
    (``order`` 1) for states of nx coordinates and nu controls, made once per loop over
    knots."""
    return _work(dyn, nx, nu, order)


@njit(cache=True, inline="always")
def transition(dyn, k, x, u, y, work):
    """y = x⁺ = F_k(x, u), the state after interval k from (x, u); False (y NaN) if a state
    or derivative on the way became non-finite."""
    return _transition(dyn, k, x, u, y, work)


@allocation_free(inline="always")
def transition_hessian(dyn, k, u, stages, lam, Hz, work):
    """Hz (nz, nz) = ∇²_z(λᵀF_k(x_k, u_k)) at knot k of the trajectory recorded in
    ``stages``, λ = ``lam`` (ndx,) (a second-order adjoint, no tensor formed)."""
    _hessian_part(dyn, k, u, stages, lam, Hz, work, 0, 1)
    _hessian_close(dyn, k, stages, lam, Hz)


@allocation_free(inline="always")
def transition_hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts):
    """The upper triangle of part ``part`` of ``parts`` of :func:`transition_hessian` into Hz:
    the parts, computed apart (on several threads), summed and :func:`transition_hessian_close`'d
    give the Hessian."""
    _hessian_part(dyn, k, u, stages, lam, Hz, work, part, parts)


@allocation_free(inline="always")
def transition_hessian_close(dyn, k, stages, lam, Hz):
    """Hz, the sum of the parts of :func:`transition_hessian_part`, made
    :func:`transition_hessian`'s (mirrored; on a phased record, the impulse's chain rule)."""
    _hessian_close(dyn, k, stages, lam, Hz)


@njit(cache=True)
def rollout(dyn, x0, us):
    """States xs (N+1, nx) from x0 under us (N, nu), interval after interval through
    :func:`transition`; the rows after a divergence are NaN."""
    N, nx = us.shape[0], x0.shape[0]
    xs = np.empty((N + 1, nx))
    xs[0] = x0
    work = transition_work(dyn, nx, us.shape[1], 0)
    for k in range(N):
        if not transition(dyn, k, xs[k], us[k], xs[k + 1], work):
            xs[k + 1:] = np.nan
            break
    return xs


@allocation_free(inline="always")
def _chart(dyn, x, y, out, retract):
    """out = x ⊕ y (``retract``) or out = y ⊖ x, on the problem's state manifold: [q; v]
    with q on the joints' groups for a robot, a vector space otherwise."""
    topology, lie = lie_structure(dyn.ode)
    ndx = y.shape[0] if retract else out.shape[0]
    if lie.shape[0] > 0:
        if retract:
            state_integrate_into(topology, x.shape[0] - ndx // 2, x, y, out)
        else:
            state_difference(topology, x.shape[0] - ndx // 2, x, y, out)
    else:
        for j in range(ndx):
            out[j] = x[j] + y[j] if retract else y[j] - x[j]


@allocation_free(inline="always")
def state_error(dyn, x0, x1, dx):
    """dx (ndx,) = x1 ⊖ x0 = [q1 ⊖ q0; v1 − v0] in the tangent space at x0."""
    _chart(dyn, x0, x1, dx, False)


@allocation_free(inline="always")
def state_retract(dyn, x, dx, y):
    """y = x ⊕ dx = [q ⊕ δq; v + δv] (y must not be x)."""
    _chart(dyn, x, dx, y, True)
