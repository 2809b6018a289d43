"""Contracted FDSVA-SO: second-order partials of forward dynamics contracted with μ.

For q̈ = FD(q, v, τ) and a vector μ (n,) this computes, without forming any n³ tensor,

    Hqq[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂q_k      Hvv[j, k] = Σ_i μ_i ∂²q̈_i/∂v_j∂v_k
    Hqv[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂v_k      Hqtau[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂τ_k

(∂²q̈/∂τ² = ∂²q̈/∂v∂τ = 0). Contracting FDSVA-SO (Singh, Russell & Wensing 2023,
eq. 44–49) with μ: since μᵀ(−M⁻¹ X) = −νᵀX with ν = M⁻¹μ (M symmetric), the Outer-Term
disappears and the Inner-Terms become products of n × n matrices,

    Hqq   = −[ ν·∂²ID/∂q² + Mqᵀ ∂FD/∂q + (Mqᵀ ∂FD/∂q)ᵀ ]       (eq. 46)
    Hvv   = −ν·∂²ID/∂v²                                       (eq. 47)
    Hqv   = −[ ν·∂²ID/∂q∂v + Mqᵀ ∂FD/∂v ]                      (eq. 48–49)
    Hqtau = −Mqᵀ M⁻¹                                          (eq. 44)

with Mq[l, j] = Σ_a ν_a ∂M_al/∂q_j and every ID term evaluated at q̈ = FD(q, v, τ). The
contracted ID terms ν·∂²ID come from the contracted IDSVA-SO
(:mod:`dynamics.rnea_second_derivatives_contracted`), started from the first-order data
that :mod:`dynamics.aba_derivatives` computed at q̈ together with M⁻¹, ∂FD/∂q and ∂FD/∂v:
the only extra work is the contracted backward pass and the three products with Mqᵀ,
done as one, Mqᵀ[∂FD/∂q  ∂FD/∂v  M⁻¹] (of which a caller may want only some columns of
M⁻¹: those of the actuated joints).
"""
from __future__ import annotations

import numpy as np

from ._checks import as_state, as_vector
from ._compile import allocation_free, njit
from .aba_derivatives import aba_derivatives_data
from .kinematics import all_finite
from .model import Model
from .rnea_second_derivatives_contracted import idsva_so_contracted_passes, new_so_work


