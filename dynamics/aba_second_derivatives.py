"""FDSVA-SO: second-order partial derivatives of forward dynamics (Singh, Russell & Wensing 2023 Sec. VI).

Differentiating ID(q, v, FD(q, v, τ)) = τ twice gives, with all ID terms evaluated at
q̈ = FD(q, v, τ) (eq. 46, u, w ∈ {q, v}):

    ∂²FD/∂u∂w = −M⁻¹ [ ∂²ID/∂u∂w + (∂M/∂w) ∂FD/∂u + ((∂M/∂u) ∂FD/∂w)^R ]

where the bracket is the *Inner-Term*, (∂M/∂u) X is the tensor with pages
(∂M/∂u_j) X and ^R swaps its columns and pages. M does not depend on v, so the cases are

    q, q:  −M⁻¹ [∂²ID/∂q² + P + Pᴿ],  P[:, j, k] = (∂M/∂q_j) ∂FD/∂q[:, k]   (eq. 46)
    v, v:  −M⁻¹ ∂²ID/∂v²                                                (eq. 47)
    q, v:  −M⁻¹ [∂²ID/∂q∂v + (∂M/∂q_j) ∂FD/∂v]                          (eq. 48–49)
    q, τ:  ∂M⁻¹/∂q_j = −M⁻¹ (∂M/∂q_j) M⁻¹                               (eq. 44)

The ingredients come from :mod:`dynamics.aba_derivatives` (q̈, M⁻¹ by Carpentier's
algorithm, ∂FD/∂q, ∂FD/∂v) and :mod:`dynamics.rnea_second_derivatives` (IDSVA-SO at
(q, v, q̈), which also gives ∂M/∂q). With q-derivatives taken in the local
coordinates ε ↦ q ⊕ ε (IDSVA-SO's d2tau_dq2 is that chart Hessian, see
:mod:`dynamics.rnea_second_derivatives`) the chain rule above holds as written, for
every joint type; indices run over the nv DoF columns. The Inner- and Outer-Terms are formed by direct
tensor–matrix products (Singh, Russell & Wensing's DTM, their fastest choice below ~40 joints), O(n⁴).
:func:`fdsva_so_terms` starts from first-order results the caller already holds.
"""
from __future__ import annotations

import numpy as np

from ._checks import as_state
from ._compile import allocation_free, njit
from .aba_derivatives import aba_derivatives_kernel
from .model import Model
from .rnea_second_derivatives import idsva_so_kernel


@allocation_free
def _any_nonzero(x):
    for i in range(x.shape[0]):
        if x[i] != 0.0:
            return True
    return False


@allocation_free
def _add_dM_times(dM, X, out, swap):
    """out[a, j, k] += Σ_l ∂M_al/∂q_j X[l, k]; with ``swap`` into out[a, k, j] instead.

    Per a, out[a] += D_aᵀX (or XᵀD_a) with D_a = ∂M_a·/∂q (n, n): the loops run l, then the
    row of D_a (or of X), then the contiguous row of out[a], so no loop strides by n (a
    power-of-two n strided by n maps its rows to a few cache sets). ∂M/∂q is sparse on
    branching trees (zero unless a, l, j share a path): its zero entries are skipped, with
    ``swap`` its zero rows (and zero entries of X). Each entry sums over l in increasing
    order, as a plain triple loop would.
    """
    n = dM.shape[0]
    for a in range(n):
        D, O = dM[a], out[a]
        for l in range(n):
            if swap:
                if not _any_nonzero(D[l]):
                    continue
                for k in range(n):
                    x = X[l, k]
                    if x != 0.0:
                        for j in range(n):
                            # out[a, k, j] += ∂M_al/∂q_j X[l, k]
                            O[k, j] += D[l, j] * x
            else:
                for j in range(n):
                    d = D[l, j]
                    if d != 0.0:
                        for k in range(n):
                            # out[a, j, k] += ∂M_al/∂q_j X[l, k]
                            O[j, k] += d * X[l, k]


@allocation_free
def _outer_term(Minv, inner, nonzero, out):
    """out (nv, nv, nv, zeroed) = −M⁻¹ applied to the rows of ``inner``:
    out[i] = −Σ_a M⁻¹[i, a] inner[a].

    ``nonzero`` (nv, nv) is workspace: rows inner[a, j, :] that are zero (branch-induced
    sparsity) are found once and skipped. Each out[i] is completed before the next, with
    inner read in order: no loop strides by nv² (for a power-of-two nv those strides fall
    into a few cache sets). Each entry sums over a in increasing order.
    """
    n = Minv.shape[0]
    for a in range(n):
        for j in range(n):
            nonzero[a, j] = _any_nonzero(inner[a, j])
    for i in range(n):
        O = out[i]
        for a in range(n):
            minv_ia = Minv[i, a]
            for j in range(n):
                if nonzero[a, j]:
                    for k in range(n):
                        # out[i, j, k] −= M⁻¹_ia inner[a, j, k]
                        O[j, k] -= minv_ia * inner[a, j, k]


