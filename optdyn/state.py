"""The state manifold of the optimal-control layer: x = [q; v], tangent δx = [δq; δv].

A configuration lives on the joints' Lie groups (:mod:`dynamics.joints`, Pinocchio's
conventions), a velocity in a vector space, so the state has ``nx = nq + nv`` coordinates
and a tangent space of dimension ``ndx = 2·nv`` (Mastalli et al., "Crocoddyl: An Efficient
and Versatile Framework for Multi-Contact Optimal Control", ICRA 2020, Sec. IV-A):

    x ⊕ δx = [q ⊕ δq; v + δv],        x₁ ⊖ x₀ = [q₁ ⊖ q₀; v₁ − v₀].

Every derivative "with respect to x" in optdyn is taken in the chart of the point itself,
∂/∂δx f(x ⊕ δx) at δx = 0 — the convention of the dynamics' derivatives. For a model
whose joints are all revolute or prismatic, ⊕ is + and ⊖ is −, and everything here
reduces to the vector-space formulas.

Second derivatives of the group operations. On a joint's group (q ⊕ w = q·exp(w)), the
composition that the integrator needs, ψ(a, b) = ((q ⊕ a) ⊕ (w̄ + b)) ⊖ (q ⊕ w̄), has by
the Baker–Campbell–Hausdorff formula log(e^X e^Y) = X + Y + ½[X, Y] + O(3)

    ψ(a, b) = J_q a + J_v b + ½[J_q a, J_v b] + ½ C(b, b) + O(3),

with J_q = Ad(exp(−w̄)) and J_v = J_r(w̄) (Pinocchio's dIntegrate, see
:func:`dynamics.integrate_jacobians`) and C(b, b) = (dJ_r(w̄)[b]) b: the derivative of
the right Jacobian J_r(x) = Σ_k (−ad_x)^k/(k+1)! in direction b, applied to b (obtained by
differentiating J_r(c) ċ = J_r(w̄ + tb) b at t = 0, where dJ_r(0) = −½ ad). The
contracted Hessians of μᵀψ are therefore

    ∂²/∂a² = 0,   ∂²/∂a∂b = ½ J_qᵀ Q_μ J_v,   ∂²/∂b² = sym(Σ_k c_k Σ_{i+j=k−1} Q_{r_i} ad_w̄^j),

with Q_r[i, j] = rᵀ[e_i, e_j], r_i = (ad_w̄ᵀ)^i μ, c_k = (−1)^k/(k+1)!. The series of
the entire function J_r is summed until its terms fall below rounding
(:func:`exp_hessian`); spherical and planar joints use the subalgebras so(3), se(2) of
se(3). The same pieces give the exact Hessian of q ⊖ q_ref (:func:`log_hessian`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dynamics.joints import QUATERNION_TOLERANCE, _group_rows, difference_kernel, integrate_kernel, unit_block
from dynamics.model import IDX_V, JTYPE, NV, PRISMATIC, REVOLUTE, Model
from dynamics.spatial import matmul_add, matmul_small


def lie_blocks(model: Model) -> np.ndarray:
    """(L, 3) int64 rows (joint type, first tangent index, tangent size) of the model's
    joints whose ⊕ is not addition (spherical, free-flyer, planar); (0, 3) for a model of
    revolute/prismatic joints only."""
    t = model.topology
    rows = [(t[i, JTYPE], t[i, IDX_V], t[i, NV]) for i in range(t.shape[0])
            if t[i, JTYPE] not in (REVOLUTE, PRISMATIC)]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


@njit(cache=True)
def state_integrate(topology, nq, x, dx):
    """x ⊕ dx (nq + nv,) for x = [q; v] and dx = [δq; δv] (2·nv,)."""
    nv = dx.shape[0] // 2
    out = np.empty(nq + nv)
    out[:nq] = integrate_kernel(topology, x[:nq], dx[:nv])
    for i in range(nv):
        out[nq + i] = x[nq + i] + dx[nv + i]
    return out


@njit(cache=True)
def state_difference(topology, nq, x0, x1, out):
    """out (2·nv,) = x1 ⊖ x0 = [q1 ⊖ q0; v1 − v0]."""
    nv = out.shape[0] // 2
    out[:nv] = difference_kernel(topology, nv, x0[:nq], x1[:nq])
    for i in range(nv):
        out[nv + i] = x1[nq + i] - x0[nq + i]


@njit(cache=True)
def state_integrate_batch(topology, nq, X, DX):
    """Rows x_k ⊕ dx_k (K, nq + nv) of X (K, nq + nv) and DX (K, 2·nv)."""
    out = np.empty(X.shape)
    for k in range(X.shape[0]):
        out[k] = state_integrate(topology, nq, X[k], DX[k])
    return out


@njit(cache=True)
def state_difference_batch(topology, nq, X0, X1):
    """Rows x1_k ⊖ x0_k (K, 2·nv) of X0, X1 (K, nq + nv)."""
    out = np.empty((X0.shape[0], 2 * (X0.shape[1] - nq)))
    for k in range(X0.shape[0]):
        state_difference(topology, nq, X0[k], X1[k], out[k])
    return out


@njit(cache=True)
def _ad(jt, x):
    """ad_x (k, k) of the joint's Lie algebra element x (k,): the se(3) matrix
    [[ω×, v×], [0, ω×]] of (v, ω), restricted to the rows of the joint's subalgebra."""
    rows = _group_rows(jt)
    xi, A = np.zeros(6), np.zeros((6, 6))
    for r in range(rows.shape[0]):
        xi[rows[r]] = x[r]
    _neg_hat_into(-xi[3], -xi[4], -xi[5], A, 0, 0)  # ω×
    _neg_hat_into(-xi[3], -xi[4], -xi[5], A, 3, 3)
    _neg_hat_into(-xi[0], -xi[1], -xi[2], A, 0, 3)  # v×
    out = np.empty((rows.shape[0], rows.shape[0]))
    for i in range(rows.shape[0]):
        for j in range(rows.shape[0]):
            out[i, j] = A[rows[i], rows[j]]
    return out