@allocation_free
def fdsva_so_contracted_terms(topology, X, Minv, data, mu, Hqq, Hvv, Hqv, Htau, Mq, work):
    """Contracted FDSVA-SO from the first-order results at (q, v, τ): the forward dynamics'
    Jacobian X = [∂q̈/∂q  ∂q̈/∂v  ∂q̈/∂τ B] (nv, 2·nv + p), for any selection B (nv, p) of
    τ's columns (∂q̈/∂τ B = M⁻¹B: B = identity gives M⁻¹, a robot's actuated columns its
    ∂q̈/∂u), M⁻¹ (nv, nv) and the RNEA-derivative ``data`` at q̈ of
    :func:`dynamics.aba_derivatives.aba_derivatives_data`. Writes Hqq, Hvv, Hqv (nv, nv)
    and Htau = Hqtau B (nv, p); ``Mq`` (nv, nv) is workspace (on return
    Σ_a ν_a ∂M_al/∂q_j), and so is ``work``
    (:func:`dynamics.rnea_second_derivatives_contracted.new_so_work`): nothing is
    allocated. Not checked.

    The three Inner-Term products share their left factor: row j of Mqᵀ X holds those of
    Mqᵀ ∂q̈/∂q, Mqᵀ ∂q̈/∂v and Mqᵀ M⁻¹B side by side, one contiguous sweep per row of X."""
    n = Minv.shape[0]  # nv
    nu, row = work.joint_vectors[0], work.joint_vectors[1:].reshape(-1)[: X.shape[1]]
    for r in range(n):  # ν = M⁻¹ μ
        s = 0.0
        for c in range(n):
            s += Minv[r, c] * mu[c]
        nu[r] = s
    # ν·∂²ID/∂q², ν·∂²ID/∂v², ν·∂²ID/∂q∂v, Mq[l, j] = Σ_a ν_a ∂M_al/∂q_j at q̈ (contracted IDSVA-SO)
    idsva_so_contracted_passes(topology, data, nu, Hqq, Hvv, Hqv, Mq, work)
    for j in range(n):  # row j of Mqᵀ X
        row[:] = 0.0
        for l in range(n):
            mq = Mq[l, j]
            if mq == 0.0:  # e.g. a whole column of a base without gravity (inert, see the ID pass)
                continue
            # (Mqᵀ X)[j] += Mq[l, j] X[l]
            for k in range(row.shape[0]):
                row[k] += mq * X[l, k]
        for k in range(n):
            # Y = ν·∂²ID/∂q² + 2 Mqᵀ ∂FD/∂q   (eq. 46)
            Hqq[j, k] += 2.0 * row[k]  # ½(Y + Yᵀ) below gives ν·∂²ID/∂q² + P + Pᵀ (the first is symmetric)
            # Hqv = −[ν·∂²ID/∂q∂v + Mqᵀ ∂FD/∂v]   (eq. 48–49)
            Hqv[j, k] = -(Hqv[j, k] + row[n + k])
            # Hvv = −ν·∂²ID/∂v²   (eq. 47)
            Hvv[j, k] = -Hvv[j, k]
        for c in range(Htau.shape[1]):
            # Hqtau B = −Mqᵀ M⁻¹B   (eq. 44)
            Htau[j, c] = -row[2 * n + c]
    for j in range(n):
        for k in range(j + 1):
            # Hqq = −½ (Y + Yᵀ)   (eq. 46)
            Hqq[j, k] = Hqq[k, j] = -0.5 * (Hqq[j, k] + Hqq[k, j])


@njit(cache=True)
def fdsva_so_contracted_kernel(m, q, v, tau, f_ext, mu):
    """(Hqq, Hvv, Hqv, Hqtau), each (nv, nv); inputs checked for NaN/inf."""
    if not all_finite(mu):
        raise ValueError("mu: expected finite values, got NaN or inf")
    _, dqdd_dq, dqdd_dv, Minv, data = aba_derivatives_data(m, q, v, tau, f_ext)
    topology, n = m.topology, v.shape[0]
    X = np.empty((n, 3 * n))  # [∂q̈/∂q  ∂q̈/∂v  M⁻¹]
    X[:, :n], X[:, n: 2 * n], X[:, 2 * n:] = dqdd_dq, dqdd_dv, Minv
    out = np.empty((5, n, n))
    fdsva_so_contracted_terms(topology, X, Minv, data, mu, out[0], out[1], out[2], out[3], out[4],
                              new_so_work(topology))
    return out[0], out[1], out[2], out[3]


def aba_second_derivatives_contracted(model: Model, q, v, tau, mu, f_ext=None
                                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                              np.ndarray]:
    """Second-order partials of q̈ = FD(q, v, τ) contracted with μ (nv,), no n³ tensor formed.

    Returns ``(Hqq, Hvv, Hqv, Hqtau)``, each (nv, nv): Hqq[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂q_k,
    Hvv likewise in v, Hqv[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂v_k and
    Hqtau[j, k] = Σ_i μ_i ∂²q̈_i/∂q_j∂τ_k — equal to ``np.einsum("i,ijk->jk", mu, T)`` of
    the tensors of :func:`dynamics.aba_second_derivatives`. Every joint type;
    q-derivatives are those of ε ↦ μᵀq̈(q ⊕ ε) at ε = 0 (Hqq symmetric).
    """
    return fdsva_so_contracted_kernel(model.arrays, *as_state(model, q, v, tau, "tau", f_ext),
                                      as_vector(mu, model.nv, "mu"))
