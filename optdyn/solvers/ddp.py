"""Differential dynamic programming (DDP) and iLQR: one solver, one flag.

Notation of Y. Tassa, T. Erez, E. Todorov, "Synthesis and Stabilization of Complex
Behaviors through Online Trajectory Optimization", IROS 2012 ("Tassa 2012") and Y. Tassa,
N. Mansard, E. Todorov, "Control-Limited Differential Dynamic Programming", ICRA 2014
("Tassa 2014"); the contracted second-order terms follow J. N. Nganga, P. M. Wensing,
"Accelerating Second-Order Differential Dynamic Programming for Rigid-Body Systems",
IEEE RA-L 2021.
For the discrete problem of :class:`optdyn.ocp.problem.Problem` with dynamics
x_{k+1} = F(x_k, u_k) (A = F_x, B = F_u) and stage cost ℓ_k (already weighted by dt),
the backward pass forms at every knot, with V' = V_{k+1}:

    Q_x  = ℓ_x + Aᵀ V'_x                 Q_u  = ℓ_u + Bᵀ V'_x
    Q_xx = ℓ_xx + Aᵀ V'_xx A  [+ V'_x·F_xx]
    Q_ux = ℓ_ux + Bᵀ V'_xx A  [+ V'_x·F_ux]
    Q_uu = ℓ_uu + Bᵀ V'_xx B  [+ V'_x·F_uu]

where the bracketed second-order dynamics terms are DDP's and are dropped by iLQR
(``ddp=False``). DDP gets V'_x·F_zz — the Hessian of V'_xᵀF(x, u) — contracted, by a
second-order adjoint through the integrator stages with contracted FDSVA-SO
(:func:`optdyn.ocp.integrators.interval_hessian`; the idea of Nganga & Wensing, RA-L 2021),
at about the cost of one more first-order sweep (serial over knots, on the calling thread).
``second_order="tensor"`` contracts the full tensors instead, to validate it. Levenberg–Marquardt regularisation acts on V'_xx (Tassa 2012
eq. 10): Q̃_uu = Q_uu + μ BᵀB, Q̃_ux = Q_ux + μ BᵀA, with the adaptive schedule of
Sec. II-F. The control step comes from the box-constrained QP

    k = argmin_{u_lo − u ≤ δu ≤ u_hi − u} ½ δuᵀ Q̃_uu δu + Q_uᵀ δu

solved by projected Newton (Tassa 2014, Alg. 3); the gain is K_f = −Q̃_uu,ff⁻¹ Q̃_ux,f on the
free controls and 0 on the clamped ones. The value function follows eq. 11:

    ΔV   = α kᵀQ_u + ½ α² kᵀQ_uu k
    V_x  = Q_x + KᵀQ_uu k + KᵀQ_u + Q_uxᵀ k
    V_xx = Q_xx + KᵀQ_uu K + KᵀQ_ux + Q_uxᵀ K

The forward pass x̂_0 = x_0, û_k = clamp(u_k + α k_k + K_k (x̂_k ⊖ x_k)),
x̂_{k+1} = F(x̂_k, û_k) is accepted by backtracking on the ratio of actual to expected
decrease. With ``box="after_full_step"`` the backward pass leaves the box out (the
unconstrained gains, clamped in the forward pass) until a full step α = 1 has been
accepted: what Crocoddyl's BoxFDDP does from a guess not marked feasible (Mastalli et
al., "A Feasibility-Driven Approach to Control-Limited DDP", Autonomous Robots 2022). Far
from the optimum the box QP clamps the controls that the model asks too much of, and their
zero feedback can trap the iterates (the Panda reach: see BENCHMARKS.md, "convergence").

Indefinite models (``indefinite="gauss_newton"``). Far from a minimum DDP's Q_uu — with
V'_x·F_uu and the residual costs' curvature — is often indefinite, and the μ·BᵀB that makes it
positive definite is not invariant to the units of u: on the Panda reach (fingers of tiny
inertia, B huge) it keeps μ at 0.03–4 and the steps small, and DDP ends in a worse local
optimum. With this option an iteration whose exact Q̃_uu is not positive definite at some knot
at the current μ takes its step from the Gauss–Newton model instead (iLQR's backward pass, with
the Gauss–Newton Hessians of the residual costs, terminal one included: positive semidefinite
blocks when every cost is a residual under a convex penalty); μ is raised only if that one
fails too. Near a strict
minimum the exact model is convex, every pass is DDP's own and DDP converges quadratically;
where the exact pass succeeds at every knot the iterates are plain DDP's. Falling back at the
failing knot alone is not enough: V'_xx, carrying V'_x·F_xx and the residuals' curvature from
the knots after it, is itself indefinite, and so is BᵀV'_xx B (BENCHMARKS.md, "convergence").
The switch is per iteration, driven by positive definiteness, in the spirit of the hybrid
methods for nonlinear least squares that switch between the Gauss–Newton and the exact model
(Nocedal & Wright, "Numerical Optimization", 2nd ed. 2006, Sec. 10.3).

Multiple shooting (``shooting="multiple"``: the feasibility-driven DDP of M. Mastalli et
al., "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact Optimal Control",
ICRA 2020) iterates on states and controls (x̄_k, ū_k) together, with gaps
f̄_{k+1} = F(x̄_k, ū_k) ⊖ x̄_{k+1} between the intervals. The backward pass sees V' from the
end of interval k, which misses x̄_{k+1} by f̄: V'_x⁺ = V'_x + V'_xx f̄ replaces V'_x in Q_x,
Q_u and in DDP's V'_x·F_zz, and the model's value of the step gains V'_x·f̄ + ½ f̄ᵀV'_xx f̄
per gap. The forward pass leaves a fraction 1 − α of every gap open,
x̂_{k+1} = F(x̂_k, û_k) ⊕ (α − 1) f̄_{k+1}, so that to first order the trial is α·Δz along the
linear model's step Δz, whose change is α·g·Δz + α²·(m(1) − g·Δz) (g the cost gradient,
m(1) the model's change for the full step; :func:`model_slope`). A full step closes every
gap, and the iterations are then single shooting's. On a floating base the shift ignores
the transport between the tangent spaces at F(x̄_k, ū_k) and at x̄_{k+1}, as Crocoddyl
does; it vanishes with the gaps.

On a floating base the state lives on a manifold (:mod:`optdyn.ocp.state`) and the backward
pass works in its tangent spaces, as Crocoddyl does (Mastalli et al. 2020): every
quantity at knot k (ℓ_x, V_x, the rows and columns of A = F_x) is in the chart
δx ↦ x̄_k ⊕ δx of the current trajectory, A maps the tangent at x̄_k to the one at x̄_{k+1},
and the feedback acts on x̂_k ⊖ x̄_k. Expanding Q(δx, δu) = ℓ(x̄ ⊕ δx, ū + δu) +
V'(F(x̄ ⊕ δx, ū + δu) ⊖ x̄') to second order in these charts gives the formulas above
unchanged, with V'_x·F_zz the Hessian of V'_xᵀ(F ⊖ x̄') — which includes the curvature of
the group compositions inside the RK stages (:func:`optdyn.ocp.integrators.interval_hessian`).
So DDP's quadratic model is the exact second-order one in the charts; what is not
modelled is that the charts move with x̄ from one iteration to the next (as in
Crocoddyl), which does not change the fixed points.

Backward and forward passes loop over knots inside compiled code; the backward pass is
assembled from the named steps :func:`q_expansion`, :func:`dynamics_hessian`,
:func:`regularize`, :func:`gains`, :func:`expected_decrease` and :func:`value_update`.
"""
from __future__ import annotations

