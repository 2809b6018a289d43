"""Second-order derivatives of inverse and forward dynamics (IDSVA-SO, FDSVA-SO; Singh, Russell & Wensing 2023).

References, independent of the analytical recursions:
* Richardson-extrapolated central differences of the first-order derivatives
  (``rnea_derivatives``, ``aba_derivatives``), of ``crba`` and of ``minv`` (accuracy
  metric: max|A − A_ref| / max(max|A_ref|, 1), Singh, Russell & Wensing 2023 eq. 42 normalised globally),
* central differences of Pinocchio's first-order derivatives on the UR5,
* closed forms of the double pendulum,
* exact identities: symmetry of second derivatives, total symmetry of ∂²g/∂q² (third
  derivatives of the potential energy), ∂²τ/∂v² = ∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i
  (twice the Christoffel symbols), independence of a and v, linearity in v and in a,
  (∂M/∂q) a = ∂τ/∂q(q, v, a) − ∂τ/∂q(q, v, 0), branch-induced sparsity.

Models: the shared zoo of tests/conftest.py (UR5, random chains and binary trees with
revolute and prismatic joints, up to 15 DoF).
"""
from __future__ import annotations

from importlib import resources

import numpy as np
from numdiff import rel_error, richardson
import pytest

import dynamics as dyn
import dynamics.models  # noqa: F401  (makes dyn.models available)
from dynamics.aba_derivatives import aba_derivatives
from dynamics.aba_second_derivatives import aba_second_derivatives
from dynamics.rnea_derivatives import rnea_derivatives
from dynamics.rnea_second_derivatives import rnea_second_derivatives

TOL = 1e-7  # Singh, Russell & Wensing 2023 eq. 42 target against differences


def state(model: dyn.Model, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, model.nq), rng.normal(size=model.nv), rng.normal(size=model.nv)






def on_common_path(model: dyn.Model, i: int, j: int, k: int) -> bool:
    """True if joints i, j, k all lie on one path from the root."""
    deepest = max(i, j, k)  # depth-first numbering: an ancestor has a smaller index
    support = set(model.support(deepest))
    return {i, j, k} <= support


# ---------------------------------------------------------------------------------------
# inverse dynamics


def test_rnea_second_derivatives_match_differences_of_first_order(model):
    q, v, a = state(model, 1)
    d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq = rnea_second_derivatives(model, q, v, a)
    n = model.nv
    assert d2tau_dq2.shape == d2tau_dv2.shape == d2tau_dqdv.shape == dM_dq.shape == (n, n, n)
    # T[i, j, k] = ∂(∂τ_i/∂y_j)/∂z_k: differentiate the first-order matrices along the last axis
    ref_dq2 = richardson(lambda x: rnea_derivatives(model, x, v, a)[0], q)
    ref_dv2 = richardson(lambda x: rnea_derivatives(model, q, x, a)[1], v)
    ref_dqdv = richardson(lambda x: rnea_derivatives(model, q, x, a)[0], v)      # ∂/∂v_k of ∂τ_i/∂q_j
    ref_dvdq = richardson(lambda x: rnea_derivatives(model, x, v, a)[1], q)      # ∂/∂q_k of ∂τ_i/∂v_j
    ref_dM = richardson(lambda x: dyn.crba(model, x), q)
    assert rel_error(d2tau_dq2, ref_dq2) < TOL
    assert rel_error(d2tau_dv2, ref_dv2) < TOL
    assert rel_error(d2tau_dqdv, ref_dqdv) < TOL
    assert rel_error(d2tau_dqdv, ref_dvdq.transpose(0, 2, 1)) < TOL
    assert rel_error(dM_dq, ref_dM) < TOL


