"""Multi-DoF joints and floating bases against Pinocchio and against differences.

Oracles: Pinocchio (the same model built joint by joint with its own JointModels, and
legged robots of example-robot-data loaded by both libraries from the same URDF with a
free-flyer root), central differences through ``integrate``, and the Lie-group identities.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import dynamics as dyn
from dynamics.builder import ModelBuilder
from dynamics.model import transform

from numdiff import central

pin = pytest.importorskip("pinocchio")
erd = pytest.importorskip("example_robot_data")


def mixed_tree(seed: int, root: str = "floating") -> dyn.Model:
    """A random tree with a ``root`` joint and every joint type below it."""
    rng = np.random.default_rng(seed)
    kinds = ["spherical", "revolute", "prismatic", "planar", "revolute", "spherical", "prismatic", "revolute"]
    parents = [-1, 0, 1, 0, 3, 4, 2, 5, 0]
    b = ModelBuilder(f"mixed{seed}")
    b.add_link("world")
    for i, parent in enumerate(parents):
        B = 0.1 * rng.normal(size=(3, 3))
        m = rng.uniform(0.5, 3.0)
        sigma = m * (B @ B.T + 0.002 * np.eye(3))
        b.add_link(f"l{i}", m, np.trace(sigma) * np.eye(3) - sigma, transform(p=rng.uniform(-0.1, 0.1, 3)))
        kind = root if i == 0 else kinds[(i - 1) % len(kinds)]
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        if np.linalg.det(R) < 0:
            R[:, 0] *= -1
        axis = (0.0, 0.0, 1.0) if kind == "planar" else rng.normal(size=3)
        b.add_joint(f"j{i}", kind, "world" if parent < 0 else f"l{parent}", f"l{i}",
                    transform(R, rng.uniform(-0.3, 0.3, 3)), axis)
    return b.build()


def to_pinocchio(model: dyn.Model):
    """The same tree built with Pinocchio's JointModels, joint by joint."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    for i, kind in enumerate(model.joint_types):
        axis = model.axis[i]
        joint = {"revolute": lambda: pin.JointModelRevoluteUnaligned(*axis),
                 "prismatic": lambda: pin.JointModelPrismaticUnaligned(*axis),
                 "spherical": pin.JointModelSpherical, "free-flyer": pin.JointModelFreeFlyer,
                 "planar": pin.JointModelPlanar}[kind]()
        T = model.joint_placement[i]
        jid = pm.addJoint(int(model.parent[i]) + 1, joint, pin.SE3(T[:3, :3], T[:3, 3]), model.joint_names[i])
        I = model.inertia[i]
        pm.appendBodyToJoint(jid, pin.Inertia(I[0], I[1:4], I[4:].reshape(3, 3)), pin.SE3.Identity())
    return pm, pm.createData()


def random_state(model, seed):
    rng = np.random.default_rng(seed)
    return dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.fixture(scope="module", params=["floating", "spherical", "planar"])
def mixed(request):
    model = mixed_tree(3, request.param)
    return model, *to_pinocchio(model)


def test_layout_follows_pinocchio(mixed):
    model, pm, _ = mixed
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    np.testing.assert_array_equal(model.idx_qs, list(pm.idx_qs)[1:])
    np.testing.assert_array_equal(model.idx_vs, list(pm.idx_vs)[1:])
    np.testing.assert_array_equal(model.nqs, list(pm.nqs)[1:])
    np.testing.assert_array_equal(model.nvs, list(pm.nvs)[1:])
    np.testing.assert_allclose(dyn.neutral(model), pin.neutral(pm), atol=0)