import time
from collections import namedtuple
from dataclasses import dataclass, field

import numpy as np

from dynamics._compile import allocation_free, njit
from dynamics.spatial import copy_into, symmetrize

from ..ocp.problem import Problem
from ..ocp.shooting import state_error, state_retract, transition, transition_hessian, transition_work
from .linalg import box_qp, cholesky_solve, gemm_nn, gemm_tn, gemv_t
from .result import Result
from .runtime import Run, is_interrupt, stop_message

# ---------------------------------------------------------------------------------------
# compiled building blocks
# ---------------------------------------------------------------------------------------

SECOND_ORDER = {"none": 0, "contracted": 1, "tensor": 2}
"""How the backward pass gets V'_x·F_zz: not at all (iLQR), contracted through the
integrator stages (:func:`optdyn.ocp.shooting.transition_hessian`, the default) or from the
full second-order tensors (kept to validate the contracted path)."""

Expansion = namedtuple("Expansion", ["A", "B", "lx", "lu", "lxx", "lux", "luu"])
"""The problem's first- and second-order model along a trajectory, one row per knot
(N, …): A = F_x (N,ndx,ndx), B = F_u (N,ndx,nu), and the dt-weighted cost terms
ℓ_x (N,ndx), ℓ_u (N,nu), ℓ_xx (N,ndx,ndx), ℓ_ux (N,nu,ndx), ℓ_uu (N,nu,nu)."""

Value = namedtuple("Value", ["Vx", "Vxx"])
"""A quadratic value function's gradient V_x (ndx,) and Hessian V_xx (ndx, ndx)."""

QTerms = namedtuple("QTerms", ["Qx", "Qu", "Qxx", "Qux", "Quu"])
"""The expansion of Q(δx, δu) at one knot (Tassa 2012 eq. 5)."""

Step = namedtuple("Step", ["k", "K", "dV1", "dV2", "gaps"])
"""A backward pass's result: feed-forward k (N, nu), feedback K (N, nu, ndx), the model's
change ΔV(α) = α·dV1 + α²·dV2 along the step and the multiple-shooting gaps (N, ndx) it
closes ((0, ndx) for a rollout)."""

SecondOrder = namedtuple("SecondOrder", ["mode", "Fzz", "dynamics", "stages"])
"""Where the backward pass gets V'_x·F_zz: ``mode`` (:data:`SECOND_ORDER`); mode 1 from the
problem's interval ``dynamics`` and the ``stages`` it recorded along the trajectory; mode 2
from the full tensors ``Fzz`` (N, ndx, nz, nz)."""


@allocation_free
def q_expansion(lq, t, V, Q, VA, VB):
    """Q_x = ℓ_x + AᵀV'_x, Q_u = ℓ_u + BᵀV'_x, Q_xx = ℓ_xx + AᵀV'_xx A, Q_ux = ℓ_ux + BᵀV'_xx A,
    Q_uu = ℓ_uu + BᵀV'_xx B (Tassa 2012 eq. 5) into ``Q`` (:data:`QTerms`) at knot t of the
    :data:`Expansion` ``lq``, V' = ``V`` (:data:`Value`); VA, VB are workspace."""
    A, B = lq.A[t], lq.B[t]
    gemm_nn(V.Vxx, A, VA)
    gemm_nn(V.Vxx, B, VB)
    copy_into(Q.Qx, lq.lx[t])
    copy_into(Q.Qu, lq.lu[t])
    copy_into(Q.Qxx, lq.lxx[t])
    copy_into(Q.Qux, lq.lux[t])
    copy_into(Q.Quu, lq.luu[t])
    gemv_t(A, V.Vx, Q.Qx, True)
    gemv_t(B, V.Vx, Q.Qu, True)
    gemm_tn(A, VA, Q.Qxx, True)
    gemm_tn(B, VA, Q.Qux, True)
    gemm_tn(B, VB, Q.Quu, True)


@allocation_free(inline="always")
def dynamics_hessian(second, t, us, Vx, Hz, work):
    """Hz (nz, nz) = V'_x·F_zz at knot t: the Hessian of V'_xᵀF(x_t, u_t), as ``second``
    (:data:`SecondOrder`) says: mode 1 by the problem's
    :func:`~optdyn.ocp.shooting.transition_hessian` (``work`` of
    :func:`~optdyn.ocp.shooting.transition_work`), mode 2 by contracting the full tensors.
    """
    if second.mode == 1:
        transition_hessian(second.dynamics, t, us[t], second.stages, Vx, Hz, work)
        return
    Fzz = second.Fzz
    Hz[:] = 0.0
    for p in range(Fzz.shape[1]):
        w = Vx[p]
        if w != 0.0:
            for i in range(Hz.shape[0]):
                for j in range(Hz.shape[1]):
                    Hz[i, j] += w * Fzz[t, p, i, j]


@allocation_free
def add_dynamics_terms(Hz, Q):
    """Q_xx += [V'_x·F]_xx, Q_ux += [V'_x·F]_ux, Q_uu += [V'_x·F]_uu (DDP's terms)."""
    Qxx, Qux, Quu = Q.Qxx, Q.Qux, Q.Quu
    ndx = Qxx.shape[0]
    for i in range(Hz.shape[0]):
        for j in range(Hz.shape[1]):
            if i < ndx and j < ndx:
                Qxx[i, j] += Hz[i, j]
            elif i >= ndx and j < ndx:
                Qux[i - ndx, j] += Hz[i, j]
            elif i >= ndx:
                Quu[i - ndx, j - ndx] += Hz[i, j]


@allocation_free
def regularize(A, B, Qux, Quu, mu, on_controls, Qux_r, Quu_r):
    """Q̃_ux = Q_ux + μ BᵀA, Q̃_uu = Q_uu + μ BᵀB (symmetrised): μ acts on V'_xx (Tassa 2012
    eq. 10); with ``on_controls`` also + μ I on Q̃_uu (the Levenberg–Marquardt term on the
    controls, which Tassa 2012 Sec. II-F contrasts with eq. 10): it acts where B has a null
    space, on the controls that do not move the state."""
    nu = Quu.shape[0]
    gemm_tn(B, A, Qux_r, False)
    gemm_tn(B, B, Quu_r, False)
    if on_controls:
        for i in range(nu):
            Quu_r[i, i] += 1.0
    for i in range(nu):
        for j in range(Qux.shape[1]):
            Qux_r[i, j] = Qux[i, j] + mu * Qux_r[i, j]
    for i in range(nu):
        for j in range(nu):
            Quu_r[i, j] = 0.5 * (Quu[i, j] + Quu[j, i]) + mu * Quu_r[i, j]