@njit(cache=True, inline="always")
def _neg_hat_into(x0, x1, x2, Q, r, c):
    """Q[r:r+3, c:c+3] = −[x]×."""
    Q[r, c + 1], Q[r, c + 2] = x2, -x1
    Q[r + 1, c], Q[r + 1, c + 2] = -x2, x0
    Q[r + 2, c], Q[r + 2, c + 1] = x1, -x0


@njit(cache=True)
def _bracket_form_into(rows, mu, Q, m6, Q6):
    """Q (k, k), Q[i, j] = μᵀ[e_i, e_j] of the subalgebra on ``rows`` of se(3): for
    μ = (μ_v, μ_ω), μᵀ[X, Y] = −Xᵀ [[0, μ_v×], [μ_v×, μ_ω×]] Y, restricted to the rows.
    m6 (6,) and Q6 (6, 6) are scratch, zero on entry outside ``rows`` (as they are left)."""
    for r in range(rows.shape[0]):
        m6[rows[r]] = mu[r]
    _neg_hat_into(m6[0], m6[1], m6[2], Q6, 0, 3)
    _neg_hat_into(m6[0], m6[1], m6[2], Q6, 3, 0)
    _neg_hat_into(m6[3], m6[4], m6[5], Q6, 3, 3)
    for i in range(rows.shape[0]):
        for j in range(rows.shape[0]):
            Q[i, j] = Q6[rows[i], rows[j]]


@njit(cache=True)
def _bracket_form(jt, mu):
    """Q (k, k) of :func:`_bracket_form_into` for a joint of type ``jt``."""
    Q = np.empty((mu.shape[0], mu.shape[0]))
    _bracket_form_into(_group_rows(jt), mu, Q, np.zeros(6), np.zeros((6, 6)))
    return Q


