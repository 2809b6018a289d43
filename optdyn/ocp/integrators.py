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

The continuous dynamics is :func:`robot_dynamics` ``(params, x, u, fext, order, f, Fz, Fzz,
data, idx, dw)``: it writes f (nx,), and for order ≥ 1 Fz (nx, nz), for order 2 Fzz (nx, nz, nz);
:func:`robot_dynamics_hessian` gives the contracted second derivative w·f_zz from what the
first-order call stored; ``dw`` is the dynamics' workspace (:func:`robot_work`). They are
called as globals of the compiled kernels (not passed as function arguments, which
numba's on-disk cache cannot key reliably).

Workspace: every temporary of :func:`interval` and :func:`interval_hessian`, the
dynamics' and the group compositions' included, lives in an :data:`IntervalWork` made
once per loop over knots (:func:`interval_work`: once per chunk, per rollout, per backward
pass), so the stage sweeps of a whole trajectory allocate nothing per knot or per stage.

External forces: ``fext`` (njoints, 6) is the robot's ``f_ext`` of :func:`dynamics.rnea`
during the interval ((0, 6): none), held like u. It is a force fixed in each body's frame,
so it moves with the body as q varies and the q-derivatives (first and contracted second
order) are those of FD(q, v, τ, f_ext) at that fixed f_ext. The batch kernels take F
(K, njoints, 6) (interval k uses F[k]) or one row F (1, ·, 6) for every interval
(:func:`dynamics.batch.knot_force`; ``NO_FORCES`` = none).

The Hessian of λᵀF — what DDP (λ = V'_x) and the multiple-shooting Lagrangian (λ = the
defect multipliers) need — is computed contracted by :func:`interval_hessian`, a
second-order adjoint over stage records kept by the first-order pass (its stage terms in
two halves, on two threads for DDP's serial backward pass: :func:`stage_terms`); the full
tensors (order 2) remain for users and tests.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit, prange
from numba.extending import overload

from dynamics._compile import allocation_free
from dynamics.aba import NOT_POSITIVE, aba_into
from dynamics.aba_derivatives import aba_derivatives_into
from dynamics.aba_second_derivatives import fdsva_so_terms
from dynamics.aba_second_derivatives_contracted import fdsva_so_contracted_terms
from dynamics.batch import knot_force
from dynamics.joints import GROUP_SCRATCH, lie_jacobian_into
from dynamics.lie import add_joint_curvature, lie_blocks, lie_scratch
from dynamics.kinematics import all_finite, tangent_size
from dynamics.model import Model
from dynamics.parallel import run_chunks
from dynamics.rnea_second_derivatives_contracted import new_so_work
from dynamics.spatial import copy_into, matmul_add, mirror_upper
from dynamics.workspace import Data, new_data

from .state import state_integrate_into

_RK4 = (np.array([[0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]),
        np.array([1.0, 2.0, 2.0, 1.0]) / 6.0)
_EULER = (np.zeros((1, 1)), np.ones(1))
METHODS = {"rk4": _RK4, "euler": _EULER}
"""Butcher tableaux (a (s, s) strictly lower triangular, b (s,)) by name."""


def robot_params(model: Model, actuated: np.ndarray | None = None) -> tuple:
    """The compiled record passed to :func:`robot_dynamics`: (``model.arrays``, the
    actuated tangent indices (nu,) with τ[actuated] = u and the other τ zero,
    :func:`optdyn.ocp.state.lie_blocks`). ``actuated`` defaults to every joint."""
    act = np.arange(model.nv) if actuated is None else np.asarray(actuated, dtype=np.int64)
    return model.arrays, np.ascontiguousarray(act, dtype=np.int64), lie_blocks(model)


def lie_structure(params):
    """(topology, Lie blocks (L, 3)) of a :func:`robot_params` record; (0, 7), (0, 3)
    arrays for any other record (e.g. a vector-space ODE's parameters)."""


@overload(lie_structure)
def _lie_structure(params):
    if len(params) == 3:
        return lambda params: (params[0][0], params[2])
    return lambda params: (np.zeros((0, 7), np.int64), np.zeros((0, 3), np.int64))


def lie_records(stages):
    """The composition records (W (Rc, nv), dW (Rc, nv, nz), Y (Rs, nv, nz), J (Rc, 2, nv, 6))
    of stage records with 9 entries (:func:`stage_records`), empty ones for records of 5."""


@overload(lie_records)
def _lie_records(stages):
    if len(stages) == 9:
        return lambda stages: (stages[5], stages[6], stages[7], stages[8])
    return lambda stages: (np.empty((0, 0)), np.empty((0, 0, 0)), np.empty((0, 0, 0)), np.empty((0, 2, 0, 6)))


@njit(cache=True)
def robot_data(params, count):
    """Storage for ``count`` evaluations' first-order data (see :func:`robot_dynamics`):
    S (count, nv, 6), I^C and B^C (count, n, 6, 6), rates (count, 3, nv, 6), joint vectors
    (count, nv, 6, 6), M⁻¹ (count, nv, nv)."""
    n, nv = params[0][0].shape[0], tangent_size(params[0][0])
    return (np.empty((count, nv, 6)), np.empty((count, n, 6, 6)), np.empty((count, n, 6, 6)),
            np.empty((count, 3, nv, 6)), np.empty((count, nv, 6, 6)), np.empty((count, nv, nv)))


@njit(cache=True, inline="always")
def _recording(d, data, idx):
    """The workspace ``d`` with its first-order data (S, I^C, B^C, rates, joint vectors) in
    row ``idx`` of the records ``data`` (:func:`robot_data`): the passes write them there,
    and nothing is copied."""
    return Data(R=d.R, p=d.p, S=data[0][idx], I=data[1][idx], IA=d.IA, Dinv=d.Dinv, BC=data[2][idx], vel=d.vel,
                acc=d.acc, fC=d.fC, pA=d.pA, da=d.da, U=d.U, UD=d.UD, rates=data[3][idx], u=d.u, tau=d.tau,
                Minv=d.Minv, dq=d.dq, dv=d.dv, F=d.F, P=d.P, T=data[4][idx], h=d.h, gauss=d.gauss)


@njit(cache=True)
def robot_work(params):
    """Workspace of :func:`robot_dynamics` and :func:`robot_dynamics_hessian`: (the
    algorithms' :data:`dynamics.workspace.Data`, τ (nv,), (∂q̈/∂q, ∂q̈/∂v, M⁻¹) (3, nv, nv),
    Hessian blocks (5, nv, nv), contracted-SO scratch of
    :func:`dynamics.rnea_second_derivatives_contracted.new_so_work`)."""
    topology = params[0][0]
    nv = tangent_size(topology)
    return new_data(topology), np.empty(nv), np.empty((3, nv, nv)), np.empty((5, nv, nv)), new_so_work(topology)


@njit(cache=True)
def robot_dynamics(params, x, u, fext, order, f, Fz, Fzz, data, idx, dw):
    """ẋ = [v; FD(q, v, B u, fext)] and its first/second derivatives w.r.t.
    z = (δq, v, u) (δq in the tangent space at q; τ = B u with the actuated columns
    ``params[1]`` of B = selection, so ∂/∂u_c = ∂/∂τ_{act[c]}); every intermediate in the
    workspace ``dw`` of :func:`robot_work`.

    For order 1 and ``idx`` ≥ 0 the first-order data that :func:`robot_dynamics_hessian`
    reuses (with M⁻¹) is written into row ``idx`` of ``data`` (from :func:`robot_data`).
    """
    model, act = params[0], params[1]
    n = tangent_size(model[0])
    nq = x.shape[0] - n
    q, v = x[:nq], x[nq:]
    d, tau, out = dw[0], dw[1], dw[2]
    tau[:] = 0.0
    for c in range(act.shape[0]):
        tau[act[c]] = u[c]
    f[:n] = v
    qdd = f[n:]
    if order == 0:
        if not aba_into(model, d, q, v, tau, fext, qdd):
            raise ValueError(NOT_POSITIVE)
        return
    da_dq, da_dv, da_dtau = out[0], out[1], out[2]
    if idx >= 0:
        d, da_dtau = _recording(d, data, idx), data[5][idx]
    if not aba_derivatives_into(model, d, q, v, tau, fext, qdd, da_dq, da_dv, da_dtau):
        raise ValueError(NOT_POSITIVE)
    Fz[:] = 0.0
    for i in range(n):
        Fz[i, n + i] = 1.0
        for j in range(n):
            Fz[n + i, j] = da_dq[i, j]
            Fz[n + i, n + j] = da_dv[i, j]
        for c in range(act.shape[0]):
            Fz[n + i, 2 * n + c] = da_dtau[i, act[c]]
    if order < 2:
        return
    d2q, d2v, d2qv, d2qtau = fdsva_so_terms(model, q, v, fext, qdd, da_dq, da_dv, da_dtau)  # full tensors: allocates
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
def robot_dynamics_hessian(params, x, u, f, Fz, data, idx, w, W, dw):
    """W (nz, nz) = Σ_i w_i ∂²f_i/∂z² of ẋ = [v; FD(q, v, B u)] at (x, u), given Fz and the
    first-order ``data`` (row ``idx``) that :func:`robot_dynamics` stored there; ``dw``
    from :func:`robot_work`.

    Only the FD rows are nonlinear, so this is contracted FDSVA-SO with λ = w[nv:],
    from the FD rows of Fz ([∂q̈/∂q  ∂q̈/∂v  ∂q̈/∂u], ∂q̈/∂u = M⁻¹B), M⁻¹ and the first-order
    RNEA data (which already carries the interval's external forces: no ``fext`` argument
    here).
    """
    act = params[1]
    n, nu = tangent_size(params[0][0]), act.shape[0]
    work = dw[3]
    Hqq, Hvv, Hqv, Mq = work[0], work[1], work[2], work[3]
    Hqu = work[4].reshape(-1)[: n * nu].reshape((n, nu))  # Σ_i λ_i ∂²q̈_i/∂q∂u
    fo = (data[0][idx], data[1][idx], data[2][idx], data[3][idx], data[4][idx])
    fdsva_so_contracted_terms(params[0][0], Fz[n:], data[5][idx], fo, w[n:], Hqq, Hvv, Hqv, Hqu, Mq, dw[4])
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
def _times_G(X, Y, nx, out):
    """out (r, nz) = X G for X (r, nz) and G = [Y; 0 I] (Y (nx, nz)): with X = f_z, the
    stage Jacobian ∂k_s/∂z = f_z G_s. Rows of Y four at a time (:func:`_add_rows`); groups
    of four zero entries of X are skipped."""
    nz = X.shape[1]
    q = nx - nx % 4
    for i in range(X.shape[0]):
        for c in range(nz):
            out[i, c] = X[i, c] if c >= nx else 0.0
        for p in range(0, q, 4):
            x0, x1, x2, x3 = X[i, p], X[i, p + 1], X[i, p + 2], X[i, p + 3]
            if x0 != 0.0 or x1 != 0.0 or x2 != 0.0 or x3 != 0.0:
                _add_rows(out, i, Y, p, x0, x1, x2, x3)
        for p in range(q, nx):
            if X[i, p] != 0.0:
                _add_row(out, i, Y, p, X[i, p])


@allocation_free
def _stage_hessian(Fz, Fzz, Ys, Hs, nx, T, K2s):
    """K2s (nx, nz, nz) = Σ_pr f_zz[:, p, r] G_s[p] G_s[r] + f_x H_s (T: work (nz, nz)).

    Both terms are symmetric in their last two indices: only c ≥ b is summed, then
    mirrored. Zero entries of f_zz and f_x (most of a robot's) are skipped.
    """
    nz = Fz.shape[1]
    for i in range(nx):
        # T[p, c] = Σ_r f_zz[i, p, r] G[r, c]
        T[:] = 0.0
        nonzero = False
        for p in range(nz):
            for r in range(nz):
                w = Fzz[i, p, r]
                if w != 0.0:
                    nonzero = True
                    if r < nx:
                        for c in range(nz):
                            T[p, c] += w * Ys[r, c]
                    else:
                        T[p, r] += w
        K = K2s[i]
        K[:] = 0.0
        if nonzero:
            _add_Gt_times(Ys, T, nx, K)
        for p in range(nx):
            fp = Fz[i, p]
            if fp != 0.0:
                for b in range(nz):
                    for c in range(b, nz):
                        K[b, c] += fp * Hs[p, b, c]
        for b in range(nz):
            for c in range(b):
                K[b, c] = K[c, b]


@allocation_free
def _axpy(c, x, y):
    """y += c·x for C-contiguous arrays of equal shape, without temporaries."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    for i in range(xf.shape[0]):
        yf[i] += c * xf[i]


@njit(cache=True)
def tangent_dim(params, nx):
    """Tangent dimension ndx of states with nx coordinates: 2·nv on a model with Lie-group
    joints, nx otherwise (a vector space, also for ODE parameter records)."""
    topology, lie = lie_structure(params)
    return 2 * tangent_size(topology) if lie.shape[0] > 0 else nx


@allocation_free
def _accumulate(coef, count, h, k, Ks, K2s, order, y, Y, H):
    """y += h Σ_{j<count} coef_j k_j, and likewise Y with the stage derivatives' first (Ks)
    and H with their second (K2s) sensitivities (per ``order``)."""
    for j in range(count):
        c = h * coef[j]
        if c != 0.0:
            _axpy(c, k[j], y)
            if order >= 1:
                _axpy(c, Ks[j], Y)
            if order >= 2:
                _axpy(c, K2s[j], H)


@allocation_free
def _compose(topology, lie, y, Y, H, W, dW, d2W, order, ys, Ys, Hs, J, work):
    """ys = y ⊕ W and its sensitivities Ys, Hs in its own chart (:mod:`optdyn.ocp.state`),
    from those of y (Y, H, in y's chart) and of the increment W (dW, d2W):

        Ys_q = J_q Y_q + J_v dW_q,            Ys_v = Y_v + dW_v,
        Hs_q = J_q H_q + J_v d2W_q + ∇²ψ[(Y_q, dW_q), (Y_q, dW_q)],   Hs_v = H_v + d2W_v,

    J_q, J_v the integrate Jacobians at W_q and ψ the composition of the joints' groups.
    For order ≥ 1 the Lie joints' diagonal blocks of J_q, J_v are kept for the adjoint of
    :func:`interval_hessian` in J (2, nv, 6): J[0, m + i, c] = J_q[m + i, m + c] for the
    joint whose block starts at row m (likewise J[1] and J_v); the rows of 1-DoF joints
    are left alone (their Jacobians are 1). ``work``: the :data:`IntervalWork`.
    """
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
        m, k = lie[row, 1], lie[row, 2]
        for i in range(m, m + k):
            for c in range(k):
                J[0, i, c], J[1, i, c] = Jq[i, m + c], Jv[i, m + c]
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
                _axpy(Jq[i, p], H[p], Hs[i])
            if Jv[i, p] != 0.0:
                _axpy(Jv[i, p], d2W[p], Hs[i])
        copy_into(Hs[n + i], H[n + i])
        _axpy(1.0, d2W[n + i], Hs[n + i])
    e = work.e
    for row in range(lie.shape[0]):
        m, k = lie[row, 1], lie[row, 2]
        for i in range(k):
            e[:k] = 0.0
            e[i] = 1.0
            add_joint_curvature(scratch.brackets[row, :k, :k], W[m: m + k], Jq[m: m + k, m: m + k], Jv[m: m + k, m: m + k],
                                e[:k], Y[m: m + k], dW[m: m + k], Hs[m + i], scratch)
            mirror_upper(Hs[m + i])


IntervalWork = namedtuple("IntervalWork", [
    "k", "f", "ys", "Fz", "Fzz", "Ks", "K2s", "Ys", "Hs", "T",  # stages of interval()
    "W", "y_new", "dW", "Y_new", "d2W", "H_new", "J",  # its group compositions (rows 0 off a manifold)
    "Jqv", "group", "e",  # their integrate Jacobians, the joints' Jacobian blocks' scratch, a unit vector
    "lie", "lie2",  # their curvature's workspace (optdyn.state.LieScratch), a second one for the second half
    "lam", "ybar", "w", "gW", "gY",  # adjoints of interval_hessian()
    "halves",  # its stage terms' (W, P, Hh) (3, 2, nz, nz): one of each per half of the stages (stage_terms)
    "dyn", "dyn2",  # the dynamics' own workspace (robot_work), a second one for the second half
])
"""Workspace of :func:`interval` (sized for one ``order``) and :func:`interval_hessian`."""


@njit(cache=True)
def interval_work(params, nq_x, nu, s, order):
    """An :data:`IntervalWork` for states of nq_x coordinates, nu controls, an s-stage
    method and sensitivities up to ``order``: every array :func:`interval` and
    :func:`interval_hessian` use, made once for a loop over many intervals."""
    nx = tangent_dim(params, nq_x)
    nz = nx + nu
    lie = lie_structure(params)[1]
    nw = nx if lie.shape[0] > 0 else 0
    o1, o2 = order >= 1, order >= 2
    return IntervalWork(
        np.empty((s, nx)), np.empty(nx), np.empty(nq_x), np.empty((nx, nz) if o1 else (0, 0)),
        np.empty((nx, nz, nz) if o2 else (0, 0, 0)), np.empty((s, nx, nz) if o1 else (0, 0, 0)),
        np.empty((s, nx, nz, nz) if o2 else (0, 0, 0, 0)), np.empty((nx, nz) if o1 else (0, 0)),
        np.empty((nx, nz, nz) if o2 else (0, 0, 0)), np.empty((nz, nz)),
        np.empty(nw), np.empty(nq_x), np.empty((nw, nz) if o1 else (0, 0)), np.empty((nw, nz) if o1 else (0, 0)),
        np.empty((nw, nz, nz) if o2 else (0, 0, 0)), np.empty((nw, nz, nz) if o2 else (0, 0, 0)),
        np.empty((2, nw // 2, 6)), np.empty((2, nw // 2, nw // 2)), np.empty(GROUP_SCRATCH), np.empty(6),
        lie_scratch(lie, nz), lie_scratch(lie, nz),
        np.empty(nx), np.empty((s, nx)), np.empty((s, nx)), np.empty((s + 1, nx)), np.empty((s + 1, nx)),
        np.empty((3, 2, nz, nz)), robot_work(params), robot_work(params))


@njit(cache=True)
def interval(params, a, b, x, u, fext, dt, m, order, y, Y, H, stages, offset, work):
    """One interval (m steps) from (x, u) under external forces ``fext``: writes y = x⁺, Y = ∂x⁺/∂z, H = ∂²x⁺/∂z².

    On a model with Lie-group joints the scheme is the Runge–Kutta method in the tangent
    space of each step's start y (the Crocoddyl RK4 of Mastalli et al. 2020): stages
    y_s = y ⊕ h Σ_j a_sj k_j, y⁺ = y ⊕ h Σ_s b_s k_s, where the velocity part of k_j is
    read in y's tangent space; sensitivities are w.r.t. z = (δx, u), δx in x's chart,
    and expressed in x⁺'s chart (each composition by :func:`_compose`). On a vector
    space ⊕ is + and the sensitivities simply accumulate like y (module docstring).

    ``stages`` (:func:`stage_records`) receives in rows offset … offset + m·s − 1, for
    order 1, every stage's input y_s, derivative k_s = f(y_s, u), Jacobian f_z(y_s, u),
    sensitivity Y_s = ∂y_s/∂z and the dynamics' first-order data (:func:`robot_data`),
    and on a manifold the compositions' increments and sensitivities: what
    :func:`interval_hessian` needs. Records with no rows (:func:`no_stages`) record nothing.
    ``work`` (:func:`interval_work`, for at least this ``order``) holds every temporary.
    Returns False (y set to NaN) if a stage state or derivative became non-finite.
    """
    topology, lie = lie_structure(params)
    manifold = lie.shape[0] > 0
    nx = tangent_dim(params, x.shape[0])
    nz, s = nx + u.shape[0], b.shape[0]
    n = nx // 2
    rec_y, rec_f, rec_Fz, rec_G, data = stages[0], stages[1], stages[2], stages[3], stages[4]
    rec_W, rec_dW, rec_Y0, rec_J = lie_records(stages)
    record = rec_y.shape[0] > 0
    h = dt / m
    k, ys_own, f, Fz_own, Fzz, Ks, K2s = work.k, work.ys, work.f, work.Fz, work.Fzz, work.Ks, work.K2s
    Ys_own, Hs, T = work.Ys, work.Hs, work.T
    # increment W of a composition, its sensitivities, the step's output
    W, y_new, dW, Y_new, d2W, H_new = work.W, work.y_new, work.dW, work.Y_new, work.d2W, work.H_new
    y[:] = x
    if order >= 1:
        Y[:] = 0.0
        for i in range(nx):
            Y[i, i] = 1.0
    if order >= 2:
        H[:] = 0.0
    for step in range(m):
        sub = offset // s + step  # this step's row of the composition records
        if record and manifold:
            rec_Y0[sub] = Y[:n]
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
                _compose(topology, lie, y, Y, H, W, dW, d2W, order, ys, Ys, Hs, rec_J[comp] if record else work.J,
                         work)
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
            robot_dynamics(params, ys, u, fext, order, f, Fz, Fzz, data, idx, work.dyn)
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
                _times_G(Fz, Ys, nx, Ks[st])
            if order >= 2:
                _stage_hessian(Fz, Fzz, Ys, Hs, nx, T, K2s[st])
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
            _compose(topology, lie, y, Y, H, W, dW, d2W, order, y_new, Y_new, H_new,
                     rec_J[sub * (s + 1) + s] if record else work.J, work)
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
def stage_records(params, count, nx, nz, s):
    """Stage records (ys, fs, Fzs, Gs, data, W, dW, Y0, J) for ``count`` stages (m·s per
    knot) of an s-stage method (see :func:`interval`): ys (count, nx) and, with
    ndx = :func:`tangent_dim`, fs (count, ndx), Fzs and Gs (count, ndx, nz), the dynamics'
    ``data``; on a manifold also each composition's increment W (count·(s+1)/s, nv), its
    sensitivity dW (·, nv, nz) and the Lie joints' integrate-Jacobian blocks J (·, 2, nv, 6)
    (:func:`_compose`; the rows of a step's first stage, which is its start itself, are left
    unwritten), and each step's start sensitivity Y0 (count/s, nv, nz)."""
    ndx = tangent_dim(params, nx)
    topology, lie = lie_structure(params)
    n = ndx // 2 if lie.shape[0] > 0 else 0
    steps = count // s if s > 0 else 0
    return (np.empty((count, nx)), np.empty((count, ndx)), np.empty((count, ndx, nz)), np.empty((count, ndx, nz)),
            robot_data(params, count), np.empty((steps * (s + 1), n)), np.empty((steps * (s + 1), n, nz)),
            np.empty((steps, n, nz)), np.empty((steps * (s + 1), 2, n, 6)))


@njit(cache=True)
def no_stages(params):
    """Records with no rows: :func:`interval` records nothing."""
    return stage_records(params, 0, 0, 0, 1)


@allocation_free
def _split_adjoint(lie, J, mu, gW, gY):
    """Adjoints of the inputs of p = y ⊕ W given μ (ndx,) at p: gW = ∂/∂W = [J_vᵀ μ_q; μ_v],
    gY = ∂/∂y = [J_qᵀ μ_q; μ_v] (J_q, J_v the integrate Jacobians at W_q: identity off the
    Lie joints, whose blocks :func:`_compose` kept in J)."""
    copy_into(gW, mu)
    copy_into(gY, mu)
    for row in range(lie.shape[0]):
        m, k = lie[row, 1], lie[row, 2]
        Jq, Jv = J[0, m: m + k, :k], J[1, m: m + k, :k]
        for i in range(k):
            g = t = 0.0
            for p in range(k):
                g += Jv[p, i] * mu[m + p]
                t += Jq[p, i] * mu[m + p]
            gW[m + i], gY[m + i] = g, t


@allocation_free
def _composition_curvature(lie, Wq, dW, Y0, J, mu, Hz, scratch):
    """Hz += the curvature μᵀ∇²ψ of the composition p = y ⊕ W (adjoint μ at p) congruent
    with the sensitivities Y0 of y and dW of W (q rows), joint by joint
    (:func:`optdyn.ocp.state.add_joint_curvature`; J: :func:`_compose`'s Jacobian blocks);
    ``scratch``: :data:`optdyn.ocp.state.LieScratch`."""
    for row in range(lie.shape[0]):
        m, k = lie[row, 1], lie[row, 2]
        add_joint_curvature(scratch.brackets[row, :k, :k], Wq[m: m + k], J[0, m: m + k, :k], J[1, m: m + k, :k],
                            mu[m: m + k], Y0[m: m + k], dW[m: m + k], Hz, scratch)


@allocation_free
def interval_hessian(params, a, b, dt, m, u, stages, offset, lam, Hz, work, split):
    """Hz (nz, nz) = ∇²_z (λᵀF(x, u)) of the interval recorded in rows offset … offset + m·s − 1
    of ``stages`` (see :func:`interval`).

    Second-order adjoint: on a vector space only the stage evaluations k_s = f(y_s, u) are
    nonlinear, so

        ∇²(λᵀF) = Σ_s G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s,    G_s = ∂(y_s, u)/∂z = [Y_s; 0 I],

    where w_s = ∂(λᵀF)/∂k_s is the adjoint of stage s, from a reverse sweep over the steps:
    w_s = h (b_s λ⁺ + Σ_{t>s} a_ts ȳ_t), ȳ_s = f_xᵀ w_s, and λ = λ⁺ + Σ_s ȳ_s at the start
    of each step (λ⁺ = ``lam`` after the last one). The sweep needs first-order records
    only; the stage terms G_sᵀ(w_sᵀ f_zz)G_s of a step, each a contracted FDSVA-SO
    (:func:`robot_dynamics_hessian`: no (nx, nz, nz) tensor is formed) and a congruence,
    are then independent of one another. On a manifold every composition p = y ⊕ W passes
    its adjoint μ on as J_vᵀμ to W and J_qᵀμ to y (:func:`_split_adjoint`), and adds its
    own curvature μᵀ∇²ψ congruent with the sensitivities of (y, W)
    (:func:`_composition_curvature`), given μ also independent of the rest:
    :func:`stage_terms` sums both kinds of terms in two halves, on two threads when
    ``split`` (same sums either way). ``work``: :func:`interval_work`.
    """
    lie = lie_structure(params)[1]
    manifold = lie.shape[0] > 0
    rec_Fz, rec_J = stages[2], lie_records(stages)[3]
    nx, s = rec_Fz.shape[1], b.shape[0]
    h = dt / m
    lam_y, ybar, ws = work.lam, work.ybar, work.w
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
            for i in range(nx):
                c = b[st] * gW[s, i]
                for t in range(st + 1, s):
                    c += a[t, st] * gW[t, i]
                w[i] = h * c
            Fz = rec_Fz[first + st]
            yb = ybar[st]  # ȳ_s = f_xᵀ w_s, by rows of f_x (contiguous)
            yb[:] = 0.0
            for p in range(nx):
                wp = w[p]
                if wp != 0.0:
                    for i in range(nx):
                        yb[i] += Fz[p, i] * wp
            if manifold and st > 0:
                _split_adjoint(lie, rec_J[c0 + st], ybar[st], gW[st], gY[st])
            else:
                copy_into(gW[st], ybar[st])
                copy_into(gY[st], ybar[st])
        stage_terms(params, u, stages, first, offset, Hz, work, split)
        copy_into(lam_y, gY[s])
        for st in range(s):
            for i in range(nx):
                lam_y[i] += gY[st, i]
    mirror_upper(Hz)


@allocation_free
def _stage_half(params, u, rec_y, rec_f, rec_Fz, rec_G, data, comp, first, offset, ws, ybar, lam, half, dyn, lsc, W,
                P, Hh):
    """Hh (nz, nz) = Σ G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s over the stages s = half, half + 2, …
    of the step whose first record row is ``first`` (w_s = ws[s]); G = identity for the
    interval's first stage (row ``offset``). On a manifold it adds the curvature of the
    step's compositions y ⊕ W_t for t = half, half + 2, … ≤ s (adjoint ȳ_t = ybar[t];
    t = s is y⁺, adjoint ``lam``; t = 0 has none), from their records ``comp``
    (:func:`lie_records`).
    W, P (nz, nz), ``dyn`` (:func:`robot_work`) and ``lsc`` (LieScratch) are this half's
    scratch. Only Hh's upper triangle is meaningful (:func:`_congruence_add`)."""
    Hh[:] = 0.0
    nx, s = rec_Fz.shape[1], ws.shape[0]
    for st in range(half, s, 2):
        idx = first + st
        robot_dynamics_hessian(params, rec_y[idx], u, rec_f[idx], rec_Fz[idx], data, idx, ws[st], W, dyn)
        if idx == offset:  # G_0 = identity
            _axpy(1.0, W, Hh)
        else:
            _congruence_add(W, rec_G[idx], nx, P, Hh)
    lie = lie_structure(params)[1]
    if lie.shape[0] == 0:
        return
    rec_W, rec_dW, rec_Y0, rec_J = comp
    sub = first // s  # the step's row of the composition records
    c0 = sub * (s + 1)
    for st in range(half, s + 1, 2):
        if st == s:  # y⁺
            _composition_curvature(lie, rec_W[c0 + s], rec_dW[c0 + s], rec_Y0[sub], rec_J[c0 + s], lam, Hh, lsc)
        elif st > 0:
            _composition_curvature(lie, rec_W[c0 + st], rec_dW[c0 + st], rec_Y0[sub], rec_J[c0 + st], ybar[st], Hh,
                                   lsc)


@njit(cache=True, parallel=True, _nrt=True)
def _halves_in_parallel(model, act, lie, u, rec_y, rec_f, rec_Fz, rec_G, data, comp, first, offset, ws, ybar, lam,
                        dyn_a, tau_a, out_a, hess_a, so_a, lie_a, dyn_b, tau_b, out_b, hess_b, so_b, lie_b, W, P, Hh):
    """:func:`_stage_half` of both halves on two threads (numba's parallel loops take flat
    tuples only: the records are passed apart and put together again in each thread)."""
    for half in prange(2):
        params = (model, act, lie)
        if half == 0:
            dyn, lsc = (dyn_a, tau_a, out_a, hess_a, so_a), lie_a
        else:
            dyn, lsc = (dyn_b, tau_b, out_b, hess_b, so_b), lie_b
        _stage_half(params, u, rec_y, rec_f, rec_Fz, rec_G, data, comp, first, offset, ws, ybar, lam, half, dyn, lsc,
                    W[half], P[half], Hh[half])


@allocation_free
def _halves_on_two_threads(params, u, stages, first, offset, work):
    """:func:`_halves_in_parallel` on the parts of a :func:`robot_params` record and of the
    records and workspaces."""
    a, b = work.dyn, work.dyn2
    _halves_in_parallel(params[0], params[1], params[2], u, stages[0], stages[1], stages[2], stages[3], stages[4],
                        lie_records(stages), first, offset, work.w, work.ybar, work.lam,
                        a[0], a[1], a[2], a[3], a[4], work.lie, b[0], b[1], b[2], b[3], b[4], work.lie2,
                        work.halves[0], work.halves[1], work.halves[2])


@allocation_free
def stage_terms(params, u, stages, first, offset, Hz, work, split):
    """Hz += Σ_s G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s over the s stages of the step starting at
    record row ``first``, and on a manifold the curvature of its compositions, given the
    adjoints of :func:`interval_hessian` (w_s in ``work.w``, ȳ_s in ``work.ybar``, λ⁺ in
    ``work.lam``).

    The terms are summed in two halves (even and odd s), each into its own matrix, which
    are then added to Hz in a fixed order: with ``split`` (a robot's records) the halves
    run on two threads, otherwise one after the other, and the result is the same bit for
    bit.
    """
    if split:
        _halves_on_two_threads(params, u, stages, first, offset, work)
    else:
        comp = lie_records(stages)
        for half, dyn, lsc in ((0, work.dyn, work.lie), (1, work.dyn2, work.lie2)):
            _stage_half(params, u, stages[0], stages[1], stages[2], stages[3], stages[4], comp, first, offset, work.w,
                        work.ybar, work.lam, half, dyn, lsc, work.halves[0, half], work.halves[1, half],
                        work.halves[2, half])
    _axpy(1.0, work.halves[2, 0], Hz)
    _axpy(1.0, work.halves[2, 1], Hz)


@njit(cache=True, inline="always")
def _zero_row(X, p):
    """Whether row p of X is all zeros."""
    for c in range(X.shape[1]):
        if X[p, c] != 0.0:
            return False
    return True


@allocation_free
def _add_Gt_times(Y, X, nx, out):
    """out (nz, nz) += Gᵀ X for G = [Y; 0 I] (Y (nx, nz)), X (nz, nz), rows of X four at a
    time (:func:`_add_rows`): groups of four zero entries of Y and of four zero rows of X
    are skipped. Gᵀ X G is symmetric, and the callers only use its upper triangle
    (:func:`_stage_hessian` and :func:`interval_hessian` mirror its upper
    triangle); whole rows are updated all the same, since full-length
    contiguous loops vectorise and cost less than the triangle's ragged ones."""
    nz = X.shape[0]
    q = nx - nx % 4
    for p in range(0, q, 4):
        if _zero_row(X, p) and _zero_row(X, p + 1) and _zero_row(X, p + 2) and _zero_row(X, p + 3):
            continue  # e.g. the base's q rows of a free-floating robot without gravity
        for r in range(nz):
            g0, g1, g2, g3 = Y[p, r], Y[p + 1, r], Y[p + 2, r], Y[p + 3, r]
            if g0 != 0.0 or g1 != 0.0 or g2 != 0.0 or g3 != 0.0:
                _add_rows(out, r, X, p, g0, g1, g2, g3)
    for p in range(q, nx):
        for r in range(nz):
            if Y[p, r] != 0.0:
                _add_row(out, r, X, p, Y[p, r])
    for p in range(nx, nz):
        _add_row(out, p, X, p, 1.0)


@allocation_free
def _congruence_add(W, Y, nx, P, Hz):
    """Hz += Gᵀ W G for G = [Y; 0 I] (Y (nx, nz)), whose upper triangle alone is used (the
    caller mirrors the sum once); P (nz, nz) is workspace.

    Zero entries of W (most of the v–τ and τ–τ blocks of a robot's), four at a time, are
    skipped.
    """
    _times_G(W, Y, nx, P)
    _add_Gt_times(Y, P, nx, Hz)


# Whole trajectories: each batched evaluation runs its knots in chunks on parallel threads
# (dynamics.parallel.run_chunks; the chunk kernels release the GIL). Every knot is computed
# by the same code whichever thread runs it: results do not depend on the thread count.
# The states must be valid configurations (the callers check them).

def step_batch(params, a, b, xs, us, F, dt, m) -> np.ndarray:
    """x⁺ (K, nx) of one interval from every (x_k, u_k, F[k]); NaN rows where it diverged."""
    out = np.empty(xs.shape)
    run_chunks(_step_chunk, xs.shape[0], params, a, b, xs, us, F, dt, m, out)
    return out


@njit(cache=True, nogil=True)
def _step_chunk(params, a, b, xs, us, F, dt, m, out, k0, k1):
    dummy2, dummy3, stages = np.empty((0, 0)), np.empty((0, 0, 0)), no_stages(params)
    work = interval_work(params, xs.shape[1], us.shape[1], b.shape[0], 0)
    for kk in range(k0, k1):
        interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 0, out[kk], dummy2, dummy3, stages, 0,
                 work)


def step_derivatives_batch(params, a, b, xs, us, F, dt, m, order) -> tuple[np.ndarray, ...]:
    """x⁺ (K, nx), Fz (K, ndx, nz) and, for order 2, Fzz (K, ndx, nz, nz) at every knot
    (ndx = :func:`tangent_dim`, nz = ndx + nu).

    For order 1 the returned Fzz has shape (K, 0, 0, 0).
    """
    K, nx = xs.shape
    ndx = tangent_dim(params, nx)
    nz = ndx + us.shape[1]
    y, Fz = np.empty((K, nx)), np.empty((K, ndx, nz))
    Fzz = np.empty((K, ndx, nz, nz)) if order >= 2 else np.empty((K, 0, 0, 0))
    run_chunks(_step_derivatives_chunk, K, params, a, b, xs, us, F, dt, m, order, y, Fz, Fzz)
    return y, Fz, Fzz


@njit(cache=True, nogil=True)
def _step_derivatives_chunk(params, a, b, xs, us, F, dt, m, order, y, Fz, Fzz, k0, k1):
    dummy3, stages = np.empty((0, 0, 0)), no_stages(params)
    work = interval_work(params, xs.shape[1], us.shape[1], b.shape[0], order)
    for kk in range(k0, k1):
        H = Fzz[kk] if order >= 2 else dummy3
        interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, order, y[kk], Fz[kk], H, stages, 0, work)


def step_stages_batch(params, a, b, xs, us, F, dt, m, stages) -> tuple[np.ndarray, np.ndarray]:
    """x⁺ (K, nx) and Fz (K, ndx, nz) at every knot, recording the stages into ``stages``.

    Knot k owns rows k·ms … (k + 1)·ms − 1 (ms = m·s) of the records (see
    :func:`interval`, :func:`stage_records`; they may be reused from one call to the
    next): what :func:`interval_hessian` needs for any multiplier.
    """
    K, nx = xs.shape
    ndx = tangent_dim(params, nx)
    y, Fz = np.empty((K, nx)), np.empty((K, ndx, ndx + us.shape[1]))
    run_chunks(_step_stages_chunk, K, params, a, b, xs, us, F, dt, m, stages, y, Fz)
    return y, Fz


@njit(cache=True, nogil=True)
def _step_stages_chunk(params, a, b, xs, us, F, dt, m, stages, y, Fz, k0, k1):
    ms, dummy3 = m * b.shape[0], np.empty((0, 0, 0))
    work = interval_work(params, xs.shape[1], us.shape[1], b.shape[0], 1)
    for kk in range(k0, k1):
        interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 1, y[kk], Fz[kk], dummy3, stages, kk * ms,
                 work)


def interval_hessians_batch(params, a, b, dt, m, us, stages, lams) -> np.ndarray:
    """(K, nz, nz): ∇²_z(λ_kᵀF(x_k, u_k)) at every knot, from the records of
    :func:`step_stages_batch` and the multipliers lams (K, ndx)."""
    K, nz = us.shape[0], stages[3].shape[2]
    Hz = np.empty((K, nz, nz))
    run_chunks(_interval_hessians_chunk, K, params, a, b, dt, m, us, stages, lams, Hz)
    return Hz


@njit(cache=True, nogil=True)
def _interval_hessians_chunk(params, a, b, dt, m, us, stages, lams, Hz, k0, k1):
    ms = m * b.shape[0]
    work = interval_work(params, stages[0].shape[1], us.shape[1], b.shape[0], 1)
    for kk in range(k0, k1):
        interval_hessian(params, a, b, dt, m, us[kk], stages, kk * ms, lams[kk], Hz[kk], work, False)


@njit(cache=True)
def rollout(params, a, b, x0, us, F, dt, m):
    """States (N+1, nx) from x0 under us (N, nu) and forces F; rows after a divergence are NaN."""
    N, nx = us.shape[0], x0.shape[0]
    xs = np.empty((N + 1, nx))
    xs[0] = x0
    dummy2, dummy3, stages = np.empty((0, 0)), np.empty((0, 0, 0)), no_stages(params)
    work = interval_work(params, nx, us.shape[1], b.shape[0], 0)
    for kk in range(N):
        if not interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 0, xs[kk + 1], dummy2, dummy3,
                        stages, 0, work):
            xs[kk + 1:] = np.nan
            break
    return xs