@allocation_free
def gains(Quu_r, Qux_r, Qu, lo, hi, k, K, idx, L, work):
    """Feed-forward k (box QP, warm-started from its input) and feedback K (nu, ndx):
    K_f = −Q̃_uu,ff⁻¹ Q̃_ux,f on the free controls, 0 on the clamped ones (Tassa 2014).
    ``work`` (5, nu) is scratch. Returns the number of free controls, or −1 if Q̃_uu is not
    positive definite."""
    nf = box_qp(Quu_r, Qu, lo, hi, k, idx, L, work[:4])
    rhs = work[4]
    if nf < 0:
        return nf
    K[:] = 0.0
    for j in range(K.shape[1]):
        for a in range(nf):
            rhs[a] = Qux_r[idx[a], j]
        cholesky_solve(L, nf, rhs)
        for a in range(nf):
            K[idx[a], j] = -rhs[a]
    return nf


@allocation_free
def value_update(Q, k, K, V, QuuK, Quuk):
    """V_x = Q_x + KᵀQ_uu k + KᵀQ_u + Q_uxᵀk, V_xx = Q_xx + KᵀQ_uu K + KᵀQ_ux + Q_uxᵀK
    (Tassa 2012 eq. 11, symmetrised) into ``V`` (:data:`Value`) from ``Q``
    (:data:`QTerms`); QuuK (nu, ndx), Quuk (nu,) are workspace."""
    Qu, Quu, Qux = Q.Qu, Q.Quu, Q.Qux
    gemm_nn(Quu, K, QuuK)
    for a in range(Qu.shape[0]):
        s = Qu[a]
        for p in range(Qu.shape[0]):
            s += Quu[a, p] * k[p]
        Quuk[a] = s  # Q_uu k + Q_u
    copy_into(V.Vx, Q.Qx)
    gemv_t(K, Quuk, V.Vx, True)
    gemv_t(Qux, k, V.Vx, True)
    copy_into(V.Vxx, Q.Qxx)
    gemm_tn(K, QuuK, V.Vxx, True)
    gemm_tn(K, Qux, V.Vxx, True)
    gemm_tn(Qux, K, V.Vxx, True)
    symmetrize(V.Vxx)


@allocation_free
def expected_decrease(k, Qu, Quu):
    """(kᵀQ_u, ½kᵀQ_uu k): ΔV(α) = α·first + α²·second."""
    d1 = d2 = 0.0
    for i in range(k.shape[0]):
        d1 += k[i] * Qu[i]
        for j in range(k.shape[0]):
            d2 += 0.5 * k[i] * Quu[i, j] * k[j]
    return d1, d2


@allocation_free
def shift_by_gap(V, f, Vp):
    """V'_x⁺ = V'_x + V'_xx f̄ into ``Vp.Vx`` — the gradient of V' at the end of an interval
    that misses the next node by the gap f̄ (Mastalli et al. 2020) — and returns
    the model's change of V' across the gap, V'_x·f̄ + ½ f̄ᵀV'_xx f̄."""
    d = 0.0
    for i in range(f.shape[0]):
        s = V.Vx[i]
        h = 0.0
        for j in range(f.shape[0]):
            h += V.Vxx[i, j] * f[j]
        Vp.Vx[i] = s + h
        d += f[i] * (s + 0.5 * h)
    return d


@njit(cache=True)
def backward_pass(lq, terminal, us, lower, upper, mu, second, k, K, gaps, on_controls=False):
    """Riccati-like sweep N−1 … 0 built from the steps above (module docstring).

    ``lq``: the :data:`Expansion` along the trajectory (us (N, nu)); ``terminal``: the
    :data:`Value` V_N = ℓ_N; the dynamics' second-order terms per ``second``
    (:data:`SecondOrder`, see :func:`dynamics_hessian`); control bounds lower, upper (nu,);
    regularisation μ = ``mu`` (on the controls too if ``on_controls``: :func:`regularize`);
    ``gaps`` (N, ndx): f̄_{t+1} = F(x_t, u_t) ⊖ x_{t+1} of
    multiple shooting (module docstring), or (0, ndx) for a rollout. Writes k (N,nu) (its
    input is the box-QP warm start) and K (N,nu,ndx). Returns (failed knot or −1, kᵀQ_u
    summed, ½kᵀQ_uu k summed plus the model's change across the gaps): the two sum to
    the quadratic model's change for the full step.
    """
    N, ndx, nu = lq.B.shape
    V = Value(terminal.Vx.copy(), terminal.Vxx.copy())
    Vp = Value(np.empty(ndx), V.Vxx)  # V' seen from the end of the interval: shifted by its gap
    Q = QTerms(np.empty(ndx), np.empty(nu), np.empty((ndx, ndx)), np.empty((nu, ndx)), np.empty((nu, nu)))
    Quuk, Qux_r, Quu_r, QuuK = np.empty(nu), np.empty((nu, ndx)), np.empty((nu, nu)), np.empty((nu, ndx))
    VA, VB, Hz = np.empty((ndx, ndx)), np.empty((ndx, nu)), np.empty((ndx + nu, ndx + nu))
    lo, hi = np.empty(nu), np.empty(nu)
    idx, L, qp = np.empty(nu, np.int64), np.empty((nu, nu)), np.empty((5, nu))
    work = transition_work(second.dynamics, second.stages.y.shape[1], nu, 1)
    dV1 = dV2 = 0.0
    for t in range(N - 1, -1, -1):
        if gaps.shape[0] > 0:
            dV2 += shift_by_gap(V, gaps[t], Vp)
        else:
            copy_into(Vp.Vx, V.Vx)
        q_expansion(lq, t, Vp, Q, VA, VB)
        if second.mode > 0:
            dynamics_hessian(second, t, us, Vp.Vx, Hz, work)
            add_dynamics_terms(Hz, Q)
        regularize(lq.A[t], lq.B[t], Q.Qux, Q.Quu, mu, on_controls, Qux_r, Quu_r)
        for i in range(nu):
            lo[i], hi[i] = lower[i] - us[t, i], upper[i] - us[t, i]
        if gains(Quu_r, Qux_r, Q.Qu, lo, hi, k[t], K[t], idx, L, qp) < 0:
            return t, 0.0, 0.0
        d1, d2 = expected_decrease(k[t], Q.Qu, Q.Quu)
        dV1 += d1
        dV2 += d2
        value_update(Q, k[t], K[t], V, QuuK, Quuk)
    return -1, dV1, dV2


