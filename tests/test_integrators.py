"""Integrator sensitivities: exact first/second derivatives of one interval vs finite differences."""
import types

import numpy as np
from numdiff import central
import pytest
from numba import njit

from optdyn.ocp import integrators


@njit(cache=True)
def _toy(ode, x, u, f_ext, order, f, Fz, Fzz, records, idx, work):
    """Nonlinear 3-state, 2-input ODE with x–x, x–u and u–u couplings (analytic derivatives)."""
    c = ode[0][0]
    f[0] = x[1]
    f[1] = -np.sin(x[0]) + c * x[2] * u[0] + u[1] ** 2
    f[2] = np.cos(x[1]) * u[1] - c * x[0] * x[2]
    if order == 0:
        return
    Fz[:] = 0.0
    Fz[0, 1] = 1.0
    Fz[1, 0], Fz[1, 2], Fz[1, 3], Fz[1, 4] = -np.cos(x[0]), c * u[0], c * x[2], 2 * u[1]
    Fz[2, 0], Fz[2, 1], Fz[2, 2], Fz[2, 4] = -c * x[2], -np.sin(x[1]) * u[1], -c * x[0], np.cos(x[1])
    if order == 1:
        return
    Fzz[:] = 0.0
    Fzz[1, 0, 0] = np.sin(x[0])
    Fzz[1, 2, 3] = Fzz[1, 3, 2] = c
    Fzz[1, 4, 4] = 2.0
    Fzz[2, 0, 2] = Fzz[2, 2, 0] = -c
    Fzz[2, 1, 1] = -np.cos(x[1]) * u[1]
    Fzz[2, 1, 4] = Fzz[2, 4, 1] = -np.sin(x[1])


ODE = (np.array([0.7]),)


@njit(cache=True)
def _toy_hessian(ode, x, u, f, Fz, records, idx, w, W, blocks, so):
    """W = Σ_i w_i ∂²f_i/∂z² of the toy ODE (from its full tensor)."""
    Fzz = np.empty((3, 5, 5))
    _toy(ode, x, u, np.zeros((0, 6)), 2, np.empty(3), np.empty((3, 5)), Fzz, records, idx, so)
    W[:] = 0.0
    for i in range(3):
        W += w[i] * Fzz[i]


# The package's interval kernel compiled (uncached) with the toy ODE in place of the
# robot dynamics it calls: same chain-rule code, analytic right-hand side.
_py = integrators.interval.py_func
@njit(cache=True)
def _toy_work(ode, second):
    return integrators.RobotWork(np.empty(1), np.empty(1), np.empty(1), second, np.empty(1))


_toy_globals = {"robot_dynamics": _toy, "robot_dynamics_hessian": _toy_hessian, "robot_work": _toy_work}


def _with_toy(kernel):
    py = kernel.py_func
    return njit(types.FunctionType(py.__code__, {**py.__globals__, **_toy_globals}, py.__name__))


_toy_globals["_compose"] = _with_toy(integrators._compose)  # typed, never run: the toy is a vector space
_toy_globals["stage_terms"] = _with_toy(integrators.stage_terms)
_toy_globals["interval_hessian_part"] = _with_toy(integrators.interval_hessian_part)
_interval, _interval_hessian, _interval_work = (_with_toy(k) for k in (
    integrators.interval, integrators.interval_hessian, integrators.interval_work))


def _records(count):
    return integrators.stage_records(ODE, count, 3, 5, 1)


def _dynamics(method, dt, m):
    a, b = integrators.METHODS[method]
    return integrators.IntervalDynamics(ODE, a, b, dt, m, np.zeros((1, 0, 6)))


def _run(method, z, dt, m, order, stages=None):
    dyn = _dynamics(method, dt, m)
    y, Y, H = np.empty(3), np.empty((3, 5)), np.empty((3, 5, 5))
    ok = _interval(dyn, 0, z[:3].copy(), z[3:].copy(), order, y, Y, H, _records(0) if stages is None else stages, 0,
                   _interval_work(dyn, 3, 2, order))
    return ok, y, Y, H


def _contracted(method, z, lam, dt=0.1, m=3):
    """Hessian of λᵀF by the second-order adjoint over the recorded stages."""
    stages = _records(m * integrators.METHODS[method][1].shape[0])
    _run(method, z, dt, m, 1, stages)
    dyn = _dynamics(method, dt, m)
    Hz = np.empty((5, 5))
    _interval_hessian(dyn, z[3:].copy(), stages, 0, lam, Hz, _interval_work(dyn, 3, 2, 1))
    return Hz


def _step(method, z, dt=0.1, m=3):
    return _run(method, z, dt, m, 0)[1]


