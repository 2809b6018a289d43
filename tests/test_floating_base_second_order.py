"""Second-order derivatives (IDSVA-SO, FDSVA-SO, contracted) for multi-DoF joints.

Definition under test: derivatives with respect to q are those of ε ↦ f(q ⊕ ε) at ε = 0
(local coordinates through ``dyn.integrate``). References, all by differences along
q ⊕ ε:

* central second differences of τ (resp. q̈) itself (with one Richardson step),
  [f(h(e_j + e_k)) − f(h(e_j − e_k)) − f(h(−e_j + e_k)) + f(−h(e_j + e_k))] / 4h²;
* symmetrised Richardson differences of the analytical first-order derivatives;
* Richardson differences of M = crba and M⁻¹ = minv along q ⊕ ε.

Models: random mixed trees with a free-flyer, spherical or planar root (and spherical,
planar, revolute, prismatic joints inside), Solo-12 with a free-flyer root, and the space
manipulator (free-flyer root, no gravity: its base is inert in the contracted passes,
which skip the entries that then vanish).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamics as dyn

from numdiff import rel_error, richardson, second_differences
from test_floating_base import _robot_path, mixed_tree, random_state

TOL_FO = 1e-8  # against Richardson differences of analytical first-order derivatives
TOL_SO = 1e-6  # against Richardson second differences of τ or q̈ themselves


@pytest.fixture(scope="module", params=["floating", "spherical", "planar", "solo12", "space"])
def case(request):
    if request.param == "space":
        model = dyn.models.space_manipulator()
    elif request.param == "solo12":
        urdf, share = _robot_path("solo12")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = dyn.load_urdf(urdf, root_joint="free-flyer", package_dirs=[share])
    else:
        model = mixed_tree(5, request.param)
    q, v, a = random_state(model, 7)
    return model, q, v, a


def _along(model, q, f):
    """ε ↦ f(q ⊕ ε)."""
    return lambda e: f(dyn.integrate(model, q, e))


def _sym(T):
    return 0.5 * (T + np.swapaxes(T, -1, -2))


def test_rnea_second_derivatives_are_local_coordinate_derivatives(case):
    model, q, v, a = case
    nv = model.nv
    d2q, d2v, dqdv, dM = dyn.rnea_second_derivatives(model, q, v, a)
    assert d2q.shape == (nv, nv, nv)
    np.testing.assert_array_equal(d2q, np.swapaxes(d2q, 1, 2))  # symmetric in the two q indices
    tau = _along(model, q, lambda qe: dyn.rnea(model, qe, v, a))
    assert rel_error(d2q, second_differences(tau, nv)) < TOL_SO
    dq = richardson(_along(model, q, lambda qe: dyn.rnea_derivatives(model, qe, v, a)[0]), np.zeros(nv))
    assert rel_error(d2q, _sym(dq)) < TOL_FO  # dq[i, k, j] = ∂/∂q_j of ∂τ_i/∂q_k
    dv_q = richardson(_along(model, q, lambda qe: dyn.rnea_derivatives(model, qe, v, a)[1]), np.zeros(nv))
    assert rel_error(dqdv, np.swapaxes(dv_q, 1, 2)) < TOL_FO  # ∂²τ_i/∂q_j∂v_k
    dv_v = richardson(lambda x: dyn.rnea_derivatives(model, q, x, a)[1], v)
    assert rel_error(d2v, dv_v) < TOL_FO
    M_q = richardson(_along(model, q, lambda qe: dyn.crba(model, qe)), np.zeros(nv))
    assert rel_error(dM, M_q) < TOL_FO


def test_aba_second_derivatives_are_local_coordinate_derivatives(case):
    model, q, v, tau = case
    nv = model.nv
    d2q, d2v, dqdv, dqdtau = dyn.aba_second_derivatives(model, q, v, tau)
    assert rel_error(d2q, np.swapaxes(d2q, 1, 2)) < 1e-12
    qdd = _along(model, q, lambda qe: dyn.aba(model, qe, v, tau))
    assert rel_error(d2q, second_differences(qdd, nv)) < TOL_SO
    dq = richardson(_along(model, q, lambda qe: dyn.aba_derivatives(model, qe, v, tau)[0]), np.zeros(nv))
    assert rel_error(d2q, _sym(dq)) < TOL_FO
    dv_q = richardson(_along(model, q, lambda qe: dyn.aba_derivatives(model, qe, v, tau)[1]), np.zeros(nv))
    assert rel_error(dqdv, np.swapaxes(dv_q, 1, 2)) < TOL_FO
    dv_v = richardson(lambda x: dyn.aba_derivatives(model, q, x, tau)[1], v)
    assert rel_error(d2v, dv_v) < TOL_FO
    Minv_q = richardson(_along(model, q, lambda qe: dyn.minv(model, qe)), np.zeros(nv))
    assert rel_error(dqdtau, np.moveaxis(Minv_q, 2, 1)) < TOL_FO  # [i, j, k] = ∂(M⁻¹)_ik/∂q_j


@pytest.mark.parametrize("contracted, full", [
    (dyn.rnea_second_derivatives_contracted, dyn.rnea_second_derivatives),
    (dyn.aba_second_derivatives_contracted, dyn.aba_second_derivatives)], ids=["rnea", "aba"])
def test_contracted_equals_the_contracted_tensors(case, contracted, full):
    model, q, v, a = case
    mu = np.random.default_rng(3).normal(size=model.nv)
    for H, T in zip(contracted(model, q, v, a, mu), full(model, q, v, a)):
        assert rel_error(H, np.einsum("i,ijk->jk", mu, T)) < 1e-10


def test_batched_contracted_match_single_calls(case):
    model, q, v, a = case
    rng = np.random.default_rng(4)
    Q = np.stack([q, dyn.random_configuration(model, rng)])
    V, A, MU = rng.normal(size=(3, 2, model.nv))
    for batched, single in [(dyn.batch.rnea_second_derivatives_contracted_batch, dyn.rnea_second_derivatives_contracted),
                            (dyn.batch.aba_second_derivatives_contracted_batch, dyn.aba_second_derivatives_contracted)]:
        out = batched(model, Q, V, A, MU)
        for k in range(2):
            for H, ref in zip(out, single(model, Q[k], V[k], A[k], MU[k])):
                np.testing.assert_allclose(H[k], ref, rtol=1e-12, atol=1e-12)


def test_without_gravity_the_base_pose_drops_out():
    """A free-floating robot in zero gravity: its dynamics do not depend on the base's pose
    (every body moves with the base, whose velocity is in its own frame), so q̈ is the same
    for the base displaced by any ε, and every second-order entry with a derivative with
    respect to the base's pose is zero — exactly, the contracted passes skipping them."""
    model = dyn.models.space_manipulator()
    assert not np.any(model.gravity)
    q, v, tau = random_state(model, 11)
    qdd = dyn.aba(model, q, v, tau)
    rng = np.random.default_rng(12)
    for _ in range(3):
        eps = np.zeros(model.nv)
        eps[:6] = rng.normal(size=6)
        np.testing.assert_allclose(dyn.aba(model, dyn.integrate(model, q, eps), v, tau), qdd, rtol=1e-12, atol=1e-12)
    lam = rng.normal(size=model.nv)
    Hqq, Hvv, Hqv, Hqtau = dyn.aba_second_derivatives_contracted(model, q, v, tau, lam)
    assert not np.any(Hqq[:6]) and not np.any(Hqq[:, :6]) and not np.any(Hqv[:6]) and not np.any(Hqtau[:6])
    assert np.all(np.any(Hvv[:6], axis=1))  # its velocity still matters
    Rqq, _, Rqv, Mq = dyn.rnea_second_derivatives_contracted(model, q, v, qdd, lam)
    assert not np.any(Rqq[:6]) and not np.any(Rqv[:6]) and not np.any(Mq[:, :6])


