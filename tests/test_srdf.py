"""``load_srdf``: every SRDF of example-robot-data (as its loaders pair them with URDFs) gives
Pinocchio's reference configurations and rotor parameters, and the collision pairs its
``removeCollisionPairs`` removes; names the model lacks are refused naming them, or skipped
as Pinocchio skips them; malformed files are refused."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import dynamics as dyn
from erd_robots import ROBOTS, SHARE
from test_joint_order import pinocchio_configuration

pin = pytest.importorskip("pinocchio")
erd = pytest.importorskip("example_robot_data")


def _pairs() -> list[tuple[str, str, bool]]:
    """(URDF, SRDF, free-flyer) of example-robot-data's loaders, once each, whose files exist."""
    out = []
    for loader in erd.robots_loader.ROBOTS.values():
        if not loader.srdf_filename:
            continue
        urdf = os.path.join(loader.path, loader.urdf_subpath, loader.urdf_filename)
        srdf = os.path.join(loader.path, "srdf", loader.srdf_filename)
        pair = (urdf, srdf, bool(loader.free_flyer))
        if pair not in out and all(os.path.isfile(os.path.join(ROBOTS, f)) for f in pair[:2]):
            out.append(pair)
    return out


REFUSED_URDF = {"anymal_c_simple_description/urdf/anymal.urdf", "icub_description/robots/icub.urdf",
                "icub_description/robots/icub_reduced.urdf", "pr2_description/urdf/pr2.urdf",
                "alex_description/urdf/alex_psyonic_hands.urdf"}
"""URDFs our loader refuses (non-physical inertias, as the joint-order test lists them)."""
PAIRS = [p for p in _pairs() if p[0] not in REFUSED_URDF]
SHARED = {"baxter_manipulation.srdf": "<group_state 'neutral'> names joint 'baxter/head_pan'",
          "hextilt_flying_arm_5.srdf": "<group_state 'home'> names joint 'flying_arm_5__j_link_5_gripper'",
          "alexander.srdf": "<group_state 'default'> names joint 'NECK_Z'",
          "borinot_flying_arm_2.srdf": "<group_state 'home'> names joint 'flying_arm_2__j_link2_ee'",
          "finger_edu.srdf": "<group_state 'hanging'> names joint 'base_to_finger'",
          "solo.urdf": "<group_state 'standing'> names joint 'FL_HAA'",
          "talos_left_arm.urdf": "<rotor_params> names joint 'arm_left_1_joint'"}
"""(by SRDF, or by URDF where the SRDF is a larger variant's: Solo's with Solo-8, Talos' with
its left arm alone) the first name the model lacks: a joint of a prefixed or larger robot, or
one the URDF has as a fixed joint."""


