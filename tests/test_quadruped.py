"""Quadruped gaits: the gait builder, the three solvers on Solo-12's trot, stance feet that
stay put and swing feet that land on the ground, the plan replayed with ten times finer steps,
DDP through stance phases, and the jump's flight phase against the laws of a free body (the
CoM on a parabola, constant angular momentum about it); HyQ, ANYmal and Go1 trotting from their
SRDF's standing posture, with weights derived from their mass and height; Solo-8, whose four
point feet are dependent contacts, on damped contact dynamics."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from agreement import assert_same_optimum
from momentum import world_momentum
from quadrupeds import ROBOTS, SOLO8, erd, robot

import dynamics as dyn
import optdyn
from optdyn import Problem
from optdyn.apps.cli import main
from optdyn.apps.clearance import constraint_margins
from optdyn.ocp.residuals import CoMPositionResidual
from optdyn.solvers import ILQR
from optdyn.solvers.riccati import regularize
from problems.gaits import SOLO_SCALE, WEIGHTS, scaled_weights
from problems.quadruped import FEET, gait, make

pytest.importorskip("example_robot_data")


def test_the_gait_builder_gives_each_scenario_its_phases():
    swings, progress = gait("trot", cycles=2, step_knots=10, support_knots=2)
    assert len(swings) == 2 + 2 * 2 * (10 + 2) and len(progress) == len(swings) + 1
    assert {s for s in swings if s} == {("FL_FOOT", "HR_FOOT"), ("FR_FOOT", "HL_FOOT")}
    assert swings[:2] == [(), ()] and swings[2:12] == [("FL_FOOT", "HR_FOOT")] * 10
    assert progress[0] == 0.0 and progress[-1] == pytest.approx(1.0) and np.all(np.diff(progress) >= 0)
    assert progress[2] == 0.0 and progress[12] == pytest.approx(0.25)  # moves only while a pair swings
    swings, _ = gait("walk", cycles=1, step_knots=5, support_knots=1)
    assert [s for s in swings if s][::5] == [("HL_FOOT",), ("FL_FOOT",), ("HR_FOOT",), ("FR_FOOT",)]
    swings, _ = gait("jump", cycles=1, step_knots=5, support_knots=3, dt=0.02, step_height=0.1)
    flight = int(round(np.sqrt(8 * 0.1 / 9.81) / 0.02))
    assert swings == [()] * 3 + [FEET] * flight + [()] * 3


@pytest.mark.parametrize("kw, match", [
    (dict(scenario="gallop"), "^scenario: expected one of walk, trot, jump"),
    (dict(step_knots=0), "^step_knots: expected an integer > 0"),
    (dict(cycles=1.5), "^cycles: expected an integer > 0"),
    (dict(support_knots=-1), "^support_knots: expected an integer ≥ 0"),
    (dict(scenario="jump", support_knots=0), "^support_knots: a jump needs stance phases"),
    (dict(step_length=-0.1), "^step_length: expected a number > 0"),
    (dict(dt=np.nan), "^dt: expected a number > 0"),
    (dict(mu=0.0), "^mu: expected a number > 0"),
])
def test_bad_gait_parameters_are_refused_naming_them(kw, match):
    with pytest.raises(ValueError, match=match):
        make(**kw)


@pytest.fixture(scope="module")
def trot():
    """One trot cycle (26 intervals of 20 ms), each solver with the task's own options."""
    prob = make("trot", cycles=1)
    return prob, {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}


def test_the_solvers_agree_on_the_trot(trot):
    prob, res = trot
    assert all(r.converged for r in res.values()), {s: r.message for s, r in res.items()}
    assert_same_optimum(res)
    r = res["ddp"]
    assert np.max(np.abs(prob.rollout(r.us) - r.xs)) < 1e-6  # the gaps are closed
    assert r.xs[-1, 0] > 0.5 * prob.params["step_length"]  # it went forward


def test_ipopt_reaches_the_optimum_with_its_active_pyramids_on_the_adaptive_barrier(trot):
    """IPOPT's default on a problem with contacts, the adaptive barrier, ends at DDP's optimum
    (7e-9 below it, measured, by the violation tolerance); IPOPT's monotone default stops with
    the active pyramid rows pushed inside, 8.5e-7 above it, in more iterations (23 against 19)."""
    prob, res = trot
    optimum = res["ddp"].cost
    assert abs(res["ipopt"].cost - optimum) < 1e-7 * optimum
    monotone = optdyn.solve(prob, optdyn.solvers.IPOPT(options={"mu_strategy": "monotone"}))
    assert monotone.converged and monotone.cost - optimum > 3e-7 * optimum
    assert res["ipopt"].iterations < monotone.iterations


