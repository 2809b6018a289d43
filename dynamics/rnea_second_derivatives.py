"""IDSVA-SO: second-order partial derivatives of inverse dynamics (Singh, Russell & Wensing 2023, Alg. 1).

For τ = ID(q, v, a) (gravity included) this computes, in one forward and one backward
pass over the tree,

    d2tau_dq2[i, j, k]  = ∂²τ_i/∂q_j∂q_k        d2tau_dv2[i, j, k] = ∂²τ_i/∂v_j∂v_k
    d2tau_dqdv[i, j, k] = ∂²τ_i/∂q_j∂v_k        dM_dq[i, j, k]     = ∂M_ij/∂q_k

(∂²τ/∂q∂a = ∂M/∂q; ∂²τ/∂a² = ∂²τ/∂v∂a = 0). Everything is in ground coordinates with
Featherstone's [ω; v] ordering, the setting of Singh, Russell & Wensing 2023. Indices run over DoF columns
(nv of them), for every joint type.

Derivatives with respect to q are those of ε ↦ τ(q ⊕ ε) at ε = 0 (local coordinates,
q ⊕ ε = :func:`dynamics.integrate`), so d2tau_dq2 is symmetric in its two q indices. For
columns of different joints this is the iterated Lie derivative D_j D_k τ (they commute;
D_k f = d/dε f(q ⊕ ε e_k) at 0, the first-order derivative of
:mod:`dynamics.rnea_derivatives`). For two columns k, l of one multi-DoF joint the
iterated Lie derivatives differ by D_[S_k, S_l] τ and the chart Hessian is their mean
½ (D_k D_l + D_l D_k) τ. The q–v, v–v and ∂M/∂q (first order in q) entries need no
symmetrisation. For 1-DoF joints all of these are ordinary partial derivatives.

Notation (Singh, Russell & Wensing 2023 Sec. II, eq. 14–15, as in :mod:`dynamics.rnea_derivatives`, whose
forward pass and per-joint vectors are reused here):

    Ψ̇_i = v_λ(i) × S_i,   Ψ̈_i = a_λ(i) × S_i + v_λ(i) × Ψ̇_i,   Ṡ_i = v_i × S_i
    B(I, u) = ½ [u×* I − I u× + (I u) ×̄*]                 (body-Coriolis matrix, eq. 14)
    I_i^C = Σ_{l∈ν(i)} I_l,  B_i^C = Σ_{l∈ν(i)} B(I_l, v_l),  f_i^C = Σ_{l∈ν(i)} f_l

Backward pass (Alg. 1): for every body i (leaves first), every j on the path from i to
the root and every k on the path from j to the root (k ⪯ j ⪯ i), and every DoF column of
each of the three bodies (written i, j, k below as well), each nonzero entry is one dot
product of a k-quantity (S_k, Ψ̇_k, Ψ̈_k, Ψ̇_k + Ṡ_k) with a vector u_1 … u_11 that
depends on (i, j) only. Entries whose three joints do not lie on
one path from the root are zero (branch-induced sparsity), so the cost is O(N·d²) with d
the depth of the tree. With the per-body terms (App. C "common terms")

    A1 = S_i×* I_i^C − I_i^C S_i×                          (𝒜₂ of App. C, symmetric)
    A3 = 2 [B(I_i^C, Ψ̇_i) + S_i×* B_i^C − B_i^C S_i×]     (2 (𝓑(I_i^C, Ψ̇_i) + 𝒜₁))
    Bs = 2 B(I_i^C, S_i) = A1 + (I_i^C S_i) ×̄*
    h = I_i^C S_i,   g = 2 B_i^Cᵀ S_i
    e = 2 B_i^C Ψ̇_i + I_i^C Ψ̈_i + S_i ×* f_i^C            (bracket of eq. 12b)
    d = 2 B_i^C S_i + I_i^C (Ψ̇_i + Ṡ_i)                    (bracket of eq. 13b)

the (i, j) vectors are

    u1 = A3ᵀ S_j          u2 = A1 S_j            u3 = A3 Ψ̇_j + A1 Ψ̈_j + S_j ×* e
    u5 = S_j ×* g − Bs Ψ̇_j + 2 Ψ̇_j ×* h          u6 = Bs Ψ̇_j + S_j ×* d
    u7 = A3 S_j + A1 (Ψ̇_j + Ṡ_j)       u8 = S_j ×* g − Bsᵀ Ψ̇_j       u9 = S_j ×* h
    u10 = Bs S_j                      u11 = Bsᵀ S_j       u4 = S_i ×* (I_i^C S_j) + u9

and the entries read (Alg. 1 lines 42–66, App. C; x·y = xᵀy):

    ∂²τ_i/∂q_j∂q_k = u8·Ψ̇_k + u9·Ψ̈_k          ∂²τ_i/∂q_k∂v_j = −u11·Ψ̇_k
    k ≺ j:  ∂²τ_i/∂v_j∂v_k = −u11·S_k          ∂²τ_i/∂q_j∂v_k = u5·S_k + u9·(Ψ̇_k + Ṡ_k)
            ∂²τ_k/∂q_i∂q_j = u3·S_k            ∂²τ_k/∂q_j∂v_i = u6·S_k
            ∂M_ki/∂q_j = u9·S_k                ∂²τ_k/∂v_j∂v_i = u4·S_k     (j = i)
            ∂²τ_k/∂v_i∂v_j = u10·S_k (j ≺ i)   ∂²τ_k/∂q_i∂v_j = u7·S_k     (j ≺ i)
    j ≺ i:  ∂²τ_j/∂q_k∂q_i = u1·Ψ̇_k + u2·Ψ̈_k  ∂²τ_j/∂v_k∂v_i = u11·S_k
            ∂²τ_j/∂q_k∂v_i = u11·Ψ̇_k          ∂²τ_j/∂q_i∂v_k = u1·S_k + u2·(Ψ̇_k + Ṡ_k)
            ∂M_kj/∂q_i = u2·S_k
    k = j:  ∂²τ_i/∂v_j∂v_k = −u2·S_k

plus the mirror images given by the symmetry of second derivatives and of M (the
tensor transposes of App. C are index swaps column by column). The cases k ≺ j, k = j,
j ≺ i, j = i compare *bodies*: two columns of one body take the "=" forms, visited in
both orders (for 1-DoF joints they are the diagonal entries, and u4 = 2 u9). For two
columns j, k of one joint these forms give d2tau_dq2[:, j, k] = D_k D_j τ, the iterated
Lie derivative; :func:`symmetrize_joint_blocks` replaces it by the chart Hessian. The
OCR of Alg. 1 is partly garbled; the forms above (and the column-wise generalisation)
were settled against the authors' MATLAB (ID_SO_derivatives.m) and are checked against
differences along q ⊕ ε in the tests.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_state
from ._compile import allocation_free, njit
from .model import IDX_V, NV, PARENT, Model
from .rnea import check_state, rnea_passes
from .rnea_derivatives import D, E, G, H, body_coriolis, coriolis_at, joint_terms, subspace_rates
from .spatial import add_to_parent, crf_at, dot6_at, mat6_vec_at
from .workspace import new_data

A1, A3, BS = 0, 1, 2  # rows of the per-body matrix workspace
U1, U2, U3, U4, U5, U6, U7, U8, U9, U10, U11, TMP = range(12)  # rows of the (i, j) vectors (+2 scratch)


@njit(cache=True, inline="always")
def _commutator(u, b, X, x, out, o, tmp):
    """out[o] = u[b]×* X[x] − X[x] u[b]×: the change of X[x] under motion u[b] (eq. K5).

    Column c is u ×* X[:, c]; row r of −X u× is u ×* X[r, :] since (u×)ᵀ = −u×*.
    Rows TMP and TMP + 1 of ``tmp`` are scratch.
    """
    for c in range(6):
        for r in range(6):
            tmp[TMP, r] = X[x, r, c]
        crf_at(u, b, tmp, TMP, tmp, TMP + 1)
        for r in range(6):
            out[o, r, c] = tmp[TMP + 1, r]
    for r in range(6):
        for c in range(6):
            tmp[TMP, c] = X[x, r, c]
        crf_at(u, b, tmp, TMP, tmp, TMP + 1)
        for c in range(6):
            out[o, r, c] += tmp[TMP + 1, c]


@njit(cache=True, inline="always")
def _matT_vec(X, x, y, b, out, o):
    """out[o] = X[x]ᵀ y[b]."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += X[x, c, r] * y[b, c]
        out[o, r] = s


