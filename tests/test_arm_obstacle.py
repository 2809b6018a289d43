"""The obstacle-avoiding arm (problems.arm_obstacle), the clearance checker
(optdyn.apps.clearance) and the problem registry (problems).

The solver tests solve the paper's setting (20 intervals × 4 RK4 steps) with IPOPT and
check the result with the sub-step clearance checker, then cross-check the optimum
against iLQR/DDP on the same discrete problem.
"""
from __future__ import annotations

import numpy as np
import pytest

import dynamics as dyn
import problems
from optdyn.apps.clearance import clearances, point_clearances
from optdyn.ocp.constraints import StateEquality
from optdyn.solvers.ipopt import IPOPT
from optdyn.ocp.problem import Problem
from optdyn.solvers.solve import solve
from problems import arm_obstacle

SCENARIOS = ("bent", "straight")


@pytest.fixture(scope="module", params=SCENARIOS)
def arm(request):
    return arm_obstacle.make(request.param)


@pytest.fixture(scope="module")
def ipopt_solutions():
    """IPOPT (exact Hessian) solutions of both scenarios, computed once."""
    out = {}
    for sc in SCENARIOS:
        prob = arm_obstacle.make(sc)
        out[sc] = (prob, IPOPT(hessian="exact").solve(prob))
    return out


# ---------------------------------------------------------------- problem set-up
def test_paper_discretisation_and_attributes(arm):
    assert (arm.N, arm.substeps, arm.integrator) == (20, 4, "rk4")
    assert arm.dt == pytest.approx(0.2) and arm.T == pytest.approx(4.0)
    assert arm.dt / arm.substeps == pytest.approx(0.05)
    model = arm.model
    np.testing.assert_array_equal(arm.u_upper, model.effort_limit)
    np.testing.assert_array_equal(arm.u_lower, -model.effort_limit)
    np.testing.assert_array_equal(arm.x0[model.nv:], 0.0)
    np.testing.assert_array_equal(arm.x_goal[model.nv:], 0.0)
    np.testing.assert_array_equal(arm.x_goal[:model.nv], arm.q_goal)
    h, hx, _ = arm.terminal_constraint_terms(arm.x_goal)
    assert np.all(h == 0) and hx.shape == (arm.nx, arm.nx)  # goal at rest, all 12 states
    links = {}
    for frame, offset in arm.collision_points:
        links[frame] = links.get(frame, 0) + 1
        assert offset.shape == (3,)
    assert len(links) == 3 and min(links.values()) >= 3
    assert arm.nc == len(arm.collision_points)
    (center, radius), = arm.obstacles
    assert center.shape == (3,) and radius > 0 and arm.margin > 0


def test_finer_variant():
    prob = arm_obstacle.make("bent", intervals=80, substeps=1)
    assert prob.N == 80 and prob.substeps == 1 and prob.dt == pytest.approx(0.05)
    assert prob.T == pytest.approx(4.0)


def test_initial_guess_is_the_papers(arm):
    nv = arm.model.nv
    s = np.linspace(0, 1, arm.N + 1)[:, None]
    np.testing.assert_allclose(arm.xs_init[:, :nv], (1 - s) * arm.q_start + s * arm.q_goal, atol=1e-15)
    np.testing.assert_array_equal(arm.xs_init[:, nv:], 0.0)
    for k in range(arm.N):
        q = arm.xs_init[k, :nv]
        np.testing.assert_allclose(arm.us_init[k], dyn.rnea(arm.model, q, np.zeros(nv), np.zeros(nv)), atol=1e-12)


def test_straight_interpolation_penetrates_and_endpoints_are_clear(arm):
    s = np.linspace(0, 1, 201)[:, None]
    qs = (1 - s) * arm.q_start + s * arm.q_goal
    d = point_clearances(arm, qs)
    assert d.min() < -0.05, "the straight joint-space path must go through the sphere"
    assert d[0].min() > arm.margin and d[-1].min() > arm.margin


