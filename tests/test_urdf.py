"""URDF loading: specification defaults, fixed-joint merging, geometry, errors, and a
Pinocchio oracle for the dynamics of loaded models."""
from __future__ import annotations

import pathlib
import warnings

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import dynamics as dyn
from conftest import make_model, random_state
from dynamics.model import rpy_matrix, transform
from dynamics.urdf import load_urdf

UR5_PATH = pathlib.Path(dyn.models.__file__).with_name("ur5.urdf")


def fmt(x) -> str:
    return " ".join(format(float(e), ".17g") for e in np.atleast_1d(x))


def rpy_of(R: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw with R = Rz(y) Ry(p) Rx(r) (scipy's extrinsic xyz angles)."""
    return Rotation.from_matrix(R).as_euler("xyz")


def model_to_urdf(model: dyn.Model) -> str:
    """URDF text of a model without fixed joints (bodies = links, names kept)."""
    parts = [f'<robot name="{model.name}">', '<link name="base"/>']
    for i, (joint, link) in enumerate(zip(model.joint_names, model.body_names)):
        m, c, I = model.inertia[i, 0], model.inertia[i, 1:4], model.inertia[i, 4:].reshape(3, 3)
        parts.append(
            f'<link name="{link}"><inertial><mass value="{fmt(m)}"/><origin xyz="{fmt(c)}"/>'
            f'<inertia ixx="{fmt(I[0, 0])}" ixy="{fmt(I[0, 1])}" ixz="{fmt(I[0, 2])}" iyy="{fmt(I[1, 1])}" '
            f'iyz="{fmt(I[1, 2])}" izz="{fmt(I[2, 2])}"/></inertial></link>'
        )
        lam = model.parent[i]
        T = model.joint_placement[i]
        kind = "revolute" if model.topology[i, 1] == 0 else "prismatic"
        parts.append(
            f'<joint name="{joint}" type="{kind}"><parent link="{"base" if lam < 0 else model.body_names[lam]}"/>'
            f'<child link="{link}"/><origin xyz="{fmt(T[:3, 3])}" rpy="{fmt(rpy_of(T[:3, :3]))}"/>'
            f'<axis xyz="{fmt(model.axis[i])}"/><limit lower="{fmt(model.lower_limit[i])}" '
            f'upper="{fmt(model.upper_limit[i])}" velocity="10" effort="100"/></joint>'
        )
    return "\n".join(parts + ["</robot>"])


# ---------------------------------------------------------------- rpy and loading forms


@pytest.mark.parametrize("rpy", [(0.3, -0.5, 0.7), (-2.0, 1.2, 3.0), (0.0, np.pi / 2, 0.0)])
def test_rpy_matrix_is_fixed_axis_xyz(rpy):
    np.testing.assert_allclose(rpy_matrix(*rpy), Rotation.from_euler("xyz", rpy).as_matrix(), atol=1e-15)


def test_path_string_pathlike_and_xml_string_give_the_same_model():
    text = UR5_PATH.read_text()
    models = [load_urdf(UR5_PATH), load_urdf(str(UR5_PATH)), load_urdf(text), load_urdf("\n  " + text)]
    for m in models[1:]:
        assert m.joint_names == models[0].joint_names
        for attr in ("topology", "joint_placement", "axis", "inertia"):
            np.testing.assert_array_equal(getattr(m, attr), getattr(models[0], attr))


@pytest.mark.parametrize("spec", [("serial_chain", 7, 1), ("binary_tree", 15, 3), ("binary_tree", 12, 5)])
def test_model_written_to_urdf_loads_back_identically(spec):
    model = make_model(*spec)
    loaded = load_urdf(model_to_urdf(model))
    assert loaded.joint_names == model.joint_names
    np.testing.assert_array_equal(loaded.topology, model.topology)
    np.testing.assert_allclose(loaded.joint_placement, model.joint_placement, rtol=0, atol=1e-14)
    np.testing.assert_allclose(loaded.axis, model.axis, rtol=0, atol=1e-15)
    np.testing.assert_allclose(loaded.inertia, model.inertia, rtol=1e-15, atol=1e-16)


# ---------------------------------------------------------------- fixed joints, rotated inertial frames

HAND_URDF = """
<robot name="hand">
  <material name="steel"><color rgba="0.5 0.5 0.55 1"/></material>
  <link name="base">
    <inertial><mass value="9"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>
  </link>
  <joint name="plate_joint" type="fixed">
    <parent link="base"/><child link="plate"/><origin xyz="0 0 0.05"/>
  </joint>
  <link name="plate">
    <inertial><mass value="3"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <visual><geometry><box size="0.3 0.3 0.02"/></geometry><material name="steel"/></visual>
  </link>
  <joint name="j1" type="revolute">
    <parent link="plate"/><child link="l1"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.5 0.7"/>
    <axis xyz="0 3 4"/>
    <limit lower="-2" upper="2.5" effort="40" velocity="5"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0.05 -0.02 0.1" rpy="0.4 0.1 -0.2"/>
      <mass value="2"/>
      <inertia ixx="0.03" ixy="0.002" ixz="-0.001" iyy="0.04" iyz="0.003" izz="0.05"/>
    </inertial>
  </link>
  <joint name="l1_extra_joint" type="fixed">
    <parent link="l1"/><child link="l1_extra"/>
    <origin xyz="0.2 0 0" rpy="0 0.5 0"/>
  </joint>
  <link name="l1_extra">
    <inertial>
      <origin xyz="0 0.1 0" rpy="-0.3 0.2 1.1"/>
      <mass value="0.7"/>
      <inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.02" iyz="0" izz="0.015"/>
    </inertial>
  </link>
  <joint name="j2" type="prismatic">
    <parent link="l1_extra"/><child link="l2"/>
    <origin xyz="0 0 0.25" rpy="1.0 0 -0.4"/>
    <limit lower="-0.3" upper="0.3" effort="100" velocity="1"/>
  </joint>
  <link name="l2">
    <inertial>
      <origin xyz="0.02 0.03 -0.05" rpy="0.2 0.3 0.4"/>
      <mass value="1.5"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.025" iyz="0.002" izz="0.03"/>
    </inertial>
  </link>
  <joint name="j3" type="continuous">
    <parent link="l1"/><child link="l3"/>
    <origin xyz="-0.1 0.15 0" rpy="0 0 1.2"/>
    <axis xyz="0 0 1"/>
  </joint>
  <link name="l3">
    <inertial>
      <mass value="0.9"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.004"/>
    </inertial>
  </link>
</robot>
"""


def rot(r, p, y):
    return Rotation.from_euler("xyz", [r, p, y]).as_matrix()


def hom(rpy=(0, 0, 0), xyz=(0, 0, 0)):
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = rot(*rpy), xyz
    return T


def inertia_matrix(ixx, ixy, ixz, iyy, iyz, izz):
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def hand_model_built_directly() -> dyn.Model:
    """HAND_URDF without fixed joints: l1 and l1_extra merged by hand (parallel axes)."""
    T_plate = hom(xyz=(0, 0, 0.05))
    T_extra = hom((0, 0.5, 0), (0.2, 0, 0))
    # l1's own inertial frame and l1_extra's, expressed in the l1 frame.
    parts = [(2.0, hom((0.4, 0.1, -0.2), (0.05, -0.02, 0.1)), inertia_matrix(0.03, 0.002, -0.001, 0.04, 0.003, 0.05)),
             (0.7, T_extra @ hom((-0.3, 0.2, 1.1), (0, 0.1, 0)), inertia_matrix(0.01, 0, 0.001, 0.02, 0, 0.015))]
    m = sum(p[0] for p in parts)
    c = sum(mk * Tk[:3, 3] for mk, Tk, _ in parts) / m
    I = np.zeros((3, 3))
    for mk, Tk, Ik in parts:
        d = Tk[:3, 3] - c
        I += Tk[:3, :3] @ Ik @ Tk[:3, :3].T + mk * (d @ d * np.eye(3) - np.outer(d, d))
    b = dyn.ModelBuilder("hand_direct")
    b.add_link("base")
    b.add_link("l1", m, I, hom(xyz=c))
    b.add_link("l2", 1.5, inertia_matrix(0.02, 0.001, 0, 0.025, 0.002, 0.03), hom((0.2, 0.3, 0.4), (0.02, 0.03, -0.05)))
    b.add_link("l3", 0.9, np.diag([0.01, 0.01, 0.004]))
    b.add_joint("j1", "revolute", "base", "l1", T_plate @ hom((0.3, -0.5, 0.7), (0.1, 0.2, 0.3)), (0, 0.6, 0.8))
    b.add_joint("j2", "prismatic", "l1", "l2", T_extra @ hom((1.0, 0, -0.4), (0, 0, 0.25)), (1, 0, 0))
    b.add_joint("j3", "continuous", "l1", "l3", hom((0, 0, 1.2), (-0.1, 0.15, 0)), (0, 0, 1))
    return b.build()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fixed_joints_and_rotated_inertial_frames_match_direct_build(seed):
    """(l1's children by name, as Pinocchio orders them: j3 before the fixed l1_extra_joint
    that carries j2; built directly, j2 and j3 both hang from l1.)"""
    loaded, direct = load_urdf(HAND_URDF), hand_model_built_directly()
    assert loaded.joint_names == ("j1", "j3", "j2") and direct.joint_names == ("j1", "j2", "j3")
    p = [direct.joint_index(name) for name in loaded.joint_names]
    q, v, a = random_state(direct, seed)
    np.testing.assert_allclose(dyn.rnea(loaded, q[p], v[p], a[p]), dyn.rnea(direct, q, v, a)[p], rtol=1e-13,
                               atol=1e-13)
    np.testing.assert_allclose(dyn.crba(loaded, q[p]), dyn.crba(direct, q)[np.ix_(p, p)], rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(dyn.aba(loaded, q[p], v[p], a[p]), dyn.aba(direct, q, v, a)[p], rtol=1e-12,
                               atol=1e-12)
    # frame of the merged link: l1 pose times the fixed joint's origin
    R1, p1 = dyn.frame_placement(direct, q, "l1")
    R, x = dyn.frame_placement(loaded, q[p], "l1_extra")
    np.testing.assert_allclose(R, R1 @ rot(0, 0.5, 0), atol=1e-14)
    np.testing.assert_allclose(x, p1 + R1 @ [0.2, 0, 0], atol=1e-14)


def test_loaded_hand_model_contents():
    m = load_urdf(HAND_URDF)
    assert m.name == "hand"
    assert m.frame_names == ("base", "plate", "l1", "l3", "l1_extra", "l2")  # l1's children by joint name
    assert [m.frame(f).body for f in m.frame_names] == [-1, -1, 0, 1, 0, 2]
    np.testing.assert_allclose(m.axis[0], [0, 0.6, 0.8])
    np.testing.assert_allclose(m.axis[2], [1, 0, 0])  # missing <axis> → (1, 0, 0)
    np.testing.assert_array_equal(m.lower_limit, [-2, -np.inf, -0.3])
    np.testing.assert_array_equal(m.upper_limit, [2.5, np.inf, 0.3])
    np.testing.assert_array_equal(m.velocity_limit, [5, np.inf, 1])
    np.testing.assert_array_equal(m.effort_limit, [40, np.inf, 100])
    assert m.inertia[0, 0] == pytest.approx(2.7)
    (plate,) = m.visuals
    assert (plate.kind, plate.frame, plate.size) == ("box", "plate", (0.3, 0.3, 0.02))
    assert plate.rgba == (0.5, 0.5, 0.55, 1.0)


# ---------------------------------------------------------------- defaults, geometry, mimic

GEOMETRY_URDF = """<?xml version="1.0"?>
<robot name="shapes">
  <material name="red"><color rgba="1 0 0 1"/></material>
  <link name="base">
    <visual><geometry><sphere radius="0.1"/></geometry><material name="red"/></visual>
    <visual>
      <origin xyz="0 0 1" rpy="0 0 1.5"/>
      <geometry><mesh filename="package://x/m.stl" scale="0.001 0.002 0.003"/></geometry>
      <material name="blue"><color rgba="0 0 1 0.5"/></material>
    </visual>
    <visual><geometry><mesh filename="m2.dae"/></geometry><material name="blue"/></visual>
    <collision><geometry><cylinder radius="0.05" length="0.4"/></geometry></collision>
  </link>
  <joint name="a" type="revolute">
    <parent link="base"/><child link="arm"/>
    <limit effort="5"/>
  </joint>
  <link name="arm">
    <inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
  </link>
  <joint name="b" type="revolute">
    <parent link="arm"/><child link="finger"/>
    <axis xyz="0 1 0"/>
    <mimic joint="a" multiplier="2" offset="0.1"/>
  </joint>
  <link name="finger">
    <inertial><mass value="0.5"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <transmission name="t"><type>x</type></transmission>
  <gazebo reference="arm"><selfCollide>true</selfCollide></gazebo>
</robot>
"""


def test_geometry_materials_and_defaults():
    m = load_urdf(GEOMETRY_URDF)
    sphere, mesh, mesh2 = m.visuals
    assert (sphere.kind, sphere.size, sphere.rgba) == ("sphere", (0.1,), (1.0, 0.0, 0.0, 1.0))
    np.testing.assert_array_equal(sphere.placement, np.eye(4))
    assert (mesh.kind, mesh.filename, mesh.scale, mesh.rgba) == ("mesh", "package://x/m.stl", (0.001, 0.002, 0.003),
                                                                (0.0, 0.0, 1.0, 0.5))
    np.testing.assert_allclose(mesh.placement, transform(rpy_matrix(0, 0, 1.5), (0, 0, 1)))
    assert (mesh2.filename, mesh2.scale, mesh2.rgba) == ("m2.dae", (1.0, 1.0, 1.0), (0.0, 0.0, 1.0, 0.5))
    (cyl,) = m.collisions
    assert (cyl.kind, cyl.frame, cyl.size, cyl.rgba) == ("cylinder", "base", (0.05, 0.4), None)
    # <limit effort> only: lower = upper = 0 and velocity unbounded, per the specification
    assert (m.lower_limit[0], m.upper_limit[0], m.velocity_limit[0], m.effort_limit[0]) == (0, 0, np.inf, 5)
    # no <limit>: unbounded; missing <origin>: identity; missing <axis>: x
    assert (m.lower_limit[1], m.upper_limit[1]) == (-np.inf, np.inf)
    np.testing.assert_array_equal(m.joint_placement, np.tile(np.eye(4), (2, 1, 1)))
    np.testing.assert_array_equal(m.axis, [[1, 0, 0], [0, 1, 0]])


def test_mimic_joints_are_independent():
    m = load_urdf(GEOMETRY_URDF)
    assert m.nv == 2 and m.joint_names == ("a", "b")
    q, v = np.array([0.3, -1.0]), np.zeros(2)
    # the mimicking joint moves on its own: τ_b depends only on q_b's own torque balance
    a = dyn.aba(m, q, v, np.array([0.0, 1.0]))
    assert abs(a[1]) > 0 and np.isfinite(a).all()


def test_link_without_inertial_is_massless_and_fixed_links_merge():
    xml = """<robot name="r">
      <link name="base"/>
      <joint name="j" type="prismatic"><parent link="base"/><child link="slider"/><axis xyz="0 0 1"/></joint>
      <link name="slider"/>
      <joint name="f" type="fixed"><parent link="slider"/><child link="load"/><origin xyz="1 0 0"/></joint>
      <link name="load"><inertial><mass value="2"/>
        <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
    </robot>"""
    m = load_urdf(xml)
    np.testing.assert_array_equal(m.inertia[0, :4], [2, 1, 0, 0])
    # vertical slider carrying 2 kg: τ = m (a + 9.81)
    assert dyn.rnea(m, [0.0], [0.0], [1.0])[0] == pytest.approx(2 * 10.81)


# ---------------------------------------------------------------- Pinocchio oracle


def pinocchio_reference(pin, pin_model, model, q, v, a, frames):
    """Pinocchio's rnea, crba, aba, M⁻¹, placements and Jacobians in our joint order."""
    perm = [pin_model.idx_vs[pin_model.getJointId(name)] for name in model.joint_names]
    data = pin_model.createData()
    qp, vp, ap = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    qp[perm], vp[perm], ap[perm] = q, v, a

    def sym(X):  # pinocchio fills the upper triangle (and squeezes 1×1 matrices)
        X = np.reshape(X, (model.nv, model.nv))
        return np.triu(X) + np.triu(X, 1).T

    out = {
        "rnea": pin.rnea(pin_model, data, qp, vp, ap).copy()[perm],
        "crba": sym(pin.crba(pin_model, data, qp).copy())[np.ix_(perm, perm)],
        "aba": pin.aba(pin_model, data, qp, vp, ap).copy()[perm],
        "minv": sym(pin.computeMinverse(pin_model, data, qp).copy())[np.ix_(perm, perm)],
    }
    pin.framesForwardKinematics(pin_model, data, qp)
    pin.computeJointJacobians(pin_model, data, qp)
    for f in frames:
        fid = pin_model.getFrameId(f)
        out[f] = (data.oMf[fid].rotation.copy(), data.oMf[fid].translation.copy(),
                  pin.getFrameJacobian(pin_model, data, fid, pin.LOCAL_WORLD_ALIGNED).reshape(6, -1)[:, perm])
    return out


@pytest.mark.parametrize("spec", [("ur5", 6, 0), ("serial_chain", 1, 0), ("serial_chain", 7, 1),
                                  ("serial_chain", 15, 2), ("binary_tree", 15, 3), ("binary_tree", 12, 5),
                                  ("serial_chain", 7, 4, True)])
@pytest.mark.parametrize("seed", [0, 1])
def test_against_pinocchio(spec, seed):
    pin = pytest.importorskip("pinocchio")
    model = make_model(*spec)
    xml = UR5_PATH.read_text() if spec[0] == "ur5" else model_to_urdf(model)
    pin_model = pin.buildModelFromXML(xml)
    perm = [pin_model.idx_vs[pin_model.getJointId(name)] for name in model.joint_names]
    armature = np.zeros(model.nv)
    armature[perm] = model.armature  # zeros but on the last spec (a URDF has no rotors)
    pin_model.armature = armature
    np.testing.assert_allclose(pin_model.gravity.linear, model.gravity)
    q, v, a = random_state(model, seed)
    frames = model.frame_names
    ref = pinocchio_reference(pin, pin_model, model, q, v, a, frames)
    scale = lambda x: max(1.0, np.max(np.abs(x)))  # noqa: E731
    assert np.max(np.abs(dyn.rnea(model, q, v, a) - ref["rnea"])) < 1e-10 * scale(ref["rnea"])
    assert np.max(np.abs(dyn.crba(model, q) - ref["crba"])) < 1e-10 * scale(ref["crba"])
    assert np.max(np.abs(dyn.aba(model, q, v, a) - ref["aba"])) < 1e-10 * scale(ref["aba"])
    assert np.max(np.abs(dyn.minv(model, q) - ref["minv"])) < 1e-10 * scale(ref["minv"])
    for f in frames:
        R, p = dyn.frame_placement(model, q, f)
        Rp, pp, Jp = ref[f]
        assert np.max(np.abs(R - Rp)) < 1e-12, f
        assert np.max(np.abs(p - pp)) < 1e-12, f
        assert np.max(np.abs(dyn.frame_jacobian(model, q, f) - Jp)) < 1e-12, f


# ---------------------------------------------------------------- bad input


def robot(body: str) -> str:
    return f'<robot name="bad"><link name="base"/>{body}</robot>'


LINK_A = '<link name="a"/>'


def joint(attrs='name="j" type="revolute"', inner='<parent link="base"/><child link="a"/>'):
    return f"<joint {attrs}>{inner}</joint>"


def inertial(mass="1", inertia='ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"', origin=""):
    return f'<link name="a"><inertial>{origin}<mass value="{mass}"/><inertia {inertia}/></inertial></link>'


BAD_URDF = {
    "malformed": ("<robot><link name='a'></robot>", "malformed XML"),
    "not robot": ("<model name='x'/>", "<robot>"),
    "empty robot": ("<robot name='x'/>", "no links"),
    "unknown joint type": (robot(LINK_A + joint('name="j" type="hinge"')), "joint 'j'.*unknown type 'hinge'"),
    "planar joint": (robot(LINK_A + joint('name="j" type="planar"')), "joint 'j'.*planar"),
    "joint without type": (robot(LINK_A + joint('name="j"')), "joint 'j'.*'type'"),
    "joint without name": (robot(LINK_A + joint('type="fixed"')), "<joint>.*'name'"),
    "link without name": (robot("<link/>"), "<link>.*'name'"),
    "missing parent": (robot(LINK_A + joint(inner='<child link="a"/>')), "joint 'j'.*<parent link"),
    "missing child": (robot(LINK_A + joint(inner='<parent link="base"/>')), "joint 'j'.*<child link"),
    "undefined child link": (robot(joint()), "joint 'j'.*child link 'a' is not defined"),
    "undefined parent link": (robot(LINK_A + joint(inner='<parent link="zz"/><child link="a"/>')),
                              "joint 'j'.*parent link 'zz' is not defined"),
    "child without parent": (robot(LINK_A + '<link name="b"/>' + joint()), "several root links"),
    "kinematic loop": (robot(LINK_A + '<link name="b"/>' + joint() + joint(
        'name="k" type="fixed"', '<parent link="a"/><child link="b"/>') + joint(
        'name="l" type="fixed"', '<parent link="b"/><child link="a"/>')), "kinematic loop"),
    "loop without root": ("<robot name='r'><link name='a'/><link name='b'/>"
                          + joint(inner='<parent link="a"/><child link="b"/>')
                          + joint('name="k" type="fixed"', '<parent link="b"/><child link="a"/>') + "</robot>",
                          "kinematic loop"),
    "duplicate link": (robot('<link name="base"/>'), "duplicate link name 'base'"),
    "duplicate joint": (robot(LINK_A + '<link name="b"/>' + joint() + joint(
        inner='<parent link="a"/><child link="b"/>')), "duplicate joint name 'j'"),
    "negative mass": (robot(inertial(mass="-1") + joint()), "link 'a'.*mass"),
    "missing mass": (robot('<link name="a"><inertial><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
                           '</inertial></link>' + joint()), "link 'a'.*<mass"),
    "missing inertia": (robot('<link name="a"><inertial><mass value="1"/></inertial></link>' + joint()),
                        "link 'a'.*<inertia"),
    "incomplete inertia": (robot(inertial(inertia='ixx="1" iyy="1" izz="1"') + joint()), "link 'a'.*'ixy'"),
    "indefinite inertia": (robot(inertial(inertia='ixx="1" ixy="2" ixz="0" iyy="1" iyz="0" izz="1"') + joint()),
                           "link 'a'.*positive semi-definite"),
    "non-numeric mass": (robot(inertial(mass="heavy") + joint()), "link 'a' <mass>.*'heavy'"),
    "nan mass": (robot(inertial(mass="nan") + joint()), "link 'a' <mass>.*finite"),
    "non-numeric xyz": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/>'
                                                   '<origin xyz="0 zero 0"/>')), "joint 'j' <origin>.*xyz"),
    "short rpy": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/><origin rpy="0 1"/>')),
                  "joint 'j' <origin>.*rpy.*3 finite numbers"),
    "inf in inertial origin": (robot(inertial(origin='<origin xyz="0 inf 0"/>') + joint()),
                               "link 'a' <inertial> <origin>.*xyz"),
    "zero axis": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/><axis xyz="0 0 0"/>')),
                  "joint 'j'.*axis"),
    "bad limit": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/><limit lower="x"/>')),
                  "joint 'j' <limit>.*lower"),
    "nan velocity": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/>'
                                                '<limit velocity="nan"/>')), "joint 'j' <limit>.*velocity"),
    "inverted limits": (robot(LINK_A + joint(inner='<parent link="base"/><child link="a"/>'
                                                   '<limit lower="1" upper="-1"/>')), "joint 'j'.*lower=1.0 > upper"),
    "no geometry": (robot('<link name="a"><visual/></link>' + joint()), "link 'a' <visual>.*<geometry>"),
    "unknown shape": (robot('<link name="a"><collision><geometry><capsule radius="1" length="2"/></geometry>'
                            '</collision></link>' + joint()), "link 'a' <collision>.*<capsule>"),
    "box without size": (robot('<link name="a"><visual><geometry><box/></geometry></visual></link>' + joint()),
                         "link 'a' <visual> <box>.*size"),
    "mesh without file": (robot('<link name="a"><visual><geometry><mesh/></geometry></visual></link>' + joint()),
                          "link 'a' <visual> <mesh>.*filename"),
    "bad rgba": (robot('<material name="m"><color rgba="1 0 0"/></material>'), "material 'm'.*rgba"),
}


