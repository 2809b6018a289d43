"""Contracted IDSVA-SO: second-order partials of inverse dynamics contracted with μ.

For τ = ID(q, v, a) and a vector μ (n,) this computes, without forming any n³ tensor,

    Hqq[j, k] = Σ_i μ_i ∂²τ_i/∂q_j∂q_k      Hvv[j, k] = Σ_i μ_i ∂²τ_i/∂v_j∂v_k
    Hqv[j, k] = Σ_i μ_i ∂²τ_i/∂q_j∂v_k      Mq[j, k]  = Σ_i μ_i ∂M_ij/∂q_k

— the Hessians of the scalar μᵀID(q, v, a), which is what DDP (μ = V'_x) and a
Lagrangian Hessian (μ = multipliers) need (Nganga & Wensing, "Accelerating second-order
differential dynamic programming for rigid-body systems", RA-L 2021, compute the same
products by reverse-mode differentiation of a modified RNEA).

Derivation. Every entry of IDSVA-SO (Singh, Russell & Wensing, "On second-order
derivatives of rigid-body dynamics: theory & implementation", 2023, Alg. 1; the forms
and the u-vectors are those of :mod:`dynamics.rnea_second_derivatives`) is written for a
triple k ⪯ j ⪯ i of joints on one path as a dot product u(i, j)·y_k, where the output
index is i, j or k. Contracting with μ sums over the output index, and each of the three
cases collapses to O(1) work per *pair* because every u(i, j) is linear in body-i
quantities (A1_i, A3_i, Bs_i, g_i, h_i) and in the joint-j quantities, and every y_k is
summed along a path:

* output k (the shallowest joint, k ≺ j): Σ_{k≺j} μ_k S_k = ψ_λ(j), with ψ_i = ψ_λ(i) + S_i μ_i
  the spatial velocity of body i when the joints move at rates μ (a forward pass);
* output i (the deepest joint): Σ_{i∈ν(j)} μ_i u(i, j) uses the μ-weighted subtree sums
  Ĝ_j = Σ μ_i g_i, Ĥ_j = Σ μ_i h_i, B̂s_j = Σ μ_i Bs_i, accumulated in the backward pass
  like the composite inertias (so u8 → Û8 = S_j ×* Ĝ − B̂sᵀ Ψ̇_j, u9 → Û9 = S_j ×* Ĥ, …);
* output j (strictly between k and i): Σ_{k⪯j≺i} μ_j S_j = ψ_λ(i) − ψ_λ(k).

The pass starts from the first-order pass of :mod:`dynamics.rnea_derivatives` (its
composites I^C, B^C, rates Ψ̇, Ψ̈, Ṡ and joint vectors g, h, e, d), which a caller may
already hold. The result
costs O(n·d) (d = depth of the tree) — the size of the output on a chain —
instead of IDSVA-SO's O(n·d²) with its n³ storage. Entries of the full tensors that
coincide by symmetry (e.g. ∂²τ_i/∂q_j∂q_j) are counted once. Everything is in ground
coordinates with Featherstone's [ω; v] ordering.

Multi-DoF joints: indices are DoF columns; the sums Ĝ, Ĥ, B̂s and ψ are per body (over
all columns of the bodies concerned), the pairs (j, i) run over the columns of each
body, and two columns of one body take the body-equality forms of IDSVA-SO (both orders).
Derivatives with respect to q are those of ε ↦ μᵀτ(q ⊕ ε) at ε = 0, so Hqq is symmetric:
for two columns of one joint it is the mean of the two iterated Lie derivatives (see
:mod:`dynamics.rnea_second_derivatives`).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ._checks import as_state, as_vector
from ._compile import allocation_free, njit
from .kinematics import all_finite, tangent_size
from .model import IDX_V, NV, PARENT, Model
from .rnea import check_state, rnea_passes
from .rnea_derivatives import D, E, G, H, coriolis_at, rnea_derivative_passes
from .rnea_second_derivatives import symmetrize_joint_blocks
from .spatial import add_to_parent, crf_at, crm_at, dot6_at
from .workspace import new_data

# rows of the per-column vector workspace
U8, U9, U11, U5, U2, P3, P1, PB, TMP, TMP2, TMP3, TMP4 = range(12)

SoWork = namedtuple("SoWork", ["PsidSd", "cvec", "psibar", "Ghat", "Hhat", "Bs", "BShat", "w", "joint_vectors",
                               "inert"])
"""Scratch of :func:`idsva_so_contracted_passes` (:func:`new_so_work`): per DoF column
Ψ̇ + Ṡ and c = S × ψ_λ (nv, 6) and B(I^C, S) (nv, 6, 6); per body ψ_λ, Ĝ, Ĥ (n, 6) and B̂s
(n, 6, 6); the per-column vectors ``w`` (12, 6), rows U8 … TMP4; ``joint_vectors`` (4, nv)
(the contracted FDSVA-SO's μ, then a row of 3·nv); a flag per body, ``inert`` (n,)."""

Columns = namedtuple("Columns", ["S", "Psid", "Psidd", "PsidSd", "cvec", "T"])
"""The per-DoF-column vectors the output loops read: S, Ψ̇, Ψ̈, Ψ̇ + Ṡ, c = S × ψ_λ (nv, 6)
and the joint vectors g, h, e, d (nv, 6, 6)."""

Contracted = namedtuple("Contracted", ["Hqq", "Hvv", "Hqv", "Mq"])
"""The four (nv, nv) outputs of :func:`idsva_so_contracted_passes`, added into."""


@njit(cache=True, inline="always")
def _subtree_vectors(j, cj, S, Psid, Ghat, Hhat, BShat, inert_root, w):
    """Û8, Û9, Û11, Û5, Û2 of column cj (of body j) from the μ-weighted sums over ν(j) (rows of ``w``);
    Û2 alone for an ``inert_root``: an inert body whose parent is the ground, whose pairs
    (cj, ck) in :func:`_deepest_output` are those of its own columns, where the others
    only meet vanishing entries. (An inert body below another needs them all: the pairs
    with its ancestors' columns hold ∂²τ/∂q_j∂v_k and ∂M/∂q_j, which do not vanish.)

        Û8 = S_j ×* Ĝ − B̂sᵀ Ψ̇_j      Û9 = S_j ×* Ĥ       Û11 = B̂sᵀ S_j
        Û5 = S_j ×* Ĝ − B̂s Ψ̇_j + 2 Ψ̇_j ×* Ĥ          Û2 = ½ (B̂s + B̂sᵀ) S_j
    """
    if inert_root:
        for r in range(6):
            # Û2 = ½ (B̂s + B̂sᵀ) S_j
            t = 0.0
            for k in range(6):
                t += (BShat[j, r, k] + BShat[j, k, r]) * S[cj, k]
            w[U2, r] = 0.5 * t
        return
    # Û8 = S_j ×* Ĝ,   Û9 = S_j ×* Ĥ,   Û5 = Ψ̇_j ×* Ĥ   (Û8, Û5 completed below)
    crf_at(S, cj, Ghat, j, w, U8)
    crf_at(S, cj, Hhat, j, w, U9)
    crf_at(Psid, cj, Hhat, j, w, U5)
    for r in range(6):  # the four products with B̂s, one sweep over each row/column
        # B̂sᵀ S_j,   B̂sᵀ Ψ̇_j,   B̂s S_j,   B̂s Ψ̇_j
        bT_s = bT_psid = b_s = b_psid = 0.0
        for k in range(6):
            bT_s += BShat[j, k, r] * S[cj, k]
            bT_psid += BShat[j, k, r] * Psid[cj, k]
            b_s += BShat[j, r, k] * S[cj, k]
            b_psid += BShat[j, r, k] * Psid[cj, k]
        # Û11 = B̂sᵀ S_j
        w[U11, r] = bT_s
        # Û2 = ½ (B̂s + B̂sᵀ) S_j
        w[U2, r] = 0.5 * (b_s + bT_s)
        # Û5 = S_j ×* Ĝ − B̂s Ψ̇_j + 2 Ψ̇_j ×* Ĥ
        w[U5, r] = w[U8, r] - b_psid + 2.0 * w[U5, r]
        # Û8 = S_j ×* Ĝ − B̂sᵀ Ψ̇_j
        w[U8, r] -= bT_psid


@njit(cache=True, inline="always")
def _deepest_output(topology, j, cj, col, inert, w, out):
    """Add to ``out`` (:data:`Contracted`) the entries whose output column is the deepest
    one, in ν(j), for every column ck of the bodies k ⪯ j (all pairs (cj, ck) when k = j),
    ``col`` the :data:`Columns`; the q-outputs of ck vanish when its body is ``inert``
    (:func:`idsva_so_contracted_passes`)."""
    S, Psid, Psidd, PsidSd = col.S, col.Psid, col.Psidd, col.PsidSd
    Hqq, Hvv, Hqv, Mq = out.Hqq, out.Hvv, out.Hqv, out.Mq
    k = j
    while k >= 0:
        for ck in range(topology[k, IDX_V], topology[k, IDX_V] + topology[k, NV]):
            if not inert[k]:
                # Σ_i μ_i ∂²τ_i/∂q_j∂q_k = Û8·Ψ̇_k + Û9·Ψ̈_k
                x = dot6_at(w, U8, Psid, ck) + dot6_at(w, U9, Psidd, ck)
                Hqq[cj, ck] += x
                # Σ_i μ_i ∂²τ_i/∂q_k∂v_j = −Û11·Ψ̇_k
                Hqv[ck, cj] -= dot6_at(w, U11, Psid, ck)
                if k != j:
                    # Σ_i μ_i ∂²τ_i/∂q_k∂q_j = Σ_i μ_i ∂²τ_i/∂q_j∂q_k
                    Hqq[ck, cj] += x
            if k == j:
                # Σ_i μ_i ∂²τ_i/∂v_j∂v_k = −Û2·S_k   (k = j)
                Hvv[cj, ck] -= dot6_at(w, U2, S, ck)
            else:
                # Σ_i μ_i ∂²τ_i/∂v_j∂v_k = Σ_i μ_i ∂²τ_i/∂v_k∂v_j = −Û11·S_k
                x = -dot6_at(w, U11, S, ck)
                Hvv[cj, ck] += x
                Hvv[ck, cj] += x
                # Σ_i μ_i ∂²τ_i/∂q_j∂v_k = Û5·S_k + Û9·(Ψ̇_k + Ṡ_k)
                Hqv[cj, ck] += dot6_at(w, U5, S, ck) + dot6_at(w, U9, PsidSd, ck)
                # Σ_i μ_i ∂M_ik/∂q_j = Û9·S_k
                Mq[ck, cj] += dot6_at(w, U9, S, ck)
        k = topology[k, PARENT]


@njit(cache=True, inline="always")
def _psi_rows(i, ci, S, IC, BC, Bs, Psid, psibar, cvec, w):
    """Rows P3 = A3ᵀψ, P1 = A1 ψ, PB = Bsᵀψ of ``w`` for column ci of body i, with ψ = ψ_λ(i).

    The matrices A1 = Bs + Bsᵀ (Bs = B(I_i^C, S_ci) in ``Bs[ci]``), 2B(I_i^C, S_ci) and
    A3 = 2[B(I_i^C, Ψ̇_ci) + S_ci×* B_i^C − B_i^C S_ci×] of IDSVA-SO are only ever applied to
    ψ here, so A3 is not formed: with B(I, u)ᵀx = ½[−I(u × x) + u ×* (I x) − x ×* (I u)]
    and (S×*)ᵀ = −S×,

        A3ᵀψ = −I^C(Ψ̇ × ψ) + Ψ̇ ×* (I^C ψ) − ψ ×* (I^C Ψ̇) − 2 B^Cᵀ(S × ψ) + 2 S ×* (B^Cᵀ ψ).
    """
    crm_at(Psid, ci, psibar, i, w, TMP)  # Ψ̇ × ψ
    for r in range(6):  # the seven matrix–vector products, one sweep over each matrix row
        # I^C (Ψ̇ × ψ),  I^C ψ,  I^C Ψ̇,  B^Cᵀ c (c = S × ψ),  B^Cᵀ ψ,  Bs ψ,  Bsᵀ ψ
        ic_u = ic_psi = ic_psid = bc_c = bc_psi = bs_psi = bsT_psi = 0.0
        for k in range(6):
            ic = IC[i, r, k]
            ic_u += ic * w[TMP, k]
            ic_psi += ic * psibar[i, k]
            ic_psid += ic * Psid[ci, k]
            bc_c += BC[i, k, r] * cvec[ci, k]
            bc_psi += BC[i, k, r] * psibar[i, k]
            bs_psi += Bs[ci, r, k] * psibar[i, k]
            bsT_psi += Bs[ci, k, r] * psibar[i, k]
        # A3ᵀψ = −I^C(Ψ̇ × ψ) − 2 B^Cᵀ(S × ψ) + …   (the three ×* terms added below)
        w[P3, r] = -ic_u - 2.0 * bc_c
        w[TMP2, r], w[TMP3, r], w[TMP4, r] = ic_psi, ic_psid, bc_psi
        # A1 ψ = (Bs + Bsᵀ) ψ
        w[P1, r] = bs_psi + bsT_psi
        # 2 Bsᵀ ψ   (2 B(I^C, S)ᵀ ψ)
        w[PB, r] = 2.0 * bsT_psi
    crf_at(Psid, ci, w, TMP2, w, TMP)  # Ψ̇ ×* (I^C ψ)
    crf_at(psibar, i, w, TMP3, w, TMP2)  # ψ ×* (I^C Ψ̇)
    crf_at(S, ci, w, TMP4, w, TMP3)  # S ×* (B^Cᵀ ψ)
    for r in range(6):
        # A3ᵀψ += Ψ̇ ×* (I^C ψ) − ψ ×* (I^C Ψ̇) + 2 S ×* (B^Cᵀ ψ)
        w[P3, r] += w[TMP, r] - w[TMP2, r] + 2.0 * w[TMP3, r]


@njit(cache=True, inline="always")
def _pair_outputs(topology, i, ci, col, inert, w, out):
    """Add, for column ci of body i and every column cj of the bodies j ⪯ i, the entries
    whose output column is the shallowest (k ≺ j, through ψ_λ(j)) or lies between
    (k ⪯ j ≺ i, through ψ_λ(i) − ψ_λ(k)). The two share their bilinear forms: summed, only
    the rows P3, P1, PB of ci (of ψ_λ(i)) remain, and ψ_λ(j)·(S_cj ×* f) = −c_cj·f with
    c_cj = S_cj × ψ_λ(j). Two columns of body i (j = i) are visited in both orders. The
    q-outputs of cj vanish when its body is ``inert`` (:func:`idsva_so_contracted_passes`;
    then i ≠ j, i being visited only if it is not inert). ``col``: the :data:`Columns`;
    ``out``: the :data:`Contracted` outputs."""
    Psid, Psidd, cvec, T = col.Psid, col.Psidd, col.cvec, col.T
    Hqq, Hqv, Mq = out.Hqq, out.Hqv, out.Mq
    t = T[ci]  # g, h, e, d of column ci
    j = i
    while j >= 0:
        for cj in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
            if inert[j]:
                _inert_pair_outputs(ci, cj, col, w, out)
                continue
            # Σ_{o≺i} μ_o ∂²τ_o/∂q_i∂q_j = P3·Ψ̇_j + P1·Ψ̈_j − c_j·e_i
            x = dot6_at(w, P3, Psid, cj) + dot6_at(w, P1, Psidd, cj) - dot6_at(cvec, cj, t, E)
            Hqq[ci, cj] += x
            # Σ_{o≺i} μ_o ∂²τ_o/∂q_j∂v_i = PB·Ψ̇_j − c_j·d_i
            Hqv[cj, ci] += dot6_at(w, PB, Psid, cj) - dot6_at(cvec, cj, t, D)
            # Σ_{o≺j} μ_o ∂M_oi/∂q_j = ψ_λ(j)·u9 = −c_j·h_i
            x9 = -dot6_at(cvec, cj, t, H)
            Mq[ci, cj] += x9
            if j == i:  # ψ_λ(i)·u4 = −c_cj·h_ci − c_ci·h_cj (h_cj = I_i^C S_cj)
                # Σ_{o≺i} μ_o ∂²τ_o/∂v_j∂v_i = ψ_λ(i)·u4   (j = i)
                out.Hvv[cj, ci] += x9 - dot6_at(cvec, ci, T[cj], H)
            else:
                # Σ_{o≺i} μ_o ∂²τ_o/∂q_j∂q_i = Σ_{o≺i} μ_o ∂²τ_o/∂q_i∂q_j
                Hqq[cj, ci] += x
                _inert_pair_outputs(ci, cj, col, w, out)
        j = topology[j, PARENT]


@njit(cache=True, inline="always")
def _inert_pair_outputs(ci, cj, col, w, out):
    """The entries of :func:`_pair_outputs` for columns ci ≠ cj of two bodies that hold no
    derivative with respect to q_cj: the v–v, q_ci–v_cj and ∂M/∂q_ci ones."""
    S, PsidSd, Hvv, Hqv, Mq = col.S, col.PsidSd, out.Hvv, out.Hqv, out.Mq
    # Σ_{o≺i} μ_o ∂²τ_o/∂v_i∂v_j = Σ_{o≺i} μ_o ∂²τ_o/∂v_j∂v_i = PB·S_j
    x = dot6_at(w, PB, S, cj)
    Hvv[ci, cj] += x
    Hvv[cj, ci] += x
    # Σ_{o≺i} μ_o ∂²τ_o/∂q_i∂v_j = P3·S_j + P1·(Ψ̇_j + Ṡ_j)
    Hqv[ci, cj] += dot6_at(w, P3, S, cj) + dot6_at(w, P1, PsidSd, cj)
    # Σ_{o≺i} μ_o ∂M_oj/∂q_i = P1·S_j
    Mq[cj, ci] += dot6_at(w, P1, S, cj)


@njit(cache=True)
def new_so_work(topology):
    """The :data:`SoWork` of :func:`idsva_so_contracted_passes` for the model of
    ``topology``, uninitialised. A loop over many evaluations makes it once."""
    n, nv = topology.shape[0], tangent_size(topology)
    columns, bodies = np.empty((2, nv, 6)), np.empty((3, n, 6))
    return SoWork(columns[0], columns[1], bodies[0], bodies[1], bodies[2], np.empty((nv, 6, 6)), np.empty((n, 6, 6)),
                  np.empty((TMP4 + 1, 6)), np.empty((4, nv)), np.empty(n, np.bool_))


@allocation_free
def idsva_so_contracted_passes(topology, data, mu, Hqq, Hvv, Hqv, Mq, work):
    """Contracted IDSVA-SO from the first-order data of
    :func:`dynamics.rnea_derivatives.rnea_derivative_passes`: ``data`` = (S (nv, 6),
    composites I^C and B^C (n, 6, 6), rates (Ψ̇, Ψ̈, Ṡ) (3, nv, 6), column vectors g, h, e, d
    (nv, 6, 6)). Writes Hqq, Hvv, Hqv, Mq (nv, nv) of the module docstring; ``work`` from
    :func:`new_so_work`, a :data:`SoWork` (nothing is allocated).

    A body is *inert* when its columns have Ψ̇ = Ψ̈ = 0, its ψ_λ is 0 and its parent is
    the ground or inert. Then the entries with a derivative with respect to its q taken
    as the shallower column of a pair, each a bilinear form in Ψ̇, Ψ̈ or c = S × ψ_λ of
    its columns, vanish, and so do all those whose deepest column is one of its own
    (through P3, P1, PB and c, all 0): they are neither computed nor added. Those in which
    it is the deeper column of a pair with an inert ancestor (∂²τ/∂q_j∂v_k and ∂M/∂q_j,
    through Û5 and Û9) do not vanish, so only an inert root skips its subtree vectors
    (:func:`_subtree_vectors`). The inert root is the root body without gravity (its
    parent, the ground, neither moves nor accelerates): a free-floating robot in zero
    gravity, whose dynamics do not depend on the base's pose.
    """
    S, IC, BC, rates, T = data
    Psid, Psidd, Sd = rates[0], rates[1], rates[2]
    n = topology.shape[0]
    PsidSd, cvec = work.PsidSd, work.cvec  # written for every column before use
    psibar, Ghat, Hhat, Bs, BShat, w, inert = work.psibar, work.Ghat, work.Hhat, work.Bs, work.BShat, work.w, work.inert
    psibar[:, :] = 0.0
    Ghat[:, :] = 0.0
    Hhat[:, :] = 0.0
    BShat[:, :, :] = 0.0
    col, out = Columns(S, Psid, Psidd, PsidSd, cvec, T), Contracted(Hqq, Hvv, Hqv, Mq)
    for i in range(n):
        parent = topology[i, PARENT]
        if parent >= 0:  # ψ_λ(i) = Σ_{c of bodies ≺ i} S_c μ_c
            for r in range(6):
                psibar[i, r] = psibar[parent, r]
            for c in range(topology[parent, IDX_V], topology[parent, IDX_V] + topology[parent, NV]):
                for r in range(6):
                    psibar[i, r] += S[c, r] * mu[c]
        inert[i] = parent < 0 or inert[parent]
        for r in range(6):
            if psibar[i, r] != 0.0:
                inert[i] = False
        for c in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            for r in range(6):
                # Ψ̇_c + Ṡ_c
                PsidSd[c, r] = Psid[c, r] + Sd[c, r]
                if Psid[c, r] != 0.0 or Psidd[c, r] != 0.0:
                    inert[i] = False
            crm_at(S, c, psibar, i, cvec, c)  # c_c = S_c × ψ_λ(i)
    Hqq[:, :] = 0.0
    Hvv[:, :] = 0.0
    Hqv[:, :] = 0.0
    Mq[:, :] = 0.0
    for i in range(n - 1, -1, -1):  # the μ-weighted sums of ν(i) are complete after this loop
        for ci in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            coriolis_at(IC, i, S, ci, Bs, ci)  # B(I_i^C, S_ci)
            # Ĝ_i += μ_ci g_ci,   Ĥ_i += μ_ci h_ci,   B̂s_i += 2 μ_ci B(I_i^C, S_ci)
            for r in range(6):
                Ghat[i, r] += mu[ci] * T[ci, G, r]
                Hhat[i, r] += mu[ci] * T[ci, H, r]
                for c in range(6):
                    BShat[i, r, c] += 2.0 * mu[ci] * Bs[ci, r, c]
        for ci in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            # Û8, Û9, Û11, Û5, Û2 of column ci from Ĝ_i, Ĥ_i, B̂s_i
            _subtree_vectors(i, ci, S, Psid, Ghat, Hhat, BShat, inert[i] and topology[i, PARENT] < 0, w)
            # Σ_{o∈ν(i)} μ_o (∂²τ_o, ∂M_o·) with the pair (ci, ck), ck ⪯ ci:  Û·y_k
            _deepest_output(topology, i, ci, col, inert, w, out)
            if not inert[i]:  # else every pair of its columns has only vanishing entries
                # P3 = A3ᵀψ_λ(i),   P1 = A1 ψ_λ(i),   PB = 2 B(I_i^C, S_ci)ᵀ ψ_λ(i)
                _psi_rows(i, ci, S, IC, BC, Bs, Psid, psibar, cvec, w)
                # Σ_{o≺i} μ_o (∂²τ_o, ∂M_o·) with the pair (ci, cj), cj ⪯ ci
                _pair_outputs(topology, i, ci, col, inert, w, out)
        parent = topology[i, PARENT]
        if parent >= 0:
            # Ĝ_λ(i) += Ĝ_i,   Ĥ_λ(i) += Ĥ_i,   B̂s_λ(i) += B̂s_i
            for r in range(6):
                Ghat[parent, r] += Ghat[i, r]
                Hhat[parent, r] += Hhat[i, r]
        add_to_parent(topology, BShat, i)
    symmetrize_joint_blocks(topology, Hqq.reshape((1,) + Hqq.shape))  # the chart Hessian of two columns of one joint


@njit(cache=True)
def idsva_so_contracted_kernel(m, q, v, a, f_ext, mu):
    """(Hqq, Hvv, Hqv, Mq), each (nv, nv); inputs checked for NaN/inf."""
    check_state(q, v, a, "a: expected finite values, got NaN or inf")
    if not all_finite(mu):
        raise ValueError("mu: expected finite values, got NaN or inf")
    topology, gravity = m.topology, m.gravity
    nv = v.shape[0]
    d = new_data(topology)
    rnea_passes(m, d, q, v, a, f_ext)
    out = np.empty((4, nv, nv))
    rnea_derivative_passes(topology, gravity, d.S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, d.dq, d.dv)
    idsva_so_contracted_passes(topology, (d.S, d.IC, d.BC, d.rates, d.T), mu, out[0], out[1], out[2], out[3],
                               new_so_work(topology))
    return out[0], out[1], out[2], out[3]


def rnea_second_derivatives_contracted(model: Model, q, v, a, mu, f_ext=None
                                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                            np.ndarray]:
    """Second-order partials of τ = ID(q, v, a) contracted with μ (nv,), no n³ tensor formed.

    Returns ``(Hqq, Hvv, Hqv, Mq)``, each (nv, nv): Hqq[j, k] = Σ_i μ_i ∂²τ_i/∂q_j∂q_k,
    Hvv likewise in v, Hqv[j, k] = Σ_i μ_i ∂²τ_i/∂q_j∂v_k and Mq[j, k] = Σ_i μ_i ∂M_ij/∂q_k
    — equal to ``np.einsum("i,ijk->jk", mu, T)`` of the tensors of
    :func:`dynamics.rnea_second_derivatives`, in O(n·d) instead of O(n·d²). Every joint
    type; q-derivatives are those of ε ↦ μᵀτ(q ⊕ ε) at ε = 0 (Hqq symmetric).
    """
    return idsva_so_contracted_kernel(model.arrays, *as_state(model, q, v, a, "a", f_ext),
                                      as_vector(mu, model.nv, "mu"))