@njit(cache=True)
def model_slope(lq, Vx_N, k, K, gaps):
    """d/dα at α = 0 of the cost's first-order model along the step of a multiple-shooting
    backward pass: g·Δz for the linear path Δx_0 = 0, Δu_t = k_t + K_t Δx_t,
    Δx_{t+1} = A_t Δx_t + B_t Δu_t + f̄_{t+1} (the forward pass follows αΔz to first order,
    so the model's change is α·g·Δz + α²·(the rest))."""
    N, ndx, nu = lq.B.shape
    dx, nxt, du = np.zeros(ndx), np.empty(ndx), np.empty(nu)
    g = 0.0
    for t in range(N):
        for i in range(nu):
            s = k[t, i]
            for j in range(ndx):
                s += K[t, i, j] * dx[j]
            du[i] = s
            g += lq.lu[t, i] * s
        for i in range(ndx):
            g += lq.lx[t, i] * dx[i]
            s = gaps[t, i]
            for j in range(ndx):
                s += lq.A[t, i, j] * dx[j]
            for j in range(nu):
                s += lq.B[t, i, j] * du[j]
            nxt[i] = s
        dx[:] = nxt
    for i in range(ndx):
        g += Vx_N[i] * dx[i]
    return g


@njit(cache=True)
def projected_gradient(lq, Vx_N, us, lower, upper):
    """‖∇_u J‖∞ of the shooting objective J(u_0..u_{N−1}) by the adjoint recursion
    λ_N = ℓ_N,x, g_k = ℓ_u + B_kᵀλ_{k+1}, λ_k = ℓ_x + A_kᵀλ_{k+1} along the
    :data:`Expansion` ``lq``, with the components pushing a control against its active bound
    removed (KKT residual of the box)."""
    N, ndx, nu = lq.B.shape
    lam, new, g = Vx_N.copy(), np.empty(ndx), np.empty(nu)
    gmax = 0.0
    for t in range(N - 1, -1, -1):
        g[:] = lq.lu[t]
        gemv_t(lq.B[t], lam, g, True)
        for i in range(nu):
            if not ((us[t, i] <= lower[i] and g[i] > 0.0) or (us[t, i] >= upper[i] and g[i] < 0.0)):
                gmax = max(gmax, abs(g[i]))
        new[:] = lq.lx[t]
        gemv_t(lq.A[t], lam, new, True)
        lam[:] = new
    return gmax


@njit(cache=True)
def forward_pass(dyn, xs, us, k, K, alpha, lower, upper, xs_new, us_new, gaps):
    """Closed-loop rollout of the module docstring through the problem's interval dynamics
    ``dyn``; with multiple-shooting ``gaps`` (N, ndx) (else (0, ndx)) each interval ends a
    fraction 1 − α of its gap short of F: x̂_{t+1} = F(x̂_t, û_t) ⊕ (α − 1) f̄_{t+1}
    (feasibility-driven DDP, Mastalli et al. 2020), so that a full step closes every gap and
    the new gaps F(x̂_t, û_t) ⊖ x̂_{t+1} are (1 − α) f̄_{t+1} (⊖ undoes ⊕). False if the
    state became NaN/inf, or a control did (a plan x̄ with non-finite states: the shifted
    plan of :class:`optdyn.MPC` whose last states diverged)."""
    N, ndx = K.shape[0], K.shape[2]
    nu = us.shape[1]
    work = transition_work(dyn, xs.shape[1], nu, 0)
    dx, y = np.empty(ndx), np.empty(xs.shape[1])
    xs_new[0] = xs[0]
    for t in range(N):
        state_error(dyn, xs[t], xs_new[t], dx)  # δx = x̂ ⊖ x̄
        for i in range(nu):
            du = alpha * k[t, i]
            for j in range(ndx):
                du += K[t, i, j] * dx[j]
            u = us[t, i] + du
            if not np.isfinite(u):  # the clamp below would turn NaN into a bound
                return False
            us_new[t, i] = min(max(u, lower[i]), upper[i])
        if gaps.shape[0] == 0:
            if not transition(dyn, t, xs_new[t], us_new[t], xs_new[t + 1], work):
                return False
            continue
        if not transition(dyn, t, xs_new[t], us_new[t], y, work):
            return False
        for j in range(ndx):
            dx[j] = (alpha - 1.0) * gaps[t, j]
        state_retract(dyn, y, dx, xs_new[t + 1])
    return True


# ---------------------------------------------------------------------------------------
# objective seen by the solver and the iteration loop
# ---------------------------------------------------------------------------------------


class Objective:
    """The cost DDP minimises: the problem's own (the augmented Lagrangian adds terms).

    ``running(xs (N,nx), us (N,nu))`` returns the dt-weighted stage terms
    (l, lx, lu, lxx, lux, luu) of knots 0..N−1, ``terminal(x)`` returns (l, lx, lxx)
    and ``value(xs (N+1,nx), us)`` the total; with ``gauss_newton`` the residual costs'
    Hessians are their Gauss–Newton parts (:meth:`optdyn.ocp.costs.Cost.gauss_newton`).
    """

    exact = True  # value() is the problem's objective itself

    def __init__(self, problem: Problem, gauss_newton: bool = False) -> None:
        self.problem, self.gauss_newton = problem, gauss_newton

    def running(self, xs, us, out: tuple | None = None):
        """Into ``out`` if given (:meth:`optdyn.Problem.running_cost_terms`)."""
        return self.problem.running_cost_terms(xs, us, self.gauss_newton, out)

    def terminal(self, x):
        return self.problem.terminal_cost_terms(x, self.gauss_newton)

    def value(self, xs, us) -> float:
        return self.problem.cost(xs, us)


class Workspace:
    """The arrays of DDP/iLQR iterations on a problem of N intervals, written in place by
    every solve given this workspace instead of allocated afresh: the feed-forward k (N, nu)
    and feedback K (N, nu, ndx) of the backward pass, the iterate and
    the forward pass's trial trajectory (``xs``, ``us``: two of each, swapped when a step is
    accepted), the contracted second-order terms' stage records (``stages``: megabytes for
    long horizons, made by DDP's first expansion), the dynamics' and the cost's expansions
    (``linearization``, :meth:`expansion`) and the last finite rollout of a problem's
    x0 (:meth:`rollout_of`), so that controls rolled out once — to check the initial guess, or
    by the caller (:class:`optdyn.MPC`'s feedback-policy warm start) — are not rolled out
    again. A solve's result has arrays of its own. A controller solving one horizon after
    another of the same size keeps one (:class:`optdyn.MPC`); :meth:`fits` says whether it
    serves a problem."""

    def __init__(self, problem: Problem) -> None:
        if not isinstance(problem, Problem):
            raise ValueError(f"problem: expected an optdyn.Problem, got {type(problem).__name__}")
        N, nx, nu, ndx = self.size = (problem.N, problem.nx, problem.nu, problem.ndx)
        self.k, self.K = np.zeros((N, nu)), np.zeros((N, nu, ndx))
        self.xs, self.us = (np.empty((N + 1, nx)), np.empty((N + 1, nx))), (np.empty((N, nu)), np.empty((N, nu)))
        self.free, self.no_gaps = (np.full(nu, -np.inf), np.full(nu, np.inf)), np.zeros((0, ndx))
        self.stages = problem.no_stages
        self._rolled = (None, np.empty(nx), np.empty((N, nu)), np.empty((N + 1, nx)))  # dynamics, x0, us, xs
        self._expansions = [problem.expansion_arrays(N), None]
        self.linearization = problem.linearization_arrays(N)

    def expansion(self, i: int) -> tuple[np.ndarray, ...]:
        """The cost expansion's arrays (:meth:`optdyn.Problem.running_cost_terms`): the exact
        model's (``i`` = 0) or the Gauss–Newton fallback's (1, made when first asked for)."""
        if self._expansions[i] is None:
            self._expansions[i] = tuple(np.zeros_like(a) for a in self._expansions[0])
        return self._expansions[i]

    def fits(self, problem: Problem) -> bool:
        """Whether ``problem`` has this workspace's N, nx, nu and ndx."""
        return self.size == (problem.N, problem.nx, problem.nu, problem.ndx)

    def remember(self, problem: Problem, us: np.ndarray, xs: np.ndarray) -> None:
        """Note that ``xs`` (N+1, nx), all finite, are the states of ``us`` (N, nu) from the
        problem's x0 under its dynamics (a copy is kept)."""
        _, x0, rolled_us, rolled_xs = self._rolled
        x0[:], rolled_us[:], rolled_xs[:] = problem.x0, us, xs
        self._rolled = (problem.dynamics, x0, rolled_us, rolled_xs)

    def rollout_of(self, problem: Problem, us: np.ndarray) -> np.ndarray | None:
        """The remembered states of ``us`` if they are those of :meth:`remember` (the same
        dynamics object, x0 and controls, bit for bit), else None."""
        dynamics, x0, rolled_us, rolled_xs = self._rolled
        if dynamics is problem.dynamics and np.array_equal(x0, problem.x0) and np.array_equal(rolled_us, us):
            return rolled_xs
        return None


