"""The MuJoCo plant (optdyn.MujocoPlant): its dynamics are the library's, its state maps
round-trip, its floor holds the robot where the task stands, bad input raises ValueError."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import warnings

import numpy as np
import pytest

import dynamics as dyn
import optdyn
import problems
from problems.legged import UNITREE_ARMATURE

mujoco = pytest.importorskip("mujoco")

from optdyn.apps.mujoco_plant import MujocoPlant, plant_for  # noqa: E402
from optdyn.apps.report import world_contact_forces  # noqa: E402


@pytest.fixture(scope="module")
def solo():
    return problems.quadruped.solo12()


def _library_acceleration(plant: MujocoPlant, v: np.ndarray) -> np.ndarray:
    """MuJoCo's qacc of the current data as the library's a = dv/dt (local base twist: the linear
    part is R^T p̈ − ω × v_lin)."""
    d = plant.mj_data
    a = d.qacc[plant._v_to_qvel].copy()
    if plant._free is not None:
        b = plant._free[1]
        a[:3] = plant._rotation(d.qpos).T @ d.qacc[b: b + 3] - np.cross(v[3:6], v[:3])
    return a


def _forward_error(plant: MujocoPlant, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> float:
    """max |MuJoCo's acceleration − the library's| / (1 + max |the library's|) at (q, v) under the
    torques τ (nv,), their actuated entries as the plant's controls."""
    model = plant.model
    plant.reset(np.r_[q, v])
    plant.mj_data.ctrl[plant._u_to_ctrl] = tau[model.nv - len(plant._u_to_ctrl):]
    mujoco.mj_forward(plant.mj_model, plant.mj_data)
    expected = dyn.aba(model, q, v, tau)
    return np.max(np.abs(_library_acceleration(plant, v) - expected)) / (1 + np.max(np.abs(expected)))


def _random_state(model, rng):
    q = dyn.integrate(model, dyn.neutral(model), rng.standard_normal(model.nv))
    if model.joint_types[0] == "free-flyer":
        q[2] += 2.0  # far from the floor: no contact
    return q, rng.standard_normal(model.nv)


@pytest.mark.parametrize("robot", ["solo", "ur5", "talos-legs", "double-pendulum", "solo-armature"])
def test_forward_dynamics_agree_with_the_library(robot, solo):
    """Solo-12, the UR5 (a fixed base), Talos' legs (its upper body locked: inertias folded
    into the pelvis), with contact shapes but away from the floor, the double pendulum, whose
    point masses MuJoCo takes only with their principal moments raised to 1e-12 kg·m² (it
    refused the model before), and Solo-12 with reflected rotor inertias on its joints (MuJoCo's
    armature)."""
    armature = np.r_[np.zeros(6), np.linspace(0.001, 0.01, 12)]
    model, feet = {"solo": (solo, ["FL_FOOT", "HR_FOOT"]), "ur5": (dyn.models.ur5(), []),
                   "solo-armature": (solo.with_armature(armature), ["FL_FOOT"]),
                   "talos-legs": (problems.biped.talos_legs()[0], [dyn.Contact("left_sole_link", kind="6d")]),
                   "double-pendulum": (problems.get("double-pendulum").model, [])}[robot]
    plant = MujocoPlant(model, feet=feet)
    nu = model.nv - (6 if model.joint_types[0] == "free-flyer" else 0)
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v = _random_state(model, rng)
        tau = np.r_[np.zeros(model.nv - nu), rng.standard_normal(nu)]
        assert _forward_error(plant, q, v, tau) <= 1e-9
        assert plant.mj_data.ncon == 0


def _erd_cases():
    """(URDF relative to example-robot-data's robots, root) of every URDF there the library
    loads (the refused left out), on a fixed base and on a free-flyer; none without it."""
    try:
        from erd_robots import FILES, NOT_PINOCCHIO, REFUSED
    except pytest.skip.Exception:
        return []
    return [(f, root) for f in FILES if f not in NOT_PINOCCHIO and f not in REFUSED for root in (None, "free-flyer")]


ERD_CASES = _erd_cases()


@pytest.mark.parametrize("relative, root", ERD_CASES, ids=[f"{os.path.basename(f)}-{r or 'fixed'}"
                                                           for f, r in ERD_CASES])
def test_every_robot_of_example_robot_data_is_a_plant_with_the_librarys_dynamics(relative, root):
    """Every URDF of example-robot-data the library loads, on a fixed base and a free-flyer,
    becomes a plant (UR arms rooted at "world", virtual massless links, point masses included)
    whose forward dynamics away from the floor are the library's, the URDFs' joint damping and
    friction and torque clamps left out: to 1e-8 + 1e-11·cond(M) relative (the floors of 1e-12
    that MuJoCo's compiler puts under point masses and massless bodies, amplified by M's
    conditioning: iCub's 6e7 gives 8e-5). Robots whose M is singular (massless leaves: grippers'
    jaws), which the library's forward dynamics refuses, are left out; a body whose inertia
    violates the triangle inequality (Romeo small's shoulder), which MuJoCo refuses, is named."""
    from erd_robots import ROBOTS, WARNED

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes, inertias
        model = dyn.load_urdf(os.path.join(ROBOTS, relative), root_joint=root)
    rng = np.random.default_rng(len(relative))
    q, v = dyn.random_configuration(model, rng), rng.standard_normal(model.nv)
    nu = model.nv - (6 if root else 0)
    tau = np.r_[np.zeros(model.nv - nu), rng.standard_normal(nu)]
    M = dyn.crba(model, q)
    if model.nv == 0 or np.linalg.eigvalsh(M)[0] <= 1e-12 * np.abs(M).max():
        pytest.skip("no joints, or a singular M (massless leaves) that forward dynamics refuses")
    if root:
        q[2] += 2.0  # far from the floor
    if "strict_inertia" in WARNED.get(relative, ""):  # a body no mass distribution has
        with pytest.raises(ValueError, match=WARNED[relative].split(".*strict")[0] + ".*MuJoCo takes"):
            MujocoPlant(model)
        return
    error = _forward_error(MujocoPlant(model, joint_dynamics=False, effort=1e9), q, v, tau)
    assert error <= 1e-8 + 1e-11 * np.linalg.cond(M), error


def test_robots_mujoco_takes_only_with_floors_and_names_of_its_own():
    """A UR5 whose URDF roots at a link named "world" (MuJoCo's world body's name) on a
    free-flyer, and example-robot-data's human, whose hips and shoulders chain 1-DoF joints
    through massless virtual links (MuJoCo takes positive masses only): the plant builds and
    its forward dynamics are the library's (the URDFs' joint damping left out). A URDF effort
    limit of 0 is refused naming the joint, unless the plant's effort= replaces it."""
    erd = pytest.importorskip("example_robot_data")
    share = erd.getModelPath("ur_description/urdf/ur5_robot.urdf")
    for relative, tol in (("ur_description/urdf/ur5_robot.urdf", 1e-9), ("human_description/robots/human.urdf", 1e-6)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # meshes
            model = dyn.load_urdf(os.path.join(share, relative), root_joint="free-flyer")
        assert relative.startswith("human") or model.body_names[0] == "world"
        rng = np.random.default_rng(11)
        q, v = _random_state(model, rng)
        tau = np.r_[np.zeros(6), rng.standard_normal(model.nv - 6)]
        assert _forward_error(MujocoPlant(model, joint_dynamics=False), q, v, tau) <= tol
    ur5 = dyn.models.ur5()
    idle = dataclasses.replace(ur5, effort_limit=np.r_[0.0, ur5.effort_limit[1:]])
    with pytest.raises(ValueError, match="model_or_urdf: joint 'shoulder_pan_joint' has an effort limit of 0"):
        MujocoPlant(idle)
    MujocoPlant(idle, effort=10.0)


def test_push_at_a_frame_is_the_librarys_external_force(solo):
    plant = MujocoPlant(solo)
    q, v = _random_state(solo, np.random.default_rng(5))
    force = np.array([3.0, -12.0, 5.0])
    plant.reset(np.r_[q, v])
    plant.push("FL_FOOT", force)
    mujoco.mj_forward(plant.mj_model, plant.mj_data)
    f_ext = dyn.frame_force(solo, q, "FL_FOOT", np.r_[force, np.zeros(3)])
    expected = dyn.aba(solo, q, v, np.zeros(solo.nv), f_ext)
    assert np.max(np.abs(_library_acceleration(plant, v) - expected)) <= 1e-9 * (1 + np.max(np.abs(expected)))
    plant.clear_pushes()
    assert not plant.mj_data.xfrc_applied.any()


def test_state_maps_round_trip_by_joint_name(solo):
    plant = MujocoPlant(solo)
    q, v = _random_state(solo, np.random.default_rng(7))
    qpos, qvel = plant.to_mujoco(np.r_[q, v])
    np.testing.assert_array_equal(qpos[3:7], q[[6, 3, 4, 5]])  # (qx, qy, qz, qw) → (qw, qx, qy, qz)
    R = dyn.frame_placement(solo, q, solo.body_names[0])[0]
    np.testing.assert_allclose(qvel[:3], R @ v[:3], atol=1e-14)  # local → world linear velocity
    np.testing.assert_array_equal(qvel[3:6], v[3:6])  # angular: local in both
    for i, name in enumerate(solo.joint_names[1:], start=1):
        jid = mujoco.mj_name2id(plant.mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
        assert qpos[plant.mj_model.jnt_qposadr[jid]] == q[solo.idx_qs[i]]
        assert qvel[plant.mj_model.jnt_dofadr[jid]] == v[solo.idx_vs[i]]
    np.testing.assert_allclose(plant.from_mujoco(qpos, qvel), np.r_[q, v], atol=1e-15)
    plant.reset(np.r_[q, v])
    np.testing.assert_allclose(plant.state(), np.r_[q, v], atol=1e-15)
    for frame in ("FL_FOOT", "base_link"):
        np.testing.assert_allclose(plant.frame_position(frame), dyn.frame_placement(solo, q, frame)[1], atol=1e-12)


def test_the_floor_holds_the_task_standing():
    """Solo-12 standing where the trot starts, under the task's standing torques: after 10 ms
    MuJoCo's measured contact forces are the library's rigid-contact forces within 3 % of a
    foot's share of the weight (the sphere touches the floor a radius below the foot frame),
    and the base has not moved by 0.1 mm."""
    prob = problems.get("quadruped", scenario="trot", cone="cost", cycles=1)
    assert len(prob.contacts[0]) == 4
    expected = world_contact_forces(prob.window(0, 1), np.vstack([prob.x0, prob.x0]), prob.us_init[:1])
    plant = plant_for(prob)
    plant.bind(prob.model, prob.actuated)
    plant.reset(prob.x0)
    for _ in range(10):
        plant.step(prob.us_init[0])
    share = -prob.model.inertia[:, 0].sum() * prob.model.gravity[2] / 4
    measured = plant.contact_forces()
    assert set(measured) == set(expected)
    np.testing.assert_array_equal(plant.foot_forces(), np.stack(list(measured.values())))  # in the order of feet
    assert list(measured) == [frame for frame, _ in plant.feet]
    for frame, f in measured.items():
        assert np.max(np.abs(f - expected[frame][0])) < 0.03 * share, frame
    assert np.linalg.norm(plant.state()[:3] - prob.x0[:3]) < 1e-4


def test_mujocos_warnings_stay_with_the_plant(tmp_path, monkeypatch):
    """A diverging step: MuJoCo's warning goes to ``plant.warnings``, not to its log file in the
    working directory, and the process's own handler is back after the step, uncalled; a reset
    clears the warnings."""
    prob = problems.get("quadruped", scenario="trot", cone="cost", cycles=1)
    plant = plant_for(prob)
    plant.bind(prob.model, prob.actuated)
    plant.reset(prob.x0)
    monkeypatch.chdir(tmp_path)
    own: list[str] = []
    previous = mujoco.get_mju_user_warning()
    mujoco.set_mju_user_warning(own.append)
    try:
        plant.mj_data.qvel[:] = 1e12
        plant.step(prob.us_init[0])
        handler = mujoco.get_mju_user_warning()
    finally:
        mujoco.set_mju_user_warning(previous)
    assert handler == own.append and not own
    assert plant.diverged() and len(plant.warnings) == 1, plant.warnings
    assert plant.warnings[0].startswith("Nan, Inf or huge value in QVEL"), plant.warnings
    assert not (tmp_path / "MUJOCO_LOG.TXT").exists()
    plant.reset(prob.x0)
    assert plant.warnings == [] and not plant.diverged()
    with plant.warnings_kept():  # around many steps (a closed loop's interval), nested: one handler, restored after
        with plant.warnings_kept():
            plant.mj_data.qvel[:] = 1e12
            plant.step(prob.us_init[0])
        inside = mujoco.get_mju_user_warning()
    assert inside == plant.warnings.append and mujoco.get_mju_user_warning() == previous
    assert plant.diverged() and len(plant.warnings) == 1, plant.warnings


def test_bad_input_raises_value_errors(solo):
    with pytest.raises(ValueError, match="feet: robot 'solo' has no frame 'NOSE'"):
        MujocoPlant(solo, feet=["NOSE"])
    with pytest.raises(ValueError, match="contact: expected"):
        MujocoPlant(solo, contact="rubber")
    with pytest.raises(ValueError, match="contact: expected"):
        MujocoPlant(solo, contact=((0.004, 1.0), (0.99, 0.999)))
    with pytest.raises(ValueError, match="model_or_urdf: expected"):
        MujocoPlant(42)
    with pytest.raises(ValueError, match="model_or_urdf: joint 'root_joint' is spherical"):
        MujocoPlant(dyn.load_urdf(URDF, root_joint="spherical"))
    plant = MujocoPlant(solo)
    with pytest.raises(ValueError, match="plant: its joints"):
        plant.bind(dyn.models.ur5())
    with pytest.raises(ValueError, match="frame: robot 'solo' has no frame 'NOSE'"):
        plant.push("NOSE", (1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="force: expected 3 finite numbers"):
        plant.push("base_link", (np.nan, 0.0, 0.0))
    prob = problems.get("quadruped", scenario="trot", cone="cost", cycles=1)
    with pytest.raises(ValueError, match="timestep 0.003 s must divide the control period"):
        optdyn.simulate(optdyn.MPC(prob, "ilqr", horizon=5), 0.1, plant=plant_for(prob, timestep=0.003))


def test_contact_parameters_given_as_a_pair_reach_every_contact_geometry(solo):
    """``contact=(solref, solimp)``: on the floor and on each foot's sphere; a solimp of three
    numbers (as MJCF takes it) gets MuJoCo's default midpoint and power (MjSpec refused it)."""
    for solimp, full in (((0.95, 0.99, 0.002), (0.95, 0.99, 0.002, 0.5, 2.0)),
                         ((0.9, 0.95, 0.001, 0.4, 3.0), (0.9, 0.95, 0.001, 0.4, 3.0))):
        m = MujocoPlant(solo, contact=((0.004, 1.0), solimp), feet=["FL_FOOT", "HR_FOOT"]).mj_model
        geoms = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, g)
                 for g in ("floor", "FL_FOOT_contact", "HR_FOOT_contact")]
        np.testing.assert_array_equal(m.geom_solref[geoms], np.tile([0.004, 1.0], (3, 1)))
        np.testing.assert_array_equal(m.geom_solimp[geoms], np.tile(full, (3, 1)))


def test_a_body_mujoco_refuses_is_named_with_why():
    """A body whose inertia violates the triangle inequality loads with a warning (as in
    Pinocchio) but cannot be a MuJoCo plant (MuJoCo refuses it): the ValueError names it."""
    xml = ('<robot name="r"><link name="base"/><link name="arm"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
           'ixz="0" iyy="1" iyz="0" izz="3"/></inertial></link><joint name="j" type="revolute"><parent link="base"/>'
           '<child link="arm"/><axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>')
    with pytest.warns(UserWarning, match="link 'arm'.*triangle inequality"):
        model = dyn.load_urdf(xml)
    with pytest.raises(ValueError, match="model_or_urdf: body 'arm': inertia violates the triangle inequality"):
        MujocoPlant(model)


def test_without_mujoco_the_plant_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco now raises ImportError
    prob = problems.get("quadruped", scenario="trot", cone="cost", cycles=1)
    with pytest.raises(ValueError, match=r"pip install optdyn\[sim\]"):
        optdyn.simulate(optdyn.MPC(prob, "ilqr", horizon=5), 0.1, plant="mujoco")


@pytest.mark.parametrize("scenario, friction, force", [("trot", 1.0, 12.0), ("trot", 0.7, 0.0), ("walk", 1.0, 5.0)])
def test_gaits_in_mujoco_stay_up(tmp_path, scenario, friction, force):
    """A short Solo-12 trot in MuJoCo (the `optdyn mpc quadruped --scenario trot --plant mujoco`
    scenario, 1.6 s instead of 10): pushed sideways by 12 N for 0.2 s on a floor of friction 1,
    and undisturbed on one of 0.7 (the task's pyramid 0.7× that); and the walk pushed by 5 N
    (its scenario's push): it never falls (base above
    0.15 m, tilt under 20°) and advances 80 % of the commanded distance; the loop records the
    plant's states in the library's convention and MuJoCo's measured contact forces, whose
    vertical sum over the run carries the robot's weight (it ends at the height it started),
    and they survive a save and load."""
    prob = problems.get("quadruped", scenario=scenario, cone="cost", cycles=4, mu=0.7 * friction)
    plant = plant_for(prob, effort=5.0, friction=friction)
    pushes = [optdyn.Push("base_link", (0.0, force, 0.0), 0.6, 0.2)] if force else []
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=25), 1.6, plant=plant, disturbances=pushes)
    assert loop.stopped == "" and loop.plant == "mujoco"
    np.testing.assert_array_equal(loop.xs[0], prob.x0)
    np.testing.assert_allclose(np.linalg.norm(loop.xs[:, 3:7], axis=1), 1.0, atol=1e-9)
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    assert not motion.fell(0.15, 20.0), motion
    assert motion.advanced >= 0.8 * motion.commanded > 0, motion
    assert set(loop.contact_forces) == {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"}
    total = np.nansum(np.stack(list(loop.contact_forces.values())), axis=0)  # (n, 3)
    weight = -prob.model.inertia[:, 0].sum() * prob.model.gravity[2]
    assert abs(total[:, 2].mean() - weight) < 0.1 * weight
    optdyn.save_closed_loop(loop, tmp_path / "loop.npz")
    back = optdyn.load_closed_loop(tmp_path / "loop.npz")
    assert back.plant == "mujoco"
    for frame, f in loop.contact_forces.items():
        np.testing.assert_array_equal(back.contact_forces[frame], f)


@pytest.mark.parametrize("name", ["go1", "hyq"])
def test_quadrupeds_the_project_does_not_ship_trot_in_mujoco(name):
    """Go1 (its URDF's joint damping and friction in the plant) and HyQ, trotting as a user
    builds them (example-robot-data's URDF and SRDF), in MuJoCo at the plant's default step:
    they trot. At 1 ms the policy's velocity gains on their light shanks, applied explicitly at
    every plant step, make MuJoCo diverge (module docstring of the plant), and the closed loop
    says so, naming the joint."""
    from quadrupeds import robot

    model, feet, standing = robot(name)
    prob = problems.quadruped.make("trot", cycles=4, mu=0.7, cone="cost", model=model, feet=feet, standing=standing)
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=25), 1.6, plant=plant_for(prob))
    assert loop.stopped == ""
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    assert not motion.fell(0.6 * prob.x0[2], 20.0), motion
    assert motion.advanced >= 0.8 * motion.commanded > 0, motion
    coarse = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=25), 3.0, plant=plant_for(prob, timestep=1e-3))
    assert coarse.stopped.startswith("the plant diverged"), coarse.stopped
    assert re.search(r" s \(MuJoCo: Nan, Inf or huge value in Q\w+ at DOF \d+", coarse.stopped), coarse.stopped
    shank = re.search(r"velocity of (\w+), .* explicit 1 ms step \(h·K/M = (\S+) > 1;", coarse.stopped)
    assert shank and shank[1] in prob.model.joint_names and float(shank[2]) > 1.0, coarse.stopped


