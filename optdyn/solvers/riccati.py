"""The linear-quadratic subproblem and its Riccati recursion: the one backward pass of DDP,
iLQR, model predictive control and any finite-horizon LQR.

Notation of Y. Tassa, T. Erez, E. Todorov, "Synthesis and Stabilization of Complex
Behaviors through Online Trajectory Optimization", IROS 2012 ("Tassa 2012") and Y. Tassa,
N. Mansard, E. Todorov, "Control-Limited Differential Dynamic Programming", ICRA 2014
("Tassa 2014"). Along a trajectory of N intervals the problem is modelled by the
:data:`Expansion` (A = F_x, B = F_u and the dt-weighted cost terms per knot) and a terminal
quadratic :data:`Value` V_N. The backward pass forms at every knot, with V' = V_{k+1}:

    Q_x  = ℓ_x + Aᵀ V'_x                 Q_u  = ℓ_u + Bᵀ V'_x
    Q_xx = ℓ_xx + Aᵀ V'_xx A  [+ V'_x·F_xx]
    Q_ux = ℓ_ux + Bᵀ V'_xx A  [+ V'_x·F_ux]
    Q_uu = ℓ_uu + Bᵀ V'_xx B  [+ V'_x·F_uu]

(Tassa 2012 eq. 5) where the bracketed second-order dynamics terms are DDP's
(:data:`SecondOrder`): V'_x·F_zz, the Hessian of V'_xᵀF(x, u), is contracted by a
second-order adjoint through the integrator stages
(:func:`optdyn.ocp.integrators.interval_hessian`; J. N. Nganga, P. M. Wensing,
"Accelerating Second-Order Differential Dynamic Programming for Rigid-Body Systems", IEEE
RA-L 2021) or, to validate it, from the full tensors. Levenberg–Marquardt regularisation
acts on V'_xx (Tassa 2012 eq. 10): Q̃_uu = Q_uu + μ BᵀB, Q̃_ux = Q_ux + μ BᵀA, optionally
with μ I on Q̃_uu as well (:func:`regularize`). The control step comes from the
box-constrained QP

    k = argmin_{lo ≤ δu ≤ hi} ½ δuᵀ Q̃_uu δu + Q_uᵀ δu

solved by projected Newton (Tassa 2014, Alg. 3; :func:`optdyn.solvers.linalg.box_qp`); the
gain is K_f = −Q̃_uu,ff⁻¹ Q̃_ux,f on the free controls and 0 on the clamped ones. The value
function follows Tassa 2012 eq. 11:

    ΔV   = α kᵀQ_u + ½ α² kᵀQ_uu k
    V_x  = Q_x + KᵀQ_uu k + KᵀQ_u + Q_uxᵀ k
    V_xx = Q_xx + KᵀQ_uu K + KᵀQ_ux + Q_uxᵀ K

Without the bracketed terms, the bounds and μ this is the discrete Riccati recursion of the
finite-horizon LQR (:func:`lqr`).

With multiple-shooting gaps f̄_{k+1} = F(x̄_k, ū_k) ⊖ x̄_{k+1} (the feasibility-driven DDP of
C. Mastalli et al., "Crocoddyl: An Efficient and Versatile Framework for Multi-Contact
Optimal Control", ICRA 2020) V' is seen from the end of interval k, which misses x̄_{k+1} by
f̄: V'_x⁺ = V'_x + V'_xx f̄ replaces V'_x in Q_x, Q_u and in V'_x·F_zz, and the model's value
of the step gains V'_x·f̄ + ½ f̄ᵀV'_xx f̄ per gap (:func:`shift_by_gap`).

On a floating base every quantity at knot k is in the chart δx ↦ x̄_k ⊕ δx of the current
trajectory (Mastalli et al. 2020): A maps the tangent at x̄_k to the one at x̄_{k+1} and the
formulas above are unchanged, V'_x·F_zz being the Hessian of V'_xᵀ(F ⊖ x̄').

The recursion is assembled from the named steps :func:`q_expansion`, the dynamics' V'_x·F_zz
(:func:`~optdyn.ocp.shooting.transition_hessian` in parts, or :func:`contracted_tensor`),
:func:`regularize`, :func:`gains`, :func:`expected_decrease` and :func:`value_update`, and
loops over the knots inside compiled code (:func:`backward_pass`). The contracted V'_x·F_zz,
most of DDP's pass (0.22 of 0.30 ms per knot on the quadruped trot), is computed in
:data:`HESSIAN_PARTS` parts that two threads take at once.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from dynamics._compile import allocation_free, njit
from dynamics.parallel import (chunks_done, claims_for, new_relay, relay_claim, relay_finish, relay_opens,
                               relay_over, relay_release, relay_stop, run_chunks)
from dynamics.spatial import axpy, copy_into, symmetrize

from ..ocp.problem import Problem
from ..ocp.shooting import transition_hessian_close, transition_hessian_part, transition_work
from .linalg import box_qp, cholesky_solve_rows, gemm_nn, gemm_tn, gemv_t

SECOND_ORDER = {"none": 0, "contracted": 1, "tensor": 2, "kept": 3}
"""How the backward pass gets V'_x·F_zz: not at all (iLQR), contracted through the
integrator stages (:func:`optdyn.ocp.shooting.transition_hessian`, the default), from the
full second-order tensors (kept to validate the contracted path), or as the last contracted
pass along the same linearisation left it (:data:`SecondOrder`'s ``Hz``): a pass again on the
same dynamics' model whose cost terms changed (:meth:`optdyn.solvers.ddp.DDP.direction`) then
costs iLQR's, the curvature taken at the V'_x of that earlier pass."""

Expansion = namedtuple("Expansion", ["A", "B", "lx", "lu", "lxx", "lux", "luu"])
"""The problem's first- and second-order model along a trajectory, one row per knot
(N, …): A = F_x (N,ndx,ndx), B = F_u (N,ndx,nu), and the dt-weighted cost terms
ℓ_x (N,ndx), ℓ_u (N,nu), ℓ_xx (N,ndx,ndx), ℓ_ux (N,nu,ndx), ℓ_uu (N,nu,nu)."""

Value = namedtuple("Value", ["Vx", "Vxx"])
"""A quadratic value function's gradient V_x (ndx,) and Hessian V_xx (ndx, ndx)."""

QTerms = namedtuple("QTerms", ["Qx", "Qu", "Qxx", "Qux", "Quu"])
"""The expansion of Q(δx, δu) at one knot (Tassa 2012 eq. 5)."""

SecondOrder = namedtuple("SecondOrder", ["mode", "Fzz", "dynamics", "stages", "Hz"])
"""Where the backward pass gets V'_x·F_zz: ``mode`` (:data:`SECOND_ORDER`); mode 1 from the
problem's interval ``dynamics`` and the ``stages`` it recorded along the trajectory, each
knot's V'_x·F_zz written into ``Hz`` (N, nz, nz) if that is not empty ((0, 0, 0)); mode 2
from the full tensors ``Fzz`` (N, ndx, nz, nz); mode 3 from ``Hz``, as mode 1 wrote it."""


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


@allocation_free
def contracted_tensor(Fzz, t, Vx, Hz):
    """Hz (nz, nz) = V'_x·F_zz from the full tensors Fzz (N, ndx, nz, nz) at knot t (mode 2 of
    :data:`SecondOrder`, which validates the contracted mode 1)."""
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
    space, on the controls that do not move the state. At μ = 0 (most passes of a converging
    solve) the products are not formed."""
    nu = Quu.shape[0]
    if mu == 0.0:
        copy_into(Qux_r, Qux)
        Quu_r[:] = 0.0
    else:
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
    K_f = −Q̃_uu,ff⁻¹ Q̃_ux,f on the free controls, 0 on the clamped ones (Tassa 2014), solved
    for all of Q̃_ux's columns at once (:func:`~optdyn.solvers.linalg.cholesky_solve_rows`).
    ``work`` (4, nu) is the box QP's scratch. Returns the number of free controls, or −1 if
    Q̃_uu is not positive definite."""
    nf = box_qp(Quu_r, Qu, lo, hi, k, idx, L, work)
    if nf < 0:
        return nf
    K[:] = 0.0
    for a in range(nf):  # −Q̃_ux,f: its solve is the negated solve, rounding being symmetric
        row, src = K[idx[a]], Qux_r[idx[a]]
        for j in range(row.shape[0]):
            row[j] = -src[j]
    cholesky_solve_rows(L, nf, idx, K)
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


NOT_KEPT = np.empty((0, 0, 0))
"""The :data:`SecondOrder` ``Hz`` of a pass that keeps no V'_x·F_zz."""

HESSIAN_PARTS = 2
"""The parts each knot's V'_x·F_zz is computed in by the contracted pass (mode 1,
:func:`~optdyn.ocp.shooting.transition_hessian_part`): two threads then share a knot. On any
number of threads the parts are the same and summed in the same order, so that the pass is
bitwise the same."""

PassState = namedtuple("PassState", ["V", "Vp", "Q", "Hz", "dV", "failed", "relay"])
"""What the threads of one backward pass share: V (:data:`Value`), V' seen from the end of
the interval (its V_x shifted by the gap; V_xx is V's), Q (:data:`QTerms`), the parts of
V'_x·F_zz (parts, nz, nz), the model's change summed so far (2,), the knot where Q̃_uu was
not positive definite or −1 (1,), and the relay array (:func:`dynamics.parallel.relay_claim`)."""


def backward_pass(lq: Expansion, terminal: Value, us: np.ndarray, lower: np.ndarray, upper: np.ndarray, mu: float,
                  second: SecondOrder, k: np.ndarray, K: np.ndarray, gaps: np.ndarray, on_controls: bool = False
                  ) -> tuple[int, float, float]:
    """Riccati-like sweep N−1 … 0 built from the steps above (module docstring).

    ``lq``: the :data:`Expansion` along the trajectory (us (N, nu)); ``terminal``: the
    :data:`Value` V_N = ℓ_N; the dynamics' second-order terms per ``second``
    (:data:`SecondOrder`); control bounds lower, upper (nu,);
    regularisation μ = ``mu`` (on the controls too if ``on_controls``: :func:`regularize`);
    ``gaps`` (N, ndx): f̄_{t+1} = F(x_t, u_t) ⊖ x_{t+1} of
    multiple shooting (module docstring), or (0, ndx) for a rollout. Writes k (N,nu) (its
    input is the box-QP warm start) and K (N,nu,ndx). Returns (failed knot or −1, kᵀQ_u
    summed, ½kᵀQ_uu k summed plus the model's change across the gaps): the two sum to
    the quadratic model's change for the full step.

    The knots depend on each other, but the contracted V'_x·F_zz of a knot (mode 1, most of
    DDP's pass) is computed in :data:`HESSIAN_PARTS` parts that threads take at once, the
    rest of the knot by the thread that finishes its last part (a relay of
    :func:`dynamics.parallel.run_chunks`' threads, :func:`dynamics.parallel.relay_claim`).
    The other modes run on the calling thread.
    """
    N, ndx, nu = lq.B.shape
    parts = HESSIAN_PARTS if second.mode == 1 else 1
    V = Value(terminal.Vx.copy(), terminal.Vxx.copy())
    state = PassState(V, Value(np.empty(ndx), V.Vxx),
                      QTerms(np.empty(ndx), np.empty(nu), np.empty((ndx, ndx)), np.empty((nu, ndx)), np.empty((nu, nu))),
                      np.empty((parts, ndx + nu, ndx + nu)), np.zeros(2), np.full(1, -1), new_relay())
    args = (lq, us, (lower, upper), mu, second, (k, K), gaps, bool(on_controls), state)
    if parts > 1:
        run_chunks(_backward_relay, N, *args)
    else:
        _backward_relay(*args, claims_for(N, 1))
    return int(state.failed[0]), float(state.dV[0]), float(state.dV[1])


@njit(cache=True, nogil=True)
def _backward_relay(lq, us, bounds, mu, second, gains_out, gaps, on_controls, state, claims):
    """One thread's share of :func:`backward_pass` (``bounds`` = (lower, upper), ``gains_out``
    = (k, K); ``state.V`` holds V_N): the parts of V'_x·F_zz it claims, and the rest of each
    knot whose last part it finishes (:func:`_close_knot`)."""
    N, ndx, nu = lq.B.shape
    relay, parts = state.relay, state.Hz.shape[0]
    if relay_over(relay, N * parts):  # a pool thread that began after the others finished
        return
    scratch = _pass_scratch(ndx, nu)
    work = transition_work(second.dynamics, second.stages.y.shape[1], nu, 1)
    if relay_opens(relay):
        _open_knot(lq, N - 1, gaps, state, scratch)
        relay_release(relay, parts)
    while True:
        i = relay_claim(relay, N * parts)
        if i < 0:
            return
        t, part = N - 1 - i // parts, i % parts
        if second.mode == 1:
            transition_hessian_part(second.dynamics, t, us[t], second.stages, state.Vp.Vx, state.Hz[part], work, part,
                                    parts)
        if not relay_finish(relay, (i // parts + 1) * parts):
            continue
        Hz = scratch.Hz
        if second.mode == 1:  # the parts summed in their order
            copy_into(Hz, state.Hz[0])
            for p in range(1, parts):
                axpy(1.0, state.Hz[p], Hz)
            transition_hessian_close(second.dynamics, t, second.stages, state.Vp.Vx, Hz)
            if second.Hz.shape[0]:
                copy_into(second.Hz[t], Hz)
        elif second.mode == 2:
            contracted_tensor(second.Fzz, t, state.Vp.Vx, Hz)
        elif second.mode == 3:
            copy_into(Hz, second.Hz[t])
        if not _close_knot(lq, t, us, bounds, mu, second.mode > 0, gains_out, on_controls, state, scratch):
            state.failed[0] = t
            relay_stop(relay)
            chunks_done(claims)
            return
        if t == 0:
            chunks_done(claims)
            return
        _open_knot(lq, t - 1, gaps, state, scratch)
        relay_release(relay, parts)


PassScratch = namedtuple("PassScratch", ["VA", "VB", "Hz", "Quuk", "Qux_r", "Quu_r", "QuuK", "lo", "hi", "idx", "L", "qp"])
"""One thread's scratch in :func:`backward_pass`."""


@njit(cache=True, nogil=True, inline="always")
def _pass_scratch(ndx, nu):
    return PassScratch(np.empty((ndx, ndx)), np.empty((ndx, nu)), np.empty((ndx + nu, ndx + nu)), np.empty(nu),
                       np.empty((nu, ndx)), np.empty((nu, nu)), np.empty((nu, ndx)), np.empty(nu), np.empty(nu),
                       np.empty(nu, np.int64), np.empty((nu, nu)), np.empty((4, nu)))


@allocation_free
def _open_knot(lq, t, gaps, state, scratch):
    """V' seen from the end of interval t (shifted by its gap, whose model change is summed)
    and Q's first-order and Gauss–Newton terms at knot t (:func:`q_expansion`)."""
    if gaps.shape[0] > 0:
        state.dV[1] += shift_by_gap(state.V, gaps[t], state.Vp)
    else:
        copy_into(state.Vp.Vx, state.V.Vx)
    q_expansion(lq, t, state.Vp, state.Q, scratch.VA, scratch.VB)


@allocation_free
def _close_knot(lq, t, us, bounds, mu, second_order, gains_out, on_controls, state, scratch):
    """Knot t once V'_x·F_zz is in ``scratch.Hz`` (if ``second_order``): the dynamics' terms
    added to Q, the gains into ``gains_out`` (k, K) (False if Q̃_uu is not positive
    definite), the model's change and V_t."""
    (lower, upper), (k, K), Q = bounds, gains_out, state.Q
    if second_order:
        add_dynamics_terms(scratch.Hz, Q)
    regularize(lq.A[t], lq.B[t], Q.Qux, Q.Quu, mu, on_controls, scratch.Qux_r, scratch.Quu_r)
    for i in range(us.shape[1]):
        scratch.lo[i], scratch.hi[i] = lower[i] - us[t, i], upper[i] - us[t, i]
    if gains(scratch.Quu_r, scratch.Qux_r, Q.Qu, scratch.lo, scratch.hi, k[t], K[t], scratch.idx, scratch.L,
             scratch.qp) < 0:
        return False
    d1, d2 = expected_decrease(k[t], Q.Qu, Q.Quu)
    state.dV[0] += d1
    state.dV[1] += d2
    value_update(Q, k[t], K[t], state.V, scratch.QuuK, scratch.Quuk)
    return True


@njit(cache=True)
def linear_path(lq, k, K, gaps, out):
    """The step's path in the model, Δz_t = (Δx_t, Δu_t) into ``out`` (N + 1, ndx + nu): Δx_0 = 0,
    Δu_t = k_t + K_t Δx_t, Δx_{t+1} = A_t Δx_t + B_t Δu_t + f̄_{t+1} (the gaps, (0, ndx) if
    closed); the last row (Δx_N, 0). The forward pass follows αΔz to first order."""
    N, ndx, nu = lq.B.shape
    out[:] = 0.0
    for t in range(N):
        dx, du, nxt = out[t, :ndx], out[t, ndx:], out[t + 1, :ndx]
        for i in range(nu):
            s = k[t, i]
            for j in range(ndx):
                s += K[t, i, j] * dx[j]
            du[i] = s
        for i in range(ndx):
            s = gaps[t, i] if gaps.shape[0] else 0.0
            for j in range(ndx):
                s += lq.A[t, i, j] * dx[j]
            for j in range(nu):
                s += lq.B[t, i, j] * du[j]
            nxt[i] = s
    return out


@njit(cache=True)
def model_slope(lq, Vx_N, k, K, gaps, path):
    """d/dα at α = 0 of the cost's first-order model along the step of a multiple-shooting
    backward pass: g·Δz on its :func:`linear_path` (written into ``path``), so that the
    model's change is α·g·Δz + α²·(the rest)."""
    linear_path(lq, k, K, gaps, path)
    N, ndx = lq.A.shape[0], lq.A.shape[1]
    g = 0.0
    for t in range(N):
        for i in range(ndx):
            g += lq.lx[t, i] * path[t, i]
        for i in range(lq.lu.shape[1]):
            g += lq.lu[t, i] * path[t, ndx + i]
    for i in range(ndx):
        g += Vx_N[i] * path[N, i]
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


Gains = namedtuple("Gains", ["k", "K", "dV1", "dV2"])
"""The solution of an LQ problem: feed-forward k (N, nu), feedback K (N, nu, ndx) and the
model's change ΔV(α) = α·dV1 + α²·dV2 along δu = α k + K δx."""


def first_order(problem: Problem, N: int) -> SecondOrder:
    """The :data:`SecondOrder` record of a backward pass over N knots without the dynamics'
    second-order terms (iLQR, an LQR) along ``problem``'s interval dynamics."""
    return SecondOrder(SECOND_ORDER["none"], np.empty((N, 0, 0, 0)), problem.dynamics, problem.no_stages,
                       NOT_KEPT)


def lqr(problem: Problem, lq: Expansion, terminal: Value, lower=None, upper=None) -> Gains:
    """The optimal affine policy δu_k = k_k + K_k δx_k of the LQ problem

        min Σ_k [ℓ_xᵀδx_k + ℓ_uᵀδu_k + ½ δx_kᵀℓ_xx δx_k + δu_kᵀℓ_ux δx_k + ½ δu_kᵀℓ_uu δu_k]
            + V_xᵀδx_N + ½ δx_NᵀV_xx δx_N,   δx_{k+1} = A_k δx_k + B_k δu_k,  δx_0 given,

    with the terms of ``lq`` (:data:`Expansion`, any number N of knots of ``problem``'s ndx and nu) and
    ``terminal`` (:data:`Value`), the controls within ``lower`` ≤ δu ≤ ``upper`` (nu,) (default
    unbounded; with bounds the policy is Tassa 2014's: the box QP for k, zero feedback on the
    clamped controls), by :func:`backward_pass` without regularisation or second-order terms.
    ``problem`` supplies the interval dynamics the compiled pass is typed on. ValueError naming
    ``lq`` if Q_uu is not positive definite at some knot (the knot is given).
    """
    N, ndx, nu = lq.B.shape
    if (ndx, nu) != (problem.ndx, problem.nu):
        raise ValueError(f"lq: expected B of shape (N, {problem.ndx}, {problem.nu}) for the problem, got {lq.B.shape}")
    free = np.full(nu, np.inf)
    lower = -free if lower is None else np.asarray(lower, dtype=float)
    upper = free if upper is None else np.asarray(upper, dtype=float)
    k, K = np.zeros((N, nu)), np.zeros((N, nu, ndx))
    failed, dV1, dV2 = backward_pass(lq, terminal, np.zeros((N, nu)), lower, upper, 0.0, first_order(problem, N), k, K,
                                     np.zeros((0, ndx)), False)
    if failed >= 0:
        raise ValueError(f"lq: Q_uu = ℓ_uu + BᵀV'_xx B is not positive definite at knot {failed}")
    return Gains(k, K, dV1, dV2)