@njit(cache=True)
def exp_hessian(jt, w, mu):
    """P (k, k): Hessian in b at b = 0 of μᵀ log(exp(−w) exp(w + b)), w, μ (k,) — the
    second-order term ½ μᵀC(b, b) of the module docstring, summed as a series.

    M = Σ_i Q_{r_i} Σ_j c_{i+j+1} ad^j = Σ_j Q_{ρ_j} ad^j with ρ_j = Σ_i c_{i+j+1} r_i
    (Q_r is linear in r), evaluated by Horner's rule in ad: one k × k product per term
    (plain loops: k ≤ 6), and P = ½(M + Mᵀ)."""
    k = w.shape[0]
    ad = _ad(jt, w)
    norm = np.sqrt(np.sum(ad * ad))
    # terms of order K are bounded by ‖ad‖^{K−1}/K!: stop when that is below rounding
    K, bound = 1, 1.0
    while K < 60 and bound > 1e-18:
        K += 1
        bound *= norm / K
    R = np.empty((K, k))  # r_i = (adᵀ)^i μ
    R[0] = mu
    for i in range(1, K):
        for r in range(k):
            t = 0.0
            for p in range(k):
                t += ad[p, r] * R[i - 1, p]
            R[i, r] = t
    c = np.empty(K + 1)  # c_n = (−1)^n/(n+1)!
    c[0] = 1.0
    for n in range(1, K + 1):
        c[n] = -c[n - 1] / (n + 1)
    rows = _group_rows(jt)
    M, Q, rho = np.zeros((k, k)), np.empty((k, k)), np.empty(k)
    m6, Q6 = np.zeros(6), np.zeros((6, 6))
    for j in range(K - 1, -1, -1):  # M ← Q_{ρ_j} + M ad
        for r in range(k):
            t = 0.0
            for i in range(K - j):
                t += c[i + j + 1] * R[i, r]
            rho[r] = t
        _bracket_form_into(rows, rho, Q, m6, Q6)
        matmul_add(M, ad, Q)
        M[:] = Q
    for r in range(k):
        for col in range(r + 1):
            M[r, col] = M[col, r] = 0.5 * (M[r, col] + M[col, r])
    return M


@njit(cache=True)
def compose_hessians(jt, w, mu, Jq, Jv):
    """(P_ab, P_bb) (k, k): the Hessian blocks ∂²/∂a∂b and ∂²/∂b² of μᵀψ(a, b),
    ψ(a, b) = ((q ⊕ a) ⊕ (w + b)) ⊖ (q ⊕ w) (∂²/∂a² = 0); Jq, Jv the joint's blocks
    of the integrate Jacobians at w (module docstring)."""
    return 0.5 * matmul_small(matmul_small(Jq.T, _bracket_form(jt, mu)), Jv), exp_hessian(jt, w, mu)


@njit(cache=True)
def add_composition_curvature(lie, W, Jq, Jv, mu, Y, dW, nz, Hz):
    """Hz (nz, nz) += Σ_joints [Y; dW]ᵀ ∇²(μᵀψ) [Y; dW] over the model's Lie joints.

    The composition p = q ⊕ (w̄ + δw) of a configuration q (sensitivity Y (nv, nz) in its
    chart) and an increment w̄ = W (nv,) (sensitivity dW (nv, nz)) is nonlinear only on the
    Lie joints (``lie``, :func:`lie_blocks`); Jq, Jv (nv, nv) are the integrate Jacobians
    at W and μ (nv,) the adjoint at p's chart."""
    acc = np.empty((nz, nz))  # upper triangle of one joint's term (symmetric)
    for row in range(lie.shape[0]):
        jt, m, k = lie[row, 0], lie[row, 1], lie[row, 2]
        Pab, Pbb = compose_hessians(jt, W[m: m + k], mu[m: m + k], Jq[m: m + k, m: m + k], Jv[m: m + k, m: m + k])
        Ya, Wb = Y[m: m + k], dW[m: m + k]
        X = matmul_small(Pab, Wb)  # (k, nz)
        Z = matmul_small(Pbb, Wb)
        acc[:] = 0.0
        for r in range(k):  # Yaᵀ X + Xᵀ Ya + Wbᵀ Z, row by row (contiguous inner loops)
            for i in range(nz):
                a, x, wb = Ya[r, i], X[r, i], Wb[r, i]
                for j in range(i, nz):
                    acc[i, j] += a * X[r, j] + x * Ya[r, j] + wb * Z[r, j]
        for i in range(nz):
            Hz[i, i] += acc[i, i]
            for j in range(i + 1, nz):
                Hz[i, j] += acc[i, j]
                Hz[j, i] += acc[i, j]