@pytest.mark.parametrize("name, armature", [("b1-z1", None), ("anymal-kinova", 0.01)])
def test_legged_manipulators_trot_in_mujoco(name, armature):
    """The legged manipulators, trotting as a user builds them (example-robot-data's URDF and
    SRDF, the arm up and actuated): B1 with its Z1 arm as it is, ANYmal B with its Kinova arm
    given rotor inertias of 0.01 kg·m² — without them it diverged at 0.66 s, measured (the
    policy's gain on LH_HFE's velocity past the explicit step's stability)."""
    from quadrupeds import robot

    model, feet, standing = robot(name)
    prob = problems.quadruped.make("trot", cycles=5, mu=0.7, cone="cost", model=model, feet=feet, standing=standing,
                                   armature=armature)
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=25), 2.0, plant=plant_for(prob))
    assert loop.stopped == ""
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    assert not motion.fell(0.6 * prob.x0[2], 20.0), motion
    assert motion.advanced >= 0.8 * motion.commanded > 0, motion


@pytest.mark.parametrize("name", ["go2", "a1"])
def test_unitree_robots_trot_in_mujoco_with_their_rotors(name):
    """Go2 and A1, trotting as a user builds them (example-robot-data's URDF and SRDF), their
    joints given the rotors' reflected inertia that their URDFs lack (``armature``, MuJoCo
    Menagerie's 0.01 kg·m²) in the task and hence in the plant: they trot, within the URDF's
    torque limits that the plant clamps at. Without it (Go2's shanks: 5 g·m² about the knee)
    both fell in this test's runs, measured: the plant diverged at 1.64 s (Go2) and 0.78 s
    (A1), and Go2's still at a plant step of 0.1 ms: not the explicit step's stability (the
    quadrupeds above)."""
    from quadrupeds import robot

    model, feet, standing = robot(name)
    prob = problems.quadruped.make("trot", cycles=6, mu=0.7, cone="cost", model=model, feet=feet, standing=standing,
                                   armature=UNITREE_ARMATURE)
    plant = plant_for(prob)
    np.testing.assert_array_equal(plant.mj_model.dof_armature[6:], UNITREE_ARMATURE)
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1, horizon=25), 2.4, plant=plant)
    assert loop.stopped == ""
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    assert not motion.fell(0.6 * prob.x0[2], 20.0), motion
    assert motion.advanced >= 0.8 * motion.commanded > 0, motion


