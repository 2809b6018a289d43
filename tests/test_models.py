"""Built-in models: published UR5 parameters, random families, pendulums."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import dynamics as dyn
from dynamics.model import PARENT, SUBTREE_END, spatial_inertia_is_valid

UR5_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
              "wrist_3_joint")
UR5_FRAMES = {"world", "base_link", "base", "shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link",
              "wrist_2_link", "wrist_3_link", "ee_link", "tool0"}


def cylinder_inertia(m, r, l):
    """Diagonal inertia of ur_description's "cylinder_inertial" macro (factor 0.0833333 as published)."""
    side = 0.0833333 * m * (3 * r * r + l * l)
    return np.diag([side, side, 0.5 * m * r * r])


def test_ur5_structure_and_published_parameters(ur5):
    assert ur5.name == "ur5" and ur5.nq == ur5.nv == 6
    assert ur5.joint_names == UR5_JOINTS
    assert set(ur5.frame_names) == UR5_FRAMES
    np.testing.assert_array_equal(ur5.parent, [-1, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ur5.inertia[:, 0], [3.7, 8.393, 2.275, 1.219, 1.219, 0.1879])
    np.testing.assert_array_equal(ur5.inertia[:, 1:4], [[0, 0, 0], [0, 0, 0.28], [0, 0, 0.25], [0, 0, 0], [0, 0, 0],
                                                        [0, 0, 0]])
    # cylinder approximations (radius, length) of ur5.urdf.xacro
    for i, (r, l) in enumerate([(0.06, 0.15), (0.06, 0.56), (0.06, 0.5), (0.6, 0.12), (0.6, 0.12), (0.6, 0.12)]):
        np.testing.assert_allclose(ur5.inertia[i, 4:].reshape(3, 3), cylinder_inertia(ur5.inertia[i, 0], r, l),
                                   rtol=1e-10, atol=0)
    np.testing.assert_allclose(ur5.upper_limit, [2 * np.pi, 2 * np.pi, np.pi, 2 * np.pi, 2 * np.pi, 2 * np.pi],
                               rtol=1e-11)
    np.testing.assert_array_equal(ur5.lower_limit, -ur5.upper_limit)
    np.testing.assert_array_equal(ur5.effort_limit, [150, 150, 150, 28, 28, 28])
    np.testing.assert_array_equal(ur5.velocity_limit, [3.15, 3.15, 3.15, 3.2, 3.2, 3.2])
    assert ur5.visuals and all(g.kind in ("box", "cylinder", "sphere") and g.rgba is not None for g in ur5.visuals)
    assert {g.frame for g in ur5.visuals} >= {"base_link", "shoulder_link", "upper_arm_link", "forearm_link",
                                             "wrist_1_link", "wrist_2_link", "wrist_3_link"}


def ur5_dh_tool0(q):
    """Pose of tool0 in the UR 'base' frame from the UR5 DH table (urcontrol.conf)."""
    a = [0.0, -0.425, -0.39225, 0.0, 0.0, 0.0]
    d = [0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823]
    alpha = [np.pi / 2, 0.0, 0.0, np.pi / 2, -np.pi / 2, 0.0]
    T = np.eye(4)
    for th, ai, di, al in zip(q, a, d, alpha):
        ct, st, ca, sa = np.cos(th), np.sin(th), np.cos(al), np.sin(al)
        T = T @ np.array([[ct, -st * ca, st * sa, ai * ct], [st, ct * ca, -ct * sa, ai * st],
                          [0, sa, ca, di], [0, 0, 0, 1]])
    return T


@pytest.mark.parametrize("seed", range(4))
def test_ur5_kinematics_match_the_dh_table(ur5, seed):
    q = np.zeros(6) if seed == 0 else np.random.default_rng(seed).uniform(-np.pi, np.pi, 6)
    Rb, pb = dyn.frame_placement(ur5, q, "base")
    Rt, pt = dyn.frame_placement(ur5, q, "tool0")
    T = ur5_dh_tool0(q)
    np.testing.assert_allclose(Rb.T @ (pt - pb), T[:3, 3], atol=1e-9)
    np.testing.assert_allclose(Rb.T @ Rt, T[:3, :3], atol=1e-9)


def test_ur5_zero_pose(ur5):
    _, p = dyn.frame_placement(ur5, np.zeros(6), "tool0")
    np.testing.assert_allclose(p, [0.81725, 0.19145, -0.005491], atol=1e-9)


def test_ur5_returns_fresh_models():
    a, b = dyn.models.ur5(), dyn.models.ur5()
    assert a is not b and a.topology is not b.topology
    np.testing.assert_array_equal(b.gravity, [0, 0, -9.81])


def test_models_are_immutable():
    """Pinocchio's Model: read-only arrays, gravity fixed when built; with_gravity copies."""
    model = dyn.models.ur5()
    for name in ("topology", "joint_placement", "axis", "inertia", "gravity", "lower_limit", "effort_limit"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(model, name)[0] = 0
    for record, field in zip(model.arrays, ("topology", "joint_placement", "axis", "inertia", "gravity", "armature")):
        assert record is getattr(model, field) and not record.flags.writeable
    with pytest.raises(AttributeError):
        model.gravity = (0.0, 0.0, 0.0)
    q = np.array([0.1, -1.2, 1.5, -0.3, 1.57, 0.2])
    tau = dyn.gravity_torques(model, q)
    moon = model.with_gravity((0.0, 0.0, -1.62))
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(dyn.gravity_torques(model, q), tau)
    np.testing.assert_allclose(dyn.gravity_torques(moon, q), tau * 1.62 / 9.81, rtol=1e-12, atol=1e-12)
    assert moon.joint_names == model.joint_names and not moon.gravity.flags.writeable
    np.testing.assert_array_equal(dyn.models.ur5(gravity=(0.0, 0.0, -1.62)).gravity, moon.gravity)
    for bad in ((0.0, 0.0), (0.0, np.nan, 1.0), "down"):
        with pytest.raises(ValueError, match="gravity"):
            model.with_gravity(bad)
        with pytest.raises(ValueError, match="gravity"):
            dyn.load_urdf(model.source, gravity=bad)
    builder = dyn.ModelBuilder("bar")
    builder.add_link("base")
    with pytest.raises(ValueError, match="gravity"):
        builder.build(gravity=[1.0, 2.0, np.inf])


def test_with_armature_copies_the_model_with_rotor_inertias_on_the_diagonal_of_m():
    """Pinocchio's model.armature: M + diag(armature), τ + armature ⊙ q̈; the model it is
    taken from is unchanged; a free-flyer's entries (no rotor drives them), negative, NaN or
    misshapen values are refused naming ``armature``."""
    model = dyn.models.ur5()
    armature = np.linspace(0.3, 0.05, 6)
    armed = model.with_armature(armature)
    rng = np.random.default_rng(0)
    q, v, a = rng.uniform(-2, 2, 6), rng.normal(size=6), rng.normal(size=6)
    np.testing.assert_allclose(dyn.crba(armed, q), dyn.crba(model, q) + np.diag(armature), rtol=0, atol=1e-14)
    np.testing.assert_allclose(dyn.rnea(armed, q, v, a), dyn.rnea(model, q, v, a) + armature * a, rtol=0, atol=1e-13)
    assert not model.armature.any() and not armed.armature.flags.writeable
    np.testing.assert_array_equal(armed.armature, armature)
    floating = dyn.load_urdf(model.source, root_joint="free-flyer")
    for bad in (np.ones(5), -armature, np.r_[np.nan, armature[1:]], "heavy", [[0.1] * 6]):
        with pytest.raises(ValueError, match="^armature: expected 6 finite numbers ≥ 0"):
            model.with_armature(bad)
    with pytest.raises(ValueError, match="^armature: expected zeros on a free-flyer's velocity entries"):
        floating.with_armature(np.r_[0.1, np.zeros(5), armature])
    with pytest.raises(ValueError, match=r"^armature: expected shape \(6,\), one per velocity entry"):
        dyn.Model(**{**{f.name: getattr(model, f.name) for f in dataclasses.fields(model)}, "armature": np.ones(5)})


def test_with_frame_adds_a_frame_where_pinocchio_adds_it():
    """Pinocchio's addFrame: a tool centre point 10 cm along and turned about tool0's z, a
    sole 5 cm below a link given as a position; its placement and Jacobian are Pinocchio's, it
    takes a contact; the model it is taken from is unchanged; bad names and placements are
    refused naming the argument."""
    pin = pytest.importorskip("pinocchio")
    model = dyn.load_urdf(dyn.models.ur5().source)
    c, s = np.cos(0.4), np.sin(0.4)
    T = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0.1], [0, 0, 0, 1.0]])
    tcp = model.with_frame("tcp", "tool0", T).with_frame("under", "forearm_link", (0.0, 0.0, -0.05))
    assert "tcp" not in model.frame_names and tcp.frame_names[-2:] == ("tcp", "under")
    pm = pin.buildModelFromUrdf(model.source)
    for name, parent, M in (("tcp", "tool0", T), ("under", "forearm_link", dyn.model.transform(p=(0, 0, -0.05)))):
        f = pm.frames[pm.getFrameId(parent)]
        pm.addFrame(pin.Frame(name, f.parentJoint, pm.getFrameId(parent), f.placement * pin.SE3(M), pin.FrameType.OP_FRAME))
    pd, q = pm.createData(), np.array([0.1, -1.2, 1.5, -0.3, 1.57, 0.2])
    pin.computeJointJacobians(pm, pd, q)
    pin.framesForwardKinematics(pm, pd, q)
    for name in ("tcp", "under"):
        R, p = dyn.frame_placement(tcp, q, name)
        ref = pd.oMf[pm.getFrameId(name)]
        np.testing.assert_allclose(R, ref.rotation, atol=1e-12)
        np.testing.assert_allclose(p, ref.translation, atol=1e-12)
        J = pin.getFrameJacobian(pm, pd, pm.getFrameId(name), pin.LOCAL_WORLD_ALIGNED)
        np.testing.assert_allclose(dyn.frame_jacobian(tcp, q, name), J, atol=1e-12)
    qdd, lam = dyn.contact_dynamics(tcp, q, np.zeros(6), np.zeros(6), [dyn.Contact("tcp")])
    assert lam.shape == (3,) and np.all(np.isfinite(qdd))
    with pytest.raises(ValueError, match="^name: model 'ur5' already has a frame 'tool0'"):
        model.with_frame("tool0", "ee_link")
    with pytest.raises(ValueError, match="^parent: model 'ur5' has no frame 'nose'; known frames: world, base_link"):
        model.with_frame("tip", "nose")
    for bad in ((0, 0), np.eye(4) * 2, np.full(3, np.nan), "up"):
        with pytest.raises(ValueError, match="^placement: expected a position"):
            model.with_frame("tip", "tool0", bad)


