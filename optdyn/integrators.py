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
derivatives (∂q̈/∂τ = M⁻¹, ∂²q̈/∂τ² = 0, ∂²q̈/∂v∂τ = 0). All knots of a trajectory are
processed in one compiled call. Tensors are laid out T[i, j, l] = ∂²x⁺_i/∂z_j∂z_l.

The continuous dynamics is :func:`robot_dynamics` ``(params, x, u, fext, order, f, Fz, Fzz,
data, idx)``: it writes f (nx,), and for order ≥ 1 Fz (nx, nz), for order 2 Fzz (nx, nz, nz);
:func:`robot_dynamics_hessian` gives the contracted second derivative w·f_zz from what the
first-order call stored. They are called as globals of the compiled kernels (not passed
as function arguments, which numba's on-disk cache cannot key reliably).

External forces: ``fext`` (njoints, 6) is the robot's ``f_ext`` of :func:`dynamics.rnea`
during the interval ((0, 6): none), held like u. It is a force fixed in each body's frame,
so it moves with the body as q varies and the q-derivatives (first and contracted second
order) are those of FD(q, v, τ, f_ext) at that fixed f_ext. The batch kernels take F
(K, njoints, 6) (interval k uses F[k]) or one row F (1, ·, 6) for every interval
(:func:`dynamics.batch.knot_force`; ``NO_FORCES`` = none).

The Hessian of λᵀF — what DDP (λ = V'_x) and the multiple-shooting Lagrangian (λ = the
defect multipliers) need — is computed contracted by :func:`interval_hessian`, a
second-order adjoint over stage records kept by the first-order pass; the full tensors
(order 2) remain for users and tests.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dynamics.batch import knot_force
from dynamics.aba import aba_kernel
from dynamics.aba_derivatives import aba_derivatives_data
from dynamics.aba_second_derivatives import fdsva_so_terms
from dynamics.aba_second_derivatives_contracted import fdsva_so_contracted_terms
from dynamics.kinematics import all_finite, tangent_size
from dynamics.model import Model

_RK4 = (np.array([[0.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]),
        np.array([1.0, 2.0, 2.0, 1.0]) / 6.0)
_EULER = (np.zeros((1, 1)), np.ones(1))
METHODS = {"rk4": _RK4, "euler": _EULER}
"""Butcher tableaux (a (s, s) strictly lower triangular, b (s,)) by name."""


def robot_params(model: Model) -> tuple:
    """The compiled model record passed to :func:`robot_dynamics` (``model.arrays``)."""
    return model.arrays


@njit(cache=True)
def robot_data(params, count):
    """Storage for ``count`` evaluations' first-order data (see :func:`robot_dynamics`):
    S (count, nv, 6), I^C and B^C (count, n, 6, 6), rates (count, 3, nv, 6), joint vectors
    (count, nv, 6, 6)."""
    n, nv = params[0].shape[0], tangent_size(params[0])
    return (np.empty((count, nv, 6)), np.empty((count, n, 6, 6)), np.empty((count, n, 6, 6)),
            np.empty((count, 3, nv, 6)), np.empty((count, nv, 6, 6)))


@njit(cache=True)
def robot_dynamics(params, x, u, fext, order, f, Fz, Fzz, data, idx):
    """ẋ = [v; FD(q, v, τ, fext)] and its first/second derivatives w.r.t. z = (q, v, τ).

    For order 1 and ``idx`` ≥ 0 the first-order data that :func:`robot_dynamics_hessian`
    reuses is copied into row ``idx`` of ``data`` (from :func:`robot_data`).
    """
    n = tangent_size(params[0])
    q, v = x[:n], x[n:]
    f[:n] = v
    if order == 0:
        f[n:] = aba_kernel(params, q, v, u, fext)
        return
    qdd, da_dq, da_dv, da_dtau, fo = aba_derivatives_data(params, q, v, u, fext)
    if idx >= 0:
        data[0][idx], data[1][idx], data[2][idx], data[3][idx], data[4][idx] = fo
    f[n:] = qdd
    Fz[:] = 0.0
    for i in range(n):
        Fz[i, n + i] = 1.0
        for j in range(n):
            Fz[n + i, j] = da_dq[i, j]
            Fz[n + i, n + j] = da_dv[i, j]
            Fz[n + i, 2 * n + j] = da_dtau[i, j]
    if order < 2:
        return
    d2q, d2v, d2qv, d2qtau = fdsva_so_terms(params, q, v, fext, qdd,
                                            da_dq, da_dv, da_dtau)
    Fzz[:] = 0.0
    for i in range(n):
        r = n + i
        for j in range(n):
            for k in range(n):
                Fzz[r, j, k] = d2q[i, j, k]
                Fzz[r, n + j, n + k] = d2v[i, j, k]
                Fzz[r, j, n + k] = d2qv[i, j, k]
                Fzz[r, n + k, j] = d2qv[i, j, k]
                Fzz[r, j, 2 * n + k] = d2qtau[i, j, k]
                Fzz[r, 2 * n + k, j] = d2qtau[i, j, k]


@njit(cache=True)
def robot_dynamics_hessian(params, x, u, f, Fz, data, idx, w, W):
    """W (nz, nz) = Σ_i w_i ∂²f_i/∂z² of ẋ = [v; FD(q, v, τ)] at (x, u), given Fz and the
    first-order ``data`` (row ``idx``) that :func:`robot_dynamics` stored there.

    Only the FD rows are nonlinear, so this is contracted FDSVA-SO with λ = w[nv:],
    from ∂q̈/∂q, ∂q̈/∂v, M⁻¹ (held in Fz) and the first-order RNEA data (which already
    carries the interval's external forces: no ``fext`` argument here).
    """
    n = tangent_size(params[0])
    work = np.empty((8, n, n))
    for i in range(n):
        for j in range(n):
            work[0, i, j] = Fz[n + i, j]
            work[1, i, j] = Fz[n + i, n + j]
            work[2, i, j] = Fz[n + i, 2 * n + j]
    Hqq, Hvv, Hqv, Hqtau = work[3], work[4], work[5], work[6]
    fo = (data[0][idx], data[1][idx], data[2][idx], data[3][idx], data[4][idx])
    fdsva_so_contracted_terms(params[0], work[0], work[1], work[2], fo, w[n:], Hqq, Hvv, Hqv, Hqtau, work[7])
    W[:] = 0.0
    for j in range(n):
        for k in range(n):
            W[j, k] = Hqq[j, k]
            W[n + j, n + k] = Hvv[j, k]
            W[j, n + k] = W[n + k, j] = Hqv[j, k]
            W[j, 2 * n + k] = W[2 * n + k, j] = Hqtau[j, k]


@njit(cache=True)
def _times_G(X, Y, nx, out):
    """out (r, nz) = X G for X (r, nz) and G = [Y; 0 I] (Y (nx, nz)): with X = f_z, the
    stage Jacobian ∂k_s/∂z = f_z G_s. Zero entries of X are skipped."""
    nz = X.shape[1]
    for i in range(X.shape[0]):
        for c in range(nz):
            out[i, c] = X[i, c] if c >= nx else 0.0
        for p in range(nx):
            xp = X[i, p]
            if xp != 0.0:
                for c in range(nz):
                    out[i, c] += xp * Y[p, c]


@njit(cache=True)
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


@njit(cache=True)
def _axpy(c, x, y):
    """y += c·x for C-contiguous arrays of equal shape, without temporaries."""
    xf, yf = x.reshape(-1), y.reshape(-1)
    for i in range(xf.shape[0]):
        yf[i] += c * xf[i]


@njit(cache=True)
def interval(params, a, b, x, u, fext, dt, m, order, y, Y, H, stages, offset):
    """One interval (m steps) from (x, u) under external forces ``fext``: writes y = x⁺, Y = ∂x⁺/∂z, H = ∂²x⁺/∂z².

    ``stages`` = (ys (R, nx), fs (R, nx), Fzs (R, nx, nz), Gs (R, nx, nz), data) receives
    in rows offset … offset + m·s − 1, for order 1, every stage's input y_s, derivative
    k_s = f(y_s, u), Jacobian f_z(y_s, u), sensitivity Y_s = ∂y_s/∂z and the dynamics'
    first-order data (:func:`robot_data`): what :func:`interval_hessian` needs. Records
    with no rows (:func:`no_stages`) record nothing.
    Returns False (y set to NaN) if a stage state or derivative became non-finite.
    """
    nx, nz, s = x.shape[0], x.shape[0] + u.shape[0], b.shape[0]
    rec_y, rec_f, rec_Fz, rec_G, data = stages
    record = rec_y.shape[0] > 0
    h = dt / m
    k = np.empty((s, nx))
    ys_own = np.empty(nx)
    f = np.empty(nx)
    Fz_own = np.empty((nx, nz)) if order >= 1 else np.empty((0, 0))
    Fzz = np.empty((nx, nz, nz)) if order >= 2 else np.empty((0, 0, 0))
    Ks = np.empty((s, nx, nz)) if order >= 1 else np.empty((0, 0, 0))
    K2s = np.empty((s, nx, nz, nz)) if order >= 2 else np.empty((0, 0, 0, 0))
    Ys_own = np.empty((nx, nz)) if order >= 1 else np.empty((0, 0))
    Hs = np.empty((nx, nz, nz)) if order >= 2 else np.empty((0, 0, 0))
    T = np.empty((nz, nz))
    y[:] = x
    if order >= 1:
        Y[:] = 0.0
        for i in range(nx):
            Y[i, i] = 1.0
    if order >= 2:
        H[:] = 0.0
    for step in range(m):
        for st in range(s):
            idx = offset + step * s + st if record else -1
            ys = rec_y[idx] if record else ys_own
            Ys = rec_G[idx] if record else Ys_own
            Fz = rec_Fz[idx] if record else Fz_own
            ys[:] = y
            if order >= 1:
                Ys[:] = Y
            if order >= 2:
                Hs[:] = H
            for j in range(st):
                c = h * a[st, j]
                if c != 0.0:
                    _axpy(c, k[j], ys)
                    if order >= 1:
                        _axpy(c, Ks[j], Ys)
                    if order >= 2:
                        _axpy(c, K2s[j], Hs)
            if not all_finite(ys):
                y[:] = np.nan
                return False
            robot_dynamics(params, ys, u, fext, order, f, Fz, Fzz, data, idx)
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
        for st in range(s):
            c = h * b[st]
            _axpy(c, k[st], y)
            if order >= 1:
                _axpy(c, Ks[st], Y)
            if order >= 2:
                _axpy(c, K2s[st], H)
    if not all_finite(y):
        y[:] = np.nan
        return False
    return True


@njit(cache=True)
def stage_records(params, count, nx, nz):
    """Stage records (ys, fs, Fzs, Gs, data) with ``count`` rows (see :func:`interval`)."""
    return (np.empty((count, nx)), np.empty((count, nx)), np.empty((count, nx, nz)), np.empty((count, nx, nz)),
            robot_data(params, count))


@njit(cache=True)
def no_stages(params):
    """Records with no rows: :func:`interval` records nothing."""
    return stage_records(params, 0, 0, 0)


@njit(cache=True)
def interval_hessian(params, a, b, dt, m, u, stages, offset, lam, Hz):
    """Hz (nz, nz) = ∇²_z (λᵀF(x, u)) of the interval recorded in rows offset … offset + m·s − 1
    of ``stages`` (see :func:`interval`).

    Second-order adjoint: only the stage evaluations k_s = f(y_s, u) are nonlinear, so

        ∇²(λᵀF) = Σ_s G_sᵀ (w_sᵀ f_zz(y_s, u)) G_s,    G_s = ∂(y_s, u)/∂z = [Y_s; 0 I],

    where w_s = ∂(λᵀF)/∂k_s is the adjoint of stage s, from a reverse sweep over the steps:
    w_s = h (b_s λ⁺ + Σ_{t>s} a_ts ȳ_t), ȳ_s = f_xᵀ w_s, and λ = λ⁺ + Σ_s ȳ_s at the start
    of each step (λ⁺ = ``lam`` after the last one). w_sᵀ f_zz comes contracted from
    :func:`robot_dynamics_hessian`: no (nx, nz, nz) tensor is formed.
    """
    rec_y, rec_f, rec_Fz, rec_G, data = stages
    nx, nz, s = rec_y.shape[1], Hz.shape[0], b.shape[0]
    h = dt / m
    lam_y = lam.copy()
    ybar, w = np.empty((s, nx)), np.empty(nx)
    W, P = np.empty((nz, nz)), np.empty((nz, nz))
    Hz[:] = 0.0
    for step in range(m - 1, -1, -1):
        for st in range(s - 1, -1, -1):
            idx = offset + step * s + st
            for i in range(nx):
                c = b[st] * lam_y[i]
                for t in range(st + 1, s):
                    c += a[t, st] * ybar[t, i]
                w[i] = h * c
            Fz = rec_Fz[idx]
            for i in range(nx):  # ȳ_s = f_xᵀ w_s
                c = 0.0
                for p in range(nx):
                    c += Fz[p, i] * w[p]
                ybar[st, i] = c
            robot_dynamics_hessian(params, rec_y[idx], u, rec_f[idx], Fz, data, idx, w, W)
            if idx == offset:  # G_0 = identity
                for i in range(nz):
                    for j in range(nz):
                        Hz[i, j] += W[i, j]
            else:
                _congruence_add(W, rec_G[idx], nx, P, Hz)
        for st in range(s):
            for i in range(nx):
                lam_y[i] += ybar[st, i]


@njit(cache=True)
def _add_Gt_times(Y, X, nx, out):
    """Upper triangle of out (nz, nz) += Gᵀ X for G = [Y; 0 I] (Y (nx, nz)), X (nz, nz)
    symmetric once multiplied; zero entries of Y are skipped."""
    nz = X.shape[0]
    for p in range(nz):
        if p < nx:
            for r in range(nz):
                g = Y[p, r]
                if g != 0.0:
                    for c in range(r, nz):
                        out[r, c] += g * X[p, c]
        else:
            for c in range(p, nz):
                out[p, c] += X[p, c]


@njit(cache=True)
def _congruence_add(W, Y, nx, P, Hz):
    """Hz += Gᵀ W G for G = [Y; 0 I] (Y (nx, nz)); P (nz, nz) is workspace.

    Zero entries of W (most of the v–τ and τ–τ blocks of a robot's) are skipped.
    """
    nz = W.shape[0]
    _times_G(W, Y, nx, P)
    _add_Gt_times(Y, P, nx, Hz)
    for r in range(nz):
        for c in range(r):
            Hz[r, c] = Hz[c, r]


@njit(cache=True)
def step_batch(params, a, b, xs, us, F, dt, m):
    """x⁺ (K, nx) of one interval from every (x_k, u_k, F[k]); NaN rows where it diverged."""
    K, nx = xs.shape
    out = np.empty((K, nx))
    dummy2, dummy3, stages = np.empty((0, 0)), np.empty((0, 0, 0)), no_stages(params)
    for kk in range(K):
        interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 0, out[kk], dummy2, dummy3, stages, 0)
    return out


@njit(cache=True)
def step_derivatives_batch(params, a, b, xs, us, F, dt, m, order):
    """x⁺ (K, nx), Fz (K, nx, nz) and, for order 2, Fzz (K, nx, nz, nz) at every knot.

    For order 1 the returned Fzz has shape (K, 0, 0, 0).
    """
    K, nx = xs.shape
    nz = nx + us.shape[1]
    y = np.empty((K, nx))
    Fz = np.empty((K, nx, nz))
    Fzz = np.empty((K, nx, nz, nz)) if order >= 2 else np.empty((K, 0, 0, 0))
    dummy3, stages = np.empty((0, 0, 0)), no_stages(params)
    for kk in range(K):
        if order >= 2:
            interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, order, y[kk], Fz[kk], Fzz[kk], stages, 0)
        else:
            interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, order, y[kk], Fz[kk], dummy3, stages, 0)
    return y, Fz, Fzz


