"""Issue 12: solvers that never crash, never lie, and can be stopped.

Rejected steps instead of exceptions (the Panda of example-robot-data, whose 15 g fingers
make the articulated inertia non-positive far from the data), max_time, warm starts from
a Result, Ctrl-C (flag between iterations, KeyboardInterrupt and numba's SystemError),
the documented statuses and the task report.
"""
import os
import signal

import example_robot_data
import numpy as np
import pytest

import dynamics as dyn
from optdyn import Problem
from optdyn.costs import ControlCost, FramePositionCost, StateCost
from optdyn.solvers.ipopt import IPOPT_STATUS, MultipleShootingNLP
from optdyn.apps.report import task_errors
from optdyn.solvers.result import STATUSES
from optdyn.solvers.runtime import STOP_MESSAGES, Run, is_interrupt
from optdyn.solvers.solve import solve
from problems import ur5_reach

SOLVERS = ("ddp", "ilqr", "ipopt")
PANDA_Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.04, 0.04])  # the SRDF's "default"
PANDA_TARGET = np.array([0.4, 0.3, 0.4])


def panda_urdf() -> str:
    """Path of example-robot-data's panda.urdf (installed files, no network)."""
    robots = example_robot_data.getModelPath("panda_description/urdf/panda.urdf")
    return os.path.join(robots, "panda_description", "urdf", "panda.urdf")


def panda_reach(us_init=None) -> Problem:
    """The reported problem: README's custom-problem pattern on the Panda, no us_init."""
    model = dyn.load_urdf(panda_urdf())
    x0 = np.concatenate([PANDA_Q0, np.zeros(model.nv)])
    g0 = dyn.gravity_torques(model, PANDA_Q0)
    return Problem(model, x0, N=40, dt=0.05, substeps=2,
                   running_cost=StateCost(1e-2, x0) + ControlCost(1e-3, g0)
                   + FramePositionCost(model, "panda_hand_tcp", PANDA_TARGET, 10.0),
                   terminal_cost=FramePositionCost(model, "panda_hand_tcp", PANDA_TARGET, 1e4),
                   u_lower=-model.effort_limit, u_upper=model.effort_limit, us_init=us_init)


@pytest.fixture(scope="module")
def panda():
    return panda_reach()


@pytest.fixture(scope="module")
def reach():
    return ur5_reach.make(N=20, dt=0.1)


def assert_honest(res, prob):
    """A Result of ``prob`` with a documented status and finite trajectories of the right shapes."""
    assert res.status in STATUSES, res.status
    assert res.xs.shape == (prob.N + 1, prob.nx) and res.us.shape == (prob.N, prob.nu)
    assert np.all(np.isfinite(res.xs)) and np.all(np.isfinite(res.us))
    assert res.converged == (res.status in ("converged", "acceptable"))


@pytest.mark.parametrize("solver", SOLVERS)
def test_panda_reaching_converges_without_us_init(panda, solver):
    res = solve(panda, solver)
    assert_honest(res, panda)
    assert res.converged, res.message
    errors = task_errors(panda, res.xs, res.us)
    assert errors.targets[0].frame == "panda_hand_tcp"
    assert errors.targets[0].distance < 1e-3
    _, p = dyn.frame_placement(panda.model, res.xs[-1, :panda.model.nq], "panda_hand_tcp")
    assert errors.targets[0].distance == pytest.approx(np.linalg.norm(p - PANDA_TARGET), rel=1e-12)
    assert errors.violation == 0.0


@pytest.mark.parametrize("solver", ["ddp", "ilqr"])
def test_model_invalid_trial_rollouts_are_rejected_steps(solver):
    """From zero torques the arm falls and the fingers fly off: trial rollouts the model
    rejects (ValueError inside the compiled ABA) used to escape from the line search."""
    prob = panda_reach(us_init=np.zeros((40, 9)))
    res = solve(prob, solver, max_iter=20)
    assert_honest(res, prob)
    assert res.extra["invalid_rollouts"] > 0
    assert res.extra["rejected_rollouts"] >= res.extra["invalid_rollouts"]
    assert res.cost < prob.cost(prob.rollout(prob.us_init), prob.us_init)  # progress was kept