@njit(cache=True)
def fdsva_so_terms(m, q, v, f_ext, qdd, dqdd_dq, dqdd_dv, Minv):
    """FDSVA-SO from the first-order results at (q, v, τ): q̈, ∂q̈/∂q, ∂q̈/∂v, M⁻¹ (nv, nv).

    For callers that already ran :func:`dynamics.aba_derivatives.aba_derivatives_kernel`.
    Returns (d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dqdtau), each (nv, nv, nv); inputs are
    not checked.
    """
    # ∂²ID/∂q², ∂²ID/∂v², ∂²ID/∂q∂v and ∂M/∂q at (q, v, q̈) by IDSVA-SO
    d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq = idsva_so_kernel(m, q, v, qdd, f_ext)
    # Inner-Terms, in place:
    # ∂²ID/∂q² += P,   P[:, j, k] = (∂M/∂q_j) ∂FD/∂q[:, k]   (eq. 46)
    _add_dM_times(dM_dq, dqdd_dq, d2tau_dq2, False)
    # ∂²ID/∂q² += Pᴿ   (eq. 46)
    _add_dM_times(dM_dq, dqdd_dq, d2tau_dq2, True)
    # ∂²ID/∂q∂v += (∂M/∂q_j) ∂FD/∂v   (eq. 48–49)
    _add_dM_times(dM_dq, dqdd_dv, d2tau_dqdv, False)
    # (∂M/∂q_j) M⁻¹   (eq. 44)
    dM_Minv = np.zeros_like(dM_dq)
    _add_dM_times(dM_dq, Minv, dM_Minv, False)
    out = np.zeros((4,) + dM_dq.shape)  # one block, as the IDSVA-SO tensors (reused by the allocator)
    nonzero = np.empty(dM_dq.shape[:2], np.bool_)
    # Outer-Terms:
    # ∂²FD/∂q² = −M⁻¹ [∂²ID/∂q² + P + Pᴿ]   (eq. 46)
    _outer_term(Minv, d2tau_dq2, nonzero, out[0])
    # ∂²FD/∂v² = −M⁻¹ ∂²ID/∂v²   (eq. 47)
    _outer_term(Minv, d2tau_dv2, nonzero, out[1])
    # ∂²FD/∂q∂v = −M⁻¹ [∂²ID/∂q∂v + (∂M/∂q_j) ∂FD/∂v]   (eq. 48–49)
    _outer_term(Minv, d2tau_dqdv, nonzero, out[2])
    # ∂²FD/∂q_j∂τ = ∂M⁻¹/∂q_j = −M⁻¹ (∂M/∂q_j) M⁻¹   (eq. 44)
    _outer_term(Minv, dM_Minv, nonzero, out[3])
    return out[0], out[1], out[2], out[3]


@njit(cache=True)
def fdsva_so_kernel(m, q, v, tau, f_ext):
    """(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dqdtau), each (nv, nv, nv); inputs checked."""
    qdd, dqdd_dq, dqdd_dv, Minv = aba_derivatives_kernel(m, q, v, tau, f_ext)
    return fdsva_so_terms(m, q, v, f_ext, qdd, dqdd_dq, dqdd_dv, Minv)


def aba_second_derivatives(model: Model, q, v, tau, f_ext=None
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Second-order partials of q̈ = FD(q, v, τ) by FDSVA-SO (Singh, Russell & Wensing 2023 eq. 44–49).

    Returns ``(d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dqdtau)``, each (nv, nv, nv), laid
    out T[i, j, k] = ∂²q̈_i/∂y_j∂z_k: d2qdd_dqdv[i, j, k] = ∂²q̈_i/∂q_j∂v_k and
    d2qdd_dqdtau[i, j, k] = ∂²q̈_i/∂q_j∂τ_k = ∂(M⁻¹)_ik/∂q_j. (∂²q̈/∂τ² = ∂²q̈/∂v∂τ = 0.)
    Every joint type: derivatives with respect to q are those of ε ↦ q̈(q ⊕ ε) at ε = 0
    (:func:`dynamics.integrate`; local coordinates, d2qdd_dq2 symmetric in j, k). The four
    are views of one (4, nv, nv, nv) array.
    """
    return fdsva_so_kernel(model.arrays, *as_state(model, q, v, tau, "tau", f_ext))