@pytest.mark.parametrize("case", list(BAD_URDF))
def test_bad_urdf_raises_value_error(case):
    xml, match = BAD_URDF[case]
    with pytest.raises(ValueError, match=match):
        load_urdf(xml)


def test_missing_file_and_bad_source(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load_urdf(tmp_path / "nope.urdf")
    with pytest.raises(ValueError, match="not found"):
        load_urdf("robot.urdf")
    with pytest.raises(ValueError, match="file path or an XML string"):
        load_urdf(42)
    (tmp_path / "bad.urdf").write_text("<robot><link></robot")
    with pytest.raises(ValueError, match="malformed XML in .*bad.urdf"):
        load_urdf(tmp_path / "bad.urdf")


def test_builder_rejects_nan_limits_and_bad_inertial_origin():
    b = dyn.ModelBuilder()
    with pytest.raises(ValueError, match="link 'a': inertial_origin must be a finite 4×4"):
        b.add_link("a", 1.0, 0.1 * np.eye(3), inertial_origin=np.full((4, 4), np.nan))
    with pytest.raises(ValueError, match="link 'a': inertial_origin must be a finite 4×4"):
        b.add_link("a", 1.0, 0.1 * np.eye(3), inertial_origin=np.eye(3))
    with pytest.raises(ValueError, match="joint 'j': limits must be numbers"):
        b.add_joint("j", "revolute", "base", "a", lower=np.nan, upper=1.0)


# ---------------------------------------------------------------- multi-DoF joints and real-robot inertias

def test_floating_and_planar_joints_load_as_multi_dof_joints():
    text = robot(inertial() + '<link name="b"><inertial><mass value="2"/><inertia ixx="1" ixy="0" ixz="0" '
                 'iyy="1" iyz="0" izz="1"/></inertial></link>'
                 + joint('name="float" type="floating"')
                 + joint('name="plane" type="planar"', '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'))
    model = load_urdf(text)
    assert model.joint_types == ("free-flyer", "planar")
    assert (model.nq, model.nv) == (11, 9)
    np.testing.assert_array_equal(model.idx_qs, [0, 7])
    np.testing.assert_array_equal(model.idx_vs, [0, 6])
    np.testing.assert_array_equal(dyn.neutral(model), [0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0])
    assert model.source is None and load_urdf(UR5_PATH).source == str(UR5_PATH.resolve())


def test_root_joint_makes_the_root_link_a_floating_body():
    fixed, floating = load_urdf(UR5_PATH), load_urdf(UR5_PATH, root_joint="free-flyer")
    assert floating.joint_names[0] == "root_joint" and floating.joint_names[1:] == fixed.joint_names
    assert (floating.nq, floating.nv) == (fixed.nq + 7, fixed.nv + 6)
    assert floating.inertia[0, 0] > 0  # the UR5's base link now moves with the free-flyer
    planar = load_urdf(UR5_PATH, root_joint="planar")
    assert planar.joint_types[0] == "planar" and planar.nv == fixed.nv + 3


def test_inertia_tolerances_for_real_robot_files():
    """Inertias no mass distribution has load with a warning (Pinocchio), are refused with
    strict_inertia (MuJoCo, Drake); an indefinite body inertia is refused either way; a link
    that is not physical in a body that is loads with a warning; rounding passes quietly."""
    for izz in ("2.001", "3"):  # slightly, and far over the triangle inequality
        over = robot(inertial(inertia=f'ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="{izz}"') + joint())
        with pytest.warns(UserWarning, match="link 'a'.*triangle inequality.*strict_inertia=True refuses it"):
            model = load_urdf(over)
        np.testing.assert_allclose(np.diag(model.inertia[0, 4:].reshape(3, 3)), [1, 1, float(izz)])
        with pytest.raises(ValueError, match="link 'a'.*triangle inequality"):
            load_urdf(over, strict_inertia=True)
    # a point mass written with a rounding residue off the diagonal (iCub's ankles): a point mass
    point = robot(inertial(inertia='ixx="0" ixy="0" ixz="1.35525e-20" iyy="0" iyz="0" izz="0"') + joint())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf(point, strict_inertia=True)
    with pytest.raises(ValueError, match="link 'a'.*positive semi-definite"):  # indefinite beyond rounding
        load_urdf(point.replace("1.35525e-20", "1e-9"))
    # a dummy inertia on the root link: ignored when the root is welded to the world,
    # a warning when it rides on a floating body that is physical as a whole, however heavy
    dummy = ('<robot name="r"><link name="base"><inertial><mass value="0.001"/><inertia ixx="0" ixy="0" '
             'ixz="0" iyy="0" iyz="0" izz="3e-6"/></inertial></link>'
             + inertial(mass="10") + joint('name="j" type="fixed"') + '</robot>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf(dummy)  # fixed base: the root link carries no dynamics, nothing to check
    for mass in ("0.001", "5"):
        with pytest.warns(UserWarning, match="link 'base'.*triangle inequality.*physical as a whole"):
            model = load_urdf(dummy.replace('<mass value="0.001"/>', f'<mass value="{mass}"/>'),
                              root_joint="free-flyer", strict_inertia=True)
        assert model.nv == 6 and abs(model.inertia[0, 0] - 10 - float(mass)) < 1e-12
    # a body that is not physical as a whole is refused, naming its link
    indefinite = dummy.replace('izz="3e-6"', 'izz="-3"').replace('<mass value="0.001"/>', '<mass value="5"/>')
    with pytest.raises(ValueError, match="link 'base'.*positive semi-definite"):
        load_urdf(indefinite, root_joint="free-flyer")


def test_a_material_never_defined_loads_uncoloured_with_a_warning():
    text = robot('<link name="a"><visual><geometry><sphere radius="1"/></geometry><material name="gold"/>'
                 '</visual></link>' + joint())
    with pytest.warns(UserWarning, match="link 'a' <visual>: material 'gold' has no <color>"):
        model = load_urdf(text)
    assert [g.rgba for g in model.visuals] == [None]


def test_joint_damping_and_friction_are_recorded_per_velocity_variable():
    """<dynamics damping friction> (missing attributes 0, missing element 0) become the model's
    damping and friction in v's order, as Pinocchio's model.damping and model.friction; a
    negative one is refused naming the joint."""
    text = HAND_URDF.replace('<limit lower="-2" upper="2.5" effort="40" velocity="5"/>',
                             '<limit lower="-2" upper="2.5" effort="40" velocity="5"/>'
                             '<dynamics damping="0.5" friction="0.2"/>')
    text = text.replace('<limit lower="-0.3" upper="0.3" effort="100" velocity="1"/>',
                        '<limit lower="-0.3" upper="0.3" effort="100" velocity="1"/><dynamics friction="1.5"/>')
    m = load_urdf(text)
    np.testing.assert_array_equal(m.effort_limit, [40, np.inf, 100])  # the joints j1, (l3's), j2
    np.testing.assert_array_equal(m.damping, [0.5, 0, 0])
    np.testing.assert_array_equal(m.friction, [0.2, 0, 1.5])
    assert not m.damping.flags.writeable
    floating = load_urdf(text, root_joint="free-flyer")
    np.testing.assert_array_equal(floating.damping, [0] * 6 + [0.5, 0, 0])
    np.testing.assert_array_equal(load_urdf(HAND_URDF).friction, [0, 0, 0])
    with pytest.raises(ValueError, match="joint 'j1': damping must be a finite number ≥ 0, got -0.5"):
        load_urdf(text.replace('damping="0.5"', 'damping="-0.5"'))