def test_rnea_second_derivatives_symmetries(model):
    q, v, a = state(model, 2)
    d2tau_dq2, d2tau_dv2, _, dM_dq = rnea_second_derivatives(model, q, v, a)
    scale = max(np.abs(d2tau_dq2).max(), 1.0)
    assert np.abs(d2tau_dq2 - d2tau_dq2.transpose(0, 2, 1)).max() < 1e-12 * scale
    assert np.abs(d2tau_dv2 - d2tau_dv2.transpose(0, 2, 1)).max() < 1e-12 * scale
    assert np.abs(dM_dq - dM_dq.transpose(1, 0, 2)).max() < 1e-12 * scale
    # ∂²τ/∂v² = 2Γ, Γ_ijk = ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i) (Christoffel symbols)
    christoffel2 = dM_dq + dM_dq.transpose(0, 2, 1) - dM_dq.transpose(2, 0, 1)
    assert rel_error(d2tau_dv2, christoffel2) < 1e-12


def test_gravity_hessian_is_a_totally_symmetric_third_derivative(model):
    """g = ∇V(q), so ∂²g_i/∂q_j∂q_k = ∂³V/∂q_i∂q_j∂q_k is symmetric in all three indices."""
    q, _, _ = state(model, 3)
    z = np.zeros(model.nv)
    T = rnea_second_derivatives(model, q, z, z)[0]
    for perm in [(1, 0, 2), (2, 1, 0), (1, 2, 0)]:
        assert rel_error(T, T.transpose(perm)) < 1e-12


def test_rnea_second_derivatives_structure_in_v_and_a(model):
    q, v, a = state(model, 4)
    rng = np.random.default_rng(5)
    v2, a2 = rng.normal(size=model.nv), rng.normal(size=model.nv)
    dq2, dv2, dqdv, dM = rnea_second_derivatives(model, q, v, a)
    z = np.zeros(model.nv)
    _, dv2_v2, dqdv_v2, dM_v2 = rnea_second_derivatives(model, q, v2, a2)
    # τ is quadratic in v and affine in a: ∂²τ/∂v² and ∂M/∂q depend on q only
    assert rel_error(dv2_v2, dv2) < 1e-12
    assert rel_error(dM_v2, dM) < 1e-12
    # ∂²τ/∂q∂v is linear in v and independent of a
    combo = rnea_second_derivatives(model, q, 2.0 * v - 3.0 * v2, a2)[2]
    assert rel_error(combo, 2.0 * dqdv - 3.0 * dqdv_v2) < 1e-12
    # ∂²τ/∂q² is affine in a with slope ∂²M/∂q² a: additivity of the a-part
    base = rnea_second_derivatives(model, q, v, z)[0]
    both = rnea_second_derivatives(model, q, v, a + a2)[0]
    part2 = rnea_second_derivatives(model, q, v, a2)[0]
    assert rel_error(both - base, (dq2 - base) + (part2 - base)) < 1e-12
    # (∂M/∂q_k) a = ∂τ/∂q_k(q, v, a) − ∂τ/∂q_k(q, v, 0): dM_dq against the first-order code
    lhs = np.einsum("ilk,l->ik", dM, a)
    assert rel_error(lhs, rnea_derivatives(model, q, v, a)[0] - rnea_derivatives(model, q, v, z)[0]) < 1e-12


def test_branch_induced_sparsity():
    model = dyn.models.binary_tree(12, seed=5)
    q, v, a = state(model, 6)
    tensors = rnea_second_derivatives(model, q, v, a)
    n = model.nv
    off_path = np.array([[[not on_common_path(model, i, j, k) for k in range(n)] for j in range(n)]
                         for i in range(n)])
    assert off_path.any()
    for T in tensors:
        assert np.all(T[off_path] == 0.0)
        assert np.abs(T[~off_path]).max() > 0.0


