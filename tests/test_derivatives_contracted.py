"""Contracted second-order derivatives (μ·∂²ID, λ·∂²FD) against independent references.

* the contraction of the full IDSVA-SO / FDSVA-SO tensors (np.einsum), to rounding;
* Richardson differences of the contracted first-order functions, μᵀ∂τ/∂q, μᵀ∂τ/∂v,
  μᵀM (= ∂(μᵀτ)/∂a) and λᵀ∂q̈/∂(q, v, τ) — differentiated with respect to q and v;
* exact identities: Hqq, Hvv symmetric; linearity in μ; Mq = ∂(μᵀM)/∂q.

Models: the shared zoo (UR5, random chains and binary trees, revolute and prismatic).
"""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_state
from numdiff import rel_error, richardson

import dynamics as dyn

TOL = 1e-7  # accuracy metric of Singh, Russell & Wensing (2023, eq. 42) against differences


def _weights(model: dyn.Model, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=model.nv)


@pytest.mark.parametrize("contracted, full, rtol", [
    (dyn.rnea_second_derivatives_contracted, dyn.rnea_second_derivatives, 1e-12),
    (dyn.aba_second_derivatives_contracted, dyn.aba_second_derivatives, 1e-10)], ids=["rnea", "aba"])
def test_contracted_equals_the_contracted_tensors(model, contracted, full, rtol):
    q, v, a = random_state(model, 11)
    w = _weights(model, 12)
    for H, T in zip(contracted(model, q, v, a, w), full(model, q, v, a)):
        ref = np.einsum("i,ijk->jk", w, T)
        assert np.allclose(H, ref, rtol=rtol, atol=rtol * max(1.0, np.abs(ref).max()))


def test_rnea_contracted_matches_differences_of_first_order(model):
    q, v, a = random_state(model, 21)
    mu = _weights(model, 22)
    Hqq, Hvv, Hqv, Mq = dyn.rnea_second_derivatives_contracted(model, q, v, a, mu)
    # rows of the first-order Jacobians contracted with μ: g_q = (∂τ/∂q)ᵀμ, g_v = (∂τ/∂v)ᵀμ
    gq = lambda x: mu @ dyn.rnea_derivatives(model, x, v, a)[0]  # noqa: E731
    gv_of_q = lambda x: mu @ dyn.rnea_derivatives(model, x, v, a)[1]  # noqa: E731
    gv_of_v = lambda y: mu @ dyn.rnea_derivatives(model, q, y, a)[1]  # noqa: E731
    muM = lambda x: mu @ dyn.crba(model, x)  # noqa: E731
    assert rel_error(Hqq, richardson(gq, q)) < TOL
    assert rel_error(Hqv, richardson(gv_of_q, q).T) < TOL  # [j, k] = ∂/∂q_j (μᵀ∂τ/∂v_k)
    assert rel_error(Hvv, richardson(gv_of_v, v)) < TOL
    assert rel_error(Mq, richardson(muM, q)) < TOL


def test_aba_contracted_matches_differences_of_first_order(model):
    q, v, tau = random_state(model, 31)
    lam = _weights(model, 32)
    Hqq, Hvv, Hqv, Hqtau = dyn.aba_second_derivatives_contracted(model, q, v, tau, lam)
    fo = lambda x, y, t, i: lam @ dyn.aba_derivatives(model, x, y, t)[i]  # noqa: E731
    assert rel_error(Hqq, richardson(lambda x: fo(x, v, tau, 0), q)) < TOL
    assert rel_error(Hvv, richardson(lambda y: fo(q, y, tau, 1), v)) < TOL
    assert rel_error(Hqv, richardson(lambda x: fo(x, v, tau, 1), q).T) < TOL
    assert rel_error(Hqtau, richardson(lambda x: fo(x, v, tau, 2), q).T) < TOL


def test_contracted_symmetry_and_linearity(model):
    q, v, a = random_state(model, 41)
    mu1, mu2 = _weights(model, 42), _weights(model, 43)
    H1 = dyn.rnea_second_derivatives_contracted(model, q, v, a, mu1)
    H2 = dyn.rnea_second_derivatives_contracted(model, q, v, a, mu2)
    H12 = dyn.rnea_second_derivatives_contracted(model, q, v, a, 2.0 * mu1 - 3.0 * mu2)
    for A, B, C in zip(H1, H2, H12):
        assert np.allclose(C, 2.0 * A - 3.0 * B, atol=1e-10 * max(1.0, np.abs(C).max()))
    F = dyn.aba_second_derivatives_contracted(model, q, v, a, mu1)
    for H in (H1[0], H1[1], F[0], F[1]):
        assert np.allclose(H, H.T, atol=1e-11 * max(1.0, np.abs(H).max()))


def test_batched_contracted_equals_pointwise(ur5):
    rng = np.random.default_rng(5)
    Q, V, A, W = (rng.normal(size=(3, 6)) for _ in range(4))
    for batch, single in ((dyn.batch.rnea_second_derivatives_contracted_batch, dyn.rnea_second_derivatives_contracted),
                          (dyn.batch.aba_second_derivatives_contracted_batch, dyn.aba_second_derivatives_contracted)):
        out = batch(ur5, Q, V, A, W)
        for k in range(3):
            for H, Hk in zip(out, single(ur5, Q[k], V[k], A[k], W[k])):  # same code, maybe other FMA fusion
                assert np.allclose(H[k], Hk, rtol=1e-13, atol=1e-13 * np.abs(Hk).max())


@pytest.mark.parametrize("func, last", [(dyn.rnea_second_derivatives_contracted, "mu"),
                                        (dyn.aba_second_derivatives_contracted, "mu")])
def test_bad_weights_name_the_argument(ur5, func, last):
    z = np.zeros(6)
    with pytest.raises(ValueError, match=rf"{last}: expected shape \(6,\)"):
        func(ur5, z, z, z, np.zeros(5))
    with pytest.raises(ValueError, match=f"{last}: expected finite"):
        func(ur5, z, z, z, np.array([0, 0, np.nan, 0, 0, 0.0]))
    with pytest.raises(ValueError, match="q: expected finite"):
        func(ur5, np.full(6, np.inf), z, z, z)
    with pytest.raises(ValueError, match=rf"{last}: expected 6 real numbers"):
        func(ur5, z, z, z, "abc")


def test_batched_bad_weights_name_the_array_and_knot(ur5):
    Z = np.zeros((2, 6))
    bad = Z.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match="MU: expected finite values, got NaN or inf at knot 1"):
        dyn.batch.rnea_second_derivatives_contracted_batch(ur5, Z, Z, Z, bad)
    with pytest.raises(ValueError, match=r"MU: expected shape \(K, 6\)"):
        dyn.batch.aba_second_derivatives_contracted_batch(ur5, Z, Z, Z, np.zeros((2, 5)))
