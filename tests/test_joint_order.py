"""Pinocchio's joint order on every robot of example-robot-data that both libraries load,
on a fixed base and on a free-flyer: the same joint names in the same order, the same nv
and velocity offsets, and q, v, τ passed across unchanged give the same link placements,
inverse and forward dynamics as Pinocchio 4's own model of the same URDF."""
from __future__ import annotations

import glob
import os
import warnings

import numpy as np
import pytest

import dynamics as dyn

pin = pytest.importorskip("pinocchio")
erd = pytest.importorskip("example_robot_data")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    ROBOTS = erd.getModelPath("solo_description/robots/solo12.urdf")
SHARE = os.path.dirname(os.path.dirname(ROBOTS))
FILES = sorted(os.path.relpath(f, ROBOTS) for f in glob.glob(os.path.join(ROBOTS, "**", "*.urdf"), recursive=True))

NOT_PINOCCHIO = {"falcon_description/urdf/falcon.urdf", "ur_description/urdf/ur3.urdf"}
"""URDFs Pinocchio's parser (urdfdom) refuses: a joint naming an undefined link, a robot without name."""

REFUSED = {"romeo_description/urdf/romeo_laas_small.urdf": "LHipPitch_link.*positive semi-definite"}
"""URDFs our loader refuses (Pinocchio loads them): an indefinite inertia (−0.0027 kg·m² among
moments of 0.04–0.054), which can make the joint-space inertia matrix indefinite."""

WARNED = {
    "alex_description/urdf/alex_psyonic_hands.urdf": "LeftPsyonicAbilityBaseLink.*triangle inequality",
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "link_3.0.*triangle inequality",
    "allegro_hand_description/urdf/allegro_right_hand.urdf": "link_3.0.*triangle inequality",
    "pr2_description/urdf/pr2.urdf": "sensor_mount_link.*triangle inequality",
    "romeo_description/urdf/romeo_small.urdf": "RShoulderYawLink.*triangle inequality.*strict_inertia=True",
    "talos_data/robots/talos_reduced_corrected.urdf": "material 'FlatBlack' has no <color>",
}
"""URDFs that load with a warning naming why, as Pinocchio loads them: inertias no mass
distribution has (on a body of its own, the Romeo's shoulder, MuJoCo and Drake refuse them, and
so does ``strict_inertia=True``; the others are links fused into bodies that are physical as a
whole), a material never defined. They are in :data:`CASES` too, as are iCub (a point mass written with a 1e-20
off the diagonal) and ANYmal C on a free-flyer (its cameras' inertias, not physical, ride on a
base that is)."""

CASES = [(f, root) for f in FILES if f not in NOT_PINOCCHIO and f not in REFUSED for root in (None, "free-flyer")]


def load_both(relative: str, root: str | None):
    """(our model, Pinocchio's model) of example-robot-data's URDF ``relative`` on ``root``."""
    path = os.path.join(ROBOTS, relative)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dummy inertias within tolerance, meshes
        model = dyn.load_urdf(path, root_joint=root, package_dirs=[SHARE])
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if root else pin.buildModelFromUrdf(path)
    return model, pm


def pinocchio_configuration(model: dyn.Model, pm, q: np.ndarray) -> np.ndarray:
    """``q`` itself, where every joint has the same configuration size in both libraries;
    a continuous joint's angle θ is (cos θ, sin θ) in Pinocchio (its RevoluteUnbounded)."""
    if pm.nq == model.nq:
        np.testing.assert_array_equal(model.idx_qs, list(pm.idx_qs)[1:])
        return q
    blocks = []
    for i in range(model.njoints):
        k, n = model.idx_qs[i], model.nqs[i]
        unbounded = pm.nqs[i + 1] == 2 and n == 1
        blocks.append([np.cos(q[k]), np.sin(q[k])] if unbounded else q[k: k + n])
    return np.concatenate(blocks)