def test_the_command_line_trots_in_mujoco(tmp_path, capsys):
    """`optdyn mpc quadruped --scenario trot --plant mujoco`, shortened: the scenario's push and
    horizon, gait cycles for the duration, the replay drawing MuJoCo's measured forces."""
    import matplotlib.pyplot

    from optdyn.apps.cli import main
    from optdyn.apps.io import load_closed_loop

    saved, html, png = tmp_path / "loop.npz", tmp_path / "loop.html", tmp_path / "loop.png"
    code = main(["mpc", "quadruped", "--scenario", "trot", "--plant", "mujoco", "--duration", "1.4",
                 "--save", str(saved), "--html", str(html), "--plot", str(png)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "push        base_link: (0, 12, 0) N from 1 s for 0.2 s" in out
    assert "horizon     25 intervals of 0.02 s" in out and "plant: MuJoCo, steps of 0.5 ms" in out
    loop = load_closed_loop(saved)
    assert loop.plant == "mujoco" and loop.params["cone"] == "cost" and loop.params["cycles"] == 4
    lowest, tilt = (float(v) for v in re.search(r"base\s+lowest (\S+) m, largest tilt (\S+)°", out).groups())
    assert lowest == pytest.approx(loop.xs[:, 2].min(), abs=1e-3) and lowest > 0.15 and tilt < 20
    assert "MeshCat.Viewer" in html.read_text()
    figure = optdyn.viz.plots.closed_loop_figure(loop, problems.get("quadruped", **loop.params))
    assert figure.axes[4].get_ylabel().startswith("mujoco: measured normal force")
    matplotlib.pyplot.close(figure)
    assert png.stat().st_size > 0


def test_the_command_lines_mujoco_defaults_on_a_robot_of_ones_own():
    """`optdyn mpc quadruped --plant mujoco --param model=go1.urdf ...`: Go1 keeps its URDF's
    torque limits (not Solo-12's 5 N·m clamp) and the trot's push acts on its root body, the
    12 N scaled by its mass over Solo-12's; Solo-12 keeps its own."""
    from quadrupeds import ROBOTS, erd

    from optdyn.apps.cli import _mujoco_setup, _scenario_push, build_parser
    from problems.gaits import SOLO_SCALE

    urdf, srdf, feet = ROBOTS["go1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robots = erd.getModelPath(urdf)
    own = ["--param", f"model={os.path.join(robots, urdf)}", "--param", f"standing={os.path.join(robots, srdf)}",
           "--param", f"feet={json.dumps(list(feet))}"]
    for extra, frame, mass, effort in (([], "base_link", SOLO_SCALE[0], 5.0), (own, "base", None, None)):
        args = build_parser().parse_args(["mpc", "quadruped", "--scenario", "trot", "--plant", "mujoco", *extra])
        pairs, horizon, clamp = _mujoco_setup(args)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prob = problems.get("quadruped", scenario="trot", cycles=1, **dict(pairs))
        mass = float(prob.model.inertia[:, 0].sum()) if mass is None else mass
        assert clamp == effort and horizon == "25"
        assert _scenario_push(args, prob) == [f"{frame}:0,{12.0 * mass / SOLO_SCALE[0]:.6g},0@1.0+0.2"]


URDF = """<robot name="hopper">
  <link name="base"><inertial><mass value="2.0"/><origin xyz="0.01 0.02 -0.03"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.015" ixy="0.001" ixz="0.0" iyz="0.002"/></inertial></link>
  <link name="leg"><inertial><mass value="0.3"/><origin xyz="0 0 -0.1"/>
    <inertia ixx="0.002" iyy="0.002" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="foot"/>
  <joint name="hip" type="revolute"><parent link="base"/><child link="leg"/><origin xyz="0.1 0 0" rpy="0.1 0 0"/>
    <axis xyz="0 1 0"/><limit effort="7" lower="-3" upper="3" velocity="10"/>
    <dynamics damping="0.3" friction="0.1"/></joint>
  <joint name="ankle" type="fixed"><parent link="leg"/><child link="foot"/><origin xyz="0 0 -0.2"/></joint>
</robot>"""


def test_a_urdf_path_brings_its_effort_damping_and_friction(tmp_path):
    path = tmp_path / "hopper.urdf"
    path.write_text(URDF)
    plant = MujocoPlant(path, feet=["foot"], floor=-0.5)
    m = plant.mj_model
    hip = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "hip")
    assert m.dof_damping[m.jnt_dofadr[hip]] == 0.3 and m.dof_frictionloss[m.jnt_dofadr[hip]] == 0.1
    np.testing.assert_array_equal(m.actuator_ctrlrange[0], [-7.0, 7.0])
    assert m.actuator_ctrllimited[0] and m.nu == 1
    floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    assert m.geom_pos[floor][2] == pytest.approx(-0.5 - plant.foot_radius)
    given = MujocoPlant(plant.model, feet=["foot"]).mj_model  # a Model carries them (Model.damping, .friction)
    assert given.dof_damping[given.jnt_dofadr[hip]] == 0.3 and given.dof_frictionloss[given.jnt_dofadr[hip]] == 0.1
    without = MujocoPlant(path, joint_dynamics=False, effort=2.0)
    assert not without.mj_model.dof_damping.any() and not without.mj_model.dof_frictionloss.any()
    np.testing.assert_array_equal(without.mj_model.actuator_ctrlrange[0], [-2.0, 2.0])


def test_talos_legs_balance_through_a_push_at_the_pelvis():
    """Talos' legs standing in MuJoCo (6D soles as boxes), pushed sideways at the pelvis by 40 N
    for 0.2 s: the base stays within 5 cm of where it stood and upright."""
    prob = problems.get("biped", scenario="stand")
    plant = plant_for(prob)
    assert plant.feet == [("left_sole_link", "6d"), ("right_sole_link", "6d")]
    push = optdyn.Push("base_link", (0.0, 40.0, 0.0), 0.3, 0.2)
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", 1), 1.2, plant=plant, disturbances=[push])
    assert loop.stopped == ""
    motion = optdyn.report.base_motion(prob, loop.xs, loop.t)
    assert motion.largest_tilt < 5.0 and np.abs(loop.xs[:, :2] - prob.x0[:2]).max() < 0.05, motion
    moved = np.abs(loop.xs[:, 1] - prob.x0[1]).max()
    assert moved > 1e-3  # the push acted
