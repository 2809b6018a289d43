"""Analytical first-order partial derivatives of the RNEA: ∂τ/∂q and ∂τ/∂q̇.

The recursive form of Singh, Russell & Wensing 2023, Sec. II (eq. 12–15, after
Singh & Wensing's IDSVA), in ground (world) coordinates like every kernel of this
package. With the RNEA quantities v_i, a_i (gravity included as a_0 = [0; −g]) and
f_i^C, and

    B_k = B(I_k, v_k) = ½ [(v_k ×*) I_k − I_k (v_k ×) + (I_k v_k) ×̄*]      (eq. 14)
    I_i^C = Σ_{k ⪰ i} I_k,   B_i^C = Σ_{k ⪰ i} B_k                     (composites)
    Ψ̇_j = v_λ(j) × S_j,   Ψ̈_j = a_λ(j) × S_j + v_λ(j) × Ψ̇_j,   Ṡ_j = v_j × S_j   (eq. 15)

the partials are, for j ⪯ i (j on the path from i to the root),

    ∂τ_i/∂q_j = S_iᵀ [2 B_i^C Ψ̇_j + I_i^C Ψ̈_j]                              (12a)
    ∂τ_j/∂q_i = S_jᵀ [2 B_i^C Ψ̇_i + I_i^C Ψ̈_i + f_i^C ×̄* S_i],  j ≺ i        (12b)
    ∂τ_i/∂q̇_j = S_iᵀ [2 B_i^C S_j + I_i^C (Ψ̇_j + Ṡ_j)]                        (13a)
    ∂τ_j/∂q̇_i = S_jᵀ [2 B_i^C S_i + I_i^C (Ψ̇_i + Ṡ_i)],  j ≺ i                (13b)

and zero for pairs of joints on different branches. One forward pass (the RNEA's, plus
Ψ̇, Ψ̈, Ṡ and B_k) and one backward pass (composites, then a walk up the support of each
body) give both matrices in O(n·d) (d = depth of the tree).

The equations hold column by column for multi-DoF joints (Singh, Russell & Wensing write
them with S_i of size 6 × nv_j): Ψ̇, Ψ̈, Ṡ have one row per DoF column, with λ the parent
of the column's body; (12a)/(13a) give every pair of columns of one body. The
derivatives with respect to q are Lie derivatives along the body-fixed columns,
∂τ/∂q_k = d/dε_k τ(q ⊕ ε) at ε = 0 (:mod:`dynamics.joints`), the tangent-space
derivatives Pinocchio returns; for 1-DoF joints they are ordinary partial derivatives.
"""
from __future__ import annotations

import numpy as np

from ._compile import allocation_free, entry_point
from .model import IDX_V, NV, PARENT, Model
from .rnea import check_sizes, check_state, rnea_passes
from .spatial import add_to_parent, crf_at, crm_at, dot6_at, mat6_vec_at
from .workspace import call_on_state, call_views


@allocation_free(inline="always")
def body_coriolis(I, vel, k, B):
    """B[k] = B(I[k], v[k]) of eq. 14."""
    coriolis_at(I, k, vel, k, B, k)


@allocation_free(inline="always")
def coriolis_at(I, i, vel, k, B, b):
    """B[b] = B(I[i], v[k]) of eq. 14.

    With X = (v×*) I and I symmetric, −I (v×) = Xᵀ, so B = ½ (X + Xᵀ + (I v) ×̄*),
    where h ×̄* = −[[n×, f×], [f×, 0]] for h = [n; f] (the matrix of m ↦ m ×* h).
    """
    w0, w1, w2, u0, u1, u2 = vel[k, 0], vel[k, 1], vel[k, 2], vel[k, 3], vel[k, 4], vel[k, 5]
    for c in range(6):  # X[:, c] = v ×* I[:, c], written into B[b]
        f0, f1, f2, f3, f4, f5 = I[i, 0, c], I[i, 1, c], I[i, 2, c], I[i, 3, c], I[i, 4, c], I[i, 5, c]
        B[b, 0, c] = w1 * f2 - w2 * f1 + u1 * f5 - u2 * f4
        B[b, 1, c] = w2 * f0 - w0 * f2 + u2 * f3 - u0 * f5
        B[b, 2, c] = w0 * f1 - w1 * f0 + u0 * f4 - u1 * f3
        B[b, 3, c] = w1 * f5 - w2 * f4
        B[b, 4, c] = w2 * f3 - w0 * f5
        B[b, 5, c] = w0 * f4 - w1 * f3
    for r in range(6):  # ½ (X + Xᵀ)
        for c in range(r + 1, 6):
            B[b, r, c] = B[b, c, r] = 0.5 * (B[b, r, c] + B[b, c, r])
    n0 = n1 = n2 = g0 = g1 = g2 = 0.0  # h = I v
    for c in range(6):
        n0 += I[i, 0, c] * vel[k, c]
        n1 += I[i, 1, c] * vel[k, c]
        n2 += I[i, 2, c] * vel[k, c]
        g0 += I[i, 3, c] * vel[k, c]
        g1 += I[i, 4, c] * vel[k, c]
        g2 += I[i, 5, c] * vel[k, c]
    _add_half_skew(-n0, -n1, -n2, B, b, 0, 0)  # + ½ h ×̄*
    _add_half_skew(-g0, -g1, -g2, B, b, 0, 3)
    _add_half_skew(-g0, -g1, -g2, B, b, 3, 0)