@dataclass
class Options:
    """DDP/iLQR settings (defaults follow Tassa 2012 Sec. II-F).

    ``second_order`` ("contracted" or "tensor", DDP only) selects how V'_x·F_zz is
    computed (:data:`SECOND_ORDER`); both give the same iterates to rounding.
    Converged when the expected decrease of a full step −ΔV(1) (the Newton decrement,
    insensitive to the scaling of u) is ≤ tol·(1 + |J|), or the projected gradient
    ‖∇_u J‖∞ ≤ gtol·(1 + |J|). ``max_time`` (s, None = no limit) bounds the wall time:
    it is checked between iterations and between line-search trials (status "time_limit").
    ``cost_hessian``: "exact", or "gauss_newton" to leave the residuals' curvature out of
    the costs' Hessians (w r_xᵀ a_rr r_x, as Crocoddyl; the fixed points are the same).
    ``box``: "always" bounds the backward pass's step by the control box from the first
    iteration (Tassa 2014); "after_full_step" only once a full step has been accepted, the
    forward pass clamping the controls before (module docstring).
    ``regularization``: "state" adds μ·BᵀB to Q_uu (μ on V'_xx, Tassa 2012 eq. 10);
    "state_and_controls" adds μ·(BᵀB + I) (:func:`regularize`), which also acts on the
    controls that do not move the state (B's null space: in stance, the torques that only
    change contact forces), where DDP's V'_x·F_uu can make Q_uu indefinite.
    ``indefinite``: what an iteration does when Q̃_uu is not positive definite at some knot at
    the current μ: "regularize" raises μ and repeats the backward pass (Tassa 2012 Sec. II-F);
    "gauss_newton" takes this iteration's step from the Gauss–Newton model instead (iLQR's
    backward pass with the residual costs' Gauss–Newton Hessians, terminal cost included; μ is
    raised only if that one fails too), so that exact steps are taken wherever the exact model is
    convex — near a strict minimum, with DDP's quadratic convergence — and never bound by a large
    μ·BᵀB far from it (module docstring, "Indefinite models").
    ``shooting``: "single" starts from the rollout of ``us_init``; "multiple" from the states
    ``xs_init`` as well, with the gaps between intervals closed by the steps (feasibility-driven
    DDP, Mastalli et al. 2020; module docstring).
    ``final_expansion``: False returns as soon as the step that reaches ``max_iter`` is taken,
    with the gains K of the backward pass that made it, instead of expanding the problem again at
    the new iterate for its gains and convergence test (the real-time iterations of
    :class:`optdyn.MPC`, Diehl et al. 2005: one expansion per step); the history then ends
    with the iterate before that step.
    """

    max_iter: int = 500
    tol: float = 1e-10
    gtol: float = 1e-8
    mu_init: float = 0.0
    mu_min: float = 1e-6
    mu_max: float = 1e10
    delta0: float = 2.0
    c1: float = 1e-4
    alphas: tuple = tuple(0.5 ** i for i in range(11))
    second_order: str = "contracted"
    shooting: str = "single"
    cost_hessian: str = "exact"
    box: str = "always"
    regularization: str = "state"
    indefinite: str = "regularize"
    verbose: bool = False
    callback: object = None
    max_time: float | None = None
    final_expansion: bool = True


@dataclass
class Log:
    """Per-iteration history shared by the DDP loop and the augmented-Lagrangian loop.

    Row i describes the trajectory after i steps: objective "cost", minimised function
    "merit" (the augmented Lagrangian when constrained, else = cost), "gradient" (projected
    ‖∇_u merit‖∞), "expected_decrease" −ΔV(1) of the next step, "step" α that led here,
    "regularization" μ, "violation" (max constraint violation), "outer" (the
    augmented-Lagrangian outer iteration, 0 without constraints: the first row of each
    later outer iteration is the same trajectory after a multiplier update, not a step)
    and wall "time" (s).
    """

    solver: str
    callback: object = None
    verbose: bool = False
    t0: float = field(default_factory=time.perf_counter)
    rows: dict = field(default_factory=lambda: {k: [] for k in (
        "cost", "merit", "expected_decrease", "step", "regularization", "violation", "gradient", "outer", "time")})
    outer: int = 0  # set by the augmented-Lagrangian loop before each inner solve

    stopped: bool = False  # set when the callback returned False
    fallbacks: int = 0  # steps taken from the Gauss–Newton model (Options.indefinite)
    rejected: int = 0  # forward passes rejected because the rollout diverged or the model was invalid
    invalid: int = 0  # of which the dynamics or the cost raised an exception (state invalid for the model)
    run: Run = field(default_factory=Run)  # time limit and Ctrl-C (optdyn.solvers.runtime)
    all_diverged: bool = False  # every trial of the last line search was rejected as diverged
    kept: tuple | None = None  # (xs, us) of the last accepted iterate, for an interrupt by exception

    def keep(self, xs: np.ndarray, us: np.ndarray) -> None:
        """Remember a copy of the accepted iterate (returned if a KeyboardInterrupt unwinds the
        solve), in the arrays of the first copy from then on."""
        if self.kept is None:
            self.kept = (xs.copy(), us.copy())
        else:
            np.copyto(self.kept[0], xs)
            np.copyto(self.kept[1], us)

    def stop_reason(self) -> str | None:
        """"interrupted" (Ctrl-C), "time_limit" (max_time) or None (see :class:`optdyn.solvers.runtime.Run`)."""
        return self.run.stop_reason()

    def record(self, **row) -> None:
        row["time"] = time.perf_counter() - self.t0
        row["outer"] = self.outer
        for key in self.rows:
            self.rows[key].append(float(row[key]))
        if self.verbose:
            print(f"{self.solver:>5} {len(self.rows['cost']) - 1:4d}  cost {row['cost']:.8e}  "
                  f"dV {row['expected_decrease']:.2e}  grad {row['gradient']:.2e}  step {row['step']:.3g}  "
                  f"mu {row['regularization']:.1e}  viol {row['violation']:.2e}")
        if self.callback is not None and self.callback(dict(row, iteration=len(self.rows["cost"]) - 1,
                                                            solver=self.solver)) is False:
            self.stopped = True

    def history(self) -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in self.rows.items()}