def test_the_stance_forces_stay_in_the_friction_pyramid(trot):
    """At every knot each stance foot's force is in the friction pyramid of μ = 0.7 with a
    non-negative normal force (to the solvers' constraint tolerance), and somewhere on its
    boundary: the cone shapes the gait."""
    prob, res = trot
    assert len(prob.stage_constraints) == len(FEET)
    for s, r in res.items():
        forces = optdyn.report.contact_forces(prob, r.xs, r.us)
        margins = []
        for cone, foot in zip(prob.stage_constraints, FEET):
            f = forces[foot]
            stance = ~np.isnan(f[:, 2])
            c = cone.value_knots(r.xs[:-1], r.us)[stance]  # c ≥ 0 inside
            assert np.all(c >= -1e-5), (s, foot)
            margins.append(c.min())
            assert np.all(f[stance, 2] >= -1e-5)
            assert np.all(np.hypot(f[stance, 0], f[stance, 1]) <= 0.7 * f[stance, 2] + 1e-5), (s, foot)
        assert min(margins) < 1e-3, s  # active somewhere (IPOPT stays inside by its barrier)
        g = constraint_margins(prob, r.xs, r.us)  # the command line's: at the stance knots
        assert not g.substepped and g.nodes == g.substeps == min(margins), s


def _foot(prob: Problem, xs: np.ndarray, foot: str) -> np.ndarray:
    return np.array([dyn.frame_placement(prob.model, x[:prob.model.nq], foot)[1] for x in xs])


def assert_feet_step(prob: Problem, xs: np.ndarray, feet, steps: int = 1, tol: float = 5e-3) -> None:
    """Each of ``feet`` in contact from knot a to knot b (touchdown impulse at a) keeps its
    position to the integrator's accuracy, lifts by more than half the step height in between,
    lands ``steps`` times at the height of the start and ends ``steps`` step lengths forward,
    both within ``tol`` (m)."""
    for foot in feet:
        p = _foot(prob, xs, foot)
        stance = np.array([foot in [c.frame for c in prob.contacts_at(k)] for k in range(prob.N)] + [True])
        starts = [k for k in range(prob.N + 1) if stance[k] and (k == 0 or not stance[k - 1])]
        assert len(starts) == steps + 1, foot  # standing, then after each step
        for a in starts:
            b = next((k for k in range(a, prob.N + 1) if not stance[k]), prob.N + 1)
            assert np.max(np.abs(p[a:b] - p[a])) < 1e-4, foot
            assert abs(p[a, 2] - p[0, 2]) < tol, foot
        assert p[~stance, 2].max() - p[0, 2] > 0.5 * prob.params["step_height"], foot
        np.testing.assert_allclose(p[-1] - p[0], [steps * prob.params["step_length"], 0.0, 0.0], atol=tol,
                                   err_msg=foot)


def test_stance_feet_stay_put_and_swing_feet_land_on_the_ground(trot):
    prob, res = trot
    assert_feet_step(prob, res["ddp"].xs, FEET)


def test_the_plan_replayed_with_ten_times_finer_steps_stays_near_it(trot):
    """The optimal torques through the contact dynamics with impacts, each interval in ten
    RK4 steps: the knots agree with the plan to the coarse integration's error."""
    prob, res = trot
    r = res["ddp"]
    contacts = [prob.contacts_at(k) for k in range(prob.N) for _ in range(10)]
    fine = Problem(prob.model, prob.x0, N=10 * prob.N, dt=prob.dt / 10, contacts=contacts)
    xs = fine.rollout(np.repeat(r.us, 10, axis=0))[::10]
    err = np.abs(prob.state_difference(xs, r.xs))
    nv = prob.model.nv
    assert np.isfinite(err).all()
    assert err[:, :nv].max() < 3e-3 and err[:, :3].max() < 5e-4  # joints within 3 mrad, the base within 0.5 mm
    assert err[:, nv:].max() < 0.02 * np.abs(r.xs[:, prob.model.nq:]).max()