def test_double_pendulum_closed_forms():
    m1, m2, l1, l2, g0 = 1.3, 0.7, 0.9, 0.6, 9.81
    model = dyn.models.double_pendulum(m1, m2, l1, l2)
    q = np.array([0.4, -1.1])
    s2, s1, s12 = np.sin(q[1]), np.sin(q[0]), np.sin(q[0] + q[1])
    z = np.zeros(2)
    d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq = rnea_second_derivatives(model, q, z, z)
    h = m2 * l1 * l2 * s2
    dM = np.zeros((2, 2, 2))
    dM[:, :, 1] = [[-2.0 * h, -h], [-h, 0.0]]  # M depends on q2 only (textbook form)
    np.testing.assert_allclose(dM_dq, dM, atol=1e-12)
    # velocity terms: τ1 ∋ −h (2 v1 v2 + v2²), τ2 ∋ h v1²
    np.testing.assert_allclose(d2tau_dv2, [[[0.0, -2 * h], [-2 * h, -2 * h]], [[2 * h, 0.0], [0.0, 0.0]]],
                               atol=1e-12)
    np.testing.assert_allclose(d2tau_dqdv, 0.0, atol=1e-12)
    c = -g0 * m2 * l2 * s12
    grav = np.array([[[-g0 * (m1 + m2) * l1 * s1 + c, c], [c, c]], [[c, c], [c, c]]])
    np.testing.assert_allclose(d2tau_dq2, grav, atol=1e-12)


def test_against_pinocchio_first_order_differences(ur5):
    """UR5: our tensors vs Richardson differences of Pinocchio's computeRNEA/ABADerivatives."""
    pin = pytest.importorskip("pinocchio")
    with resources.as_file(resources.files("dynamics.models").joinpath("ur5.urdf")) as path:
        pmodel = pin.buildModelFromUrdf(str(path))
    pdata = pmodel.createData()
    assert tuple(pmodel.names[1:]) == ur5.joint_names
    q, v, a = state(ur5, 7)

    def pin_rnea(x, y):
        return [np.array(m) for m in pin.computeRNEADerivatives(pmodel, pdata, x, y, a)[:2]]

    def pin_aba(x, y):
        return [np.array(m) for m in pin.computeABADerivatives(pmodel, pdata, x, y, a)[:2]]

    d2tau_dq2, d2tau_dv2, d2tau_dqdv, _ = rnea_second_derivatives(ur5, q, v, a)
    assert rel_error(d2tau_dq2, richardson(lambda x: pin_rnea(x, v)[0], q)) < TOL
    assert rel_error(d2tau_dv2, richardson(lambda x: pin_rnea(q, x)[1], v)) < TOL
    assert rel_error(d2tau_dqdv, richardson(lambda x: pin_rnea(q, x)[0], v)) < TOL
    d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, _ = aba_second_derivatives(ur5, q, v, a)
    assert rel_error(d2qdd_dq2, richardson(lambda x: pin_aba(x, v)[0], q)) < TOL
    assert rel_error(d2qdd_dv2, richardson(lambda x: pin_aba(q, x)[1], v)) < TOL
    assert rel_error(d2qdd_dqdv, richardson(lambda x: pin_aba(q, x)[0], v)) < TOL


# ---------------------------------------------------------------------------------------
# forward dynamics


def test_aba_second_derivatives_match_differences_of_first_order(model):
    q, v, tau = state(model, 8)
    d2qdd_dq2, d2qdd_dv2, d2qdd_dqdv, d2qdd_dqdtau = aba_second_derivatives(model, q, v, tau)
    n = model.nv
    assert d2qdd_dq2.shape == d2qdd_dv2.shape == d2qdd_dqdv.shape == d2qdd_dqdtau.shape == (n, n, n)
    ref_dq2 = richardson(lambda x: aba_derivatives(model, x, v, tau)[0], q)
    ref_dv2 = richardson(lambda x: aba_derivatives(model, q, x, tau)[1], v)
    ref_dqdv = richardson(lambda x: aba_derivatives(model, q, x, tau)[0], v)
    ref_dvdq = richardson(lambda x: aba_derivatives(model, x, v, tau)[1], q)
    assert rel_error(d2qdd_dq2, ref_dq2) < TOL
    assert rel_error(d2qdd_dv2, ref_dv2) < TOL
    assert rel_error(d2qdd_dqdv, ref_dqdv) < TOL
    assert rel_error(d2qdd_dqdv, ref_dvdq.transpose(0, 2, 1)) < TOL
    # ∂²q̈_i/∂q_j∂τ_k = ∂(M⁻¹)_ik/∂q_j, against differences of Carpentier's M⁻¹
    ref_dMinv = richardson(lambda x: dyn.minv(model, x), q)  # [i, k, j]
    assert rel_error(d2qdd_dqdtau, ref_dMinv.transpose(0, 2, 1)) < TOL