@njit(cache=True, inline="always")
def _add_mat_vec(X, x, y, b, out, o):
    """out[o] += X[x] y[b] (row TMP of ``out`` is scratch)."""
    mat6_vec_at(X, x, y, b, out, TMP)
    for r in range(6):
        out[o, r] += out[TMP, r]


@njit(cache=True, inline="always")
def _add_crf(m, i, f, j, out, o):
    """out[o] += m[i] ×* f[j] (row TMP of ``out`` is scratch)."""
    crf_at(m, i, f, j, out, TMP)
    for r in range(6):
        out[o, r] += out[TMP, r]


@njit(cache=True, inline="always")
def _body_matrices(i, ci, S, IC, BC, Psid, Bw, Am, w):
    """A1, A3 and Bs of DoF column ci (of body i) into rows of ``Am`` (Bw (2, 6, 6) is workspace)."""
    coriolis_at(IC, i, Psid, ci, Bw, 0)  # B(I_i^C, Ψ̇_ci)
    coriolis_at(IC, i, S, ci, Bw, 1)  # B(I_i^C, S_ci)
    # 𝒜₁ = S_ci×* B_i^C − B_i^C S_ci×   (App. C common term)
    _commutator(S, ci, BC, i, Am, A3, w)
    for r in range(6):
        for c in range(6):
            # A3 = 2 [B(I_i^C, Ψ̇_ci) + 𝒜₁]
            Am[A3, r, c] = 2.0 * (Am[A3, r, c] + Bw[0, r, c])
            # Bs = 2 B(I_i^C, S_ci)
            Am[BS, r, c] = 2.0 * Bw[1, r, c]
            # A1 = 𝒜₂ = S_ci×* I_i^C − I_i^C S_ci× = B(I_i^C, S_ci) + B(I_i^C, S_ci)ᵀ
            Am[A1, r, c] = Bw[1, r, c] + Bw[1, c, r]  # (I S) ×̄* is skew, the rest symmetric