def test_in_stance_some_torques_move_no_state_and_only_the_control_term_regularises_them():
    """On four feet the torques act on the six degrees of freedom the contacts leave (the
    base's): an interval's B = ∂x⁺/∂u has a six-dimensional null space, the internal contact
    forces (one on two feet: the squeeze along the line between them). Along it Tassa's μBᵀB
    regularises nothing, and μ(BᵀB + I), the feasibility-driven types' (Tassa 2012 Sec. II-F),
    adds μ."""
    prob = make("trot", cycles=1)
    nullities = {}
    for feet in (4, 2):
        k = next(k for k in range(prob.N) if len(prob.contacts_at(k)) == feet)
        A, B = prob.step_derivatives(prob.xs_init[k:k + 1], prob.us_init[k:k + 1], start=k)
        _, s, Vt = np.linalg.svd(B[0])
        null = s < 1e-12 * s[0]
        nullities[feet] = int(null.sum())
        V = Vt[null].T
        nu, ndx = B.shape[2], B.shape[1]
        Quu, Qux = np.eye(nu), np.zeros((nu, ndx))
        for on_controls, added in ((False, 0.0), (True, 1.0)):
            Qux_r, Quu_r = np.empty((nu, ndx)), np.empty((nu, nu))
            regularize(A[0], B[0], Qux, Quu, 1e3, on_controls, Qux_r, Quu_r)
            np.testing.assert_allclose(V.T @ (Quu_r - Quu) @ V, 1e3 * added * np.eye(V.shape[1]), atol=1e-8)
    assert nullities == {4: 6, 2: 1}


def test_the_jump_flies_on_a_parabola_with_constant_angular_momentum():
    """No contact in flight: the CoM accelerates with gravity alone and the angular momentum
    about it is constant (to the RK4 error); on the ground neither holds."""
    prob = make("jump")
    r = optdyn.solve(prob, solver="ilqr")
    assert r.converged, r.message
    m = prob.model
    flight = [k for k in range(prob.N) if not prob.contacts_at(k)]
    knots = np.arange(flight[0], flight[-1] + 2)  # the states bounding the flight intervals
    c = CoMPositionResidual(m).evaluate(r.xs, np.zeros((prob.N + 1, prob.nu))).r
    acc = (c[knots[2:]] - 2 * c[knots[1:-1]] + c[knots[:-2]]) / prob.dt ** 2
    momenta = np.array([world_momentum(m, r.xs[k], "base_link", c[k]) for k in knots])
    mass = sum(m.inertia[:, 0])
    inner = knots[1:-1]  # m ċ against central differences of c inside the flight
    assert np.max(np.abs(momenta[1:-1, :3] - mass * (c[inner + 1] - c[inner - 1]) / (2 * prob.dt))) < 0.01 * mass
    L = momenta[:, 3:]
    tol = 5e-3 * np.abs(L).max()  # the RK4 error: its drift falls with finer steps
    assert np.max(np.abs(L - L[0])) < tol
    ground = np.array([world_momentum(m, r.xs[k], "base_link", c[k])[3:] for k in range(flight[0] - 3, flight[0])])
    assert np.max(np.abs(acc - m.gravity)) < 1e-2 * 9.81
    assert np.max(np.abs(np.diff(ground, axis=0))) > 1e2 * tol


def test_a_problem_with_contacts_starts_by_multiple_shooting_unless_told_otherwise():
    """DDP and iLQR by name solve a problem with contacts in their feasibility-driven forms,
    from its states; an instance is taken as it is."""
    prob = make("jump")
    assert prob.solver_options == {}  # the defaults serve it: the pyramids are in units of the weight
    assert [optdyn.solve(prob, s, max_iter=0).solver for s in ("ddp", "ilqr")] == ["fddp", "filqr"]
    plain = optdyn.solve(prob, ILQR(max_iter=0))
    assert plain.solver == "ilqr" and plain.extra["initial_guess"] in ("problem", "rest")
    fd = optdyn.solve(prob, "ilqr", max_iter=0)
    np.testing.assert_array_equal(fd.xs, prob.xs_init)  # the task's states, not a rollout


