"""Pinocchio's joint order on every robot of example-robot-data that both libraries load,
on a fixed base and on a free-flyer: the same joint names in the same order, the same nv
and velocity offsets, and q, v, τ passed across unchanged give the same link placements,
inverse and forward dynamics as Pinocchio 4's own model of the same URDF."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import dynamics as dyn

pin = pytest.importorskip("pinocchio")

from erd_robots import FILES, NOT_PINOCCHIO, REFUSED, ROBOTS, SHARE, WARNED  # noqa: E402

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