@njit(cache=True)
def log_hessian(jt, d, mu, Jr_inv):
    """Hessian (k, k) in η at η = 0 of μᵀ log(exp(d) exp(η)) — of q ⊖ q_ref along q ⊕ η,
    d = q ⊖ q_ref, Jr_inv = J_r(d)⁻¹: the inverse function of the composition,
    −J_r⁻ᵀ P_bb(J_r⁻ᵀ μ) J_r⁻¹ (module docstring)."""
    nu = matmul_small(Jr_inv.T, mu.reshape(-1, 1))[:, 0]
    return -matmul_small(matmul_small(Jr_inv.T, exp_hessian(jt, d, nu)), Jr_inv)


def check_state(model: Model, x: np.ndarray, name: str) -> None:
    """ValueError naming ``name`` if a quaternion (or planar (cos, sin)) of the state x
    (…, nq + nv) is not of unit norm (tolerance of :func:`dynamics.normalize`'s check);
    normalise with ``dynamics.normalize`` first."""
    x = np.asarray(x, dtype=float)
    for i in range(model.njoints):
        k, m = unit_block(model.topology, i)
        if m == 0:
            continue
        norms = np.linalg.norm(x[..., k: k + m], axis=-1)
        bad = np.abs(norms - 1.0) > QUATERNION_TOLERANCE
        if np.any(bad):
            raise ValueError(f"{name}: the quaternion (or planar cos, sin) of joint {model.joint_names[i]!r} has "
                             f"norm {float(np.ravel(norms)[np.argmax(np.ravel(bad))]):.9g}, expected 1 — "
                             "normalise it with dynamics.normalize(model, q)")


@njit(cache=True)
def exp_curvatures(lie, W, G):
    """(K, nv, nv): per knot, the Hessian in b of Gᵀ(x(b) ⊖ x(0)) for x(b) = x̃ ⊕ (W + b),
    i.e. :func:`exp_hessian` of every Lie joint's block of W (K, nv) with G (K, nv) (zero
    on 1-DoF joints): the curvature of the chart b ↦ x̃ ⊕ b at W."""
    K, nv = W.shape
    out = np.zeros((K, nv, nv))
    for k in range(K):
        for row in range(lie.shape[0]):
            jt, m, n = lie[row, 0], lie[row, 1], lie[row, 2]
            out[k, m: m + n, m: m + n] = exp_hessian(jt, W[k, m: m + n].copy(), G[k, m: m + n].copy())
    return out


@njit(cache=True)
def log_curvatures(lie, D, M, Jinv):
    """(K, nv, nv): per knot, the Hessian in η of Mᵀ((q ⊕ η) ⊖ q_ref) with D = q ⊖ q_ref
    (K, nv) and Jinv (K, nv, nv) = ∂D/∂q (block diagonal): :func:`log_hessian` per Lie joint."""
    K, nv = D.shape
    out = np.zeros((K, nv, nv))
    for k in range(K):
        for row in range(lie.shape[0]):
            jt, m, n = lie[row, 0], lie[row, 1], lie[row, 2]
            out[k, m: m + n, m: m + n] = log_hessian(jt, D[k, m: m + n].copy(), M[k, m: m + n].copy(),
                                                     Jinv[k, m: m + n, m: m + n].copy())
    return out
