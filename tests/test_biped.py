"""Talos' legs walk: the biped gait builder and its bad parameters, the three solvers on one
step, each stance sole's wrench in its contact wrench cone, stance soles that neither slide nor
rotate, the swinging sole landing level, further forward; the robot given explicitly; a step of
Unitree G1's legs, a humanoid the project does not ship."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from agreement import assert_same_optimum

import dynamics as dyn
import optdyn
from problems.biped import make, talos_legs
from problems.gaits import BIPED_WEIGHTS, SOLES, TALOS_SCALE, biped_gait, scaled_weights

erd = pytest.importorskip("example_robot_data")

LEFT, RIGHT = SOLES


def test_the_gait_builder_alternates_the_soles_from_the_right():
    swings, progress = biped_gait(steps=3, step_knots=4, support_knots=2)
    assert swings == [()] * 2 + ([(RIGHT,)] * 4 + [()] * 2 + [(LEFT,)] * 4 + [()] * 2) + [(RIGHT,)] * 4 + [()] * 2
    assert len(progress) == len(swings) + 1 and progress[0] == 0.0 and progress[-1] == pytest.approx(1.0)
    assert progress[2] == 0.0 and progress[6] == pytest.approx(1 / 3) and progress[8] == progress[6]
    assert biped_gait(steps=1, step_knots=3, support_knots=0)[0] == [(RIGHT,)] * 3


@pytest.mark.parametrize("kw, match", [
    (dict(scenario="run"), "^scenario: expected one of walk, stand"),
    (dict(steps=0), "^steps: expected an integer > 0"),
    (dict(steps=1.5), "^steps: expected an integer > 0"), (dict(step_height=0.0), "^step_height: expected a number > 0"),
    (dict(support_knots=-1), "^support_knots: expected an integer ≥ 0"), (dict(mu=0.0), "^mu: expected a number > 0"),
])
def test_bad_walk_parameters_are_refused_naming_them(kw, match):
    """(The checks the quadruped shares, its test covers: step_knots, step_length, dt.)"""
    with pytest.raises(ValueError, match=match):
        make(**kw)


@pytest.fixture(scope="module")
def step():
    """One step of the right sole (2 + 10 + 2 intervals of 30 ms), each solver with the task's options."""
    prob = make(steps=1, step_knots=10, support_knots=2)
    return prob, {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}


def test_the_solvers_agree_on_one_step(step):
    prob, res = step
    assert_same_optimum(res)
    r = res["ddp"]
    assert np.max(np.abs(prob.rollout(r.us) - r.xs)) < 1e-6  # the gaps are closed
    assert r.xs[-1, 0] > 0.25 * prob.params["step_length"]  # the base went forward


def test_the_stance_wrenches_stay_in_the_contact_wrench_cone(step):
    """At every knot each stance sole's wrench (in its own axes) has f_z ≥ 0, its force in
    the friction pyramid and its centre of pressure in the sole (to the solvers' tolerance:
    1e-6 of the rows' unit, the robot's weight, at the sole's edge for the moments), and the
    cone is active somewhere: it shapes the walk."""
    prob, res = step
    assert len(prob.stage_constraints) == len(SOLES)
    X, Y = prob.stage_constraints[0].residual.half_lengths
    mu = 0.7 * np.cos(np.pi / 4)
    tol = 1.1e-6 * prob.model.inertia[:, 0].sum() * 9.81
    for s, r in res.items():
        wrenches = optdyn.report.contact_forces(prob, r.xs, r.us)
        stance = {sole: ~np.isnan(wrenches[sole][:, 2]) for sole in SOLES}
        c = np.vstack([cone.value_knots(r.xs[:-1], r.us)[stance[sole]]  # c ≥ 0 inside
                       for cone, sole in zip(prob.stage_constraints, SOLES)])
        assert c.min() >= -1e-5 and c.min() < 1e-3, s  # active somewhere (IPOPT stays inside by its barrier)
        w = np.vstack([wrenches[sole][stance[sole]] for sole in SOLES])
        f, tau = w[:, :3], w[:, 3:]
        assert np.all(f[:, 2] >= -tol) and np.all(np.abs(f[:, :2]) <= mu * f[:, 2:] + tol), s
        assert np.all(np.abs(tau[:, :2]) <= np.array([Y, X]) * (f[:, 2:] + tol)), s  # the centre of pressure