def test_the_trot_under_mpc_keeps_trotting_through_a_push():
    """The two-cycle trot (1 s; without its friction constraint, which the augmented
    Lagrangian cannot hold with one iteration per step) under iLQR real-time iterations with a
    0.4 s horizon moving along the task — its contact sequence, swing arcs and their weights
    move with time — against the 10× finer plant on the task's contacts: undisturbed and
    pushed sideways by 10 N for 0.1 s it trots on, every foot lands two steps on within 1 cm
    on the ground (measured 2 mm high), the base stays up."""
    prob = make("trot", mu=None)
    sway = {}
    for force in (0.0, 10.0):
        pushes = [optdyn.Push("base_link", (0.0, force, 0.0), 0.3, 0.1)] if force else []
        loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", horizon=20), prob.T + 0.5, disturbances=pushes)
        assert not loop.stopped and len(loop.us) == 75
        start, end = (np.array([_foot(prob, loop.xs[[k]], foot)[0] for foot in FEET]) for k in (0, -1))
        np.testing.assert_allclose(end[:, 0] - start[:, 0], 2 * prob.params["step_length"], atol=0.01)
        np.testing.assert_allclose(end[:, 2], start[:, 2], atol=5e-3)
        assert loop.xs[-1, 0] > 0.3 and loop.xs[:, 2].min() > 0.2
        sway[force] = np.abs(loop.xs[:, 1]).max()
    assert sway[10.0] > sway[0.0] + 0.02, sway  # the push moved it


def _knot_margins(xs: np.ndarray, us: np.ndarray) -> np.ndarray:
    """The least margin (N, ≥ 0 inside) of the stance feet's forces in the friction pyramid of
    the constrained trot at each knot (xs (K + 1, nx), us (K, nu)): its last interval held past
    the end, as the plant holds it (the task's rows, in units of the weight, times their unit)."""
    task = make("trot").window(0, len(us))
    units = np.concatenate([c.scale[c.rows] for c in task.stage_constraints])
    g = task.stage_constraint_values(xs[:-1], us) * units
    stance = np.concatenate([np.repeat(c.residual.defined_at()[:, None], c.size, 1) for c in task.stage_constraints], 1)
    return np.where(stance, g, np.inf).min(axis=1)


def test_the_trot_keeps_its_friction_pyramid_under_real_time_mpc():
    """With the pyramid as a relaxed-log-barrier cost (cone="cost"), iLQR with one iteration
    per step and a 0.4 s horizon trots the whole task with every stance force at every knot
    inside the pyramid (measured ≥ 0.17 N inside; with 10 N pushing sideways for 0.1 s, ≥ 0.017
    N), the feet land two steps on and the base stays within 3 cm of the task's own optimum
    (measured 2.5 cm). Without the cone the same loop pushes the feet outside by newtons."""
    with pytest.raises(ValueError, match="^cone: expected one of constraint, cost"):
        make("trot", cone="barrier")
    prob = make("trot", cone="cost")
    assert not prob.stage_constraints and prob.params["cone"] == "cost"
    own = optdyn.solve(prob, "ilqr")
    assert own.converged and _knot_margins(own.xs, own.us).min() > 0.0
    least = {}
    for force in (0.0, 10.0):
        loop = optdyn.simulate(optdyn.MPC(prob, "ilqr", horizon=20), prob.T + 0.2,
                               disturbances=[optdyn.Push("base_link", (0.0, force, 0.0), 0.3, 0.1)] * bool(force))
        feet = np.array([[_foot(prob, loop.xs[[k]], f)[0] for f in FEET] for k in (0, -1)])
        moved = np.abs(feet[1] - feet[0] - [2 * prob.params["step_length"], 0.0, 0.0]).max(axis=0)
        assert not loop.stopped and len(loop.us) == 60 and np.all(moved < [0.01, 0.01, 5e-3]), moved
        least[force] = _knot_margins(loop.xs, loop.us).min()
        if not force:
            assert np.abs(loop.xs[: prob.N + 1, :3] - own.xs[:, :3]).max() < 0.03
    assert least[0.0] > 0.1 and least[10.0] > -0.05, least
    free = make("trot", mu=None)
    loop = optdyn.simulate(optdyn.MPC(free, "ilqr", horizon=20), free.T + 0.2)
    assert _knot_margins(loop.xs, loop.us).min() < -1.0