@pytest.mark.parametrize("seed", range(3))
def test_dynamics_match_pinocchio(mixed, seed):
    model, pm, pd = mixed
    q, v, a = random_state(model, seed)
    np.testing.assert_allclose(dyn.rnea(model, q, v, a), pin.rnea(pm, pd, q, v, a), rtol=1e-10, atol=1e-10)
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    np.testing.assert_allclose(dyn.crba(model, q), M, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dyn.aba(model, q, v, a), pin.aba(pm, pd, q, v, a), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dyn.minv(model, q), np.linalg.inv(M), rtol=1e-9, atol=1e-9)
    pin.computeRNEADerivatives(pm, pd, q, v, a)
    dq, dv = dyn.rnea_derivatives(model, q, v, a)
    np.testing.assert_allclose(dq, pd.dtau_dq, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dv, pd.dtau_dv, rtol=1e-9, atol=1e-9)
    pin.computeABADerivatives(pm, pd, q, v, a)
    fq, fv, ft = dyn.aba_derivatives(model, q, v, a)
    np.testing.assert_allclose(fq, pd.ddq_dq, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(fv, pd.ddq_dv, rtol=1e-8, atol=1e-8)
    Minv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
    np.testing.assert_allclose(ft, Minv, rtol=1e-9, atol=1e-9)
    T = 0.5 * v @ M @ v
    np.testing.assert_allclose(dyn.kinetic_energy(model, q, v), T, rtol=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_frames_match_pinocchio(mixed, seed):
    model, pm, pd = mixed
    q, _, _ = random_state(model, seed)
    pin.forwardKinematics(pm, pd, q)
    pin.computeJointJacobians(pm, pd, q)
    for i in range(model.njoints):
        frame = model.body_names[i]
        R, p = dyn.frame_placement(model, q, frame)
        np.testing.assert_allclose(R, pd.oMi[i + 1].rotation, atol=1e-12)
        np.testing.assert_allclose(p, pd.oMi[i + 1].translation, atol=1e-12)
        J = pin.getJointJacobian(pm, pd, i + 1, pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(dyn.frame_jacobian(model, q, frame), J, atol=1e-12)


def test_lie_group_operations_match_pinocchio(mixed):
    model, pm, _ = mixed
    rng = np.random.default_rng(7)
    for _ in range(5):
        q0, q1 = dyn.random_configuration(model, rng), dyn.random_configuration(model, rng)
        dv = rng.normal(size=model.nv)
        np.testing.assert_allclose(dyn.integrate(model, q0, dv), pin.integrate(pm, q0, dv), atol=1e-12)
        np.testing.assert_allclose(dyn.difference(model, q0, q1), pin.difference(pm, q0, q1), atol=1e-10)


def test_difference_inverts_integrate_and_keeps_unit_quaternions(mixed):
    model = mixed[0]
    rng = np.random.default_rng(11)
    for scale in (1e-9, 1e-3, 0.3):  # rotations below π, where log inverts exp
        q = dyn.random_configuration(model, rng)
        dv = scale * rng.normal(size=model.nv)
        q1 = dyn.integrate(model, q, dv)
        np.testing.assert_allclose(dyn.difference(model, q, q1), dv, rtol=1e-9, atol=1e-12)
        for i, kind in enumerate(model.joint_types):
            k = model.idx_qs[i]
            if kind in ("spherical", "free-flyer"):
                o = 3 if kind == "free-flyer" else 0
                assert abs(np.linalg.norm(q1[k + o: k + o + 4]) - 1) < 1e-14
            elif kind == "planar":
                assert abs(np.linalg.norm(q1[k + 2: k + 4]) - 1) < 1e-14


def test_first_order_derivatives_are_tangent_space_differences(mixed):
    """∂τ/∂q_k = d/dε τ(q ⊕ ε e_k), independent of Pinocchio."""
    model = mixed[0]
    q, v, a = random_state(model, 5)
    dq, dv = dyn.rnea_derivatives(model, q, v, a)
    num_q = central(lambda e: dyn.rnea(model, dyn.integrate(model, q, e), v, a), np.zeros(model.nv), 1e-6)
    num_v = central(lambda x: dyn.rnea(model, q, x, a), v, 1e-6)
    np.testing.assert_allclose(dq, num_q, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dv, num_v, rtol=1e-6, atol=1e-6)
    J = dyn.point_jacobian(model, q, model.body_names[-1], [0.1, 0.2, 0.3])
    num_J = central(lambda e: dyn.point_position(model, dyn.integrate(model, q, e), model.body_names[-1],
                                                 [0.1, 0.2, 0.3]), np.zeros(model.nv), 1e-6)
    np.testing.assert_allclose(J, num_J, rtol=1e-7, atol=1e-8)


def test_point_hessian_is_the_local_coordinates_second_derivative(mixed):
    """∂²p/∂ε_j∂ε_k of p(q ⊕ ε) at 0: central differences of the Jacobian at q ⊕ ε
    give the iterated Lie derivative, whose symmetric part is the chart's Hessian."""
    model = mixed[0]
    q = random_state(model, 6)[0]
    frame, o = model.body_names[-1], [0.1, -0.2, 0.05]
    H = dyn.point_hessian(model, q, frame, o)
    num = central(lambda e: dyn.point_jacobian(model, dyn.integrate(model, q, e), frame, o), np.zeros(model.nv), 1e-6)
    np.testing.assert_allclose(H, H.transpose(0, 2, 1), atol=1e-14)
    np.testing.assert_allclose(H, 0.5 * (num + num.transpose(0, 2, 1)), rtol=1e-6, atol=1e-7)


ROBOTS = {"solo12": "solo_description/robots/solo12.urdf",
          "anymal": "anymal_b_simple_description/robots/anymal.urdf",
          "talos": "talos_data/robots/talos_reduced.urdf"}


def _robot_path(name: str) -> tuple[str, str]:
    """The URDF and the directory holding the package ``example-robot-data`` of its meshes."""
    robots = erd.getModelPath(ROBOTS[name])
    return os.path.join(robots, ROBOTS[name]), os.path.dirname(os.path.dirname(robots))


@pytest.fixture(scope="module", params=list(ROBOTS))
def legged(request):
    urdf, share = _robot_path(request.param)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = dyn.load_urdf(urdf, root_joint="free-flyer", package_dirs=[share])
    assert not [w for w in caught if "mesh" in str(w.message)], "package:// meshes resolved"
    assert all(os.path.isfile(g.filename) for g in model.visuals if g.kind == "mesh")
    assert model.source == os.path.abspath(urdf)
    pm = pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer())
    return model, pm, pm.createData()


def test_unresolved_meshes_warn_once_each_and_fixed_base_keeps_the_old_layout():
    urdf, _ = _robot_path("solo12")
    with pytest.warns(UserWarning, match="mesh 'package://example-robot-data/.*not found") as caught:
        model = dyn.load_urdf(urdf)
    names = [str(w.message) for w in caught if "mesh" in str(w.message)]
    assert len(names) == len(set(names))
    assert model.nq == model.nv == 12 and "root_joint" not in model.joint_names


def _permutations(model, pm):
    """Index maps taking our q, v to Pinocchio's, joint by name (the identity: the orders agree)."""
    names = list(pm.names)[1:]
    qmap, vmap = np.empty(model.nq, int), np.empty(model.nv, int)
    for i, name in enumerate(model.joint_names):
        pid = names.index(name) + 1
        k, m = model.idx_qs[i], model.idx_vs[i]
        qmap[k: k + model.nqs[i]] = np.arange(pm.idx_qs[pid], pm.idx_qs[pid] + pm.nqs[pid])
        vmap[m: m + model.nvs[i]] = np.arange(pm.idx_vs[pid], pm.idx_vs[pid] + pm.nvs[pid])
    return qmap, vmap


def test_legged_robots_load_floating_and_match_pinocchio(legged):
    model, pm, pd = legged
    assert model.joint_names[0] == "root_joint" and model.joint_types[0] == "free-flyer"
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    qmap, vmap = _permutations(model, pm)
    rng = np.random.default_rng(0)
    q, v, a = dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp, vp, ap = np.empty(pm.nq), np.empty(pm.nv), np.empty(pm.nv)
    qp[qmap], vp[vmap], ap[vmap] = q, v, a
    tau = dyn.rnea(model, q, v, a)
    np.testing.assert_allclose(tau, pin.rnea(pm, pd, qp, vp, ap)[vmap], rtol=1e-9, atol=1e-9)
    M = pin.crba(pm, pd, qp)
    M = np.triu(M) + np.triu(M, 1).T
    np.testing.assert_allclose(dyn.crba(model, q), M[np.ix_(vmap, vmap)], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(dyn.aba(model, q, v, tau), a, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(dyn.minv(model, q) @ dyn.crba(model, q), np.eye(model.nv), atol=1e-8)
    pin.computeRNEADerivatives(pm, pd, qp, vp, ap)
    dq, dv = dyn.rnea_derivatives(model, q, v, a)
    np.testing.assert_allclose(dq, pd.dtau_dq[np.ix_(vmap, vmap)], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(dv, pd.dtau_dv[np.ix_(vmap, vmap)], rtol=1e-8, atol=1e-8)
    pin.computeABADerivatives(pm, pd, qp, vp, tau[np.argsort(vmap)])
    fq, fv, _ = dyn.aba_derivatives(model, q, v, tau)
    np.testing.assert_allclose(fq, pd.ddq_dq[np.ix_(vmap, vmap)], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fv, pd.ddq_dv[np.ix_(vmap, vmap)], rtol=1e-6, atol=1e-6)


def test_free_flyer_root_of_a_fixed_arm_conserves_momentum_without_gravity():
    """A floating UR5 with gravity off and no torques: total momentum is constant, so
    the rate of change of the world-frame spatial momentum along q̈ = FD vanishes."""
    model = dyn.load_urdf(dyn.models.ur5().source, root_joint="free-flyer", gravity=[0.0, 0.0, 0.0])
    rng = np.random.default_rng(1)
    q, v = dyn.random_configuration(model, rng), rng.normal(size=model.nv)
    qdd = dyn.aba(model, q, v, np.zeros(model.nv))
    # the base wrench of ID at (q, v, q̈) is the rate of change of momentum: zero
    np.testing.assert_allclose(dyn.rnea(model, q, v, qdd)[:6], 0.0, atol=1e-9)
    # and the kinetic energy is conserved: d/dt T = vᵀ τ = 0
    dT = central(lambda t: np.array([dyn.kinetic_energy(model, dyn.integrate(model, q, t[0] * v),
                                                        v + t[0] * qdd)]), np.zeros(1), 1e-6)
    assert abs(dT[0, 0]) < 1e-6 * (1 + abs(dyn.kinetic_energy(model, q, v)))


def test_bad_configurations_and_options_raise():
    model = mixed_tree(0)
    q = dyn.neutral(model)
    q[3:7] = [0.0, 0.0, 0.0, 2.0]
    # the compiled checks' messages read as sentences, not as the tuple of their parts
    with pytest.raises(ValueError, match=r"^q: the unit quaternion \(or planar cos, sin\) of joint number 0 has norm "
                                         r"2\.0 \(expected 1\); use dynamics\.normalize\(model, q\)$"):
        dyn.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv))
    Q = np.tile(dyn.neutral(model), (4, 1))
    Q[2] = q
    with pytest.raises(ValueError, match=r"^Q: at knot 2 the unit quaternion \(or planar cos, sin\) of joint number 0 "
                                         r"has a norm off 1; use dynamics\.normalize$"):
        dyn.batch.aba_batch(model, Q, np.zeros((4, model.nv)), np.zeros((4, model.nv)))
    with pytest.raises(ValueError, match=r"^q: the quaternion \(or planar cos, sin\) of joint number 0 is zero$"):
        dyn.normalize(model, np.zeros(model.nq))
    with pytest.raises(ValueError, match="root_joint"):
        dyn.load_urdf(dyn.models.ur5().source, root_joint="floating-base")
    with pytest.raises(ValueError, match="package_dirs"):
        dyn.load_urdf(dyn.models.ur5().source, package_dirs=["/nonexistent/dir"])
    with pytest.raises(ValueError, match="dv"):
        dyn.integrate(model, dyn.neutral(model), np.zeros(model.nv + 1))
    np.testing.assert_allclose(dyn.normalize(model, q)[3:7], [0, 0, 0, 1])


def _centre_of_mass(model, q) -> np.ndarray:
    """World CoM from the potential energy under unit gravities along x, y, z (kinematics only)."""
    mass = model.inertia[:, 0].sum()
    return np.array([dyn.potential_energy(model.with_gravity(-np.eye(3)[r]), q) / mass for r in range(3)])


def _simulate(model, q, v, T, h):
    """RK4 on the manifold (stages at q ⊕ h·a k) under sinusoidal arm torques, base unactuated."""
    def f(q, v, t):
        tau = np.zeros(model.nv)
        tau[6:] = 20.0 * np.sin(2 * np.pi * t + np.arange(6))
        return v, dyn.aba(model, q, v, tau)

    for k in range(int(round(T / h))):
        t = k * h
        k1 = f(q, v, t)
        k2 = f(dyn.integrate(model, q, 0.5 * h * k1[0]), v + 0.5 * h * k1[1], t + 0.5 * h)
        k3 = f(dyn.integrate(model, q, 0.5 * h * k2[0]), v + 0.5 * h * k2[1], t + 0.5 * h)
        k4 = f(dyn.integrate(model, q, h * k3[0]), v + h * k3[1], t + h)
        q = dyn.integrate(model, q, h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]))
        v = v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return q


def test_space_manipulator_base_reacts_while_the_centre_of_mass_stays_put():
    """The arm moves under its own torques, the base is unactuated: momentum is
    conserved, so started at rest the centre of mass must not move. The drift left is
    the integrator's: it falls with the step far faster than linearly."""
    model = dyn.models.space_manipulator()
    assert model.joint_types[0] == "free-flyer" and model.nv == 12 and np.all(model.gravity == 0)
    assert 100 <= model.inertia[0, 0] <= 500
    q0 = dyn.neutral(model)
    q0[7:] = [0.0, -1.0, 1.5, -0.5, 1.2, 0.0]
    c0 = _centre_of_mass(model, q0)
    drift = []
    for h in (0.02, 0.01):
        q = _simulate(model, q0, np.zeros(model.nv), 0.5, h)
        assert np.linalg.norm(q[:3] - q0[:3]) > 1e-3  # the base has moved in reaction
        drift.append(np.linalg.norm(_centre_of_mass(model, q) - c0))
    assert drift[1] < 1e-6 and drift[1] < drift[0] / 3, drift  # about h^2.5 for this stage scheme


def test_lie_jacobians_match_pinocchio_and_differences(mixed):
    model, pm, _ = mixed
    rng = np.random.default_rng(3)
    q0, q1 = dyn.random_configuration(model, rng), dyn.random_configuration(model, rng)
    for scale in (1e-6, 0.7):
        dv = scale * rng.normal(size=model.nv)
        Jq, Jv = dyn.integrate_jacobians(model, q0, dv)
        np.testing.assert_allclose(Jq, pin.dIntegrate(pm, q0, dv, pin.ArgumentPosition.ARG0), atol=1e-10)
        np.testing.assert_allclose(Jv, pin.dIntegrate(pm, q0, dv, pin.ArgumentPosition.ARG1), atol=1e-10)
        q = dyn.integrate(model, q0, dv)
        num_q = central(lambda e: dyn.difference(model, q, dyn.integrate(model, dyn.integrate(model, q0, e), dv)),
                        np.zeros(model.nv), 1e-6)
        num_v = central(lambda e: dyn.difference(model, q, dyn.integrate(model, q0, dv + e)), np.zeros(model.nv), 1e-6)
        np.testing.assert_allclose(Jq, num_q, atol=1e-8)
        np.testing.assert_allclose(Jv, num_v, atol=1e-8)
    J0, J1 = dyn.difference_jacobians(model, q0, q1)
    np.testing.assert_allclose(J0, pin.dDifference(pm, q0, q1, pin.ArgumentPosition.ARG0), atol=1e-9)
    np.testing.assert_allclose(J1, pin.dDifference(pm, q0, q1, pin.ArgumentPosition.ARG1), atol=1e-9)
    d = dyn.difference(model, q0, q1)
    num_1 = central(lambda e: dyn.difference(model, q0, dyn.integrate(model, q1, e)), np.zeros(model.nv), 1e-6)
    num_0 = central(lambda e: dyn.difference(model, dyn.integrate(model, q0, e), q1), np.zeros(model.nv), 1e-6)
    np.testing.assert_allclose(J1, num_1, atol=1e-7)
    np.testing.assert_allclose(J0, num_0, atol=1e-7)
    assert np.linalg.norm(d) > 0.5