@dataclass
class Outcome:
    """State of the DDP loop when it stopped."""

    xs: np.ndarray
    us: np.ndarray
    K: np.ndarray
    cost: float
    converged: bool
    status: str
    message: str
    iterations: int
    gradient: float = np.inf
    mu: float = 0.0


NEGATIVE_STEP = 2.0
"""While multiple-shooting gaps are open, a step whose model predicts a cost increase is
accepted if the cost rises by less than this multiple of the prediction."""


def _increase(mu: float, delta: float, o: Options) -> tuple[float, float]:
    delta = max(o.delta0, delta * o.delta0)
    return max(o.mu_min, mu * delta), delta


def _decrease(mu: float, delta: float, o: Options) -> tuple[float, float]:
    delta = min(1.0 / o.delta0, delta / o.delta0)
    mu = mu * delta
    return (mu if mu > o.mu_min else 0.0), delta


def _trial(problem: Problem, objective: Objective, trajectory: tuple, step: Step, alpha: float, trial: tuple,
           log: Log) -> float:
    """Forward pass from ``trajectory`` (xs, us) with ``step`` scaled by α into ``trial``
    (xs_new, us_new) and its objective; NaN if the rollout diverged (non-finite states) or
    the model rejected a state (any exception of the dynamics or the costs, e.g. a
    non-positive articulated inertia far from the data; counted in ``log.invalid``)."""
    (xs, us), (xs_new, us_new) = trajectory, trial
    try:
        if not forward_pass(problem.dynamics, xs, us, step.k, step.K, alpha, problem.u_lower, problem.u_upper,
                            xs_new, us_new, step.gaps):
            return np.nan
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowing cost is a rejected trial
            J_new = objective.value(xs_new, us_new)
    except Exception:  # noqa: BLE001 — a trial the model cannot evaluate is a rejected step
        log.invalid += 1
        return np.nan
    return J_new if np.isfinite(J_new) else np.nan


def line_search(problem: Problem, objective: Objective, o: Options, trajectory: tuple, step: Step, J: float,
                trial: tuple, log: Log) -> tuple[float, float]:
    """Backtracking on α from ``trajectory`` (xs, us) of objective J along ``step``: accept
    the first forward pass whose actual decrease exceeds c1 × the expected one
    −(αΔV₁ + α²ΔV₂); while gaps are open, also one whose cost rises by less than
    :data:`NEGATIVE_STEP` × the rise the model expects (as Crocoddyl's FDDP); diverged or
    model-invalid rollouts (see :func:`_trial`) are rejected.
    Stops early (returning no step) when ``log.stop_reason()``.

    Returns (α, J_new) with the new trajectory in ``trial`` (xs_new, us_new), or (0, J) if
    none was accepted; ``log.all_diverged`` tells whether every trial was rejected as
    diverged/invalid.
    """
    log.all_diverged = True
    for alpha in o.alphas:
        if log.stop_reason():
            log.all_diverged = False
            break
        J_new = _trial(problem, objective, trajectory, step, alpha, trial, log)
        if np.isnan(J_new):
            log.rejected += 1  # diverged or invalid for the model: try a shorter step
            continue
        log.all_diverged = False
        expected = -(alpha * step.dV1 + alpha * alpha * step.dV2)
        if (J - J_new) > o.c1 * expected and (expected > 0 or J_new < J):
            return alpha, J_new
        if step.gaps.shape[0] and expected <= 0 and J_new - J < -NEGATIVE_STEP * expected:
            return alpha, J_new  # closing gaps may cost: an increase up to twice the model's is taken
    return 0.0, J


def linearize(problem: Problem, xs: np.ndarray, us: np.ndarray, mode: int, stages=None, out: tuple | None = None
              ) -> tuple[np.ndarray, np.ndarray, SecondOrder]:
    """(A (N,ndx,ndx), B (N,ndx,nu), the :data:`SecondOrder` terms) along (xs, us) for
    :func:`backward_pass`.

    Mode 1 (contracted) records the interval stages (into ``stages`` from the previous call
    when given), mode 2 forms the full tensors Fzz (N, ndx, nz, nz); what a mode does not use
    is empty (the records ``stages`` when given, unused). A and B go into ``out`` if given
    (:meth:`optdyn.Problem.linearization_arrays`).
    """
    Fzz = np.empty((problem.N, 0, 0, 0))
    if mode == SECOND_ORDER["contracted"]:
        A, B, stages = problem.step_stages(xs[:-1], us, stages, out=out)
    elif mode == SECOND_ORDER["tensor"]:
        A, B, Fxx, Fxu, Fuu = problem.step_derivatives(xs[:-1], us, second_order=True, out=out)
        Fzz = np.concatenate([np.concatenate([Fxx, Fxu], 3), np.concatenate([Fxu.transpose(0, 1, 3, 2), Fuu], 3)], 2)
    else:
        A, B = problem.step_derivatives(xs[:-1], us, out=out)
    return A, B, SecondOrder(mode, Fzz, problem.dynamics, problem.no_stages if stages is None else stages)


def safe_rollout(problem: Problem, us: np.ndarray, workspace: Workspace) -> tuple[np.ndarray, bool]:
    """States (N+1, nx) of ``us`` (N, nu) and whether they are all finite: a diverged
    rollout has NaN rows after the divergence, and one the model rejected (any exception
    of the dynamics) NaN after x0 — a failed rollout, never a crash. A finite rollout is
    remembered in ``workspace`` and not made again (:meth:`Workspace.rollout_of`)."""
    xs = workspace.rollout_of(problem, us)
    if xs is not None:
        return xs, True
    try:
        xs = problem.rollout(us)
    except Exception:  # noqa: BLE001 — an invalid state is a failed rollout, not a crash
        xs = np.full((problem.N + 1, problem.nx), np.nan)
        xs[0] = problem.x0
    finite = bool(np.all(np.isfinite(xs)))
    if finite:
        workspace.remember(problem, us, xs)
    return xs, finite


def gaps_of(problem: Problem, xs: np.ndarray, us: np.ndarray) -> np.ndarray:
    """The multiple-shooting gaps f̄_{t+1} = F(x_t, u_t) ⊖ x_{t+1} (N, ndx) of (xs, us)."""
    return problem.state_difference(xs[1:], problem.step(xs[:-1], us))