@njit(cache=True, inline="always")
def _pair_vectors(j, S, Psid, Psidd, PsidSd, Am, t, w):
    """The (i, j) vectors u1 … u11 of Alg. 1 into ``w`` from body i's Am and g, h, e, d (t)."""
    # u1 = A3ᵀ S_j
    _matT_vec(Am, A3, S, j, w, U1)
    # u2 = A1 S_j
    mat6_vec_at(Am, A1, S, j, w, U2)
    # u3 = A3 Ψ̇_j + A1 Ψ̈_j + S_j ×* e
    mat6_vec_at(Am, A3, Psid, j, w, U3)
    _add_mat_vec(Am, A1, Psidd, j, w, U3)
    _add_crf(S, j, t, E, w, U3)
    # u7 = A3 S_j + A1 (Ψ̇_j + Ṡ_j)
    mat6_vec_at(Am, A3, S, j, w, U7)
    _add_mat_vec(Am, A1, PsidSd, j, w, U7)
    # u10 = Bs S_j,   u11 = Bsᵀ S_j
    mat6_vec_at(Am, BS, S, j, w, U10)
    _matT_vec(Am, BS, S, j, w, U11)
    # u9 = S_j ×* h,   u8 = S_j ×* g   (its −Bsᵀ Ψ̇_j last)
    crf_at(S, j, t, H, w, U9)
    crf_at(S, j, t, G, w, U8)
    # u5 = S_j ×* g − Bs Ψ̇_j + 2 Ψ̇_j ×* h   (Ψ̇_j ×* h in U5, Bs Ψ̇_j in U6 first)
    crf_at(Psid, j, t, H, w, U5)
    mat6_vec_at(Am, BS, Psid, j, w, U6)
    for r in range(6):
        w[U5, r] = w[U8, r] - w[U6, r] + 2.0 * w[U5, r]
    # u6 = Bs Ψ̇_j + S_j ×* d
    _add_crf(S, j, t, D, w, U6)
    # u8 = S_j ×* g − Bsᵀ Ψ̇_j
    _matT_vec(Am, BS, Psid, j, w, TMP)
    for r in range(6):
        w[U8, r] -= w[TMP, r]