@pytest.mark.parametrize("kw, match", [
    ({"scenario": "zigzag"}, "scenario"),
    ({"intervals": 0}, "intervals"),
    ({"substeps": 1.5}, "substeps"),
    ({"horizon": -1.0}, "horizon"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        arm_obstacle.make(**kw)


# ------------------------------------------------------------- clearance checker
def test_checker_agrees_with_the_compiled_constraint():
    """Node clearances by frame_placement vs the SphereClearance constraint (point kinematics)."""
    prob = arm_obstacle.make("bent")
    rng = np.random.default_rng(3)
    xs = prob.xs_init + 0.1 * rng.standard_normal(prob.xs_init.shape)
    us = prob.us_init
    res = clearances(prob, xs, us)
    c = prob.path_constraints[0].evaluate(xs)[0]
    np.testing.assert_allclose(res.nodes, c + prob.margin, atol=1e-12)
    assert res.min_nodes == pytest.approx((c[1:] + prob.margin).min())


def test_checker_integrates_every_substep():
    """Sub-step s of interval k is s RK4 steps of dt/m from x_k with u_k held."""
    prob = arm_obstacle.make("straight", intervals=5, substeps=3)
    rng = np.random.default_rng(4)
    xs = prob.xs_init.copy()
    xs[:, prob.model.nv:] = rng.uniform(-1, 1, (prob.N + 1, prob.model.nv))  # moving arm
    us = prob.us_init + rng.uniform(-5, 5, prob.us_init.shape)
    res = clearances(prob, xs, us)
    assert res.substeps.shape == (prob.N, prob.substeps + 1, prob.nc)
    np.testing.assert_allclose(res.substeps[:, 0], res.nodes[:-1], atol=1e-12)
    for s in range(1, prob.substeps + 1):
        part = Problem(prob.model, prob.x0, prob.N, prob.dt * s / prob.substeps, substeps=s)
        x_s = part.step(xs[:-1], us)
        np.testing.assert_allclose(res.substeps[:, s], point_clearances(prob, x_s[:, :prob.model.nq]), atol=1e-9)
        np.testing.assert_allclose(res.times[:, s], prob.dt * (np.arange(prob.N) + s / prob.substeps))
    assert res.min == res.substeps.min() and res.substeps[res.argmin] == res.min
    assert np.abs(res.substeps[:, -1] - res.nodes[1:]).max() > 1e-3  # not just the nodes


def test_checker_rejects_bad_input():
    prob = arm_obstacle.make("bent")
    with pytest.raises(ValueError, match="xs"):
        clearances(prob, prob.xs_init[:-1], prob.us_init)
    xs = prob.xs_init.copy()
    xs[3, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        clearances(prob, xs, prob.us_init)
    with pytest.raises(ValueError, match="obstacles"):
        clearances(problems.get("pendulum"), np.zeros((61, 2)), np.zeros((60, 1)))


# ------------------------------------------------------------------ IPOPT solves
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_ipopt_reaches_the_goal_without_collision(ipopt_solutions, scenario):
    prob, res = ipopt_solutions[scenario]
    assert res.converged and res.status == "converged", res.message
    xs, us = res.xs, res.us
    np.testing.assert_array_equal(xs[0], prob.x0)
    assert np.abs(xs[-1] - prob.x_goal).max() <= 1e-6  # at the goal, at rest
    assert np.abs(xs[1:] - prob.step(xs[:-1], us)).max() <= 1e-6  # continuous trajectory
    assert np.all(us <= prob.u_upper + 1e-8) and np.all(us >= prob.u_lower - 1e-8)
    clr = clearances(prob, xs, us)
    assert clr.min_nodes >= prob.margin - 1e-6  # the constraint, where it is imposed
    assert clr.min_nodes <= prob.margin + 1e-4  # ... and it is active: the obstacle matters
    # Between nodes the constraint is not imposed: the arm may cut into the margin a
    # little (< 2 mm here) but never into the sphere itself.
    assert clr.min >= prob.margin - 2e-3
    assert clr.min > 0


def test_exact_and_lbfgs_hessians_reach_the_same_optimum(ipopt_solutions):
    prob, exact = ipopt_solutions["bent"]
    lbfgs = IPOPT(hessian="lbfgs", max_iter=3000).solve(prob)
    assert lbfgs.status in ("converged", "acceptable"), lbfgs.message
    assert lbfgs.cost == pytest.approx(exact.cost, rel=1e-5)
    assert np.abs(lbfgs.xs - exact.xs).max() < 1e-3
    assert exact.iterations <= lbfgs.iterations


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("solver", ["ilqr", "ddp"])
def test_ddp_and_ilqr_find_the_ipopt_optimum(ipopt_solutions, scenario, solver):
    """Same discrete problem, different methods: multiple shooting from the paper's guess,
    single shooting + augmented Lagrangian from rest (gravity compensation at x0; the
    paper's guess itself diverges when rolled out open loop)."""
    prob, ref = ipopt_solutions[scenario]
    g0 = dyn.gravity_torques(prob.model, prob.q_start)
    res = solve(prob, solver, us_init=np.tile(g0, (prob.N, 1)))
    assert res.converged, res.message
    assert res.cost == pytest.approx(ref.cost, rel=1e-5)
    assert np.abs(res.xs - ref.xs).max() < 1e-3
    assert prob.violation(res.xs, res.us) <= 1e-6


# The IPOPT optima recorded before the optimal-control state moved onto the joints' manifold
# (BENCHMARKS.md, contracted second-order section, measured 2026-11-22): on a fixed base the
# manifold code reduces to plain vector operations, and must find them again.
RECORDED_OPTIMA = {"bent": 0.8235549523, "straight": 1.065298484}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fixed_base_optimum_is_the_one_recorded_before_the_manifold_state(ipopt_solutions, scenario):
    assert ipopt_solutions[scenario][1].cost == pytest.approx(RECORDED_OPTIMA[scenario], rel=1e-7)


# ----------------------------------------------------------------------- registry
def test_registry_names_and_lookup():
    assert problems.names() == ["arm-obstacle", "arm-pose", "biped", "double-pendulum", "panda-reach", "pendulum",
                               "quadruped", "space-manipulator", "ur5-reach"]
    assert problems.entry("arm-obstacle").scenarios == ("bent", "straight")
    assert "bent" in problems.describe("arm_obstacle")
    p = problems.get("arm_obstacle", scenario="straight")
    assert isinstance(p, arm_obstacle.ArmObstacleProblem) and p.scenario == "straight"
    assert problems.get("ur5-reach").name == "ur5-reach"
    assert problems.get("pendulum").model.nv == 1
    assert problems.get("double_pendulum").model.nv == 2


def test_registry_rejects_unknown_names():
    with pytest.raises(ValueError, match="known problems: arm-obstacle, arm-pose, biped, double-pendulum"):
        problems.get("triple-pendulum")
    with pytest.raises(ValueError, match="scenario"):
        problems.get("arm-obstacle", scenario="zigzag")
    with pytest.raises(ValueError, match="'shots'.*scenario, intervals, substeps, horizon"):
        problems.get("arm-obstacle", shots=20)
    with pytest.raises(TypeError):  # what the CLI catches for a --param the factory lacks
        problems.get("pendulum", scenario="bent")


def test_modules_reachable_as_attributes():
    assert problems.arm_obstacle.make is arm_obstacle.make
    with pytest.raises(AttributeError):
        problems.not_a_module  # noqa: B018


def _variant(arm, **changes):
    """The arm problem with some of its constructor arguments replaced."""
    kw = dict(substeps=arm.substeps, u_lower=arm.u_lower, u_upper=arm.u_upper,
              path_constraints=arm.path_constraints, terminal_constraints=arm.terminal_constraints,
              xs_init=arm.xs_init, us_init=arm.us_init)
    kw.update(changes)
    return Problem(arm.model, arm.x0, arm.N, arm.dt, arm.running_cost, **kw)


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_ddp_and_ilqr_report_infeasible_tasks(solver):
    """A goal inside the obstacle, and torques too weak to hold the arm against gravity (the
    shoulder needs ~40 N·m): both end with a non-converged status and a message, no exception."""
    arm = problems.get("arm-obstacle", scenario="bent")
    q_mid = 0.5 * (arm.q_start + arm.q_goal)  # the sphere sits on this configuration's forearm
    inside = _variant(arm, terminal_constraints=[StateEquality(np.concatenate([q_mid, np.zeros(6)]))])
    weak = _variant(arm, u_lower=np.full(6, -10.0), u_upper=np.full(6, 10.0))
    for prob in (inside, weak):
        with np.errstate(over="ignore"):
            res = solve(prob, solver=solver, max_iter=200)
        assert not res.converged and res.status in ("max_outer", "max_iter", "line_search_failed")
        assert res.message and prob.violation(res.xs, res.us) > 1e-3
        assert np.all(np.isfinite(res.xs))
    assert np.all(np.abs(res.us) <= 10.0 + 1e-9)  # the bounds hold even though the goal is out of reach


def test_the_outer_iterations_start_from_the_inner_solves_states_not_from_new_rollouts(monkeypatch):
    """The augmented Lagrangian's inner solves in single shooting end on a rollout of their
    controls (bit for bit): the next inner solve starts there, so a whole solve of nine outer
    iterations rolls out twice (the initial guess's check and the first start), not ten times."""
    prob = problems.get("arm-obstacle")
    calls = []
    rollout = Problem.rollout
    monkeypatch.setattr(Problem, "rollout", lambda self, *a, **k: calls.append(1) or rollout(self, *a, **k))
    result = solve(prob, "ilqr")
    assert result.converged and result.extra["outer_iterations"] > 2 and len(calls) <= 2
    np.testing.assert_array_equal(prob.rollout(result.us), result.xs)