@njit(cache=True)
def step_stages_batch(params, a, b, xs, us, F, dt, m, stages):
    """x⁺ (K, nx) and Fz (K, nx, nz) at every knot, recording the stages into ``stages``.

    Knot k owns rows k·ms … (k + 1)·ms − 1 (ms = m·s) of the records (see
    :func:`interval`, :func:`stage_records`; they may be reused from one call to the
    next): what :func:`interval_hessian` needs for any multiplier.
    """
    K, nx = xs.shape
    nz, ms = nx + us.shape[1], m * b.shape[0]
    y, Fz = np.empty((K, nx)), np.empty((K, nx, nz))
    dummy3 = np.empty((0, 0, 0))
    for kk in range(K):
        interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 1, y[kk], Fz[kk], dummy3, stages, kk * ms)
    return y, Fz


@njit(cache=True)
def interval_hessians_batch(params, a, b, dt, m, us, stages, lams):
    """(K, nz, nz): ∇²_z(λ_kᵀF(x_k, u_k)) at every knot, from the records of
    :func:`step_stages_batch` and the multipliers lams (K, nx)."""
    K = us.shape[0]
    nz, ms = stages[3].shape[2], m * b.shape[0]
    Hz = np.empty((K, nz, nz))
    for kk in range(K):
        interval_hessian(params, a, b, dt, m, us[kk], stages, kk * ms, lams[kk], Hz[kk])
    return Hz


@njit(cache=True)
def rollout(params, a, b, x0, us, F, dt, m):
    """States (N+1, nx) from x0 under us (N, nu) and forces F; rows after a divergence are NaN."""
    N, nx = us.shape[0], x0.shape[0]
    xs = np.empty((N + 1, nx))
    xs[0] = x0
    dummy2, dummy3, stages = np.empty((0, 0)), np.empty((0, 0, 0)), no_stages(params)
    for kk in range(N):
        if not interval(params, a, b, xs[kk], us[kk], knot_force(F, kk), dt, m, 0, xs[kk + 1], dummy2, dummy3,
                        stages, 0):
            xs[kk + 1:] = np.nan
            break
    return xs