def start(problem: Problem, us: np.ndarray, xs: np.ndarray | None, workspace: Workspace
          ) -> tuple[np.ndarray, np.ndarray, bool]:
    """The first iterate, in ``workspace.xs[0]``: (xs, gaps, finite). Single shooting (``xs``
    None): the rollout of ``us`` and no gaps ((0, ndx)); multiple shooting: ``xs`` with x_0
    set to the problem's, and its gaps (none if it is a rollout of ``us``)."""
    out, none = workspace.xs[0], workspace.no_gaps
    if xs is None:
        rolled, finite = safe_rollout(problem, us, workspace)
        out[:] = rolled
        return out, none, finite
    out[:] = xs
    out[0] = problem.x0
    try:
        gaps = gaps_of(problem, out, us)
    except Exception:  # noqa: BLE001 — a node the model rejects cannot start the solve
        return out, none, False
    finite = bool(np.all(np.isfinite(gaps)))
    return out, (gaps if finite and np.any(gaps) else none), finite


def gauss_newton_model(objective: Objective, o: Options, ddp: bool, model: tuple, xs: np.ndarray, us: np.ndarray,
                       workspace: Workspace) -> tuple | None:
    """The model an iteration falls back to when ``model`` = (lq, terminal, second) has a
    Q̃_uu that is not positive definite at the current μ (``o.indefinite == "gauss_newton"``):
    iLQR's (no V'_x·F_zz) with the residual costs' Gauss–Newton Hessians at every knot and at
    the end; None if there is none to fall back to (``"regularize"``, or iLQR already on
    Gauss–Newton Hessians)."""
    if o.indefinite != "gauss_newton" or (not ddp and objective.gauss_newton):
        return None
    lq, terminal, second = model
    if not objective.gauss_newton:
        saved, objective.gauss_newton = objective.gauss_newton, True
        try:
            hessians = objective.running(xs[:-1], us, workspace.expansion(1))[3:]
            lq = lq._replace(**dict(zip(("lxx", "lux", "luu"), hessians)))
            terminal = Value(terminal.Vx, objective.terminal(xs[-1])[2])
        finally:
            objective.gauss_newton = saved
    return lq, terminal, second._replace(mode=SECOND_ORDER["none"])


def iterate(problem: Problem, objective: Objective, us: np.ndarray, o: Options, ddp: bool,
            log: Log, max_iter: int | None = None, xs: np.ndarray | None = None,
            workspace: Workspace | None = None) -> Outcome:
    """DDP (``ddp``) or iLQR iterations from controls us (N, nu), and with ``xs`` (N+1, nx)
    from those states too (multiple shooting, module docstring), in the arrays of
    ``workspace`` (a new :class:`Workspace` if None); the outcome's arrays are its own.

    Each iteration: linearise (and quadratise) along the trajectory, run the backward
    pass (raising μ until Q̃_uu is positive definite), record the history row, test
    convergence (only once the gaps are closed) and the stop conditions (callback,
    ``log.stop_reason()``), then line-search the forward pass and adapt μ. A full step
    closes every gap; from then on the iterations are single shooting's. If the rollout of
    ``us`` (or a gap) is not finite, returns at once with status "rollout_failed".
    """
    lower, upper = problem.u_lower, problem.u_upper
    ws = Workspace(problem) if workspace is None else workspace
    (_, xs_new), (clipped, us_new), k, K = ws.xs, ws.us, ws.k, ws.K
    us = clipped_controls(problem, us, clipped)
    K[:] = 0.0
    xs, gaps, finite = start(problem, us, xs, ws)
    if not finite:
        return Outcome(xs.copy(), us.copy(), K.copy(), np.nan, False, "rollout_failed",
                       "the rollout of the initial controls (or a gap of the initial states) is not finite "
                       "or the model rejects a state", 0)
    J = objective.value(xs, us)
    log.keep(xs, us)
    mu, delta = o.mu_init, 1.0
    max_iter = o.max_iter if max_iter is None else max_iter
    mode = SECOND_ORDER[o.second_order] if ddp else 0
    alpha, steps = 0.0, 0
    box = (lower, upper)
    boxed = o.box == "always" or not np.any(np.isfinite(lower) | np.isfinite(upper))  # in the backward pass yet

    def outcome(converged: bool, status: str, message: str) -> Outcome:
        return Outcome(xs.copy(), us.copy(), K.copy(), J, converged, status, message, steps, gnorm, mu)

    moved = True
    while True:
        if moved:  # after a rejected step the trajectory, hence its expansion, is unchanged
            A, B, second = linearize(problem, xs, us, mode, ws.stages, ws.linearization)
            ws.stages = second.stages
            lq = Expansion(A, B, *objective.running(xs[:-1], us, ws.expansion(0))[1:])
            terminal = Value(*objective.terminal(xs[-1])[1:])
            gnorm = projected_gradient(lq, terminal.Vx, us, lower, upper)
            fallback = gauss_newton_model(objective, o, ddp, (lq, terminal, second), xs, us, ws)
        while True:
            models = ((lq, terminal, second),) + ((fallback,) if fallback is not None else ())
            for model in models:  # the exact model, then (o.indefinite) the Gauss–Newton one
                k[:] = 0.0
                failed, dV1, dV2 = backward_pass(*model[:2], us, *(box if boxed else ws.free), mu, model[2], k, K, gaps,
                                                 o.regularization == "state_and_controls")
                if failed < 0:
                    break
            if failed < 0 or mu > o.mu_max:
                break
            mu, delta = _increase(mu, delta, o)
        log.fallbacks += failed < 0 and model is not models[0]
        if gaps.shape[0] and failed < 0:  # split the model's change into its α and α² parts
            slope = model_slope(lq, terminal.Vx, k, K, gaps)
            dV1, dV2 = slope, dV1 + dV2 - slope
        log.record(cost=J if objective.exact else problem.cost(xs, us), merit=J, expected_decrease=-(dV1 + dV2),
                   step=alpha, regularization=mu, violation=problem.violation(xs, us), gradient=gnorm)
        if failed >= 0:
            return outcome(False, "regularization_failed",
                           f"Q_uu stayed indefinite up to mu = {o.mu_max:g} (knot {failed})")
        if log.stopped:
            return outcome(False, "user_stop", "the callback returned False")
        scale = 1.0 + abs(J)
        if not gaps.shape[0] and ((boxed and -(dV1 + dV2) <= o.tol * scale) or gnorm <= o.gtol * scale):
            return outcome(True, "converged",
                           f"expected decrease {-(dV1 + dV2):.2e} or gradient {gnorm:.2e} below tolerance")
        reason = log.stop_reason()
        if reason:
            return outcome(False, reason, stop_message(reason, log.run))
        if steps == max_iter:
            gap = f"; gaps still open (largest {np.abs(gaps).max():.2e})" if gaps.shape[0] else ""
            return outcome(False, "max_iter", f"iteration limit {max_iter} reached{gap}")
        steps += 1
        alpha, J_new = line_search(problem, objective, o, (xs, us), Step(k, K, dV1, dV2, gaps), J,
                                   (xs_new, us_new), log)
        moved = alpha > 0.0
        if moved:
            xs, xs_new, us, us_new, J = xs_new, xs, us_new, us, J_new
            log.keep(xs, us)
            boxed = boxed or alpha == 1.0
            mu, delta = _decrease(mu, delta, o)
            if gaps.shape[0]:  # a full step closes them; a partial one leaves (1 − α) of each (forward_pass)
                gaps = ws.no_gaps if alpha == 1.0 else (1.0 - alpha) * gaps
            if steps == max_iter and not o.final_expansion:
                return outcome(False, "max_iter", f"iteration limit {max_iter} reached (not expanded at the last step)")
        elif log.stop_reason():
            continue  # the line search was cut short: report the stop at the next check
        else:
            mu, delta = _increase(mu, delta, o)
            if mu > o.mu_max and log.all_diverged:
                return outcome(False, "rollout_failed", "every trial rollout diverged or was invalid for the "
                                                        f"model up to mu = {o.mu_max:g}")
            if mu > o.mu_max:
                return outcome(False, "line_search_failed", f"no step decreased the cost up to mu = {o.mu_max:g}")