@pytest.mark.parametrize("name", list(ROBOTS))
def test_other_robots_trot_from_their_srdf_posture_and_the_solvers_agree(name):
    """A short trot (one cycle, steps of four intervals: 11 in all) with the friction pyramid:
    DDP, iLQR and IPOPT converge to the same optimum — costs within 1e-6 relative (measured
    8e-9 to 3.1e-7: IPOPT's barrier keeps the active pyramid rows inside), controls within
    1e-3 of the largest; the feet step as Solo-12's do, landing within 2 cm (measured 7 to 16
    mm, 2 to 3 % of the base's height: four intervals make a coarse step, on which Solo-12
    misses by 10 mm; with the default ten every quadruped lands within 5 mm). The legged
    manipulators (B1 with a Z1 arm, ANYmal B with a Kinova arm) trot with their arm up, its
    joints actuated with the legs' (landing within 10 and 16 mm)."""
    model, feet, standing = robot(name)
    prob = make("trot", cycles=1, step_knots=4, support_knots=1, model=model, feet=feet, standing=standing)
    assert prob.name == f"quadruped:{model.name}" and np.array_equal(prob.x0[:model.nq], standing)
    res = {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}
    assert_same_optimum(res)
    assert_feet_step(prob, res["ddp"].xs, feet, tol=0.02)


def test_solo8s_dependent_feet_trot_with_damped_contacts():
    """Solo-8 (no abduction joints) on four point feet has dependent contacts: the problem is
    refused, naming ``contact_damping``, with a guess of one's own too (whose rollout failed
    without saying why); its URDF and SRDF files load as the command line passes them (the
    SRDF, Solo-12's too, names abduction joints: skipped with a warning); with 1e-3
    (feet drifting by μλ, 0.5–1 cm/s² at its 5–10 N per foot) the short trot's three solvers
    reach one optimum (measured: costs within 3e-8 relative, DDP 64, iLQR 78 and IPOPT 23
    iterations) and the feet step."""
    model, feet, standing = robot("solo8")
    kw = dict(cycles=1, step_knots=4, support_knots=1, model=model, feet=feet, standing=standing)
    with pytest.raises(ValueError, match=r"^contacts: dependent contact constraints .* pass contact_damping > 0"):
        make("trot", **kw)
    urdf, srdf = (os.path.join(erd.getModelPath(f), f) for f in SOLO8[:2])  # as the command line passes them
    with pytest.warns(UserWarning, match=r"^srdf: skipped what model 'solo' does not have: joint 'FL_HAA', "):
        files = make("trot", model=urdf, standing=srdf, feet=feet, contact_damping=1e-3)
    np.testing.assert_array_equal(files.x0[:model.nq], standing)
    prob = make("trot", contact_damping=1e-3, **kw)
    assert prob.contact_damping == 1e-3 and prob.params["contact_damping"] == 1e-3
    with pytest.raises(ValueError, match=r"^contacts: dependent contact constraints .* pass contact_damping > 0"):
        Problem(model, prob.x0, prob.N, prob.dt, contacts=prob.contacts, us_init=prob.us_init)  # a guess of one's own
    res = {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}
    assert_same_optimum(res)
    assert_feet_step(prob, res["ddp"].xs, feet, tol=0.02)


def test_solo8_trots_under_mpc_on_the_librarys_plant_with_its_damped_contacts():
    """The library's plant integrates the task's damped contact dynamics and touchdown impulses
    (undamped, Solo-8's dependent feet would stop it at the first stance): one iLQR iteration
    per step over the short trot and past its end, the base within 2 cm of the plan's height."""
    model, feet, standing = robot("solo8")
    prob = make("trot", cycles=1, step_knots=4, support_knots=1, model=model, feet=feet, standing=standing,
                contact_damping=1e-2)
    plan = optdyn.solve(prob, "ilqr")
    loop = optdyn.simulate(optdyn.MPC(prob, "ilqr"), prob.T)
    assert loop.stopped == "" and prob.impulses.any()
    assert np.abs(loop.xs[:, 2] - plan.xs[: loop.xs.shape[0], 2]).max() < 0.02


