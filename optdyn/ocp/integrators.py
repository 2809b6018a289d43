"""Explicit Runge–Kutta integration of one interval with exact sensitivities.

The continuous dynamics ẋ = f(x, u) of a robot is x = [q; v], ẋ = [v; FD(q, v, τ)].
One interval of length dt is m explicit steps of h = dt/m with u held constant. An
explicit Runge–Kutta step with Butcher tableau (a, b) reads

    y_s = y + h Σ_{j<s} a_sj k_j,    k_s = f(y_s, u),    y⁺ = y + h Σ_s b_s k_s

(RK4: a = subdiagonal (½, ½, 1), b = (1, 2, 2, 1)/6; Euler: one stage, b = 1).

Sensitivities are propagated by the chain rule through every stage with respect to
z = (x, u) (nz = nx + nu). With G_s = ∂(y_s, u)/∂z = [Y_s; 0 I] and H_s = ∂²y_s/∂z²:

    ∂k_s/∂z   = f_z G_s
    ∂²k_s/∂z² = Σ_pr f_zz[:, p, r] G_s[p, :] G_s[r, :]  +  f_x · H_s

and Y, H accumulate exactly like y. The derivatives of f come from the analytical ABA
derivatives (∂q̈/∂τ = M⁻¹, ∂²q̈/∂τ² = 0, ∂²q̈/∂v∂τ = 0), with τ = B u (the problem's
actuated joints). All knots of a trajectory are processed in one compiled call. Tensors
are laid out T[i, j, l] = ∂²x⁺_i/∂z_j∂z_l.

On a floating base (Lie-group joints, :mod:`optdyn.ocp.state`) the same tableau is applied in
the tangent space at the start y of each step — y_s = y ⊕ h Σ_j a_sj k_j and
y⁺ = y ⊕ h Σ_s b_s k_s, the velocity part of k_j read as a tangent vector at y (Crocoddyl's
RK4, Mastalli et al. 2020) — and z = (δx, u) with δx in the chart of x (x ⊕ δx). Each
composition y ⊕ W carries the sensitivities from y's chart to its own by the integrate
Jacobians and adds its curvature (:func:`_compose`); on revolute/prismatic joints ⊕ is +
and the kernels run the vector-space code above unchanged.

Records (named tuples the kernels read by field): the continuous dynamics of a robot is a
:data:`RobotODE` (model record, actuated joints, Lie-group blocks); one interval of the
discrete problem is an :data:`IntervalDynamics` (that ODE, the tableau, dt, the number of
substeps and the intervals' external forces); the first-order pass keeps its
:data:`StageRecords`; every temporary lives in an :data:`IntervalWork`.

The continuous dynamics is :func:`robot_dynamics` ``(ode, x, u, f_ext, order, f, Fz, Fzz,
records, idx, work)``: it writes f (nx,), and for order ≥ 1 Fz (nx, nz), for order 2 Fzz
(nx, nz, nz); :func:`robot_dynamics_hessian` gives the contracted second derivative w·f_zz
from what the first-order call stored; ``work`` is the dynamics' workspace
(:func:`robot_work`). They are called as globals of the compiled kernels (not passed as
function arguments, which numba's on-disk cache cannot key reliably), and dispatch at compile
time on the ODE record's type: a :data:`RobotODE` runs the free dynamics
(:func:`free_dynamics`, :func:`free_dynamics_hessian`, :func:`free_work`), a
:data:`~optdyn.ocp.contact_ode.ContactODE` the contact dynamics of one contact phase
(:mod:`optdyn.ocp.contact_ode`; the phases and impulses: :mod:`optdyn.ocp.contact_phases`).

Workspace: every temporary of :func:`interval` and :func:`interval_hessian`, the
dynamics' and the group compositions' included, lives in an :data:`IntervalWork` made
once per loop over knots (:func:`interval_work`: once per thread, per rollout, per backward
pass), so the stage sweeps of a whole trajectory allocate nothing per knot or per stage.

External forces: ``f_ext`` (njoints, 6) is the robot's ``f_ext`` of :func:`dynamics.rnea`
during the interval ((0, 6): none), held like u. It is a force fixed in each body's frame,
so it moves with the body as q varies and the q-derivatives (first and contracted second
order) are those of FD(q, v, τ, f_ext) at that fixed f_ext. An :data:`IntervalDynamics`
holds them for K intervals (K, njoints, 6) (interval k uses f_ext[k]) or one row
(1, ·, 6) for every interval (:func:`dynamics.batch.knot_force`; ``NO_FORCES`` = none).

The Hessian of λᵀF — what DDP (λ = V'_x) and the multiple-shooting Lagrangian (λ = the
defect multipliers) need — is computed contracted by :func:`interval_hessian`, a
second-order adjoint over stage records kept by the first-order pass
(:func:`stage_terms`); the full tensors (order 2) remain for users and tests.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import types
from numba.extending import overload

from dynamics._compile import allocation_free, at_order, njit, pin
from dynamics.aba import NOT_POSITIVE, aba_into
from dynamics.aba_derivatives import aba_derivatives_into
from dynamics.aba_second_derivatives import fdsva_so_terms
from dynamics.aba_second_derivatives_contracted import fdsva_so_contracted_terms
from dynamics.batch import knot_force
from dynamics.joints import GROUP_SCRATCH, lie_jacobian_into
from dynamics.lie import add_joint_curvature, lie_blocks, lie_scratch
from dynamics.kinematics import all_finite, tangent_size
from dynamics.model import Model
from dynamics.parallel import first_chunk, next_chunk, run_chunks
from dynamics.rnea_second_derivatives_contracted import new_so_work
from dynamics.spatial import axpy, copy_into, matmul_add, mirror_upper
from dynamics.workspace import Data, new_data

from .contact_ode import ContactODE, contact_dynamics_ode, contact_dynamics_ode_hessian, contact_work
from .state import state_integrate_into

_RK4 = (np.array([[0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]),
        np.array([1.0, 2.0, 2.0, 1.0]) / 6.0)
_EULER = (np.zeros((1, 1)), np.ones(1))
METHODS = {"rk4": _RK4, "euler": _EULER}
"""Butcher tableaux (a (s, s) strictly lower triangular, b (s,)) by name."""

RobotODE = namedtuple("RobotODE", ["model", "actuated", "lie"])
"""The continuous dynamics ẋ = [v; FD(q, v, B u, f_ext)] of a robot, as the kernels take
it: ``model`` the model's compiled record (:attr:`dynamics.Model.arrays`), ``actuated`` the
actuated tangent indices (nu,) (τ[actuated] = u, the other τ zero) and ``lie`` the blocks of
its Lie-group joints (L, 3) (:func:`dynamics.lie.lie_blocks`)."""

IntervalDynamics = namedtuple("IntervalDynamics", ["ode", "a", "b", "dt", "substeps", "f_ext"])
"""One interval x_{k+1} = F(x_k, u_k) of the discrete problem: the continuous dynamics
``ode`` (a :data:`RobotODE`, or any record the ODE kernels accept) integrated over ``dt``
by ``substeps`` explicit Runge–Kutta steps of tableau (``a`` (s, s), ``b`` (s,)) with u held,
under the external forces ``f_ext`` (K or 1, njoints, 6) of the intervals (module docstring)."""

StageRecords = namedtuple("StageRecords", ["y", "f", "Fz", "G", "S", "IC", "BC", "rates", "T", "Minv",
                                           "W", "dW", "Y0", "J"])
"""What the first-order pass of :func:`interval` keeps of every stage for
:func:`interval_hessian` (:func:`stage_records`), one row per stage: inputs y_s,
derivatives k_s = f(y_s, u), Jacobians f_z, sensitivities G_s = Y_s; the first-order data
of ABA's derivatives that contracted FDSVA-SO reuses (motion subspaces S, composite
inertias I^C and B^C, the rates (Ψ̇, Ψ̈, Ṡ), the joint vectors of IDSVA and M⁻¹); on a
manifold each composition's increment W, its sensitivity dW, the steps' start
sensitivities Y0 and the integrate-Jacobian blocks J. A flat record of arrays."""

RobotWork = namedtuple("RobotWork", ["data", "tau", "first", "second", "so"])
"""Workspace of :func:`robot_dynamics` and :func:`robot_dynamics_hessian`: the algorithms'
:data:`dynamics.workspace.Data`, τ (nv,), first-order blocks (∂q̈/∂q, ∂q̈/∂v, M⁻¹)
(3, nv, nv), second-order blocks (5, nv, nv) and the contracted-SO scratch of
:func:`dynamics.rnea_second_derivatives_contracted.new_so_work`."""


def robot_ode(model: Model, actuated: np.ndarray | None = None) -> RobotODE:
    """The :data:`RobotODE` of ``model``; ``actuated`` defaults to every joint."""
    act = np.arange(model.nv) if actuated is None else np.asarray(actuated, dtype=np.int64)
    return RobotODE(model.arrays, np.ascontiguousarray(act, dtype=np.int64), lie_blocks(model))


def lie_structure(ode):
    """(topology, Lie blocks (L, 3)) of a :data:`RobotODE` or a
    :data:`~optdyn.ocp.contact_ode.ContactODE`; (0, 7), (0, 3) arrays for any other ODE record
    (a vector space, e.g. a test's ODE)."""


def _is(ode, record) -> bool:
    """Whether the numba type ``ode`` is the named tuple ``record``."""
    return isinstance(ode, types.NamedTuple) and ode.instance_class is record


@overload(lie_structure)
def _lie_structure(ode):
    if _is(ode, RobotODE) or _is(ode, ContactODE):
        return lambda ode: (ode.model.topology, ode.lie)
    return lambda ode: (np.zeros((0, 7), np.int64), np.zeros((0, 3), np.int64))


@njit(cache=True, inline="always")
def _recording(d, records, idx):
    """The workspace ``d`` with its first-order data (S, I^C, B^C, rates, joint vectors) in
    row ``idx`` of ``records`` (:data:`StageRecords`): the passes write them there, and
    nothing is copied."""
    S, IC, BC, rates, T = records.S[idx], records.IC[idx], records.BC[idx], records.rates[idx], records.T[idx]
    return Data(R=d.R, p=d.p, S=S, I=IC, IC=IC, IA=d.IA, Dinv=d.Dinv, BC=BC, vel=d.vel, acc=d.acc, fC=d.fC, pA=d.pA,
                da=d.da, U=d.U, UD=d.UD, rates=rates, u=d.u, tau=d.tau, Minv=d.Minv, dq=d.dq, dv=d.dv, F=d.F, P=d.P,
                T=T, h=d.h, gauss=d.gauss)


def robot_work(ode, second):
    """The workspace of :func:`robot_dynamics` for the ODE record ``ode`` (with ``second``
    (5, nv, nv) as its second-order blocks): :func:`free_work` for a :data:`RobotODE`,
    :func:`~optdyn.ocp.contact_ode.contact_work` for a
    :data:`~optdyn.ocp.contact_ode.ContactODE`."""


def robot_dynamics(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
    """ẋ = f(x, u) of the ODE record ``ode`` and its derivatives (module docstring):
    :func:`free_dynamics` for a :data:`RobotODE`, the contact dynamics of a phase
    (:func:`~optdyn.ocp.contact_ode.contact_dynamics_ode`) for a
    :data:`~optdyn.ocp.contact_ode.ContactODE`."""


def robot_dynamics_hessian(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
    """W = Σ_i w_i ∂²f_i/∂z² of the ODE record ``ode``: :func:`free_dynamics_hessian` or
    :func:`~optdyn.ocp.contact_ode.contact_dynamics_ode_hessian`."""


def _dispatch(ode, free, contact):
    """The kernel for the ODE record type ``ode`` (compile time)."""
    return contact if _is(ode, ContactODE) else free


@overload(robot_work, inline="always")
def _robot_work(ode, second):
    kernel = _dispatch(ode, free_work, contact_work)
    return lambda ode, second: kernel(ode, second)


@overload(robot_dynamics, inline="always", prefer_literal=True)
def _robot_dynamics(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
    kernel = _dispatch(ode, free_dynamics, contact_dynamics_ode)

    def impl(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
        kernel(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work)
    return impl


@overload(robot_dynamics_hessian, inline="always")
def _robot_dynamics_hessian(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
    kernel = _dispatch(ode, free_dynamics_hessian, contact_dynamics_ode_hessian)

    def impl(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
        kernel(ode, x, u, f, Fz, records, idx, w, W, blocks, so)
    return impl


@njit(cache=True)
def free_work(ode, second):
    """The :data:`RobotWork` of a :data:`RobotODE`, with ``second`` (5, nv, nv) as its
    second-order blocks, pinned (:func:`dynamics._compile.pin`)."""
    topology = ode.model.topology
    nv = tangent_size(topology)
    return pin(RobotWork(new_data(topology), np.empty(nv), np.empty((3, nv, nv)), second, new_so_work(topology)))


@njit(cache=True, literal=("order",))
def free_dynamics(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
    """ẋ = [v; FD(q, v, B u, f_ext)] and its first/second derivatives w.r.t.
    z = (δq, v, u) (δq in the tangent space at q; τ = B u with the actuated columns
    ``ode.actuated`` of B = selection, so ∂/∂u_c = ∂/∂τ_{act[c]}); every intermediate in
    the :data:`RobotWork` ``work``.

    For order 1 and ``idx`` ≥ 0 the first-order data that :func:`free_dynamics_hessian`
    reuses (with M⁻¹) is written into row ``idx`` of ``records`` (:data:`StageRecords`).
    """
    model, act = ode.model, ode.actuated
    n = tangent_size(model.topology)
    nq = x.shape[0] - n
    q, v = x[:nq], x[nq:]
    d, tau = work.data, work.tau
    tau[:] = 0.0
    for c in range(act.shape[0]):
        tau[act[c]] = u[c]  # τ = B u
    f[:n] = v  # q̇ = v (in the tangent space)
    qdd = f[n:]
    if order == 0:
        if not aba_into(model, d, q, v, tau, f_ext, qdd):
            raise ValueError(NOT_POSITIVE)
        return
    da_dq, da_dv, da_dtau = work.first[0], work.first[1], work.first[2]
    if idx >= 0:
        d, da_dtau = _recording(d, records, idx), records.Minv[idx]
    if not aba_derivatives_into(model, d, q, v, tau, f_ext, qdd, da_dq, da_dv, da_dtau):
        raise ValueError(NOT_POSITIVE)
    Fz[:] = 0.0
    for i in range(n):
        Fz[i, n + i] = 1.0
        for j in range(n):
            Fz[n + i, j] = da_dq[i, j]
            Fz[n + i, n + j] = da_dv[i, j]
        for c in range(act.shape[0]):
            Fz[n + i, 2 * n + c] = da_dtau[i, act[c]]
    at_order(order, 2, _free_dynamics_tensors, (ode, q, v, f_ext, qdd, (da_dq, da_dv, da_dtau), Fzz))


@njit(cache=True)
def _free_dynamics_tensors(ode, q, v, f_ext, qdd, first, Fzz):
    """Fzz (ndx, nz, nz) of :func:`free_dynamics`: the full second-order tensors of FD
    (FDSVA-SO) from its value qdd and first derivatives ``first`` = (∂q̈/∂q, ∂q̈/∂v, M⁻¹)."""
    act, n = ode.actuated, v.shape[0]
    d2q, d2v, d2qv, d2qtau = fdsva_so_terms(ode.model, q, v, f_ext, qdd, *first)  # full tensors: allocates
    Fzz[:] = 0.0
    for i in range(n):
        r = n + i
        for j in range(n):
            for k in range(n):
                Fzz[r, j, k] = d2q[i, j, k]
                Fzz[r, n + j, n + k] = d2v[i, j, k]
                Fzz[r, j, n + k] = d2qv[i, j, k]
                Fzz[r, n + k, j] = d2qv[i, j, k]
            for c in range(act.shape[0]):
                Fzz[r, j, 2 * n + c] = d2qtau[i, j, act[c]]
                Fzz[r, 2 * n + c, j] = d2qtau[i, j, act[c]]


@allocation_free
def free_dynamics_hessian(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
    """W (nz, nz) = Σ_i w_i ∂²f_i/∂z² of ẋ = [v; FD(q, v, B u)] at (x, u), given Fz and the
    first-order ``records`` (row ``idx``) that :func:`free_dynamics` stored there;
    ``blocks`` (5, nv, nv) and ``so`` are scratch (a :data:`RobotWork`'s ``second`` and
    ``so``).

    Only the FD rows are nonlinear, so this is contracted FDSVA-SO with λ = w[nv:],
    from the FD rows of Fz ([∂q̈/∂q  ∂q̈/∂v  ∂q̈/∂u], ∂q̈/∂u = M⁻¹B), M⁻¹ and the first-order
    RNEA data (which already carries the interval's external forces: no ``f_ext`` argument
    here).
    """
    act = ode.actuated
    n, nu = tangent_size(ode.model.topology), act.shape[0]
    Hqq, Hvv, Hqv, Mq = blocks[0], blocks[1], blocks[2], blocks[3]
    Hqu = blocks[4].reshape(-1)[: n * nu].reshape((n, nu))  # Σ_i λ_i ∂²q̈_i/∂q∂u
    fo = (records.S[idx], records.IC[idx], records.BC[idx], records.rates[idx], records.T[idx])
    fdsva_so_contracted_terms(ode.model.topology, Fz[n:], records.Minv[idx], fo, w[n:], Hqq, Hvv, Hqv, Hqu, Mq, so)
    W[:] = 0.0
    for j in range(n):
        for k in range(n):
            W[j, k] = Hqq[j, k]
            W[n + j, n + k] = Hvv[j, k]
            W[j, n + k] = W[n + k, j] = Hqv[j, k]
        for c in range(nu):
            W[j, 2 * n + c] = W[2 * n + c, j] = Hqu[j, c]


@njit(cache=True, inline="always")
def _add_rows(out, i, X, p, g0, g1, g2, g3):
    """out[i] += g0 X[p] + g1 X[p + 1] + g2 X[p + 2] + g3 X[p + 3] (whole rows): four
    rank-one updates in one sweep over out[i], which is read and written once, not four
    times (the products below are bound by those loads and stores)."""
    for c in range(out.shape[1]):
        out[i, c] += g0 * X[p, c] + g1 * X[p + 1, c] + g2 * X[p + 2, c] + g3 * X[p + 3, c]


@njit(cache=True, inline="always")
def _add_row(out, i, X, p, g):
    """out[i] += g X[p] (whole rows)."""
    for c in range(out.shape[1]):
        out[i, c] += g * X[p, c]


@allocation_free
def _times_G(X, Y, ndx, out):
    """out (r, nz) = X G for X (r, nz) and G = [Y; 0 I] (Y (ndx, nz)): with X = f_z, the
    stage Jacobian ∂k_s/∂z = f_z G_s. Rows of Y four at a time (:func:`_add_rows`); groups
    of four zero entries of X are skipped."""
    nz = X.shape[1]
    q = ndx - ndx % 4
    for i in range(X.shape[0]):
        for c in range(nz):
            out[i, c] = X[i, c] if c >= ndx else 0.0
        for p in range(0, q, 4):
            x0, x1, x2, x3 = X[i, p], X[i, p + 1], X[i, p + 2], X[i, p + 3]
            if x0 != 0.0 or x1 != 0.0 or x2 != 0.0 or x3 != 0.0:
                _add_rows(out, i, Y, p, x0, x1, x2, x3)
        for p in range(q, ndx):
            if X[i, p] != 0.0:
                _add_row(out, i, Y, p, X[i, p])


@allocation_free
def _stage_hessian(Fz, Fzz, Ys, Hs, ndx, T, K2s):
    """K2s (ndx, nz, nz) = Σ_pr f_zz[:, p, r] G_s[p] G_s[r] + f_x H_s (T: work (nz, nz)).

    Both terms are symmetric in their last two indices: only c ≥ b is summed, then
    mirrored. Zero entries of f_zz and f_x (most of a robot's) are skipped.
    """
    nz = Fz.shape[1]
    for i in range(ndx):
        # T[p, c] = Σ_r f_zz[i, p, r] G[r, c]
        T[:] = 0.0
        nonzero = False
        for p in range(nz):
            for r in range(nz):
                w = Fzz[i, p, r]
                if w != 0.0:
                    nonzero = True
                    if r < ndx:
                        for c in range(nz):
                            T[p, c] += w * Ys[r, c]
                    else:
                        T[p, r] += w
        K = K2s[i]
        K[:] = 0.0
        if nonzero:
            _add_Gt_times(Ys, T, ndx, K)
        for p in range(ndx):
            fp = Fz[i, p]
            if fp != 0.0:
                for b in range(nz):
                    for c in range(b, nz):
                        K[b, c] += fp * Hs[p, b, c]
        for b in range(nz):
            for c in range(b):
                K[b, c] = K[c, b]


@njit(cache=True)
def tangent_dim(ode, nx):
    """Tangent dimension ndx of states with nx coordinates: 2·nv on a model with Lie-group
    joints, nx otherwise (a vector space, also for other ODE records)."""
    topology, lie = lie_structure(ode)
    return 2 * tangent_size(topology) if lie.shape[0] > 0 else nx


@allocation_free(literal=("order",))
def _accumulate(coef, count, h, k, Ks, K2s, order, y, Y, H):
    """y += h Σ_{j<count} coef_j k_j, and likewise Y with the stage derivatives' first (Ks)
    and H with their second (K2s) sensitivities (per ``order``)."""
    for j in range(count):
        c = h * coef[j]
        if c != 0.0:
            axpy(c, k[j], y)
            if order >= 1:
                axpy(c, Ks[j], Y)
            if order >= 2:
                axpy(c, K2s[j], H)


Jet = namedtuple("Jet", ["value", "first", "second"])
"""A point and its first and second sensitivities with respect to z = (δx, u): (y, Y, H)."""


@allocation_free(literal=("order",))
def _compose(ode, order, start, increment, out, J, work):
    """ys = y ⊕ W and its sensitivities Ys, Hs in its own chart (:mod:`optdyn.ocp.state`),
    from those of y (Y, H, in y's chart) and of the increment W (dW, d2W) — the
    :data:`Jet` s ``start`` = (y, Y, H), ``increment`` = (W, dW, d2W), ``out`` = (ys, Ys, Hs):

        Ys_q = J_q Y_q + J_v dW_q,            Ys_v = Y_v + dW_v,
        Hs_q = J_q H_q + J_v d2W_q + ∇²ψ[(Y_q, dW_q), (Y_q, dW_q)],   Hs_v = H_v + d2W_v,

    J_q, J_v the integrate Jacobians at W_q and ψ the composition of the joints' groups.
    For order ≥ 1 the Lie joints' diagonal blocks of J_q, J_v are kept for the adjoint of
    :func:`interval_hessian` in J (2, nv, 6): J[0, j0 + i, c] = J_q[j0 + i, j0 + c] for the
    joint whose block starts at row j0 (likewise J[1] and J_v); the rows of 1-DoF joints
    are left alone (their Jacobians are 1). ``work``: the :data:`IntervalWork`.
    """
    topology, lie = lie_structure(ode)
    y, Y, H = start.value, start.first, start.second
    W, dW, d2W = increment.value, increment.first, increment.second
    ys, Ys, Hs = out.value, out.first, out.second
    n = W.shape[0] // 2
    nq = y.shape[0] - n
    state_integrate_into(topology, nq, y, W, ys)
    if order == 0:
        return
    nz = Y.shape[1]
    Jq, Jv, scratch = work.Jqv[0], work.Jqv[1], work.lie
    lie_jacobian_into(topology, W[:n], 0, Jq, work.group)
    lie_jacobian_into(topology, W[:n], 1, Jv, work.group)
    for row in range(lie.shape[0]):
        j0, k = lie[row, 1], lie[row, 2]
        for i in range(j0, j0 + k):
            for c in range(k):
                J[0, i, c], J[1, i, c] = Jq[i, j0 + c], Jv[i, j0 + c]
    Ys[:n] = 0.0  # Ys_q = J_q Y_q + J_v dW_q (block-diagonal J: the zeros are skipped)
    matmul_add(Jq, Y[:n], Ys[:n])
    matmul_add(Jv, dW[:n], Ys[:n])
    for i in range(n):
        for c in range(nz):
            Ys[n + i, c] = Y[n + i, c] + dW[n + i, c]
    if order < 2:
        return
    Hs[:] = 0.0
    for i in range(n):
        for p in range(n):
            if Jq[i, p] != 0.0:
                axpy(Jq[i, p], H[p], Hs[i])
            if Jv[i, p] != 0.0:
                axpy(Jv[i, p], d2W[p], Hs[i])
        copy_into(Hs[n + i], H[n + i])
        axpy(1.0, d2W[n + i], Hs[n + i])
    e = work.e
    for row in range(lie.shape[0]):
        j0, k = lie[row, 1], lie[row, 2]
        for i in range(k):
            e[:k] = 0.0
            e[i] = 1.0
            block = slice(j0, j0 + k)
            add_joint_curvature(scratch.brackets[row, :k, :k], W[block], Jq[block, block], Jv[block, block], e[:k],
                                Y[block], dW[block], Hs[j0 + i], scratch)
            mirror_upper(Hs[j0 + i])


IntervalWork = namedtuple("IntervalWork", [
    "k", "f", "ys", "Fz", "Fzz", "Ks", "K2s", "Ys", "Hs", "T",  # stages of interval()
    "W", "y_new", "dW", "Y_new", "d2W", "H_new", "J",  # its group compositions (rows 0 off a manifold)
    "Jqv", "group", "e",  # their integrate Jacobians, the joints' Jacobian blocks' scratch, a unit vector
    "lie",  # their curvature's workspace (dynamics.lie.LieScratch)
    "terms", "gW", "gY",  # adjoints of interval_hessian() (StageTermWork: with its stage terms' scratch)
    "ode",  # the dynamics' own workspace (RobotWork)
    "no_Y", "no_H", "no_stages",  # empty stand-ins for what interval() of order 0 neither reads nor writes
])
"""Workspace of :func:`interval` (sized for one ``order``) and :func:`interval_hessian`,
passed between them pinned (:func:`dynamics._compile.pin`: one pointer, not its arrays)."""

StageTermWork = namedtuple("StageTermWork", ["w", "ybar", "lam", "sums", "second"])
"""What :func:`stage_terms` reads and uses as scratch: the adjoints w_s (s, ndx), ȳ_s (s, ndx)
and λ⁺ (ndx,) of :func:`interval_hessian`, its W and P (2, nz, nz) and the second-order
blocks of the dynamics (5, nv, nv) (the ``second`` of the :data:`RobotWork`)."""


@njit(cache=True)
def interval_work(dyn, nx, nu, order):
    """An :data:`IntervalWork` for the :data:`IntervalDynamics` ``dyn``, states of nx
    coordinates, nu controls and sensitivities up to ``order``: every array :func:`interval`
    and :func:`interval_hessian` use, made once for a loop over many intervals."""
    ode, s = dyn.ode, dyn.b.shape[0]
    ndx = tangent_dim(ode, nx)
    nz = ndx + nu
    lie = lie_structure(ode)[1]
    nw = ndx if lie.shape[0] > 0 else 0
    # the arrays of first- and second-order sensitivities are empty below their order
    y1, w1, k1 = ((ndx, nz), (nw, nz), (s, ndx, nz)) if order >= 1 else ((0, 0), (0, 0), (0, 0, 0))
    y2, w2, k2 = ((ndx, nz, nz), (nw, nz, nz), (s, ndx, nz, nz)) if order >= 2 else ((0, 0, 0), (0, 0, 0), (0, 0, 0, 0))
    stage = (np.empty((s, ndx)), np.empty(ndx), np.empty(nx), np.empty(y1), np.empty(y2), np.empty(k1), np.empty(k2),
             np.empty(y1), np.empty(y2), np.empty((nz, nz)))
    nv = tangent_size(lie_structure(ode)[0])
    terms = StageTermWork(np.empty((s, ndx)), np.empty((s, ndx)), np.empty(ndx), np.empty((2, nz, nz)),
                          np.empty((5, nv, nv)))
    composition = (np.empty(nw), np.empty(nx), np.empty(w1), np.empty(w1), np.empty(w2), np.empty(w2),
                   np.empty((2, nw // 2, 6)), np.empty((2, nw // 2, nw // 2)), np.empty(GROUP_SCRATCH), np.empty(6),
                   lie_scratch(lie, nz))
    adjoint = (terms, np.empty((s + 1, ndx)), np.empty((s + 1, ndx)))
    rest = (robot_work(ode, terms.second), np.empty((0, 0)), np.empty((0, 0, 0)), no_stages(ode))
    return pin(IntervalWork(*stage, *composition, *adjoint, *rest))


@njit(cache=True, literal=("order",))
def interval(dyn, knot, x, u, order, y, Y, H, stages, offset, work):
    """One interval of the :data:`IntervalDynamics` ``dyn`` (m = ``dyn.substeps`` steps) from
    (x, u) under the external forces of interval ``knot``: writes y = x⁺, Y = ∂x⁺/∂z,
    H = ∂²x⁺/∂z².

    On a model with Lie-group joints the scheme is the Runge–Kutta method in the tangent
    space of each step's start y (the Crocoddyl RK4 of Mastalli et al. 2020): stages
    y_s = y ⊕ h Σ_j a_sj k_j, y⁺ = y ⊕ h Σ_s b_s k_s, where the velocity part of k_j is
    read in y's tangent space; sensitivities are w.r.t. z = (δx, u), δx in x's chart,
    and expressed in x⁺'s chart (each composition by :func:`_compose`). On a vector
    space ⊕ is + and the sensitivities simply accumulate like y (module docstring).

    ``stages`` (:func:`stage_records`) receives in rows offset … offset + m·s − 1, for
    order 1, every stage's input y_s, derivative k_s = f(y_s, u), Jacobian f_z(y_s, u),
    sensitivity Y_s = ∂y_s/∂z and the dynamics' first-order data,
    and on a manifold the compositions' increments and sensitivities: what
    :func:`interval_hessian` needs. Records with no rows (:func:`no_stages`) record nothing.
    ``work`` (:func:`interval_work`, for at least this ``order``) holds every temporary.
    Returns False (y set to NaN) if a stage state or derivative became non-finite.
    """
    ode, a, b, m = dyn.ode, dyn.a, dyn.b, dyn.substeps
    f_ext = knot_force(dyn.f_ext, knot)
    manifold = lie_structure(ode)[1].shape[0] > 0
    ndx = tangent_dim(ode, x.shape[0])
    s = b.shape[0]
    n = ndx // 2
    rec_y, rec_f, rec_Fz, rec_G, rec_W, rec_dW = stages.y, stages.f, stages.Fz, stages.G, stages.W, stages.dW
    record = rec_y.shape[0] > 0
    h = dyn.dt / m
    k, ys_own, f, Fz_own, Fzz, Ks, K2s = work.k, work.ys, work.f, work.Fz, work.Fzz, work.Ks, work.K2s
    Ys_own, Hs, T = work.Ys, work.Hs, work.T
    # increment W of a composition, its sensitivities, the step's output
    W, y_new, dW, Y_new, d2W, H_new = work.W, work.y_new, work.dW, work.Y_new, work.d2W, work.H_new
    y[:] = x
    if order >= 1:
        Y[:] = 0.0
        for i in range(ndx):
            Y[i, i] = 1.0
    if order >= 2:
        H[:] = 0.0
    for step in range(m):
        sub = offset // s + step  # this step's row of the composition records
        if record and manifold:
            stages.Y0[sub] = Y[:n]
        for st in range(s):
            idx = offset + step * s + st if record else -1
            ys = rec_y[idx] if record else ys_own
            Ys = rec_G[idx] if record else Ys_own
            Fz = rec_Fz[idx] if record else Fz_own
            if manifold and st > 0:  # y_s = y ⊕ W_s, W_s = h Σ_j a_sj k_j (the first stage is y itself)
                W[:] = 0.0
                if order >= 1:
                    dW[:] = 0.0
                if order >= 2:
                    d2W[:] = 0.0
                _accumulate(a[st], st, h, k, Ks, K2s, order, W, dW, d2W)
                if not all_finite(W):
                    y[:] = np.nan
                    return False
                comp = sub * (s + 1) + st  # this composition's row of the records
                _compose(ode, order, Jet(y, Y, H), Jet(W, dW, d2W), Jet(ys, Ys, Hs),
                         stages.J[comp] if record else work.J, work)
                if record:
                    rec_W[comp], rec_dW[comp] = W[:n], dW[:n]
            else:  # y_s = y + h Σ_j a_sj k_j
                ys[:] = y
                if order >= 1:
                    Ys[:] = Y
                if order >= 2:
                    Hs[:] = H
                _accumulate(a[st], st, h, k, Ks, K2s, order, ys, Ys, Hs)
            if not all_finite(ys):
                y[:] = np.nan
                return False
            robot_dynamics(ode, ys, u, f_ext, order, f, Fz, Fzz, stages, idx, work.ode)
            k[st] = f
            if record:
                rec_f[idx] = f
            if step == 0 and st == 0:  # y_s = x: G_s = identity, H_s = 0
                if order >= 1:
                    Ks[st] = Fz
                if order >= 2:
                    K2s[st] = Fzz
                continue
            if order >= 1:
                _times_G(Fz, Ys, ndx, Ks[st])
            if order >= 2:
                _stage_hessian(Fz, Fzz, Ys, Hs, ndx, T, K2s[st])
        if manifold:  # y⁺ = y ⊕ h Σ_s b_s k_s
            W[:] = 0.0
            if order >= 1:
                dW[:] = 0.0
            if order >= 2:
                d2W[:] = 0.0
            _accumulate(b, s, h, k, Ks, K2s, order, W, dW, d2W)
            if record:
                rec_W[sub * (s + 1) + s], rec_dW[sub * (s + 1) + s] = W[:n], dW[:n]
            if not all_finite(W):
                y[:] = np.nan
                return False
            _compose(ode, order, Jet(y, Y, H), Jet(W, dW, d2W), Jet(y_new, Y_new, H_new),
                     stages.J[sub * (s + 1) + s] if record else work.J, work)
            y[:] = y_new
            if order >= 1:
                Y[:] = Y_new
            if order >= 2:
                H[:] = H_new
        else:
            _accumulate(b, s, h, k, Ks, K2s, order, y, Y, H)
    if not all_finite(y):
        y[:] = np.nan
        return False
    return True


@njit(cache=True)
def stage_records(ode, count, nx, nz, s):
    """:data:`StageRecords` for ``count`` stages (m·s per knot) of an s-stage method (see
    :func:`interval`): ys (count, nx) and, with
    ndx = :func:`tangent_dim`, fs (count, ndx), Fzs and Gs (count, ndx, nz), the dynamics'
    first-order data (S (count, nv, 6), I^C and B^C (count, n, 6, 6), rates (count, 3, nv, 6),
    joint vectors (count, nv, 6, 6), M⁻¹ (count, nv, nv)); on a manifold also each
    composition's increment W (count·(s+1)/s, nv), its
    sensitivity dW (·, nv, nz) and the Lie joints' integrate-Jacobian blocks J (·, 2, nv, 6)
    (:func:`_compose`; the rows of a step's first stage, which is its start itself, are left
    unwritten), and each step's start sensitivity Y0 (count/s, nv, nz)."""
    ndx = tangent_dim(ode, nx)
    topology, lie = lie_structure(ode)
    nb, nv = topology.shape[0], tangent_size(topology)
    n = ndx // 2 if lie.shape[0] > 0 else 0
    steps = count // s if s > 0 else 0
    return StageRecords(np.empty((count, nx)), np.empty((count, ndx)), np.empty((count, ndx, nz)),
                        np.empty((count, ndx, nz)), np.empty((count, nv, 6)), np.empty((count, nb, 6, 6)),
                        np.empty((count, nb, 6, 6)), np.empty((count, 3, nv, 6)), np.empty((count, nv, 6, 6)),
                        np.empty((count, nv, nv)), np.empty((steps * (s + 1), n)), np.empty((steps * (s + 1), n, nz)),
                        np.empty((steps, n, nz)), np.empty((steps * (s + 1), 2, n, 6)))


def stage_records_for(dyn, K: int, nx: int, nz: int):
    """:data:`StageRecords` for K knots of the interval dynamics ``dyn`` (m·s rows per knot)."""
    s = dyn.b.shape[0]
    return stage_records(dyn.ode, K * dyn.substeps * s, nx, nz, s)


@njit(cache=True)
def no_stages(ode):
    """Records with no rows: :func:`interval` records nothing."""
    return stage_records(ode, 0, 0, 0, 1)


@allocation_free
def _split_adjoint(lie, J, mu, gW, gY):
    """Adjoints of the inputs of p = y ⊕ W given μ (ndx,) at p: gW = ∂/∂W = [J_vᵀ μ_q; μ_v],
    gY = ∂/∂y = [J_qᵀ μ_q; μ_v] (J_q, J_v the integrate Jacobians at W_q: identity off the
    Lie joints, whose blocks :func:`_compose` kept in J)."""
    copy_into(gW, mu)
    copy_into(gY, mu)
    for row in range(lie.shape[0]):
        j0, k = lie[row, 1], lie[row, 2]
        Jq, Jv = J[0, j0: j0 + k, :k], J[1, j0: j0 + k, :k]
        for i in range(k):
            g = t = 0.0
            for p in range(k):
                g += Jv[p, i] * mu[j0 + p]
                t += Jq[p, i] * mu[j0 + p]
            gW[j0 + i], gY[j0 + i] = g, t


@allocation_free
def _composition_curvature(lie, Wq, dW, Y0, J, mu, Hz, scratch):
    """Hz += the curvature μᵀ∇²ψ of the composition p = y ⊕ W (adjoint μ at p) congruent
    with the sensitivities Y0 of y and dW of W (q rows), joint by joint
    (:func:`dynamics.lie.add_joint_curvature`; J: :func:`_compose`'s Jacobian blocks);
    ``scratch``: :data:`dynamics.lie.LieScratch`."""
    for row in range(lie.shape[0]):
        j0, k = lie[row, 1], lie[row, 2]
        add_joint_curvature(scratch.brackets[row, :k, :k], Wq[j0: j0 + k], J[0, j0: j0 + k, :k], J[1, j0: j0 + k, :k],
                            mu[j0: j0 + k], Y0[j0: j0 + k], dW[j0: j0 + k], Hz, scratch)


@allocation_free(inline="always")
def interval_hessian(dyn, u, stages, offset, lam, Hz, work):
    """Hz (nz, nz) = ∇²_z (λᵀF(x, u)) of the interval of the :data:`IntervalDynamics` ``dyn``
    recorded in rows offset … offset + m·s − 1 of ``stages`` (see :func:`interval`): the
    upper triangle of :func:`interval_hessian_part` 0 of 1, mirrored."""
    interval_hessian_part(dyn, u, stages, offset, lam, Hz, work, 0, 1)
    mirror_upper(Hz)


@allocation_free
def interval_hessian_part(dyn, u, stages, offset, lam, Hz, work, part, parts):
    """The upper triangle of part ``part`` of ``parts`` of ∇²_z (λᵀF(x, u)) (the interval's
    Hessian, :func:`interval_hessian`) into Hz (nz, nz): the parts sum to it, so that
    several threads can compute one interval's Hessian (every part makes the adjoint sweep
    below, a first-order pass; :func:`stage_terms` says which terms each adds).

    Second-order adjoint: on a vector space only the stage evaluations k_s = f(y_s, u) are
    nonlinear, so

        ∇²(λᵀF) = Σ_s G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s,    G_s = ∂(y_s, u)/∂z = [Y_s; 0 I],

    where w_s = ∂(λᵀF)/∂k_s is the adjoint of stage s, from a reverse sweep over the steps:
    w_s = h (b_s λ⁺ + Σ_{t>s} a_ts ȳ_t), ȳ_s = f_xᵀ w_s, and λ = λ⁺ + Σ_s ȳ_s at the start
    of each step (λ⁺ = ``lam`` after the last one). The sweep needs first-order records
    only; the stage terms G_sᵀ(w_sᵀ f_zz)G_s of a step, each a contracted FDSVA-SO
    (:func:`robot_dynamics_hessian`: no (ndx, nz, nz) tensor is formed) and a congruence,
    are then independent of one another. On a manifold every composition p = y ⊕ W passes
    its adjoint μ on as J_vᵀμ to W and J_qᵀμ to y (:func:`_split_adjoint`), and adds its
    own curvature μᵀ∇²ψ congruent with the sensitivities of (y, W)
    (:func:`_composition_curvature`), given μ also independent of the rest:
    :func:`stage_terms` adds both kinds of terms. ``work``: :func:`interval_work`.
    """
    ode, a, b, m = dyn.ode, dyn.a, dyn.b, dyn.substeps
    lie = lie_structure(ode)[1]
    manifold = lie.shape[0] > 0
    rec_Fz, rec_J = stages.Fz, stages.J
    ndx, s = rec_Fz.shape[1], b.shape[0]
    h = dyn.dt / m
    lam_y, ybar, ws = work.terms.lam, work.terms.ybar, work.terms.w
    copy_into(lam_y, lam)
    gW, gY = work.gW, work.gY  # adjoints of W_t and of y through W_t; t = s: y⁺
    Hz[:] = 0.0
    for step in range(m - 1, -1, -1):
        sub = offset // s + step
        first = offset + step * s
        c0 = sub * (s + 1)
        if manifold:
            _split_adjoint(lie, rec_J[c0 + s], lam_y, gW[s], gY[s])
        else:
            copy_into(gW[s], lam_y)
            copy_into(gY[s], lam_y)
        for st in range(s - 1, -1, -1):
            w = ws[st]
            for i in range(ndx):
                c = b[st] * gW[s, i]
                for t in range(st + 1, s):
                    c += a[t, st] * gW[t, i]
                w[i] = h * c
            Fz = rec_Fz[first + st]
            yb = ybar[st]  # ȳ_s = f_xᵀ w_s, by rows of f_x (contiguous)
            yb[:] = 0.0
            for p in range(ndx):
                wp = w[p]
                if wp != 0.0:
                    for i in range(ndx):
                        yb[i] += Fz[p, i] * wp
            if manifold and st > 0:
                _split_adjoint(lie, rec_J[c0 + st], ybar[st], gW[st], gY[st])
            else:
                copy_into(gW[st], ybar[st])
                copy_into(gY[st], ybar[st])
        stage_terms(ode, u, stages, (first, offset), Hz, work, part, parts)
        copy_into(lam_y, gY[s])
        for st in range(s):
            for i in range(ndx):
                lam_y[i] += gY[st, i]


@allocation_free
def stage_terms(ode, u, stages, rows, Hz, work, part, parts):
    """Hz += Σ_s G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s over the s stages of the step whose first record
    row is ``rows[0]`` (G = identity for the interval's first stage, row ``rows[1]``), given
    the adjoints of :func:`interval_hessian` (in ``work.terms``); on a manifold also the
    curvature of the step's compositions y ⊕ W_t for t = 1 … s (adjoint ȳ_t; t = s is y⁺,
    adjoint λ⁺), from their records in ``stages``. Only the upper triangle of what is
    added is meaningful (:func:`_congruence_add`). Of ``parts``, part ``part`` adds the
    stages s ≡ part (mod parts) and part 0 the compositions."""
    first, offset = rows
    terms = work.terms
    W, P = terms.sums[0], terms.sums[1]
    ws, ybar = terms.w, terms.ybar
    ndx, s = stages.Fz.shape[1], ws.shape[0]
    for st in range(part, s, parts):
        idx = first + st
        # W = w_sᵀ f_zz(y_s, u): contracted FDSVA-SO
        robot_dynamics_hessian(ode, stages.y[idx], u, stages.f[idx], stages.Fz[idx], stages, idx, ws[st], W,
                               terms.second, work.ode.so)
        if idx == offset:  # G_0 = identity
            axpy(1.0, W, Hz)
        else:  # Hz += G_sᵀ W G_s
            _congruence_add(W, stages.G[idx], ndx, P, Hz)
    lie = lie_structure(ode)[1]
    if lie.shape[0] == 0 or part != 0:
        return
    sub = first // s  # the step's row of the composition records
    c0 = sub * (s + 1)
    for st in range(1, s + 1):
        mu = terms.lam if st == s else ybar[st]  # y⁺'s adjoint is λ⁺
        _composition_curvature(lie, stages.W[c0 + st], stages.dW[c0 + st], stages.Y0[sub], stages.J[c0 + st], mu,
                               Hz, work.lie)


@njit(cache=True, inline="always")
def _zero_row(X, p):
    """Whether row p of X is all zeros."""
    for c in range(X.shape[1]):
        if X[p, c] != 0.0:
            return False
    return True


@allocation_free
def _add_Gt_times(Y, X, ndx, out):
    """out (nz, nz) += Gᵀ X for G = [Y; 0 I] (Y (ndx, nz)), X (nz, nz), rows of X four at a
    time (:func:`_add_rows`): groups of four zero entries of Y and of four zero rows of X
    are skipped. Gᵀ X G is symmetric, and the callers only use its upper triangle
    (:func:`_stage_hessian` and :func:`interval_hessian` mirror its upper
    triangle); whole rows are updated all the same, since full-length
    contiguous loops vectorise and cost less than the triangle's ragged ones."""
    nz = X.shape[0]
    q = ndx - ndx % 4
    for p in range(0, q, 4):
        if _zero_row(X, p) and _zero_row(X, p + 1) and _zero_row(X, p + 2) and _zero_row(X, p + 3):
            continue  # e.g. the base's q rows of a free-floating robot without gravity
        for r in range(nz):
            g0, g1, g2, g3 = Y[p, r], Y[p + 1, r], Y[p + 2, r], Y[p + 3, r]
            if g0 != 0.0 or g1 != 0.0 or g2 != 0.0 or g3 != 0.0:
                _add_rows(out, r, X, p, g0, g1, g2, g3)
    for p in range(q, ndx):
        for r in range(nz):
            if Y[p, r] != 0.0:
                _add_row(out, r, X, p, Y[p, r])
    for p in range(ndx, nz):
        _add_row(out, p, X, p, 1.0)


@allocation_free
def _congruence_add(W, Y, ndx, P, Hz):
    """Hz += Gᵀ W G for G = [Y; 0 I] (Y (ndx, nz)), whose upper triangle alone is used (the
    caller mirrors the sum once); P (nz, nz) is workspace.

    Zero entries of W (most of the v–τ and τ–τ blocks of a robot's), four at a time, are
    skipped.
    """
    _times_G(W, Y, ndx, P)
    _add_Gt_times(Y, P, ndx, Hz)


# Whole trajectories: each batched evaluation runs its knots in chunks claimed by the threads
# of dynamics.parallel.run_chunks (the chunk kernels release the GIL). Every knot is computed
# by the same code whichever thread runs it: results do not depend on the thread count.
# The states must be valid configurations (the callers check them).

def step_batch(dyn, xs, us) -> np.ndarray:
    """x⁺ (K, nx) of one interval of ``dyn`` from every (x_k, u_k) (interval k's forces);
    NaN rows where it diverged."""
    out = np.empty(xs.shape)
    run_chunks(_step_chunk, xs.shape[0], dyn, xs, us, out)
    return out


@njit(cache=True, nogil=True)
def _step_chunk(dyn, xs, us, out, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    work = interval_work(dyn, xs.shape[1], us.shape[1], 0)
    while k0 < k1:
        for kk in range(k0, k1):
            interval(dyn, kk, xs[kk], us[kk], 0, out[kk], work.no_Y, work.no_H, work.no_stages, 0, work)
        k0, k1 = next_chunk(claims)


def step_derivatives_batch(dyn, xs, us, order, y, Fz, run=run_chunks) -> tuple[np.ndarray, ...]:
    """x⁺ (K, nx), Fz (K, ndx, nz) into y and Fz, and for order 2 Fzz (K, ndx, nz, nz) at every
    knot (ndx = :func:`tangent_dim`, nz = ndx + nu).

    For order 1 the returned Fzz has shape (K, 0, 0, 0). ``run``: :func:`~dynamics.parallel.run_chunks`,
    or an :class:`~dynamics.parallel.Ahead`'s ``start`` (the outputs written once it is joined).
    """
    K, nx = xs.shape
    ndx = tangent_dim(dyn.ode, nx)
    nz = ndx + us.shape[1]
    Fzz = np.empty((K, ndx, nz, nz)) if order >= 2 else np.empty((K, 0, 0, 0))
    chunk = _step_second_derivatives_chunk if order >= 2 else _step_derivatives_chunk
    run(chunk, K, dyn, xs, us, y, Fz, Fzz)
    return y, Fz, Fzz


@njit(cache=True, nogil=True)
def _step_derivatives_chunk(dyn, xs, us, y, Fz, Fzz, claims):
    _derivatives_of_chunks(dyn, xs, us, 1, y, Fz, Fzz, claims)


@njit(cache=True, nogil=True)
def _step_second_derivatives_chunk(dyn, xs, us, y, Fz, Fzz, claims):
    _derivatives_of_chunks(dyn, xs, us, 2, y, Fz, Fzz, claims)


@njit(cache=True, nogil=True, literal=("order",))
def _derivatives_of_chunks(dyn, xs, us, order, y, Fz, Fzz, claims):
    """The intervals of the chunks claimed from ``claims`` to derivative order ``order``,
    a constant: each order is compiled on its own, so that order 1 shares the interval's
    specialisation with the stage-recording pass and compiles no second-order code."""
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    work = interval_work(dyn, xs.shape[1], us.shape[1], order)
    while k0 < k1:
        for kk in range(k0, k1):
            H = Fzz[kk] if order >= 2 else work.no_H
            interval(dyn, kk, xs[kk], us[kk], order, y[kk], Fz[kk], H, work.no_stages, 0, work)
        k0, k1 = next_chunk(claims)


def step_stages_batch(dyn, xs, us, stages, y, Fz, run=run_chunks) -> tuple[np.ndarray, np.ndarray]:
    """x⁺ (K, nx) and Fz (K, ndx, nz) at every knot into y and Fz, recording the stages into ``stages``.

    Knot k owns rows k·ms … (k + 1)·ms − 1 (ms = m·s) of the records (see
    :func:`interval`, :func:`stage_records`; they may be reused from one call to the
    next): what :func:`interval_hessian` needs for any multiplier. ``run`` as
    :func:`step_derivatives_batch` takes it.
    """
    K = xs.shape[0]
    run(_step_stages_chunk, K, dyn, xs, us, stages, y, Fz)
    return y, Fz


@njit(cache=True, nogil=True)
def _step_stages_chunk(dyn, xs, us, stages, y, Fz, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    ms = dyn.substeps * dyn.b.shape[0]
    work = interval_work(dyn, xs.shape[1], us.shape[1], 1)
    while k0 < k1:
        for kk in range(k0, k1):
            interval(dyn, kk, xs[kk], us[kk], 1, y[kk], Fz[kk], work.no_H, stages, kk * ms, work)
        k0, k1 = next_chunk(claims)


def interval_hessians_batch(dyn, us, stages, lams) -> np.ndarray:
    """(K, nz, nz): ∇²_z(λ_kᵀF(x_k, u_k)) at every knot, from the records of
    :func:`step_stages_batch` and the multipliers lams (K, ndx)."""
    K, nz = us.shape[0], stages.G.shape[2]
    Hz = np.empty((K, nz, nz))
    run_chunks(_interval_hessians_chunk, K, dyn, us, stages, lams, Hz)
    return Hz


@njit(cache=True, nogil=True)
def _interval_hessians_chunk(dyn, us, stages, lams, Hz, claims):
    k0, k1 = first_chunk(claims)
    if k0 == k1:
        return
    ms = dyn.substeps * dyn.b.shape[0]
    work = interval_work(dyn, stages.y.shape[1], us.shape[1], 1)
    while k0 < k1:
        for kk in range(k0, k1):
            interval_hessian(dyn, us[kk], stages, kk * ms, lams[kk], Hz[kk], work)
        k0, k1 = next_chunk(claims)