def _load(urdf: str, free_flyer: bool):
    path = os.path.join(ROBOTS, urdf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dyn.load_urdf(path, root_joint="free-flyer" if free_flyer else None)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if free_flyer else pin.buildModelFromUrdf(path)
    return model, pm


@pytest.mark.parametrize("urdf, srdf, free_flyer", PAIRS, ids=[f"{os.path.basename(u)}+{os.path.basename(s)}"
                                                               for u, s, _ in PAIRS])
def test_reference_configurations_and_rotor_parameters_are_pinocchios(urdf, srdf, free_flyer):
    model, pm = _load(urdf, free_flyer)
    path = os.path.join(ROBOTS, srdf)
    lacking = SHARED.get(os.path.basename(srdf), SHARED.get(os.path.basename(urdf)))
    if lacking:
        with pytest.raises(ValueError, match=f"^srdf: {lacking}, which model '{model.name}' does not have .*"
                                             "unknown='ignore' skips it"):
            dyn.load_srdf(model, path)
    ours = dyn.load_srdf(model, path, unknown="ignore" if lacking else "raise")
    pin.loadReferenceConfigurations(pm, path, False)
    theirs = {e.key(): e.data() for e in pm.referenceConfigurations}
    assert ours.reference_configurations.keys() == theirs.keys()
    for name, q in ours.reference_configurations.items():
        np.testing.assert_array_equal(pinocchio_configuration(model, pm, q), theirs[name], err_msg=name)
    if ours.rotor_inertia:
        pin.loadRotorParameters(pm, path, False)
        np.testing.assert_allclose(ours.armature, pm.armature, rtol=1e-15)
        for name, inertia in ours.rotor_inertia.items():
            k = model.idx_vs[model.joint_index(name)]
            assert (inertia, ours.gear_ratio[name]) == (pm.rotorInertia[k], pm.rotorGearRatio[k]), name
        # the model given its SRDF's armature has Pinocchio's dynamics with its rotor parameters
        armed, pd, rng = model.with_armature(ours.armature), pm.createData(), np.random.default_rng(7)
        q, v, a = dyn.random_configuration(armed, rng), rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp = pinocchio_configuration(model, pm, q)
        tau = pin.rnea(pm, pd, qp, v, a)
        np.testing.assert_allclose(dyn.rnea(armed, q, v, a), tau, rtol=0, atol=1e-9 * np.abs(tau).max())
        np.testing.assert_allclose(dyn.aba(armed, q, v, tau), a, rtol=0, atol=1e-7 * np.abs(a).max())
        assert np.abs(dyn.rnea(model, q, v, a) - tau).max() > 1e-3 or not ours.armature.any()  # where it matters


@pytest.mark.parametrize("urdf, srdf, free_flyer", [
    ("solo_description/robots/solo12.urdf", "solo_description/srdf/solo.srdf", True),
    ("hyq_description/robots/hyq_no_sensors.urdf", "hyq_description/srdf/hyq.srdf", True),
    ("panda_description/urdf/panda.urdf", "panda_description/srdf/panda.srdf", False),
    ("talos_data/robots/talos_reduced.urdf", "talos_data/srdf/talos.srdf", True)])
def test_the_disabled_collisions_are_the_pairs_pinocchio_removes(urdf, srdf, free_flyer):
    """Pinocchio removes, of all pairs of collision geometries on different joints, those
    whose links form a disabled pair: exactly our pairs among its links' pairs."""
    model, pm = _load(urdf, free_flyer)
    gm = pin.buildGeomFromUrdf(pm, os.path.join(ROBOTS, urdf), pin.COLLISION, package_dirs=[SHARE])
    gm.addAllCollisionPairs()

    def links():
        return {frozenset(pm.frames[gm.geometryObjects[i].parentFrame].name for i in (p.first, p.second))
                for p in gm.collisionPairs}

    before = links()
    pin.removeCollisionPairs(pm, gm, os.path.join(ROBOTS, srdf))
    ours = {frozenset(p) for p in dyn.load_srdf(model, os.path.join(ROBOTS, srdf)).disabled_collisions}
    assert before - links() == ours & before and len(ours & before) > 0


LEG = """<robot name="leg"><link name="base"/>
<link name="thigh"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
<link name="shin"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
<joint name="hip" type="revolute"><parent link="base"/><child link="thigh"/><limit lower="-2" upper="2"/></joint>
<joint name="knee" type="continuous"><parent link="thigh"/><child link="shin"/></joint></robot>"""


def srdf(body: str) -> str:
    return f'<robot name="leg">{body}</robot>'


def test_a_free_flyer_takes_its_seven_values_and_unnamed_joints_stay_neutral():
    model = dyn.load_urdf(LEG, root_joint="free-flyer")
    got = dyn.load_srdf(model, srdf('<group_state name="up"><joint name="root_joint" value="0 0 0.5 0 0 0.6 0.8"/>'
                                    '<joint name="knee" value="-1.2"/></group_state>'
                                    '<group_state name="rest"/>'
                                    '<disable_collisions link1="thigh" link2="shin" reason="Adjacent"/>'
                                    '<rotor_params><joint name="knee" mass="2e-4" gear_ratio="9"/></rotor_params>'))
    np.testing.assert_array_equal(got.reference_configurations["up"], [0, 0, 0.5, 0, 0, 0.6, 0.8, 0, -1.2])
    np.testing.assert_array_equal(got.reference_configurations["rest"], dyn.neutral(model))
    assert got.disabled_collisions == (("thigh", "shin"),)
    assert got.rotor_inertia == {"knee": 2e-4} and got.gear_ratio == {"knee": 9.0}
    np.testing.assert_allclose(got.armature, [0, 0, 0, 0, 0, 0, 0, 2e-4 * 81])
    assert not got.reference_configurations["up"].flags.writeable


@pytest.mark.parametrize("body, match", [
    ('<group_state name="s"><joint name="ankle" value="1"/></group_state>',
     r"^srdf: <group_state 's'> names joint 'ankle', which model 'leg' does not have \(its joints: hip, knee\)"),
    ('<disable_collisions link1="thigh" link2="foot"/>',
     r"^srdf: <disable_collisions 'thigh' 'foot'> names link 'foot', which model 'leg' does not have"),
    ('<rotor_params><joint name="ankle" mass="1" gear_ratio="2"/></rotor_params>', r"names joint 'ankle'"),
    ('<group_state name="s"><joint name="hip" value="0.1 0.2"/></group_state>',
     r"^srdf: <group_state 's'> joint 'hip': attribute value='0.1 0.2': expected 1 finite numbers"),
    ('<group_state name="s"><joint name="hip" value="nan"/></group_state>', r"joint 'hip': attribute value='nan'"),
    ('<group_state name="s"><joint name="hip"/></group_state>', r"joint 'hip': expected attribute 'value'"),
    ('<group_state name="s"/><group_state name="s"/>', r"^srdf: <group_state 's'> is defined twice"),
    ('<group_state><joint name="hip" value="1"/></group_state>', r"^srdf: <group_state> needs a non-empty 'name'"),
    ('<rotor_params><joint name="hip" mass="x" gear_ratio="2"/></rotor_params>',
     r"^srdf: <rotor_params> joint 'hip': attribute mass='x' is not 1 numbers"),
    ('<rotor_params><joint name="hip" mass="1" gear_ratio="2"/><joint name="hip" mass="1" gear_ratio="2"/>'
     '</rotor_params>', r"joint 'hip' is given twice"),
])
def test_bad_srdfs_are_refused_naming_what_is_wrong(body, match):
    model = dyn.load_urdf(LEG)
    with pytest.raises(ValueError, match=match):
        dyn.load_srdf(model, srdf(body))


def test_unknown_names_are_skipped_on_request_and_bad_arguments_refused(tmp_path):
    """``unknown="ignore"`` skips what the model lacks silently, ``"warn"`` with one warning
    naming each name once; both read the same."""
    model = dyn.load_urdf(LEG)
    text = srdf('<group_state name="s"><joint name="ankle" value="1"/><joint name="hip" value="0.5"/></group_state>'
                '<disable_collisions link1="thigh" link2="foot"/>'
                '<rotor_params><joint name="ankle" mass="1" gear_ratio="2"/></rotor_params>')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = dyn.load_srdf(model, text, unknown="ignore")
    with pytest.warns(UserWarning, match=r"^srdf: skipped what model '\w+' does not have: joint 'ankle', link 'foot'$"):
        warned = dyn.load_srdf(model, text, unknown="warn")
    for srdf_read in (got, warned):
        np.testing.assert_array_equal(srdf_read.reference_configurations["s"], [0.5, 0.0])
        assert srdf_read.disabled_collisions == () and srdf_read.rotor_inertia == {} and not srdf_read.armature.any()
    free = dyn.load_urdf(LEG, root_joint="free-flyer")
    with pytest.raises(ValueError, match="rotor parameters apply to 1-DoF joints only"):
        dyn.load_srdf(free, srdf('<rotor_params><joint name="root_joint" mass="1" gear_ratio="2"/></rotor_params>'))
    with pytest.raises(ValueError, match="^unknown: expected one of raise, ignore, warn, got 'skip'"):
        dyn.load_srdf(model, srdf(""), unknown="skip")
    with pytest.raises(ValueError, match="^model: expected a dynamics.Model, got str"):
        dyn.load_srdf("leg.urdf", srdf(""))
    with pytest.raises(ValueError, match="^srdf: malformed XML in SRDF string"):
        dyn.load_srdf(model, "<robot><group_state></robot>")
    with pytest.raises(ValueError, match="^srdf: root element must be <robot>, got <semantic>"):
        dyn.load_srdf(model, "<semantic/>")
    with pytest.raises(ValueError, match="^srdf: file .*nope.srdf' not found"):
        dyn.load_srdf(model, tmp_path / "nope.srdf")
    (tmp_path / "leg.srdf").write_text(srdf('<group_state name="s"><joint name="hip" value="0.5"/></group_state>'))
    np.testing.assert_array_equal(dyn.load_srdf(model, tmp_path / "leg.srdf").reference_configurations["s"],
                                  [0.5, 0.0])