def test_a_trot_within_the_urdfs_torque_limits_converges_to_one_optimum():
    """Go1's one-cycle trot with its URDF's torque limits as the control box: the unbounded
    optimum asks 1.73× the limits at lift-off, so the box binds. DDP and iLQR (FDDP and FiLQR
    here) reach IPOPT's optimum, the box active. The friction pyramid's augmented Lagrangian
    starts each later inner solve from a rollout; an inner solve left the box out of its
    backward pass until its first full step even there, so that every step pushed the
    saturated torques through the box, the forward pass clamped them back and no step was
    accepted: both stopped with a failed line search after 207 and 209 iterations."""
    model, feet, standing = robot("go1")
    prob = make("trot", cycles=1, model=model, feet=feet, standing=standing, torque_limit="urdf")
    limit = model.effort_limit[model.nv - prob.nu:]
    np.testing.assert_array_equal(prob.u_upper, limit)
    np.testing.assert_array_equal(prob.u_lower, -limit)
    res = {s: optdyn.solve(prob, solver=s) for s in ("ddp", "ilqr", "ipopt")}
    assert_same_optimum(res)
    assert np.max(np.abs(res["ddp"].us) / limit) == pytest.approx(1.0, abs=1e-12)
    assert prob.violation(res["ddp"].xs, res["ddp"].us) < 1e-6


def test_the_weights_are_solos_scaled_by_the_robots_mass_and_height():
    """Solo-12 by default gets its weights exactly; a robot 8 times heavier and twice as tall
    weighs lengths 4 times less, torques 256 times less and widens the barrier 8 times (HyQ: its
    own mass and height); every robot's friction pyramids are stated in units of its weight."""
    solo = make("trot", cycles=1)
    assert scaled_weights(WEIGHTS, SOLO_SCALE, SOLO_SCALE) == WEIGHTS
    m, h = SOLO_SCALE
    big = scaled_weights(WEIGHTS, (8 * m, 2 * h), SOLO_SCALE)
    assert big == pytest.approx({**WEIGHTS, "base_height": 25.0, "swing": 2.5e5, "control": 0.1 / 256,
                                 "cone_width": 0.8}, rel=1e-14)
    model, feet, standing = robot("hyq")
    hyq = make("trot", cycles=1, model=model, feet=feet, standing=standing)
    mass = model.inertia[:, 0].sum()
    height = standing[2] - np.mean([dyn.frame_placement(model, standing, f)[1][2] for f in feet])
    assert (mass, height) == pytest.approx((86.774, 0.5775), abs=1e-3)
    weight = mass * 9.81
    cones = hyq.stage_constraints  # the pyramids depend on the control
    assert len(cones) == 4 and hyq.solver_options == {}
    assert all(np.allclose(c.scale, weight, rtol=1e-14) and np.all(c.signs == -1.0 / c.scale[c.rows]) for c in cones)
    u = np.random.default_rng(0).normal(size=(hyq.N, hyq.nu))
    xs = np.tile(hyq.x0, (hyq.N + 1, 1))
    control = 0.5 * hyq.dt * WEIGHTS["control"] * (m * h / (mass * height)) ** 2 * np.sum(u ** 2)
    assert hyq.cost(xs, u) - hyq.cost(xs, np.zeros_like(u)) == pytest.approx(control, rel=1e-12)
    assert np.allclose(solo.stage_constraints[0].scale, SOLO_SCALE[0] * 9.81, rtol=1e-14)


def test_solo_given_explicitly_is_the_default_problem():
    default = make("trot", cycles=1)
    own = make("trot", cycles=1, model=default.model, feet=FEET, standing=default.x0[:default.model.nq])
    rng = np.random.default_rng(1)
    us = rng.normal(size=(default.N, default.nu))
    xs = np.array([np.r_[dyn.integrate(default.model, default.x0[:19], 0.1 * rng.normal(size=18)), rng.normal(size=18)]
                   for _ in range(default.N + 1)])
    assert own.cost(xs, us) == default.cost(xs, us) and own.name == f"quadruped:{default.model.name}"
    assert own.solver_options == default.solver_options and own.params == default.params