@pytest.mark.parametrize("name", ["space", "ur5"])
def test_inert_chains_keep_their_velocity_and_inertia_terms(name):
    """At rest without gravity, with no weight μ on the first joints' rates, every body down
    to the first weighted one is inert (Ψ̇ = Ψ̈ = 0, ψ_λ = 0: the free-flyer base and the
    arm's first body, or the UR5's first joints). The contracted passes may skip only the
    entries that then vanish: the v–v entries of two inert bodies and the ∂²τ/∂q_j∂v_k,
    ∂M/∂q_j of an inert body below another do not (an inert body's subtree vectors were
    once taken from the previous column's, and from uninitialised memory at the first).
    References: the contracted full tensors; and with μ = 0 (every body inert) exact zeros."""
    if name == "space":
        model, free = dyn.models.space_manipulator(), 7  # base (6 rates) and the arm's first joint
    else:
        model, free = dyn.models.ur5(gravity=np.zeros(3)), 2
    assert not np.any(model.gravity)
    q = dyn.random_configuration(model, np.random.default_rng(5))
    rest = np.zeros(model.nv)
    rng = np.random.default_rng(6)
    for _ in range(3):
        mu = rng.normal(size=model.nv)
        mu[:free] = 0.0
        for H, T in zip(dyn.rnea_second_derivatives_contracted(model, q, rest, rest, mu),
                        dyn.rnea_second_derivatives(model, q, rest, rest)):
            np.testing.assert_allclose(H, np.einsum("i,ijk->jk", mu, T), rtol=1e-12, atol=1e-12)
        lam = dyn.crba(model, q) @ mu  # the FD pass weighs the ID terms with M⁻¹λ = μ
        for H, T in zip(dyn.aba_second_derivatives_contracted(model, q, rest, rest, lam),
                        dyn.aba_second_derivatives(model, q, rest, rest)):
            np.testing.assert_allclose(H, np.einsum("i,ijk->jk", lam, T), rtol=1e-10, atol=1e-10)
    for H in dyn.rnea_second_derivatives_contracted(model, q, rest, rest, rest) + \
            dyn.aba_second_derivatives_contracted(model, q, rest, rest, rest):
        assert not np.any(H)
