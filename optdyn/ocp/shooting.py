"""The compiled entry points of the discrete problem: what the solvers' kernels call.

A solver sees the dynamics x_{k+1} = F_k(x_k, u_k) of a :class:`~optdyn.ocp.problem.Problem`
only through its record ``problem.dynamics`` and these functions of it (compiled and
inlined into the solvers' own compiled loops at numba's IR level: a thin layer that is no
compiled unit of its own, since each unit re-optimises every kernel it calls), next to the
problem's batch methods
(``step``, ``step_derivatives``, ``step_stages``, ``step_hessians``, ``rollout``) for whole
trajectories:

    transition(dyn, k, x, u, y, work)                 y = x⁺ = F_k(x, u); False if it diverged
    transition_hessian(dyn, k, u, stages, lam, Hz, work, split)
                                                      Hz = ∇²_z(λᵀF_k)(x_k, u_k), z = (δx, u)
    transition_work(dyn, nx, nu, order)               the workspace of both
    state_error(dyn, x0, x1, dx)                      dx = x1 ⊖ x0 (tangent space at x0)
    state_retract(dyn, x, dx, y)                      y = x ⊕ dx

``stages`` are the records of ``problem.step_stages`` along the trajectory (knot k's rows
are found here, not by the solver). Today every interval is the explicit Runge–Kutta
integration of the robot's free dynamics (:mod:`optdyn.ocp.integrators`, record
:data:`~optdyn.ocp.integrators.IntervalDynamics`); a new interval dynamics — contact
phases — is a new record type that these functions dispatch on, and no solver changes.
"""
from __future__ import annotations

from dynamics._compile import allocation_free, njit

from .integrators import interval, interval_hessian, interval_work, lie_structure
from .state import state_difference, state_integrate_into


@njit(cache=True, inline="always")
def transition_work(dyn, nx, nu, order):
    """Workspace of :func:`transition` (``order`` 0) or :func:`transition_hessian`
    (``order`` 1) for states of nx coordinates and nu controls, made once per loop over
    knots."""
    return interval_work(dyn, nx, nu, order)


@njit(cache=True, inline="always")
def transition(dyn, k, x, u, y, work):
    """y = x⁺ = F_k(x, u), the state after interval k from (x, u); False (y NaN) if a state
    or derivative on the way became non-finite."""
    return interval(dyn, k, x, u, 0, y, work.no_Y, work.no_H, work.no_stages, 0, work)


@allocation_free(inline="always")
def transition_hessian(dyn, k, u, stages, lam, Hz, work, split):
    """Hz (nz, nz) = ∇²_z(λᵀF_k(x_k, u_k)) at knot k of the trajectory recorded in
    ``stages``, λ = ``lam`` (ndx,) (a second-order adjoint, no tensor formed); ``split``: its
    stage terms on two threads, the same sums either way."""
    interval_hessian(dyn, u, stages, k * dyn.substeps * dyn.b.shape[0], lam, Hz, work, split)


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
