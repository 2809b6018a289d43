"""The augmented Lagrangian with its multipliers revised inside the DDP/iLQR iteration
(optdyn.solvers.bcl): the BCL rule, the KKT conditions against IPOPT's multipliers, joint
limits on arms against IPOPT's optimum, the warm start of the multipliers, bad options."""
import numpy as np
import pytest
from test_path_constraints import U_MAX, _locked_double_pendulum

import optdyn
import problems
from optdyn import solve
from optdyn.ocp.constraints import JointLimits
from optdyn.ocp.problem import Problem
from optdyn.solvers.bcl import ALDDP, ALFDDP, ALILQR, BCLObjective

INSIDE = ("al-ddp", "al-ilqr")


@pytest.fixture(scope="module")
def locked():
    _, prob = _locked_double_pendulum()
    runs = {s: solve(prob, s, max_iter=1000) for s in ("ipopt", *INSIDE)}
    return prob, runs


@pytest.mark.parametrize("solver", INSIDE)
def test_the_constraints_hold_and_the_optimum_is_ipopts(locked, solver):
    prob, runs = locked
    r, ip = runs[solver], runs["ipopt"]
    assert r.converged, (r.status, r.message)
    assert r.solver == solver and r.extra["revisions"] > 0
    assert prob.violation(r.xs, r.us) <= 1e-6 and r.extra["violation"] <= 1e-6
    assert np.abs(r.us[:, 0]).max() > U_MAX - 1e-4  # the torque bound is active
    assert abs(r.cost - ip.cost) <= 1e-5 * ip.cost
    assert np.allclose(r.us, ip.us, atol=2e-3)


@pytest.mark.parametrize("solver", INSIDE)
def test_kkt_multipliers_are_ipopts(locked, solver):
    """IPOPT's Lagrangian is f + Σ κ·row, the augmented Lagrangian's J − Σ λ·row: κ = −λ at the
    common optimum, for the path equality and the stage rows (zero on the inactive ones)."""
    prob, runs = locked
    ip, al = runs["ipopt"].extra["multipliers"], runs[solver].extra
    scale = np.abs(ip["path"]).max()
    assert scale > 1.0 and np.abs(ip["path"] + al["lambda"]).max() < 1e-3 * scale
    stage_scale = np.abs(ip["stage"]).max()
    assert stage_scale > 1.0 and np.abs(ip["stage"] + al["lambda_stage"]).max() < 1e-3 * stage_scale
    g = prob.stage_constraint_values(runs[solver].xs[:-1], runs[solver].us)
    assert np.all(al["lambda_stage"][g > 1e-3] == 0.0) and np.all(al["lambda_stage"] >= 0.0)


def test_the_multipliers_of_a_solve_warm_start_the_next(locked):
    prob, runs = locked
    r = runs["al-ilqr"]
    warm = solve(prob, "al-ilqr", us_init=r.us, multipliers=r.extra)
    cold = solve(prob, "al-ilqr", us_init=r.us)
    assert warm.converged and cold.converged
    assert warm.iterations < cold.iterations and warm.extra["revisions"] < cold.extra["revisions"]
    assert abs(warm.cost - r.cost) < 1e-6 * r.cost
    with pytest.raises(ValueError, match=r"^multipliers: rho expected a finite penalty > 0"):
        solve(prob, "al-ilqr", multipliers={**r.extra, "rho": 0.0})


def test_the_bcl_rule_moves_the_multipliers_when_nearly_feasible_and_the_penalty_otherwise(locked):
    prob, runs = locked
    xs, us = runs["ipopt"].xs, runs["ipopt"].us
    solver = ALILQR()
    fresh = lambda: BCLObjective(prob, np.zeros((prob.N, prob.nc)), np.zeros(0), 1.0,  # noqa: E731
                                 np.zeros((prob.N, prob.ng)), False, solver)
    o = fresh()
    assert not o.revise(xs, us, lambda w: False) and o.revisions == 0  # not stationary: nothing moves
    omega, eta = o.omega, o.eta
    assert o.revise(xs, us, lambda w: True)  # feasible to 1e-6 ≤ η: a multiplier update, tighter tolerances
    assert o.rho == 1.0 and np.abs(o.lam_stage).max() > 0 and o.omega < omega and o.eta < eta
    bad = us.copy()
    bad[:, 0] = 3 * U_MAX  # far outside the stage rows: the penalty grows, the multipliers stay
    o = fresh()
    assert o.revise(xs, bad, lambda w: True)
    assert o.rho == solver.rho_factor and np.all(o.lam_stage == 0.0) and np.all(o.lam == 0.0)
    o = fresh()
    o.omega, o.eta = solver.tol, 1.0
    assert not o.revise(xs, us, lambda w: True) and o.satisfied(xs, us)  # a solution: nothing to revise