def check_tree_layout(model):
    n = model.nv
    parent, end = model.topology[:, PARENT], model.topology[:, SUBTREE_END]
    for i in range(n):
        assert parent[i] < i
        # ν(i) = i..end-1 is contiguous: exactly the bodies whose support contains i
        subtree = [k for k in range(n) if i in model.support(k)]
        assert subtree == list(range(i, end[i]))


@pytest.mark.parametrize("family", ["serial_chain", "binary_tree"])
@pytest.mark.parametrize("n", [1, 2, 15, 60])
def test_random_families_are_valid_depth_first_trees(family, n):
    model = getattr(dyn.models, family)(n, seed=n)
    assert model.nv == n
    check_tree_layout(model)
    for i in range(n):
        m, I = model.inertia[i, 0], model.inertia[i, 4:].reshape(3, 3)
        assert 0.5 <= m <= 3.0
        assert spatial_inertia_is_valid(m, I) == ("", "")
        assert np.linalg.eigvalsh(I)[0] > 0
        assert 0.1 - 1e-12 <= np.linalg.norm(model.joint_placement[i, :3, 3]) <= 0.5 + 1e-12
    np.testing.assert_allclose(np.linalg.norm(model.axis, axis=1), 1.0, rtol=1e-14)
    q = np.random.default_rng(0).uniform(-1, 1, n)
    M = dyn.crba(model, q)
    assert np.linalg.cond(M) < 1e8
    tau = np.random.default_rng(1).normal(size=n)
    assert np.max(np.abs(dyn.rnea(model, q, q, dyn.aba(model, q, q, tau)) - tau)) < 1e-9