@njit(cache=True, inline="always")
def _same_body_u4(i, ci, cj, S, IC, w):
    """u4 = S_ci ×* (I_i^C S_cj) + u9 for two columns of body i (= 2 u9 when cj = ci)."""
    # I_i^C S_cj
    mat6_vec_at(IC, i, S, cj, w, TMP)
    # u4 = S_ci ×* (I_i^C S_cj) + u9
    crf_at(S, ci, w, TMP, w, U4)
    for r in range(6):
        w[U4, r] += w[U9, r]


Q2, V2, QV, DM = range(4)  # blocks of the output: d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq


@njit(cache=True, inline="always")
def _triple(i, j, k, ci, cj, ck, S, Psid, Psidd, PsidSd, w, T):
    """Write every entry of the columns ci, cj, ck of the bodies k ⪯ j ⪯ i (Alg. 1 lines 42–66)
    into the blocks Q2, V2, QV, DM of T (4, nv, nv, nv), the one array of the four
    tensors (see :func:`idsva_so_kernel`).

    The cases compare bodies: two columns of one body take the "k = j" or "j = i" forms.
    """
    # ∂²τ_i/∂q_j∂q_k = u8·Ψ̇_k + u9·Ψ̈_k
    T[Q2, ci, cj, ck] = dot6_at(w, U8, Psid, ck) + dot6_at(w, U9, Psidd, ck)
    # ∂²τ_i/∂q_k∂v_j = −u11·Ψ̇_k
    T[QV, ci, ck, cj] = -dot6_at(w, U11, Psid, ck)
    if k != j:
        # ∂²τ_i/∂q_k∂q_j = ∂²τ_i/∂q_j∂q_k
        T[Q2, ci, ck, cj] = T[Q2, ci, cj, ck]
        # ∂²τ_i/∂v_j∂v_k = ∂²τ_i/∂v_k∂v_j = −u11·S_k
        T[V2, ci, cj, ck] = T[V2, ci, ck, cj] = -dot6_at(w, U11, S, ck)
        # ∂²τ_i/∂q_j∂v_k = u5·S_k + u9·(Ψ̇_k + Ṡ_k)
        T[QV, ci, cj, ck] = dot6_at(w, U5, S, ck) + dot6_at(w, U9, PsidSd, ck)
        # ∂²τ_k/∂q_i∂q_j = u3·S_k
        T[Q2, ck, ci, cj] = dot6_at(w, U3, S, ck)
        # ∂²τ_k/∂q_j∂v_i = u6·S_k
        T[QV, ck, cj, ci] = dot6_at(w, U6, S, ck)
        # ∂M_ki/∂q_j = ∂M_ik/∂q_j = u9·S_k
        T[DM, ck, ci, cj] = T[DM, ci, ck, cj] = dot6_at(w, U9, S, ck)
        if j != i:
            # ∂²τ_k/∂q_j∂q_i = ∂²τ_k/∂q_i∂q_j
            T[Q2, ck, cj, ci] = T[Q2, ck, ci, cj]
            # ∂²τ_k/∂v_i∂v_j = ∂²τ_k/∂v_j∂v_i = u10·S_k
            T[V2, ck, ci, cj] = T[V2, ck, cj, ci] = dot6_at(w, U10, S, ck)
            # ∂²τ_k/∂q_i∂v_j = u7·S_k
            T[QV, ck, ci, cj] = dot6_at(w, U7, S, ck)
        else:
            # ∂²τ_k/∂v_j∂v_i = u4·S_k   (j = i)
            T[V2, ck, cj, ci] = dot6_at(w, U4, S, ck)
    else:
        # ∂²τ_i/∂v_j∂v_k = −u2·S_k   (k = j)
        T[V2, ci, cj, ck] = -dot6_at(w, U2, S, ck)
    if j != i:
        # ∂²τ_j/∂q_k∂q_i = ∂²τ_j/∂q_i∂q_k = u1·Ψ̇_k + u2·Ψ̈_k
        T[Q2, cj, ck, ci] = T[Q2, cj, ci, ck] = dot6_at(w, U1, Psid, ck) + dot6_at(w, U2, Psidd, ck)
        # ∂²τ_j/∂v_k∂v_i = ∂²τ_j/∂v_i∂v_k = u11·S_k
        T[V2, cj, ck, ci] = T[V2, cj, ci, ck] = dot6_at(w, U11, S, ck)
        # ∂²τ_j/∂q_k∂v_i = u11·Ψ̇_k
        T[QV, cj, ck, ci] = dot6_at(w, U11, Psid, ck)
        # ∂²τ_j/∂q_i∂v_k = u1·S_k + u2·(Ψ̇_k + Ṡ_k)
        T[QV, cj, ci, ck] = dot6_at(w, U1, S, ck) + dot6_at(w, U2, PsidSd, ck)
        # ∂M_kj/∂q_i = ∂M_jk/∂q_i = u2·S_k
        T[DM, ck, cj, ci] = T[DM, cj, ck, ci] = dot6_at(w, U2, S, ck)