def initial_controls(problem: Problem, workspace: Workspace, us_init=None) -> tuple[np.ndarray, str, list[str]]:
    """Controls (N, nu) to start single shooting from, where they came from, and the
    candidates rejected on the way.

    Candidates in order: ``us_init`` (if given), the problem's guess, rest (the
    torques holding q0 at rest, :meth:`~optdyn.ocp.problem.Problem.rest_controls`), each
    clipped to the bounds; the first whose
    rollout is finite and valid for the model is returned ("us_init", "problem" or
    "rest"), its rollout remembered in ``workspace``. An open-loop guess made for multiple
    shooting may diverge in a rollout. If none works, rest is returned and :func:`iterate`
    reports "rollout_failed".
    """
    candidates = ([("us_init", lambda: us_init)] if us_init is not None else []) + \
        [("problem", lambda: problem.us_init), ("rest", problem.rest_controls)]
    rejected = []
    for origin, make in candidates:
        us = clipped_controls(problem, make())
        if safe_rollout(problem, us, workspace)[1]:
            return us, origin, rejected
        rejected.append(origin)
    return us, "rest", rejected


def initial_guess(problem: Problem, o: Options, workspace: Workspace, us_init=None, xs_init=None
                  ) -> tuple[np.ndarray, np.ndarray | None, str, list[str]]:
    """(us, xs, origin, rejected): what :func:`iterate` starts from. Single shooting: the
    controls of :func:`initial_controls` and no states; multiple shooting: ``us_init`` and
    ``xs_init`` (default: the problem's guesses), controls clipped to the bounds."""
    if o.shooting == "single":
        us, origin, rejected = initial_controls(problem, workspace, us_init)
        return us, None, origin, rejected
    us = clipped_controls(problem, problem.us_init if us_init is None else us_init)
    xs = problem.xs_init if xs_init is None else np.array(xs_init, dtype=float, order="C")
    return us, xs, "us_init" if us_init is not None else "problem", []


def clipped_controls(problem: Problem, us, out: np.ndarray | None = None) -> np.ndarray:
    """A C-ordered float copy of the controls ``us`` (N, nu) clipped to the problem's bounds
    (the kernels are compiled for C-ordered arrays: another order compiles them again), into
    ``out`` (N, nu) if given."""
    if out is not None:
        return np.clip(np.asarray(us, dtype=float), problem.u_lower, problem.u_upper, out=out)
    return np.clip(np.array(us, dtype=float, order="C"), problem.u_lower, problem.u_upper)


def stopped_by_exception(problem: Problem, log: Log, K_shape: tuple[int, int, int]) -> Outcome:
    """Outcome of a solve unwound by a KeyboardInterrupt (during compilation, or a second
    Ctrl-C): the last accepted iterate (``log.kept``), else the problem's initial guess."""
    if log.kept is not None:
        xs, us = (a.copy() for a in log.kept)
        cost, message = problem.cost(xs, us), stop_message("interrupted", log.run)
    else:  # nothing evaluated yet: evaluating the cost now could start a compilation
        xs, us = problem.xs_init.copy(), problem.us_init.copy()
        cost = np.nan
        message = "stopped by Ctrl-C (SIGINT) before the first iterate; the problem's initial guess is returned"
    iterations = max(len(log.rows["cost"]) - 1, 0)
    return Outcome(xs, us, np.zeros(K_shape), cost, False, "interrupted", message, iterations)


def solve_ddp(problem: Problem, ddp: bool = True, us_init=None, xs_init=None, *, workspace: Workspace | None = None,
              **options) -> Result:
    """Solve ``problem`` (without path/terminal constraints) by DDP or iLQR, from
    :func:`initial_guess` (``xs_init`` is used by multiple shooting only), in the arrays of
    ``workspace`` (a :class:`Workspace` of the problem's size, kept between solves; None: new ones).

    ``options`` are the fields of :class:`Options`. Ctrl-C and ``max_time`` stop the solve
    with the last accepted iterate (statuses "interrupted", "time_limit"; see
    :mod:`optdyn.solvers.runtime`). Returns a :class:`Result` with the feedback gains
    K (N, nu, ndx) of the last backward pass; ``extra`` has "regularization", "gradient",
    "gauss_newton_steps" (backward passes whose step came from the Gauss–Newton model,
    ``indefinite="gauss_newton"``), "rejected_rollouts" (line-search trials that diverged or were
    invalid for the model),
    "invalid_rollouts" (of which an exception of the model/costs), "initial_guess",
    "rejected_guesses" (see :func:`initial_controls`) and "compile_time".
    """
    o = Options(**options)
    name = "ddp" if ddp else "ilqr"
    origin, rejected = "", []
    ws = Workspace(problem) if workspace is None else workspace
    with Run(o.max_time) as run:
        log = Log(name, o.callback, o.verbose, run=run)
        try:
            us0, xs0, origin, rejected = initial_guess(problem, o, ws, us_init, xs_init)
            out = iterate(problem, Objective(problem, o.cost_hessian == "gauss_newton"), us0, o, ddp, log, xs=xs0,
                          workspace=ws)
        except (KeyboardInterrupt, SystemError) as e:
            if not is_interrupt(e) and not run.interrupted:
                raise
            out = stopped_by_exception(problem, log, (problem.N, problem.nu, problem.ndx))
    return Result(xs=out.xs, us=out.us, cost=out.cost, converged=out.converged, iterations=out.iterations,
                  status=out.status, message=out.message, history=log.history(), solver=name,
                  problem=problem.name, params=problem.params, wall_time=run.elapsed(),
                  gains=out.K, extra={"regularization": out.mu, "gradient": out.gradient,
                                      "rejected_rollouts": log.rejected, "invalid_rollouts": log.invalid,
                                      "gauss_newton_steps": log.fallbacks,
                                      "initial_guess": origin,
                                      "rejected_guesses": rejected, "compile_time": run.compile_time()})