@allocation_free(inline="always")
def _add_half_skew(x, y, z, B, k, r, c):
    """B[k, r:r+3, c:c+3] += ½ [x, y, z]×."""
    B[k, r, c + 1] -= 0.5 * z
    B[k, r, c + 2] += 0.5 * y
    B[k, r + 1, c] += 0.5 * z
    B[k, r + 1, c + 2] -= 0.5 * x
    B[k, r + 2, c] -= 0.5 * y
    B[k, r + 2, c + 1] += 0.5 * x


@allocation_free
def rnea_derivatives_into(m, d, q, v, a, f_ext, dtau_dq, dtau_dv):
    """Write ∂τ/∂q and ∂τ/∂q̇ (nv, nv) at (q, v, a) into ``dtau_dq`` and ``dtau_dv``, every
    intermediate in the workspace ``d`` (:mod:`dynamics.workspace`).

    Inputs are not checked (see :func:`rnea_derivatives_call`).
    """
    rnea_passes(m, d, q, v, a, f_ext)
    rnea_derivative_passes(m.topology, m.gravity, d.S, d.IC, d.vel, d.acc, d.fC, d.rates, d.BC, d.T, dtau_dq, dtau_dv)


# rows of the per-column work array of the backward pass
G, H, E, D, TMP, TMP2 = range(6)


@allocation_free
def rnea_derivative_passes(topology, gravity, S, IC, vel, acc, fC, rates, BC, T, dtau_dq, dtau_dv):
    """Eq. 12–15 from the outputs of :func:`dynamics.rnea.rnea_passes`.

    S (nv, 6), vel, acc, fC (n, 6) and ``IC`` (n, 6, 6), all in world coordinates; ``IC``
    holds the body inertias on entry and the composite inertias I^C on return (summed in
    place: d.IC of a workspace, the block of d.I, see :data:`dynamics.workspace.Data`). Writes ∂τ/∂q and
    ∂τ/∂q̇ (nv, nv) into ``dtau_dq`` and ``dtau_dv``, and keeps what second-order passes
    reuse: Ψ̇, Ψ̈, Ṡ in ``rates`` (3, nv, 6), the composites B^C in ``BC`` (n, 6, 6) and the
    per-column vectors g, h, e, d of :func:`joint_terms` in rows G, H, E, D of ``T`` (nv, 6, 6).
    """
    n = topology.shape[0]
    Psid, Psidd, Sd = rates[0], rates[1], rates[2]
    # Ψ̇_j, Ψ̈_j, Ṡ_j of every DoF column (eq. 15)
    subspace_rates(topology, gravity, S, vel, acc, Psid, Psidd, Sd, T[0])
    # B_k = B(I_k, v_k)   (eq. 14; summed into B^C below)
    for k in range(n):
        body_coriolis(IC, vel, k, BC)
    dtau_dq[:, :] = 0.0
    dtau_dv[:, :] = 0.0
    for i in range(n - 1, -1, -1):  # I^C, B^C of ν(i) are complete here
        for ci in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            t = T[ci]
            # g, h, e, d of column ci from I_i^C, B_i^C, f_i^C
            joint_terms(i, ci, S, IC, BC, Psid, Psidd, Sd, fC, t)
            j = i
            while j >= 0:  # j ⪯ i
                for cj in range(topology[j, IDX_V], topology[j, IDX_V] + topology[j, NV]):
                    dtau_dq[ci, cj] = dot6_at(t, G, Psid, cj) + dot6_at(t, H, Psidd, cj)  # (12a)
                    dtau_dv[ci, cj] = dot6_at(t, G, S, cj) + dot6_at(t, H, Psid, cj) + dot6_at(t, H, Sd, cj)  # (13a)
                    if j != i:
                        dtau_dq[cj, ci] = dot6_at(S, cj, t, E)  # (12b)
                        dtau_dv[cj, ci] = dot6_at(S, cj, t, D)  # (13b)
                j = topology[j, PARENT]
        # I_λ(i)^C += I_i^C,   B_λ(i)^C += B_i^C
        add_to_parent(topology, IC, i)
        add_to_parent(topology, BC, i)