@allocation_free
def symmetrize_joint_blocks(topology, d2q):
    """Replace the iterated Lie derivatives D_k D_l τ of two columns k, l of one joint by the
    chart Hessian ½ (D_k D_l + D_l D_k) τ in d2q[:, k, l] and d2q[:, l, k] (no-op for 1-DoF)."""
    for i in range(topology.shape[0]):
        c0 = topology[i, IDX_V]
        for k in range(c0, c0 + topology[i, NV]):
            for l in range(c0, k):
                for r in range(d2q.shape[0]):
                    d2q[r, k, l] = d2q[r, l, k] = 0.5 * (d2q[r, k, l] + d2q[r, l, k])


@njit(cache=True)
def idsva_so_kernel(m, q, v, a, f_ext):
    """IDSVA-SO (Singh, Russell & Wensing 2023 Alg. 1): (d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq), each (nv, nv, nv).

    Inputs are checked for NaN/inf.
    """
    check_state(q, v, a, "a: expected finite values, got NaN or inf")
    nv = v.shape[0]
    # one block for the four tensors: freed and reallocated as a whole, it is reused by the
    # C allocator instead of being handed back to the system and faulted in again each call
    T = np.zeros((4, nv, nv, nv))
    idsva_so_passes(m, new_data(m.topology), q, v, a, f_ext, np.empty((6, 6, 6)), np.empty((TMP + 2, 6)), T)
    return T[Q2], T[V2], T[QV], T[DM]


