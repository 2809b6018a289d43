"""``load_urdf(..., locked_joints=...)``: joints frozen at a value load as fixed joints, and
the reduced model is Pinocchio's ``buildReducedModel`` of the full one (joint-space inertia,
inverse dynamics and every link's placement at random states); bad input names the argument."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamics as dyn
from test_floating_base import _permutations, _robot_path

pin = pytest.importorskip("pinocchio")

CHAIN = """<robot name="chain"><link name="base"/>
<link name="a"><inertial><mass value="1.2"/><origin xyz="0.1 0.02 -0.03"/>
  <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.025"/></inertial></link>
<link name="b"><inertial><mass value="0.8"/><origin xyz="0 0.15 0.01" rpy="0.1 0.2 0.3"/>
  <inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.009"/></inertial></link>
<link name="c"><inertial><mass value="0.5"/><origin xyz="0.05 0 0.1"/>
  <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.005" iyz="0" izz="0.006"/></inertial></link>
<link name="d"><inertial><mass value="0.3"/><origin xyz="0 0 0.08"/>
  <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
<link name="tip"/>
<joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
  <limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
<joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0.1" rpy="0.3 -0.2 0.1"/>
  <axis xyz="0.6 0 0.8"/><limit lower="-0.5" upper="0.5" effort="10" velocity="1"/></joint>
<joint name="j3" type="continuous"><parent link="b"/><child link="c"/><origin xyz="0 0.3 0" rpy="0 0.4 0"/>
  <axis xyz="1 1 0"/></joint>
<joint name="j4" type="revolute"><parent link="c"/><child link="d"/><origin xyz="0.1 0 0.2"/><axis xyz="0 1 0"/>
  <limit lower="-2" upper="2" effort="10" velocity="2"/></joint>
<joint name="j5" type="fixed"><parent link="d"/><child link="tip"/><origin xyz="0 0 0.1" rpy="0.2 0 0"/></joint>
</robot>"""

UPPER_BODY = {"torso_1_joint": 0.0, "torso_2_joint": 0.006761, "arm_left_1_joint": 0.25847,
              "arm_left_2_joint": 0.173046, "arm_left_3_joint": -0.0002, "arm_left_4_joint": -0.525366,
              "arm_left_5_joint": 0.0, "arm_left_6_joint": 0.0, "arm_left_7_joint": 0.1,
              "arm_right_1_joint": -0.25847, "arm_right_2_joint": -0.173046, "arm_right_3_joint": 0.0002,
              "arm_right_4_joint": -0.525366, "arm_right_5_joint": 0.0, "arm_right_6_joint": 0.0,
              "arm_right_7_joint": 0.1, "head_1_joint": 0.0, "head_2_joint": 0.0, "gripper_left_joint": 0.0,
              "gripper_right_joint": 0.0}
"""Talos' torso, arms, grippers and head at the SRDF's half_sitting posture (the grippers at 0)."""


def _pinocchio_reduced(pm, locked: dict):
    """Pinocchio's reduced model of ``pm`` with ``locked`` ({name: value}) frozen."""
    q = pin.neutral(pm)
    for name, value in locked.items():
        j = pm.getJointId(name)
        if pm.nqs[j] == 2:  # a continuous joint: (cos, sin)
            q[pm.idx_qs[j]: pm.idx_qs[j] + 2] = np.cos(value), np.sin(value)
        else:
            q[pm.idx_qs[j]] = value
    return pin.buildReducedModel(pm, [pm.getJointId(n) for n in locked], q)


def _assert_matches(model, pm, seeds=(0, 1)):
    """M(q), RNEA(q, v, a) and every link frame's placement agree with Pinocchio's."""
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    pd = pm.createData()
    qmap, vmap = _permutations(model, pm)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        q, v, a = dyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp, vp, ap = np.empty(pm.nq), np.empty(pm.nv), np.empty(pm.nv)
        qp[qmap], vp[vmap], ap[vmap] = q, v, a
        np.testing.assert_allclose(dyn.rnea(model, q, v, a), pin.rnea(pm, pd, qp, vp, ap)[vmap], rtol=1e-9, atol=1e-9)
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(dyn.crba(model, q), M[np.ix_(vmap, vmap)], rtol=1e-9, atol=1e-9)
        pin.framesForwardKinematics(pm, pd, qp)
        for f in model.frame_names:
            R, p = dyn.frame_placement(model, q, f)
            ref = pd.oMf[pm.getFrameId(f, pin.FrameType.BODY)]
            np.testing.assert_allclose(R, ref.rotation, atol=1e-12, err_msg=f)
            np.testing.assert_allclose(p, ref.translation, atol=1e-12, err_msg=f)


@pytest.mark.parametrize("locked", [{"j3": 0.5, "j2": 0.3}, {"j1": 0.7, "j3": -1.1}, {"j3": 2.0, "j4": -0.4, "j2": -0.2}])
def test_locking_revolute_prismatic_and_continuous_joints_is_pinocchios_reduced_model(locked):
    """(j3, continuous, is locked each time: Pinocchio's q of a free one is (cos, sin), ours the angle.)"""
    model = dyn.load_urdf(CHAIN, locked_joints=locked)
    assert set(model.joint_names) == {"j1", "j2", "j3", "j4"} - set(locked)
    assert set(model.frame_names) == {"base", "a", "b", "c", "d", "tip"}
    _assert_matches(model, _pinocchio_reduced(pin.buildModelFromXML(CHAIN), locked))


def test_talos_legs_are_talos_with_its_upper_body_locked_at_half_sitting():
    urdf, _ = _robot_path("talos")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes not resolved: irrelevant here
        model = dyn.load_urdf(urdf, root_joint="free-flyer", locked_joints=UPPER_BODY)
    assert (model.nq, model.nv) == (19, 18)
    assert [n for n in model.joint_names if not n.startswith("leg_")] == ["root_joint"]
    pm = _pinocchio_reduced(pin.buildModelFromUrdf(urdf, pin.JointModelFreeFlyer()), UPPER_BODY)
    _assert_matches(model, pm, seeds=(0,))


@pytest.mark.parametrize("locked, match", [
    ({"j9": 0.1}, r"^locked_joints: no joint named 'j9'"),
    ({"j5": 0.1}, r"^locked_joints: joint 'j5' is fixed; only revolute"),
    ({"j1": np.nan}, r"^locked_joints: joint 'j1' needs a finite number"),
    ({"j1": "0.3"}, r"^locked_joints: joint 'j1' needs a finite number"),
    ({"j1": True}, r"^locked_joints: joint 'j1' needs a finite number"),
    (["j1"], r"^locked_joints: expected a mapping"),
])
def test_bad_locked_joints_are_refused_naming_the_argument(locked, match):
    with pytest.raises(ValueError, match=match):
        dyn.load_urdf(CHAIN, locked_joints=locked)
