"""First-order derivatives of inverse and forward dynamics (rnea_derivatives, aba_derivatives).

References, independent of the analytical recursions:
* Richardson-extrapolated central differences of ``rnea``/``aba`` themselves (accuracy
  metric of Singh, Russell & Wensing 2023 eq. 42: max|A − A_ref| / max(max|A_ref|, 1)),
* exact identities: ∂τ/∂v is homogeneous of degree 1 in v and independent of a,
  (∂τ/∂v)·v = 2 (C(q, v) v) (Euler's theorem for the quadratic velocity terms),
  ∂g/∂q is symmetric (Hessian of the potential energy), ∂FD/∂τ = M⁻¹ with M·M⁻¹ = 1,
* Pinocchio's computeRNEADerivatives / computeABADerivatives on the same robot, loaded
  from a URDF string emitted from the same random description.

Models: the zoo of conftest (UR5, random chains and binary trees up to 15 DoF) and, for
the Pinocchio comparison, random chains and trees described here once and built both
with ModelBuilder and as URDF (revolute, prismatic, continuous and fixed joints).
"""
from __future__ import annotations

import numpy as np
from numdiff import rel_error, richardson
import pytest

import dynamics as dyn
from conftest import random_state
from dynamics.aba_derivatives import aba_derivatives
from dynamics.batch import aba_batch, aba_derivatives_batch, rnea_derivatives_batch
from dynamics.model import rpy_matrix, transform
from dynamics.rnea_derivatives import rnea_derivatives

# ---------------------------------------------------------------------------------------
# random robots: one description, built both with ModelBuilder and as URDF (for Pinocchio)


