"""Second-order derivatives of the joints' Lie-group operations (⊕, ⊖), beside the joints
of :mod:`dynamics.joints` whose groups they differentiate.

On a joint's group (q ⊕ w = q·exp(w)), the composition that an integrator on the state
manifold needs, ψ(a, b) = ((q ⊕ a) ⊕ (w̄ + b)) ⊖ (q ⊕ w̄), has by the
Baker–Campbell–Hausdorff formula log(e^X e^Y) = X + Y + ½[X, Y] + O(3)

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

from collections import namedtuple

import numpy as np

from ._compile import allocation_free, njit
from .joints import GROUP_ROW, _group_rows
from .model import IDX_V, JTYPE, NV, Model
from .spatial import matmul_add


def lie_blocks(model: Model) -> np.ndarray:
    """(L, 3) int64 rows (joint type, first tangent index, tangent size) of the model's
    joints whose ⊕ is not addition (spherical, free-flyer, planar); (0, 3) for a model of
    revolute/prismatic joints only."""
    t = model.topology
    rows = [(t[i, JTYPE], t[i, IDX_V], t[i, NV]) for i in range(t.shape[0]) if GROUP_ROW[t[i, JTYPE]][0] >= 0]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


@njit(cache=True, inline="always")
def _hat_entry(x0, x1, x2, r, c):
    """[x]×[r, c] (r, c < 3) of x = (x0, x1, x2)."""
    if r == c:
        return 0.0
    t = 3 - r - c
    x = x0 if t == 0 else (x1 if t == 1 else x2)
    return -x if (c - r) % 3 == 1 else x


@njit(cache=True, inline="always")
def _ad_entry(xi, a, b):
    """ad_ξ[a, b] = [[ω×, v×], [0, ω×]][a, b] of ξ = (v, ω) (6,) in se(3)."""
    if a >= 3 and b < 3:
        return 0.0
    if a < 3 <= b:
        return _hat_entry(xi[0], xi[1], xi[2], a, b - 3)
    return _hat_entry(xi[3], xi[4], xi[5], a % 3, b % 3)


@njit(cache=True)
def _bracket_table(rows, table):
    """table (k, k) ← the Lie bracket of the joint whose coordinates are the rows ``rows``
    (k,) of se(3), in its own basis: [e_a, e_b] = ±e_c is coded ±(c + 1), 0 when the
    bracket vanishes (in the standard bases of so(3), se(2) and se(3) the bracket of two
    basis elements is one basis element, its negative or zero: these signs are the
    structure constants). Read off :func:`_ad_entry`: ([e_a, e_b])_c = ad_{e_a}[c, b]."""
    k = rows.shape[0]
    xi = np.zeros(6)
    for a in range(k):
        xi[:] = 0.0
        xi[rows[a]] = 1.0
        for b in range(k):
            table[a, b] = 0
            for c in range(k):
                x = _ad_entry(xi, rows[c], rows[b])
                if x != 0.0:
                    table[a, b] = c + 1 if x > 0.0 else -(c + 1)


@njit(cache=True, inline="always")
def _pairing(code, x):
    """xᵀ(±e_c) for a bracket code ±(c + 1) of :func:`_bracket_table` (0: zero)."""
    if code == 0:
        return 0.0
    return x[code - 1] if code > 0 else -x[-code - 1]


@allocation_free
def _ad_into(table, x, ad):
    """ad (k, k) = ad_x, ad_x e_b = [x, e_b] = Σ_c x_c [e_c, e_b], from the bracket
    ``table`` (:func:`_bracket_table`)."""
    k = x.shape[0]
    for a in range(k):
        for b in range(k):
            ad[a, b] = 0.0
    for c in range(k):
        for b in range(k):
            code = table[c, b]
            if code > 0:
                ad[code - 1, b] += x[c]
            elif code < 0:
                ad[-code - 1, b] -= x[c]


_K_MAX = 60  # most terms of the series of exp_hessian


LieScratch = namedtuple("LieScratch", ["brackets", "xi", "ad", "R", "c", "M", "T", "QJ", "Pab", "Pbb", "X", "V"])
"""Workspace of :func:`add_joint_curvature` and of the functions it calls: the bracket
table of each Lie joint (:func:`lie_scratch`), then 6-vectors, 6 × 6 and (6, nz) blocks."""


@njit(cache=True)
def lie_scratch(lie, nz):
    """A :data:`LieScratch` for the Lie joints ``lie`` (:func:`lie_blocks`) and sensitivities
    of nz columns, made once for a loop over many compositions; ``brackets[row, :k, :k]``
    is the bracket table (:func:`_bracket_table`) of the joint of row ``row`` (k DoF)."""
    brackets = np.zeros((lie.shape[0], 6, 6), np.int64)
    for row in range(lie.shape[0]):
        g = _group_rows(lie[row, 0])
        _bracket_table(g, brackets[row, : g.shape[0], : g.shape[0]])
    return LieScratch(brackets, np.zeros(6), np.empty((6, 6)), np.empty((_K_MAX, 6)), np.empty(_K_MAX + 1),
                      np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6)), np.empty((6, 6)),
                      np.empty((6, nz)), np.empty((6, nz)))


@allocation_free
def exp_hessian(table, w, mu, P, s):
    """P (k, k): Hessian in b at b = 0 of μᵀ log(exp(−w) exp(w + b)), w, μ (k,) — the
    second-order term ½ μᵀC(b, b) of the module docstring, summed as a series — for the
    joint of bracket ``table`` (k, k) (:func:`_bracket_table`); ``s``: :data:`LieScratch`.

    M = Σ_i Q_{r_i} Σ_j c_{i+j+1} ad^j = Σ_j Q_{ρ_j} ad^j with ρ_j = Σ_i c_{i+j+1} r_i
    (Q_r is linear in r), evaluated by Horner's rule in ad: one k × k product per term
    (plain loops: k ≤ 6), and P = ½(M + Mᵀ). ad_w and Q_ρ[a, b] = ρᵀ[e_a, e_b] are read
    off the structure constants in ``table``."""
    k = w.shape[0]
    ad, R, c, rho = s.ad, s.R, s.c, s.xi[:k]
    _ad_into(table, w, ad)
    norm2 = 0.0
    for a in range(k):
        for b in range(k):
            norm2 += ad[a, b] * ad[a, b]
    # terms of order K are bounded by ‖ad‖^{K−1}/K!: stop when that is below rounding
    K, bound, norm = 1, 1.0, np.sqrt(norm2)
    while K < _K_MAX and bound > 1e-18:
        K += 1
        bound *= norm / K
    for r in range(k):  # r_i = (adᵀ)^i μ
        R[0, r] = mu[r]
    for i in range(1, K):
        for r in range(k):
            t = 0.0
            for p in range(k):
                t += ad[p, r] * R[i - 1, p]
            R[i, r] = t
    c[0] = 1.0  # c_n = (−1)^n/(n+1)!
    for n in range(1, K + 1):
        c[n] = -c[n - 1] / (n + 1)
    M, T = s.M, s.T
    for j in range(K - 1, -1, -1):  # M ← Q_{ρ_j} + M ad, from M = 0
        for r in range(k):
            t = 0.0
            for i in range(K - j):
                t += c[i + j + 1] * R[i, r]
            rho[r] = t
        for a in range(k):
            for b in range(k):
                t = _pairing(table[a, b], rho)
                if j < K - 1:
                    for p in range(k):
                        t += M[a, p] * ad[p, b]
                T[a, b] = t
        M, T = T, M
    for a in range(k):
        for b in range(k):
            P[a, b] = 0.5 * (M[a, b] + M[b, a])


@allocation_free
def compose_hessians(table, w, mu, Jq, Jv, Pab, Pbb, s):
    """Pab, Pbb (k, k) ← the Hessian blocks ∂²/∂a∂b and ∂²/∂b² of μᵀψ(a, b),
    ψ(a, b) = ((q ⊕ a) ⊕ (w + b)) ⊖ (q ⊕ w) (∂²/∂a² = 0), for the joint of bracket
    ``table`` (:func:`_bracket_table`); Jq, Jv the joint's blocks of the integrate
    Jacobians at w (module docstring): P_ab = ½ J_qᵀ Q_μ J_v; ``s``: :data:`LieScratch`."""
    k = mu.shape[0]
    QJ = s.QJ
    for a in range(k):  # Q_μ J_v, each entry of Q_μ formed once (its zeros skipped)
        for b in range(k):
            QJ[a, b] = 0.0
        for p in range(k):
            q = _pairing(table[a, p], mu)
            if q != 0.0:
                for b in range(k):
                    QJ[a, b] += q * Jv[p, b]
    for a in range(k):
        for b in range(k):
            t = 0.0
            for p in range(k):
                t += Jq[p, a] * QJ[p, b]
            Pab[a, b] = 0.5 * t
    exp_hessian(table, w, mu, Pbb, s)


@allocation_free
def add_joint_curvature(table, W, Jq, Jv, mu, Ya, Wb, Hz, s):
    """Hz (nz, nz) += [Y_a; W_b]ᵀ ∇²(μᵀψ) [Y_a; W_b] for one Lie joint, of bracket ``table``
    (k, k) (:func:`_bracket_table`): a symmetric term of which the upper triangle is exact (the callers mirror
    their sum once); ``s``: :data:`LieScratch` (nothing is allocated).

    The composition p = q ⊕ (w̄ + δw) of the joint's configuration q (sensitivity
    Y_a (k, nz) in its chart) and increment w̄ = W (k,) (sensitivity W_b (k, nz)) has the
    Hessian blocks P_ab, P_bb of :func:`compose_hessians` (Jq, Jv (k, k): the joint's
    integrate Jacobians at W; μ (k,): the adjoint at p's chart). The term is
    Y_aᵀ X + W_bᵀ V with X = P_ab W_b and V = P_abᵀ Y_a + P_bb W_b: rank-one row updates
    over the nonzero entries of Y_a (which is [I 0] at the start of an interval) and W_b,
    whole contiguous rows. Nothing is added when μ = 0 (the term is linear in μ): e.g. the
    stage compositions of a free-floating base in zero gravity, whose dynamics do not
    depend on its pose, so that no stage adjoint reaches it."""
    nonzero = False
    for a in range(mu.shape[0]):
        if mu[a] != 0.0:
            nonzero = True
    if not nonzero:
        return
    k, nz = Wb.shape  # = that of the scratch's X and V
    Pab, Pbb = s.Pab[:k, :k], s.Pbb[:k, :k]
    compose_hessians(table, W, mu, Jq, Jv, Pab, Pbb, s)
    X, V = s.X[:k], s.V[:k]  # (k, nz) and C-contiguous: the rank-one rows below vectorise
    X[:, :] = 0.0
    V[:, :] = 0.0
    matmul_add(Pab, Wb, X)
    matmul_add(Pbb, Wb, V)
    matmul_add(Pab.T, Ya, V)
    for r in range(k):
        for i in range(nz):
            a, b = Ya[r, i], Wb[r, i]
            if a != 0.0:
                for j in range(nz):
                    Hz[i, j] += a * X[r, j]
            if b != 0.0:
                for j in range(nz):
                    Hz[i, j] += b * V[r, j]


@allocation_free
def log_hessian(table, d, mu, Jr_inv, out, s):
    """out (k, k) ← the Hessian in η at η = 0 of μᵀ log(exp(d) exp(η)) — of q ⊖ q_ref
    along q ⊕ η, d = q ⊖ q_ref, Jr_inv = J_r(d)⁻¹: the inverse function of the
    composition, −J_r⁻ᵀ P_bb(J_r⁻ᵀ μ) J_r⁻¹ (module docstring), for the joint of bracket
    ``table`` (:func:`_bracket_table`); ``s``: :data:`LieScratch` (nothing is allocated).
    P_bb is linear in its multiplier, so the sign goes into ν = −J_r⁻ᵀ μ."""
    k = d.shape[0]
    nu, P, PJ = s.QJ[0, :k], s.Pbb[:k, :k], s.Pab[:k, :k]  # blocks exp_hessian leaves alone
    for a in range(k):
        t = 0.0
        for p in range(k):
            t -= Jr_inv[p, a] * mu[p]
        nu[a] = t
    exp_hessian(table, d, nu, P, s)
    PJ[:, :] = 0.0
    matmul_add(P, Jr_inv, PJ)
    out[:, :] = 0.0
    matmul_add(Jr_inv.T, PJ, out)


@allocation_free
def exp_curvature(lie, w, g, out, s):
    """out (r, r) ← on the Lie joints' diagonal blocks (the rest is left alone), the Hessian
    in b of gᵀ(x(b) ⊖ x(0)) for x(b) = x̃ ⊕ (w + b): :func:`exp_hessian` of every Lie
    joint's block of w, g (r,), whose offsets ``lie`` gives (:func:`lie_blocks`): the
    curvature of the chart b ↦ x̃ ⊕ b at w; ``s``: :func:`lie_scratch` of ``lie``."""
    for row in range(lie.shape[0]):
        m, n = lie[row, 1], lie[row, 2]
        exp_hessian(s.brackets[row, :n, :n], w[m: m + n], g[m: m + n], out[m: m + n, m: m + n], s)


@allocation_free
def log_curvature(lie, d, mu, Jinv, out, s):
    """out (r, r) ← on the Lie joints' diagonal blocks (the rest is left alone), the Hessian
    in η of μᵀ((q ⊕ η) ⊖ q_ref) with d = q ⊖ q_ref (r,) and Jinv (r, r) = ∂d/∂q (block
    diagonal): :func:`log_hessian` of every Lie joint, whose offsets ``lie`` gives;
    ``s``: :func:`lie_scratch` of ``lie``."""
    for row in range(lie.shape[0]):
        m, n = lie[row, 1], lie[row, 2]
        log_hessian(s.brackets[row, :n, :n], d[m: m + n], mu[m: m + n], Jinv[m: m + n, m: m + n],
                    out[m: m + n, m: m + n], s)


@njit(cache=True)
def log_curvatures(lie, D, M, Jinv):
    """(K, nv, nv): :func:`log_curvature` at every knot, D, M (K, nv), Jinv (K, nv, nv)."""
    K, nv = D.shape
    out = np.zeros((K, nv, nv))
    s = lie_scratch(lie, 0)
    for k in range(K):
        log_curvature(lie, D[k], M[k], Jinv[k], out[k], s)
    return out