def test_stance_soles_neither_slide_nor_rotate_and_the_swing_sole_lands_level_forward(step):
    """A sole in contact from knot a to knot b (touchdown impulse at a) keeps its placement
    to the integrator's accuracy; the right sole lifts, and lands step_length further
    forward, level, at the height it left."""
    prob, res = step
    xs = res["ddp"].xs
    L, h = prob.params["step_length"], prob.params["step_height"]
    for sole in SOLES:
        R, p = zip(*(dyn.frame_placement(prob.model, x[:prob.model.nq], sole) for x in xs))
        R, p = np.array(R), np.array(p)
        stance = np.array([sole in [c.frame for c in prob.contacts_at(k)] for k in range(prob.N)] + [True])
        starts = [k for k in range(prob.N + 1) if stance[k] and (k == 0 or not stance[k - 1])]
        assert len(starts) == (2 if sole == RIGHT else 1)
        for a in starts:
            b = next((k for k in range(a, prob.N + 1) if not stance[k]), prob.N + 1)
            assert np.max(np.abs(p[a:b] - p[a])) < 1e-4, sole
            assert np.max(np.abs(R[a:b] - R[a])) < 1e-4, sole
        if sole == RIGHT:
            landing = starts[1]
            assert p[~stance, 2].max() - p[0, 2] > 0.5 * h
            assert abs(p[landing, 0] - p[0, 0] - L) < 0.1 * L and abs(p[landing, 2] - p[0, 2]) < 5e-3
            assert np.max(np.abs(R[landing] - R[0])) < 0.02


def test_the_tasks_ship_no_options_and_ipopt_converges_on_the_stand_with_its_defaults():
    """Neither the stand nor the walk ships options; standing on both soles, IPOPT with its
    defaults (the adaptive barrier of a problem with contacts) converges to DDP's optimum."""
    prob = make(scenario="stand")
    assert prob.solver_options == {} and make().solver_options == {}
    ipopt, ddp = optdyn.solve(prob, solver="ipopt"), optdyn.solve(prob, solver="ddp")
    assert ipopt.status == "converged" and ddp.converged, (ipopt.message, ddp.message)
    assert abs(ipopt.cost - ddp.cost) <= 1e-6 * abs(ddp.cost)


def test_ipopt_converges_on_the_walk_to_ddps_optimum():
    """The default walk (two steps) by IPOPT with its defaults ends 'converged', not
    'acceptable': with an SE(3) logarithm that lost digits at the soles' small orientation
    errors, its cost was noisy at 1e-7 (relative) and IPOPT's dual infeasibility stalled above
    its tolerance (44 iterations, 'acceptable'); exact to rounding, 32."""
    prob = make()
    ipopt, ddp = optdyn.solve(prob, solver="ipopt"), optdyn.solve(prob, solver="ddp")
    assert ipopt.status == "converged" and ddp.converged, (ipopt.message, ddp.message)
    assert abs(ipopt.cost - ddp.cost) <= 1e-6 * abs(ddp.cost)