@pytest.mark.parametrize("relative, root", CASES, ids=[f"{os.path.basename(f)}-{r or 'fixed'}" for f, r in CASES])
def test_joint_order_and_dynamics_are_pinocchios(relative, root):
    model, pm = load_both(relative, root)
    assert model.joint_names == tuple(pm.names)[1:]
    continuous = sum(1 for j in range(1, pm.njoints) if pm.nqs[j] == 2 and pm.nvs[j] == 1)
    assert (model.nq + continuous, model.nv) == (pm.nq, pm.nv)
    np.testing.assert_array_equal(model.idx_vs, list(pm.idx_vs)[1:])
    pd = pm.createData()
    rng = np.random.default_rng(len(relative))
    q, v, a = dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp = pinocchio_configuration(model, pm, q)
    tau = pin.rnea(pm, pd, qp, v, a)
    scale = np.abs(tau).max(initial=1.0)
    np.testing.assert_allclose(dyn.rnea(model, q, v, a), tau, rtol=0, atol=1e-9 * scale)
    if np.linalg.eigvalsh(dyn.crba(model, q)).min(initial=1.0) > 1e-12:
        np.testing.assert_allclose(dyn.aba(model, q, v, tau), pin.aba(pm, pd, qp, v, tau), rtol=0,
                                   atol=1e-7 * np.abs(a).max(initial=1.0))
    else:  # massless leaves (grippers' jaws): M is singular, and forward dynamics is refused
        with pytest.raises(ValueError, match="not positive definite"):
            dyn.aba(model, q, v, tau)
    pin.framesForwardKinematics(pm, pd, qp)
    for name in model.body_names:
        R, p = dyn.frame_placement(model, q, name)
        ref = pd.oMf[pm.getFrameId(name, pin.FrameType.BODY)]
        np.testing.assert_allclose(R, ref.rotation, rtol=0, atol=1e-10, err_msg=name)
        np.testing.assert_allclose(p, ref.translation, rtol=0, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("relative", sorted(REFUSED))
def test_the_robots_left_out_are_refused_naming_why(relative):
    with pytest.raises(ValueError, match=REFUSED[relative]):
        load_both(relative, None)


@pytest.mark.parametrize("relative", sorted(WARNED))
def test_the_robots_pinocchio_loads_as_they_are_load_with_a_warning_naming_why(relative):
    path = os.path.join(ROBOTS, relative)
    with pytest.warns(UserWarning, match=WARNED[relative]):
        dyn.load_urdf(path, package_dirs=[SHARE])
    if "strict_inertia" in WARNED[relative]:
        with pytest.raises(ValueError, match=WARNED[relative].split(".*strict")[0]):
            dyn.load_urdf(path, package_dirs=[SHARE], strict_inertia=True)


def test_anymal_c_on_a_free_flyer_loads_its_cameras_with_a_warning():
    with pytest.warns(UserWarning, match="depth_camera_front_camera.*physical as a whole"):
        dyn.load_urdf(os.path.join(ROBOTS, "anymal_c_simple_description/urdf/anymal.urdf"), root_joint="free-flyer",
                      package_dirs=[SHARE])


def test_siblings_are_ordered_by_joint_name_through_fixed_joints_whatever_the_file_order():
    """At every link its child joints go by name, fixed ones included (a fixed joint's
    subtree comes where its name sorts): the order of Pinocchio, not of the file."""
    link = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>' \
           '</inertial></link>'
    joint = '<joint name="{0}" type="{1}"><parent link="{2}"/><child link="{3}"/><axis xyz="0 0 1"/>' \
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
    tree = [("rh", "revolute", "base", "a"), ("lh", "revolute", "base", "b"), ("m_fixed", "fixed", "base", "c"),
            ("Z", "revolute", "c", "d"), ("lf", "revolute", "base", "e"), ("lf_knee", "revolute", "e", "f"),
            ("LF", "revolute", "base", "g")]
    xml = '<robot name="r">' + "".join(link.format(n) for n in ("base", *"abcdefg")) \
        + "".join(joint.format(*j) for j in tree) + "</robot>"
    model = dyn.load_urdf(xml)
    assert model.joint_names == ("LF", "lf", "lf_knee", "lh", "Z", "rh")
    assert model.joint_names == tuple(pin.buildModelFromXML(xml).names)[1:]