def test_ipopt_points_the_model_rejects_are_evaluation_errors(panda):
    import cyipopt

    nlp = MultipleShootingNLP(panda)
    z = nlp.pack(panda.xs_init, panda.us_init)
    xs, us = nlp.unpack(z)
    xs[1:, 7] = 1e12  # fingers 10⁹ km away: the articulated inertia is no longer positive
    bad = nlp.pack(xs, us)
    with pytest.raises(ValueError, match="articulated inertia"):
        panda.step(xs[:-1], us)
    with pytest.raises(cyipopt.CyIpoptEvaluationError):
        nlp.constraints(bad)
    assert nlp.evaluation_errors == 1 and "articulated inertia" in nlp.last_error
    assert np.all(np.isfinite(nlp.constraints(z)))  # a good point still evaluates


def test_a_non_finite_hessian_names_its_term_and_knot(panda):
    import cyipopt

    nlp = MultipleShootingNLP(panda)
    z = nlp.pack(panda.xs_init, panda.us_init)
    lagrange = np.ones(nlp.m)
    assert np.all(np.isfinite(nlp.hessian(z, lagrange, 1.0)))
    lagrange[5 * nlp.ndx: 6 * nlp.ndx] = 1e308  # λ_5ᵀF_zz overflows
    with pytest.raises(cyipopt.CyIpoptEvaluationError, match="non-finite Hessian"):
        nlp.hessian(z, lagrange, 1.0)
    assert nlp.last_error == "non-finite Hessian (the dynamics' Hessians λᵀF_zz at knot 5)"


def test_ipopt_says_which_evaluation_failed_when_it_stops_on_one(panda):
    xs = panda.rollout(panda.us_init)
    xs[1:, 7] = 1e12  # an initial guess the model rejects at every knot
    res = solve(panda, "ipopt", xs_init=xs, us_init=panda.us_init)
    assert_honest(res, panda)
    assert res.status == "invalid_number" and res.iterations == 0
    assert "articulated inertia" in res.message and res.message == res.extra["status_message"]


def test_every_status_is_documented():
    assert set(IPOPT_STATUS.values()) <= set(STATUSES)
    assert set(STOP_MESSAGES) <= set(STATUSES)
    assert all(isinstance(v, str) and v for v in STATUSES.values())


def test_an_initial_rollout_that_cannot_be_finite_is_a_status(reach):
    from optdyn.solvers.ddp import ILQR, Log, Objective

    res = ILQR().iterate(reach, Objective(reach), np.full((reach.N, reach.nu), 1e8), Log("ilqr"))
    assert res.status == "rollout_failed" and res.iterations == 0 and not res.converged
    assert np.array_equal(res.xs[0], reach.x0) and not np.all(np.isfinite(res.xs))


@pytest.mark.parametrize("solver", SOLVERS)
def test_max_time_stops_every_solver_with_the_last_iterate(reach, solver):
    res = solve(reach, solver, max_time=1e-6, max_iter=1000)
    assert_honest(res, reach)
    assert res.status == "time_limit" and "max_time" in res.message
    assert res.iterations <= 2


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "10", True])
def test_max_time_must_be_positive_seconds(reach, bad):
    with pytest.raises(ValueError, match="max_time"):
        solve(reach, "ddp", max_time=bad)


@pytest.mark.parametrize("solver", SOLVERS)
def test_warm_start_from_a_result(reach, solver):
    first = solve(reach, solver, max_iter=3)
    again = solve(reach, solver, init=first, max_iter=0)
    assert np.allclose(again.us, first.us, atol=1e-9)
    if solver == "ipopt":  # multiple shooting starts from the states too (IPOPT may push them into bounds)
        assert np.allclose(again.xs, first.xs, atol=1e-6)
    else:  # single shooting: the rollout of the controls
        assert np.allclose(again.xs, first.xs, atol=1e-12) and again.cost == pytest.approx(first.cost, rel=1e-12)
    done = solve(reach, solver)
    assert solve(reach, solver, init=done).iterations <= 1


def test_warm_start_rejects_bad_results(reach):
    other = solve(ur5_reach.make(N=10, dt=0.1), "ilqr", max_iter=1)
    with pytest.raises(ValueError, match="init"):
        solve(reach, "ddp", init=other)
    with pytest.raises(ValueError, match="init"):
        solve(reach, "ddp", init={"us": np.zeros((20, 6))})
    with pytest.raises(ValueError, match="init"):
        solve(reach, "ipopt", init=solve(reach, "ilqr", max_iter=1), us_init=np.zeros((20, 6)))