@allocation_free
def idsva_so_passes(m, d, q, v, a, f_ext, B, w, T):
    """The passes of :func:`idsva_so_kernel`, adding the four tensors into T (4, nv, nv, nv)
    (zeroed by the caller); ``d`` a workspace (:mod:`dynamics.workspace`), B (6, 6, 6) and
    w (TMP + 2, 6) scratch."""
    topology, gravity = m.topology, m.gravity
    # v_i, a_i, f_i^C = Σ_{l∈ν(i)} (I_l a_l + v_l ×* I_l v_l − f_l^ext)   (Alg. 1 forward pass; the RNEA)
    rnea_passes(m, d, q, v, a, f_ext)
    S, IC, vel, acc, fC, BC = d.S, d.IC, d.vel, d.acc, d.fC, d.BC
    n, nv = topology.shape[0], v.shape[0]
    Psid, Psidd, Sd, PsidSd = d.rates[0], d.rates[1], d.rates[2], d.U
    # Ψ̇_i = v_λ(i) × S_i,   Ψ̈_i = a_λ(i) × S_i + v_λ(i) × Ψ̇_i,   Ṡ_i = v_i × S_i
    subspace_rates(topology, gravity, S, vel, acc, Psid, Psidd, Sd, d.h)
    for i in range(n):
        # B_i^C = B(I_i, v_i)   (I_i^C = I_i: d.IC still holds the body inertias)
        body_coriolis(IC, vel, i, BC)
    for c in range(nv):
        for r in range(6):
            # Ψ̇_c + Ṡ_c
            PsidSd[c, r] = Psid[c, r] + Sd[c, r]
    Bw, Am, t = B[0:2], B[2:5], B[5]
    for i in range(n - 1, -1, -1):  # I^C, B^C of ν(i) are complete here
        for ci in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            # g = 2 B_i^Cᵀ S_ci,   h = I_i^C S_ci,   e = 2 B_i^C Ψ̇_ci + I_i^C Ψ̈_ci + S_ci ×* f_i^C,
            # d = 2 B_i^C S_ci + I_i^C (Ψ̇_ci + Ṡ_ci)
            joint_terms(i, ci, S, IC, BC, Psid, Psidd, Sd, fC, t)
            # A1 = 𝒜₂,   A3 = 2 [B(I_i^C, Ψ̇_ci) + 𝒜₁],   Bs = 2 B(I_i^C, S_ci)
            _body_matrices(i, ci, S, IC, BC, Psid, Bw, Am, w)
            j = i
            while j >= 0:  # j ⪯ i
                for cj in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                    # u1 … u11 of the pair (ci, cj)
                    _pair_vectors(cj, S, Psid, Psidd, PsidSd, Am, t, w)
                    if j == i:
                        # u4 = S_ci ×* (I_i^C S_cj) + u9
                        _same_body_u4(i, ci, cj, S, IC, w)
                    k = j
                    while k >= 0:  # k ⪯ j
                        for ck in range(topology[k, IDX_V], topology[k, IDX_V] + topology[k, NV]):
                            # the entries of the triple (ci, cj, ck), each u·y_k (Alg. 1 lines 42–66)
                            _triple(i, j, k, ci, cj, ck, S, Psid, Psidd, PsidSd, w, T)
                        k = topology[k, PARENT]
                j = topology[j, PARENT]
        # I_λ(i)^C += I_i^C,   B_λ(i)^C += B_i^C
        add_to_parent(topology, IC, i)
        add_to_parent(topology, BC, i)
    # ∂²τ/∂q_k∂q_l = ½ (D_k D_l + D_l D_k) τ for two columns of one joint (the chart Hessian)
    symmetrize_joint_blocks(topology, T[Q2])


def rnea_second_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partials of τ = ID(q, v, a) by IDSVA-SO (Singh, Russell & Wensing 2023 Alg. 1).

    Returns ``(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq)``, each (nv, nv, nv), laid out
    T[i, j, k] = ∂²τ_i/∂y_j∂z_k: d2tau_dqdv[i, j, k] = ∂²τ_i/∂q_j∂v_k and
    dM_dq[i, j, k] = ∂M_ij/∂q_k (= ∂²τ_i/∂q_k∂a_j). Every joint type: derivatives with
    respect to q are those of ε ↦ τ(q ⊕ ε) at ε = 0 (:func:`dynamics.integrate`; local
    coordinates, d2tau_dq2 symmetric in j, k — for two columns of one multi-DoF joint the
    mean of the two iterated Lie derivatives, see the module docstring). The four are
    views of one (4, nv, nv, nv) array.
    """
    return idsva_so_kernel(model.arrays, *as_state(model, q, v, a, "a", f_ext))