def _derivs(method, z, dt=0.1, m=3):
    return _run(method, z, dt, m, 2)[2:]




@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_toy_first_and_second_order_sensitivities(method):
    rng = np.random.default_rng(0)
    for _ in range(3):
        z = rng.normal(size=5)
        Fz, Fzz = _derivs(method, z)
        assert np.allclose(Fz, central(lambda w: _step(method, w), z), atol=1e-8)
        assert np.allclose(Fzz, central(lambda w: _derivs(method, w)[0], z), atol=1e-7)
        assert np.allclose(Fzz, Fzz.transpose(0, 2, 1), atol=1e-12)


@pytest.mark.parametrize("method", ["rk4", "euler"])
def test_toy_contracted_hessian_is_the_contraction_and_the_difference_of_the_gradient(method):
    rng = np.random.default_rng(1)
    for _ in range(3):
        z, lam = rng.normal(size=5), rng.normal(size=3)
        Hz = _contracted(method, z, lam)
        assert np.allclose(Hz, np.einsum("i,ijk->jk", lam, _derivs(method, z)[1]), rtol=1e-12, atol=1e-12)
        assert np.allclose(Hz, central(lambda w: lam @ _derivs(method, w)[0], z), atol=1e-7)
        assert np.allclose(Hz, Hz.T, atol=1e-13)


def test_rk4_is_fourth_order_and_euler_first_order():
    z = np.array([0.3, -0.2, 0.5, 0.1, -0.4])
    fine = _step("rk4", z, dt=0.2, m=400)
    for method, order in (("rk4", 4), ("euler", 1)):
        e1 = np.linalg.norm(_step(method, z, dt=0.2, m=4) - fine)
        e2 = np.linalg.norm(_step(method, z, dt=0.2, m=8) - fine)
        assert abs(np.log2(e1 / e2) - order) < 0.3


def test_divergence_gives_nan_not_an_exception():
    ok, y, _, _ = _run("rk4", np.array([0.1, 0.0, 0.0, 0.0, 1e200]), 0.1, 1, 0)
    assert not ok and np.all(np.isnan(y))
    ok, y, _, _ = _run("rk4", np.array([0.1, 0.0, 0.0, 0.0, 1.0]), 0.1, 1, 0)
    assert ok and np.all(np.isfinite(y))


# ---- robot dynamics through the Problem ----------------------------------------------------

from dynamics.models import double_pendulum, ur5  # noqa: E402
from optdyn.costs import ControlCost, StateCost  # noqa: E402
from optdyn.ocp.problem import Problem  # noqa: E402


def ur5_with_armature():
    """The UR5 with reflected rotor inertias of 0.05–0.5 kg·m² on its joints."""
    return ur5().with_armature(np.linspace(0.5, 0.05, 6))


def _robot_problem(model, integrator="rk4", substeps=2, dt=0.05):
    nx = 2 * model.nv
    return Problem(model, np.zeros(nx), N=3, dt=dt, running_cost=StateCost(1.0, nx=nx),
                   substeps=substeps, integrator=integrator)


@pytest.mark.parametrize("make, integrator", [(ur5, "rk4"), (double_pendulum, "euler"), (ur5_with_armature, "rk4")])
def test_robot_step_sensitivities_match_finite_differences(make, integrator):
    model = make()
    prob = _robot_problem(model, integrator)
    nx, nu = prob.nx, prob.nu
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.uniform(-1, 1, (2, nu)), rng.normal(size=(2, nu))], axis=1)
    us = rng.normal(size=(2, nu)) * 3
    A, B, Fxx, Fxu, Fuu = prob.step_derivatives(xs, us, second_order=True)
    A1, B1 = prob.step_derivatives(xs, us)
    assert np.array_equal(A, A1) and np.array_equal(B, B1)
    for k in range(2):
        z = np.concatenate([xs[k], us[k]])
        step = lambda w: prob.step(w[None, :nx], w[None, nx:])[0]  # noqa: E731
        Fz = central(step, z)
        assert np.allclose(A[k], Fz[:, :nx], rtol=1e-6, atol=1e-7)
        assert np.allclose(B[k], Fz[:, nx:], rtol=1e-6, atol=1e-7)
        Fzz = central(lambda w: np.concatenate(prob.step_derivatives(w[None, :nx], w[None, nx:]), axis=2)[0], z)
        assert np.allclose(Fxx[k], Fzz[:, :nx, :nx], rtol=1e-5, atol=1e-6)
        assert np.allclose(Fxu[k], Fzz[:, :nx, nx:], rtol=1e-5, atol=1e-6)
        assert np.allclose(Fuu[k], Fzz[:, nx:, nx:], rtol=1e-5, atol=1e-6)
    assert np.abs(Fuu).max() > 0 and np.abs(Fxu).max() > 0