def test_aba_second_derivatives_against_differences_of_aba():
    """Second differences of aba itself on a small chain: no first-order code involved."""
    model = dyn.models.serial_chain(4, seed=3)
    q, v, tau = state(model, 9)

    def jac(f, x, h=2e-3):
        return richardson(f, x, h)
    ref_dq2 = jac(lambda x: jac(lambda y: dyn.aba(model, y, v, tau), x), q)
    ref_dqdv = jac(lambda y: jac(lambda x: dyn.aba(model, x, y, tau), q), v)
    ref_dqdtau = jac(lambda y: jac(lambda x: dyn.aba(model, x, v, y), q), tau)
    d2qdd_dq2, _, d2qdd_dqdv, d2qdd_dqdtau = aba_second_derivatives(model, q, v, tau)
    assert rel_error(d2qdd_dq2, ref_dq2) < 1e-6
    assert rel_error(d2qdd_dqdv, ref_dqdv) < 1e-6
    assert rel_error(d2qdd_dqdtau, ref_dqdtau) < 1e-6


def test_aba_second_derivatives_structure(model):
    q, v, tau = state(model, 10)
    d2qdd_dq2, d2qdd_dv2, _, d2qdd_dqdtau = aba_second_derivatives(model, q, v, tau)
    scale = max(np.abs(d2qdd_dq2).max(), 1.0)
    assert np.abs(d2qdd_dq2 - d2qdd_dq2.transpose(0, 2, 1)).max() < 1e-10 * scale
    assert np.abs(d2qdd_dv2 - d2qdd_dv2.transpose(0, 2, 1)).max() < 1e-10 * scale
    # ∂M⁻¹/∂q_j is symmetric like M⁻¹
    assert rel_error(d2qdd_dqdtau, d2qdd_dqdtau.transpose(2, 1, 0)) < 1e-10
    # q̈ = M⁻¹(τ − C v − g): ∂²q̈/∂v² = −M⁻¹ ∂²τ/∂v² depends on q only
    Minv = dyn.minv(model, q)
    d2tau_dv2 = rnea_second_derivatives(model, q, v, tau)[1]
    assert rel_error(d2qdd_dv2, -np.einsum("ia,ajk->ijk", Minv, d2tau_dv2)) < 1e-10
    rng = np.random.default_rng(11)
    assert rel_error(aba_second_derivatives(model, q, rng.normal(size=model.nv), rng.normal(size=model.nv))[1],
                     d2qdd_dv2) < 1e-10


# ---------------------------------------------------------------------------------------
# input validation


@pytest.mark.parametrize("func, last", [(rnea_second_derivatives, "a"), (aba_second_derivatives, "tau")])
def test_bad_input_names_the_argument(ur5, func, last):
    q, v, a = state(ur5, 12)
    with pytest.raises(ValueError, match=r"^q: expected shape \(6,\)"):
        func(ur5, q[:5], v, a)
    with pytest.raises(ValueError, match=r"^v: expected shape \(6,\)"):
        func(ur5, q, np.zeros((6, 1)), a)
    with pytest.raises(ValueError, match=rf"^{last}: expected 6 real numbers"):
        func(ur5, q, v, ["x"] * 6)
    for k, name in enumerate(["q", "v", last]):
        args = [q.copy(), v.copy(), a.copy()]
        args[k][2] = np.nan
        with pytest.raises(ValueError, match=rf"^{name}: expected finite values"):
            func(ur5, *args)