def test_serial_chain_is_a_chain_of_mixed_joints():
    model = dyn.models.serial_chain(30, seed=1)
    np.testing.assert_array_equal(model.parent, np.arange(30) - 1)
    assert model.joint_names == tuple(f"joint{i}" for i in range(1, 31))
    assert set(model.topology[:, 1]) == {0, 1}  # revolute and prismatic


def test_binary_tree_is_breadth_first_by_name_and_depth_first_by_index():
    n = 15
    model = dyn.models.binary_tree(n, seed=2)
    by_name = {name: i for i, name in enumerate(model.joint_names)}
    for b in range(1, n):  # body b (joint b+1) hangs from body (b-1)//2
        assert model.parent[by_name[f"joint{b + 1}"]] == by_name[f"joint{(b - 1) // 2 + 1}"]
    assert model.joint_names[:4] == ("joint1", "joint2", "joint4", "joint8")
    check_tree_layout(model)


@pytest.mark.parametrize("family", ["serial_chain", "binary_tree"])
def test_random_families_are_seeded(family):
    make = getattr(dyn.models, family)
    a, b, c = make(10, seed=3), make(10, seed=3), make(10, seed=4)
    for attr in ("topology", "joint_placement", "axis", "inertia"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    assert not np.array_equal(a.inertia, c.inertia)


@pytest.mark.parametrize("n", [0, -3, 2.5, "7", True, None])
def test_random_families_reject_bad_sizes(n):
    for make in (dyn.models.serial_chain, dyn.models.binary_tree):
        with pytest.raises(ValueError, match="n: expected a positive integer"):
            make(n)


def test_pendulum_models():
    dp = dyn.models.double_pendulum(1.0, 2.0, 0.5, 0.8)
    assert dp.joint_names == ("joint1", "joint2")
    assert {"base", "link1", "link2", "tip"} <= set(dp.frame_names)
    np.testing.assert_array_equal(dp.inertia[:, :4], [[1, 0, 0, -0.5], [2, 0, 0, -0.8]])
    np.testing.assert_array_equal(dp.inertia[:, 4:], 0)
    np.testing.assert_array_equal(dp.axis, [[0, 1, 0], [0, 1, 0]])
    assert dyn.models.pendulum().nv == 1
    # at rest hanging down is an equilibrium
    np.testing.assert_array_equal(dyn.gravity_torques(dp, np.zeros(2)), 0)


@pytest.mark.parametrize("kwargs, name", [({"m1": 0.0}, "m1"), ({"l2": -1.0}, "l2"), ({"m2": np.nan}, "m2"),
                                          ({"l1": "1"}, "l1")])
def test_double_pendulum_rejects_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}: expected a positive"):
        dyn.models.double_pendulum(**kwargs)
    with pytest.raises(ValueError, match=r"^l: expected a positive"):
        dyn.models.pendulum(l=0.0)


def test_an_unpickled_model_and_the_records_holding_its_arrays_are_read_only():
    """numpy's pickles drop the read-only flag; the model's arrays, and the records of it a
    pickled problem holds, come back read-only: the kernels see the types they were
    compiled for (a second specialisation for writable arrays otherwise)."""
    import pickle

    import numba

    import problems

    prob = problems.get("ur5-reach")
    back = pickle.loads(pickle.dumps(prob))
    assert all(not a.flags.writeable for a in back.model.arrays)
    assert numba.typeof(back.dynamics) == numba.typeof(prob.dynamics)
    assert not back.model.gravity.flags.writeable and not back.model.lower_limit.flags.writeable