@allocation_free
def subspace_rates(topology, gravity, S, vel, acc, Psid, Psidd, Sd, w):
    """Write Ψ̇, Ψ̈ and Ṡ (nv, 6) of eq. 15; at the root v_λ = 0 and a_λ = a_0 = [0; −g].
    w (≥ 2, 6) is scratch."""
    for k in range(3):  # row 0: a_0, row 1: scratch
        w[0, k], w[0, 3 + k] = 0.0, -gravity[k]
    for i in range(topology.shape[0]):
        parent = topology[i, PARENT]
        for j in range(topology[i, IDX_V], topology[i, IDX_V] + topology[i, NV]):
            crm_at(vel, i, S, j, Sd, j)  # Ṡ_j = v_i × S_j
            if parent < 0:  # Ψ̇_j = 0,  Ψ̈_j = a_0 × S_j
                Psid[j, :] = 0.0
                crm_at(w, 0, S, j, Psidd, j)
                continue
            crm_at(vel, parent, S, j, Psid, j)  # Ψ̇_j = v_λ × S_j
            crm_at(acc, parent, S, j, Psidd, j)  # Ψ̈_j = a_λ × S_j + v_λ × Ψ̇_j
            crm_at(vel, parent, Psid, j, w, 1)
            for k in range(6):
                Psidd[j, k] += w[1, k]


@allocation_free(inline="always")
def joint_terms(i, c, S, IC, BC, Psid, Psidd, Sd, fC, t):
    """Rows G, H, E, D of ``t`` (6, 6): the vectors of DoF column c (of body i) in eq. 12–13.

        g = 2 B_i^Cᵀ S_c,  h = I_i^C S_c        so that for j ⪯ i
            ∂τ_c/∂q_j = g·Ψ̇_j + h·Ψ̈_j,   ∂τ_c/∂q̇_j = g·S_j + h·(Ψ̇_j + Ṡ_j)
        e = 2 B_i^C Ψ̇_c + I_i^C Ψ̈_c + S_c ×* f_i^C     (bracket of 12b: f ×̄* S = S ×* f)
        d = 2 B_i^C S_c + I_i^C (Ψ̇_c + Ṡ_c)            (bracket of 13b)
    """
    # g = 2 B_i^Cᵀ S_c,   e = 2 B_i^C Ψ̇_c,   d = 2 B_i^C S_c   (first terms)
    for r in range(6):
        g = e = d = 0.0
        for k in range(6):
            g += BC[i, k, r] * S[c, k]
            e += BC[i, r, k] * Psid[c, k]
            d += BC[i, r, k] * S[c, k]
        t[G, r], t[E, r], t[D, r] = 2.0 * g, 2.0 * e, 2.0 * d
        t[TMP2, r] = Psid[c, r] + Sd[c, r]
    # h = I_i^C S_c
    mat6_vec_at(IC, i, S, c, t, H)
    # e += I_i^C Ψ̈_c
    mat6_vec_at(IC, i, Psidd, c, t, TMP)
    for r in range(6):
        t[E, r] += t[TMP, r]
    # e += S_c ×* f_i^C
    crf_at(S, c, fC, i, t, TMP)
    for r in range(6):
        t[E, r] += t[TMP, r]
    # d += I_i^C (Ψ̇_c + Ṡ_c)
    mat6_vec_at(IC, i, t, TMP2, t, TMP)
    for r in range(6):
        t[D, r] += t[TMP, r]


@entry_point
def rnea_derivatives_call(buffer, q, v, a, f_ext, out):
    """(∂τ/∂q, ∂τ/∂q̇) into ``out`` (2, nv, nv), model and workspace cut from ``buffer`` (a
    :func:`dynamics.workspace.call_buffer`); inputs checked."""
    m, d = call_views(buffer)
    check_sizes(m.topology, q, v, a, f_ext)
    check_state(q, v, a, "a: expected finite values, got NaN or inf")
    rnea_derivatives_into(m, d, q, v, a, f_ext, out[0], out[1])


def rnea_derivatives(model: Model, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """Partial derivatives of inverse dynamics τ = ID(q, v, a, f_ext), gravity included;
    ``f_ext`` as in :func:`dynamics.rnea` (fixed in the joints' frames).

    Returns ``(dtau_dq, dtau_dv)``, each (nv, nv) with ``dtau_dq[i, j] = ∂τ_i/∂q_j``, the
    derivative along the tangent direction j (q ⊕ ε, :mod:`dynamics.joints`).
    ∂τ/∂a is M(q) (:func:`dynamics.crba`).
    """
    out = call_on_state(rnea_derivatives_call, model, q, v, a, "a", f_ext, np.empty((2, model.nv, model.nv)))
    return out[0], out[1]