@pytest.mark.parametrize("make, integrator, substeps", [(ur5, "rk4", 2), (ur5, "rk4", 1), (double_pendulum, "euler", 3),
                                                        (ur5_with_armature, "rk4", 2)])
def test_robot_contracted_step_hessians_equal_the_tensor_contraction_and_differences(make, integrator, substeps):
    model = make()
    prob = _robot_problem(model, integrator, substeps)
    nx, nu = prob.nx, prob.nu
    rng = np.random.default_rng(2)
    xs = np.concatenate([rng.uniform(-1, 1, (3, nu)), rng.normal(size=(3, nu))], axis=1)
    us = rng.normal(size=(3, nu)) * 3
    lams = rng.normal(size=(3, nx))
    A, B, stages = prob.step_stages(xs, us)
    A1, B1 = prob.step_derivatives(xs, us)
    assert np.array_equal(A, A1) and np.array_equal(B, B1)
    Hz = prob.step_hessians(xs, us, lams, stages)
    assert np.array_equal(Hz, prob.step_hessians(xs, us, lams))
    _, _, Fxx, Fxu, Fuu = prob.step_derivatives(xs, us, second_order=True)
    Fzz = np.concatenate([np.concatenate([Fxx, Fxu], axis=3),
                          np.concatenate([Fxu.transpose(0, 1, 3, 2), Fuu], axis=3)], axis=2)
    ref = np.einsum("ki,kijl->kjl", lams, Fzz)
    assert np.allclose(Hz, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())
    for k in range(3):
        z = np.concatenate([xs[k], us[k]])
        grad = lambda w: lams[k] @ np.concatenate(prob.step_derivatives(w[None, :nx], w[None, nx:]), axis=2)[0]  # noqa: E731
        assert np.allclose(Hz[k], central(grad, z), rtol=1e-5, atol=1e-6)


def test_step_hessians_rejects_bad_multipliers():
    prob = _robot_problem(double_pendulum())
    xs, us = np.zeros((2, 4)), np.zeros((2, 2))
    with pytest.raises(ValueError, match="lams"):
        prob.step_hessians(xs, us, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="lams"):
        prob.step_hessians(xs, us, np.full((2, 4), np.nan))


def test_problem_step_is_substeps_of_rk4_and_rollout_chains_steps():
    model = double_pendulum()
    fine = _robot_problem(model, substeps=4, dt=0.2)
    coarse = _robot_problem(model, substeps=1, dt=0.05)
    x = np.array([[0.3, -0.5, 1.0, 0.2]])
    u = np.array([[1.0, -2.0]])
    y = x
    for _ in range(4):
        y = coarse.step(y, u)
    assert np.allclose(fine.step(x, u), y, rtol=1e-13, atol=1e-13)
    us = np.array([[1.0, -2.0], [0.5, 0.0], [-1.0, 3.0]])
    xs = fine.rollout(us)
    assert np.allclose(xs[1:], fine.step(xs[:-1], us), rtol=1e-13, atol=1e-13)


def test_problem_rejects_bad_input():
    model = double_pendulum()
    ok = dict(model=model, x0=np.zeros(4), N=5, dt=0.1)
    bad = [
        (dict(x0=np.zeros(3)), "x0"), (dict(x0=[np.nan, 0, 0, 0]), "x0"), (dict(dt=0.0), "dt"),
        (dict(dt=-1.0), "dt"), (dict(N=0), "N"), (dict(N=2.5), "N"), (dict(substeps=0), "substeps"),
        (dict(integrator="rk45"), "integrator"), (dict(u_lower=[1.0, 1.0], u_upper=[0.0, 2.0]), "u_lower"),
        (dict(u_lower=[0.0]), "u_lower"), (dict(xs_init=np.zeros((5, 4))), "xs_init"),
        (dict(us_init=np.zeros((5, 3))), "us_init"), (dict(running_cost=StateCost(1.0, nx=6)), "running_cost"),
        (dict(terminal_cost=ControlCost(1.0, nu=3)), "terminal_cost"), (dict(model="ur5"), "model"),
        (dict(running_cost="quadratic"), "running_cost"),
    ]
    for change, name in bad:
        with pytest.raises(ValueError, match=name):
            Problem(**{**ok, **change})
    prob = Problem(**ok)
    with pytest.raises(ValueError, match="xs"):
        prob.step(np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="us"):
        prob.step_derivatives(np.zeros((2, 4)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="us"):
        prob.rollout(np.zeros((4, 2)))