def test_a_robot_of_ones_own_from_its_urdf_and_srdf_paths_is_the_loaded_ones(tmp_path, capsys):
    """make(model="robot.urdf", standing="robot.srdf") — what the command line's --param gives —
    is the task of the model loaded on a free-flyer at the SRDF's 'standing'; an SRDF without
    that posture is refused naming standing and the postures it has; `optdyn solve` trots Go1
    from its files, its feet listed by comma."""
    urdf, srdf, feet = ROBOTS["go1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robots = erd.getModelPath(urdf)
    urdf, srdf = os.path.join(robots, urdf), os.path.join(robots, srdf)
    model, _, standing = robot("go1")
    loaded = make("trot", cycles=1, step_knots=4, model=model, feet=feet, standing=standing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its meshes (package:// paths), dummy inertias
        files = make("trot", cycles=1, step_knots=4, model=urdf, feet=feet, standing=srdf)
    rng = np.random.default_rng(4)
    us = rng.normal(size=(loaded.N, loaded.nu))
    xs = np.tile(loaded.x0, (loaded.N + 1, 1)) + 0.01 * rng.normal(size=(loaded.N + 1, loaded.nx))
    xs[:, 3:7] = loaded.x0[3:7]
    assert files.cost(xs, us) == loaded.cost(xs, us) and files.name == loaded.name
    other = tmp_path / "other.srdf"
    other.write_text('<robot name="go1"><group_state name="crouch" group="all"/></robot>')
    with warnings.catch_warnings(), pytest.raises(ValueError, match=r"^standing: the SRDF .* has no reference "
                                                                   r"configuration 'standing' \(it has 'crouch'\)"):
        warnings.simplefilter("ignore")
        make("trot", model=urdf, feet=feet, standing=str(other))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(["solve", "quadruped", "--scenario", "trot", "--param", "cycles=1", "--param", "step_knots=4",
              "--param", f"model={urdf}", "--param", f"standing={srdf}", "--param", f"feet={','.join(feet)}",
              "--quiet"])
    assert "status      converged" in capsys.readouterr().out


@pytest.mark.parametrize("kw, match", [
    (dict(feet=("lf_foot", "rf_foot", "lh_foot")), r"^feet: expected 4 distinct frame names of robot 'hyq'"),
    (dict(feet=("lf_foot", "rf_foot", "lh_foot", "RH_FOOT")),
     r"^feet: robot 'hyq' has no frame 'RH_FOOT'; its frames: .*rh_foot"),
    (dict(feet=("lf_foot", "lh_foot", "rf_foot", "rh_foot")),  # Pinocchio's order of the legs, not the gait's
     r"^feet: expected \(left front, right front, left hind, right hind\) .* lh_foot \(-0.\d+, \+0.\d+\)"),
    (dict(feet=None), r"^feet: a model= of one's own needs its four feet's frames"),
    (dict(torque_limit="effort"), r"^torque_limit: expected None, 'urdf', a number or 12 numbers > 0"),
    (dict(torque_limit=[50.0, 50.0]), r"^torque_limit: expected None, 'urdf', a number or 12 numbers > 0"),
    (dict(torque_limit=0.0), r"^torque_limit: expected None, 'urdf', a number or 12 numbers > 0"),
    (dict(armature=[0.01, 0.01]), r"^armature: expected None, a number or 12 numbers ≥ 0 \(kg·m²\), got \[0.01"),
    (dict(armature=-0.01), r"^armature: expected None, a number or 12 numbers ≥ 0"),
    (dict(armature=float("nan")), r"^armature: expected None, a number or 12 numbers ≥ 0"),
    (dict(armature="menagerie"), r"^armature: expected None, a number or 12 numbers ≥ 0"),
    (dict(standing=None), r"^standing: a model= of one's own needs its standing configuration"),
    (dict(standing=np.zeros(12)), r"^standing: expected a finite configuration of robot 'hyq' \(19 numbers"),
    (dict(standing=np.r_[0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 2.0, np.zeros(12)]), r"^standing: its quaternions"),
    (dict(standing=np.r_[0.0, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0, np.zeros(12)]),  # upside down
     r"^standing: the base stands -0.\d+ m above its feet"),
])
def test_a_robot_of_ones_own_with_wrong_feet_or_posture_is_refused_naming_them(kw, match):
    model, feet, standing = robot("hyq")
    with pytest.raises(ValueError, match=match):
        make(**{"model": model, "feet": feet, "standing": standing, **kw})


def test_a_robot_without_a_floating_base_is_refused():
    with pytest.raises(ValueError, match=r"^model: expected a dynamics.Model on a free-flyer root"):
        make(model=dyn.models.ur5(), feet=FEET, standing=np.zeros(6))
    with pytest.raises(ValueError, match=r"^model: expected a dynamics.Model on a free-flyer root .*got int"):
        make(model=3, feet=FEET, standing=np.zeros(19))
    with pytest.raises(ValueError, match=r"^urdf: file 'hyq.urdf' not found"):  # a path: the URDF it names
        make(model="hyq.urdf", feet=FEET, standing=np.zeros(19))