def test_talos_given_explicitly_is_the_default_walk_and_a_robot_of_ones_own_is_checked():
    """make(model=, soles=, standing=, sole_half_lengths=) with Talos' own is the default walk
    (same costs and constraints at any trajectory, same options); its scale gives Talos' weights
    exactly; what a robot of one's own lacks is refused naming it."""
    model, q0, half = talos_legs()
    default = make(steps=1, step_knots=3, support_knots=1)
    own = make(steps=1, step_knots=3, support_knots=1, model=model, soles=SOLES, standing=q0, sole_half_lengths=half)
    rng = np.random.default_rng(2)
    us = rng.normal(size=(default.N, default.nu))
    xs = np.array([np.r_[dyn.integrate(model, q0, 0.05 * rng.normal(size=model.nv)), rng.normal(size=model.nv)]
                   for _ in range(default.N + 1)])
    assert own.cost(xs, us) == default.cost(xs, us) and own.name == f"biped:{model.name}"
    np.testing.assert_array_equal(own.stage_constraint_values(xs[:-1], us), default.stage_constraint_values(xs[:-1], us))
    assert own.solver_options == default.solver_options == {}
    assert scaled_weights(BIPED_WEIGHTS, TALOS_SCALE, TALOS_SCALE) == BIPED_WEIGHTS
    kw = dict(model=model, soles=SOLES, standing=q0, sole_half_lengths=half)
    for bad, match in [(dict(soles=("left_sole_link", "right_foot")),
                        r"^soles: robot '.*' has no frame 'right_foot'; its frames: .*right_sole_link"),
                       (dict(sole_half_lengths=None), r"^sole_half_lengths: a model= of one's own needs its soles'"),
                       (dict(standing=None), r"^standing: a model= of one's own needs"),
                       (dict(soles=SOLES[:1]), r"^soles: expected 2 distinct frame names")]:
        with pytest.raises(ValueError, match=match):
            make(steps=1, **{**kw, **bad})
    assert not make(steps=1, mu=None, **{**kw, "sole_half_lengths": None}).stage_constraints
    rotors = make(steps=1, armature=0.1, **kw)  # Talos' SRDF's reflected rotor inertia on every leg joint
    np.testing.assert_array_equal(rotors.model.armature, np.r_[np.zeros(6), np.full(12, 0.1)])
    assert rotors.params["armature"] == 0.1 and not own.model.armature.any()
    with pytest.raises(ValueError, match=r"^armature: expected None, a number or 12 numbers ≥ 0 \(kg·m²\)"):
        make(steps=1, armature=np.full(18, 0.1), **kw)


G1 = "g1_description/urdf/g1_29dof_rev_1_0.urdf"
"""Unitree G1's URDF in example-robot-data: a humanoid the project does not ship."""


def test_a_humanoid_the_project_does_not_ship_takes_a_step():
    """Unitree G1's legs (its URDF, the waist and arms locked at zero; knees bent by hand, its
    SRDF not being in example-robot-data) take one step as a user builds it: the three solvers
    reach one optimum, DDP's and iLQR's wrench cones met to 1e-6 of the weight."""
    robots = erd.getModelPath(G1)
    if not os.path.exists(os.path.join(robots, G1)):
        pytest.skip("this example-robot-data has no Unitree G1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # meshes
        full = dyn.load_urdf(os.path.join(robots, G1), root_joint="free-flyer")
        legs = ("hip", "knee", "ankle")
        locked = {name: 0.0 for name in full.joint_names[1:] if not any(k in name for k in legs)}
        model = dyn.load_urdf(os.path.join(robots, G1), root_joint="free-flyer", locked_joints=locked)
    q0 = dyn.neutral(model)
    for i, name in enumerate(model.joint_names):
        for joint, angle in {"hip_pitch": -0.2, "knee": 0.4, "ankle_pitch": -0.2}.items():
            if joint in name:
                q0[model.idx_qs[i]] = angle
    soles = ("left_ankle_roll_link", "right_ankle_roll_link")
    q0[2] = 0.05 - dyn.frame_placement(model, q0, soles[0])[1][2]
    prob = make(steps=1, model=model, soles=soles, standing=q0, sole_half_lengths=(0.09, 0.03))
    assert model.nv == 18 and prob.name == f"biped:{model.name}"
    res = {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}
    assert_same_optimum(res)
    assert max(res[s].extra["violation"] for s in ("ddp", "ilqr")) <= 1e-6
    assert res["ddp"].xs[-1, 0] > 0.25 * prob.params["step_length"]  # the base went forward