def _pose_with_limits(robot):
    p = problems.arm_pose.make(robot)
    return Problem(p.model, p.x0, p.N, p.dt, p.running_cost, p.terminal_cost, u_lower=p.u_lower, u_upper=p.u_upper,
                   path_constraints=[JointLimits(p.model)], name="arm-pose-limits")


@pytest.mark.parametrize("robot", ["xarm7", "z1", "panda", "so101", "ur5", "kinova"])
def test_pose_with_joint_limits_reaches_ipopts_optimum(robot):
    """The 6D pose at rest within the joint limits, by DDP and iLQR with the multipliers
    inside and by the default DDP and iLQR (the outer loop around whole solves), in ≤ 150
    iterations, to IPOPT's optimum within 1e-4 (relative). With the multipliers inside, those
    of the limits are IPOPT's bound multipliers (κ = −λ, to 5e-3 of their largest; measured
    between 3e-4 (UR5) and 3.2e-3 (Panda), our optimum violating the limits by up to 1e-6).
    The default DDP on the Z1 needs iLQR's steps at a μ that a rejected exact step does not
    raise (500 iterations without converging when it did, 75 since)."""
    p = _pose_with_limits(robot)
    ip = solve(p, "ipopt")
    assert ip.converged
    bounds = ip.extra["multipliers"]["path"]
    for s in INSIDE + ("ddp", "ilqr"):
        r = solve(p, s, max_iter=150)
        assert r.converged, (robot, s, r.status, r.message)
        assert p.violation(r.xs, r.us) <= 1e-6
        assert abs(r.cost - ip.cost) <= 1e-4 * ip.cost, (robot, s, r.cost, ip.cost)
        if s in INSIDE:
            assert np.abs(bounds).max() > 1e-2
            assert np.abs(bounds + r.extra["lambda"]).max() <= 5e-3 * np.abs(bounds).max()


def test_without_constraints_the_types_are_the_plain_solvers():
    p = problems.ur5_reach.make(N=20)
    for inside, plain in (("al-ddp", "ddp"), ("al-ilqr", "ilqr")):
        a, b = solve(p, inside), solve(p, plain)
        assert a.solver == inside and a.iterations == b.iterations and np.array_equal(a.us, b.us)


@pytest.mark.parametrize("name, value", [("rho_factor", 1.0), ("omega0", 0.0), ("eta0", -1.0),
                                         ("constraint_tol", np.nan), ("rho_max", 0.5)])
def test_bad_options_raise_a_value_error_naming_them(name, value):
    for cls in (ALDDP, ALFDDP):
        with pytest.raises(ValueError, match=f"^{name}: "):
            cls(**{name: value})
    with pytest.raises(ValueError, match=f"^{name}: "):
        solve(_locked_double_pendulum()[1], "al-ilqr", **{name: value})


def test_mpc_warm_starts_the_multipliers_inside_the_iteration():
    """arm-obstacle under al-iLQR MPC, one iteration per step: each step starts from the last
    one's shifted multipliers, and the clearance (5 cm from the sphere) holds over every plant
    step within the tolerance of the outer loop's real-time iterations (3 mm)."""
    prob = problems.get("arm-obstacle", scenario="bent")
    mpc = optdyn.MPC(prob, "al-ilqr", 1)
    loop = optdyn.simulate(mpc, 3.0)
    assert not loop.stopped and mpc.result.solver == "al-ilqr"
    assert mpc._duals is not None and np.abs(mpc._duals["mu"]).max() > 0  # the terminal equality's, carried on
    assert -3e-3 <= loop.margins.min() < 0.01


def test_the_al_forms_compile_ahead_what_their_solvers_do():
    from optdyn.solvers.compile_ahead import PARTS, helpers
    for name in ("ddp", "ilqr", "fddp", "filqr"):
        assert helpers("al-" + name) == helpers(name)
    assert PARTS["ddp"] != PARTS["ilqr"]


@pytest.fixture(scope="module")
def trot():
    p = problems.quadruped.make("trot")  # the shipped trot: the friction pyramid as stage constraints
    return p, solve(p, "ipopt")


@pytest.mark.parametrize("solver", INSIDE)
def test_the_trot_with_the_friction_pyramid_reaches_ipopts_optimum(trot, solver):
    """A problem with contacts gets the feasibility-driven al- form; the pyramid holds to 1e-6
    and the cost is IPOPT's to 5e-6 (relative; measured 1.7e-6 below it, as the outer loop's, by
    IPOPT's own tolerance)."""
    p, ip = trot
    r = solve(p, solver)
    assert r.converged and r.solver == "al-f" + solver[3:], (r.status, r.message)
    assert p.violation(r.xs, r.us) <= 1e-6 and r.extra["revisions"] > 0
    assert abs(r.cost - ip.cost) <= 5e-6 * ip.cost, (r.cost, ip.cost)