def _interrupt_at(iteration: int, how: str):
    """A callback that, at ``iteration``, sends this process SIGINT (as Ctrl-C does) or
    raises what a Ctrl-C inside a compiled kernel raises."""
    def callback(row):
        if row["iteration"] != iteration:
            return
        if how == "sigint":
            os.kill(os.getpid(), signal.SIGINT)
        elif how == "keyboard":
            raise KeyboardInterrupt
        else:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as e:
                raise SystemError("<numba dispatcher> returned a result with an exception set") from e
    return callback


@pytest.mark.parametrize("how", ["sigint", "keyboard", "numba_system_error"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_ctrl_c_returns_the_last_iterate(reach, solver, how):
    res = solve(reach, solver, callback=_interrupt_at(2, how), max_iter=100)
    assert_honest(res, reach)
    assert res.status == "interrupted" and "Ctrl-C" in res.message
    assert 2 <= res.iterations <= 3
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    if solver != "ipopt":
        assert np.allclose(reach.rollout(res.us), res.xs, atol=1e-12)  # a real iterate, not a mix
        assert res.cost == pytest.approx(reach.cost(res.xs, res.us), rel=1e-12)


def test_other_system_errors_are_not_swallowed(reach):
    def callback(row):
        raise SystemError("a genuine bug")
    with pytest.raises(SystemError, match="genuine"):
        solve(reach, "ddp", callback=callback)


def test_run_stop_conditions():
    assert Run().stop_reason() is None
    assert Run(1e-9).stop_reason() == "time_limit"
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as k:
        wrapped = SystemError("wrapped")
        wrapped.__cause__ = k
    assert is_interrupt(wrapped) and not is_interrupt(SystemError("alone"))
    with Run() as run:
        os.kill(os.getpid(), signal.SIGINT)  # flag only: no KeyboardInterrupt here
        assert run.stop_reason() == "interrupted"
        with pytest.raises(KeyboardInterrupt):  # a second Ctrl-C is not ignored
            os.kill(os.getpid(), signal.SIGINT)


def test_task_errors_measure_the_task_not_the_solver(reach):
    xs = np.tile(reach.x0, (reach.N + 1, 1))
    us = reach.us_init.copy()
    errors = task_errors(reach, xs, us)
    _, p0 = dyn.frame_placement(reach.model, reach.x0[:6], "tool0")
    assert [t.frame for t in errors.targets] == ["tool0"]
    assert errors.targets[0].distance == pytest.approx(np.linalg.norm(p0 - np.array([0.4, 0.3, 0.4])), rel=1e-12)
    assert errors.active_bounds == 0 and errors.controls == us.size
    bounded = Problem(reach.model, reach.x0, reach.N, reach.dt, reach.running_cost, reach.terminal_cost,
                      u_lower=np.full(6, -150.0), u_upper=np.full(6, 150.0))
    us[3, 1], us[5, 2] = 150.0, -150.0
    assert task_errors(bounded, xs, us).active_bounds == 2
    nan = task_errors(reach, np.full_like(xs, np.nan), us)
    assert np.isnan(nan.violation) and np.isnan(nan.targets[0].distance)
    with pytest.raises(ValueError, match="xs, us"):
        task_errors(reach, xs[:-1], us)


def test_ctrl_c_stops_a_whole_comparison(reach):
    from optdyn.apps.compare import compare

    seen = []

    def callback(row):
        seen.append(row["solver"])
        if row["iteration"] == 1:
            os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt, match="ddp"):
        compare(reach, ("ddp", "ilqr"), callback=callback)
    assert set(seen) == {"ddp"}  # iLQR never started


@pytest.mark.parametrize("solver", SOLVERS)
def test_wall_time_says_whether_it_includes_compilation(reach, monkeypatch, solver):
    from numba import njit

    import optdyn.solvers.runtime as runtime

    solve(reach, solver, max_iter=1)  # every kernel of this solver now in memory
    warm = solve(reach, solver, max_iter=2)
    assert warm.extra["compile_time"] == 0.0 and not warm.includes_compilation
    monkeypatch.setattr(runtime, "PACKAGES", runtime.PACKAGES + (__name__.split(".")[0],))

    @njit
    def fresh(x):  # compiled on first call, during the solve below
        return x + 1.0

    res = solve(reach, solver, max_iter=2, callback=lambda row: fresh(1.0) if row["iteration"] == 1 else None)
    assert res.includes_compilation and 0.0 < res.extra["compile_time"] <= res.wall_time