def random_robot(seed: int, n: int, tree: bool, n_fixed: int = 2) -> dict:
    """Random description of a fixed-base robot with ``n`` moving and ``n_fixed`` fixed joints.

    Returns {"links": [...], "joints": [...]}; links carry mass, CoM, inertial rpy and
    principal moments; joints carry kind, parent, child, xyz, rpy, axis.
    """
    rng = np.random.default_rng(seed)
    links = [dict(name="base", mass=0.0, com=np.zeros(3), rpy=np.zeros(3), moments=np.zeros(3))]
    joints = []
    kinds = ["revolute"] * n
    for k in rng.choice(n, size=min(n, max(1, n // 3)), replace=False):
        kinds[k] = "prismatic"
    for k in rng.choice(n, size=min(n, 2), replace=False):
        if kinds[k] == "revolute":
            kinds[k] = "continuous"
    kinds += ["fixed"] * n_fixed
    order = list(range(n)) + list(rng.integers(0, n + 1, size=n_fixed) + 0.5)
    for idx in np.argsort(order, kind="stable"):
        kind = kinds[idx]
        parent = links[-1]["name"] if not tree else links[rng.integers(len(links))]["name"]
        name = f"link{len(links)}"
        second = rng.uniform(0.005, 0.05, size=3)
        links.append(dict(name=name, mass=rng.uniform(0.5, 3.0), com=rng.uniform(-0.1, 0.1, 3),
                          rpy=rng.uniform(-np.pi, np.pi, 3),
                          moments=np.array([second[1] + second[2], second[0] + second[2], second[0] + second[1]])))
        axis = rng.normal(size=3)
        joints.append(dict(name=f"j_{name}", kind=kind, parent=parent, child=name,
                           xyz=rng.uniform(-0.3, 0.3, 3), rpy=rng.uniform(-np.pi, np.pi, 3),
                           axis=axis / np.linalg.norm(axis)))
    return dict(links=links, joints=joints)


def build_model(robot: dict) -> dyn.Model:
    b = dyn.ModelBuilder("random")
    for link in robot["links"]:
        b.add_link(link["name"], link["mass"], np.diag(link["moments"]),
                   transform(rpy_matrix(*link["rpy"]), link["com"]))
    for j in robot["joints"]:
        b.add_joint(j["name"], j["kind"], j["parent"], j["child"], transform(rpy_matrix(*j["rpy"]), j["xyz"]),
                    j["axis"])
    return b.build()


def to_urdf(robot: dict) -> str:
    """URDF of the description (continuous joints written as revolute, so nq = nv in Pinocchio)."""
    def v3(x):
        return " ".join(repr(float(e)) for e in x)
    out = ['<robot name="random">', '<link name="base"/>']
    for link in robot["links"][1:]:
        ixx, iyy, izz = (float(e) for e in link["moments"])
        out.append(
            f'<link name="{link["name"]}"><inertial><origin xyz="{v3(link["com"])}" rpy="{v3(link["rpy"])}"/>'
            f'<mass value="{float(link["mass"])!r}"/><inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" '
            f'izz="{izz!r}"/></inertial></link>')
    for j in robot["joints"]:
        kind = "revolute" if j["kind"] == "continuous" else j["kind"]
        out.append(
            f'<joint name="{j["name"]}" type="{kind}"><parent link="{j["parent"]}"/><child link="{j["child"]}"/>'
            f'<origin xyz="{v3(j["xyz"])}" rpy="{v3(j["rpy"])}"/><axis xyz="{v3(j["axis"])}"/>'
            '<limit lower="-100" upper="100" effort="100" velocity="100"/></joint>')
    out.append("</robot>")
    return "\n".join(out)






SEEDS = [0, 1]
FD_TOL = 1e-8  # Richardson differences, Singh, Russell & Wensing 2023 eq. 42 metric
PIN_TOL = 1e-10


# ---------------------------------------------------------------------------------------
# inverse dynamics


@pytest.mark.parametrize("seed", SEEDS)
def test_rnea_derivatives_match_finite_differences(model, seed):
    q, v, a = random_state(model, seed)
    dtau_dq, dtau_dv = rnea_derivatives(model, q, v, a)
    assert rel_error(dtau_dq, richardson(lambda x: dyn.rnea(model, x, v, a), q)) < FD_TOL
    assert rel_error(dtau_dv, richardson(lambda x: dyn.rnea(model, q, x, a), v)) < FD_TOL


def test_rnea_derivatives_use_the_model_gravity():
    model = dyn.models.serial_chain(5, seed=4, gravity=(1.5, -2.0, 3.0))
    q, v, a = random_state(model, 7)
    dtau_dq, _ = rnea_derivatives(model, q, v, a)
    assert rel_error(dtau_dq, richardson(lambda x: dyn.rnea(model, x, v, a), q)) < FD_TOL
    model = model.with_gravity((0.0, 0.0, 0.0))
    dtau_dq_0, _ = rnea_derivatives(model, q, v, a)
    assert rel_error(dtau_dq_0, richardson(lambda x: dyn.rnea(model, x, v, a), q)) < FD_TOL
    assert np.max(np.abs(dtau_dq - dtau_dq_0)) > 1e-3  # gravity does enter


def test_gravity_jacobian_is_symmetric(model):
    """∂g/∂q is the Hessian of the potential energy: symmetric, and equal to it."""
    q, _, _ = random_state(model, 3)
    z = np.zeros(model.nv)
    dg_dq, dg_dv = rnea_derivatives(model, q, z, z)
    assert np.max(np.abs(dg_dq - dg_dq.T)) <= 1e-12 * max(1.0, np.max(np.abs(dg_dq)))
    assert np.max(np.abs(dg_dv)) == 0.0
    hess_V = richardson(lambda x: dyn.gravity_torques(model, x), q)
    assert rel_error(dg_dq, hess_V) < FD_TOL


@pytest.mark.parametrize("seed", SEEDS)
def test_dtau_dv_is_linear_in_v_and_free_of_a(model, seed):
    """C(q, v)·v is quadratic in v: ∂τ/∂v is linear in v, independent of a, zero at v = 0,
    and (∂τ/∂v)·v = 2·C(q, v)·v (Euler's theorem)."""
    q, v, a = random_state(model, seed)
    _, v2, a2 = random_state(model, seed + 10)
    z = np.zeros(model.nv)
    D = rnea_derivatives(model, q, v, a)[1]
    scale = max(1.0, np.max(np.abs(D)))
    assert np.max(np.abs(rnea_derivatives(model, q, v, a2)[1] - D)) <= 1e-12 * scale
    sum_v = rnea_derivatives(model, q, v + v2, a)[1] - rnea_derivatives(model, q, v2, a)[1]
    assert np.max(np.abs(sum_v - D)) <= 1e-12 * scale
    assert np.max(np.abs(rnea_derivatives(model, q, z, a)[1])) == 0.0
    Cv = dyn.rnea(model, q, v, z) - dyn.rnea(model, q, z, z)
    assert rel_error(D @ v, 2.0 * Cv) < 1e-12


# ---------------------------------------------------------------------------------------
# forward dynamics


@pytest.mark.parametrize("seed", SEEDS)
def test_aba_derivatives_match_finite_differences(model, seed):
    q, v, _ = random_state(model, seed)
    tau = np.random.default_rng(seed + 100).normal(scale=5.0, size=model.nv)
    dqdd_dq, dqdd_dv, dqdd_dtau = aba_derivatives(model, q, v, tau)
    assert rel_error(dqdd_dq, richardson(lambda x: dyn.aba(model, x, v, tau), q)) < FD_TOL
    assert rel_error(dqdd_dv, richardson(lambda x: dyn.aba(model, q, x, tau), v)) < FD_TOL
    assert rel_error(dqdd_dtau, richardson(lambda x: dyn.aba(model, q, v, x), tau)) < FD_TOL


def test_dqdd_dtau_is_the_inverse_inertia(model):
    q, v, tau = random_state(model, 5)
    _, dqdd_dv, dqdd_dtau = aba_derivatives(model, q, v, tau)
    assert np.max(np.abs(dqdd_dtau @ dyn.crba(model, q) - np.eye(model.nv))) < 1e-9
    assert np.array_equal(dqdd_dtau, dqdd_dtau.T)
    assert np.max(np.abs(aba_derivatives(model, q, np.zeros(model.nv), tau)[1])) == 0.0


def test_derivatives_of_a_fixed_joint_robot_match_finite_differences():
    """Fixed joints (merged links) and continuous joints, built directly (not from URDF)."""
    model = build_model(random_robot(11, 8, tree=True, n_fixed=3))
    q, v, tau = random_state(model, 2)
    dtau_dq, dtau_dv = rnea_derivatives(model, q, v, tau)
    assert rel_error(dtau_dq, richardson(lambda x: dyn.rnea(model, x, v, tau), q)) < FD_TOL
    dqdd_dq, _, _ = aba_derivatives(model, q, v, tau)
    assert rel_error(dqdd_dq, richardson(lambda x: dyn.aba(model, x, v, tau), q)) < FD_TOL


# ---------------------------------------------------------------------------------------
# Pinocchio oracle


def _pinocchio_pair(pin, urdf: str, model: dyn.Model):
    """Pinocchio model of the same URDF and the permutation ours → Pinocchio's indices."""
    pmodel = pin.buildModelFromXML(urdf)
    assert pmodel.nq == pmodel.nv == model.nv
    perm = np.array([pmodel.joints[pmodel.getJointId(name)].idx_v for name in model.joint_names])
    return pmodel, perm


def _check_against_pinocchio(pin, pmodel, perm, model, seed):
    q, v, tau = random_state(model, seed)
    pq, pv, ptau = (np.empty(model.nv) for _ in range(3))
    pq[perm], pv[perm], ptau[perm] = q, v, tau
    data = pmodel.createData()
    back = np.ix_(perm, perm)
    qdd = dyn.aba(model, q, v, tau)
    pin.computeRNEADerivatives(pmodel, data, pq, pv, pin.aba(pmodel, data, pq, pv, ptau))
    dtau_dq, dtau_dv = rnea_derivatives(model, q, v, qdd)
    assert rel_error(dtau_dq, data.dtau_dq[back]) < PIN_TOL
    assert rel_error(dtau_dv, data.dtau_dv[back]) < PIN_TOL
    pin.computeABADerivatives(pmodel, data, pq, pv, ptau)
    dqdd_dq, dqdd_dv, dqdd_dtau = aba_derivatives(model, q, v, tau)
    Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T  # Pinocchio fills the upper triangle
    assert rel_error(dqdd_dq, data.ddq_dq[back]) < PIN_TOL
    assert rel_error(dqdd_dv, data.ddq_dv[back]) < PIN_TOL
    assert rel_error(dqdd_dtau, Minv[back]) < PIN_TOL


@pytest.mark.parametrize("seed, n, tree", [(0, 3, False), (1, 6, True), (2, 10, False), (3, 15, True)],
                         ids=["chain3", "tree6", "chain10", "tree15"])
def test_against_pinocchio_on_random_robots(seed, n, tree):
    pin = pytest.importorskip("pinocchio")
    robot = random_robot(seed, n, tree)
    model = build_model(robot)
    pmodel, perm = _pinocchio_pair(pin, to_urdf(robot), model)
    for s in SEEDS:
        _check_against_pinocchio(pin, pmodel, perm, model, s)


def test_against_pinocchio_on_ur5(ur5):
    pin = pytest.importorskip("pinocchio")
    from importlib import resources
    urdf = resources.files("dynamics.models").joinpath("ur5.urdf").read_text()
    pmodel, perm = _pinocchio_pair(pin, urdf, ur5)
    for s in SEEDS:
        _check_against_pinocchio(pin, pmodel, perm, ur5, s)


# ---------------------------------------------------------------------------------------
# batched variants


def test_batched_variants_match_single_calls(model):
    K = 5
    states = [random_state(model, 20 + k) for k in range(K)]
    Q, V, A = (np.array([s[i] for s in states]) for i in range(3))
    dq, dv = rnea_derivatives_batch(model, Q, V, A)
    qdd = aba_batch(model, Q, V, A)
    fd = aba_derivatives_batch(model, Q, V, A)
    assert dq.shape == dv.shape == (K, model.nv, model.nv) and qdd.shape == (K, model.nv)
    for k in range(K):
        for got, ref in zip((dq[k], dv[k]), rnea_derivatives(model, Q[k], V[k], A[k])):
            np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(qdd[k], dyn.aba(model, Q[k], V[k], A[k]), rtol=1e-13, atol=1e-13)
        for got, ref in zip((fd[0][k], fd[1][k], fd[2][k]), aba_derivatives(model, Q[k], V[k], A[k])):
            np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("func, last", [(rnea_derivatives, "a"), (aba_derivatives, "tau")])
def test_bad_input_names_the_argument(ur5, func, last):
    good = [np.zeros(6)] * 3
    for k, name in enumerate(["q", "v", last]):
        args = list(good)
        args[k] = np.zeros(5)
        with pytest.raises(ValueError, match=rf"^{name}: expected shape \(6,\)"):
            func(ur5, *args)
        args[k] = np.array([0.0, 0.0, np.nan, 0.0, 0.0, 0.0])
        with pytest.raises(ValueError, match=rf"^{name}: expected finite"):
            func(ur5, *args)
        args[k] = "abc"
        with pytest.raises(ValueError, match=rf"^{name}: "):
            func(ur5, *args)


@pytest.mark.parametrize("func, last", [(rnea_derivatives_batch, "A"), (aba_batch, "TAU"),
                                        (aba_derivatives_batch, "TAU")])
def test_batched_bad_input_names_the_argument_and_knot(ur5, func, last):
    good = np.zeros((4, 6))
    with pytest.raises(ValueError, match=r"^V: expected shape \(K, 6\)"):
        func(ur5, good, np.zeros((4, 5)), good)
    with pytest.raises(ValueError, match=r"^Q: expected shape \(K, 6\)"):
        func(ur5, np.zeros(6), good, good)
    with pytest.raises(ValueError, match=rf"^{last}: expected 4 knots"):
        func(ur5, good, good, np.zeros((3, 6)))
    bad = good.copy()
    bad[2, 1] = np.inf
    with pytest.raises(ValueError, match=rf"^{last}: expected finite values, got NaN or inf at knot 2"):
        func(ur5, good, good, bad)
